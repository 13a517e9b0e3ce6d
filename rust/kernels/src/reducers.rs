//! The reducers the engine in `kernels::reduce` runs: small `Copy` structs, one per kind of
//! fold, generic over element types so each (op, dtype) pair is its own monomorphised loop.
//! Each holds raw pointers to the output buffers the op layer allocated.

use super::parallel::SendPtr;
use super::reduce::{FoldSlice, Reducer};
use crate::element::Element;
use std::marker::PhantomData;

/// How a dtype accumulates sums and products: f64 for floats (float32 sums keep their
/// accuracy), wrapping i64 for integers and bool (torch's integer overflow wraps too).
pub trait Accum: Element {
    type A: Copy + Send + Sync + PartialEq + std::fmt::Debug;
    const ZERO: Self::A;
    const ONE: Self::A;
    fn widen(self) -> Self::A;
    fn narrow(a: Self::A) -> Self;
    fn add(a: Self::A, b: Self::A) -> Self::A;
    fn mul(a: Self::A, b: Self::A) -> Self::A;
    fn acc_to_f64(a: Self::A) -> f64;
    /// The sum of four consecutive elements (the outer shape's four-row sweep), in order;
    /// float32 adds them pairwise in float32 and widens once.
    #[inline(always)]
    fn sum4(xs: [Self; 4]) -> Self::A {
        Self::add(Self::add(Self::add(xs[0].widen(), xs[1].widen()), xs[2].widen()), xs[3].widen())
    }
    /// The sum of a contiguous float32 run as this accumulator, where a vectorised fold exists
    /// for it (float32 into f64); `None` leaves the run to the generic lanes.
    #[inline(always)]
    fn sum_f32_run(_xs: &[f32]) -> Option<Self::A> {
        None
    }
    /// `Reducer::fold_rows` of float32 rows into this accumulator where a fixed-order kernel
    /// exists for it (float32 into f64: `simd::sum_rows`); false leaves them to the sweeps.
    ///
    /// # Safety
    /// As `Reducer::fold_rows`.
    #[inline(always)]
    unsafe fn add_f32_rows(_accs: &mut [Self::A], _first: *const f32, _stride: isize, _len: usize) -> bool {
        false
    }
    /// `out(k, sum_f32_run(row k))` for the rows of `n` elements of `xs`, with one dispatch for
    /// all (`simd::sum::sum_rows`); false where `sum_f32_run` is `None`.
    #[inline(always)]
    fn sum_f32_rows(_xs: &[f32], _n: usize, _out: &mut dyn FnMut(usize, Self::A)) -> bool {
        false
    }
}

macro_rules! float_accum {
    ($t:ty $(, $fast:item)*) => {
        impl Accum for $t {
            type A = f64;
            const ZERO: f64 = 0.0;
            const ONE: f64 = 1.0;
            #[inline(always)]
            fn widen(self) -> f64 { self as f64 }
            #[inline(always)]
            fn narrow(a: f64) -> Self { a as $t }
            #[inline(always)]
            fn add(a: f64, b: f64) -> f64 { a + b }
            #[inline(always)]
            fn mul(a: f64, b: f64) -> f64 { a * b }
            #[inline(always)]
            fn acc_to_f64(a: f64) -> f64 { a }
            $($fast)*
        }
    };
}
float_accum!(
    f32,
    #[inline(always)] fn sum_f32_run(xs: &[f32]) -> Option<f64> { Some(crate::simd::sum::sum(xs)) },
    #[inline(always)] fn sum4(xs: [f32; 4]) -> f64 { ((xs[0] + xs[1]) + (xs[2] + xs[3])) as f64 },
    #[inline(always)] unsafe fn add_f32_rows(accs: &mut [f64], first: *const f32, stride: isize, len: usize) -> bool {
        // SAFETY: the caller's contract.
        unsafe { crate::simd::sum_rows::add_rows(accs, first, stride, len) };
        true
    },
    #[inline(always)] fn sum_f32_rows(xs: &[f32], n: usize, out: &mut dyn FnMut(usize, f64)) -> bool {
        crate::simd::sum::sum_rows(xs, n, out);
        true
    }
);
float_accum!(f64);

macro_rules! int_accum {
    ($t:ty) => {
        impl Accum for $t {
            type A = i64;
            const ZERO: i64 = 0;
            const ONE: i64 = 1;
            #[inline(always)]
            fn widen(self) -> i64 { self as i64 }
            #[inline(always)]
            fn narrow(a: i64) -> Self { a as $t }
            #[inline(always)]
            fn add(a: i64, b: i64) -> i64 { a.wrapping_add(b) }
            #[inline(always)]
            fn mul(a: i64, b: i64) -> i64 { a.wrapping_mul(b) }
            #[inline(always)]
            fn acc_to_f64(a: i64) -> f64 { a as f64 }
        }
    };
}
int_accum!(i32);
int_accum!(i64);

impl Accum for bool {
    type A = i64;
    const ZERO: i64 = 0;
    const ONE: i64 = 1;
    #[inline(always)]
    fn widen(self) -> i64 { self as i64 }
    /// A bool "sum" is true when any element is (the i64 sum cannot wrap back to 0).
    #[inline(always)]
    fn narrow(a: i64) -> Self { a != 0 }
    #[inline(always)]
    fn add(a: i64, b: i64) -> i64 { a.wrapping_add(b) }
    #[inline(always)]
    fn mul(a: i64, b: i64) -> i64 { a.wrapping_mul(b) }
    #[inline(always)]
    fn acc_to_f64(a: i64) -> f64 { a as f64 }
}

/// The identities of max and min.
pub trait Bounds: Element {
    const LOWEST: Self;
    const HIGHEST: Self;
    /// Whether `extreme_slice` runs explicit vectors (dispatching by itself).
    const VECTOR: bool = false;
    /// `extreme::<Self, MAX>(xs)`, through explicit vectors where the type has them.
    #[inline(always)]
    fn extreme_slice<const MAX: bool>(xs: &[Self]) -> Self {
        extreme::<Self, MAX>(xs)
    }
    /// The index of the first element equal to `m` (the first NaN when `m` is NaN), or
    /// `xs.len()`.
    #[inline(always)]
    fn position_slice(xs: &[Self], m: Self) -> usize {
        xs.iter().position(|&x| if is_nan(m) { is_nan(x) } else { x == m }).unwrap_or(xs.len())
    }
    /// `Reducer::fold_rows` for `Extreme` where the type has a column kernel (float32:
    /// `simd::extreme_rows`); false leaves the rows to the generic sweep.
    ///
    /// # Safety
    /// As `Reducer::fold_rows`.
    #[inline(always)]
    unsafe fn extreme_rows<const MAX: bool>(_accs: &mut [Self], _first: *const Self, _stride: isize, _len: usize) -> bool {
        false
    }
}
impl Bounds for f32 {
    const LOWEST: f32 = f32::NEG_INFINITY;
    const HIGHEST: f32 = f32::INFINITY;
    const VECTOR: bool = true;
    #[inline(always)]
    fn extreme_slice<const MAX: bool>(xs: &[f32]) -> f32 {
        crate::simd::fold::extreme::<MAX>(xs)
    }
    #[inline(always)]
    fn position_slice(xs: &[f32], m: f32) -> usize {
        crate::simd::fold::position(xs, m)
    }
    #[inline(always)]
    unsafe fn extreme_rows<const MAX: bool>(accs: &mut [f32], first: *const f32, stride: isize, len: usize) -> bool {
        // SAFETY: the caller's contract.
        unsafe { crate::simd::extreme_rows::extreme_rows::<MAX>(accs, first, stride, len) };
        true
    }
}
impl Bounds for f64 {
    const LOWEST: f64 = f64::NEG_INFINITY;
    const HIGHEST: f64 = f64::INFINITY;
}
impl Bounds for i32 {
    const LOWEST: i32 = i32::MIN;
    const HIGHEST: i32 = i32::MAX;
}
impl Bounds for i64 {
    const LOWEST: i64 = i64::MIN;
    const HIGHEST: i64 = i64::MAX;
}
impl Bounds for bool {
    const LOWEST: bool = false;
    const HIGHEST: bool = true;
}

/// NaN test that is simply false for integers and bool.
#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq>(x: T) -> bool {
    x != x
}

/// True when `x` should replace `best` in a max (`MAX`) or min: NaN wins and then stays; ties
/// keep the earlier element, as torch returns the first occurrence.
/// Written without short-circuits so the comparison compiles to selects and vectorises.
#[inline(always)]
fn beats<T: PartialOrd + Copy, const MAX: bool>(x: T, best: T) -> bool {
    let better = if MAX { x > best } else { x < best };
    !is_nan(best) & (is_nan(x) | better)
}

/// Independent accumulators of `fold_lanes`: enough to keep the widest vector unit busy
/// (four 8-wide AVX-512 registers of f64 partial sums), and fixed, so the order of additions
/// is the same on every machine whatever its vector width.
const LANES: usize = 32;

/// Folds `xs` through `LANES` independent lanes combined in a fixed tree. The loop vectorises
/// (one running float accumulator would serialise on its adds) and the order is still fixed.
#[inline(always)]
fn fold_lanes<T: Copy, A: Copy>(xs: &[T], id: A, f: impl Fn(A, T) -> A, op: impl Fn(A, A) -> A) -> A {
    let mut lanes = [id; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..LANES {
            lanes[k] = f(lanes[k], c[k]);
        }
    }
    // pairwise: lanes k and k + w for w = 16, 8, 4, 2, 1
    let mut w = LANES / 2;
    while w > 0 {
        for k in 0..w {
            lanes[k] = op(lanes[k], lanes[k + w]);
        }
        w /= 2;
    }
    let mut t = lanes[0];
    for &x in tail {
        t = f(t, x);
    }
    t
}

/// The maximum (`MAX`) or minimum of `xs`, NaN if any element is (the identity when empty).
#[inline(always)]
pub fn extreme<T: Bounds, const MAX: bool>(xs: &[T]) -> T {
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    // A NaN x replaces the lane; once a lane is NaN nothing compares above it, so it stays
    // (a cheaper select than `beats`, which also keeps the first of equal values).
    let best = |a: T, x: T| if (if MAX { x > a } else { x < a }) | is_nan(x) { x } else { a };
    fold_lanes(xs, id, best, |a, b| if beats::<T, MAX>(b, a) { b } else { a })
}

/// sum of e^(x - shift) over a run, for logsumexp: float32 through the vectorised exp (in
/// stack blocks) and `simd::sum`, float64 through libm; both summed in f64.
pub trait ExpSum: Element {
    fn exp_sum(xs: &[Self], shift: f64) -> f64;
}
impl ExpSum for f32 {
    #[inline]
    fn exp_sum(xs: &[f32], shift: f64) -> f64 {
        let mut buf = [0f32; crate::simd::sum::BLOCK];
        let mut total = 0.0;
        for c in xs.chunks(crate::simd::sum::BLOCK) {
            let b = &mut buf[..c.len()];
            crate::simd::map1(crate::simd::math::ExpShift(shift as f32), b, c);
            total += crate::simd::sum::sum(b);
        }
        total
    }
}
impl ExpSum for f64 {
    #[inline]
    fn exp_sum(xs: &[f64], shift: f64) -> f64 {
        fold_lanes(xs, 0.0f64, |a, x| a + (x - shift).exp(), |a, b| a + b)
    }
}

/// Whether `T` is f32.
#[inline(always)]
fn is_f32<T: Element>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
}

/// `xs` as a float32 slice when `T` is f32.
#[inline(always)]
fn as_f32<T: Element>(xs: &[T]) -> Option<&[f32]> {
    if is_f32::<T>() {
        // SAFETY: T is f32 (same TypeId), so the slice's memory holds f32 values.
        Some(unsafe { std::slice::from_raw_parts(xs.as_ptr() as *const f32, xs.len()) })
    } else {
        None
    }
}

/// sum and prod (`PROD`), and mean (`div` = the element count), of `T` cast to the result
/// dtype `D` element by element (torch's `dtype=` casts the input first).
pub struct SumProd<T, D: Accum, const PROD: bool> {
    pub out: SendPtr<D>,
    pub div: Option<f64>,
    _t: PhantomData<fn(T)>,
}

impl<T, D: Accum, const PROD: bool> Clone for SumProd<T, D, PROD> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, D: Accum, const PROD: bool> Copy for SumProd<T, D, PROD> {}

impl<T: Element, D: Accum, const PROD: bool> SumProd<T, D, PROD> {
    pub fn new(out: *mut D, div: Option<f64>) -> Self {
        SumProd { out: SendPtr(out), div, _t: PhantomData }
    }
    #[inline(always)]
    fn op(a: D::A, b: D::A) -> D::A {
        if PROD { D::mul(a, b) } else { D::add(a, b) }
    }
    /// An output's value from its accumulator: narrowed, or (a mean) divided by the count.
    #[inline(always)]
    fn result(acc: D::A, div: Option<f64>) -> D {
        match div {
            None => D::narrow(acc),
            Some(n) => D::from_f64(D::acc_to_f64(acc) / n),
        }
    }
}

impl<T: Element, D: Accum, const PROD: bool> Reducer for SumProd<T, D, PROD> {
    type In = T;
    type Acc = D::A;
    const SWEEP4: bool = true;
    #[inline(always)]
    fn init(&self, _o: usize) -> D::A {
        if PROD { D::ONE } else { D::ZERO }
    }
    #[inline(always)]
    fn step(&self, acc: D::A, x: T, _i: usize) -> D::A {
        Self::op(acc, D::cast_from(x).widen())
    }
    #[inline(always)]
    fn step4(&self, acc: D::A, xs: [T; 4], i: usize) -> D::A {
        if PROD {
            self.step(self.step(self.step(self.step(acc, xs[0], i), xs[1], i), xs[2], i), xs[3], i)
        } else {
            D::add(acc, D::sum4(xs.map(|x| D::cast_from(x))))
        }
    }
    #[inline(always)]
    fn merge(&self, a: D::A, b: D::A) -> D::A {
        Self::op(a, b)
    }
    unsafe fn write(&self, o: usize, acc: D::A) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        *self.out.get().add(o) = Self::result(acc, self.div);
    }
    #[inline(always)]
    unsafe fn write_run(&self, o0: usize, accs: &[D::A]) {
        // SAFETY: outputs o0..o0 + accs.len() are below the output length and this call's
        // alone (trait contract), and outputs never overlap the accumulators.
        let out = std::slice::from_raw_parts_mut(self.out.get().add(o0), accs.len());
        // one plain map per `div` case (the branch hoisted out of the loop, which vectorises)
        match self.div {
            None => out.iter_mut().zip(accs).for_each(|(o, &a)| *o = Self::result(a, None)),
            div => out.iter_mut().zip(accs).for_each(|(o, &a)| *o = Self::result(a, div)),
        }
    }
    #[inline(always)]
    fn fold_slice(&self, acc: D::A, xs: &[T], _i0: usize) -> D::A {
        if !PROD {
            if let Some(t) = as_f32(xs).and_then(D::sum_f32_run) {
                return Self::op(acc, t);
            }
        }
        let t = fold_lanes(xs, self.init(0), |a, x| Self::op(a, D::cast_from(x).widen()), Self::op);
        Self::op(acc, t)
    }
    unsafe fn fold_packed(&self, first: *const T, n: usize, o0: usize, o1: usize) -> bool {
        if PROD || !is_f32::<T>() || n == 0 {
            return false;
        }
        // SAFETY: T is f32 (same TypeId); rows o0..o1 of n elements from `first` lie inside
        // the input (the caller's contract).
        let xs = std::slice::from_raw_parts(first as *const f32, (o1 - o0) * n);
        // SAFETY: each o0 + k < o1 is written once (the caller's contract). `op(init, s)`:
        // what `fold_slice` returns for the row (so -0.0 sums to +0.0 alike).
        D::sum_f32_rows(xs, n, &mut |k, s| unsafe { self.write(o0 + k, Self::op(self.init(0), s)) })
    }
    #[inline(always)]
    unsafe fn fold_rows(&self, accs: &mut [D::A], first: *const T, stride: isize, len: usize) -> bool {
        // SAFETY: T is f32 when the TypeIds match; the rest is the caller's contract.
        !PROD && is_f32::<T>() && D::add_f32_rows(accs, first as *const f32, stride, len)
    }
    #[inline(always)]
    fn fold_wide(&self, acc: D::A, xs: &[T], i0: usize) -> D::A {
        if !PROD {
            if let Some(t) = as_f32(xs).and_then(D::sum_f32_run) {
                return Self::op(acc, t);
            }
        }
        crate::simd::exec(FoldSlice { r: self, acc, xs, i0 })
    }
}

/// amax / amin (and the all-reduce max() / min()), propagating NaN.
pub struct Extreme<T, const MAX: bool> {
    pub out: SendPtr<T>,
}
impl<T: Copy, const MAX: bool> Clone for Extreme<T, MAX> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy, const MAX: bool> Copy for Extreme<T, MAX> {}

impl<T: Bounds, const MAX: bool> Reducer for Extreme<T, MAX> {
    type In = T;
    type Acc = T;
    #[inline(always)]
    fn init(&self, _o: usize) -> T {
        if MAX { T::LOWEST } else { T::HIGHEST }
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T, _i: usize) -> T {
        if beats::<T, MAX>(x, acc) { x } else { acc }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        self.step(a, b, 0)
    }
    unsafe fn write(&self, o: usize, acc: T) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        *self.out.get().add(o) = acc;
    }
    #[inline(always)]
    unsafe fn fold_rows(&self, accs: &mut [T], first: *const T, stride: isize, len: usize) -> bool {
        // SAFETY: the caller's contract.
        unsafe { T::extreme_rows::<MAX>(accs, first, stride, len) }
    }
    /// Any grouping gives the same extreme (or NaN), so lanes are safe here.
    #[inline(always)]
    fn fold_slice(&self, acc: T, xs: &[T], _i0: usize) -> T {
        self.merge(acc, T::extreme_slice::<MAX>(xs))
    }
    #[inline(always)]
    fn fold_wide(&self, acc: T, xs: &[T], i0: usize) -> T {
        if T::VECTOR {
            return self.fold_slice(acc, xs, i0);
        }
        crate::simd::exec(FoldSlice { r: self, acc, xs, i0 })
    }
}

/// max(dim) / min(dim) (values and indices) and argmax / argmin (indices only): the first
/// extreme element, or the first NaN.
pub struct ArgExtreme<T, const MAX: bool> {
    pub values: Option<SendPtr<T>>,
    pub indices: SendPtr<i64>,
}
impl<T: Copy, const MAX: bool> Clone for ArgExtreme<T, MAX> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy, const MAX: bool> Copy for ArgExtreme<T, MAX> {}

impl<T: Bounds, const MAX: bool> Reducer for ArgExtreme<T, MAX> {
    type In = T;
    type Acc = (T, usize);
    /// Index 0 is only kept by a partial whose elements all equal the identity; such a
    /// partial never beats an earlier one, and for the first partial index 0 is right.
    #[inline(always)]
    fn init(&self, _o: usize) -> (T, usize) {
        (if MAX { T::LOWEST } else { T::HIGHEST }, 0)
    }
    #[inline(always)]
    fn step(&self, acc: (T, usize), x: T, i: usize) -> (T, usize) {
        if beats::<T, MAX>(x, acc.0) { (x, i) } else { acc }
    }
    #[inline(always)]
    fn merge(&self, a: (T, usize), b: (T, usize)) -> (T, usize) {
        if beats::<T, MAX>(b.0, a.0) { b } else { a }
    }
    /// Two passes over the (cached) run: its extreme through the vectorised lanes, then the
    /// first position holding it (or the first NaN); ties keep the earlier partial.
    #[inline(always)]
    fn fold_slice(&self, acc: (T, usize), xs: &[T], i0: usize) -> (T, usize) {
        // The extreme's value is what matters (which NaN, or which of 0.0 and -0.0, does not:
        // the element itself is reported below).
        let m = T::extreme_slice::<MAX>(xs);
        if xs.is_empty() || !beats::<T, MAX>(m, acc.0) {
            return acc;
        }
        // m is one of xs (lanes only select); report the element itself (0.0 == -0.0).
        let k = T::position_slice(xs, m).min(xs.len() - 1);
        (xs[k], i0 + k)
    }
    #[inline(always)]
    fn fold_wide(&self, acc: (T, usize), xs: &[T], i0: usize) -> (T, usize) {
        if T::VECTOR {
            return self.fold_slice(acc, xs, i0);
        }
        crate::simd::exec(FoldSlice { r: self, acc, xs, i0 })
    }
    unsafe fn write(&self, o: usize, acc: (T, usize)) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        if let Some(v) = self.values {
            *v.get().add(o) = acc.0;
        }
        *self.indices.get().add(o) = acc.1 as i64;
    }
}

/// all (`ALL`) and any: truthiness of every element (NaN is true, as in torch).
pub struct AllAny<T, const ALL: bool> {
    pub out: SendPtr<bool>,
    _t: PhantomData<fn(T)>,
}
impl<T, const ALL: bool> Clone for AllAny<T, ALL> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const ALL: bool> Copy for AllAny<T, ALL> {}
impl<T, const ALL: bool> AllAny<T, ALL> {
    pub fn new(out: *mut bool) -> Self {
        AllAny { out: SendPtr(out), _t: PhantomData }
    }
}

impl<T: Element, const ALL: bool> Reducer for AllAny<T, ALL> {
    type In = T;
    type Acc = bool;
    #[inline(always)]
    fn init(&self, _o: usize) -> bool {
        ALL
    }
    #[inline(always)]
    fn step(&self, acc: bool, x: T, _i: usize) -> bool {
        if ALL { acc & x.to_bool() } else { acc | x.to_bool() }
    }
    #[inline(always)]
    fn merge(&self, a: bool, b: bool) -> bool {
        if ALL { a & b } else { a | b }
    }
    unsafe fn write(&self, o: usize, acc: bool) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        *self.out.get().add(o) = acc;
    }
}

/// count_nonzero, into int64.
pub struct CountNonzero<T> {
    pub out: SendPtr<i64>,
    _t: PhantomData<fn(T)>,
}
impl<T> Clone for CountNonzero<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for CountNonzero<T> {}
impl<T> CountNonzero<T> {
    pub fn new(out: *mut i64) -> Self {
        CountNonzero { out: SendPtr(out), _t: PhantomData }
    }
}

impl<T: Element> Reducer for CountNonzero<T> {
    type In = T;
    type Acc = i64;
    #[inline(always)]
    fn init(&self, _o: usize) -> i64 {
        0
    }
    #[inline(always)]
    fn step(&self, acc: i64, x: T, _i: usize) -> i64 {
        acc + x.to_bool() as i64
    }
    #[inline(always)]
    fn merge(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    unsafe fn write(&self, o: usize, acc: i64) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        *self.out.get().add(o) = acc;
    }
}

/// Which vector norm `Norm` computes (torch's special-cased orders and the general p).
pub mod norm_kind {
    pub const TWO: u8 = 0;
    pub const ONE: u8 = 1;
    pub const INF: u8 = 2;
    pub const NEG_INF: u8 = 3;
    pub const ZERO: u8 = 4;
    pub const P: u8 = 5;
}

/// Vector p-norms of a float input into float dtype `D`, accumulated in f64 (the 2-norm of
/// float32 runs squares and adds in float32 lanes first, `simd::sum`).
pub struct Norm<T, D, const K: u8> {
    pub out: SendPtr<D>,
    pub p: f64,
    _t: PhantomData<fn(T)>,
}
impl<T, D: Copy, const K: u8> Clone for Norm<T, D, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, D: Copy, const K: u8> Copy for Norm<T, D, K> {}
impl<T, D, const K: u8> Norm<T, D, K> {
    pub fn new(out: *mut D, p: f64) -> Self {
        Norm { out: SendPtr(out), p, _t: PhantomData }
    }
}

impl<T: Element, D: Element, const K: u8> Reducer for Norm<T, D, K> {
    type In = T;
    type Acc = f64;
    #[inline(always)]
    fn init(&self, _o: usize) -> f64 {
        if K == norm_kind::NEG_INF { f64::INFINITY } else { 0.0 }
    }
    #[inline(always)]
    fn step(&self, acc: f64, x: T, _i: usize) -> f64 {
        let a = x.to_f64().abs();
        match K {
            // float32 squares round to float32 as torch's (and `sum_sq`'s) do, so a square that
            // underflows to a subnormal or overflows to inf does so here too (a*a is exact in f64).
            norm_kind::TWO if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() => acc + (a * a) as f32 as f64,
            norm_kind::TWO => acc + a * a,
            norm_kind::ONE => acc + a,
            norm_kind::INF => if beats::<f64, true>(a, acc) { a } else { acc },
            norm_kind::NEG_INF => if beats::<f64, false>(a, acc) { a } else { acc },
            norm_kind::ZERO => acc + (a != 0.0) as u8 as f64,
            _ => acc + a.powf(self.p),
        }
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        match K {
            norm_kind::INF => if beats::<f64, true>(b, a) { b } else { a },
            norm_kind::NEG_INF => if beats::<f64, false>(b, a) { b } else { a },
            _ => a + b,
        }
    }
    unsafe fn write(&self, o: usize, acc: f64) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        let v = match K {
            norm_kind::TWO => acc.sqrt(),
            norm_kind::P => acc.powf(1.0 / self.p),
            _ => acc,
        };
        *self.out.get().add(o) = D::from_f64(v);
    }
    #[inline(always)]
    fn fold_slice(&self, acc: f64, xs: &[T], _i0: usize) -> f64 {
        if K == norm_kind::TWO {
            // float32: the squares and their sum in one vector pass, in float32 as torch does.
            if let Some(xs) = as_f32(xs) {
                return acc + crate::simd::sum::sum_sq(xs);
            }
        }
        self.merge(acc, fold_lanes(xs, self.init(0), |a, x| self.step(a, x, 0), |a, b| self.merge(a, b)))
    }
    #[inline(always)]
    fn fold_wide(&self, acc: f64, xs: &[T], i0: usize) -> f64 {
        match as_f32(xs) {
            Some(xs) if K == norm_kind::TWO => acc + crate::simd::sum::sum_sq(xs),
            _ => crate::simd::exec(FoldSlice { r: self, acc, xs, i0 }),
        }
    }
}

/// The second pass of var/std: squared deviations from each output's mean (two-pass in f64,
/// as accurate as torch's Welford), divided by `max(0, N - correction)`.
#[derive(Clone, Copy)]
pub struct SquaredDeviation<'a, T> {
    pub means: &'a [f64],
    pub out: SendPtr<T>,
    pub divisor: f64,
    pub sqrt: bool,
}

impl<T: Element> Reducer for SquaredDeviation<'_, T> {
    type In = T;
    type Acc = (f64, f64);
    #[inline(always)]
    fn init(&self, o: usize) -> (f64, f64) {
        (self.means.get(o).copied().unwrap_or(f64::NAN), 0.0)
    }
    #[inline(always)]
    fn step(&self, (mean, m2): (f64, f64), x: T, _i: usize) -> (f64, f64) {
        let d = x.to_f64() - mean;
        (mean, m2 + d * d)
    }
    #[inline(always)]
    fn merge(&self, a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        (a.0, a.1 + b.1)
    }
    unsafe fn write(&self, o: usize, (_, m2): (f64, f64)) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        let v = m2 / self.divisor;
        *self.out.get().add(o) = T::from_f64(if self.sqrt { v.sqrt() } else { v });
    }
    #[inline(always)]
    fn fold_slice(&self, (mean, m2): (f64, f64), xs: &[T], _i0: usize) -> (f64, f64) {
        let sq = |a: f64, x: T| {
            let d = x.to_f64() - mean;
            a + d * d
        };
        (mean, m2 + fold_lanes(xs, 0.0, sq, |a, b| a + b))
    }
}

/// The second pass of logsumexp: `log(sum(exp(x - shift))) + shift`, where the shift is each
/// output's max (0 where that max is infinite, as torch masks it).
#[derive(Clone, Copy)]
pub struct LogSumExp<'a, T, D> {
    pub shifts: &'a [f64],
    pub out: SendPtr<D>,
    pub _t: PhantomData<fn(T)>,
}

impl<T: ExpSum, D: Element> Reducer for LogSumExp<'_, T, D> {
    type In = T;
    type Acc = (f64, f64);
    #[inline(always)]
    fn init(&self, o: usize) -> (f64, f64) {
        (self.shifts.get(o).copied().unwrap_or(f64::NAN), 0.0)
    }
    #[inline(always)]
    fn step(&self, (shift, s): (f64, f64), x: T, _i: usize) -> (f64, f64) {
        (shift, s + (x.to_f64() - shift).exp())
    }
    #[inline(always)]
    fn merge(&self, a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        (a.0, a.1 + b.1)
    }
    unsafe fn write(&self, o: usize, (shift, s): (f64, f64)) {
        // SAFETY: o is below the output length the buffers were allocated for (trait contract).
        *self.out.get().add(o) = D::from_f64(s.ln() + shift);
    }
    #[inline(always)]
    fn fold_slice(&self, (shift, s): (f64, f64), xs: &[T], _i0: usize) -> (f64, f64) {
        (shift, s + T::exp_sum(xs, shift))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_propagates_nan_and_keeps_first_tie() {
        assert!(beats::<f32, true>(2.0, 1.0));
        assert!(!beats::<f32, true>(1.0, 1.0));
        assert!(beats::<f32, true>(f32::NAN, 1.0));
        assert!(!beats::<f32, true>(5.0, f32::NAN));
        assert!(!beats::<f32, true>(f32::NAN, f32::NAN));
        assert!(beats::<i64, false>(-3, 2));
        assert!(beats::<bool, true>(true, false));
    }

    #[test]
    fn lanes_match_a_plain_sum_for_exact_values() {
        let xs: Vec<i32> = (0..37).collect();
        let mut out = 0i64;
        let r = SumProd::<i32, i64, false>::new(&mut out, None);
        assert_eq!(r.fold_slice(5, &xs, 0), 5 + (0..37).sum::<i64>());
        let p = SumProd::<i32, i64, true>::new(&mut out, None);
        assert_eq!(p.fold_slice(1, &xs[1..11], 0), (1..11).product::<i64>());
    }
}
