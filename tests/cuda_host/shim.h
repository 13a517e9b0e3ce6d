// Host build of minigrad's CUDA kernel sources, for tests only: g++ compiles the very same .cu
// text with this header force-included (-include shim.h), so the kernels' arithmetic runs on
// the CPU and can be compared with torch. Nothing here is CuPy or a CUDA runtime.
//
// What it maps:
//  - __global__/__device__/__forceinline__ -> plain inline C++; __shared__ -> a static local,
//    which is one variable per kernel instantiation, shared by the block's threads as blocks run
//    one after another.
//  - threadIdx/blockIdx/blockDim/gridDim -> globals set by the launch loop.
//  - the CUDA math functions -> libm (<math.h> has the same names and signatures); the bit-cast
//    intrinsics -> memcpy.
//  - each CUDA thread of a block -> a fiber (ucontext). __syncthreads() parks the fiber until
//    every thread of the block has reached it; __shfl_down_sync() and __shfl_sync() park it until its
//    32 lanes have posted their values, then read the partner's. So a block's threads run in lockstep
//    phases between barriers, as the CUDA model promises and no more: a barrier that only part
//    of a block (or a warp) reaches is reported as a deadlock, not silently passed.
//  - __threadfence() -> nothing, atomicInc/atomicAdd -> plain read-modify-write: blocks run one
//    after another on one host thread, so no other block runs between a fence and what follows
//    it. The order the blocks run in is 0, 1, ... unless MG_HOST_BLOCK_ORDER is set to a seed
//    (a positive integer): then each launch runs them in a pseudo-random permutation of that
//    seed, so a test can show that a result does not depend on which block finishes last.
// Launch: mg_host::launch(grid, block, body) runs body() as every thread of every block.
#pragma once

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __launch_bounds__(...)

struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

inline dim3 threadIdx, blockIdx, blockDim, gridDim;

// CUDA's erfinv/erfinvf have no C library twin. Here: a first guess (series near 0, Winitzki's
// closed form elsewhere), then three Halley steps on the C library's erf (erfc where |y| > 0.5,
// so the residual does not cancel); the tests compare it with torch's closely, not bit for bit.
inline double erfinv(double y) {
  const double a = fabs(y), pi = 3.141592653589793;
  if (a != a || a > 1.0) return NAN;
  if (a == 1.0) return copysign(INFINITY, y);
  if (a == 0.0) return y;
  double x;
  if (a < 0.3) {
    const double a2 = a * a;
    x = (sqrt(pi) / 2.0) * a * (1.0 + a2 * (pi / 12.0 + a2 * (7.0 * pi * pi / 480.0)));
  } else {
    const double k = 0.147, l = log((1.0 - a) * (1.0 + a)), b = 2.0 / (pi * k) + l / 2.0;
    x = sqrt(sqrt(b * b - l / k) - b);
  }
  for (int i = 0; i < 3; i++) {
    const double r = a <= 0.5 ? erf(x) - a : (1.0 - a) - erfc(x);
    const double u = r / (2.0 / sqrt(pi) * exp(-x * x));
    x -= u / (1.0 + x * u);
  }
  return copysign(x, y);
}
inline float erfinvf(float y) { return (float)erfinv((double)y); }

inline float __int_as_float(int v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}
inline float __uint_as_float(unsigned int v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}
inline unsigned int __float_as_uint(float f) {
  unsigned int v;
  memcpy(&v, &f, sizeof v);
  return v;
}
inline double __longlong_as_double(long long v) {
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

namespace mg_host {

[[noreturn]] inline void fail(const char* what) {
  fprintf(stderr, "cuda host shim: %s (block %u, thread %u)\n", what, blockIdx.x, threadIdx.x);
  fflush(stderr);
  abort();
}

enum State { kReady, kAtSync, kAtWarp, kDone };

struct Fiber {
  ucontext_t ctx;
  State state;
  dim3 tid;
};

struct Block {
  std::vector<Fiber> fibers;
  std::vector<char> stacks;
  std::vector<unsigned char> lanes;  // 16 bytes per thread: the values a shuffle exchanges
  ucontext_t scheduler;
  int current = -1;
  void (*body)(void*) = nullptr;
  void* arg = nullptr;
};

inline Block& block() {
  static Block b;
  return b;
}

constexpr size_t kStack = 64 * 1024;

inline void park(State s) {
  Block& b = block();
  Fiber& f = b.fibers[b.current];
  f.state = s;
  swapcontext(&f.ctx, &b.scheduler);
}

inline void fiber_main() {
  Block& b = block();
  b.body(b.arg);
  b.fibers[b.current].state = kDone;  // uc_link returns to the scheduler
}

inline int linear(const dim3& t) { return (int)(t.x + t.y * blockDim.x + t.z * blockDim.x * blockDim.y); }

// Runs one block: every thread until it parks or ends, then releases whichever barrier all its
// threads (the block's, or a warp's 32 lanes) have reached; anything else is a deadlock.
inline void run_block() {
  Block& b = block();
  const int n = (int)(blockDim.x * blockDim.y * blockDim.z);
  b.fibers.resize(n);
  b.stacks.resize((size_t)n * kStack);
  b.lanes.assign((size_t)n * 16, 0);
  for (int i = 0; i < n; ++i) {
    Fiber& f = b.fibers[i];
    f.tid.x = i % blockDim.x;
    f.tid.y = (i / blockDim.x) % blockDim.y;
    f.tid.z = i / (blockDim.x * blockDim.y);
    f.state = kReady;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = &b.stacks[(size_t)i * kStack];
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &b.scheduler;
    makecontext(&f.ctx, fiber_main, 0);
  }
  for (;;) {
    bool ran = false;
    for (int i = 0; i < n; ++i) {
      if (b.fibers[i].state != kReady) continue;
      b.current = i;
      threadIdx = b.fibers[i].tid;
      swapcontext(&b.scheduler, &b.fibers[i].ctx);
      ran = true;
    }
    if (ran) continue;
    int done = 0, at_sync = 0;
    for (const Fiber& f : b.fibers) {
      done += f.state == kDone;
      at_sync += f.state == kAtSync;
    }
    if (done == n) return;
    bool released = false;
    for (int w = 0; w * 32 < n; ++w) {  // a warp whose 32 lanes all wait at a shuffle
      int waiting = 0;
      for (int l = w * 32; l < w * 32 + 32 && l < n; ++l) waiting += b.fibers[l].state == kAtWarp;
      if (waiting == 32) {
        for (int l = w * 32; l < w * 32 + 32; ++l) b.fibers[l].state = kReady;
        released = true;
      }
    }
    if (released) continue;
    if (at_sync == n) {
      for (Fiber& f : b.fibers) f.state = kReady;
      continue;
    }
    fail("deadlock: a barrier (__syncthreads or a warp shuffle) was reached by only part of its threads");
  }
}

template <class F> void call_body(void* f) { (*static_cast<F*>(f))(); }

template <class F> void launch(unsigned grid, unsigned threads, F body) {
  gridDim = dim3{grid, 1, 1};
  blockDim = dim3{threads, 1, 1};
  Block& b = block();
  b.body = &call_body<F>;
  b.arg = &body;
  std::vector<unsigned> order(grid);
  for (unsigned g = 0; g < grid; ++g) order[g] = g;
  if (const char* seed = getenv("MG_HOST_BLOCK_ORDER")) {
    unsigned long long s = strtoull(seed, nullptr, 10) * 6364136223846793005ull + 1442695040888963407ull;
    for (unsigned g = grid; g > 1; --g) {  // Fisher-Yates with an LCG
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const unsigned k = (unsigned)((s >> 33) % g);
      const unsigned t = order[g - 1];
      order[g - 1] = order[k];
      order[k] = t;
    }
  }
  for (unsigned g : order) {
    blockIdx = dim3{g, 1, 1};
    run_block();
  }
}

// A kernel called the way cuLaunchKernel calls one: `args[i]` points at parameter i's value.
template <class F> struct Trampoline;
template <class... A> struct Trampoline<void (*)(A...)> {
  static constexpr size_t arity = sizeof...(A);
  template <void (*K)(A...), size_t... I>
  static void call(unsigned grid, unsigned threads, void** args, std::index_sequence<I...>) {
    launch(grid, threads, [args] { K(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(args[I])...); });
  }
};
template <auto K> void entry(unsigned grid, unsigned threads, void** args) {
  using T = Trampoline<decltype(K)>;
  T::template call<K>(grid, threads, args, std::make_index_sequence<T::arity>{});
}

}  // namespace mg_host

inline void __syncthreads() { mg_host::park(mg_host::kAtSync); }

[[noreturn]] inline void __trap() { mg_host::fail("__trap()"); }

// Full-warp shuffles only (every kernel here shuffles with all 32 lanes active).
// Every lane reads lane `src`'s value (a broadcast when src is the same for all lanes).
template <class T> T __shfl_sync(unsigned mask, T v, int src) {
  static_assert(sizeof(T) <= 16, "a lane holds at most 16 bytes");
  if (mask != 0xffffffffu) mg_host::fail("__shfl_sync with a partial mask");
  mg_host::Block& b = mg_host::block();
  const int me = mg_host::linear(threadIdx);
  if (blockDim.x * blockDim.y * blockDim.z % 32 != 0) mg_host::fail("shuffle in a block that is not whole warps");
  memcpy(&b.lanes[(size_t)me * 16], &v, sizeof(T));
  mg_host::park(mg_host::kAtWarp);
  T r;
  memcpy(&r, &b.lanes[(size_t)(me - me % 32 + (src & 31)) * 16], sizeof(T));
  mg_host::park(mg_host::kAtWarp);
  return r;
}

template <class T> T __shfl_down_sync(unsigned mask, T v, int delta) {
  static_assert(sizeof(T) <= 16, "a lane holds at most 16 bytes");
  if (mask != 0xffffffffu) mg_host::fail("__shfl_down_sync with a partial mask");
  mg_host::Block& b = mg_host::block();
  const int me = mg_host::linear(threadIdx);
  if (blockDim.x * blockDim.y * blockDim.z % 32 != 0) mg_host::fail("shuffle in a block that is not whole warps");
  memcpy(&b.lanes[(size_t)me * 16], &v, sizeof(T));
  mg_host::park(mg_host::kAtWarp);  // every lane has posted its value
  const int lane = me % 32;
  const int src = lane + delta < 32 ? me + delta : me;
  T r;
  memcpy(&r, &b.lanes[(size_t)src * 16], sizeof(T));
  mg_host::park(mg_host::kAtWarp);  // every lane has read before any lane posts again
  return r;
}

// Blocks run one after another on one host thread: nothing to order, nothing to make atomic.
inline void __threadfence() {}
inline unsigned int atomicInc(unsigned int* address, unsigned int val) {
  const unsigned int old = *address;
  *address = old >= val ? 0u : old + 1u;
  return old;
}
inline unsigned int atomicAdd(unsigned int* address, unsigned int val) {
  const unsigned int old = *address;
  *address = old + val;
  return old;
}
