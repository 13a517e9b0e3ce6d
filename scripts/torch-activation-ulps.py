#!/usr/bin/env python3
"""torch's float32 CPU activations measured as rust/kernels/src/simd/accuracy_tests.rs measures
minigrad's: max error in ulps of a float64 reference over the same kind of inputs (every k-th
float32 of the range, so each binade gets its share, plus a uniform grid). The torch column of
docs/kernels.md's accuracy table comes from this script (one thread; any machine with AVX-512
or AVX2 gives torch's vectorised paths: MKL's VML for exp, log and tanh in MKL builds, SLEEF
and ATen's own formulas for the rest).

    python3 scripts/torch-activation-ulps.py
"""
import numpy as np
import scipy.special as sp
import torch

N = 1 << 20
F = torch.nn.functional


def samples(lo, hi, n):
    def order(x):
        b = int(np.float32(x).view(np.int32))
        return -(b & 0x7FFFFFFF) if np.signbit(np.float32(x)) else b
    a, b = order(lo), order(hi)
    i = np.arange(a, b + 1, max((b - a) // n, 1), dtype=np.int64)
    mag = np.abs(i).astype(np.uint32).view(np.float32)
    v = np.where(i < 0, -mag, mag)
    return np.concatenate([v, np.linspace(lo, hi, n // 4 + 1, dtype=np.float32)])


def ulps(got, want, floor=0.0):
    """Error in ulps of max(|want|, floor) (the spacing of float32 there; 2^-149 below normal)."""
    got = got.astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.maximum(np.floor(np.log2(np.maximum(np.abs(want), floor))), -126)
        err = np.abs(got - want) / np.exp2(e - 23)
    err[np.isnan(got) & np.isnan(want)] = 0
    err[np.isnan(got) != np.isnan(want)] = np.inf
    err[np.isinf(got) & (got == want.astype(np.float32))] = 0
    return err


def grad(f):
    def g(x):
        x = x.clone().requires_grad_(True)
        y = f(x)
        y.backward(torch.ones_like(y))
        return x.grad
    return g


sig = sp.expit
phi = sp.ndtr
def gelu_tanh_s(x):
    return sig(2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))
def dgelu_tanh(x):
    s = gelu_tanh_s(x)
    return s + 2 * x * s * (1 - s) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x * x)
def gelu_tanh(t):
    return F.gelu(t, approximate="tanh")

CASES = [  # name, range, torch function, float64 reference, floor (derivatives with a zero)
    ("exp", (-87, 88), torch.exp, np.exp, 0),
    ("tanh", (-10, 10), torch.tanh, np.tanh, 0),
    ("sigmoid", (-87, 20), torch.sigmoid, sig, 0),
    ("silu", (-87, 20), F.silu, lambda x: x * sig(x), 0),
    ("gelu", (-13, 14), F.gelu, lambda x: x * phi(x), 0),
    ("gelu on [0, 14]", (0, 14), F.gelu, lambda x: x * phi(x), 0),
    ("gelu, tanh form", (-10, 10), gelu_tanh, lambda x: x * gelu_tanh_s(x), 0),
    ("silu backward", (-80, 20), grad(F.silu), lambda x: sig(x) * (1 + x * (1 - sig(x))), 0.25),
    ("gelu backward", (-13, 14), grad(F.gelu), lambda x: phi(x) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi), 0.25),
    ("gelu (tanh) backward", (-10, 10), grad(gelu_tanh), dgelu_tanh, 0.25),
]

if __name__ == "__main__":
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}")
    for name, (lo, hi), f, ref, floor in CASES:
        xs = samples(lo, hi, N)
        with np.errstate(all="ignore"):
            err = ulps(f(torch.from_numpy(xs)).detach().numpy(), ref(xs.astype(np.float64)), floor)
        i = int(np.argmax(err))
        print(f"{name:22s} [{lo}, {hi}]: max {err[i]:.3g} ulp at x = {xs[i]:.7g}")
