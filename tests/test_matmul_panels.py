"""Products that the kernels cut into per-thread panels (rust/kernels/src/matmul/panels.rs): the
MLP 784-256-256-10's shapes at batch 64 (64 output rows, cut into column panels), a Linear weight's
`.t()` whose 1 KiB column stride is padded per panel (in_features 256), row panels of a tall
product, and the backward's weight and input gradients. Values against torch, and the same bits
at 1, 2, 3 and 4 threads (each output element summed in one order, whoever computes it)."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import assert_same, outputs_at_thread_counts

# (batch, in_features, out_features): column panels with b read in place (784), column panels
# with b padded per panel (256: a 1 KiB column stride), row panels with b padded once (512 x 96).
SHAPES = [(64, 784, 256), (64, 256, 256), (512, 256, 96)]


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.mark.parametrize("batch,fan_in,fan_out", SHAPES)
def test_linear_forward_and_backward_match_torch(batch, fan_in, fan_out):
    x, w, b, g = rand(batch, fan_in), rand(fan_out, fan_in, seed=1), rand(fan_out, seed=2), rand(batch, fan_out, seed=3)
    mx, tx = mg.tensor(x).requires_grad_(), torch.tensor(x).requires_grad_()
    mw, tw = mg.tensor(w).requires_grad_(), torch.tensor(w).requires_grad_()
    mb, tb = mg.tensor(b).requires_grad_(), torch.tensor(b).requires_grad_()
    mo, to = mg.addmm(mb, mx, mw.t()), torch.addmm(tb, tx, tw.t())
    tol = {"rtol": 1e-4, "atol": 1e-4 * fan_in}
    assert_same(mo, to, check_stride=True, **tol)
    assert_same(mx @ mw.t(), tx @ tw.t(), check_stride=True, **tol)
    mo.backward(mg.tensor(g))
    to.backward(torch.tensor(g))
    assert_same(mw.grad, tw.grad, check_stride=True, rtol=1e-4, atol=1e-4 * batch)
    assert_same(mx.grad, tx.grad, check_stride=True, rtol=1e-4, atol=1e-4 * fan_out)


SCRIPT = """
import sys
import numpy as np
import minigrad as mg
rng = np.random.default_rng(0)
outs = []
for batch, fan_in, fan_out in %r:
    x = mg.tensor(rng.standard_normal((batch, fan_in)).astype("float32")).requires_grad_()
    w = mg.tensor(rng.standard_normal((fan_out, fan_in)).astype("float32")).requires_grad_()
    b = mg.tensor(rng.standard_normal(fan_out).astype("float32"))
    out = mg.addmm(b, x, w.t())
    out.backward(mg.tensor(rng.standard_normal((batch, fan_out)).astype("float32")))
    outs += [out.detach(), x @ w.t(), w.grad, x.grad]
sys.stdout.write("".join(np.ascontiguousarray(o.numpy()).tobytes().hex() for o in outs))
""" % (SHAPES,)


def test_panel_products_do_not_depend_on_the_thread_count():
    outs = outputs_at_thread_counts(SCRIPT)
    assert outs[0] and all(o == outs[0] for o in outs[1:])
