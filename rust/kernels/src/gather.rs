//! Index-driven copies along one dim. `gather` reads each output element from the position
//! an index names; `scatter` writes (or accumulates) each source element at the position an
//! index names. index_select and index_add are the same kernels with an index broadcast
//! along every other dim.
//!
//! # Safety (shared by both kernels)
//! The op layer has checked every index value against the indexed dim's size, so each
//! addressed element lies in its storage; it has ruled out any overlap between the written
//! tensor and what is read (private copies), and the written tensor has no internal overlap.

use super::iter::Plan;
use super::parallel::{for_chunks, SendPtr, PAR_MIN_ELEMS};
use super::Arg;
use crate::element::Element;

/// For every position `pos` of `shape`: `dst[pos] = src[pos with coordinate dim := index[pos]]`.
/// `src.strides[dim]` must be 0 (the caller substitutes the index); `src_dim_stride` is the
/// real stride of that dim.
///
/// # Safety
/// See the module docs: indices checked, no overlap between what is written and what is read.
pub unsafe fn gather<T: Element>(shape: &[usize], dst: Arg<T>, index: Arg<i64>, src: Arg<T>, src_dim_stride: isize) {
    let plan = Plan::new(shape, [dst.strides, index.strides, src.strides], [dst.offset, index.offset, src.offset]);
    let (d, ix, s) = (SendPtr(dst.base), SendPtr(index.base), SendPtr(src.base));
    plan.for_each_run(|o, len, st| {
        let (d, ix, s) = (d.get(), ix.get() as *const i64, s.get() as *const T);
        for i in 0..len as isize {
            // SAFETY: positions of the plan lie in each operand (contract); `at` was checked
            // against src's size along dim, so the substituted coordinate is in range too.
            let at = *ix.offset(o[1] + i * st[1]) as isize;
            *d.offset(o[0] + i * st[0]) = *s.offset(o[2] + i * st[2] + at * src_dim_stride);
        }
    });
}

/// For every position `pos` of `shape` (the index's shape), in increasing order along `dim`:
/// `dst[pos with dim := index[pos]] = f(that element, src[pos])`. `dst.strides[dim]` must be 0
/// (the caller substitutes the index); `dst_dim_stride` is the real stride of that dim.
///
/// Work is split over the other dims only: positions that differ there write different
/// elements, and each element's updates keep index order, so results are deterministic.
///
/// # Safety
/// See the module docs: indices checked, no overlap between what is written and what is read.
pub unsafe fn scatter<T: Element>(
    shape: &[usize],
    dim: usize,
    dst: Arg<T>,
    dst_dim_stride: isize,
    index: Arg<i64>,
    src: Arg<T>,
    f: impl Fn(T, T) -> T + Sync + Send,
) {
    let len_dim = shape[dim];
    let (ix_step, src_step) = (index.strides[dim], src.strides[dim]);
    let mut outer = shape.to_vec();
    outer[dim] = 1;
    let plan = Plan::new(&outer, [dst.strides, index.strides, src.strides], [dst.offset, index.offset, src.offset]);
    let (d, ix, s) = (SendPtr(dst.base), SendPtr(index.base), SendPtr(src.base));
    let per_task = (PAR_MIN_ELEMS / len_dim.max(1)).max(1);
    for_chunks(plan.numel(), per_task, |start, end| {
        plan.runs(start, end, |o, len, st| {
            let (d, ix, s) = (d.get(), ix.get() as *const i64, s.get() as *const T);
            for i in 0..len as isize {
                let (od, oi, os) = (o[0] + i * st[0], o[1] + i * st[1], o[2] + i * st[2]);
                for j in 0..len_dim as isize {
                    // SAFETY: j < shape[dim] keeps index and src in range; `at` was checked
                    // against dst's size along dim; this task alone writes these dst elements.
                    let at = *ix.offset(oi + j * ix_step) as isize;
                    let p = d.offset(od + at * dst_dim_stride);
                    *p = f(*p, *s.offset(os + j * src_step));
                }
            }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_rows_by_index() {
        // src 3x4 row-major, gather along dim 1 with a 3x2 index.
        let src: Vec<f64> = (0..12).map(|v| v as f64).collect();
        let index: Vec<i64> = vec![3, 0, 1, 1, 2, 3];
        let mut out = vec![0.0; 6];
        let (s_out, s_ix, s_src) = ([2isize, 1], [2isize, 1], [4isize, 0]);
        // SAFETY: index values < 4; out is private.
        unsafe {
            gather(
                &[3, 2],
                Arg { base: out.as_mut_ptr(), strides: &s_out, offset: 0 },
                Arg { base: index.as_ptr() as *mut i64, strides: &s_ix, offset: 0 },
                Arg { base: src.as_ptr() as *mut f64, strides: &s_src, offset: 0 },
                1,
            )
        };
        assert_eq!(out, vec![3.0, 0.0, 5.0, 5.0, 10.0, 11.0]);
    }

    #[test]
    fn scatter_accumulates_in_index_order() {
        // dst 2x3 (transposed storage: strides (1, 2)), add 2x2 src along dim 1.
        let mut dst = vec![0i64; 6];
        let index: Vec<i64> = vec![2, 2, 0, 1];
        let src: Vec<i64> = vec![1, 10, 100, 1000];
        let (s_dst, s_ix, s_src) = ([1isize, 0], [2isize, 1], [2isize, 1]);
        // SAFETY: index values < 3; src and index do not overlap dst.
        unsafe {
            scatter(
                &[2, 2],
                1,
                Arg { base: dst.as_mut_ptr(), strides: &s_dst, offset: 0 },
                2,
                Arg { base: index.as_ptr() as *mut i64, strides: &s_ix, offset: 0 },
                Arg { base: src.as_ptr() as *mut i64, strides: &s_src, offset: 0 },
                |a, b| a + b,
            )
        };
        // logical dst[i][j] = dst[i + 2j]
        assert_eq!((dst[0], dst[2], dst[4]), (0, 0, 11));
        assert_eq!((dst[1], dst[3], dst[5]), (100, 1000, 0));
    }
}
