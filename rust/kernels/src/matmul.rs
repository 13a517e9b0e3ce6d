//! Matrix products over strided operands: `gemm` for f32/f64, a blocked loop for integers.
//!
//! Operands are read in place through their row and column strides (transposed, sliced or
//! broadcast views included): nothing is copied. A batch is a list of per-matrix offsets.
//!
//! Determinism: each output element is computed by one thread with a fixed summation order
//! that depends only on the sizes and strides (gemm splits work across threads by output
//! blocks, never along k), so repeated calls give bit-identical results.

mod colmajor_dst;
pub mod panels;

use super::parallel::SendPtr;
use crate::element::Element;

/// Work (m·n·k) of one product above which it is split over rayon's threads (gemm's own default
/// threshold; `panels` does the split).
pub const GEMM_PAR_MIN_WORK: usize = 48 * 48 * 256;
/// Total work of a batch above which independent small products run in parallel.
pub const BATCH_PAR_MIN_WORK: usize = 1 << 18;

/// Strides (in elements) of the three matrices of `dst = a @ b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides {
    pub dst_rs: isize,
    pub dst_cs: isize,
    pub a_rs: isize,
    pub a_cs: isize,
    pub b_rs: isize,
    pub b_cs: isize,
}

/// Element types with a matrix-product kernel.
pub trait MatElem: Element {
    /// `dst = a @ b` for one (m×k)·(k×n) product; `parallel` allows rayon inside the product.
    ///
    /// # Safety
    /// For all i < m, j < n, p < k: `a + i·a_rs + p·a_cs` and `b + p·b_rs + j·b_cs` are readable
    /// elements, and `dst + i·dst_rs + j·dst_cs` are distinct writable elements that overlap
    /// neither input. m, n, k are all non-zero.
    #[allow(clippy::too_many_arguments)]
    unsafe fn product(m: usize, n: usize, k: usize, dst: *mut Self, a: *const Self, b: *const Self, s: Strides, parallel: bool);
}

macro_rules! float_product {
    ($t:ty) => {
        impl MatElem for $t {
            #[allow(clippy::too_many_arguments)]
            unsafe fn product(m: usize, n: usize, k: usize, dst: *mut $t, a: *const $t, b: *const $t, s: Strides, parallel: bool) {
                // SAFETY: the caller's contract is gemm's: every addressed element exists, dst
                // elements are distinct and disjoint from the inputs; without `accumulate` gemm
                // overwrites dst without reading it, so dst may be uninitialised.
                unsafe { float_gemm(m, n, k, dst, a, b, s, false, parallel, (1.0, 0.0)) }
            }
        }
    };
}

/// Column strides (in bytes) of a column-major right operand that are a multiple of this put
/// the columns gemm's microkernel reads side by side (it does not pack such an operand when m
/// is small) into the same few L1 sets, so they evict each other: a Linear layer's `weight.t()`
/// with in_features 256 (AVX-512) or 1024 (AVX2) and up. x @ W.t() for 64 rows, 256 columns,
/// one thread: k = 256 128 µs, 512 403 µs, 1024 1013 µs on the AVX-512 kernels (95, 186, 477 µs
/// on the AVX2 ones), 94, 185, 368 µs with the columns copied 16 elements apart first (the copy
/// included: 8, 15, 28 µs).
const ALIAS_BYTES: isize = 1024;
/// Below this many elements of b the copy is not worth a call.
const PAD_MIN: usize = 4096;

thread_local! {
    /// The padded copy of b, reused across calls (u64 words: aligned for f32 and f64).
    static PADDED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One float product through `panels::gemm`; a column-major `b` whose column stride aliases
/// in L1 is copied with its columns 16 elements further apart first (`with_padded`: a plain
/// copy per column, so the arithmetic, and so the bits, are the same as with `b` read in place).
/// When the product is cut into column panels, each panel copies only its own columns, on the
/// thread that multiplies it (the MLP's 64x256x256 `h @ W2.t()` on two threads: the whole copy
/// on the calling thread before the split was a third of the product's time). A row-major
/// product with a column-major b and fewer rows than columns (a Linear layer's forward) is
/// computed column-major per panel and transposed into dst (`colmajor_dst`: gemm then packs a,
/// not bᵀ).
///
/// # Safety
/// `MatElem::product`'s contract; with `accumulate` every dst element is initialised.
#[allow(clippy::too_many_arguments)]
pub unsafe fn float_gemm<T: Copy + Send + Sync + 'static>(
    m: usize, n: usize, k: usize, dst: *mut T, a: *const T, b: *const T, s: Strides, accumulate: bool, parallel: bool, (one, zero): (T, T),
) {
    let o = panels::Operands {
        dst: (SendPtr(dst), s.dst_rs, s.dst_cs),
        a: (SendPtr(a as *mut T), s.a_rs, s.a_cs),
        b: (SendPtr(b as *mut T), s.b_rs, s.b_cs),
    };
    let pad = aliases::<T>(s.b_rs, s.b_cs) && n > 1 && k > 1 && k * n >= PAD_MIN;
    // SAFETY: the caller's contract; `applies` checked the layouts colmajor_dst needs.
    if colmajor_dst::applies(m, n, k, &s) && unsafe { colmajor_dst::gemm(m, n, k, o, accumulate, one, zero, parallel, pad) } {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { panels::gemm(m, n, k, o, accumulate, one, zero, parallel, pad) }
}

/// Whether a b with these strides is column-major with a column stride that aliases in L1.
fn aliases<T>(b_rs: isize, b_cs: isize) -> bool {
    let size = std::mem::size_of::<T>() as isize;
    b_rs == 1 && b_cs > 0 && (b_cs * size) % ALIAS_BYTES == 0
}

/// Runs `f` with `b` (k×n, column-major: row stride 1) or, when its columns alias in L1
/// (`aliases`), with a copy of it whose columns lie 16 elements further apart, in this thread's
/// reused buffer.
///
/// # Safety
/// Column j < n of `b` is k readable contiguous elements at `b + j·b_cs`.
unsafe fn with_padded<T: Copy>(b: (SendPtr<T>, isize, isize), n: usize, k: usize, f: impl FnOnce((SendPtr<T>, isize, isize))) {
    if !aliases::<T>(b.1, b.2) {
        return f(b);
    }
    let size = std::mem::size_of::<T>();
    let stride = k + 64 / size;
    let words = (stride * n * size).div_ceil(8);
    PADDED.with(|cell| {
        let mut buf = cell.take();
        // Grown (zeroed) only: every element read is copied in below, the gaps are never read.
        if buf.len() < words {
            buf.resize(words, 0);
        }
        let p = buf.as_mut_ptr() as *mut T;
        for j in 0..n {
            // SAFETY: column j of b is k contiguous elements (contract); the buffer holds n
            // columns of `stride` >= k elements.
            unsafe { std::ptr::copy_nonoverlapping(b.0.get().offset(j as isize * b.2), p.add(j * stride), k) };
        }
        f((SendPtr(p), 1, stride as isize));
        cell.replace(buf);
    });
}
float_product!(f32);
float_product!(f64);

/// Float element types whose products can also accumulate into their destination.
pub trait FloatMat: MatElem {}
impl FloatMat for f32 {}
impl FloatMat for f64 {}

/// `dst += a @ b` for one (m×k)·(k×n) product (addmm with its bias already in `dst`): gemm's
/// `dst = 1·dst + 1·a·b`, split over threads as `product` is, each element's arithmetic fixed
/// by k alone (the bias enters first, then the kc slices of k in order).
///
/// # Safety
/// `MatElem::product`'s contract, and every dst element is initialised.
#[allow(clippy::too_many_arguments)]
pub unsafe fn product_add<T: FloatMat>(m: usize, n: usize, k: usize, dst: *mut T, a: *const T, b: *const T, s: Strides) {
    // SAFETY: the caller's contract; with `accumulate` gemm reads the initialised dst.
    unsafe { float_gemm(m, n, k, dst, a, b, s, true, true, (T::one(), T::zero())) }
}

/// Columns of the output row kept in one accumulator block (fits L1 for i64).
const COL_BLOCK: usize = 256;

macro_rules! int_product {
    ($t:ty) => {
        impl MatElem for $t {
            #[allow(clippy::too_many_arguments)]
            unsafe fn product(m: usize, n: usize, k: usize, dst: *mut $t, a: *const $t, b: *const $t, s: Strides, parallel: bool) {
                let (d, a, b) = (SendPtr(dst), SendPtr(a as *mut $t), SendPtr(b as *mut $t));
                // Each call owns whole output rows, so rows can go to different threads.
                let row = move |i: usize| {
                    let (d, a, b) = (d.get(), a.get() as *const $t, b.get() as *const $t);
                    let mut acc = [0 as $t; COL_BLOCK];
                    for j0 in (0..n).step_by(COL_BLOCK) {
                        let cols = COL_BLOCK.min(n - j0);
                        let acc = &mut acc[..cols];
                        acc.fill(0);
                        for p in 0..k {
                            // SAFETY: i < m, p < k, j0 + j < n: inside the operands (contract).
                            let x = *a.offset(i as isize * s.a_rs + p as isize * s.a_cs);
                            let brow = b.offset(p as isize * s.b_rs + j0 as isize * s.b_cs);
                            for (j, c) in acc.iter_mut().enumerate() {
                                // Wrapping, as torch's integer arithmetic.
                                *c = c.wrapping_add(x.wrapping_mul(*brow.offset(j as isize * s.b_cs)));
                            }
                        }
                        for (j, &c) in acc.iter().enumerate() {
                            // SAFETY: a distinct dst element of row i, owned by this call.
                            *d.offset(i as isize * s.dst_rs + (j0 + j) as isize * s.dst_cs) = c;
                        }
                    }
                };
                if parallel {
                    use rayon::prelude::*;
                    (0..m).into_par_iter().for_each(row);
                } else {
                    (0..m).for_each(row);
                }
            }
        }
    };
}
int_product!(i32);
int_product!(i64);

/// `dst[b] = a[b] @ b[b]` for every batch entry; `offsets[b]` holds the element offsets of
/// (dst, a, b) for that entry from the three base pointers.
///
/// # Safety
/// Each entry satisfies `MatElem::product`'s contract at its offsets, and different entries
/// write disjoint dst elements. m, n, k are non-zero.
#[allow(clippy::too_many_arguments)]
pub unsafe fn batched<T: MatElem>(m: usize, n: usize, k: usize, dst: *mut T, a: *const T, b: *const T, s: Strides, offsets: &[[isize; 3]]) {
    let work = m.saturating_mul(n).saturating_mul(k);
    let total = work.saturating_mul(offsets.len());
    let (d, pa, pb) = (SendPtr(dst), SendPtr(a as *mut T), SendPtr(b as *mut T));
    let one = move |o: &[isize; 3], parallel: bool| {
        let (a, b) = (pa.get() as *const T, pb.get() as *const T);
        // SAFETY: offsets name valid entries (contract); entries write disjoint elements.
        unsafe { T::product(m, n, k, d.get().offset(o[0]), a.offset(o[1]), b.offset(o[2]), s, parallel) }
    };
    if work >= GEMM_PAR_MIN_WORK || offsets.len() == 1 {
        // Big products: parallelise inside each one.
        offsets.iter().for_each(|o| one(o, work >= GEMM_PAR_MIN_WORK));
    } else if total >= BATCH_PAR_MIN_WORK {
        // Many small products: one thread per product.
        use rayon::prelude::*;
        offsets.par_iter().for_each(|o| one(o, false));
    } else {
        offsets.iter().for_each(|o| one(o, false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive triple loop over strided operands, in f64 for floats (the reference).
    fn naive(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], s: Strides) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0;
                for p in 0..k {
                    acc += a[(i as isize * s.a_rs + p as isize * s.a_cs) as usize] * b[(p as isize * s.b_rs + j as isize * s.b_cs) as usize];
                }
                out[i * n + j] = acc;
            }
        }
        out
    }

    /// Operand layouts to try: row-major, column-major, padded rows, broadcast rows.
    fn layouts(r: usize, c: usize) -> Vec<(isize, isize, usize)> {
        let (r_, c_) = (r as isize, c as isize);
        vec![(c_, 1, r * c), (1, r_, r * c), (c_ + 3, 1, r * (c + 3)), (2 * c_, 2, 2 * r * c), (0, 1, c)]
    }

    fn values(len: usize, seed: u64) -> Vec<f64> {
        (0..len).map(|i| (((i as u64 * 2654435761 + seed * 40503) % 97) as f64 - 48.0) / 8.0).collect()
    }

    #[test]
    fn float_products_match_naive_on_strided_operands() {
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 7), (17, 9, 33), (64, 65, 66), (1, 40, 3), (40, 1, 3)] {
            for (a_rs, a_cs, a_len) in layouts(m, k) {
                for (b_rs, b_cs, b_len) in layouts(k, n) {
                    let a = values(a_len, 1);
                    let b = values(b_len, 2);
                    let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs, a_cs, b_rs, b_cs };
                    let want = naive(m, n, k, &a, &b, s);
                    let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
                    let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
                    let mut d64 = vec![f64::NAN; m * n];
                    let mut d32 = vec![f32::NAN; m * n];
                    // SAFETY: layouts() sizes each buffer to cover every addressed element.
                    unsafe {
                        f64::product(m, n, k, d64.as_mut_ptr(), a.as_ptr(), b.as_ptr(), s, false);
                        f32::product(m, n, k, d32.as_mut_ptr(), a32.as_ptr(), b32.as_ptr(), s, true);
                    }
                    for i in 0..m * n {
                        assert!((d64[i] - want[i]).abs() <= 1e-9 * (1.0 + want[i].abs()), "f64 {m}x{n}x{k}");
                        assert!((d32[i] as f64 - want[i]).abs() <= 1e-4 * (k as f64) * (1.0 + want[i].abs()), "f32 {m}x{n}x{k}");
                    }
                }
            }
        }
    }

    #[test]
    fn product_add_adds_to_dst_bit_for_bit_on_any_thread_count() {
        for &(m, n, k) in &[(3, 5, 7), (64, 256, 784), (64, 10, 256), (200, 130, 9)] {
            let (a, b) = (values(m * k, 7), values(k * n, 8));
            let bias = values(n, 9);
            // a row-major a, a column-major (transposed view) b: the Linear layer's layout
            let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs: k as isize, a_cs: 1, b_rs: 1, b_cs: k as isize };
            let run = |threads: usize| {
                let mut d: Vec<f64> = (0..m * n).map(|i| bias[i % n]).collect();
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                // SAFETY: the buffers cover every addressed element; d is initialised.
                pool.install(|| unsafe { product_add(m, n, k, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), s) });
                d
            };
            let one = run(1);
            assert_eq!(one, run(2), "{m}x{n}x{k}");
            let want = naive(m, n, k, &a, &b, s);
            for i in 0..m * n {
                let w = want[i] + bias[i % n];
                assert!((one[i] - w).abs() <= 1e-9 * (1.0 + w.abs()), "{m}x{n}x{k}");
            }
        }
    }

    #[test]
    fn aliasing_column_major_b_is_copied_without_changing_a_bit() {
        // b column-major with a 1 KiB column stride (padded) against the same values at a
        // stride that does not alias (read in place): the same gemm arithmetic either way.
        let (m, n, k) = (40, 96, 256);
        let a32: Vec<f32> = values(m * k, 10).iter().map(|&v| v as f32).collect();
        let cols = values(n * k, 11);
        for (pad_stride, plain_stride) in [(256usize, 259usize), (512, 515)] {
            let lay = |stride: usize| {
                let mut b = vec![0f32; n * stride];
                for j in 0..n {
                    for p in 0..k {
                        b[j * stride + p] = cols[j * k + p] as f32;
                    }
                }
                b
            };
            let run = |stride: usize| {
                let b = lay(stride);
                let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs: k as isize, a_cs: 1, b_rs: 1, b_cs: stride as isize };
                let mut d = vec![f32::NAN; m * n];
                // SAFETY: b holds n columns of `stride` >= k elements; a and d are sized m·k, m·n.
                unsafe { f32::product(m, n, k, d.as_mut_ptr(), a32.as_ptr(), b.as_ptr(), s, false) };
                d
            };
            assert_eq!(run(pad_stride).iter().map(|v| v.to_bits()).collect::<Vec<_>>(), run(plain_stride).iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn integer_products_are_exact_and_wrap() {
        let (m, n, k) = (5, 300, 7); // n spans two column blocks
        for (a_rs, a_cs, a_len) in layouts(m, k) {
            for (b_rs, b_cs, b_len) in layouts(k, n) {
                let a: Vec<i64> = values(a_len, 3).iter().map(|v| (v * 8.0) as i64).collect();
                let b: Vec<i64> = values(b_len, 4).iter().map(|v| (v * 8.0) as i64).collect();
                let s = Strides { dst_rs: 1, dst_cs: m as isize, a_rs, a_cs, b_rs, b_cs }; // column-major dst
                let mut d = vec![0i64; m * n];
                // SAFETY: buffers cover every addressed element.
                unsafe { i64::product(m, n, k, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), s, true) };
                let af: Vec<f64> = a.iter().map(|&v| v as f64).collect();
                let bf: Vec<f64> = b.iter().map(|&v| v as f64).collect();
                let want = naive(m, n, k, &af, &bf, Strides { dst_rs: n as isize, dst_cs: 1, ..s });
                for i in 0..m {
                    for j in 0..n {
                        assert_eq!(d[i + j * m] as f64, want[i * n + j]);
                    }
                }
            }
        }
        let big = [i32::MAX, 2];
        let mut d = [0i32];
        let s = Strides { dst_rs: 1, dst_cs: 1, a_rs: 2, a_cs: 1, b_rs: 1, b_cs: 1 };
        // SAFETY: 1x1x2 product over two-element buffers.
        unsafe { i32::product(1, 1, 2, d.as_mut_ptr(), big.as_ptr(), [1, 1].as_ptr(), s, false) };
        assert_eq!(d[0], i32::MAX.wrapping_add(2));
    }

    #[test]
    fn batches_are_deterministic_and_independent() {
        let (m, n, k, batch) = (70, 70, 70, 3);
        let a = values(batch * m * k, 5);
        let b = values(k * n, 6); // shared (broadcast) right operand
        let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs: k as isize, a_cs: 1, b_rs: n as isize, b_cs: 1 };
        let offsets: Vec<[isize; 3]> = (0..batch).map(|i| [(i * m * n) as isize, (i * m * k) as isize, 0]).collect();
        let run = || {
            let mut d = vec![0.0f64; batch * m * n];
            // SAFETY: each entry's offsets stay inside the buffers; entries write disjoint ranges.
            unsafe { batched(m, n, k, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), s, &offsets) };
            d
        };
        let first = run();
        assert_eq!(first, run());
        for i in 0..batch {
            let want = naive(m, n, k, &a[i * m * k..], &b, s);
            for (x, y) in first[i * m * n..(i + 1) * m * n].iter().zip(&want) {
                assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()));
            }
        }
    }
}
