//! The fast path of `+ - * /`, out of place and in place (small calls on the calling thread,
//! large ones split over the threads through `parallel::for_split`).
//!
//! The fixed cost of `x + y` or `x.add_(y)` on small tensors is mostly layout work (broadcast
//! shapes, the iterator layout, broadcast strides, the kernel's run plan) and the tensor
//! handles it clones, none of which can change the answer when the operands are row-major
//! float tensors of one dtype on the CPU: the same shape, one a row broadcast over the other
//! (its shape, leading 1s dropped, is the other's trailing dims: `x + bias`), or one tensor and
//! a Python number. Each element is then the general path's closure (`compute::float_fn!`)
//! applied to the same two elements (a number rounded to the dtype first, as the general path's
//! 0-d operand is), so the bits are the general path's. Every other call returns None / false
//! and takes the general path, which also raises every error.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::tensor::Tensor;
use super::compute::{logaddexp, py_floor_div, py_fmod, xlogy};
use super::BinaryOp;

/// Below this many elements the fast path runs the loop on the calling thread; from it, the
/// same loop is split over the threads (`parallel::for_split`, from the general kernels' own
/// thresholds: `split_threshold(3)` out of place, `(2)` in place), each piece with its own
/// start column in a row. (The bindings borrow the Python objects' tensors without releasing
/// the GIL only below `GIL_RELEASE_ELEMS` = this size; larger calls reach here through `run`.)
pub(crate) const FAST_MAX: usize = 1 << 15;

/// True when `t` is laid out exactly as `Tensor::empty` lays out its shape (row-major strides,
/// size-1 dims included), so a fresh contiguous result is what torch's TensorIterator gives.
pub(crate) fn row_major(t: &Tensor) -> bool {
    let mut acc = 1isize;
    for (&d, &s) in t.shape().iter().zip(t.strides()).rev() {
        if s != acc {
            return false;
        }
        acc *= d.max(1) as isize;
    }
    true
}

/// A binary op's operand, borrowed: what `ops::Arg` holds, without the copy of a tensor's
/// handle (the bindings call the fast path with the Python objects' own tensors).
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Number(Scalar),
}

impl<'a> Operand<'a> {
    pub fn of(arg: &'a crate::ops::Arg) -> Operand<'a> {
        match arg {
            crate::ops::Arg::Tensor(t) => Operand::Tensor(t),
            crate::ops::Arg::Scalar(s) => Operand::Number(*s),
        }
    }

    pub fn tensor(self) -> Option<&'a Tensor> {
        match self {
            Operand::Tensor(t) => Some(t),
            Operand::Number(_) => None,
        }
    }

    /// The owned argument the general path takes (a clone of the tensor's handle).
    pub fn to_arg(self) -> crate::ops::Arg {
        match self {
            Operand::Tensor(t) => crate::ops::Arg::Tensor(t.clone()),
            Operand::Number(s) => crate::ops::Arg::Scalar(s),
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Operand::Tensor(t) => t.shape(),
            Operand::Number(_) => &[],
        }
    }
}

/// The second operand of a fast loop: a number, or a row of `len` elements that repeats over
/// the full operand (the full operand's own shape when `len` is its length).
#[derive(Clone, Copy)]
enum Other<'a, T> {
    Number(T),
    Row(&'a [T]),
}

/// Calls `seg(pos, col, len)` for the segments of `n` elements that start at column `col0` of
/// rows of `cols` elements: each segment ends at a row end (or at `n`).
#[inline(always)]
fn segments(n: usize, cols: usize, col0: usize, mut seg: impl FnMut(usize, usize, usize)) {
    let (mut pos, mut col) = (0, col0);
    while pos < n {
        let len = (cols - col).min(n - pos);
        seg(pos, col, len);
        pos += len;
        col = 0;
    }
}

/// `dst = f(full, other)` (or `f(other, full)` when `other_first`) over slices, as a
/// `simd::exec` body; a row is applied along rows of `row.len()`, the slices starting at
/// column `col0` of a row (a piece of a split call starts anywhere).
struct Flat<'a, T, F> {
    dst: &'a mut [T],
    full: &'a [T],
    other: Other<'a, T>,
    other_first: bool,
    col0: usize,
    f: &'a F,
}

impl<T: Copy, F: Fn(T, T) -> T> crate::kernels::simd::Body for Flat<'_, T, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let (f, dst, full) = (self.f, self.dst, self.full);
        match (self.other, self.other_first) {
            (Other::Row(r), false) => segments(dst.len(), r.len(), self.col0, |p, c, n| {
                for ((o, &x), &y) in dst[p..p + n].iter_mut().zip(&full[p..p + n]).zip(&r[c..c + n]) {
                    *o = f(x, y);
                }
            }),
            (Other::Row(r), true) => segments(dst.len(), r.len(), self.col0, |p, c, n| {
                for ((o, &x), &y) in dst[p..p + n].iter_mut().zip(&full[p..p + n]).zip(&r[c..c + n]) {
                    *o = f(y, x);
                }
            }),
            (Other::Number(s), false) => {
                for (o, &x) in dst.iter_mut().zip(full) {
                    *o = f(x, s);
                }
            }
            (Other::Number(s), true) => {
                for (o, &x) in dst.iter_mut().zip(full) {
                    *o = f(s, x);
                }
            }
        }
    }
}

/// `xs = f(xs, other)` in place, or `f(x, x)` when `other` is `xs` itself (`same`); a row as
/// in `Flat`.
struct FlatInPlace<'a, T, F> {
    xs: &'a mut [T],
    other: Option<Other<'a, T>>,
    col0: usize,
    f: &'a F,
}

impl<T: Copy, F: Fn(T, T) -> T> crate::kernels::simd::Body for FlatInPlace<'_, T, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let (f, xs) = (self.f, self.xs);
        match self.other {
            Some(Other::Row(r)) => segments(xs.len(), r.len(), self.col0, |p, c, n| {
                for (x, &y) in xs[p..p + n].iter_mut().zip(&r[c..c + n]) {
                    *x = f(*x, y);
                }
            }),
            Some(Other::Number(s)) => {
                for x in xs.iter_mut() {
                    *x = f(*x, s);
                }
            }
            None => {
                for x in xs.iter_mut() {
                    *x = f(*x, *x);
                }
            }
        }
    }
}

/// Runs `body` as the general kernels run their slice loops (`elementwise::wide`: 256-bit
/// vectors from 64 elements), so both paths give the same bits at the same speed.
#[inline(always)]
fn exec<B: crate::kernels::simd::Body<Output = ()>>(n: usize, body: B) {
    crate::kernels::elementwise::wide(n, body)
}

/// Runs `piece(start, end)` over `[0, n)`: at once below `FAST_MAX`, else split over the
/// threads from the general kernels' threshold for an op of `cost` streams.
#[inline(always)]
fn split(n: usize, cost: usize, piece: impl Fn(usize, usize) + Sync + Send) {
    use crate::kernels::parallel::{for_split, split_threshold};
    if n < FAST_MAX {
        piece(0, n)
    } else {
        for_split(n, split_threshold(cost), piece)
    }
}

/// A pointer a split call's pieces share (each piece makes its own disjoint slices from it).
use crate::kernels::parallel::SendPtr as Shared;

/// An op, alpha and first operand the fast path can take: + - * / with alpha 1 on a non-empty
/// row-major float tensor on the CPU.
fn fast_op(op: BinaryOp, alpha: Option<Scalar>, t: &Tensor) -> bool {
    let alpha_one = match alpha {
        None | Some(Scalar::Int(1)) => true,
        Some(Scalar::Float(v)) => v == 1.0,
        _ => false,
    };
    let n = t.numel();
    alpha_one
        && matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div)
        && matches!(t.dtype(), DType::Float32 | DType::Float64)
        && n != 0
        && t.device().is_cpu()
        && row_major(t)
}

/// True when `row` broadcasts over `full` as a row: its shape, leading 1s dropped, is `full`'s
/// trailing dims, and it has no more dims than `full` (so the result has `full`'s shape).
fn is_row_of(row: &[usize], full: &[usize]) -> bool {
    let lead = row.iter().take_while(|&&d| d == 1).count();
    let tail = &row[lead..];
    row.len() <= full.len() && full.ends_with(tail)
}

/// `y` can join a fast call with `t` (checked by `fast_op`): same dtype, CPU, row-major.
fn fast_partner(t: &Tensor, y: &Tensor) -> bool {
    y.dtype() == t.dtype() && y.device().is_cpu() && row_major(y)
}

/// A Python number a float fast call can take (a bool promotes differently: general path).
fn fast_number(s: Scalar) -> bool {
    !matches!(s, Scalar::Bool(_))
}

/// Out-of-place `op(a, b)` by the fast path, or None for the general path.
pub(crate) fn fast_binary(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, alpha: Option<Scalar>) -> crate::error::Result<Option<Tensor>> {
    // (full operand, other operand, other comes first in the op)
    let (full, other, other_first) = match (a, b) {
        (Operand::Tensor(x), Operand::Tensor(y)) => {
            if x.shape() == y.shape() || is_row_of(y.shape(), x.shape()) {
                (x, b, false)
            } else if is_row_of(x.shape(), y.shape()) {
                (y, a, true)
            } else {
                return Ok(None);
            }
        }
        (Operand::Tensor(x), Operand::Number(s)) if fast_number(s) => (x, b, false),
        (Operand::Number(s), Operand::Tensor(y)) if fast_number(s) => (y, a, true),
        _ => return Ok(None),
    };
    if !fast_op(op, alpha, full) {
        return Ok(None);
    }
    if let Operand::Tensor(y) = other {
        if !fast_partner(full, y) {
            return Ok(None);
        }
    }
    let n = full.numel();
    let out = Tensor::empty(full.shape(), full.dtype())?;
    macro_rules! go {
        ($T:ty, $f:ident) => {{
            let (d, x) = (Shared(out.data_ptr::<$T>()), Shared(full.data_ptr::<$T>()));
            // SAFETY: a tensor `other` is row-major inside its storage (checked above), so
            // the slice covers exactly its elements; its length divides n (its dims are
            // `full`'s trailing dims) and it does not overlap the fresh `out`.
            let other = unsafe {
                match other {
                    Operand::Tensor(y) => Other::Row(std::slice::from_raw_parts(y.data_ptr::<$T>() as *const $T, y.numel())),
                    Operand::Number(s) => Other::Number(<$T>::from_scalar(s)),
                }
            };
            let f = &$f;
            split(n, 3, |s, e| {
                // SAFETY: `out` is fresh (no other handle sees it) and row-major with n
                // elements, `full` row-major inside its storage (checked above): [s, e) of
                // each is theirs, disjoint from every other piece's, and `out` overlaps
                // neither input.
                let (dst, xs) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(d.get().add(s), e - s),
                        std::slice::from_raw_parts(x.get().add(s) as *const $T, e - s),
                    )
                };
                let col0 = match other {
                    Other::Row(r) => s % r.len(),
                    Other::Number(_) => 0,
                };
                exec(e - s, Flat { dst, full: xs, other, other_first, col0, f })
            })
        }};
    }
    match full.dtype() {
        DType::Float32 => float_fn!(op, f32, f => go!(f32, f)),
        _ => float_fn!(op, f64, f => go!(f64, f)),
    }
    Ok(Some(out))
}

/// In-place `a.op_(b)` by the fast path, as a write through `ops::write::write_direct`
/// (the version bump; its overlap checks send aliasing operands to the general path).
/// The caller has run the in-place autograd checks and records nothing. False: not taken,
/// nothing was written.
pub(crate) fn fast_binary_(op: BinaryOp, a: &Tensor, b: Operand<'_>, alpha: Option<Scalar>) -> bool {
    if !fast_op(op, alpha, a) {
        return false;
    }
    match b {
        Operand::Tensor(y) if fast_partner(a, y) && is_row_of(y.shape(), a.shape()) => {}
        Operand::Number(s) if fast_number(s) => {}
        _ => return false,
    }
    let n = a.numel();
    crate::ops::write::write_direct(a, b.tensor(), |same| {
        macro_rules! go {
            ($T:ty, $f:ident) => {{
                let xp = Shared(a.data_ptr::<$T>());
                // SAFETY: a tensor `b` is a row-major row whose length divides n and which
                // either shares no memory with `a` or is exactly `a` (`same`, read through
                // `xs` itself): `write_direct` refuses every other overlap.
                let other = unsafe {
                    match b {
                        Operand::Tensor(_) if same => None,
                        Operand::Tensor(y) => Some(Other::Row(std::slice::from_raw_parts(y.data_ptr::<$T>() as *const $T, y.numel()))),
                        Operand::Number(s) => Some(Other::Number(<$T>::from_scalar(s))),
                    }
                };
                let f = &$f;
                let run = |s: usize, e: usize| {
                    // SAFETY: `a` is row-major with n elements inside its storage (`fast_op`);
                    // [s, e) is this piece's alone.
                    let xs = unsafe { std::slice::from_raw_parts_mut(xp.get().add(s), e - s) };
                    let col0 = match other {
                        Some(Other::Row(r)) => s % r.len(),
                        _ => 0,
                    };
                    exec(e - s, FlatInPlace { xs, other, col0, f })
                };
                split(n, 2, |s, e| {
                    // The head before the first 64-byte boundary first, so the main loop's
                    // stores each fall in one cache line (`simd::aligned_head`: NumPy's large
                    // arrays start 16 bytes past one).
                    // SAFETY: as in `run` (only the address is read).
                    let m = s + crate::kernels::simd::aligned_head(unsafe { std::slice::from_raw_parts(xp.get().add(s), e - s) });
                    run(s, m);
                    run(m, e)
                })
            }};
        }
        match a.dtype() {
            DType::Float32 => float_fn!(op, f32, f => go!(f32, f)),
            _ => float_fn!(op, f64, f => go!(f64, f)),
        }
    })
}
