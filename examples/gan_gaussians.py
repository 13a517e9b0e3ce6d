"""A small GAN on a 2-D mixture of 8 Gaussians, with `ReLU(inplace=True)` in the generator and
`LeakyReLU(0.2, inplace=True)` in the discriminator, as in the question that started minigrad.

Run: python examples/gan_gaussians.py               (under a minute on 2 cores)
     python examples/gan_gaussians.py --backend torch
     python examples/gan_gaussians.py --show-error  (the classic mistake, and minigrad's blame)

The classic mistake: stepping the discriminator's optimizer (which updates its weights in
place) and *then* calling backward on a generator loss computed through the old weights. The
weights were saved by the discriminator's `AddmmBackward0`/`TBackward0` nodes, their version
counters moved, and backward refuses: "one of the variables needed for gradient computation has
been modified by an inplace operation". The right order, used below, is to compute the
generator's loss after the discriminator's step.
"""

import argparse
import importlib
import math
import time

import numpy as np

MODES = 8
RADIUS = 2.0
STD = 0.05


def sample_real(rng, n):
    """n points from 8 Gaussians on a circle of radius 2."""
    k = rng.integers(0, MODES, size=n)
    angle = 2 * math.pi * k / MODES
    centres = np.stack([RADIUS * np.cos(angle), RADIUS * np.sin(angle)], axis=1)
    return (centres + STD * rng.standard_normal((n, 2))).astype(np.float32)


def build(lib, noise_dim=8, hidden=64):
    nn = lib.nn
    generator = nn.Sequential(
        nn.Linear(noise_dim, hidden), nn.ReLU(inplace=True),
        nn.Linear(hidden, hidden), nn.ReLU(inplace=True),
        nn.Linear(hidden, 2),
    )
    discriminator = nn.Sequential(
        nn.Linear(2, hidden), nn.LeakyReLU(0.2, inplace=True),
        nn.Linear(hidden, hidden), nn.LeakyReLU(0.2, inplace=True),
        nn.Linear(hidden, 1),
    )
    return generator, discriminator


def modes_covered(points, min_share=0.02):
    """How many of the 8 modes receive at least `min_share` of the samples within 3 std, and the
    share of all samples that land that close to some mode."""
    angle = 2 * np.pi * np.arange(MODES) / MODES
    centres = RADIUS * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    dist = np.linalg.norm(points[:, None, :] - centres[None], axis=2)
    nearest, close = dist.argmin(1), dist.min(1) < 3 * STD * 4
    counts = np.bincount(nearest[close], minlength=MODES)
    return int((counts >= min_share * len(points)).sum()), float(close.mean())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["minigrad", "torch"], default="minigrad")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--show-error", action="store_true", help="make the classic mistake and print the error")
    args = p.parse_args()

    lib = importlib.import_module(args.backend)
    importlib.import_module(args.backend + ".nn.functional")
    importlib.import_module(args.backend + ".optim")
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    generator, discriminator = build(lib)
    opt_g = lib.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = lib.optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    ones = lib.ones(args.batch_size, 1)
    zeros = lib.zeros(args.batch_size, 1)

    if args.show_error:
        show_error(lib, generator, discriminator, opt_d, bce, ones, zeros, rng, args.batch_size)
        return

    from rich.progress import Progress

    started = time.perf_counter()
    every = max(args.steps // 10, 1)
    with Progress(transient=True) as bar:
        task = bar.add_task("training", total=args.steps)
        d_sum = g_sum = 0.0
        for step in range(1, args.steps + 1):
            real = lib.from_numpy(sample_real(rng, args.batch_size))
            fake = generator(lib.randn(args.batch_size, 8))

            # discriminator: real -> 1, fake -> 0 (fake detached: G gets no gradient here)
            d_loss = bce(discriminator(real), ones) + bce(discriminator(fake.detach()), zeros)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()              # updates D's weights in place (their versions move)

            # generator: computed *after* D's step, so no saved weight is stale
            g_loss = bce(discriminator(fake), ones)
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()

            d_sum += d_loss.item()
            g_sum += g_loss.item()
            bar.advance(task)
            if step % every == 0:
                with lib.no_grad():
                    samples = generator(lib.randn(2000, 8)).numpy()
                covered, near = modes_covered(samples)
                print(f"step {step:5d}  D loss {d_sum / every:.3f}  G loss {g_sum / every:.3f}  "
                      f"modes covered {covered}/8  near a mode {near:.0%}")
                d_sum = g_sum = 0.0
    print(f"done in {time.perf_counter() - started:.1f} s")


def show_error(lib, generator, discriminator, opt_d, bce, ones, zeros, rng, n):
    """The classic mistake: G's loss built through D *before* D's in-place step. Anomaly mode
    (on before the forward pass, so nodes remember where they were made) makes minigrad add its
    mutation blame: where the tensor was saved and which in-place op moved its version."""
    lib.autograd.set_detect_anomaly(True)
    real = lib.from_numpy(sample_real(rng, n))
    fake = generator(lib.randn(n, 8))
    g_loss = bce(discriminator(fake), ones)                  # saves D's weights
    d_loss = bce(discriminator(real), ones) + bce(discriminator(fake.detach()), zeros)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()                                             # modifies them in place
    try:
        g_loss.backward()
    except RuntimeError as e:
        print(f"RuntimeError: {e}")


if __name__ == "__main__":
    main()
