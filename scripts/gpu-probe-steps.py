"""Probe (GPU only): where a small train step's time goes on the GPU, minigrad against torch.

For the train suite's digits conv net and MLP SGD steps on cuda: the wall time per step
(synchronised after each), the number of kernels each library launches per step and their GPU
time (CUPTI through torch.profiler sees every kernel in the process, CuPy's as well as torch's),
the kernels minigrad spends most GPU time in, and the host functions minigrad's step spends its
time in (cProfile). A step far slower in wall time than its kernels' GPU time is bound by the
host: launches and Python. Usage: python3 scripts/gpu-probe-steps.py [--steps N]
"""

import argparse
import cProfile
import io
import pstats
import time
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from minigrad.bench.suites import train


class _Ctx:
    libs = ("minigrad", "torch")

    def module(self, lib):
        import importlib

        return importlib.import_module(lib)


def wall_us(fn, steps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / steps * 1e6


def kernels(fn, steps):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    per_name = defaultdict(lambda: [0, 0.0])
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            per_name[ev.name][0] += 1
            per_name[ev.name][1] += ev.device_time
    count = sum(c for c, _ in per_name.values()) / steps
    gpu_us = sum(t for _, t in per_name.values()) / steps
    return count, gpu_us, per_name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    for model, shape in (("convnet", (64, 1, 8, 8)), ("mlp", (64, 784))):
        fns = train._build(_Ctx(), model, shape, device="cuda")
        print(f"\n== {model} SGD step, batch 64")
        for lib, fn in fns.items():
            us = wall_us(fn, args.steps)
            count, gpu_us, per_name = kernels(fn, args.steps)
            print(f"{lib:9s} wall {us:8.1f} us/step | {count:6.1f} kernels/step, GPU time {gpu_us:7.1f} us/step")
            if lib == "minigrad":
                top = sorted(per_name.items(), key=lambda kv: -kv[1][1])[:14]
                for name, (c, t) in top:
                    print(f"    {c / args.steps:5.1f}x {t / args.steps:7.1f} us  {name[:90]}")
        prof = cProfile.Profile()
        fn = fns["minigrad"]
        prof.enable()
        for _ in range(args.steps):
            fn()
        torch.cuda.synchronize()
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:4000])


if __name__ == "__main__":
    main()
