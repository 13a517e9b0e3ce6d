//! 2-d convolution as im2col + gemm, over contiguous NCHW buffers.
//!
//! `im2col` unfolds the receptive field of every output pixel into a column, so that one group's
//! convolution is one matrix product: `out[Cout_g, P] = W[Cout_g, Cin_g·KH·KW] @ cols[Cin_g·KH·KW, P]`
//! (P = OH·OW). The two gradients are the same products transposed: `cols = Wᵀ @ grad` folded
//! back by `col2im` (input gradient) and `grad @ colsᵀ` (weight gradient).
//!
//! Output planes of at least `per_image::MIN_PIXELS` pixels take `conv/per_image.rs` instead:
//! one image per task, the product transposed so that gemm writes NCHW directly. Smaller ones:
//! images are processed in chunks of `nb`: their columns sit side by side in one matrix of
//! [Cin·KH·KW, nb·P] elements (bounded by `COLS_BUDGET`), so each group is ONE gemm over nb·P
//! columns instead of nb thin ones; the results are then scattered to NCHW.
//!
//! Determinism: every output element is written by one task in an order fixed by the sizes (gemm
//! splits output blocks across threads, never k); the weight gradient accumulates the chunks one
//! after another, and the chunk size depends on the geometry only, not on the thread count.

#[doc(hidden)]
pub mod bench_paths;
mod per_image;
mod scratch;
mod small_k;
mod unfold;
pub mod winograd;
pub use unfold::{col2im, col2im_masked, im2col, mask_row, taps, unfold_row, valid_outputs, Tap};

use crate::error::Result;
use super::matmul::{panels, MatElem};
use super::parallel::SendPtr;
use scratch::Buf;
use std::ops::AddAssign;

/// Element types the conv and pooling kernels run on (f32, f64).
pub trait ConvElem: MatElem + scratch::Pooled + AddAssign + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> {
    /// `self · b + c` with one rounding (an FMA instruction inside `simd::run`).
    fn mul_add(self, b: Self, c: Self) -> Self;
}
impl ConvElem for f32 {
    #[inline(always)]
    fn mul_add(self, b: f32, c: f32) -> f32 {
        f32::mul_add(self, b, c)
    }
}
impl ConvElem for f64 {
    #[inline(always)]
    fn mul_add(self, b: f64, c: f64) -> f64 {
        f64::mul_add(self, b, c)
    }
}

/// Sizes of one convolution (all already validated by the op layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub n: usize,
    pub c_in: usize,
    pub h: usize,
    pub w: usize,
    pub c_out: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

impl Geometry {
    fn cin_g(&self) -> usize {
        self.c_in / self.groups
    }
    fn cout_g(&self) -> usize {
        self.c_out / self.groups
    }
    /// Rows of one group's column matrix: Cin_g·KH·KW.
    fn rows_g(&self) -> usize {
        self.cin_g() * self.kh * self.kw
    }
    fn pixels(&self) -> usize {
        self.oh * self.ow
    }
    /// Input row (or column) read by output position `o` and kernel tap `k` along dim `d`,
    /// or None where it falls in the zero padding.
    #[cfg(test)]
    fn src(&self, d: usize, o: usize, k: usize) -> Option<usize> {
        let pos = (o * self.stride[d] + k * self.dilation[d]) as isize - self.padding[d] as isize;
        let size = if d == 0 { self.h } else { self.w };
        (pos >= 0 && (pos as usize) < size).then_some(pos as usize)
    }
}

/// Column-matrix elements (Cin·KH·KW × images·P) per chunk of images: big enough that the
/// gemm sees wide operands, small enough that the columns stay in the shared cache.
pub const COLS_BUDGET: usize = 1 << 22;
/// Work (m·n·k) of one product from which gemm is allowed to split it over rayon's threads.
pub const GEMM_PAR_WORK: usize = super::matmul::GEMM_PAR_MIN_WORK;
/// Elements a copy-like pass (unfold, scatter, regroup, col2im) must move before it runs in
/// parallel.
const COPY_PAR_ELEMS: usize = super::parallel::PAR_MIN_ELEMS;

/// Images per chunk: as many as fit `budget` column elements, at least one.
fn chunk_images(g: &Geometry, budget: usize) -> usize {
    let per_image = (g.c_in * g.kh * g.kw * g.pixels()).max(1);
    (budget / per_image).clamp(1, g.n.max(1))
}

/// Runs `f(i, chunk)` over the `size`-element chunks of `out`, in parallel when `work` elements
/// are moved in all and there is more than one thread.
fn for_each_chunk<T: Copy + Send>(out: &mut [T], size: usize, work: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if size == 0 {
        return;
    }
    if work >= COPY_PAR_ELEMS && rayon::current_num_threads() > 1 {
        // Through `for_split` (the calling thread works too), not par_chunks_mut, which from a
        // thread outside rayon's pool blocks the caller and costs two wake-ups per pass.
        let (len, at) = (out.len(), SendPtr(out.as_mut_ptr()));
        panels::for_each_index(len.div_ceil(size), |i| {
            let (lo, hi) = (i * size, ((i + 1) * size).min(len));
            // SAFETY: chunk i is out[lo..hi], disjoint from every other chunk; `out` is borrowed
            // mutably for the whole call.
            f(i, unsafe { std::slice::from_raw_parts_mut(at.get().add(lo), hi - lo) })
        });
    } else {
        out.chunks_mut(size).enumerate().for_each(|(i, c)| f(i, c));
    }
}

/// Runs `f(i, chunk i)` over the `size`-element chunks of `out` (the last may be shorter), on
/// rayon's threads when `par` and there are several chunks and threads; returns the error of
/// the lowest failing chunk. Through `for_split`, so the calling thread takes part and claims
/// whatever a late worker has not started: rayon's `par_chunks_mut` from a thread outside the
/// pool blocks the caller until the workers finish, and when another process holds a core a
/// worker can wake late; the Winograd forward of the bench's 64x16x8x8 conv then took 520-550
/// us on two threads against 270 on one (SCHED_FIFO, load ~13 on 2 cores).
fn try_for_each_chunk<T: Copy + Send>(out: &mut [T], size: usize, par: bool, f: impl Fn(usize, &mut [T]) -> Result<()> + Sync + Send) -> Result<()> {
    if size == 0 || out.is_empty() {
        return Ok(());
    }
    let count = out.len().div_ceil(size);
    if !par || count < 2 || rayon::current_num_threads() <= 1 {
        return out.chunks_mut(size).enumerate().try_for_each(|(i, c)| f(i, c));
    }
    let (len, at) = (out.len(), SendPtr(out.as_mut_ptr()));
    let failed = std::sync::Mutex::new(None);
    panels::for_each_index(count, |i| {
        let (lo, hi) = (i * size, ((i + 1) * size).min(len));
        // SAFETY: chunk i is out[lo..hi], disjoint from every other chunk; `out` is borrowed
        // mutably for the whole call.
        if let Err(e) = f(i, unsafe { std::slice::from_raw_parts_mut(at.get().add(lo), hi - lo) }) {
            let mut slot = failed.lock().unwrap_or_else(|p| p.into_inner());
            if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                *slot = Some((i, e));
            }
        }
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// One matrix operand: a slice read at `rs`/`cs` element strides.
#[derive(Clone, Copy)]
struct Mat<'a, T> {
    data: &'a [T],
    rs: usize,
    cs: usize,
}

/// `dst = a @ b`, or `dst += a @ b` with `accumulate`; dst is row- or column-major with the
/// given (row, column) strides. gemm splits the product over rayon's threads when m·n·k reaches `GEMM_PAR_WORK`.
#[allow(clippy::too_many_arguments)]
fn gemm<T: ConvElem>(m: usize, n: usize, k: usize, dst: &mut [T], dst_strides: (usize, usize), a: Mat<T>, b: Mat<T>, accumulate: bool) {
    let work = m.saturating_mul(n).saturating_mul(k);
    gemm_with(work >= GEMM_PAR_WORK, m, n, k, dst, dst_strides, a, b, accumulate)
}

/// `gemm` that splits over rayon's threads only if `threads` (false inside a parallel task);
/// the split is `matmul::panels`'.
#[allow(clippy::too_many_arguments)]
fn gemm_with<T: ConvElem>(threads: bool, m: usize, n: usize, k: usize, dst: &mut [T], (dst_rs, dst_cs): (usize, usize), a: Mat<T>, b: Mat<T>, accumulate: bool) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    dst[i * dst_rs + j * dst_cs] = T::zero();
                }
            }
        }
        return;
    }
    let last = |rs: usize, cs: usize, r: usize, c: usize| (r - 1) * rs + (c - 1) * cs;
    assert!(last(a.rs, a.cs, m, k) < a.data.len() && last(b.rs, b.cs, k, n) < b.data.len());
    assert!(last(dst_rs, dst_cs, m, n) < dst.len() && ((dst_cs == 1 && dst_rs >= n) || (dst_rs == 1 && dst_cs >= m)));
    let (zero, one) = (T::zero(), T::from_f64(1.0));
    let s = super::matmul::Strides {
        dst_rs: dst_rs as isize,
        dst_cs: dst_cs as isize,
        a_rs: a.rs as isize,
        a_cs: a.cs as isize,
        b_rs: b.rs as isize,
        b_cs: b.cs as isize,
    };
    // SAFETY: strides are non-negative and the asserts show the last (largest-offset) element
    // of each operand lies inside its slice, so every addressed element does. dst is row- or
    // column-major with lines at least a line's length apart, so its elements are distinct; dst is a `&mut`
    // slice, so it overlaps neither input (and is initialised: a slice). m, n, k are non-zero.
    // float_gemm: panels::gemm, with a column-major b whose column stride aliases in L1 (a
    // 32x32 image's 1024 pixels) copied apart first (matmul.rs)
    unsafe { super::matmul::float_gemm(m, n, k, dst.as_mut_ptr(), a.data.as_ptr(), b.data.as_ptr(), s, accumulate, threads, (one, zero)) }
}

/// Columns of images `first..first + nb` side by side: row r of image i at
/// `cols[r·nb·P + i·P ..]`. Rows are independent, so they are filled in parallel.
fn unfold_chunk<T: ConvElem>(x: &[T], first: usize, nb: usize, g: &Geometry, taps: &[Tap], cols: &mut [T]) {
    let (hw, p, k) = (g.h * g.w, g.pixels(), g.kh * g.kw);
    let (img, rs) = (g.c_in * hw, nb * p);
    for_each_chunk(&mut cols[..g.c_in * k * rs], rs, g.c_in * k * rs, |r, row| {
        let (c, t) = (r / k, &taps[r % k]);
        for (i, dst) in row.chunks_mut(p).enumerate() {
            let base = (first + i) * img + c * hw;
            unfold_row(&x[base..base + hw], t, g, dst);
        }
    });
}

/// The gradient of images `first..first + nb` as [Cout, nb·P]: one image's is already that
/// layout (a slice of `grad`); several are regrouped into `gr`.
fn grad_chunk<'a, T: ConvElem>(grad: &'a [T], first: usize, nb: usize, g: &Geometry, gr: &'a mut [T]) -> &'a [T] {
    let p = g.pixels();
    if nb == 1 {
        return &grad[first * g.c_out * p..(first + 1) * g.c_out * p];
    }
    regroup(grad, first, nb, g, gr);
    gr
}

/// `grad` of images `first..first + nb` regrouped as [Cout, nb·P] (channel-major), the layout
/// the gemm reads.
fn regroup<T: ConvElem>(grad: &[T], first: usize, nb: usize, g: &Geometry, gr: &mut [T]) {
    let p = g.pixels();
    let rs = nb * p;
    for_each_chunk(&mut gr[..g.c_out * rs], rs, g.c_out * rs, |co, row| {
        for (i, dst) in row.chunks_mut(p).enumerate() {
            let at = ((first + i) * g.c_out + co) * p;
            dst.copy_from_slice(&grad[at..at + p]);
        }
    });
}

/// Forward: `out[n] = conv(x[n], w) + bias`.
pub fn forward<T: ConvElem>(x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T], g: &Geometry) -> Result<()> {
    if per_image::suits_forward(g) {
        return per_image::forward(x, w, bias, out, g);
    }
    forward_in_chunks(x, w, bias, out, g, COLS_BUDGET)
}

pub(crate) fn forward_in_chunks<T: ConvElem>(x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    let (p, rows, cout_g) = (g.pixels(), g.rows_g(), g.cout_g());
    let out_img = g.c_out * p;
    if p == 0 || g.c_out == 0 || g.n == 0 {
        return Ok(());
    }
    let nb = chunk_images(g, budget);
    let taps = taps(g);
    let mut cols = Buf::<T>::new(&[g.c_in * g.kh * g.kw, nb, p])?;
    let mut y = Buf::<T>::new(&[nb, p, g.c_out])?;
    for first in (0..g.n).step_by(nb) {
        let nb = nb.min(g.n - first);
        let rs = nb * p;
        unfold_chunk(x, first, nb, g, &taps, &mut cols);
        // y is [Cout, nb·P] stored column-major (channel fastest): gemm's preferred output
        // layout, measured ~1.8x faster here than row-major for these thin products.
        for grp in 0..g.groups {
            let a = Mat { data: &w[grp * cout_g * rows..], rs: rows, cs: 1 };
            let b = Mat { data: &cols[grp * rows * rs..], rs, cs: 1 };
            gemm(cout_g, rs, rows, &mut y[grp * cout_g..], (1, g.c_out), a, b, false);
        }
        let y = &y;
        for_each_chunk(&mut out[first * out_img..(first + nb) * out_img], out_img, nb * out_img, |i, o| {
            let yi = &y[i * p * g.c_out..(i + 1) * p * g.c_out];
            for (co, plane) in o.chunks_mut(p).enumerate() {
                let b = bias.map_or(T::zero(), |b| b[co]);
                for (v, s) in plane.iter_mut().zip(yi[co..].iter().step_by(g.c_out)) {
                    *v = *s + b;
                }
            }
        });
    }
    Ok(())
}

/// Input gradient: `dx[n] = col2im(Wᵀ @ grad[n])`. `dx` is overwritten.
pub fn grad_input<T: ConvElem>(grad: &[T], w: &[T], dx: &mut [T], g: &Geometry) -> Result<()> {
    if per_image::suits_input_grad(g) {
        return per_image::grad_input(grad, w, dx, g);
    }
    grad_input_in_chunks(grad, w, dx, g, COLS_BUDGET)
}

pub(crate) fn grad_input_in_chunks<T: ConvElem>(grad: &[T], w: &[T], dx: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    let (p, rows, cout_g) = (g.pixels(), g.rows_g(), g.cout_g());
    let img = g.c_in * g.h * g.w;
    dx.fill(T::zero());
    if p == 0 || img == 0 || g.c_out == 0 || g.n == 0 {
        return Ok(());
    }
    let nb = chunk_images(g, budget);
    let taps = taps(g);
    let k = taps.len();
    let mut cols = Buf::<T>::new(&[g.c_in * k, nb, p])?;
    // One image needs no regrouping (its gradient is already [Cout, P]).
    let mut gr = Buf::<T>::new(&[if nb > 1 { g.c_out } else { 0 }, nb, p])?;
    for first in (0..g.n).step_by(nb) {
        let nb = nb.min(g.n - first);
        let rs = nb * p;
        let gsrc = grad_chunk(grad, first, nb, g, &mut gr);
        for grp in 0..g.groups {
            // a = W_gᵀ: element (r, co) of the transpose is w[co·rows + r].
            let a = Mat { data: &w[grp * cout_g * rows..], rs: 1, cs: rows };
            let b = Mat { data: &gsrc[grp * cout_g * rs..], rs, cs: 1 };
            gemm(rows, rs, cout_g, &mut cols[grp * rows * rs..], (rs, 1), a, b, false);
        }
        for_each_chunk(&mut cols[..g.c_in * k * rs], rs, g.c_in * k * rs, |r, row| {
            row.chunks_mut(p).for_each(|c| mask_row(&taps[r % k], g, c));
        });
        let cols = &cols;
        for_each_chunk(&mut dx[first * img..(first + nb) * img], img, nb * (img + g.c_in * k * p), |i, d| {
            col2im_masked(&cols[i * p..], rs, g.c_in, g, &taps, d);
        });
    }
    Ok(())
}

/// Weight gradient: `dw_g = Σ_chunks grad_g @ cols_gᵀ`, one product per group and chunk over
/// the chunk's nb·P columns, chunks accumulated in order. `dw` is overwritten.
pub fn grad_weight<T: ConvElem>(x: &[T], grad: &[T], dw: &mut [T], g: &Geometry) -> Result<()> {
    if per_image::suits(g) {
        return per_image::grad_weight(x, grad, dw, g);
    }
    grad_weight_in_chunks(x, grad, dw, g, COLS_BUDGET)
}

pub(crate) fn grad_weight_in_chunks<T: ConvElem>(x: &[T], grad: &[T], dw: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    let (p, rows, cout_g) = (g.pixels(), g.rows_g(), g.cout_g());
    if p == 0 || g.n == 0 {
        dw.fill(T::zero());
        return Ok(());
    }
    let nb = chunk_images(g, budget);
    let taps = taps(g);
    let mut cols = Buf::<T>::new(&[g.c_in * g.kh * g.kw, nb, p])?;
    let mut gr = Buf::<T>::new(&[if nb > 1 { g.c_out } else { 0 }, nb, p])?;
    // The sum is kept column-major ([rows, Cout_g] per group), gemm's preferred output layout
    // (measured ~2.5x faster than row-major for this long-k product), and transposed at the end.
    let mut acc = Buf::<T>::new(&[g.c_out, rows])?;
    for first in (0..g.n).step_by(nb) {
        let nb = nb.min(g.n - first);
        let rs = nb * p;
        unfold_chunk(x, first, nb, g, &taps, &mut cols);
        let gsrc = grad_chunk(grad, first, nb, g, &mut gr);
        for grp in 0..g.groups {
            let a = Mat { data: &gsrc[grp * cout_g * rs..], rs, cs: 1 };
            // b = cols_gᵀ: element (j, r) is cols[r·rs + j].
            let b = Mat { data: &cols[grp * rows * rs..], rs: 1, cs: rs };
            deep_gemm(cout_g, rows, rs, &mut acc[grp * cout_g * rows..(grp + 1) * cout_g * rows], a, b, first > 0)?;
        }
    }
    for (d, a) in dw.chunks_mut(cout_g * rows).zip(acc.chunks(cout_g * rows)) {
        for (co, line) in d.chunks_mut(rows).enumerate() {
            for (v, s) in line.iter_mut().zip(a[co..].iter().step_by(cout_g)) {
                *v = *s;
            }
        }
    }
    Ok(())
}

/// Depth (k) of one slice of a deep product in `deep_gemm`, and the most slices.
const DEEP_SLICE: usize = 1024;
const DEEP_SLICES_MAX: usize = 8;
/// Work (m·n·k) from which a deep product is sliced: four times `GEMM_PAR_WORK`, ~50 us on one
/// thread here, so that each slice outweighs the split's cost (a fork-join, 5-20 us in this VM).
/// The conv net's stem (16x9 over 4096: exactly GEMM_PAR_WORK, 12 us) stays one call: on two
/// threads (SCHED_FIFO, old vs new interleaved) slicing it took its fwd+bwd from 128 to 304 us
/// with rayon's par_chunks_mut. gemm's own `Rayon` mode had left it on one thread too (its
/// threshold applies to each 512-deep slice).
const DEEP_PAR_WORK: usize = 4 * GEMM_PAR_WORK;

/// Slices `deep_gemm` cuts a (m×k)·(k×n) product into: one unless the product is deep (k at least
/// twice DEEP_SLICE and 4·max(m, n)) and big enough to be worth threads. A function of the sizes
/// only, so the sum's order (and every bit of it) is the same on any thread count.
fn deep_slices(m: usize, n: usize, k: usize) -> usize {
    let work = m.saturating_mul(n).saturating_mul(k);
    if work < DEEP_PAR_WORK || k < 2 * DEEP_SLICE || k < 4 * m.max(n) {
        return 1;
    }
    (k / DEEP_SLICE).min(DEEP_SLICES_MAX)
}

/// `acc (+)= a @ b` into a column-major [m, n] `acc`, for the weight gradient's short, deep
/// product (the digits conv net: [16, 144] over k = 64 images · 64 pixels). gemm can only split
/// such a product's few outputs across threads, and its `Rayon` mode forks and joins once per
/// 512 of k (8 times here, for ~0.2 ms of work); here k is cut into `deep_slices` slices, each
/// multiplied single-threaded into its own partial sum, the slices in parallel (one fork-join),
/// and the partials added in slice order.
fn deep_gemm<T: ConvElem>(m: usize, n: usize, k: usize, acc: &mut [T], a: Mat<T>, b: Mat<T>, accumulate: bool) -> Result<()> {
    let slices = deep_slices(m, n, k);
    if slices == 1 {
        gemm(m, n, k, acc, (1, m), a, b, accumulate);
        return Ok(());
    }
    let (size, per) = (m * n, k.div_ceil(slices));
    let mut partial = Buf::<T>::new(&[slices, size])?;
    let out = SendPtr(partial.as_mut_ptr());
    panels::for_each_index(slices, |s| {
        let (lo, hi) = (s * per, ((s + 1) * per).min(k));
        // SAFETY: slice s writes only its own `size` elements of `partial`.
        let part = unsafe { std::slice::from_raw_parts_mut(out.get().add(s * size), size) };
        // Slice s of k: columns lo..hi of a, rows lo..hi of b.
        let a = Mat { data: &a.data[lo * a.cs..], ..a };
        let b = Mat { data: &b.data[lo * b.rs..], ..b };
        gemm_with(false, m, n, hi - lo, part, (1, m), a, b, false);
    });
    for (i, v) in acc[..size].iter_mut().enumerate() {
        let mut sum = if accumulate { *v + partial[i] } else { partial[i] };
        for s in 1..slices {
            sum += partial[s * size + i];
        }
        *v = sum;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

