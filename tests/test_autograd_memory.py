"""Autograd frees what it records (DESIGN invariant 5): no reference cycles between nodes and
tensors, saved tensors released after backward, and a training loop at flat memory.

Memory is read from minigrad's exact allocator accounting (`minigrad.memory`), so these tests
measure bytes held by tensors, not timings."""

import gc
import weakref

import minigrad as mg


def _step(w, x):
    # a node that saves its own output (exp, relu, sigmoid) next to ones that save inputs
    h = (x @ w).relu()
    out = (h.sigmoid() * h.exp().clamp(max=10.0)).sum()
    out.backward()
    return out


def test_training_loop_holds_flat_memory():
    mg.manual_seed(0)
    w = mg.randn(32, 32, requires_grad=True)
    x = mg.randn(16, 32)
    for _ in range(20):  # warm up: .grad exists, allocator caches are populated
        _step(w, x)
        with mg.no_grad():
            w.sub_(w.grad * 1e-3)
        w.grad.zero_()
    gc.collect()
    start = mg.memory.allocated()
    for _ in range(10_000):
        _step(w, x)
        with mg.no_grad():
            w.sub_(w.grad * 1e-3)
        w.grad.zero_()
    # No gc.collect() here: freeing must not depend on the cycle collector.
    assert mg.memory.allocated() == start


def test_node_saving_its_output_does_not_keep_itself_alive():
    a = mg.randn(1000, requires_grad=True)
    y = a.exp()  # ExpBackward0 saves y itself
    node = weakref.ref(y.grad_fn)
    before = mg.memory.allocated()
    del y
    # the node, the saved output and its memory are gone without the cycle collector
    assert node() is None
    assert mg.memory.allocated() == before - 1000 * 4


def test_saved_tensors_are_freed_by_backward():
    a = mg.randn(1000, requires_grad=True)
    a.grad = mg.zeros(1000)  # so backward accumulates in place and allocates no new .grad
    y = (a * 2).sin()  # SinBackward0 saves its input (a * 2), which nothing else holds
    z = y * 3
    ones = mg.ones(1000)
    held = mg.memory.allocated()
    z.backward(ones)
    # after backward only y and z remain: the saved input a * 2 (4000 bytes) was released,
    # and so were the 0-d tensors the two muls saved for their Python-number operands
    assert mg.memory.allocated() == held - 1000 * 4 - 2 * 8
    try:
        z.backward(mg.ones(1000))
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)
    else:
        raise AssertionError("a second backward through released saved tensors must raise")
