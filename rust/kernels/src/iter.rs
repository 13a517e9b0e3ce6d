//! Strided iteration over N operands that share one (broadcast) shape.
//!
//! A `Plan` drops size-1 dims, orders dims by the first operand's strides (the output, so
//! writes walk memory forward even into a transposed destination) and merges dims that are
//! contiguous in every operand. Kernels then see runs: a start offset per operand, a length,
//! and one stride per operand. A fully contiguous op becomes a single run of stride 1.

use super::parallel::{for_split, split_threshold};

#[derive(Debug, Clone)]
pub struct Plan<const N: usize> {
    shape: Vec<usize>,
    strides: [Vec<isize>; N],
    offsets: [isize; N],
    /// Operand 0 (the destination) may name one element twice (torch allows writing such
    /// "too hard to prove" layouts): such plans run on one thread so no two tasks race.
    serial: bool,
}

impl<const N: usize> Plan<N> {
    /// `strides[k]` and `offsets[k]` describe operand k over `shape` (broadcast dims have stride 0).
    pub fn new(shape: &[usize], strides: [&[isize]; N], offsets: [usize; N]) -> Plan<N> {
        let mut dims: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        // Outer-to-inner by decreasing |stride| of operand 0; stable, so ties keep logical order.
        dims.sort_by(|&a, &b| strides[0][b].unsigned_abs().cmp(&strides[0][a].unsigned_abs()));
        let mut out_shape: Vec<usize> = Vec::with_capacity(dims.len());
        let mut out_strides: [Vec<isize>; N] = std::array::from_fn(|_| Vec::with_capacity(dims.len()));
        for &d in &dims {
            let merge = match out_shape.last() {
                Some(_) => (0..N).all(|k| {
                    let inner = strides[k][d];
                    *out_strides[k].last().unwrap() == inner * shape[d] as isize
                }),
                None => false,
            };
            if merge {
                *out_shape.last_mut().unwrap() *= shape[d];
                for k in 0..N {
                    *out_strides[k].last_mut().unwrap() = strides[k][d];
                }
            } else {
                out_shape.push(shape[d]);
                for k in 0..N {
                    out_strides[k].push(strides[k][d]);
                }
            }
        }
        if out_shape.is_empty() {
            out_shape.push(if shape.iter().any(|&s| s == 0) { 0 } else { 1 });
            for k in 0..N {
                out_strides[k].push(1);
            }
        }
        let serial = crate::layout::may_self_overlap(&out_shape, &out_strides[0]);
        Plan { shape: out_shape, strides: out_strides, offsets: offsets.map(|o| o as isize), serial }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// True when every operand is one contiguous run of stride 1.
    pub fn is_contiguous(&self) -> bool {
        self.shape.len() == 1 && (0..N).all(|k| self.strides[k][0] == 1)
    }

    /// Calls `f(offsets, len, inner_strides)` for every run covering linear indices [start, end).
    pub fn runs(&self, start: usize, end: usize, mut f: impl FnMut([isize; N], usize, [isize; N])) {
        if start >= end {
            return;
        }
        let nd = self.shape.len();
        let last = nd - 1;
        let inner: [isize; N] = std::array::from_fn(|k| self.strides[k][last]);
        // Multi-index of `start`.
        let mut idx = vec![0usize; nd];
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
        }
        let mut offs: [isize; N] = self.offsets;
        for d in 0..nd {
            for k in 0..N {
                offs[k] += idx[d] as isize * self.strides[k][d];
            }
        }
        let mut pos = start;
        while pos < end {
            let len = (self.shape[last] - idx[last]).min(end - pos);
            f(offs, len, inner);
            pos += len;
            if pos >= end {
                break;
            }
            // Advance the multi-index past this run (it ended at the end of the last dim).
            for k in 0..N {
                offs[k] += len as isize * inner[k];
            }
            idx[last] += len;
            let mut d = last;
            while idx[d] == self.shape[d] && d > 0 {
                for k in 0..N {
                    offs[k] -= self.shape[d] as isize * self.strides[k][d];
                    offs[k] += self.strides[k][d - 1];
                }
                idx[d] = 0;
                idx[d - 1] += 1;
                d -= 1;
            }
        }
    }

    /// Runs `f` over every run, split over the threads when the op is large (cost 1).
    pub fn for_each_run(&self, f: impl Fn([isize; N], usize, [isize; N]) + Sync + Send) {
        self.for_each_run_cost(1, f)
    }

    /// `for_each_run` for an op whose element costs `cost` in-place relu_ elements (see
    /// `parallel::split_threshold`); one contiguous piece per thread (`parallel::for_split`).
    pub fn for_each_run_cost(&self, cost: usize, f: impl Fn([isize; N], usize, [isize; N]) + Sync + Send) {
        let min_par = if self.serial { usize::MAX } else { split_threshold(cost) };
        for_split(self.numel(), min_par, |s, e| self.runs(s, e, &f));
    }

    /// For a plan of rows: two dims, every operand of stride 1 along a row and either
    /// contiguous (the next row follows) or one row repeated (stride 0 across rows, `x + bias`).
    /// Returns the row length and which operands repeat; None for any other plan (or one
    /// that must run serially).
    pub fn rows(&self) -> Option<(usize, [bool; N])> {
        if self.shape.len() != 2 || self.serial {
            return None;
        }
        let cols = self.shape[1];
        let mut repeats = [false; N];
        for k in 0..N {
            match (self.strides[k][0], self.strides[k][1]) {
                (0, 1) => repeats[k] = true,
                (s, 1) if s == cols as isize => {}
                _ => return None,
            }
        }
        Some((cols, repeats))
    }

    /// Operand k's first element (an offset in elements from its base).
    pub fn offset(&self, k: usize) -> isize {
        self.offsets[k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect<const N: usize>(p: &Plan<N>) -> Vec<([isize; N], usize, [isize; N])> {
        let mut v = vec![];
        p.runs(0, p.numel(), |o, l, s| v.push((o, l, s)));
        v
    }

    #[test]
    fn contiguous_coalesces_to_one_run() {
        let p = Plan::new(&[2, 3, 4], [&[12, 4, 1], &[12, 4, 1]], [0, 5]);
        assert!(p.is_contiguous());
        assert_eq!(collect(&p), vec![([0, 5], 24, [1, 1])]);
    }

    #[test]
    fn broadcast_and_transpose() {
        // out contiguous [2,3]; in: a row vector broadcast over dim 0
        let p = Plan::new(&[2, 3], [&[3, 1], &[0, 1]], [0, 0]);
        assert_eq!(collect(&p), vec![([0, 0], 3, [1, 1]), ([3, 0], 3, [1, 1])]);
        // out transposed [3,2] with strides [1,3]: iteration follows the output's memory order
        let p = Plan::new(&[3, 2], [&[1, 3], &[2, 1]], [0, 0]);
        let runs = collect(&p);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0], ([0, 0], 3, [1, 2]));
        assert_eq!(runs[1], ([3, 1], 3, [1, 2]));
    }

    #[test]
    fn partial_ranges_cover_exactly() {
        let p = Plan::new(&[3, 5], [&[10, 2], &[5, 1]], [1, 0]);
        let mut all = vec![];
        for (s, e) in [(0, 4), (4, 11), (11, 15)] {
            p.runs(s, e, |o, l, st| {
                for i in 0..l as isize {
                    all.push((o[0] + i * st[0], o[1] + i * st[1]));
                }
            });
        }
        let mut want = vec![];
        for i in 0..3 {
            for j in 0..5 {
                want.push((1 + 10 * i + 2 * j, 5 * i + j));
            }
        }
        assert_eq!(all, want);
    }

    #[test]
    fn interleaved_destinations_run_serially() {
        // (2,2) with strides (9,12): distinct elements, but not provably so by sorting.
        let p: Plan<1> = Plan::new(&[2, 2], [&[9, 12]], [0]);
        assert!(p.serial);
        let p: Plan<1> = Plan::new(&[4, 5], [&[1, 4]], [0]);
        assert!(!p.serial);
    }

    #[test]
    fn rows_are_found_only_where_each_operand_is_contiguous_or_one_row() {
        // out [4, 5] contiguous, a contiguous at an offset, b one row repeated
        let p = Plan::new(&[4, 5], [&[5, 1], &[5, 1], &[0, 1]], [0, 7, 3]);
        assert_eq!(p.rows(), Some((5, [false, false, true])));
        assert_eq!((p.offset(1), p.offset(2)), (7, 3));
        // a 3-d row broadcast merges into rows of 3 * 17
        let p = Plan::new(&[2, 3, 17], [&[51, 17, 1], &[0, 17, 1]], [0, 0]);
        assert_eq!(p.rows(), Some((51, [false, true])));
        // contiguous everywhere is one run, not rows; a column broadcast and a transpose are not rows
        assert_eq!(Plan::new(&[4, 5], [&[5, 1], &[5, 1]], [0, 0]).rows(), None);
        assert_eq!(Plan::new(&[4, 5], [&[5, 1], &[1, 0]], [0, 0]).rows(), None);
        assert_eq!(Plan::new(&[4, 5], [&[5, 1], &[1, 4]], [0, 0]).rows(), None);
        // a destination that must run serially
        let p: Plan<2> = Plan::new(&[2, 2], [&[9, 12], &[0, 1]], [0, 0]);
        assert_eq!(p.rows(), None);
    }

    #[test]
    fn zero_dim_and_empty() {
        let p: Plan<1> = Plan::new(&[], [&[]], [7]);
        assert_eq!(collect(&p), vec![([7], 1, [1])]);
        let p: Plan<1> = Plan::new(&[0, 3], [&[3, 1]], [0]);
        assert_eq!(p.numel(), 0);
        assert!(collect(&p).is_empty());
    }
}
