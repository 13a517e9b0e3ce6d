"""movedim/moveaxis, swapdims, unflatten, tensor_split and hsplit/vsplit/dsplit against torch:
each piece's shape, strides, offset, node (PermuteBackward0, TransposeBackward0, ViewBackward0,
SliceBackward0) and saved arguments, the gradients, and torch's errors (type, and text where
torch's is not an overload list)."""

import numpy as np
import pytest
import torch

import minigrad as mg

CALLS = [
    ("movedim", (0, 2)), ("movedim", ((0, 1), (2, 0))), ("movedim", ((0, 1), (2,))), ("movedim", ((0, 0), (1, 2))),
    ("movedim", ((0, 1), (2, 2))), ("movedim", (3, 0)), ("movedim", (0, -4)), ("movedim", ([], [])),
    ("movedim", (0.5, 1)), ("moveaxis", (-1, 0)), ("swapdims", (0, 2)), ("swapdims", (-1, 1)),
    ("unflatten", (1, (3, 1))), ("unflatten", (1, (-1, 1))), ("unflatten", (1, ())), ("unflatten", (1, (2, 2))),
    ("unflatten", (1, (-1, -1))), ("unflatten", (5, (3,))), ("unflatten", (-1, [2, 2])), ("unflatten", (1, (0, -1))),
    ("tensor_split", (2,)), ("tensor_split", (2, 1)), ("tensor_split", ((1, 2), 2)), ("tensor_split", (0,)),
    ("tensor_split", (-1,)), ("tensor_split", ([5, 1], 2)), ("tensor_split", ("T:2", 1)),
    ("tensor_split", ("T:[1, 3]", 2)), ("tensor_split", ("T:[[1]]", 2)), ("tensor_split", ("T:[1.0]", 2)),
    ("tensor_split", (3, 5)), ("tensor_split", (7, 2)), ("hsplit", (3,)), ("hsplit", (2,)), ("hsplit", ([1],)),
    ("vsplit", (2,)), ("vsplit", (3,)), ("dsplit", (2,)), ("dsplit", (3,)), ("hsplit", (0,)),
]


def _args(lib, args):
    return tuple(lib.tensor(eval(a[2:])) if isinstance(a, str) and a.startswith("T:") else a for a in args)


def _signed(v):
    if isinstance(v, tuple):
        return tuple(_signed(e) for e in v)
    return v - 2**64 if isinstance(v, int) and v >= 2**63 else v


def _describe(lib, name, args):
    x = lib.arange(24.0, dtype=lib.float64).reshape(2, 3, 4).requires_grad_()
    try:
        out = getattr(x, name)(*_args(lib, args))
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return type(e), str(e).split("\n")[0]
    pieces = out if isinstance(out, tuple) else (out,)
    described = []
    for p in pieces:
        node = p.grad_fn
        saved = {k: _signed(getattr(node, k)) for k in ("_saved_dims", "_saved_dim0", "_saved_dim1", "_saved_dim",
                                                         "_saved_start", "_saved_end", "_saved_step",
                                                         "_saved_self_sym_sizes") if hasattr(node, k)}
        described.append((tuple(p.shape), tuple(p.stride()), p.storage_offset(), type(node).__name__, saved))
    w = np.random.default_rng(0).standard_normal(24).reshape(2, 3, 4)
    sum(((p * lib.tensor(w.ravel()[: p.numel()].reshape(tuple(p.shape)))).sum() for p in pieces)).backward()
    return described, x.grad.numpy().tolist()


@pytest.mark.parametrize("name,args", CALLS, ids=[f"{n}{a}" for n, a in CALLS])
def test_matches_torch(name, args):
    want, got = _describe(torch, name, args), _describe(mg, name, args)
    if isinstance(want[0], type):  # an error
        assert got[0] is want[0], got
        if want[0] is not TypeError:
            assert got[1] == want[1]
        return
    assert got == want


def test_module_functions_forward_to_the_methods():
    x = mg.arange(24.0).reshape(2, 3, 4)
    assert mg.movedim(x, 0, -1).shape == (3, 4, 2) and mg.moveaxis(x, -1, 0).shape == (4, 2, 3)
    assert mg.swapdims(x, 0, 1).shape == (3, 2, 4) and mg.unflatten(x, 2, (2, 2)).shape == (2, 3, 2, 2)
    assert [p.shape[0] for p in mg.tensor_split(x, 2)] == [1, 1] and len(mg.hsplit(x, 3)) == 3
    assert len(mg.vsplit(x, 2)) == 2 and len(mg.dsplit(x, [1, 3])) == 3
