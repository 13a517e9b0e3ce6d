"""Soak (issue 14, hardening 3): the digits MLP of examples/mlp_digits.py trained for many steps
at flat memory. After a warm-up, minigrad's exact allocator counters (`minigrad.memory`) return to
the same byte count after every step, the process's resident set (/proc/self/statm) stops
growing, each step's graph dies with its last reference (no cycle collector needed), and the
cycle collector finds no minigrad object in garbage.

`SOAK_STEPS` sets the steps (CI: 2,000; the 10,000-step figures in docs/testing.md come from
`SOAK_STEPS=10000`)."""

import gc
import os
import time
import weakref

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F

STEPS = int(os.environ.get("SOAK_STEPS", "2000"))
WARMUP = 100
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype(np.float32).reshape(-1, 64), d.target.astype(np.int64)


def mlp():
    nn = mg.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(inplace=True), nn.Linear(128, 64), nn.ReLU(inplace=True),
                         nn.Linear(64, 10))


def batches(x, y, size=32):
    """Endless shuffled mini-batches (a fresh order each epoch, the last batch smaller)."""
    rng = np.random.default_rng(0)
    while True:
        order = rng.permutation(len(x))
        for i in range(0, len(x), size):
            idx = order[i:i + size]
            yield mg.from_numpy(x[idx]), mg.from_numpy(y[idx])


def step(model, opt, xb, yb):
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    return loss


def test_digits_mlp_soak():
    x, y = digits()
    mg.manual_seed(0)
    model = mlp()
    opt = mg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = batches(x, y)
    for _ in range(WARMUP):  # .grad and momentum buffers exist, allocator caches are warm
        step(model, opt, *next(data))
    gc.collect()
    held, resident = mg.memory.allocated(), rss()
    samples = []
    started = time.perf_counter()
    for i in range(1, STEPS + 1):
        loss = step(model, opt, *next(data))
        if i == 1:
            first_loss = loss.item()
        del loss
        # exact bytes: every step frees what it allocated (no gc.collect() in the loop)
        assert mg.memory.allocated() == held, f"step {i}: {mg.memory.allocated() - held} bytes more"
        if i % max(1, STEPS // 10) == 0:
            samples.append(rss())
    elapsed = time.perf_counter() - started
    final_loss = step(model, opt, *next(data)).item()
    assert final_loss < first_loss  # it trained
    # the resident set is flat once the run has settled: the second half does not grow past
    # the first half's high-water mark by more than allocator/page noise (1 MiB)
    half = samples[len(samples) // 2:]
    growth = max(half) - max(samples[:len(samples) // 2] + [resident])
    print(f"\nsoak: {STEPS} steps in {elapsed:.1f} s ({elapsed / STEPS * 1e3:.2f} ms/step); "
          f"allocated {held} B flat; RSS {resident / 2**20:.1f} -> {samples[-1] / 2**20:.1f} MiB "
          f"(samples {[round(s / 2**20, 1) for s in samples]}); loss {first_loss:.3f} -> {final_loss:.3f}")
    assert growth <= 1 << 20, f"RSS grew {growth} bytes in the second half"


def test_graph_dies_with_its_last_reference():
    x, y = digits()
    model = mlp()
    opt = mg.optim.SGD(model.parameters(), lr=0.05)
    xb, yb = mg.from_numpy(x[:32]), mg.from_numpy(y[:32])
    out = model(xb)
    loss = F.cross_entropy(out, yb)
    refs = [weakref.ref(loss.grad_fn), weakref.ref(out.grad_fn), weakref.ref(out), weakref.ref(loss)]
    nodes = [weakref.ref(n) for n, _ in loss.grad_fn.next_functions if n is not None]
    loss.backward()
    opt.step()
    del out, loss
    # freed by reference counting alone: no cycle through grad_fn or saved tensors
    assert [r() for r in refs + nodes] == [None] * (len(refs) + len(nodes))


def test_no_minigrad_object_in_cyclic_garbage():
    x, y = digits()
    model = mlp()
    opt = mg.optim.Adam(model.parameters(), lr=1e-3)
    data = batches(x, y)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(50):
            loss = step(model, opt, *next(data))
            # a kept graph (retain_graph) and a hook, freed too
            out = model(next(data)[0]).sum()
            out.register_hook(lambda g: g)
            out.backward(retain_graph=True)
            del loss, out
        gc.collect()
        ours = [type(o).__name__ for o in gc.garbage if type(o).__module__.startswith("minigrad")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []
