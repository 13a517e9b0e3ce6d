//! Advanced-indexing kernels: gather (`x[idx]` into a new tensor), scatter (`x[idx] = v`,
//! optionally accumulating), and the row-major scans behind `nonzero` and `masked_select`.
//!
//! Gather and scatter walk the same space, in three nested parts: outer dims (before the
//! indexed dims), a table of index positions (explicit offsets, already bounds-checked by the
//! op layer), and inner dims (after them). Operand `a` is written, operand `b` is read.

use super::iter::Plan;
use super::parallel::{SendPtr, GRAIN, PAR_MIN_ELEMS};
use crate::element::Element;

/// One strided dim walked by both operands: its size and each operand's stride (elements).
#[derive(Debug, Clone, Copy)]
pub struct Dim {
    pub size: usize,
    pub a: isize,
    pub b: isize,
}

/// The iteration space of a gather or scatter (see the module comment).
#[derive(Debug, Clone, Default)]
pub struct Walk {
    pub outer: Vec<Dim>,
    /// Per index position: (offset in a, offset in b).
    pub positions: Vec<(isize, isize)>,
    pub inner: Vec<Dim>,
    pub a_offset: isize,
    pub b_offset: isize,
}

/// A contiguous stretch of the inner dims: start offsets, length, strides (a, b).
#[derive(Debug, Clone, Copy)]
struct Run {
    a: isize,
    b: isize,
    len: usize,
    sa: isize,
    sb: isize,
}

impl Walk {
    fn outer_len(&self) -> usize {
        self.outer.iter().map(|d| d.size).product()
    }

    fn inner_len(&self) -> usize {
        self.inner.iter().map(|d| d.size).product()
    }

    /// Offsets (a, b) of outer element `o` (row-major over the outer dims).
    fn outer_offsets(&self, mut o: usize) -> (isize, isize) {
        let (mut a, mut b) = (0, 0);
        for d in self.outer.iter().rev() {
            let i = (o % d.size) as isize;
            o /= d.size;
            a += i * d.a;
            b += i * d.b;
        }
        (a, b)
    }

    /// The inner dims as runs, computed once and replayed for every (outer, position) row.
    fn inner_runs(&self) -> Vec<Run> {
        let shape: Vec<usize> = self.inner.iter().map(|d| d.size).collect();
        let sa: Vec<isize> = self.inner.iter().map(|d| d.a).collect();
        let sb: Vec<isize> = self.inner.iter().map(|d| d.b).collect();
        let plan = Plan::new(&shape, [&sa, &sb], [0, 0]);
        let mut runs = Vec::new();
        plan.runs(0, plan.numel(), |o, len, st| runs.push(Run { a: o[0], b: o[1], len, sa: st[0], sb: st[1] }));
        runs
    }
}

/// Runs `f(start, end)` over `[0, rows)`, in parallel chunks of about GRAIN elements when the
/// whole job (`rows * per_row` elements) is large.
fn for_rows(rows: usize, per_row: usize, f: impl Fn(usize, usize) + Sync + Send) {
    use rayon::prelude::*;
    if rows.saturating_mul(per_row) < PAR_MIN_ELEMS || rows < 2 || rayon::current_num_threads() <= 1 {
        f(0, rows);
        return;
    }
    let chunk = (GRAIN / per_row.max(1)).max(1);
    (0..rows.div_ceil(chunk)).into_par_iter().for_each(|c| f(c * chunk, ((c + 1) * chunk).min(rows)));
}

/// `a[outer, p, inner] = b[outer, p, inner]` for every index position p.
///
/// # Safety
/// `a` and `b` point to element 0 of their storages; every offset the walk reaches is inside
/// them. `a` is not read and its reached elements are pairwise distinct (a fresh output); `b`
/// does not overlap `a`.
pub unsafe fn gather<T: Element>(w: &Walk, a: *mut T, b: *const T) {
    let (p, inner) = (w.positions.len(), w.inner_len());
    let rows = w.outer_len() * p;
    if rows == 0 || inner == 0 {
        return;
    }
    let runs = w.inner_runs();
    // One element per row (no inner dims): skip the run loop.
    let single = match runs.as_slice() {
        [r] if r.len == 1 => Some((r.a, r.b)),
        _ => None,
    };
    let (pa, pb) = (SendPtr(a), SendPtr(b as *mut T));
    for_rows(rows, inner, |start, end| {
        let (a, b) = (pa.get(), pb.get() as *const T);
        let (mut o, mut pi, mut row) = (start / p, start % p, start);
        while row < end {
            // The rows of outer element `o` in [start, end).
            let (oa, ob) = w.outer_offsets(o);
            let take = (p - pi).min(end - row);
            let (ba, bb) = (w.a_offset + oa, w.b_offset + ob);
            for &(qa, qb) in &w.positions[pi..pi + take] {
                if let Some((ra, rb)) = single {
                    *a.offset(ba + qa + ra) = *b.offset(bb + qb + rb);
                    continue;
                }
                for r in &runs {
                    let (da, db) = (a.offset(ba + qa + r.a), b.offset(bb + qb + r.b));
                    if r.sa == 1 && r.sb == 1 {
                        // SAFETY: disjoint in-bounds runs (contract); contiguous, so a plain copy.
                        std::ptr::copy_nonoverlapping(db, da, r.len);
                    } else {
                        for i in 0..r.len as isize {
                            *da.offset(i * r.sa) = *db.offset(i * r.sb);
                        }
                    }
                }
            }
            row += take;
            o += 1;
            pi = 0;
        }
    });
}

/// How a scatter combines the old element with the incoming one.
pub trait Accumulate: Element {
    /// `x += y` as torch's index_put_(accumulate=True) computes it (wrapping for integers,
    /// logical or for bool).
    fn acc(self, y: Self) -> Self;
}

/// The narrow dtypes: each step rounds (or wraps) into the storage type, as torch's kernel.
macro_rules! wrapping_accumulate {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            fn acc(self, y: Self) -> Self {
                self.wrapping_add(y)
            }
        }
    )*};
}
wrapping_accumulate!(u8, i8, i16);
impl Accumulate for minigrad_base::element::f16 {
    fn acc(self, y: Self) -> Self {
        Self::from_f32(self.to_f32() + y.to_f32())
    }
}
impl Accumulate for minigrad_base::element::bf16 {
    fn acc(self, y: Self) -> Self {
        Self::from_f32(self.to_f32() + y.to_f32())
    }
}

impl Accumulate for f32 {
    fn acc(self, y: Self) -> Self {
        self + y
    }
}
impl Accumulate for f64 {
    fn acc(self, y: Self) -> Self {
        self + y
    }
}
impl Accumulate for i32 {
    fn acc(self, y: Self) -> Self {
        self.wrapping_add(y)
    }
}
impl Accumulate for i64 {
    fn acc(self, y: Self) -> Self {
        self.wrapping_add(y)
    }
}
impl Accumulate for bool {
    fn acc(self, y: Self) -> Self {
        self | y
    }
}

/// `a[outer, pos(p), inner] = b[outer, p, inner]` (or `+=` when `accumulate`), positions in
/// order, so duplicates resolve deterministically: the last write wins, sums add in order.
///
/// # Safety
/// As `gather`, except that positions may repeat (duplicate indices): `a` must have no
/// internal overlap, so distinct outer elements reach disjoint parts of `a`; work is split
/// only across outer elements. `b` does not overlap `a`.
pub unsafe fn scatter<T: Accumulate>(w: &Walk, a: *mut T, b: *const T, accumulate: bool) {
    let (p, inner) = (w.positions.len(), w.inner_len());
    let rows = w.outer_len();
    if rows == 0 || inner == 0 || p == 0 {
        return;
    }
    let runs = w.inner_runs();
    let (pa, pb) = (SendPtr(a), SendPtr(b as *mut T));
    for_rows(rows, p * inner, |start, end| {
        let (a, b) = (pa.get(), pb.get() as *const T);
        for o in start..end {
            let (oa, ob) = w.outer_offsets(o);
            for &(qa, qb) in &w.positions {
                let (ra, rb) = (w.a_offset + oa + qa, w.b_offset + ob + qb);
                for r in &runs {
                    for i in 0..r.len as isize {
                        let (da, db) = (a.offset(ra + r.a + i * r.sa), b.offset(rb + r.b + i * r.sb));
                        *da = if accumulate { (*da).acc(*db) } else { *db };
                    }
                }
            }
        }
    });
}

/// Coordinates of the nonzero elements of a row-major `data` of `shape`, written as torch's
/// nonzero result: `n` rows, one column per dim, column-major (`out[j * n + i]`).
/// `out` holds `n * shape.len()` elements, `n` being `count_nonzero(data)`.
pub fn nonzero<T: Element>(data: &[T], shape: &[usize], n: usize, out: &mut [i64]) {
    let zero = T::zero();
    let k = shape.len();
    if n == 0 || k == 0 {
        return;
    }
    // Walk the last dim as rows; the outer coordinates change once per row.
    let last = shape[k - 1];
    let mut outer = vec![0usize; k - 1];
    let mut i = 0;
    for row in data.chunks(last.max(1)) {
        for (c, &v) in row.iter().enumerate() {
            if v != zero {
                for (j, &o) in outer.iter().enumerate() {
                    out[j * n + i] = o as i64;
                }
                out[(k - 1) * n + i] = c as i64;
                i += 1;
            }
        }
        for d in (0..k - 1).rev() {
            outer[d] += 1;
            if outer[d] < shape[d] {
                break;
            }
            outer[d] = 0;
        }
    }
}

/// How many elements of `data` are nonzero.
pub fn count_nonzero<T: Element>(data: &[T]) -> usize {
    let zero = T::zero();
    data.iter().filter(|&&v| v != zero).count()
}

/// The elements of `data` where `mask` is true, in order (both row-major, same length).
pub fn masked_select<T: Element>(data: &[T], mask: &[bool]) -> Vec<T> {
    data.iter().zip(mask).filter(|(_, &m)| m).map(|(&v, _)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_rows_and_columns() {
        // src 3x4 row-major; out = src[[2, 0]] -> 2x4
        let src: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let mut out = vec![0f32; 8];
        let w = Walk {
            outer: vec![],
            positions: vec![(0, 8), (4, 0)],
            inner: vec![Dim { size: 4, a: 1, b: 1 }],
            a_offset: 0,
            b_offset: 0,
        };
        unsafe { gather(&w, out.as_mut_ptr(), src.as_ptr()) };
        assert_eq!(out, [8., 9., 10., 11., 0., 1., 2., 3.]);
        // out = src[:, [3, 1]] -> 3x2
        let mut out = vec![0f32; 6];
        let w = Walk {
            outer: vec![Dim { size: 3, a: 2, b: 4 }],
            positions: vec![(0, 3), (1, 1)],
            inner: vec![],
            a_offset: 0,
            b_offset: 0,
        };
        unsafe { gather(&w, out.as_mut_ptr(), src.as_ptr()) };
        assert_eq!(out, [3., 1., 7., 5., 11., 9.]);
    }

    #[test]
    fn scatter_duplicates_are_deterministic() {
        let mut dst = vec![0i64; 3];
        let vals = [1i64, 2, 3];
        let w = Walk { positions: vec![(0, 0), (0, 1), (2, 2)], ..Default::default() };
        unsafe { scatter(&w, dst.as_mut_ptr(), vals.as_ptr(), false) };
        assert_eq!(dst, [2, 0, 3]);
        unsafe { scatter(&w, dst.as_mut_ptr(), vals.as_ptr(), true) };
        assert_eq!(dst, [5, 0, 6]);
    }

    #[test]
    fn nonzero_is_column_major() {
        let data = [0., 1., 0., 2., 0., 3.];
        let n = count_nonzero(&data);
        assert_eq!(n, 3);
        let mut out = [0i64; 6];
        nonzero(&data, &[2, 3], n, &mut out);
        assert_eq!(out, [0, 1, 1, 1, 0, 2]);
        assert_eq!(count_nonzero(&[true]), 1);
        nonzero(&[true], &[], 1, &mut []);
    }
}
