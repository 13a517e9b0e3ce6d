//! The one SIMD helper layer every vectorised kernel goes through.
//!
//! `pulp` detects the CPU once (AVX-512 = x86-v4, AVX2+FMA = x86-v3, NEON, or scalar) and runs a
//! kernel body compiled for that instruction set. Kernels are written once, generic over
//! `S: Simd`, with the small value type [`F32s`] below so the math reads as arithmetic
//! (`x.mul_add(a, b)`, `F32s::select(x.lt(c), p, q)`) rather than as per-op intrinsics.
//! Everything here is `#[inline(always)]`: the body must be inlined into pulp's
//! `#[target_feature]` entry to be compiled for the wide instruction set.
//!
//! - [`map1`], [`map2`]: apply a lane function over slices (whole vectors, then a masked tail);
//! - [`run`]: run any closure under the detected instruction set, so that plain slice loops
//!   LLVM auto-vectorises use the wide registers too;
//! - `math` (exp, log, tanh, sigmoid) and `normal` (the normal cdf for gelu) hold the functions;
//!   `lookup` reads small tables held in registers (exp's `2^(j/16)`);
//! - `fold`: max/min of f32 runs and the passes of a softmax row; `sum`: sums (and sums of
//!   squares) of f32 runs, in float32 lanes in a fixed cascade; `sum_rows`: column sums of f32
//!   rows (the outer shape's sums), in 16-row float32 partials; `extreme_rows`: column max/min
//!   of f32 rows (the outer shape's amax/amin), strips of extremes kept in registers.

pub mod extreme_rows;
pub mod fold;
mod lookup;
pub mod math;
pub mod normal;
pub mod sum;
pub mod sum_rows;
#[cfg(test)]
mod accuracy_tests;

use pulp::Simd;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::sync::OnceLock;

pub use pulp::Simd as SimdArch;

static ARCH: OnceLock<pulp::Arch> = OnceLock::new();

/// The instruction set detected at first use (cached: detection reads cpuid).
#[inline]
pub fn arch() -> pulp::Arch {
    *ARCH.get_or_init(pulp::Arch::new)
}

/// Name of the instruction set kernels run with here (for docs and bench output).
pub fn level() -> &'static str {
    #[allow(unreachable_patterns)]
    match arch() {
        #[cfg(target_arch = "x86_64")]
        pulp::Arch::V4(_) => "avx512",
        #[cfg(target_arch = "x86_64")]
        pulp::Arch::V3(_) => "avx2+fma",
        pulp::Arch::Scalar => "scalar",
        _ => "neon",
    }
}

/// Runs `f` compiled for the detected instruction set: a loop inside it (inlined) is
/// auto-vectorised with the widest registers, not the x86-64 baseline's SSE2. Only what LLVM
/// inlines into `f` gets them: keep `f` a small closure with one call site, or use [`exec`].
#[inline(always)]
pub fn run<R>(f: impl FnOnce() -> R) -> R {
    arch().dispatch(f)
}

/// A loop body for [`exec`]; implementations mark `call` `#[inline(always)]`, which is what
/// guarantees the body is compiled into the instruction set's entry point (a closure that
/// LLVM declines to inline would run with baseline SSE2).
pub trait Body {
    type Output;
    fn call(self) -> Self::Output;
}

/// Runs `body` under the detected instruction set.
#[inline]
pub fn exec<B: Body>(body: B) -> B::Output {
    exec_on(arch(), body)
}

/// Runs `body` compiled for instruction set `arch`.
#[inline(always)]
fn exec_on<B: Body>(arch: pulp::Arch, body: B) -> B::Output {
    struct Exec<B>(B);
    impl<B: Body> pulp::WithSimd for Exec<B> {
        type Output = B::Output;
        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) -> B::Output {
            self.0.call()
        }
    }
    arch.dispatch(Exec(body))
}

static ARCH_256: OnceLock<pulp::Arch> = OnceLock::new();

/// The detected instruction set with vectors of at most 256 bits: AVX2+FMA (x86-v3) on a CPU
/// that also has AVX-512, otherwise [`arch`] itself.
#[inline]
pub fn arch_256() -> pulp::Arch {
    *ARCH_256.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if let (pulp::Arch::V4(_), Some(v3)) = (arch(), pulp::x86::V3::try_new()) {
            return pulp::Arch::V3(v3);
        }
        arch()
    })
}

/// Runs `body` like [`exec`] but with vectors of at most 256 bits. For streaming loops whose
/// operands live in L3 or DRAM, where 512-bit loads and stores are slower on this AVX-512 CPU
/// (Zen 4; `kernels.md`, "Vector width of the streaming loops").
#[inline]
pub fn exec_256<B: Body>(body: B) -> B::Output {
    exec_on(arch_256(), body)
}

/// A vector of f32 lanes for instruction set `S`, with arithmetic operators.
#[derive(Clone, Copy, Debug)]
pub struct F32s<S: Simd> {
    pub s: S,
    pub v: S::f32s,
}

/// A lane mask (the result of a comparison).
#[derive(Clone, Copy, Debug)]
pub struct Mask<S: Simd> {
    s: S,
    m: S::m32s,
}

/// Raw lane bits, for the exponent arithmetic of exp and log.
#[derive(Clone, Copy, Debug)]
pub struct U32s<S: Simd> {
    s: S,
    v: S::u32s,
}

impl<S: Simd> F32s<S> {
    #[inline(always)]
    pub fn splat(s: S, x: f32) -> Self {
        F32s { s, v: s.splat_f32s(x) }
    }
    /// `self * b + c` with one rounding (FMA on every supported instruction set).
    #[inline(always)]
    pub fn mul_add(self, b: Self, c: Self) -> Self {
        F32s { s: self.s, v: self.s.mul_add_f32s(self.v, b.v, c.v) }
    }
    #[inline(always)]
    pub fn mul_add_c(self, b: f32, c: f32) -> Self {
        self.mul_add(self.k(b), self.k(c))
    }
    /// A constant of the same instruction set.
    #[inline(always)]
    pub fn k(self, x: f32) -> Self {
        F32s::splat(self.s, x)
    }
    #[inline(always)]
    pub fn abs(self) -> Self {
        F32s { s: self.s, v: self.s.abs_f32s(self.v) }
    }
    #[inline(always)]
    pub fn lt(self, o: Self) -> Mask<S> {
        Mask { s: self.s, m: self.s.less_than_f32s(self.v, o.v) }
    }
    #[inline(always)]
    pub fn gt(self, o: Self) -> Mask<S> {
        Mask { s: self.s, m: self.s.greater_than_f32s(self.v, o.v) }
    }
    #[inline(always)]
    pub fn eq(self, o: Self) -> Mask<S> {
        Mask { s: self.s, m: self.s.equal_f32s(self.v, o.v) }
    }
    #[inline(always)]
    pub fn lt_c(self, c: f32) -> Mask<S> {
        self.lt(self.k(c))
    }
    #[inline(always)]
    pub fn gt_c(self, c: f32) -> Mask<S> {
        self.gt(self.k(c))
    }
    #[inline(always)]
    pub fn is_nan(self) -> Mask<S> {
        let m = self.s.equal_f32s(self.v, self.v);
        Mask { s: self.s, m: self.s.not_m32s(m) }
    }
    /// `m ? a : b`, lane by lane.
    #[inline(always)]
    pub fn select(m: Mask<S>, a: Self, b: Self) -> Self {
        F32s { s: a.s, v: a.s.select_f32s(m.m, a.v, b.v) }
    }
    #[inline(always)]
    pub fn bits(self) -> U32s<S> {
        U32s { s: self.s, v: self.s.transmute_u32s_f32s(self.v) }
    }
    /// `self` with the sign bit of `sign` added (`self` must be non-negative or NaN): how the
    /// odd functions (tanh) return -0.0 for -0.0.
    #[inline(always)]
    pub fn with_sign_of(self, sign: Self) -> Self {
        let sb = sign.bits().and(0x8000_0000);
        self.bits().or_bits(sb).to_f32s()
    }
}

impl<S: Simd> Mask<S> {
    /// True when every lane is set (one test per vector: for a rare slow path).
    #[inline(always)]
    pub fn all(self) -> bool {
        self.s.first_true_m32s(self.s.not_m32s(self.m)) == S::F32_LANES
    }
    #[inline(always)]
    pub fn or(self, o: Self) -> Self {
        Mask { s: self.s, m: self.s.or_m32s(self.m, o.m) }
    }
    /// True when some lane is set.
    #[inline(always)]
    pub fn any(self) -> bool {
        self.s.first_true_m32s(self.m) < S::F32_LANES
    }
    #[inline(always)]
    pub fn and(self, o: Self) -> Self {
        Mask { s: self.s, m: self.s.and_m32s(self.m, o.m) }
    }
}

impl<S: Simd> U32s<S> {
    #[inline(always)]
    pub fn and(self, c: u32) -> Self {
        U32s { s: self.s, v: self.s.and_u32s(self.v, self.s.splat_u32s(c)) }
    }
    #[inline(always)]
    pub fn or(self, c: u32) -> Self {
        U32s { s: self.s, v: self.s.or_u32s(self.v, self.s.splat_u32s(c)) }
    }
    #[inline(always)]
    pub fn or_bits(self, o: Self) -> Self {
        U32s { s: self.s, v: self.s.or_u32s(self.v, o.v) }
    }
    /// Wrapping lane-wise add.
    #[inline(always)]
    pub fn add_bits(self, o: Self) -> Self {
        U32s { s: self.s, v: self.s.add_u32s(self.v, o.v) }
    }
    /// Wrapping add of a constant.
    #[inline(always)]
    pub fn add(self, c: u32) -> Self {
        U32s { s: self.s, v: self.s.add_u32s(self.v, self.s.splat_u32s(c)) }
    }
    #[inline(always)]
    pub fn shl(self, n: u32) -> Self {
        U32s { s: self.s, v: self.s.wrapping_dyn_shl_u32s(self.v, self.s.splat_u32s(n)) }
    }
    #[inline(always)]
    pub fn shr(self, n: u32) -> Self {
        U32s { s: self.s, v: self.s.wrapping_dyn_shr_u32s(self.v, self.s.splat_u32s(n)) }
    }
    /// Lane i gets `table[self_i % 16]` (register permutes where the instruction set has them).
    #[inline(always)]
    pub fn lookup16(self, table: &[f32; 16]) -> F32s<S> {
        F32s { s: self.s, v: lookup::lookup16(self.s, self.v, table) }
    }
    #[inline(always)]
    pub fn to_f32s(self) -> F32s<S> {
        F32s { s: self.s, v: self.s.transmute_f32s_u32s(self.v) }
    }
}

macro_rules! binop {
    ($tr:ident, $f:ident, $simd:ident) => {
        impl<S: Simd> $tr for F32s<S> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                F32s { s: self.s, v: self.s.$simd(self.v, o.v) }
            }
        }
        impl<S: Simd> $tr<f32> for F32s<S> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: f32) -> Self {
                F32s { s: self.s, v: self.s.$simd(self.v, self.s.splat_f32s(o)) }
            }
        }
    };
}
binop!(Add, add, add_f32s);
binop!(Sub, sub, sub_f32s);
binop!(Mul, mul, mul_f32s);
binop!(Div, div, div_f32s);

impl<S: Simd> Neg for F32s<S> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        F32s { s: self.s, v: self.s.neg_f32s(self.v) }
    }
}

/// A function of one f32 lane vector (exp, tanh, ...), as a type so each is its own
/// monomorphised loop.
pub trait LaneFn1: Copy + Send + Sync {
    fn apply<S: Simd>(self, x: F32s<S>) -> F32s<S>;
}

/// A function of two lane vectors (a backward formula of the incoming gradient and the saved
/// input or result).
pub trait LaneFn2: Copy + Send + Sync {
    fn apply<S: Simd>(self, a: F32s<S>, b: F32s<S>) -> F32s<S>;
}

/// How many leading elements of `dst` come before its first 64-byte boundary (all of them if
/// it has none): the maps run that head (one partial vector) first, so that the main loop's
/// stores each fall inside one cache line (a straddling store costs two). NumPy's large arrays,
/// and so `from_numpy` tensors, start 16 bytes past a boundary: in-place relu_ of 1e6 floats
/// (from L3, one thread) took 61 us there against 41 us aligned. `elementwise` peels it too.
#[inline(always)]
pub fn aligned_head<T>(dst: &[T]) -> usize {
    dst.as_ptr().align_offset(64).min(dst.len())
}

/// How far ahead of the vector being computed the maps ask the cache for their inputs, in
/// bytes. A transcendental spends 15-50 instructions on each vector, so the out-of-order
/// window spans only a few cache lines of its stream; on a 2-core Xeon VM (2026-11-28) the
/// hardware prefetchers did not fill the gap: tanh_ of 1e7 floats (from DRAM) ran at 1.7 ns
/// per element on one thread against 0.62 from L2, exp of 1e7 at 0.67 against 0.33. Prefetching
/// 4 KiB ahead: 0.50 and 0.31 (2-6 KiB measured alike). Streams cheap per element (sums,
/// relu_, add_) are bound by the core's bandwidth instead, and a prefetch did not speed them.
const PREFETCH_AHEAD: usize = 4096;

/// Asks for the cache line `PREFETCH_AHEAD` bytes past vector `i` of `v`: a hint that never
/// faults, so the address may lie past the end of `v` (it is only computed, never read).
#[inline(always)]
fn prefetch_ahead<V>(v: &[V], i: usize) {
    let p = (v.as_ptr() as *const u8).wrapping_add(i * std::mem::size_of::<V>() + PREFETCH_AHEAD);
    // SAFETY: a prefetch reads nothing architecturally and cannot fault, whatever the address;
    // SSE, which has it, is part of the x86-64 baseline.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// `dst[i] = f(src[i])`; `src` and `dst` have the same length. `src` may be `dst` itself
/// only through [`map1_inplace`].
#[inline]
pub fn map1<F: LaneFn1>(f: F, dst: &mut [f32], src: &[f32]) {
    map1_on(arch(), f, dst, src)
}

/// `map1` with a given instruction set (tests compare them).
#[inline]
pub(crate) fn map1_on<F: LaneFn1>(arch: pulp::Arch, f: F, dst: &mut [f32], src: &[f32]) {
    struct Op<'a, F> {
        f: F,
        dst: &'a mut [f32],
        src: &'a [f32],
    }
    impl<F: LaneFn1> pulp::WithSimd for Op<'_, F> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let h = aligned_head(self.dst);
            let ((d0, d1), (s0, s1)) = (self.dst.split_at_mut(h), self.src.split_at(h));
            for (dst, src) in [(d0, s0), (d1, s1)] {
                let (dh, dt) = S::as_mut_simd_f32s(dst);
                let (sh, st) = S::as_simd_f32s(src);
                for (i, (d, &x)) in dh.iter_mut().zip(sh).enumerate() {
                    prefetch_ahead(sh, i);
                    *d = self.f.apply(F32s { s, v: x }).v;
                }
                if !st.is_empty() {
                    let x = F32s { s, v: s.partial_load_f32s(st) };
                    s.partial_store_f32s(dt, self.f.apply(x).v);
                }
            }
        }
    }
    debug_assert_eq!(dst.len(), src.len());
    arch.dispatch(Op { f, dst, src })
}

/// `xs[i] = f(xs[i])`.
#[inline]
pub fn map1_inplace<F: LaneFn1>(f: F, xs: &mut [f32]) {
    struct Op<'a, F> {
        f: F,
        xs: &'a mut [f32],
    }
    impl<F: LaneFn1> pulp::WithSimd for Op<'_, F> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let n = aligned_head(self.xs);
            let (x0, x1) = self.xs.split_at_mut(n);
            for xs in [x0, x1] {
                let (h, t) = S::as_mut_simd_f32s(xs);
                for i in 0..h.len() {
                    prefetch_ahead(h, i);
                    h[i] = self.f.apply(F32s { s, v: h[i] }).v;
                }
                if !t.is_empty() {
                    let x = F32s { s, v: s.partial_load_f32s(t) };
                    s.partial_store_f32s(t, self.f.apply(x).v);
                }
            }
        }
    }
    arch().dispatch(Op { f, xs })
}

/// `dst[i] = f(a[i], b[i])`; all three have the same length, `dst` overlaps neither input.
#[inline]
pub fn map2<F: LaneFn2>(f: F, dst: &mut [f32], a: &[f32], b: &[f32]) {
    map2_on(arch(), f, dst, a, b)
}

#[inline]
pub(crate) fn map2_on<F: LaneFn2>(arch: pulp::Arch, f: F, dst: &mut [f32], a: &[f32], b: &[f32]) {
    struct Op<'a, F> {
        f: F,
        dst: &'a mut [f32],
        a: &'a [f32],
        b: &'a [f32],
    }
    impl<F: LaneFn2> pulp::WithSimd for Op<'_, F> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let h = aligned_head(self.dst);
            let ((d0, d1), (a0, a1), (b0, b1)) = (self.dst.split_at_mut(h), self.a.split_at(h), self.b.split_at(h));
            for ((dst, a), b) in [(d0, a0), (d1, a1)].into_iter().zip([b0, b1]) {
                let (dh, dt) = S::as_mut_simd_f32s(dst);
                let (ah, at) = S::as_simd_f32s(a);
                let (bh, bt) = S::as_simd_f32s(b);
                for (i, ((d, &x), &y)) in dh.iter_mut().zip(ah).zip(bh).enumerate() {
                    prefetch_ahead(ah, i);
                    prefetch_ahead(bh, i);
                    *d = self.f.apply(F32s { s, v: x }, F32s { s, v: y }).v;
                }
                if !dt.is_empty() {
                    let x = F32s { s, v: s.partial_load_f32s(at) };
                    let y = F32s { s, v: s.partial_load_f32s(bt) };
                    s.partial_store_f32s(dt, self.f.apply(x, y).v);
                }
            }
        }
    }
    debug_assert!(dst.len() == a.len() && dst.len() == b.len());
    arch.dispatch(Op { f, dst, a, b })
}
