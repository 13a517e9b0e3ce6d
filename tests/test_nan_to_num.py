"""nan_to_num / nan_to_num_ against torch: values for every float dtype (the dtype's extremes as
defaults, replacement numbers rounded to the dtype), integer and bool inputs copied, NanToNumBackward0
with its saved self, the gradient (zero where the input was not finite), double backward, the
in-place variant's single version bump and saved input, and argument parsing (on cuda:
tests/test_cuda_backend_activations.py)."""

import math

import numpy as np
import pytest
import torch

import minigrad as mg

VALUES = [math.nan, math.inf, -math.inf, 1.5, -0.0, 0.0, -2.25, 3e38, -1e-40]
ARGS = [{}, {"nan": 1.0}, {"posinf": 7.0, "neginf": -8.0}, {"nan": -1.0, "posinf": 1e300, "neginf": -1e300},
        {"posinf": True}, {"nan": 3}, {"neginf": 2**70}]


def _same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    g = torch.from_numpy(np.asarray(got.detach().float().numpy() if got.dtype in (mg.float16, mg.bfloat16) else got.detach().numpy()).copy())
    w = want.detach().float() if want.dtype in (torch.float16, torch.bfloat16) else want.detach()
    assert torch.equal(g.isnan(), w.isnan()) if w.is_floating_point() else True
    assert torch.equal(torch.nan_to_num(g, 123.0), torch.nan_to_num(w, 123.0)), (g, w)
    if w.is_floating_point():
        assert torch.equal(g.signbit(), w.signbit())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("kwargs", ARGS, ids=[str(a) for a in ARGS])
def test_values_match_torch(dtype, kwargs):
    t = torch.tensor(VALUES, dtype=getattr(torch, dtype))
    m = mg.tensor(VALUES, dtype=getattr(mg, dtype))
    _same(m.nan_to_num(**kwargs), t.nan_to_num(**kwargs))
    _same(mg.nan_to_num(m, **kwargs), torch.nan_to_num(t, **kwargs))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_integer_and_bool_inputs_are_copied(dtype):
    t = torch.tensor([0, 1, 1], dtype=getattr(torch, dtype))
    m = mg.tensor([0, 1, 1], dtype=getattr(mg, dtype))
    got, want = m.nan_to_num(nan=5.0), t.nan_to_num(nan=5.0)
    assert got.tolist() == want.tolist() and str(got.dtype).split(".")[-1] == dtype
    got[0] = 1
    assert m[0].item() == 0  # a copy


def test_graph_gradient_and_double_backward():
    vals = [math.nan, math.inf, -math.inf, 1.5, -2.0]
    t = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    m = mg.tensor(vals, dtype=mg.float64, requires_grad=True)
    rt, rm = (t * 2).nan_to_num(), (m * 2).nan_to_num()
    assert type(rm.grad_fn).__name__ == type(rt.grad_fn).__name__ == "NanToNumBackward0"
    assert torch.equal(torch.from_numpy(rm.grad_fn._saved_self.detach().numpy()).nan_to_num(9.0), rt.grad_fn._saved_self.detach().nan_to_num(9.0))
    g = [1.0, 2.0, 3.0, 4.0, 5.0]
    gt, = torch.autograd.grad(rt, t, torch.tensor(g, dtype=torch.float64), create_graph=True)
    gm, = mg.autograd.grad(rm, m, mg.tensor(g, dtype=mg.float64), create_graph=True)
    assert gm.tolist() == gt.tolist() == [0.0, 0.0, 0.0, 8.0, 10.0]
    # the gradient is grad times a constant mask: it does not depend on the input (torch's
    # graph of it does not require grad), and minigrad's neither
    assert gm.requires_grad == gt.requires_grad


def test_in_place_bumps_once_and_saves_the_input_as_it_was():
    vals = [math.nan, math.inf, 0.5]
    for lib in (torch, mg):
        leaf = lib.tensor(vals, requires_grad=True)
        x = leaf * 1
        before = x._version
        out = x.nan_to_num_(posinf=4.0)
        assert out is x and x._version == before + 1
        assert type(x.grad_fn).__name__ == "NanToNumBackward0"
        assert x.tolist() == [0.0, 4.0, 0.5]
        x.backward(lib.tensor([1.0, 1.0, 1.0]))
        assert leaf.grad.tolist() == [0.0, 0.0, 1.0]
    for lib in (torch, mg):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
            lib.tensor(vals, requires_grad=True).nan_to_num_()


@pytest.mark.parametrize("kwargs", [{"nan": "a"}, {"posinf": 1j}, {"neginf": [1.0]}, {"nan": "T:[2.0]"}, {"nan": "T:2.0"}, {"posinf": None}])
def test_arguments_parse_as_torch(kwargs):
    def run(lib):
        kw = {k: lib.tensor(eval(v[2:])) if isinstance(v, str) and v.startswith("T:") else v for k, v in kwargs.items()}
        try:
            return lib.tensor([math.nan, math.inf]).nan_to_num(**kw).tolist()
        except Exception as e:  # noqa: BLE001 - the error is the result compared
            return type(e), str(e)

    assert run(mg) == run(torch)

