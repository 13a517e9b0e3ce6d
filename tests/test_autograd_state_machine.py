"""Random autograd programs, run on torch and on minigrad side by side (hypothesis stateful testing).

A program is a sequence of steps over a pool of live tensor pairs (torch tensor, minigrad tensor):
creations, out-of-place ops, in-place ops on leaves, non-leaves and views, index assignment,
views (single- and multi-output), detach/clone/.data, requires_grad_, steps under no_grad,
backward / autograd.grad and grad resets. Every step runs on torch first and then on minigrad; it
fails on the first divergence:

* one raised and the other did not, or they raised different exception types or messages
  (compared after `parity.normalize_message`: `torch.FloatTensor` reads `minigrad.FloatTensor`);
* a returned value differs (tensor state as below, tuples element by element, identity: an in-place
  op must return the very object it was called on, a view's `_base` must be the same pool entry);
* after the step, any live pair differs in dtype, shape, strides, values, requires_grad, is_leaf,
  `_version`, grad_fn name (None or `.name()`), `_base`, or `.grad` of leaves. Reading an attribute
  may itself raise (the grad_fn of a multi-output view whose base was modified, R39): then both must
  raise the same error. Gradients returned by autograd.grad are compared by value (dtype, shape,
  values, requires_grad, grad_fn), not by layout or `_version`.

Every program ends (teardown) with `x.sum().backward(retain_graph=True)` of each live tensor that
requires grad, so saved-tensor version checks and accumulated grads are compared in every example.

The rules in /work/shared/reference/torch-inplace-semantics.md that the programs reach: version
counters (R1, R2, R6, R7, R8), saved-tensor version checks and their messages (R10-R15, R35), backward
twice (R18), leaf rules (R22-R24, R26), rebased history (R28, R29), CopySlices and view grad_fns
(R32-R34, R36), overlap errors (R15, R37), multi-output views (R38, R39), no_grad views (R41), shape
and dtype rules (R44, R45), requires_grad propagation and errors (R47, R48, R30), accumulation (R49),
implicit gradients (R51), autograd.grad validation (R52), no_grad (R53), detach (R54), kinks (R57).

Numbers are kept bounded so that both libraries compute the same finite values: every pool value is
finite and at most BOUND in magnitude (an out-of-place result beyond it is dropped before minigrad runs;
an in-place op is first tried on a detached torch clone and skipped if it would leave the range);
divisors are at least 0.25 away from zero; sqrt is taken of non-negative values only. All such
decisions are made on torch's values, so both sides always run the same program.

Self-check: `AUTOGRAD_MACHINE_LIB=torch pytest tests/test_autograd_state_machine.py` runs the machine
with torch on both sides (the machine must pass it; it also asserts that the two sides never share a
tensor). `AUTOGRAD_MACHINE_EXAMPLES=N` overrides the number of programs (default 2000 under CI, 200
otherwise).
"""

import contextlib
import functools
import math
import operator
import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, note, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from autograd_machine_edges import EdgeSteps

LIB_NAME = os.environ.get("AUTOGRAD_MACHINE_LIB", "minigrad")
if LIB_NAME == "torch":  # self-check of the machine: torch against torch
    LIB = torch

    def normalize_message(msg):  # the same rewrite as parity.normalize_message (which imports minigrad)
        return str(msg).replace("torch.", "minigrad.").replace("torch", "minigrad")
else:
    import minigrad as LIB
    from parity import normalize_message

SELF_CHECK = LIB is torch
EXAMPLES = int(os.environ.get("AUTOGRAD_MACHINE_EXAMPLES", 2000 if os.environ.get("CI") else 200))
# A long run: `AUTOGRAD_MACHINE_EXAMPLES=1000 AUTOGRAD_MACHINE_SEEDS=0-9` runs the machine once per
# seed (10 seeds, 10,000 programs); unset, hypothesis picks the seed as usual.
SEEDS = os.environ.get("AUTOGRAD_MACHINE_SEEDS")
STEPS = 12

BOUND = 100.0  # every value in the pool stays finite and within [-BOUND, BOUND]
MIN_DIVISOR = 0.25
MAX_LIVE = 10
# (rtol, atol). float64 tensors here often carry values computed in float32 (mixed-dtype ops
# and gradients flowing back through float32 nodes), whose summation order is unspecified.
TOL = {"float32": (1e-4, 1e-3), "float64": (1e-6, 1e-6)}
ARGPARSER = "received an invalid combination of arguments"  # compared by type only (as in test_errors)

SHAPES = [(), (3,), (4,), (2, 3), (1, 3), (2, 1)]
DTYPES = ["float32", "float32", "float32", "float64", "float64", "int64"]
# Mostly exact binary fractions (sums and products stay exact, ties and zeros are common, as at
# relu/abs/clamp kinks), sometimes arbitrary float32 values away from zero.
FLOATS = st.one_of(
    st.integers(-24, 24).map(lambda k: k / 8),
    st.tuples(st.sampled_from([-1, 1]), st.floats(0.015625, 3, width=32)).map(lambda sv: sv[0] * sv[1]),
)
INTS = st.integers(-3, 3)
SCALARS = st.sampled_from([2.0, -1.0, 0.5, 3.0, -0.5, 1.0, 0.0, 2])
DIVISORS = st.sampled_from([2.0, -0.5, 0.5, 3.0, -2.0, 4])
BOUNDS = st.sampled_from([None, -1.0, -0.5, 0.0, 0.5, 1.0])
NOGRAD = st.sampled_from([False, False, False, True])
RETAIN = st.sampled_from([None, None, True, False])


# ----- helpers (pure; nothing here holds a tensor of either side) -----

def dtype_name(dt):
    return str(dt).split(".")[-1]


def _outcome(e):
    msg = str(e)
    return ("raise", type(e).__name__, "" if ARGPARSER in msg else normalize_message(msg))


def attempt(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 - raising is part of the compared behaviour
        return _outcome(e)


def grad_ctx(L, nograd):
    return L.no_grad() if nograd else contextlib.nullcontext()


def nested(flat, shape):
    return np.array(flat, dtype=object).reshape(shape).tolist()


def draw_values(data, shape, dtype):
    n = math.prod(shape)
    flat = data.draw(st.lists(INTS if dtype == "int64" else FLOATS, min_size=n, max_size=n))
    if dtype == "int64":
        flat = [int(v) for v in flat]
    return nested(flat, shape)


def bounded(t):
    """torch-side check: a tensor result (or all tensors of a tuple) is finite and within BOUND."""
    if isinstance(t, (tuple, list)):
        return all(bounded(x) for x in t)
    if not isinstance(t, torch.Tensor) or t.dtype == torch.bool or t.numel() == 0:
        return True
    v = t.detach()
    return bool(torch.isfinite(v).all()) and float(v.abs().max()) <= BOUND


def safe_divisor(t):
    if not isinstance(t, torch.Tensor):
        return abs(t) >= MIN_DIVISOR
    return t.numel() == 0 or float(t.detach().abs().min()) >= MIN_DIVISOR


def build_key(L, spec):
    kind = spec[0]
    if kind == "int":
        return spec[1]
    if kind == "slice":
        return slice(*spec[1:])
    if kind == "col":
        return (slice(None), spec[1])
    if kind == "colslice":
        return (slice(None), slice(spec[1], spec[2]))
    if kind == "ellipsis":
        return Ellipsis
    if kind == "none":
        return None
    if kind == "mask":
        return L.tensor(spec[1], dtype=L.bool)
    if kind == "list":
        return list(spec[1])
    raise AssertionError(spec)


def show_key(spec):
    kind = spec[0]
    if kind == "int":
        return str(spec[1])
    if kind == "slice":
        a, b, s = spec[1:]
        return f"{'' if a is None else a}:{'' if b is None else b}" + ("" if s is None else f":{s}")
    if kind == "col":
        return f":, {spec[1]}"
    if kind == "colslice":
        return f":, {spec[1]}:{spec[2]}"
    if kind == "ellipsis":
        return "..."
    if kind == "none":
        return "None"
    if kind == "mask":
        return f"L.tensor({spec[1]}, dtype=L.bool)"
    return str(list(spec[1]))


def call(L, x, op, args=(), kwargs=None, style="method"):
    kwargs = kwargs or {}
    if style == "method":
        return getattr(x, op)(*args, **kwargs)
    return getattr(L, op)(x, *args, **kwargs)


def show_call(x, op, args=(), kwargs=None, style="method"):
    """Source text of `call(...)`; string arguments are already rendered."""
    parts = [a if isinstance(a, str) else repr(a) for a in args] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()]
    if style == "method":
        return f"{x}.{op}({', '.join(parts)})"
    return f"L.{op}({', '.join([x] + parts)})"


OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
             "matmul": operator.matmul}
OPERATOR_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
IOPERATORS = {"add_": operator.iadd, "sub_": operator.isub, "mul_": operator.imul, "div_": operator.itruediv}


class Pair:
    __slots__ = ("t", "m", "name")

    def __init__(self, t, m, name):
        self.t, self.m, self.name = t, m, name


def step(f):
    """Marks a rule or invariant; `teardown` only runs its final checks after clean steps (it also
    runs after a failure, which it must not mask)."""
    @functools.wraps(f)
    def wrapper(self, *args, **kwargs):
        self.clean = False
        f(self, *args, **kwargs)
        self.clean = True

    return wrapper


def _dense(t):
    """torch's is_non_overlapping_and_dense for a (small) torch tensor."""
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1)
    expected = 1
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def order_dependent_overlap(dst, src):
    """An in-place read of `src` into `dst` whose result depends on torch's loop order: the two
    share memory in different arrangements that torch's overlap check cannot classify."""
    if dst.untyped_storage().data_ptr() != src.untyped_storage().data_ptr() or dst.numel() == 0 or src.numel() == 0:
        return False
    same = dst.shape == src.shape and dst.stride() == src.stride() and dst.storage_offset() == src.storage_offset()
    return not same and not (_dense(dst) and _dense(src))


class AutogradMachine(EdgeSteps, RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.pool = []
        self.count = 0
        self.clean = True

    def teardown(self):
        """Every program ends with a backward of each tensor that requires grad (retaining the graph,
        so each is tried on its own): saved-tensor version checks, freed graphs, multi-output and
        no_grad view errors and the accumulated grads all get compared at least once."""
        if not self.clean:
            return
        for j, p in enumerate(list(self.pool)):
            if p.t.requires_grad:
                self.run(f"{p.name}.sum().backward(retain_graph=True)",
                         lambda L, t: t.sum().backward(retain_graph=True), [("pair", j)])
                self.pool_agrees()

    # ----- running one step on both sides -----

    def side(self, side):
        return torch if side == "t" else LIB

    def resolve(self, L, side, spec):
        kind = spec[0]
        if kind == "pair":
            return getattr(self.pool[spec[1]], side)
        if kind == "scalar":
            return spec[1]
        if kind == "const":
            _, vals, dt, rg = spec
            return L.tensor(vals, dtype=getattr(L, dt), requires_grad=rg)
        if kind == "key":
            return build_key(L, spec[1])
        if kind == "list":
            return [self.resolve(L, side, s) for s in spec[1]]
        raise AssertionError(spec)

    def show(self, spec):
        kind = spec[0]
        if kind == "pair":
            return self.pool[spec[1]].name
        if kind == "scalar":
            return repr(spec[1])
        if kind == "const":
            _, vals, dt, rg = spec
            return f"L.tensor({vals!r}, dtype=L.{dt}{', requires_grad=True' if rg else ''})"
        if kind == "key":
            return show_key(spec[1])
        return "[" + ", ".join(self.show(s) for s in spec[1]) + "]"

    def peek(self, spec):
        """torch's value of an argument, detached (for decisions and probes; never handed to minigrad)."""
        if spec[0] == "pair":
            return self.pool[spec[1]].t.detach().clone()
        if spec[0] == "const":
            return torch.tensor(spec[1], dtype=getattr(torch, spec[2]))
        return self.resolve(torch, "t", spec)

    def probe(self, fn, args):
        """Would `fn` (the out-of-place twin of an in-place step) keep values in range? Tried on
        detached torch clones under no_grad; an op that raises is left to the real step."""
        try:
            with torch.no_grad():
                return bounded(fn(torch, *[self.peek(a) for a in args]))
        except Exception:  # noqa: BLE001
            return True

    def run(self, expr, fn, args=(), *, nograd=False, drop_unbounded=False, values_only=False):
        """Runs fn(L, *args) on torch, then on minigrad; both must raise alike or both return.
        Returns (rt, rm) or None (both raised, or torch's out-of-place result was out of range)."""
        note(("with no_grad(): " if nograd else "") + expr)
        out = {}
        for side in ("t", "m"):
            L = self.side(side)
            try:
                with grad_ctx(L, nograd):
                    vals = [self.resolve(L, side, a) for a in args]
                    out[side] = ("ok", fn(L, *vals))
            except Exception as e:  # noqa: BLE001
                out[side] = e
            if side == "t" and drop_unbounded and isinstance(out["t"], tuple) and not bounded(out["t"][1]):
                note("    (torch's result leaves the bounded range: step not run on the library)")
                return None
        t_res, m_res = out["t"], out["m"]
        if isinstance(t_res, Exception) or isinstance(m_res, Exception):
            assert isinstance(t_res, Exception), (
                f"{expr}: {LIB_NAME} raised {type(m_res).__name__}: {m_res}; torch did not raise")
            assert isinstance(m_res, Exception), (
                f"{expr}: torch raised {type(t_res).__name__}: {t_res}; {LIB_NAME} did not raise")
            assert _outcome(m_res) == _outcome(t_res), (
                f"{expr}: different errors\n  torch:   {type(t_res).__name__}: {t_res}\n"
                f"  {LIB_NAME}: {type(m_res).__name__}: {m_res}")
            note(f"    -> both raise {type(t_res).__name__}: {t_res}")
            return None
        rt, rm = t_res[1], m_res[1]
        self.compare(rt, rm, f"result of {expr}", values_only=values_only)
        return rt, rm

    # ----- comparing -----

    def index_of(self, x, side):
        if x is None:
            return None
        for j, p in enumerate(self.pool):
            if getattr(p, side) is x:
                return j
        return "not in pool"

    def snapshot(self, x, side, values_only=False):
        """What is compared of one tensor. values_only: not its layout, `_base` and `_version` (for
        gradients that autograd returns, whose layout and history are the engine's business: torch
        hands out `grad.expand(...)` views and buffers it wrote into)."""
        L = self.side(side)
        s = {"is Tensor": isinstance(x, L.Tensor)}
        s["dtype"] = attempt(lambda: dtype_name(x.dtype))
        s["shape"] = attempt(lambda: tuple(x.shape))
        if not values_only:
            s["stride"] = attempt(lambda: tuple(x.stride()))
        s["requires_grad"] = attempt(lambda: x.requires_grad)
        s["grad_fn"] = attempt(lambda: None if x.grad_fn is None else x.grad_fn.name())
        s["is_leaf"] = attempt(lambda: x.is_leaf)
        if not values_only:
            s["_version"] = attempt(lambda: x._version)
            s["_base"] = attempt(lambda: self.index_of(x._base, side))
        s["values"] = attempt(lambda: np.array(x.detach().numpy(), copy=True))
        if s["is_leaf"] == ("ok", True):  # .grad of a non-leaf only warns
            s["grad"] = attempt(lambda: None if x.grad is None else (
                dtype_name(x.grad.dtype), tuple(x.grad.shape), np.array(x.grad.detach().numpy(), copy=True)))
        return s

    @staticmethod
    def close(a, b, dtype):
        if a.shape != b.shape:
            return False
        if dtype in TOL:
            rtol, atol = TOL[dtype]
            return np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        return np.array_equal(a, b)

    def compare_tensor(self, t, m, what, values_only=False):
        st_, sm = self.snapshot(t, "t", values_only), self.snapshot(m, "m", values_only)
        for k in list(st_) + [k for k in sm if k not in st_]:  # in reading order: is_leaf before grad
            a, b = st_.get(k, "not read"), sm.get(k, "not read")
            if k == "values" and a[0] == b[0] == "ok":
                assert self.close(a[1], b[1], st_["dtype"][1]), (
                    f"{what}: values differ\n  torch:   {a[1]!r}\n  {LIB_NAME}: {b[1]!r}")
            elif k == "grad" and a[0] == b[0] == "ok" and a[1] is not None and b[1] is not None:
                assert a[1][:2] == b[1][:2], f"{what}: grad dtype/shape differ: torch {a[1][:2]}, {LIB_NAME} {b[1][:2]}"
                assert self.close(a[1][2], b[1][2], a[1][0]), (
                    f"{what}: grads differ\n  torch:   {a[1][2]!r}\n  {LIB_NAME}: {b[1][2]!r}")
            else:
                assert a == b, f"{what}: {k} differs\n  torch:   {a!r}\n  {LIB_NAME}: {b!r}"
        if SELF_CHECK:
            assert t is not m, f"{what}: the two sides share an object"
            if t.numel() and m.numel():
                assert t.untyped_storage().data_ptr() != m.untyped_storage().data_ptr(), (
                    f"{what}: the two sides share storage")

    def compare(self, rt, rm, what, values_only=False):
        if isinstance(rt, torch.Tensor):
            assert isinstance(rm, LIB.Tensor), f"{what}: torch returned a Tensor, {LIB_NAME} {type(rm).__name__}"
            ja, jb = self.index_of(rt, "t"), self.index_of(rm, "m")
            assert ja == jb, f"{what}: returns pool entry {ja} on torch, {jb} on {LIB_NAME}"
            self.compare_tensor(rt, rm, what, values_only)
        elif isinstance(rt, (tuple, list)):
            assert type(rm).__name__ == type(rt).__name__ and len(rm) == len(rt), (
                f"{what}: torch returned {type(rt).__name__} of {len(rt)}, {LIB_NAME} {rm!r}")
            for k, (a, b) in enumerate(zip(rt, rm)):
                self.compare(a, b, f"{what}[{k}]", values_only)
        elif rt is None:
            assert rm is None, f"{what}: torch returned None, {LIB_NAME} {rm!r}"
        else:
            assert not isinstance(rm, LIB.Tensor) and rm == rt, f"{what}: torch {rt!r}, {LIB_NAME} {rm!r}"

    def adopt(self, rt, rm, expr):
        """Adds a new tensor result to the pool (an in-place op's `self` is already there)."""
        if not isinstance(rt, torch.Tensor) or isinstance(self.index_of(rt, "t"), int):
            return
        name = f"x{self.count}"
        self.count += 1
        note(f"    -> {name} = {expr}")
        self.pool.append(Pair(rt, rm, name))
        if len(self.pool) > MAX_LIVE:
            self.pool.pop(0)

    @invariant()
    @step
    def pool_agrees(self):
        for p in self.pool:
            self.compare_tensor(p.t, p.m, p.name)

    # ----- drawing -----

    def pick(self, data, label="i", prefer=None):
        """A pool index. prefer="grad": usually one whose torch tensor requires grad; "nonleaf": usually
        a tracked non-leaf (or view) when there is one. Programs then build and mutate graphs instead
        of mostly failing on untracked tensors or on leaves. (Decided on torch's side.)"""
        if prefer and data.draw(st.sampled_from([True, True, True, False]), label=f"{label} preferred"):
            def tracked(p, nonleaf):
                return p.t.requires_grad and (not nonleaf or attempt(lambda: p.t.is_leaf) != ("ok", True))
            for nonleaf in ([True] if prefer == "nonleaf" else [False]):
                chosen = [j for j, p in enumerate(self.pool) if tracked(p, nonleaf)]
                if chosen:
                    return chosen[data.draw(st.integers(0, len(chosen) - 1), label=label)]
        return data.draw(st.integers(0, len(self.pool) - 1), label=label)

    def draw_operand(self, data, like_shape, *, scalars=SCALARS):
        kind = data.draw(st.sampled_from(["pair", "pair", "const", "scalar"]), label="operand")
        if kind == "scalar":
            return ("scalar", data.draw(scalars, label="scalar"))
        if kind == "pair":
            return ("pair", self.pick(data, "j", prefer="grad"))
        shape = data.draw(st.sampled_from([like_shape, like_shape[-1:], ()] + SHAPES), label="const shape")
        dtype = data.draw(st.sampled_from(["float32", "float64"]), label="const dtype")
        return ("const", draw_values(data, shape, dtype), dtype, data.draw(st.booleans(), label="const requires_grad"))

    def draw_key(self, data, shape):
        ndim = len(shape)
        kinds = ["int", "slice", "ellipsis", "none", "mask", "list"] + (["col", "colslice"] if ndim >= 2 else [])
        kind = data.draw(st.sampled_from(kinds), label="key kind")
        ends = st.sampled_from([None, 0, 1, 2, -1, -2, 3, 5])
        n = shape[0] if ndim else 0
        inside = n > 0 and data.draw(st.integers(0, 9), label="out of range") > 0
        if kind == "int":
            return ("int", data.draw(st.integers(-n, n - 1) if inside else st.sampled_from([n, -n - 1]), label="index"))
        if kind == "slice":
            return ("slice", data.draw(ends), data.draw(ends), data.draw(st.sampled_from([None, 1, 2])))
        if kind == "col":
            return ("col", data.draw(st.integers(-3, 3), label="index"))
        if kind == "colslice":
            return ("colslice", data.draw(ends), data.draw(ends))
        if kind == "mask":
            mshape = data.draw(st.sampled_from([shape, shape[:1]]), label="mask shape")
            bools = data.draw(st.lists(st.booleans(), min_size=math.prod(mshape), max_size=math.prod(mshape)))
            return ("mask", nested(bools, mshape))
        if kind == "list":
            if not inside:
                return ("list", [n])  # out of bounds (or a 0-dim tensor): an error
            idx = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda k: k % n))
            return ("list", idx)
        return (kind,)

    # ----- rules -----

    def create(self, data, dtypes=DTYPES):
        shape = data.draw(st.sampled_from(SHAPES), label="shape")
        dtype = data.draw(st.sampled_from(dtypes), label="dtype")
        rg = data.draw(st.sampled_from([True, True, False]), label="requires_grad")
        how = data.draw(st.sampled_from(["tensor", "tensor", "requires_grad_", "full"]), label="how")
        if how == "full":
            value = data.draw(INTS if dtype == "int64" else FLOATS, label="fill value")
            if dtype == "int64":
                value = int(value)
            expr = f"L.full({shape}, {value!r}, dtype=L.{dtype}, requires_grad={rg})"
            res = self.run(expr, lambda L: L.full(shape, value, dtype=getattr(L, dtype), requires_grad=rg))
        else:
            vals = draw_values(data, shape, dtype)
            if how == "tensor":
                expr = f"L.tensor({vals!r}, dtype=L.{dtype}, requires_grad={rg})"
                res = self.run(expr, lambda L: L.tensor(vals, dtype=getattr(L, dtype), requires_grad=rg))
            else:
                expr = f"L.tensor({vals!r}, dtype=L.{dtype}).requires_grad_({rg})"
                res = self.run(expr, lambda L: L.tensor(vals, dtype=getattr(L, dtype)).requires_grad_(rg))
        if res:
            self.adopt(*res, expr)

    @initialize(data=st.data())
    @step
    def first_leaves(self, data):
        self.create(data, dtypes=["float32", "float64"])  # never raises: the pool is not empty
        self.create(data)

    @rule(data=st.data())
    @step
    def create_leaf(self, data):
        self.create(data)

    def drop(self, data):
        if len(self.pool) < 2:
            return
        i = self.pick(data)
        note(f"del {self.pool[i].name}")
        self.pool.pop(i)

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def unary(self, data):
        """Out-of-place unary ops, reductions and clone (method or module function)."""
        i = self.pick(data, prefer="grad")
        x = self.pool[i]
        op = data.draw(st.sampled_from(["neg", "abs", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt",
                                        "clamp", "sum", "mean", "clone"]), label="op")
        style = data.draw(st.sampled_from(["method", "function"]), label="style")
        nograd = data.draw(NOGRAD, label="no_grad")
        args, kwargs = (), {}
        if op == "clamp":
            kwargs = {"min": data.draw(BOUNDS, label="min"), "max": data.draw(BOUNDS, label="max")}
        elif op in ("sum", "mean") and data.draw(st.booleans(), label="with dim"):
            args = (data.draw(st.integers(-3, 2), label="dim"),)
            if data.draw(st.booleans(), label="keepdim"):
                kwargs = {"keepdim": True}
        pre = []
        if op == "sqrt" and x.t.numel() and float(x.t.detach().min()) < 0:
            pre = ["abs"]  # sqrt of non-negative values only

        def fn(L, x):
            for p in pre:
                x = call(L, x, p, style=style)
            return call(L, x, op, args, kwargs, style)

        expr = x.name
        for p in pre:
            expr = show_call(expr, p, style=style)
        expr = show_call(expr, op, args, kwargs, style)
        res = self.run(expr, fn, [("pair", i)], nograd=nograd, drop_unbounded=True)
        if res:
            self.adopt(*res, expr)

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def binary(self, data):
        """Out-of-place add/sub (with alpha), mul, div, matmul against a pool tensor (possibly the
        same one), a fresh constant (requiring grad or not) or a Python scalar; broadcasting and
        its errors included."""
        i = self.pick(data, prefer="grad")
        x = self.pool[i]
        op = data.draw(st.sampled_from(["add", "sub", "mul", "div", "matmul"]), label="op")
        o = self.draw_operand(data, tuple(x.t.shape), scalars=DIVISORS if op == "div" else SCALARS)
        styles = ["method", "function", "operator"] + (["reflected"] if o[0] == "scalar" and op != "matmul" else [])
        style = data.draw(st.sampled_from(styles), label="style")
        nograd = data.draw(NOGRAD, label="no_grad")
        kwargs = {}
        if op in ("add", "sub") and style in ("method", "function") and data.draw(st.booleans(), label="alpha"):
            kwargs = {"alpha": data.draw(st.sampled_from([2, -0.5, 3.0]), label="alpha value")}
        if op == "div":
            divisor = x.t if style == "reflected" else self.peek(o)
            if not safe_divisor(divisor):
                note(f"(skipped: {op} by a value near zero)")
                return
        X, O = x.name, self.show(o)
        if style == "operator":
            expr = f"{X} {OPERATOR_SYMBOLS[op]} {O}"
            fn = lambda L, a, b: OPERATORS[op](a, b)  # noqa: E731
        elif style == "reflected":
            expr = f"{O} {OPERATOR_SYMBOLS[op]} {X}"
            fn = lambda L, a, b: OPERATORS[op](b, a)  # noqa: E731
        else:
            expr = show_call(X, op, (O,), kwargs, style)
            fn = lambda L, a, b: call(L, a, op, (b,), kwargs, style)  # noqa: E731
        res = self.run(expr, fn, [("pair", i), o], nograd=nograd, drop_unbounded=True)
        if res:
            self.adopt(*res, expr)

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def inplace_unary(self, data):
        """In-place unary ops on any pool tensor: a leaf (requiring grad or not), a non-leaf, a view,
        a multi-output view, a view made under no_grad; in grad mode or under no_grad."""
        i = self.pick(data, prefer="nonleaf")
        x = self.pool[i]
        op = data.draw(st.sampled_from(["neg_", "abs_", "exp_", "sin_", "cos_", "tanh_", "sigmoid_", "relu_",
                                        "sqrt_", "clamp_", "zero_", "fill_"]), label="op")
        style = data.draw(st.sampled_from(["method", "function"]), label="style")
        nograd = data.draw(NOGRAD, label="no_grad")
        args, kwargs, extra = (), {}, []
        if op == "clamp_":
            kwargs = {"min": data.draw(BOUNDS, label="min"), "max": data.draw(BOUNDS, label="max")}
        elif op == "fill_":
            if data.draw(st.booleans(), label="tensor value"):
                dt = data.draw(st.sampled_from(["float32", "float64"]), label="value dtype")
                shape = data.draw(st.sampled_from([(), (), (1,)]), label="value shape")
                extra = [("const", draw_values(data, shape, dt), dt, data.draw(st.booleans(), label="value rg"))]
            else:
                args = (data.draw(SCALARS, label="value"),)
        pre = []
        if op == "sqrt_" and x.t.numel() and float(x.t.detach().min()) < 0:
            pre = ["abs_"]
        twin = op[:-1]
        if op not in ("zero_", "fill_") and not self.probe(
                lambda L, t: call(L, call(L, t, "abs") if pre else t, twin, args, kwargs), [("pair", i)]):
            note(f"(skipped: {x.name}.{op} would leave the bounded range)")
            return

        def fn(L, x, *value):
            for p in pre:
                call(L, x, p, style=style)
            return call(L, x, op, tuple(value) + args, kwargs, style)

        expr = "".join(f"{show_call(x.name, p, style=style)}; " for p in pre)
        expr += show_call(x.name, op, tuple(self.show(e) for e in extra) + args, kwargs, style)
        res = self.run(expr, fn, [("pair", i)] + extra, nograd=nograd)
        if res:
            self.adopt(*res, expr)

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def inplace_binary(self, data):
        """add_/sub_ (alpha), mul_, div_, copy_, masked_fill_ and +=, -=, *=, /= with a pool tensor
        (itself, an overlapping view, ...), a constant (requiring grad or not) or a scalar."""
        i = self.pick(data, prefer="nonleaf")
        x = self.pool[i]
        shape = tuple(x.t.shape)
        op = data.draw(st.sampled_from(["add_", "sub_", "mul_", "div_", "copy_", "masked_fill_"]), label="op")
        nograd = data.draw(NOGRAD, label="no_grad")
        if op == "masked_fill_":
            mshape = data.draw(st.sampled_from([shape, shape[-1:], ()]), label="mask shape")
            bools = data.draw(st.lists(st.booleans(), min_size=math.prod(mshape), max_size=math.prod(mshape)))
            args = [("key", ("mask", nested(bools, mshape)))]
            if data.draw(st.booleans(), label="tensor value"):
                dt = data.draw(st.sampled_from(["float32", "float64"]), label="value dtype")
                args.append(("const", draw_values(data, (), dt), dt, data.draw(st.booleans(), label="value rg")))
            else:
                args.append(("scalar", data.draw(SCALARS, label="value")))
            expr = f"{x.name}.masked_fill_({self.show(args[0])}, {self.show(args[1])})"
            res = self.run(expr, lambda L, t, m, v: t.masked_fill_(m, v), [("pair", i)] + args, nograd=nograd)
            if res:
                self.adopt(*res, expr)
            return
        o = self.draw_operand(data, shape, scalars=DIVISORS if op == "div_" else SCALARS)
        styles = ["method"] + (["operator"] if op in IOPERATORS else [])
        style = data.draw(st.sampled_from(styles), label="style")
        kwargs = {}
        if op in ("add_", "sub_") and style == "method" and data.draw(st.booleans(), label="alpha"):
            kwargs = {"alpha": data.draw(st.sampled_from([2, -0.5, 3.0]), label="alpha value")}
        if op == "div_" and not safe_divisor(self.peek(o)):
            note(f"(skipped: {op} by a value near zero)")
            return
        if op != "copy_" and not self.probe(lambda L, t, b: call(L, t, op[:-1], (b,), kwargs), [("pair", i), o]):
            note(f"(skipped: {x.name}.{op} would leave the bounded range)")
            return
        if o[0] == "pair" and order_dependent_overlap(x.t, self.pool[o[1]].t):
            # docs/divergences.md: torch reads such an operand while writing (the result depends
            # on its loop order); minigrad reads it from a copy
            note(f"(skipped: {x.name}.{op} with an operand that overlaps it in another arrangement)")
            return
        X, O = x.name, self.show(o)
        if style == "operator":
            expr = f"{X} {OPERATOR_SYMBOLS[op[:-1]]}= {O}"
            fn = lambda L, a, b: IOPERATORS[op](a, b)  # noqa: E731
        else:
            expr = show_call(X, op, (O,), kwargs)
            fn = lambda L, a, b: call(L, a, op, (b,), kwargs)  # noqa: E731
        res = self.run(expr, fn, [("pair", i), o], nograd=nograd)
        if res:
            self.adopt(*res, expr)

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def view(self, data):
        """Views (indexing, select, narrow, t, view, reshape, unsqueeze, expand, and a piece of
        unbind/split), possibly taken under no_grad; advanced indexing gives copies."""
        i = self.pick(data, prefer="nonleaf")
        x = self.pool[i]
        shape = tuple(x.t.shape)
        kind = data.draw(st.sampled_from(["getitem", "getitem", "select", "narrow", "t", "view", "reshape",
                                          "unsqueeze", "expand", "unbind", "split"]), label="kind")
        nograd = data.draw(NOGRAD, label="no_grad")
        X = x.name
        piece = None
        args = [("pair", i)]
        if kind == "getitem":
            key = self.draw_key(data, shape)
            args.append(("key", key))
            expr = f"{X}[{show_key(key)}]"
            fn = lambda L, t, k: t[k]  # noqa: E731
        elif kind in ("select", "narrow", "unsqueeze", "t"):
            if kind == "select":
                a = (data.draw(st.integers(-2, 1), label="dim"), data.draw(st.integers(-3, 3), label="index"))
            elif kind == "narrow":
                a = (data.draw(st.integers(-2, 1), label="dim"), data.draw(st.integers(-1, 3), label="start"),
                     data.draw(st.integers(0, 3), label="length"))
            elif kind == "unsqueeze":
                a = (data.draw(st.integers(-3, 3), label="dim"),)
            else:
                a = ()
            style = data.draw(st.sampled_from(["method", "function"]), label="style")
            expr = show_call(X, kind, a, None, style)
            fn = lambda L, t: call(L, t, kind, a, None, style)  # noqa: E731
        elif kind in ("view", "reshape"):
            numel = math.prod(shape)
            a = data.draw(st.sampled_from([(-1,), (numel,), (1, -1), (-1, 1), tuple(reversed(shape)), (2, -1)]),
                          label="shape")
            expr = f"{X}.{kind}{a}"
            fn = lambda L, t: getattr(t, kind)(*a)  # noqa: E731
        elif kind == "expand":
            variant = data.draw(st.sampled_from(["prepend", "grow ones", "keep -1", "bad"]), label="variant")
            if variant == "prepend":
                a = (2,) + shape
            elif variant == "grow ones":
                a = tuple(3 if s == 1 else s for s in shape)
            elif variant == "keep -1":
                a = (2,) + (-1,) * len(shape)
            else:  # a non-singleton size changed, or fewer sizes than dimensions
                grow = [d for d, s in enumerate(shape) if s != 1]
                if grow:
                    a = tuple(s + 1 if d == grow[-1] else s for d, s in enumerate(shape))
                else:
                    a = () if shape else (2, 2)
            expr = f"{X}.expand{a}"
            fn = lambda L, t: t.expand(*a)  # noqa: E731
        else:  # unbind / split: compare all pieces, keep one
            dim = data.draw(st.integers(-2, 1), label="dim")
            a = (dim,) if kind == "unbind" else (data.draw(st.integers(1, 2), label="split size"), dim)
            piece = data.draw(st.integers(0, 3), label="piece")
            expr = f"{X}.{kind}{a}"
            fn = lambda L, t: getattr(t, kind)(*a)  # noqa: E731
        res = self.run(expr, fn, args, nograd=nograd)
        if res and piece is not None:
            rt, rm = res
            if len(rt):
                k = piece % len(rt)
                self.adopt(rt[k], rm[k], f"{expr}[{k}]")
        elif res:
            self.adopt(*res, expr)

    def alias(self, data):
        """detach(), clone(), .data, detach().requires_grad_() (a new leaf sharing the counter)."""
        i = self.pick(data, prefer="grad")
        x = self.pool[i]
        how = data.draw(st.sampled_from(["detach()", "clone()", "data", "detach().requires_grad_()"]), label="how")
        nograd = data.draw(NOGRAD, label="no_grad")
        fns = {"detach()": lambda L, t: t.detach(), "clone()": lambda L, t: t.clone(), "data": lambda L, t: t.data,
               "detach().requires_grad_()": lambda L, t: t.detach().requires_grad_()}
        expr = f"{x.name}.{how}"
        res = self.run(expr, fns[how], [("pair", i)], nograd=nograd)
        if res:
            self.adopt(*res, expr)

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def setitem(self, data):
        """x[key] = value and x[key] += value for int, slice, Ellipsis, None, bool-mask and int-list
        keys; the value is a scalar, a constant (requiring grad or not) or a pool tensor."""
        i = self.pick(data, prefer="nonleaf")
        x = self.pool[i]
        shape = tuple(x.t.shape)
        key = self.draw_key(data, shape)
        nograd = data.draw(NOGRAD, label="no_grad")
        compound = data.draw(st.sampled_from([False, False, True]), label="+=")
        try:
            with torch.no_grad():
                target = tuple(x.t.detach()[build_key(torch, key)].shape)
        except Exception:  # noqa: BLE001 - the step itself will raise
            target = ()
        kind = data.draw(st.sampled_from(["scalar", "const", "const", "pair"]), label="value kind")
        if kind == "scalar":
            v = ("scalar", data.draw(SCALARS, label="value"))
        elif kind == "pair":
            v = ("pair", self.pick(data, "j", prefer="grad"))
        else:
            vshape = data.draw(st.sampled_from([target, target, (), target[-1:], (2,)]), label="value shape")
            dt = data.draw(st.sampled_from(["float32", "float64"]), label="value dtype")
            v = ("const", draw_values(data, vshape, dt), dt, data.draw(st.booleans(), label="value rg"))
        if key[0] in ("mask", "list") and any(st == 0 and n > 1 for n, st in zip(x.t.shape, x.t.stride())):
            one_value = kind == "scalar" or (kind == "const" and math.prod(vshape) == 1) or (
                kind == "pair" and self.pool[v[1]].t.numel() == 1)
            if key[0] == "list" or compound or not one_value:
                # docs/divergences.md: advanced-index writes into expanded tensors raise in
                # minigrad (torch warns and writes each location several times)
                note(f"(skipped: advanced-index write into the expanded {x.name})")
                return
        if compound and not self.probe(lambda L, t, k, b: t[k] + b, [("pair", i), ("key", key), v]):
            note(f"(skipped: {x.name}[{show_key(key)}] += ... would leave the bounded range)")
            return
        expr = f"{x.name}[{show_key(key)}] {'+=' if compound else '='} {self.show(v)}"

        def fn(L, t, k, b):
            if compound:
                t[k] = operator.iadd(t[k], b)  # exactly what `t[k] += b` does
            else:
                t[k] = b

        self.run(expr, fn, [("pair", i), ("key", key), v], nograd=nograd)

    def set_requires_grad(self, data):
        i = self.pick(data)
        x = self.pool[i]
        flag = data.draw(st.booleans(), label="flag")
        if data.draw(st.booleans(), label="as attribute"):
            expr = f"{x.name}.requires_grad = {flag}"
            fn = lambda L, t: setattr(t, "requires_grad", flag)  # noqa: E731
        else:
            expr = f"{x.name}.requires_grad_({flag})"
            fn = lambda L, t: t.requires_grad_(flag)  # noqa: E731
        self.run(expr, fn, [("pair", i)])

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def backward(self, data):
        """x.sum()/x.mean()/x itself .backward(...), x.backward(gradient=...), or autograd.grad of
        x.sum() with respect to pool tensors; retain_graph drawn."""
        i = self.pick(data, prefer="grad")
        x = self.pool[i]
        how = data.draw(st.sampled_from(["sum", "sum", "mean", "implicit", "gradient", "grad"]), label="how")
        retain = data.draw(RETAIN, label="retain_graph")
        kw = {} if retain is None else {"retain_graph": retain}
        kws = "".join(f", {k}={v!r}" for k, v in kw.items())
        args = [("pair", i)]
        if how in ("sum", "mean"):
            expr = f"{x.name}.{how}().backward({kws[2:]})"
            fn = lambda L, t: getattr(t, how)().backward(**kw)  # noqa: E731
        elif how == "implicit":
            expr = f"{x.name}.backward({kws[2:]})"
            fn = lambda L, t: t.backward(**kw)  # noqa: E731
        elif how == "gradient":
            c = data.draw(st.sampled_from([1.0, 0.5, -2.0]), label="gradient value")
            expr = f"{x.name}.backward(gradient=L.full({tuple(x.t.shape)}, {c}, dtype={x.name}.dtype){kws})"
            fn = lambda L, t: t.backward(gradient=L.full(tuple(t.shape), c, dtype=t.dtype), **kw)  # noqa: E731
        else:
            inputs = data.draw(st.lists(st.integers(0, len(self.pool) - 1), min_size=1, max_size=2), label="inputs")
            allow_unused = data.draw(st.booleans(), label="allow_unused")
            kw = dict(kw, allow_unused=allow_unused) if allow_unused else kw
            kws = "".join(f", {k}={v!r}" for k, v in kw.items())
            args.append(("list", [("pair", j) for j in inputs]))
            expr = f"L.autograd.grad({x.name}.sum(), {self.show(args[1])}{kws})"
            fn = lambda L, t, ins: L.autograd.grad(t.sum(), ins, **kw)  # noqa: E731
        self.run(expr, fn, args, values_only=how == "grad")

    def reset_grad(self, data):
        """x.grad = None, or x.grad.zero_() (leaves only: reading .grad of a non-leaf warns)."""
        i = self.pick(data)
        x = self.pool[i]
        if attempt(lambda: x.t.is_leaf) != ("ok", True):
            return
        if x.t.grad is not None and data.draw(st.booleans(), label="zero_"):
            def zero(L, t):
                t.grad.zero_()

            self.run(f"{x.name}.grad.zero_()", zero, [("pair", i)])
        else:
            self.run(f"{x.name}.grad = None", lambda L, t: setattr(t, "grad", None), [("pair", i)])

    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def other_step(self, data):
        """One of the less central steps (one rule, so that they do not crowd out the others)."""
        which = data.draw(st.sampled_from(["alias", "alias", "set_requires_grad", "reset_grad", "drop"]), label="step")
        getattr(self, which)(data)


    @precondition(lambda self: self.pool)
    @rule(data=st.data())
    @step
    def edges(self, data):
        """An edge step (tests/autograd_machine_edges.py): NaN/inf/-0.0 values through an op and its
        backward, multi-output views then scalar reads, a node whose input and result are both
        modified, 0-d outputs of reductions with dim."""
        self.edge_step(data)

    edge_lib = LIB
    edge_attempt = staticmethod(attempt)


AutogradMachine.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
TestAutogradStateMachine = AutogradMachine.TestCase


if SEEDS:
    from hypothesis import seed as _seed
    from hypothesis.stateful import run_state_machine_as_test

    _lo, _, _hi = SEEDS.partition("-")

    @pytest.mark.parametrize("machine_seed", range(int(_lo), int(_hi or _lo) + 1))
    def test_autograd_state_machine_seeded(machine_seed):
        """The long run: EXAMPLES programs for each seed of AUTOGRAD_MACHINE_SEEDS (e.g. 0-9)."""
        _seed(machine_seed)(AutogradMachine)
        run_state_machine_as_test(AutogradMachine, settings=settings(AutogradMachine.TestCase.settings, database=None))
