"""Elementwise loops peel the head before the destination's first 64-byte boundary
(`simd::aligned_head`): results must not depend on where a tensor starts. Views at every
element offset 0..16 of one buffer, in place and out of place, against torch bit for bit, and
the elements around the view untouched."""

import numpy as np
import pytest
import torch

import minigrad as mg

SIZES = [1, 5, 17, 100, 1000, 40_000]  # 40k: above the fast path's one-thread limit (2^15)


def views(n, k, seed=0):
    buf = np.random.default_rng(seed).standard_normal(n + 40, dtype=np.float32)
    return buf, mg.from_numpy(buf.copy())[k:k + n], torch.from_numpy(buf.copy())[k:k + n]


def same_bits(x, y):
    a, b = x.numpy(), y.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("n", SIZES)
def test_in_place_at_every_offset(n):
    for k in range(17):
        buf, x, t = views(n, k)
        y = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
        x.relu_(); t.relu_()
        x.add_(mg.from_numpy(y)); t.add_(torch.from_numpy(y))
        x.mul_(1.5); t.mul_(1.5)
        same_bits(x, t)
        fresh = mg.sigmoid(x.clone())  # a fresh (aligned) tensor: the same bits at any offset
        x.sigmoid_()
        same_bits(x, fresh)
        full = x._base if x._base is not None else None
        if full is not None:  # the elements around the view are untouched
            around = np.concatenate([full.numpy()[:k], full.numpy()[k + n:]])
            assert np.array_equal(around, np.concatenate([buf[:k], buf[k + n:]]))


@pytest.mark.parametrize("n", SIZES)
def test_out_of_place_from_every_offset(n):
    for k in range(17):
        _, x, t = views(n, k)
        same_bits(mg.relu(x), torch.relu(t))
        same_bits(x * 2.0 + x, t * 2.0 + t)
        same_bits(mg.nn.functional.gelu(x), mg.nn.functional.gelu(x.clone()))
        assert np.allclose(mg.nn.functional.gelu(x).numpy(), torch.nn.functional.gelu(t).numpy(), rtol=1e-5, atol=1e-6)
