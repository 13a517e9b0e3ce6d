//! A row-major product with a column-major right operand (a Linear layer's forward, `x @ W.t()`)
//! computed into a column-major scratch block per panel, then transposed into dst.
//!
//! Why: gemm works on a column-major dst; given a row-major one it computes the transposed
//! product, `dstᵀ = bᵀ @ aᵀ`, and packs its left operand, here `bᵀ` = W (n×k, the large one).
//! Into a column-major dst the left operand is `a` (m×k: the batch, smaller when m < n) and W is
//! read as the right operand. The MLP's `x @ W1.t()` (64x256x784) took 282 µs on one thread and
//! 154 on two into a row-major dst, 238 and 128 into a column-major one (`benches/probes.rs`);
//! through this module, transposes included, 241 and 139 (two column panels, `gemm`).
//!
//! Same bits: gemm gives each element one chain of fused multiply-adds over k in kc slices fixed
//! by k alone, whichever way round it is called (x·w and w·x are the same rounded product), and
//! the transposes only move values; with `accumulate`, dst's values are moved into the scratch
//! first, so they enter the sum where they did. Panels are cut by columns as `panels::plan` cuts
//! the column-major product, so they are bit for bit the whole product, as there.

use super::panels::{self, for_each_index, Operands};
use super::super::parallel::SendPtr;
use super::Strides;

thread_local! {
    /// This thread's column-major panel of dst, reused across calls (u64 words: aligned for f32
    /// and f64). Each thread transposes its own panel, so no thread waits for another's.
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Rows of dst moved together by the transposes: one 64-byte line of an f32 scratch column.
const ROW_BLOCK: usize = 16;
/// The transposes move each dst element once or twice, against 2·k flops per element; below
/// this k they are no longer a small share.
const MIN_K: usize = 32;

/// Whether `dst = a @ b` goes through a column-major scratch: dst and a row-major, b
/// column-major, fewer rows than columns (gemm then packs a, the smaller, instead of bᵀ).
pub(super) fn applies(m: usize, n: usize, k: usize, s: &Strides) -> bool {
    s.dst_cs == 1 && s.a_cs == 1 && s.b_rs == 1 && m < n && k >= MIN_K && m > 1
}

/// `dst = a @ b` (`dst += a @ b` with `accumulate`) through column-major scratch blocks: one
/// block on this thread, or with `parallel` and enough work on several threads, the column
/// panels `panels::plan` gives the product (each thread packs all of a and its own columns of
/// b; 64x256x784 on two threads: 139 µs, 154 the row-major way). False, with nothing done, for
/// the other splits, where the caller multiplies as before:
/// - Row panels measured faster alone (125 µs), but each thread then reads all of b, and the
///   MLP step's SGD update of W that follows took ~390 µs instead of ~145 (two threads, minigrad
///   alone in the process, several runs; presumably W's lines, then held in both cores' caches,
///   each cost an invalidation when written).
/// - A padded b (its columns alias in L1, `with_padded`): `h @ W2.t()` (64x256x256) took 66 µs
///   in two column panels against 56 the row-major way.
///
/// # Safety
/// `panels::gemm`'s contract, and dst, a, b laid out as `applies` says.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm<T: Copy + Send + Sync + 'static>(m: usize, n: usize, k: usize, o: Operands<T>, accumulate: bool, one: T, zero: T, parallel: bool, pad: bool) -> bool {
    let big = m.saturating_mul(n).saturating_mul(k) >= super::GEMM_PAR_MIN_WORK;
    let threads = if parallel && big { rayon::current_num_threads() } else { 1 };
    let block = |rows: (usize, usize), cols: (usize, usize)| {
        // SAFETY: a block of the product (the caller's contract, per block).
        unsafe { one_block(rows, cols, k, o, accumulate, one, zero, pad) }
    };
    if threads < 2 {
        block((0, m), (0, n));
        return true;
    }
    // Split, only into column panels and only where b is read in place; see `gemm`'s doc.
    match panels::plan(m, n, k, threads, Some(false)) {
        Some(p) if !p.rows && !pad => {
            for_each_index(p.count, |i| block((0, m), (i * p.width, ((i + 1) * p.width).min(n))));
            true
        }
        _ => false,
    }
}

/// Rows r0..r1 and columns c0..c1 of dst: transposed into this thread's scratch (with
/// `accumulate`), multiplied there by one single-threaded gemm call, transposed back.
///
/// # Safety
/// As `gemm`, for that block.
#[allow(clippy::too_many_arguments)]
unsafe fn one_block<T: Copy + Send + Sync + 'static>((r0, r1): (usize, usize), (c0, c1): (usize, usize), k: usize, o: Operands<T>, accumulate: bool, one: T, zero: T, pad: bool) {
    let (h, w) = (r1 - r0, c1 - c0);
    let words = (h * w * std::mem::size_of::<T>()).div_ceil(8);
    let d_rs = o.dst.1;
    let d = o.dst.0.get().wrapping_offset(r0 as isize * d_rs + c0 as isize);
    SCRATCH.with(|cell| {
        let mut buf = cell.take();
        if buf.len() < words {
            buf.resize(words, 0);
        }
        let scr = buf.as_mut_ptr() as *mut T;
        if accumulate {
            // SAFETY: the block's dst elements are initialised (accumulate); the scratch holds
            // h·w elements.
            unsafe { transpose_in(h, w, d, d_rs, scr) };
        }
        let q = Operands {
            dst: (SendPtr(scr), 1, h as isize),
            a: (SendPtr(o.a.0.get().wrapping_offset(r0 as isize * o.a.1)), o.a.1, o.a.2),
            b: (SendPtr(o.b.0.get().wrapping_offset(c0 as isize * o.b.2)), o.b.1, o.b.2),
        };
        // SAFETY: the caller's contract for rows r0..r1 of a and columns c0..c1 of b; the
        // scratch is this thread's, h·w elements, initialised (zeroed when grown, or transposed in).
        unsafe { panels::gemm(h, w, k, q, accumulate, one, zero, false, pad) };
        // SAFETY: the block's dst elements are this call's own.
        unsafe { transpose_out(h, w, scr, d, d_rs) };
        cell.replace(buf);
    });
}

/// scr[j·m + i] = d[i·d_rs + j] for i < m, j < w.
///
/// # Safety
/// The addressed elements exist; scr does not overlap d.
unsafe fn transpose_in<T: Copy>(m: usize, w: usize, d: *const T, d_rs: isize, scr: *mut T) {
    for i0 in (0..m).step_by(ROW_BLOCK) {
        let rows = ROW_BLOCK.min(m - i0);
        for j in 0..w {
            for i in i0..i0 + rows {
                // SAFETY: i < m, j < w (contract).
                unsafe { *scr.add(j * m + i) = *d.offset(i as isize * d_rs + j as isize) };
            }
        }
    }
}

/// d[i·d_rs + j] = scr[j·m + i] for i < m, j < w.
///
/// # Safety
/// As `transpose_in`.
unsafe fn transpose_out<T: Copy>(m: usize, w: usize, scr: *const T, d: *mut T, d_rs: isize) {
    for i0 in (0..m).step_by(ROW_BLOCK) {
        let rows = ROW_BLOCK.min(m - i0);
        for j in 0..w {
            for i in i0..i0 + rows {
                // SAFETY: i < m, j < w (contract).
                unsafe { *d.offset(i as isize * d_rs + j as isize) = *scr.add(j * m + i) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::float_gemm;
    use super::*;

    fn values(len: usize, seed: u64) -> Vec<f32> {
        (0..len).map(|i| ((i as u64 * 2654435761 + seed * 40503) % 1013) as f32 / 97.3 - 5.1).collect()
    }

    #[test]
    fn scratch_products_match_the_direct_call_bitwise_on_any_thread_count() {
        // The MLP's forward products (k = 256 aliases in L1 and is padded), k over 512 (two kc
        // slices), odd sizes, a strided dst; with and without accumulate (a Linear's bias).
        for &(m, n, k) in &[(64, 256, 784), (64, 256, 256), (33, 70, 40), (100, 300, 1030), (2, 500, 64), (64, 10, 256)] {
            let a = values(m * k, 1);
            let b = values(k * n, 2); // column-major: column j at j·k
            let d_rs = n + 5;
            let start = values(m * d_rs, 3);
            let s = Strides { dst_rs: d_rs as isize, dst_cs: 1, a_rs: k as isize, a_cs: 1, b_rs: 1, b_cs: k as isize };
            for accumulate in [false, true] {
                let direct = {
                    let mut d = start.clone();
                    let o = Operands { dst: (SendPtr(d.as_mut_ptr()), s.dst_rs, 1), a: (SendPtr(a.as_ptr() as *mut f32), s.a_rs, 1), b: (SendPtr(b.as_ptr() as *mut f32), 1, s.b_cs) };
                    // SAFETY: the buffers cover every element the strides address.
                    unsafe { panels::gemm(m, n, k, o, accumulate, 1.0, 0.0, false, false) };
                    d
                };
                for threads in [1, 2, 3, 4] {
                    let mut d = start.clone();
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    // SAFETY: as above.
                    pool.install(|| unsafe { float_gemm(m, n, k, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), s, accumulate, true, (1.0, 0.0)) });
                    let same = d.iter().zip(&direct).all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(same, "{m}x{n}x{k} accumulate {accumulate} on {threads} threads");
                }
            }
        }
    }
}
