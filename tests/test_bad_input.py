"""Bad input (issue 14, hardening 1): every public function and method, called with wrong
types, shapes, dtypes, dims out of range, negative or enormous sizes, ragged nested lists,
None and NaN where an integer is expected, on minigrad and torch alike.

The public names are listed programmatically (module functions, `Tensor` methods and operators,
`nn.functional`, each present in torch too); hypothesis draws a name and arguments from a pool
of awkward values, each made the same way in both libraries. For every call:

* minigrad never panics (a pyo3 PanicException, or the bindings' "internal error" RuntimeError
  that a caught panic becomes, fails the test), never hangs (a faulthandler watchdog ends the
  process after WATCHDOG seconds), and never aborts (that would end the test run);
* if torch raises, minigrad raises the same exception class (the builtin class, compared
  through the MRO: torch's `OutOfMemoryError` is a RuntimeError);
* if torch succeeds, minigrad succeeds too, or raises NotImplementedError (a dtype or feature
  minigrad leaves out: documented in docs/divergences.md);
* the tensors passed in are unchanged afterwards (values bit for bit and `_version`), except
  the one an in-place op writes (`x.add_(...)`, `F.relu(x, inplace=True)`, `x[k] = v`).

Cases where the classes differ by design are listed in KNOWN with the reason (each one is a
row of docs/divergences.md). `BAD_INPUT_EXAMPLES` sets the examples per test (CI: 2,000,
about 25 s for the three; a developer run 300; the long run in docs/testing.md: 20,000).
"""

import faulthandler
import inspect
import math
import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import minigrad as mg
import minigrad.nn.functional as MF
import torch.nn.functional as TF

EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", "0")) or (2000 if os.environ.get("CI") else 300)
WATCHDOG = 60

# ----- the public names -----

# global state, files, devices, interop with other libraries, and calls that hand control
# back to Python code (hooks): not bad-input targets
SKIP = {
    "manual_seed", "set_printoptions", "save", "load", "set_rng_state", "get_rng_state", "from_dlpack",
    "from_numpy", "is_grad_enabled", "is_inference_mode_enabled",
    "backward", "register_hook", "retain_grad", "cuda", "cpu", "numpy", "data_ptr", "to",
    # random draws: their values differ by design; their argument errors are covered through
    # rand/randn/randint/randperm, which stay in
    "normal_", "uniform_", "rand_like", "randn_like",
}


def public_functions():
    return sorted(n for n in dir(mg) if not n.startswith("_") and n not in SKIP and callable(getattr(mg, n))
                  and not inspect.isclass(getattr(mg, n)) and callable(getattr(torch, n, None)))


OPERATORS = ["__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__mul__", "__truediv__", "__rtruediv__",
             "__floordiv__", "__rfloordiv__", "__mod__", "__pow__", "__rpow__", "__matmul__", "__and__", "__or__",
             "__xor__", "__invert__", "__neg__", "__abs__", "__lt__", "__eq__", "__getitem__", "__setitem__",
             "__len__", "__bool__", "__float__", "__int__", "__index__", "__imul__", "__itruediv__"]


def public_methods():
    names = [n for n in dir(mg.Tensor) if not n.startswith("_") and n not in SKIP
             and callable(getattr(mg.Tensor, n, None)) and callable(getattr(torch.Tensor, n, None))]
    return sorted(names) + OPERATORS


def public_functional():
    return sorted(n for n in dir(MF) if not n.startswith("_") and callable(getattr(MF, n))
                  and not inspect.isclass(getattr(MF, n)) and callable(getattr(TF, n, None)))


# ----- the argument pool: tokens made alike in both libraries -----

ARRAYS = {
    "f32[2,3]": np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5,
    "f64[3]": np.array([1.5, -2.0, 0.25]),
    "f32[4] edges": np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np.float32),
    "i64[3]": np.array([0, 2, 1]),
    "i64[2] bad index": np.array([-7, 5]),
    "i32[2,2]": np.array([[1, -3], [4, 0]], dtype=np.int32),
    "bool[4]": np.array([True, False, True, True]),
    "f32[]": np.array(2.5, dtype=np.float32),
    "i64[]": np.array(3),
    "f32[0,3]": np.zeros((0, 3), dtype=np.float32),
    "f32[1,2,2,2]": np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2),
    "f32[3,1]": np.array([[1.0], [2.0], [3.0]], dtype=np.float32),
}

HUGE = [2**62, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64, 10**30]
NUMBERS = [0, 1, 2, 3, -1, -2, -5, 7, 1.5, -0.5, math.nan, math.inf, -math.inf, True, False] + HUGE
ODD = [None, "abc", "", b"x", 1j, object(), Ellipsis, slice(None, None, 2), slice(0, 2**63), [], [[1, 2], [3]],
       [1, [2, 3]], [1, None], [[[]]], (2, 3), (2, -3), (0, 0), (1, 1, 1), (2**62, 2**62), (3, math.nan), [1.5, 2],
       (-1,), ((0, 1), (1, 0)), {"a": 1}, {1, 2}]
DTYPES = ["float32", "float64", "int64", "int32", "bool"]


def token():
    return st.one_of(
        st.sampled_from(sorted(ARRAYS)).map(lambda k: ("t", k)),
        st.sampled_from(DTYPES).map(lambda k: ("dtype", k)),
        st.sampled_from(range(len(NUMBERS))).map(lambda i: ("n", i)),
        st.sampled_from(range(len(ODD))).map(lambda i: ("o", i)),
        st.lists(st.sampled_from(sorted(ARRAYS)), min_size=1, max_size=3).map(lambda ks: ("tl", tuple(ks))),
    )


# (no `out=`: minigrad has not got it yet, docs/divergences.md)
KWARGS = ["dim", "keepdim", "dtype", "size", "inplace", "p", "value", "alpha", "index"]


class Maker:
    """Builds a library's values from tokens, remembering every tensor it handed out."""

    def __init__(self, lib):
        self.lib, self.tensors = lib, []

    def tensor(self, key):
        t = self.lib.from_numpy(ARRAYS[key].copy())
        self.tensors.append(t)
        return t

    def __call__(self, tok):
        kind, v = tok
        if kind == "t":
            return self.tensor(v)
        if kind == "dtype":
            return getattr(self.lib, v)
        if kind == "n":
            return NUMBERS[v]
        if kind == "tl":
            return [self.tensor(k) for k in v]
        return ODD[v]


def snapshot(ts):
    return [(t.numpy().tobytes(), t._version, tuple(t.shape), t.stride()) for t in ts]


def builtin_class(e):
    for c in type(e).__mro__:
        if c.__module__ == "builtins":
            return c.__name__
    return type(e).__name__


# Differences by design, each a row of docs/divergences.md ("bad input" rows):
# * a Python int past int64: torch's parsers answer TypeError, ValueError ("Overflow when
#   unpacking long long"), OverflowError or RuntimeError by path, and convert it to a double for
#   some floating ops; minigrad's conversion raises OverflowError (or TypeError naming the type);
# * a complex number: minigrad has no complex dtype and refuses it (TypeError or
#   NotImplementedError) where torch computes or raises;
# * torch's Python-level functions (norm, split, the losses and pools of nn.functional) touch an
#   attribute of a non-tensor argument and fail with AttributeError; minigrad's TypeError names
#   the argument and the type.
# * a tensor inside a list of ints (pad, kernel sizes, norm's dim) or where a number is
#   expected: torch's parser refuses it by type; minigrad converts element by element and the
#   conversion fails first (ValueError "only one element tensors ...", or a size RuntimeError);
# * torch's deprecated positional-alpha overloads (`torch.add(x, 2, y)`) do not exist here, and
#   `minigrad.permute(x, 1, 0)` takes dims unpacked as the method does;
# * check order inside a few nn.functional ops (which bad argument is reported first when
#   several are bad: embedding, nll_loss, the binary cross-entropies, adaptive_avg_pool2d);
# * pooling sizes past int32: torch's "value cannot be converted to type int without overflow",
#   minigrad computes with 64-bit sizes (its error, if any, comes later).
OVERFLOW_CLASSES = {"TypeError", "ValueError", "OverflowError", "RuntimeError", "NotImplementedError"}
INT_LIST_OPS = {"pad", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "norm", "embedding", "split_with_sizes"}
CHECK_ORDER_OPS = {"embedding", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                   "adaptive_avg_pool2d", "max_pool2d", "avg_pool2d", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                   "cross_entropy", "conv2d"}
KNOWN = {("*", "AttributeError", "TypeError")} \
    | {(n, "TypeError", c) for n in INT_LIST_OPS for c in ("ValueError", "RuntimeError", "NotImplementedError", "IndexError")} \
    | {(n, a, b) for n in CHECK_ORDER_OPS for a in ("TypeError", "ValueError", "IndexError", "RuntimeError", "NotImplementedError")
       for b in ("TypeError", "ValueError", "RuntimeError", "AssertionError", "IndexError") if a != b} \
    | {(n, c, "TypeError") for n in ("add", "sub", "subtract", "add_", "sub_", "subtract_", "elu_")
       for c in ("ok", "RuntimeError", "NotImplementedError")} \
    | {(n, "TypeError", c) for n in ("permute", "reshape") for c in ("RuntimeError", "IndexError", "OverflowError", "ok")} \
    | {(n, a, "TypeError") for n in ("addcdiv", "addcmul", "addcdiv_", "addcmul_") for a in ("RuntimeError", "ok")} \
    | {("unbind", "TypeError", "ok"), ("narrow", "RuntimeError", "TypeError"),
       ("min", "TypeError", "RuntimeError"), ("max", "TypeError", "RuntimeError"), ("min", "TypeError", "ok"),
       ("max", "TypeError", "ok"), ("zeros", "TypeError", "RuntimeError"),
       ("ones", "TypeError", "RuntimeError"), ("empty", "TypeError", "RuntimeError"), ("chunk", "TypeError", "ok"),
       ("norm", "TypeError", "ok"), ("count_nonzero", "TypeError", "IndexError"), ("randint", "TypeError", "RuntimeError"),
       ("diagonal", "TypeError", "ok"), ("diagonal", "TypeError", "IndexError"),
       ("split", "IndexError", "TypeError"), ("embedding", "AttributeError", "ValueError"), ("mv", "IndexError", "RuntimeError"),
       # a many-element bool tensor as unflatten's dim: torch's parser asks it for a truth value
       # (RuntimeError), minigrad refuses a non-int (TypeError)
       ("unflatten", "RuntimeError", "TypeError"),
       # torch.unique / unique_consecutive take *args, **kwargs and branch on the flags' truth
       # first (boolean_dispatch): a many-element tensor flag raises before an unknown keyword is
       # seen; minigrad's signature refuses the keyword first
       ("unique", "RuntimeError", "TypeError"), ("unique_consecutive", "RuntimeError", "TypeError")} \
    | {(n, a, b) for n in ("full", "linspace", "split", "bmm") for a in ("TypeError", "RuntimeError", "NotImplementedError")
       for b in ("TypeError", "RuntimeError") if a != b} \
    | {("view", "RuntimeError", "NotImplementedError"), ("view", "TypeError", "RuntimeError"),
       ("l1_loss", "ok", "RuntimeError"), ("roll", "RuntimeError", "ok")} \
    | {(n, a, "ok") for n in ("l1_loss", "binary_cross_entropy_with_logits",
                              "binary_cross_entropy",
                              "nll_loss", "cross_entropy")
       for a in ("NotImplementedError", "RuntimeError")} \
    | {(n, a, b) for n in ("as_strided", "as_strided_", "squeeze", "squeeze_") for a in ("TypeError", "IndexError", "RuntimeError", "ok")
       for b in ("TypeError", "RuntimeError", "ok") if a != b}


def flat(values):
    for v in values:
        if isinstance(v, (list, tuple, set)):
            yield from flat(v)
        elif isinstance(v, dict):
            yield from flat(v.values())
        else:
            yield v


def tolerated(name, torch_class, mg_class, values, torch_message=""):
    """Whether a difference ("ok": that library succeeded) is one of the designed ones."""
    if (name, torch_class, mg_class) in KNOWN or ("*", torch_class, mg_class) in KNOWN:
        return True
    vals = [v for v in flat(values) if not isinstance(v, (torch.Tensor, mg.Tensor))]
    if any(isinstance(v, complex) for v in vals):
        return mg_class in ("TypeError", "NotImplementedError", "RuntimeError")
    if any(isinstance(v, int) and not -2**63 <= v < 2**63 for v in vals):
        if torch_class == "ok":
            return mg_class in ("OverflowError", "TypeError")
        return torch_class in OVERFLOW_CLASSES and (mg_class in OVERFLOW_CLASSES or mg_class == "ok")
    if any(isinstance(v, bytes) for v in vals) and torch_class == "TypeError":
        return mg_class in ("IndexError", "RuntimeError", "ok")  # pyo3 reads bytes as a list of ints
    if any(isinstance(v, bool) for v in values[:2]) and name in ("view", "reshape", "expand", "repeat", "tile", "permute") \
            and torch_class == "TypeError":
        return mg_class in ("RuntimeError", "ok")  # a leading bool read as an int size
    if torch_message and "without overflow" in torch_message:
        return True
    if name == "batch_norm" and torch_message and "SmallVector unable to grow" in torch_message:
        return True  # torch reads dim 1 of a 0-d input out of bounds (undefined behaviour): docs/divergences.md
    return False


def call(lib, kind, name, args, kwargs):
    if kind == "function":
        return getattr(lib, name)(*args, **kwargs)
    if kind == "functional":
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    self, rest = args[0], args[1:]
    return getattr(self, name)(*rest, **kwargs)


def _has_inplace(f):
    try:
        return "inplace" in inspect.signature(f).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


INPLACE_FUNCTIONAL = {n for n in dir(TF) if callable(getattr(TF, n)) and _has_inplace(getattr(TF, n))}


def writes_first(kind, name, kwargs, args):
    """Whether the call may write its first tensor argument (self, or F's input)."""
    if name.endswith("_") or name in ("__setitem__", "__iadd__", "__imul__", "__itruediv__"):
        return True
    if kind == "functional" and name in INPLACE_FUNCTIONAL:
        return True  # F.relu(x, <anything true>) writes x
    return False


# functions whose `out` tensor may also come positionally (index in the positional arguments)
OUT_POSITION = {"tensordot": 3}


def out_argument(kind, name, args, kwargs):
    """The tensor a call may write as its `out=` result (None when there is none)."""
    if "out" in kwargs:
        return kwargs["out"]
    at = OUT_POSITION.get(name) if kind == "function" else None
    return args[at] if at is not None and len(args) > at else None


def outcome(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        faulthandler.dump_traceback_later(WATCHDOG, exit=True)
        try:
            return "ok", f()
        except Exception as e:
            return "error", e
        finally:
            faulthandler.cancel_dump_traceback_later()


def check_call(kind, name, arg_tokens, kw_tokens):
    results = {}
    for lib in (torch, mg):
        make = Maker(lib)
        if kind == "method":  # self is always a tensor
            self_key = arg_tokens[0][1] if arg_tokens and arg_tokens[0][0] == "t" else "f32[2,3]"
            args = [make(("t", self_key))] + [make(t) for t in arg_tokens[1:]]
        else:
            args = [make(t) for t in arg_tokens]
        kwargs = {k: make(t) for k, t in kw_tokens}
        first = args[0] if args and isinstance(args[0], lib.Tensor) else None
        out = out_argument(kind, name, args, kwargs)
        watched = [t for t in make.tensors if not (writes_first(kind, name, kwargs, args) and t is first) and t is not out]
        before = snapshot(watched) if lib is mg else None
        # a pyo3 PanicException is a BaseException: it propagates and fails the test
        results[lib.__name__] = outcome(lambda: call(lib, kind, name, args, kwargs))
        if name.startswith("__") and results[lib.__name__] == ("ok", NotImplemented):
            # an operator's NotImplemented is Python's TypeError ("unsupported operand type(s)")
            results[lib.__name__] = ("error", TypeError("NotImplemented"))
        after = snapshot(watched)
        if lib is mg:
            assert after == before, f"{kind} {name}: an input tensor changed"
    (ts, tv), (ms, mv) = results["torch"], results["minigrad"]
    if ms == "error":
        assert "internal error" not in str(mv), f"{kind} {name}: a panic: {mv}"
    used = list(arg_tokens[1:]) if kind == "method" else list(arg_tokens)  # (a method's self is a tensor)
    values = [None] * (kind == "method") + [ODD[v] if k == "o" else NUMBERS[v] if k == "n" else None
                                            for k, v in used + [t for _, t in kw_tokens]]
    if ts == "ok":
        if ms == "error" and not isinstance(mv, NotImplementedError) and not tolerated(name, "ok", builtin_class(mv), values):
            raise AssertionError(f"{kind} {name}: torch succeeds, minigrad raises {type(mv).__name__}: {mv}")
        return
    tc = builtin_class(tv)
    if ms == "ok":
        if tolerated(name, tc, "ok", values, str(tv)):
            return
        raise AssertionError(f"{kind} {name}: torch raises {tc}: {str(tv)[:300]}; minigrad succeeds")
    mc = builtin_class(mv)
    if tc != mc and not tolerated(name, tc, mc, values, str(tv)):
        raise AssertionError(f"{kind} {name}: torch raises {tc}: {str(tv)[:300]}\n minigrad raises {mc}: {str(mv)[:300]}")


UNARY_DUNDERS = {"__invert__", "__neg__", "__abs__", "__len__", "__bool__", "__float__", "__int__", "__index__"}


def arity(name):
    """Python calls an operator with a fixed number of operands (self excluded), no keywords."""
    if name in UNARY_DUNDERS:
        return 0
    return 2 if name == "__setitem__" else 1


def calls(names, kind):
    """(kind, name, positional tokens, keyword tokens); for a method the first token is self's."""
    def dunder(name):
        n = 1 + arity(name)
        return st.tuples(st.just(kind), st.just(name), st.lists(token(), min_size=n, max_size=n), st.just([]))

    plain = [n for n in names if not n.startswith("__")]
    dunders = [n for n in names if n.startswith("__")]
    ordinary = st.tuples(st.just(kind), st.sampled_from(plain), st.lists(token(), min_size=0, max_size=4),
                         st.lists(st.tuples(st.sampled_from(KWARGS), token()), max_size=1, unique_by=lambda kv: kv[0]))
    return st.one_of(ordinary, st.sampled_from(dunders).flatmap(dunder)) if dunders else ordinary


def profile():
    return settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=EXAMPLES)


@profile()
@given(calls(public_functions(), "function"))
def test_functions_with_bad_input(c):
    check_call(*c)


@profile()
@given(calls(public_methods(), "method"))
def test_methods_with_bad_input(c):
    check_call(*c)


@profile()
@given(calls(public_functional(), "functional"))
def test_functional_with_bad_input(c):
    check_call(*c)
