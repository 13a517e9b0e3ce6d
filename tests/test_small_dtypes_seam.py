"""The narrow dtypes through the device seam's methods that arrived with the GPU work (random
fills, gathers and scatters, layer_norm, batch_norm): widened, passed through or refused as
device/widen.rs says, against torch."""

import numpy as np
import pytest
import torch

import minigrad as mg
import minigrad.nn.functional as F


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_random_fills_of_half_are_drawn_wide_and_rounded_once(name):
    mg.manual_seed(3)
    x = mg.rand(2000, dtype=getattr(mg, name))
    v = torch.from_numpy(x.float().numpy())
    assert x.dtype == getattr(mg, name) and x._version == 0
    assert v.min() >= 0 and v.max() <= 1  # rounding a draw below 1 may give 1.0 in half, as torch's
    y = mg.zeros(1000, dtype=getattr(mg, name))
    y.normal_(2.0, 0.5)
    assert y._version == 1
    m = torch.from_numpy(y.float().numpy())
    assert abs(m.mean() - 2) < 0.1 and abs(m.std() - 0.5) < 0.05
    # each value is a float32 draw rounded to the half type: representable exactly
    assert torch.equal(m.to(getattr(torch, name)).float(), m)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_layer_norm_of_half_matches_torch(name):
    a = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    t = torch.from_numpy(a).to(getattr(torch, name))
    w, b = torch.linspace(0.5, 1.5, 16).to(t.dtype), torch.linspace(-1, 1, 16).to(t.dtype)
    ref = torch.nn.functional.layer_norm(t, (16,), w, b)
    got = F.layer_norm(mg.from_numpy(a).to(getattr(mg, name)), (16,), mg.from_numpy(w.float().numpy()).to(getattr(mg, name)),
                       mg.from_numpy(b.float().numpy()).to(getattr(mg, name)))
    assert got.dtype == getattr(mg, name)
    step = 2 ** -10 if name == "float16" else 2 ** -7
    torch.testing.assert_close(torch.from_numpy(got.float().numpy()), ref.float(), rtol=step, atol=step * 4)


def test_batch_norm_of_half_is_refused_clearly():
    x = mg.zeros(4, 3, dtype=mg.float16)
    with pytest.raises(NotImplementedError, match="cast to float32 first"):
        F.batch_norm(x, mg.zeros(3, dtype=mg.float16), mg.ones(3, dtype=mg.float16), training=True)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "float16", "bfloat16"])
def test_gathers_and_scatters_of_narrow_dtypes_match_torch(name):
    td, md = getattr(torch, name), getattr(mg, name)
    src = torch.tensor([[1, 100, 7], [120, 3, 5]]).to(td)
    m = mg.from_numpy(src.float().numpy()).to(md)
    idx = torch.tensor([[1, 0, 2], [0, 0, 1]])
    mi = mg.tensor(idx.tolist())
    assert torch.equal(torch.from_numpy(m.gather(1, mi).float().numpy()), src.gather(1, idx).float())
    ref = torch.zeros(2, 3, dtype=td).scatter_add_(1, idx, src)  # repeated indices: 100 + 120 wraps in int8
    got = mg.zeros(2, 3, dtype=md).scatter_add_(1, mi, m)
    assert torch.equal(torch.from_numpy(got.float().numpy()), ref.float())
    ref = torch.zeros(3, dtype=td).index_put_((torch.tensor([0, 0, 2]),), src[1], accumulate=True)
    got = mg.zeros(3, dtype=md).index_put_((mg.tensor([0, 0, 2]),), m[1], accumulate=True)
    assert torch.equal(torch.from_numpy(got.float().numpy()), ref.float())
    assert torch.equal(torch.from_numpy(m[m > 4].float().numpy()), src[src > 4].float())
