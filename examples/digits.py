"""Shared by the digits examples: the handwritten digits that ship inside scikit-learn (1,797
8x8 images, no download), a fixed train/test split, mini-batches (a `DataLoader` over a
`TensorDataset`, shuffled by a seeded `Generator`) and a progress bar.

The examples run on minigrad or, for a side-by-side comparison, on torch (`--backend torch`);
nothing here depends on which, because both libraries take the same calls.
"""

import argparse
import importlib
import time

import numpy as np


def parse_args(description, epochs, lr):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", choices=["minigrad", "torch"], default="minigrad",
                   help="the library to train with (the code is the same for both)")
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--lr", type=float, default=lr)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def backend(name):
    """The library module (`minigrad` or `torch`); `.nn`, `.optim`, `.nn.functional` and
    `.utils.data` come with it."""
    lib = importlib.import_module(name)
    importlib.import_module(name + ".nn.functional")
    importlib.import_module(name + ".optim")
    importlib.import_module(name + ".utils.data")
    return lib


def load(seed=0, test_fraction=0.25):
    """(x_train, y_train, x_test, y_test) as numpy arrays: pixels scaled to [0, 1] (float32),
    labels int64; the split is stratified-free but fixed by `seed`."""
    from sklearn.datasets import load_digits  # the data ship with scikit-learn

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)           # (1797, 8, 8)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def loader(lib, x, y, batch_size, seed):
    """Shuffled mini-batches of (images, labels) tensors, the last one smaller; each epoch a new
    order, the same orders for the same seed (the order itself differs between the libraries:
    each has its own random stream)."""
    data = lib.utils.data
    dataset = data.TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
    return data.DataLoader(dataset, batch_size=batch_size, shuffle=True,
                           generator=lib.Generator().manual_seed(seed))


def progress(total, description):
    """A rich progress bar (rich is one of minigrad's dependencies, used by `minigrad bench`)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), transient=True), description, total


def train(lib, model, opt, data, epochs, batch_size, seed, shape=(-1, 64)):
    """The usual loop: forward, cross-entropy, backward, step; prints each epoch's mean loss and
    the test accuracy. Returns the final test accuracy."""
    F = lib.nn.functional
    x_train, y_train, x_test, y_test = data
    batches = loader(lib, x_train, y_train, batch_size, seed)
    steps = len(batches)
    bar, description, _ = progress(steps, "")
    started = time.perf_counter()
    acc = 0.0
    with bar:
        for epoch in range(1, epochs + 1):
            task = bar.add_task(f"epoch {epoch}/{epochs}", total=steps)
            model.train()
            total, count = 0.0, 0
            for xb, yb in batches:
                loss = F.cross_entropy(model(xb.reshape(shape)), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(xb)
                count += len(xb)
                bar.advance(task)
            bar.remove_task(task)
            acc = accuracy(lib, model, x_test, y_test, shape)
            bar.console.print(f"epoch {epoch:2d}  loss {total / count:.4f}  test accuracy {acc:.2%}")
    print(f"done in {time.perf_counter() - started:.1f} s; final test accuracy {acc:.2%}")
    return acc


def accuracy(lib, model, x, y, shape):
    model.eval()
    with lib.no_grad():
        predicted = model(lib.from_numpy(x).reshape(shape)).argmax(1)
    return (predicted == lib.from_numpy(y)).float().mean().item()
