"""Edge steps of the autograd state machine (tests/test_autograd_state_machine.py), issue 14: each
builds its tensors from a pool entry's values and runs one small program on torch and on the
library under test, comparing every result bit for bit at the edges (NaN, inf, the sign of zero)
and every raised error's type and text.

* `edge_values`: a leaf holding NaN/inf/-0.0 among the pool's values, one op with a backward
  (unary, binary, reduction with ties), values and gradients compared.
* `multi_view_read`: unbind/split/chunk of a non-leaf, an in-place write to the base, then scalar
  reads of an output (item, float, int, bool, tolist, numpy, ==) and a backward.
* `input_and_output_modified`: a node whose input and saved result are both modified in place,
  in a drawn order, then backward (which tensor the version error names).
* `zero_dim_reduction`: max/min/kthvalue(dim) of a 1-d tensor, integer keys on its 0-d outputs,
  and a backward through them.

The edges are kept out of the shared pool, whose values stay finite and bounded.
"""

import math

import numpy as np
from hypothesis import note, strategies as st

EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0]

UNARY = {
    "abs": lambda L, x: L.abs(x), "sign": lambda L, x: L.sign(x), "relu": lambda L, x: L.relu(x),
    "sqrt": lambda L, x: L.sqrt(x), "rsqrt": lambda L, x: L.rsqrt(x), "log": lambda L, x: L.log(x),
    "exp": lambda L, x: L.exp(x), "tanh": lambda L, x: L.tanh(x), "sigmoid": lambda L, x: L.sigmoid(x),
    "reciprocal": lambda L, x: L.reciprocal(x), "round": lambda L, x: L.round(x),
    "elu": lambda L, x: L.nn.functional.elu(x), "leaky_relu": lambda L, x: L.nn.functional.leaky_relu(x, 0.2),
    "clamp(0, 1)": lambda L, x: L.clamp(x, 0, 1), "clamp_min(0)": lambda L, x: L.clamp_min(x, 0),
    "pow 0.5": lambda L, x: L.pow(x, 0.5), "pow -0.5": lambda L, x: L.pow(x, -0.5), "pow 2": lambda L, x: L.pow(x, 2),
    "pow 3": lambda L, x: L.pow(x, 3), "pow -1": lambda L, x: L.pow(x, -1), "pow -2": lambda L, x: L.pow(x, -2),
    "pow 0": lambda L, x: L.pow(x, 0), "pow 1.5": lambda L, x: L.pow(x, 1.5), "2 ** x": lambda L, x: L.pow(2.0, x),
    "prod": lambda L, x: x.prod(), "norm 1": lambda L, x: x.norm(p=1), "norm inf": lambda L, x: x.norm(p=math.inf),
    "amax": lambda L, x: x.amax(), "max": lambda L, x: x.max(), "where": lambda L, x: L.where(x > 0, L.sqrt(x), x),
}
BINARY = {
    "mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / b, "pow": lambda L, a, b: L.pow(a, b),
    "add alpha": lambda L, a, b: L.add(a, b, alpha=1.5), "maximum": lambda L, a, b: L.maximum(a, b),
    "mse": lambda L, a, b: L.nn.functional.mse_loss(a, b), "l1": lambda L, a, b: L.nn.functional.l1_loss(a, b),
}
# which zero a 0.0/-0.0 tie gives is unspecified in torch (its loop order decides)
TIE_SENSITIVE = {"amax", "max", "maximum"}

NODES = {
    "pow(t, t)": lambda L, x: L.pow(x, x), "max()": lambda L, x: x.max(), "min()": lambda L, x: x.min(),
    "prod()": lambda L, x: x.prod(), "norm()": lambda L, x: x.norm(), "logsumexp": lambda L, x: L.logsumexp(x, 0),
    "exp": lambda L, x: L.exp(x), "sigmoid": lambda L, x: L.sigmoid(x), "pow(2, t)": lambda L, x: L.pow(2.0, x),
    "max(0)": lambda L, x: x.max(0)[0], "cumprod": lambda L, x: L.cumprod(x, 0), "div": lambda L, x: x / (x * 1),
}

READS = {
    "item": lambda t: t.item(), "float": lambda t: float(t), "int": lambda t: int(t), "bool": lambda t: bool(t),
    "tolist": lambda t: t.tolist(), "numpy": lambda t: t.detach().numpy().tolist(), "== 1": lambda t: bool(t == 1),
}


def write_in_order(x, y, order, view_stop):
    """The in-place writes of a program that modifies a node's input `x` and its result `y`:
    per letter of `order`, "x" scales x, "v" adds through the view x[0:view_stop], "y" adds to y."""
    for m in order:
        if m == "x":
            x.mul_(2)
        elif m == "v":
            x[0:view_stop].add_(1)
        else:
            y.add_(1)


def same_value(a, b):
    """Equal Python values, floats compared with NaN == NaN, the sign of zero, and a relative
    tolerance elsewhere (libm and torch's vectorised math differ in the last bits)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if a == 0 or b == 0 or math.isinf(a) or math.isinf(b):
            return a == b and math.copysign(1, a) == math.copysign(1, b)
        return abs(a - b) <= 1e-4 * abs(b)
    return type(a) is type(b) and a == b


def as_plain(L, r):
    """A result as Python values (tensors as (dtype, shape, values)); exceptions as outcomes."""
    if isinstance(r, (list, tuple)):
        return [as_plain(L, x) for x in r]
    if hasattr(r, "shape") and hasattr(r, "dtype") and not isinstance(r, np.ndarray):
        vals = r.detach().tolist()
        if r.dtype in (L.float32, L.float64):
            vals = np.asarray(vals, dtype=np.float64).tolist()
        return ("tensor", str(r.dtype).split(".")[-1], tuple(r.shape), vals)
    return r


class EdgeSteps:
    """Mixed into the machine: `edge_step` draws one of the steps above."""

    def edge_both(self, what, program):
        """Runs `program(L)` on torch, then on the library; compares outcomes."""
        import torch
        note(what)
        rt = self.edge_attempt(lambda: as_plain(torch, program(torch)))
        rm = self.edge_attempt(lambda: as_plain(self.edge_lib, program(self.edge_lib)))
        assert rt[0] == rm[0] and (rt[0] == "ok" and same_value(rm[1], rt[1]) or rt[0] != "ok" and rt == rm), \
            f"{what}\n  torch: {rt}\n  lib:   {rm}"

    def source_values(self, data, min_dims=1):
        """Float values of a pool entry (flattened), or a few drawn ones."""
        i = data.draw(st.integers(0, len(self.pool) - 1), label="edge source")
        flat = self.pool[i].t.detach().double().reshape(-1).tolist()
        return flat or [1.0]

    def edge_values(self, data):
        vals = self.source_values(data)[:6]
        vals = [data.draw(st.sampled_from(EDGES), label="edge") if data.draw(st.booleans(), label="edge?") else v for v in vals]
        dtype = data.draw(st.sampled_from(["float32", "float64"]), label="edge dtype")
        if data.draw(st.booleans(), label="unary?"):
            name = data.draw(st.sampled_from(sorted(UNARY)), label="edge op")
            f, operands = UNARY[name], [vals]
        else:
            name = data.draw(st.sampled_from(sorted(BINARY)), label="edge op")
            other = [data.draw(st.sampled_from(EDGES + [0.5, -2.0, 3.0]), label="edge b") for _ in vals]
            f, operands = BINARY[name], [vals, other]
        if name in TIE_SENSITIVE:
            operands = [[0.0 if v == 0 else v for v in o] for o in operands]
        if name in ("prod", "norm 1", "norm inf"):
            dtype = "float64"  # float32 reductions accumulate in double here (docs/gpu.md)

        def program(L):
            xs = [L.tensor(o, dtype=getattr(L, dtype), requires_grad=True) for o in operands]
            y = f(L, *xs)
            return [y] + list(L.autograd.grad(y.sum(), xs, allow_unused=True))
        self.edge_both(f"edge values: {name} of {operands} ({dtype})", program)

    def multi_view_read(self, data):
        vals = self.source_values(data)[:4]
        n = len(vals)
        split = data.draw(st.sampled_from(["unbind", "split", "chunk"]), label="multi view")
        write = data.draw(st.sampled_from(["add_", "mul_", "setitem", "zero_"]), label="base write")
        read = data.draw(st.sampled_from(sorted(READS)), label="scalar read")
        k = data.draw(st.integers(0, n - 1), label="output")

        def program(L):
            base = L.tensor(vals, requires_grad=True) * 1
            outs = {"unbind": lambda: base.unbind(0), "split": lambda: base.split(1),
                    "chunk": lambda: base.chunk(n)}[split]()
            {"add_": lambda: base.add_(1), "mul_": lambda: base.mul_(2),
             "setitem": lambda: base.__setitem__(0, 5.0), "zero_": lambda: base.zero_()}[write]()
            out = outs[k].reshape(()) if outs[k].dim() else outs[k]
            got = READS[read](out) if read != "int" or abs(out.item()) < 2 ** 62 else None
            base.sum().backward()
            return got
        self.edge_both(f"multi-output view: {split} of {vals}, base.{write}, {read}(out[{k}])", program)

    def input_and_output_modified(self, data):
        vals = [abs(v) + 0.5 for v in self.source_values(data)[:4]]
        node = data.draw(st.sampled_from(sorted(NODES)), label="node")
        order = data.draw(st.sampled_from(["xy", "yx", "xxy", "yyx", "vy", "y", "x"]), label="writes")

        def program(L):
            x = L.tensor(vals, requires_grad=True) * 1
            y = NODES[node](L, x)
            write_in_order(x, y, order, view_stop=1)
            y.sum().backward()
        self.edge_both(f"input and output modified: {node} of {vals}, writes {order}", program)

    def zero_dim_reduction(self, data):
        vals = self.source_values(data)[:3]
        op = data.draw(st.sampled_from(["max", "min", "kthvalue", "median"]), label="reduction")
        k = data.draw(st.integers(0, 1), label="output")
        key = data.draw(st.sampled_from([0, -1, 1, 5, -2, None, Ellipsis, slice(0, 1), True]), label="key")

        def program(L):
            a = L.tensor(vals, requires_grad=True)
            x = a * 1
            r = x.kthvalue(1, 0) if op == "kthvalue" else getattr(x, op)(0)
            got = error = None
            try:
                got = r[k][key]
            except IndexError as e:
                error = str(e)
            r[0].backward()
            return [got, error, a.grad]
        self.edge_both(f"0-d outputs: {op}(0) of {vals}, output {k}[{key!r}]", program)

    def edge_step(self, data):
        which = data.draw(st.sampled_from(["edge_values", "edge_values", "multi_view_read",
                                           "input_and_output_modified", "zero_dim_reduction"]), label="edge step")
        getattr(self, which)(data)
