"""sum and mean take their common calls (`x.sum()`, `x.sum(d)`, `x.sum(d, k)`, `x.sum(dim=d)`,
`x.sum(dim=d, keepdim=k)`) straight to the kernel (`_common_calls` in _ops/reduce.py); every
other call goes through the overload checks. Both must give torch's results, dtypes, grad_fn
and exception types, whichever path a call takes."""

import numpy as np
import pytest
import torch

import minigrad as mg

def lib(x):
    return mg if isinstance(x, mg.Tensor) else torch


CALLS = {
    "()": lambda x, op: getattr(x, op)(),
    "(1)": lambda x, op: getattr(x, op)(1),
    "(-1)": lambda x, op: getattr(x, op)(-1),
    "(0, True)": lambda x, op: getattr(x, op)(0, True),
    "(1, False)": lambda x, op: getattr(x, op)(1, False),
    "(dim=0)": lambda x, op: getattr(x, op)(dim=0),
    "(dim=-1, keepdim=True)": lambda x, op: getattr(x, op)(dim=-1, keepdim=True),
    "(keepdim=False, dim=1)": lambda x, op: getattr(x, op)(keepdim=False, dim=1),
    # the overload checks' path
    "((0, 1))": lambda x, op: getattr(x, op)((0, 1)),
    "([1])": lambda x, op: getattr(x, op)([1]),
    "(dim=None, keepdim=True)": lambda x, op: getattr(x, op)(dim=None, keepdim=True),
    "(1, dtype=float64)": lambda x, op: getattr(x, op)(1, dtype=lib(x).float64),
    "(dim=1, keepdim=1)": lambda x, op: getattr(x, op)(dim=1, keepdim=1),
    "(1, 1)": lambda x, op: getattr(x, op)(1, 1),
    "(keepdim=True)": lambda x, op: getattr(x, op)(keepdim=True),
    "(True)": lambda x, op: getattr(x, op)(True),
    "(1.0)": lambda x, op: getattr(x, op)(1.0),
    "(5)": lambda x, op: getattr(x, op)(5),
    "(1, True, 3)": lambda x, op: getattr(x, op)(1, True, 3),
    "(dim=1, other=2)": lambda x, op: getattr(x, op)(dim=1, other=2),
    "function (x, 1, True)": lambda x, op: getattr(lib(x), op)(x, 1, True),
}


def outcome(f):
    try:
        return "ok", f()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, None


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("call", list(CALLS))
def test_common_and_other_calls_match_torch(op, dtype, call):
    a = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    a = (a > 0) if dtype == "bool" else a.astype(dtype) if dtype == "int64" else a
    x, t = mg.from_numpy(a), torch.from_numpy(a)
    if dtype == "float32":
        x.requires_grad_()
        t.requires_grad_()
    (km, m), (kt, w) = outcome(lambda: CALLS[call](x, op)), outcome(lambda: CALLS[call](t, op))
    assert km == kt, (km, kt)
    if km != "ok":
        return
    assert tuple(m.shape) == tuple(w.shape)
    assert str(m.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
    np.testing.assert_allclose(m.detach().numpy(), w.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert (m.grad_fn is None) == (w.grad_fn is None)
    if m.grad_fn is not None:
        assert m.grad_fn.name() == w.grad_fn.name()
