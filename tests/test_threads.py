"""Threads (issue 14, hardening 2): Python threads training separate models while reading shared
tensors, with the kernels running without the GIL (`errors::run` releases it above 2**15
elements of work; backward always). Results are bit-identical to a sequential run, nobody
deadlocks (every join has a timeout), and a long kernel really lets other Python code run."""

import threading
import time

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F

TIMEOUT = 120.0


def shared_data():
    rng = np.random.default_rng(0)
    x = mg.from_numpy(rng.standard_normal((512, 64)).astype(np.float32))
    y = mg.from_numpy(rng.integers(0, 10, 512))
    return x, y


def make_model(seed):
    """Weights from NumPy (the global minigrad generator is shared by threads, so drawing from it
    concurrently would make the runs differ)."""
    rng = np.random.default_rng(seed)
    model = mg.nn.Sequential(mg.nn.Linear(64, 256), mg.nn.ReLU(), mg.nn.Linear(256, 10))
    with mg.no_grad():
        for p in model.parameters():
            p.copy_(mg.from_numpy((rng.standard_normal(tuple(p.shape)) * 0.1).astype(np.float32)))
    return model


def train(seed, x, y, steps=15):
    model = make_model(seed)
    opt = mg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for i in range(steps):
        lo = (i * 128 + seed * 64) % 512
        xb, yb = x[lo:lo + 256] if lo + 256 <= 512 else x[:256], y[lo:lo + 256] if lo + 256 <= 512 else y[:256]
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().tobytes() for p in model.parameters()]


def run_threads(targets):
    errors, threads = [], []

    def wrap(f):
        def body():
            try:
                f()
            except BaseException as e:  # reported in the main thread
                errors.append(e)
        return body

    for f in targets:
        threads.append(threading.Thread(target=wrap(f), daemon=True))
    for t in threads:
        t.start()
    deadline = time.monotonic() + TIMEOUT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t for t in threads if t.is_alive()]
    assert not alive, f"{len(alive)} threads still running after {TIMEOUT} s (deadlock?)"
    if errors:
        raise errors[0]


def test_threads_train_separate_models_bit_identically():
    x, y = shared_data()
    x_before, version = x.numpy().copy(), x._version
    seeds = [1, 2, 3]
    sequential = {s: train(s, x, y) for s in seeds}
    threaded = {}
    stop = threading.Event()
    reads = []

    def reader():
        # reads the shared tensors all the while: sums, a product, a view, a comparison
        want = (float(x.sum().item()), x.t().matmul(x).numpy().tobytes())
        while not stop.is_set():
            got = (float(x.sum().item()), x.t().matmul(x).numpy().tobytes())
            reads.append(got == want and bool((x[::3] == x[::3]).all()))

    def trainer(s):
        return lambda: threaded.__setitem__(s, train(s, x, y))

    readers = threading.Thread(target=reader, daemon=True)
    readers.start()
    try:
        run_threads([trainer(s) for s in seeds] * 1)
    finally:
        stop.set()
        readers.join(TIMEOUT)
    assert not readers.is_alive()
    for s in seeds:
        assert threaded[s][0] == sequential[s][0], f"seed {s}: losses differ"
        assert threaded[s][1] == sequential[s][1], f"seed {s}: parameters differ"
    assert reads and all(reads)
    np.testing.assert_array_equal(x.numpy(), x_before)
    assert x._version == version


def test_same_model_trained_in_two_threads_twice_is_deterministic():
    # two threads on the same seed at once give the same bits as each other and as alone
    x, y = shared_data()
    out = {}
    run_threads([lambda: out.__setitem__("a", train(7, x, y)), lambda: out.__setitem__("b", train(7, x, y))])
    assert out["a"] == out["b"] == train(7, x, y)


@pytest.mark.parametrize("kernel", ["matmul", "conv2d", "exp", "sum", "backward"])
def test_long_kernels_release_the_gil(kernel):
    """While one thread is inside long kernel calls, the main thread keeps running Python.
    With the GIL held, the main thread could run only when the interpreter forces a switch
    (every 5 ms) or between calls. Each workload lasts 20+ ms here, repeated so that a faster
    kernel does not shrink the window below what two busy cores let the main thread use."""
    a = mg.randn(700, 700)
    img, w = mg.randn(8, 16, 64, 64), mg.randn(32, 16, 3, 3)
    big = mg.randn(6_000_000)
    leaf = mg.randn(3_000_000, requires_grad=True)
    loss = (leaf.exp() * leaf).sum()
    calls = {
        "matmul": lambda: [a @ a for _ in range(6)],
        "conv2d": lambda: [F.conv2d(img, w, padding=1) for _ in range(12)],
        "exp": lambda: [big.exp() for _ in range(12)],
        "sum": lambda: [big.sum() for _ in range(60)],
        "backward": lambda: [loss.backward(retain_graph=True) for _ in range(5)],
    }
    started, done = threading.Event(), threading.Event()

    def worker():
        started.set()
        calls[kernel]()
        done.set()

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    started.wait(TIMEOUT)
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0)  # a bytecode loop that needs the GIL for every iteration
    t.join(TIMEOUT)
    assert not t.is_alive()
    assert ticks > 50, f"the main thread ran {ticks} iterations during the {kernel} call"
