"""Probe (GPU only): how the contiguous elementwise kernels' launch shape decides their speed.

Times variants of one float32 relu and add kernel against torch.cuda's, with CUDA events, at
1e6-1e8 elements: the shape minigrad's `mg_unary_contig` / `mg_binary_contig` use (a grid-stride
loop over 16-byte vectors, at most 4096 blocks of 256 threads: launch.rs `grid_for`) and the
alternatives (one vector per thread over as many blocks as it takes; several vectors per thread
with the loads issued before the stores). Usage: python3 scripts/gpu-probe-elementwise.py [--json F]
"""

import argparse
import json
import statistics

import cupy as cp
import torch

from minigrad.bench.suites.gpu import event_median_us

SOURCE = r"""
struct alignas(16) F4 { float v[4]; };
__device__ __forceinline__ float relu(float x) { return x < 0.f ? 0.f : x; }

// the shape minigrad uses: grid-stride over vectors (the launcher caps the grid)
extern "C" __global__ void relu_stride(float* out, const float* in, long long nv) {
  for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += (long long)blockDim.x * gridDim.x) {
    F4 a = ((const F4*)in)[v];
    for (int k = 0; k < 4; ++k) a.v[k] = relu(a.v[k]);
    ((F4*)out)[v] = a;
  }
}
// U vectors per thread, blockDim apart, every load before any store; no grid-stride
template <int U> __device__ void relu_unrolled(float* out, const float* in, long long nv) {
  const long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  F4 a[U];
#pragma unroll
  for (int u = 0; u < U; ++u) { long long v = base + (long long)u * blockDim.x; if (v < nv) a[u] = ((const F4*)in)[v]; }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    long long v = base + (long long)u * blockDim.x;
    if (v < nv) { for (int k = 0; k < 4; ++k) a[u].v[k] = relu(a[u].v[k]); ((F4*)out)[v] = a[u]; }
  }
}
extern "C" __global__ void relu_u1(float* out, const float* in, long long nv) { relu_unrolled<1>(out, in, nv); }
extern "C" __global__ void relu_u2(float* out, const float* in, long long nv) { relu_unrolled<2>(out, in, nv); }
extern "C" __global__ void relu_u4(float* out, const float* in, long long nv) { relu_unrolled<4>(out, in, nv); }
// grid-stride, U vectors a step, loads first
extern "C" __global__ void relu_stride_u4(float* out, const float* in, long long nv) {
  const long long step = (long long)blockDim.x * gridDim.x;
  long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; v + 3 * step < nv; v += 4 * step) {
    F4 a[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) a[u] = ((const F4*)in)[v + u * step];
#pragma unroll
    for (int u = 0; u < 4; ++u) { for (int k = 0; k < 4; ++k) a[u].v[k] = relu(a[u].v[k]); ((F4*)out)[v + u * step] = a[u]; }
  }
  for (; v < nv; v += step) { F4 a = ((const F4*)in)[v]; for (int k = 0; k < 4; ++k) a.v[k] = relu(a.v[k]); ((F4*)out)[v] = a; }
}
extern "C" __global__ void add_stride(float* out, const float* x, const float* y, long long nv) {
  for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += (long long)blockDim.x * gridDim.x) {
    F4 a = ((const F4*)x)[v], b = ((const F4*)y)[v];
    for (int k = 0; k < 4; ++k) a.v[k] += b.v[k];
    ((F4*)out)[v] = a;
  }
}
template <int U> __device__ void add_unrolled(float* out, const float* x, const float* y, long long nv) {
  const long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  F4 a[U], b[U];
#pragma unroll
  for (int u = 0; u < U; ++u) { long long v = base + (long long)u * blockDim.x; if (v < nv) { a[u] = ((const F4*)x)[v]; b[u] = ((const F4*)y)[v]; } }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    long long v = base + (long long)u * blockDim.x;
    if (v < nv) { for (int k = 0; k < 4; ++k) a[u].v[k] += b[u].v[k]; ((F4*)out)[v] = a[u]; }
  }
}
extern "C" __global__ void add_u1(float* out, const float* x, const float* y, long long nv) { add_unrolled<1>(out, x, y, nv); }
extern "C" __global__ void add_u4(float* out, const float* x, const float* y, long long nv) { add_unrolled<4>(out, x, y, nv); }
"""


def time_us(fn, calls=20):
    return event_median_us(fn, calls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=None)
    k = {name: mod.get_function(name) for name in
         ("relu_stride", "relu_u1", "relu_u2", "relu_u4", "relu_stride_u4", "add_stride", "add_u1", "add_u4")}
    results = {}
    for n in (10**6, 10**7, 10**8):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        nv = n // 4
        px, py, po = x.data_ptr(), y.data_ptr(), out.data_ptr()

        def launch(name, grid, block, *ptrs):
            return lambda: k[name]((grid,), (block,), (*ptrs, cp.int64(nv)))

        cases = {
            "torch relu": lambda: torch.relu(x),
            "stride 4096x256 (minigrad)": launch("relu_stride", min(4096, -(-nv // 256)), 256, po, px),
            "stride 16384x256": launch("relu_stride", min(16384, -(-nv // 256)), 256, po, px),
            "one vector a thread, 256": launch("relu_u1", -(-nv // 256), 256, po, px),
            "one vector a thread, 128": launch("relu_u1", -(-nv // 128), 128, po, px),
            "two vectors a thread, 128": launch("relu_u2", -(-nv // 256), 128, po, px),
            "four vectors a thread, 128": launch("relu_u4", -(-nv // 512), 128, po, px),
            "stride 4096x256, four a step": launch("relu_stride_u4", min(4096, -(-nv // 256)), 256, po, px),
            "torch add": lambda: torch.add(x, y),
            "add stride 4096x256 (minigrad)": launch("add_stride", min(4096, -(-nv // 256)), 256, po, px, py),
            "add one vector a thread, 128": launch("add_u1", -(-nv // 128), 128, po, px, py),
            "add four vectors a thread, 128": launch("add_u4", -(-nv // 512), 128, po, px, py),
        }
        # interleave: every case once per pass, three passes, the median of the passes
        passes = [{name: time_us(fn) for name, fn in cases.items()} for _ in range(3)]
        row = {name: statistics.median(p[name] for p in passes) for name in cases}
        results[str(n)] = row
        for name, us in row.items():
            moved = (3 if name.startswith(("add", "torch add")) else 2) * 4 * n
            print(f"n={n:.0e}  {name:34s} {us:9.1f} us  {moved / us / 1e6:6.2f} TB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "us": results}, f, indent=1)


if __name__ == "__main__":
    main()
