//! Matmul through cuBLAS with raw device pointers: each `dst[B] = a[B] @ b[B]` becomes one
//! strided-batched GEMM call per run of batch dims that every operand walks with one stride
//! (one call for mm, bmm, a broadcast batch, conv's chunks when groups == 1), with the operands'
//! own layouts expressed by cuBLAS's op flags and leading dimensions: no CuPy arrays, no copies.
//!
//! cuBLAS is column-major, so the row-major product `C = A @ B` (`m x n`) is computed as its
//! transpose `Cᵀ = Bᵀ Aᵀ`: cuBLAS's `(m, n, k)` are our `(n, m, k)`, its first operand is our
//! `b`, its second our `a`. A strided `r x c` matrix (element (i, j) at `i*si + j*sj`) is a
//! cuBLAS operand in one of two forms: stored column-major with `ld = sj` and op N (si == 1), or
//! its transpose stored with `ld = si` and op T (sj == 1); a dim of size 1 takes any stride.
//! Anything else (stride 0 inside a matrix, both strides > 1, a dim past `i32`) takes the
//! driver's `matmul` (CuPy's, which copies as it must); so do the integer dtypes, which cuBLAS
//! has no GEMM for.

use super::backend::Cuda;
use minigrad_core::dtype::DType;
use minigrad_core::error::Result;
use minigrad_core::tensor::Tensor;

/// One cuBLAS `gemmStridedBatched` call, in cuBLAS's terms (column-major; strides and leading
/// dimensions in elements, addresses of the first elements).
#[derive(Debug, Clone, PartialEq)]
pub struct GemmCall {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub a: u64,
    pub lda: i32,
    pub stride_a: i64,
    pub b: u64,
    pub ldb: i32,
    pub stride_b: i64,
    pub c: u64,
    pub ldc: i32,
    pub stride_c: i64,
    pub batch: i32,
}

/// An `r x c` matrix with strides `(si, sj)` as a cuBLAS operand: `(transposed, ld)`.
pub fn as_operand(r: usize, c: usize, si: isize, sj: isize) -> Option<(bool, i32)> {
    let fits = |v: isize| (1..=i32::MAX as isize).contains(&v).then_some(v as i32);
    let (r1, c1) = (r.max(1) as isize, c.max(1) as isize);
    // column-major: (i, j) at i + j*ld, ld >= rows
    if si == 1 || r == 1 {
        let ld = if c == 1 { r1 } else { sj };
        if ld >= r1 {
            return fits(ld).map(|ld| (false, ld));
        }
    }
    // its transpose stored column-major: (i, j) at j + i*ld, ld >= cols
    if sj == 1 || c == 1 {
        let ld = if r == 1 { c1 } else { si };
        if ld >= c1 {
            return fits(ld).map(|ld| (true, ld));
        }
    }
    None
}

/// The batch dims `[split, nb)` that every operand walks with one stride each (size-1 dims
/// skipped), as `(split, count, strides)`; the dims before `split` are looped over.
fn batch_run(shape: &[usize], strides: [&[isize]; 3]) -> (usize, usize, [isize; 3]) {
    let mut count = 1usize;
    let mut run = [0isize; 3];
    let mut split = shape.len();
    while split > 0 {
        let d = split - 1;
        let n = shape[d];
        if n != 1 {
            if count == 1 {
                run = [strides[0][d], strides[1][d], strides[2][d]];
            } else if (0..3).any(|i| strides[i][d] != run[i] * count as isize) {
                break;
            }
            count *= n;
        }
        split = d;
    }
    (split, count, run)
}

/// The calls computing `dst = a @ b` (shapes as `Backend::matmul`'s contract: `(B..., m, k)`,
/// `(B..., k, n)`, `(B..., m, n)`), or None when a layout has no cuBLAS form. `addr` gives an
/// operand's first element's address; `size` its element size.
pub fn plan(dst: &Tensor, a: &Tensor, b: &Tensor, addr: impl Fn(&Tensor) -> u64) -> Option<Vec<GemmCall>> {
    let nd = dst.ndim();
    if nd < 2 || a.ndim() != nd || b.ndim() != nd {
        return None;
    }
    let (m, n, k) = (dst.shape()[nd - 2], dst.shape()[nd - 1], a.shape()[nd - 1]);
    let st = |t: &Tensor, d: usize| t.strides()[d];
    // cuBLAS's A is our b (n x k), its B our a (k x m), its C our dst (n x m)
    let (ta, lda) = as_operand(n, k, st(b, nd - 1), st(b, nd - 2))?;
    let (tb, ldb) = as_operand(k, m, st(a, nd - 1), st(a, nd - 2))?;
    let (tc, ldc) = as_operand(n, m, st(dst, nd - 1), st(dst, nd - 2))?;
    if tc {
        return None;
    }
    let fits = |v: usize| i32::try_from(v).ok();
    let (cm, cn, ck) = (fits(n)?, fits(m)?, fits(k)?);
    // the batch dims in their order or reversed, whichever leaves fewer calls (conv2d with
    // groups: (images, groups) with the weight broadcast over the images loops over the groups)
    let nb = nd - 2;
    let order = |rev: bool| -> Vec<usize> { if rev { (0..nb).rev().collect() } else { (0..nb).collect() } };
    let pick = |t: &Tensor, o: &[usize]| -> Vec<isize> { o.iter().map(|&d| t.strides()[d]).collect() };
    let mut best: Option<(usize, Vec<usize>, (usize, usize, [isize; 3]))> = None;
    for rev in [false, true] {
        let o = order(rev);
        let shape: Vec<usize> = o.iter().map(|&d| dst.shape()[d]).collect();
        let r = batch_run(&shape, [&pick(b, &o), &pick(a, &o), &pick(dst, &o)]);
        let calls: usize = shape[..r.0].iter().product();
        if best.as_ref().is_none_or(|(c, _, _)| calls < *c) {
            best = Some((calls, o, r));
        }
    }
    let (outer, order, (split, count, run)) = best?;
    let bshape: Vec<usize> = order.iter().map(|&d| dst.shape()[d]).collect();
    let batch = fits(count)?;
    let size = dst.dtype().size() as u64;
    let mut calls = Vec::with_capacity(outer);
    let mut index = vec![0usize; split];
    for _ in 0..outer {
        let off = |t: &Tensor| -> u64 {
            let e: isize = index.iter().zip(&order).map(|(&i, &d)| i as isize * t.strides()[d]).sum();
            addr(t).wrapping_add((e as i64 * size as i64) as u64)
        };
        calls.push(GemmCall {
            trans_a: ta,
            trans_b: tb,
            m: cm,
            n: cn,
            k: ck,
            a: off(b),
            lda,
            stride_a: run[0] as i64,
            b: off(a),
            ldb,
            stride_b: run[1] as i64,
            c: off(dst),
            ldc,
            stride_c: run[2] as i64,
            batch,
        });
        for d in (0..split).rev() {
            index[d] += 1;
            if index[d] < bshape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Some(calls)
}

impl Cuda {
    /// `dst = a @ b` (`Backend::matmul`): cuBLAS with raw pointers where the dtype and layouts
    /// allow it (float32, float64), else the driver's CuPy matmul.
    pub(super) fn matmul_impl(&self, dst: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        let (a, b) = (self.resident(a)?, self.resident(b)?);
        if matches!(dst.dtype(), DType::Float32 | DType::Float64) {
            if let Some(calls) = plan(dst, &a, &b, super::reduce::addr) {
                for c in &calls {
                    self.driver.gemm(dst.dtype().name(), c)?;
                }
                return Ok(());
            }
        }
        self.driver.matmul(dst.dtype().name(), super::backend::operand(dst), super::backend::operand(&a), super::backend::operand(&b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operand_forms() {
        assert_eq!(as_operand(3, 4, 1, 3), Some((false, 3)), "column-major");
        assert_eq!(as_operand(3, 4, 4, 1), Some((true, 4)), "row-major: the transpose");
        assert_eq!(as_operand(3, 4, 1, 8), Some((false, 8)), "a column-major slice");
        assert_eq!(as_operand(3, 4, 2, 3), None, "no unit stride");
        assert_eq!(as_operand(3, 4, 1, 2), None, "ld below the rows");
        assert_eq!(as_operand(1, 4, 7, 5), Some((false, 5)), "one row: any row stride");
        assert_eq!(as_operand(3, 1, 6, 9), Some((true, 6)), "one column: any column stride");
        assert_eq!(as_operand(3, 4, 0, 1), None, "a broadcast row stride");
        assert_eq!(as_operand(1, 1, 0, 0), Some((false, 1)));
    }

    #[test]
    fn batch_runs() {
        // contiguous (2, 3) batch of 4x5 matrices: one run of 6
        let s: &[isize] = &[60, 20];
        assert_eq!(batch_run(&[2, 3], [s, s, s]), (0, 6, [20, 20, 20]));
        // one operand broadcast over the outer dim only: the outer dim is looped
        let bc: &[isize] = &[0, 20];
        assert_eq!(batch_run(&[2, 3], [bc, s, s]), (1, 3, [20, 20, 20]));
        // broadcast over all: stride 0
        let z: &[isize] = &[0, 0];
        assert_eq!(batch_run(&[2, 3], [z, s, s]), (0, 6, [0, 20, 20]));
        // size-1 dims are skipped
        assert_eq!(batch_run(&[1, 3], [&[5, 20], s, s]), (0, 3, [20, 20, 20]));
    }
}
