"""The composites torch builds from other ops, against torch: the stacking family (atleast_1d/2d/3d,
hstack, vstack/row_stack, dstack, column_stack), outer/ger, fliplr/flipud, ravel, the conjugate
transposes H/mH/adjoint, swapdims_, broadcast_to, take_along_dim, repeat_interleave, diff, and the
`new_*` factories: shapes, strides, view-ness, the
graph's nodes (two levels), gradients, dtypes, and torch's errors (type, and text)."""

import re
import warnings

import numpy as np
import pytest
import torch

import minigrad as mg

SHAPES = {"s": (), "v": (3,), "w": (4,), "m": (3, 4), "m2": (2, 4), "b": (2, 3, 4)}


def _inputs(lib):
    rng = np.random.default_rng(0)
    return {k: lib.tensor(rng.standard_normal(s), dtype=lib.float64).requires_grad_() for k, s in SHAPES.items()}


# (label, call): each call gets the library and the leaves
CALLS = [
    ("atleast_1d 0-d", lambda L, t: L.atleast_1d(t["s"])),
    ("atleast_1d 1-d", lambda L, t: L.atleast_1d(t["v"])),
    ("atleast_1d list", lambda L, t: L.atleast_1d([t["s"], t["m"]])),
    ("atleast_1d varargs", lambda L, t: L.atleast_1d(t["s"], t["v"])),
    ("atleast_2d 0-d", lambda L, t: L.atleast_2d(t["s"])),
    ("atleast_2d 1-d", lambda L, t: L.atleast_2d(t["v"])),
    ("atleast_2d 3-d", lambda L, t: L.atleast_2d(t["b"])),
    ("atleast_3d each", lambda L, t: L.atleast_3d((t["s"], t["v"], t["m"], t["b"]))),
    ("atleast_1d int", lambda L, t: L.atleast_1d(3)),
    ("hstack 1-d", lambda L, t: L.hstack([t["v"], t["w"]])),
    ("hstack 0-d", lambda L, t: L.hstack((t["s"], t["s"]))),
    ("hstack 2-d", lambda L, t: L.hstack([t["m"], t["m"]])),
    ("hstack empty", lambda L, t: L.hstack([])),
    ("hstack tensor", lambda L, t: L.hstack(t["v"])),
    ("hstack mismatch", lambda L, t: L.hstack([t["m"], t["m2"]])),
    ("vstack", lambda L, t: L.vstack([t["v"], t["v"], t["s"].expand(3)])),
    ("vstack 2-d", lambda L, t: L.vstack([t["m"], t["m2"]])),
    ("vstack mismatch", lambda L, t: L.vstack([t["v"], t["w"]])),
    ("row_stack", lambda L, t: L.row_stack([t["w"], t["m2"]])),
    ("dstack", lambda L, t: L.dstack([t["v"], t["v"]])),
    ("dstack 2-d", lambda L, t: L.dstack([t["m"], t["m"]])),
    ("dstack empty", lambda L, t: L.dstack(())),
    ("column_stack", lambda L, t: L.column_stack([t["v"], t["m"][:, :2], t["s"].expand(3)])),
    ("column_stack 0-d", lambda L, t: L.column_stack([t["s"], t["s"]])),
    ("column_stack empty", lambda L, t: L.column_stack([])),
    ("outer", lambda L, t: L.outer(t["v"], t["w"])),
    ("outer method", lambda L, t: t["w"].outer(t["v"])),
    ("ger", lambda L, t: L.ger(t["v"], t["w"])),
    ("outer ints", lambda L, t: L.outer(L.arange(3), t["w"])),
    ("outer 2-d", lambda L, t: L.outer(t["m"], t["v"])),
    ("outer 0-d vec2", lambda L, t: L.outer(t["v"], t["s"])),
    ("outer number", lambda L, t: L.outer(t["v"], 3)),
    ("fliplr", lambda L, t: L.fliplr(t["m"])),
    ("fliplr 3-d", lambda L, t: t["b"].fliplr()),
    ("fliplr 1-d", lambda L, t: L.fliplr(t["v"])),
    ("flipud", lambda L, t: L.flipud(t["v"])),
    ("flipud 0-d", lambda L, t: L.flipud(t["s"])),
    ("ravel", lambda L, t: t["m"].ravel()),
    ("ravel strided", lambda L, t: L.ravel(t["m"].t())),
    ("ravel 0-d", lambda L, t: t["s"].ravel()),
    ("H", lambda L, t: t["m"].H),
    ("H 1-d", lambda L, t: t["v"].H),
    ("H 3-d", lambda L, t: t["b"].H),
    ("mH", lambda L, t: t["b"].mH),
    ("mH 1-d", lambda L, t: t["v"].mH),
    ("adjoint", lambda L, t: L.adjoint(t["b"])),
    ("adjoint 1-d", lambda L, t: t["v"].adjoint()),
    ("swapdims_", lambda L, t: (t["b"] * 1).swapdims_(0, 2)),
    ("swapdims_ bad dim", lambda L, t: (t["b"] * 1).swapdims_(0, 3)),
    ("meshgrid ij", lambda L, t: L.meshgrid(t["v"], t["w"], indexing="ij")),
    ("meshgrid xy", lambda L, t: L.meshgrid([t["v"], t["w"], t["s"]], indexing="xy")),
    ("meshgrid one", lambda L, t: L.meshgrid((t["w"],), indexing="xy")),
    ("meshgrid default", lambda L, t: L.meshgrid(t["s"], t["v"])),
    ("meshgrid 2-d", lambda L, t: L.meshgrid(t["v"], t["m"], indexing="ij")),
    ("meshgrid empty", lambda L, t: L.meshgrid(indexing="ij")),
    ("meshgrid dtypes", lambda L, t: L.meshgrid(t["v"], L.arange(3), indexing="ij")),
    ("meshgrid indexing", lambda L, t: L.meshgrid(t["v"], indexing="yx")),
    ("broadcast_to", lambda L, t: L.broadcast_to(t["v"], (2, 3))),
    ("broadcast_to method -1", lambda L, t: t["m"].broadcast_to((2, -1, 4))),
    ("broadcast_to bad", lambda L, t: t["v"].broadcast_to((2, 4))),
    ("take_along_dim", lambda L, t: L.take_along_dim(t["m"], L.tensor([[0], [3], [1]]), 1)),
    ("take_along_dim dim 0", lambda L, t: t["m"].take_along_dim(L.tensor([[2, 0, 1, 1]]), dim=0)),
    ("take_along_dim broadcast", lambda L, t: L.take_along_dim(t["b"], L.tensor([[[1], [0], [2]]]), -1)),
    ("take_along_dim flat", lambda L, t: L.take_along_dim(t["m"], L.tensor([0, 11, 5]))),
    ("take_along_dim flat strided", lambda L, t: L.take_along_dim(t["m"].t(), L.tensor([0]))),
    ("take_along_dim ndim", lambda L, t: L.take_along_dim(t["m"], L.tensor([0]), 1)),
    ("take_along_dim dtype", lambda L, t: L.take_along_dim(t["m"], L.tensor([[0]], dtype=L.int32), 1)),
    ("take_along_dim mismatch", lambda L, t: L.take_along_dim(t["m"], L.tensor([[0, 1]]), 0)),
    ("take_along_dim dim range", lambda L, t: L.take_along_dim(t["m"], L.tensor([[0]]), 2)),
    ("repeat_interleave", lambda L, t: t["m"].repeat_interleave(2)),
    ("repeat_interleave dim", lambda L, t: t["m"].repeat_interleave(3, dim=1)),
    ("repeat_interleave dim -2 output_size", lambda L, t: L.repeat_interleave(t["m"], 2, dim=-2, output_size=6)),
    ("repeat_interleave 0-d", lambda L, t: t["s"].repeat_interleave(3)),
    ("repeat_interleave zero", lambda L, t: t["v"].repeat_interleave(0)),
    ("repeat_interleave counts", lambda L, t: t["m"].repeat_interleave(L.tensor([1, 0, 2]), dim=0)),
    ("repeat_interleave one count", lambda L, t: t["m"].repeat_interleave(L.tensor([2]))),
    ("repeat_interleave 0-d count", lambda L, t: t["m"].repeat_interleave(L.tensor(2), dim=1)),
    ("repeat_interleave int32 counts", lambda L, t: t["v"].repeat_interleave(L.tensor([1, 2, 0], dtype=L.int32))),
    ("repeat_interleave index", lambda L, t: L.repeat_interleave(L.tensor([1, 2, 3]))),
    ("repeat_interleave negative", lambda L, t: t["v"].repeat_interleave(-1)),
    ("repeat_interleave negative count", lambda L, t: t["v"].repeat_interleave(L.tensor([1, -2, 0]))),
    ("repeat_interleave wrong count", lambda L, t: t["v"].repeat_interleave(L.tensor([1, 2]))),
    ("repeat_interleave 2-d counts", lambda L, t: t["v"].repeat_interleave(L.tensor([[1, 2, 0]]))),
    ("repeat_interleave float counts", lambda L, t: t["v"].repeat_interleave(L.tensor([1.0, 2.0, 0.0]))),
    ("repeat_interleave output_size", lambda L, t: t["m"].repeat_interleave(2, dim=0, output_size=5)),
    ("repeat_interleave dim range", lambda L, t: t["m"].repeat_interleave(2, dim=2)),
    ("diff", lambda L, t: L.diff(t["m"])),
    ("diff n=2 dim 0", lambda L, t: t["m"].diff(n=2, dim=0)),
    ("diff n past size", lambda L, t: L.diff(t["v"], n=5)),
    ("diff n=0", lambda L, t: L.diff(t["m"], n=0)),
    ("diff prepend append", lambda L, t: L.diff(t["m"], prepend=t["m"][:, :1], append=t["m2"][:1].t()[:3].t().expand(3, 3))),
    ("diff bool", lambda L, t: L.diff(L.tensor([True, False, False, True]))),
    ("diff 0-d", lambda L, t: L.diff(t["s"])),
    ("diff negative n", lambda L, t: L.diff(t["m"], n=-1)),
    ("diff prepend dims", lambda L, t: L.diff(t["m"], prepend=t["v"])),
    ("diff prepend shape", lambda L, t: L.diff(t["m"], dim=1, prepend=t["m2"])),
    ("diff dim range", lambda L, t: L.diff(t["m"], dim=3)),
]


def _nodes(t):
    node = t.grad_fn
    names = []
    while node is not None and len(names) < 3:
        names.append(type(node).__name__ if type(node).__name__ != "AccumulateGrad" else "AccumulateGrad")
        nxt = [f for f, _ in node.next_functions if f is not None]
        node = nxt[0] if nxt else None
    return [n.replace("torch::autograd::", "") for n in names]


def _describe(lib, call):
    leaves = _inputs(lib)
    try:
        out = call(lib, leaves)
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return type(e), str(e).split("\n")[0]
    pieces = out if isinstance(out, tuple) else (out,)
    described = [(tuple(p.shape), tuple(p.stride()), str(p.dtype).split(".")[-1], p._base is not None, _nodes(p),
                  p.detach().numpy().tolist()) for p in pieces]
    rng = np.random.default_rng(1)
    total = sum((p * lib.tensor(rng.standard_normal(tuple(p.shape)))).sum() for p in pieces if p.requires_grad)
    if isinstance(total, int):  # nothing requires grad
        return described, None
    total.backward()
    return described, {k: (None if v.grad is None else v.grad.numpy().tolist()) for k, v in leaves.items()}


@pytest.mark.parametrize("label,call", CALLS, ids=[c[0] for c in CALLS])
def test_matches_torch(label, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = _describe(torch, call), _describe(mg, call)
    if isinstance(want[0], type):  # an error
        assert got[0] is want[0], got
        # torch prints a tensor in a message with C++'s printer; minigrad with its repr
        # (docs/divergences.md): the words before it are compared
        assert got[1].split("but got: ")[0] == want[1].split("but got: ")[0]
        return
    assert got == want


def test_zero_dim_transposes_warn_and_return_the_tensor():
    for lib in (torch, mg):
        s = lib.tensor(2.0)
        for name, get in (("Tensor.H", lambda: s.H), ("Tensor.mH", lambda: s.mH), ("adjoint()", lambda: s.adjoint())):
            with pytest.warns(UserWarning, match=re.escape(f"{name} is deprecated on 0-D tensors")):
                assert get() is s


FACTORY_CALLS = [
    ("new_zeros", (2, 3), {}), ("new_zeros", ((2, 3),), {}), ("new_zeros", ([4],), {"dtype": "int64"}),
    ("new_ones", (2,), {"requires_grad": True}), ("new_ones", (), {}), ("new_empty", (0, 2), {}),
    ("new_full", ((2, 2), 7), {}), ("new_full", ((3,), 1.5), {"dtype": "float32"}), ("new_full", ((2,), True), {}),
    ("new_tensor", ([1, 2, 3],), {}), ("new_tensor", ([[1.5], [2.5]],), {"dtype": "int32"}),
    ("new_tensor", (5,), {"requires_grad": True}),
    ("new_zeros", ("a",), {}), ("new_full", (2, 3), {}), ("new_empty", (-1,), {}), ("new_ones", (2,), {"dtype": 3}),
]


def _factory(lib, name, args, kwargs):
    x = lib.ones(2, dtype=lib.float64)
    kwargs = {k: getattr(lib, v) if k == "dtype" and isinstance(v, str) else v for k, v in kwargs.items()}
    try:
        out = getattr(x, name)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return type(e), str(e).split("\n")[0]
    shown = out.tolist() if name != "new_empty" else None
    return tuple(out.shape), str(out.dtype).split(".")[-1], out.device.type, out.requires_grad, out.is_leaf, shown


@pytest.mark.parametrize("name,args,kwargs", FACTORY_CALLS, ids=[f"{n}{a}{k}" for n, a, k in FACTORY_CALLS])
def test_new_factories_match_torch(name, args, kwargs):
    want, got = _factory(torch, name, args, kwargs), _factory(mg, name, args, kwargs)
    if isinstance(want[0], type):
        assert got[0] is want[0], got
        if want[0] is not TypeError:
            assert got[1] == want[1]
        return
    assert got == want


def test_new_tensor_copies_a_tensor_with_torchs_warning():
    for lib in (torch, mg):
        x = lib.ones(2, dtype=lib.float64)
        src = lib.tensor([1, 2]).float().requires_grad_()
        with pytest.warns(UserWarning, match=r"rather than tensor\.new_tensor\(sourceTensor\)"):
            out = x.new_tensor(src)
        assert out.dtype == lib.float64 and not out.requires_grad and out.is_leaf
        out[0] = 9.0
        assert src[0].item() == 1.0  # a copy

