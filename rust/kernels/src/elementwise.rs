//! Elementwise kernels over strided operands: map (1 input), zip (2), zip3 (3).
//!
//! Contiguous runs are processed through slices so LLVM vectorises them; strided runs use
//! pointer arithmetic. Each kernel tells the split its cost in memory streams (relu_ in place
//! is 1, an out-of-place binary op 3: `parallel::split_threshold`). The `_inplace` variants read and write the same elements.
//!
//! # Safety (shared by every function here)
//! Each `Arg` must describe `shape` elements inside its storage. The destination must not overlap
//! any input, except that in the `_inplace` variants the destination is also the first input.
//! Storages must stay alive for the call (callers hold the tensors). A destination whose elements
//! may alias each other (torch allows writing an `as_strided` view with overlapping strides, and
//! filling an expanded one) is written sequentially, in iteration order, never from two threads.

use super::iter::Plan;
use super::parallel::{for_split, split_threshold, SendPtr};
use super::simd::{self, aligned_head, Body};
use super::Arg;
use crate::element::Element;

/// Contiguous runs at least this long run their slice loop under `simd::exec_256`, so LLVM
/// vectorises it with AVX2 registers rather than SSE2.
const WIDE_RUN: usize = 64;

/// `dst[i] = f(src[i])` over slices, as a `simd::exec` body.
struct Map<'a, S, D, F> {
    dst: &'a mut [D],
    src: &'a [S],
    f: &'a F,
}
impl<S: Copy, D, F: Fn(S) -> D> Body for Map<'_, S, D, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let h = aligned_head(self.dst);
        let ((d0, d1), (s0, s1)) = (self.dst.split_at_mut(h), self.src.split_at(h));
        for (dst, src) in [(d0, s0), (d1, s1)] {
            for (o, &x) in dst.iter_mut().zip(src) {
                *o = (self.f)(x);
            }
        }
    }
}

/// `xs[i] = f(xs[i])`.
struct MapInPlace<'a, T, F> {
    xs: &'a mut [T],
    f: &'a F,
}
impl<T: Copy, F: Fn(T) -> T> Body for MapInPlace<'_, T, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let h = aligned_head(self.xs);
        let (x0, x1) = self.xs.split_at_mut(h);
        for xs in [x0, x1] {
            for x in xs.iter_mut() {
                *x = (self.f)(*x);
            }
        }
    }
}

/// `dst[i] = f(a[i], b[i])`, or `f(a[i], b[0])` when `b` has one element (a broadcast scalar).
struct Zip<'a, A, B, D, F> {
    dst: &'a mut [D],
    a: &'a [A],
    b: &'a [B],
    f: &'a F,
}
impl<A: Copy, B: Copy, D, F: Fn(A, B) -> D> Body for Zip<'_, A, B, D, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let h = aligned_head(self.dst);
        let ((d0, d1), (a0, a1)) = (self.dst.split_at_mut(h), self.a.split_at(h));
        if self.b.len() == 1 && d0.len() + d1.len() != 1 {
            let y = self.b[0];
            for (dst, a) in [(d0, a0), (d1, a1)] {
                for (o, &x) in dst.iter_mut().zip(a) {
                    *o = (self.f)(x, y);
                }
            }
        } else {
            let (b0, b1) = self.b.split_at(h);
            for ((dst, a), b) in [(d0, a0), (d1, a1)].into_iter().zip([b0, b1]) {
                for ((o, &x), &y) in dst.iter_mut().zip(a).zip(b) {
                    *o = (self.f)(x, y);
                }
            }
        }
    }
}

/// `dst[i] = f(dst[i], b[i])`, or `f(dst[i], b[0])` for a one-element `b`.
struct ZipInPlace<'a, T, B, F> {
    dst: &'a mut [T],
    b: &'a [B],
    f: &'a F,
}
impl<T: Copy, B: Copy, F: Fn(T, B) -> T> Body for ZipInPlace<'_, T, B, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let h = aligned_head(self.dst);
        let (d0, d1) = self.dst.split_at_mut(h);
        if self.b.len() == 1 && d0.len() + d1.len() != 1 {
            let y = self.b[0];
            for dst in [d0, d1] {
                for x in dst.iter_mut() {
                    *x = (self.f)(*x, y);
                }
            }
        } else {
            let (b0, b1) = self.b.split_at(h);
            for (dst, b) in [(d0, b0), (d1, b1)] {
                for (x, &y) in dst.iter_mut().zip(b) {
                    *x = (self.f)(*x, y);
                }
            }
        }
    }
}

/// Walks the linear range `[start, end)` of a plan of rows of `cols` elements (`Plan::rows`) in
/// segments that end at row ends: `seg(i, col, len)` gets a segment's first index, the column
/// it starts at and its length, so `[i, i + len)` lies in one row and `[col, col + len)` in a
/// repeated row. The row kernels below differ only in what they read and write per segment.
#[inline(always)]
fn row_segments(cols: usize, start: usize, end: usize, mut seg: impl FnMut(usize, usize, usize)) {
    let mut i = start;
    while i < end {
        let col = i % cols;
        let len = (cols - col).min(end - i);
        seg(i, col, len);
        i += len;
    }
}

/// `dst[i] = f(a[i], b[i])` over `[start, end)` of a plan of rows (`row_segments`), where `a`
/// or `b` (`a_row`, `b_row`) is one row repeated: element `i` of a row operand is its element
/// `i % cols`. One `simd::exec_256` call for the whole range (the runs path enters it once per row).
struct ZipRows<'a, A, B, D, F> {
    dst: *mut D,
    a: *const A,
    b: *const B,
    a_row: bool,
    b_row: bool,
    cols: usize,
    start: usize,
    end: usize,
    f: &'a F,
}
impl<A: Copy, B: Copy, D, F: Fn(A, B) -> D> Body for ZipRows<'_, A, B, D, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        row_segments(self.cols, self.start, self.end, |i, col, len| {
            let (ai, bi) = (if self.a_row { col } else { i }, if self.b_row { col } else { i });
            // SAFETY: [i, i + len) lies in one row of the plan, whose operands hold it (the
            // kernel's contract, under which `dst` overlaps neither input); a row operand's
            // [col, col + len) lies in its row.
            let (o, x, y) = unsafe {
                (
                    std::slice::from_raw_parts_mut(self.dst.add(i), len),
                    std::slice::from_raw_parts(self.a.add(ai), len),
                    std::slice::from_raw_parts(self.b.add(bi), len),
                )
            };
            for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                *o = (self.f)(x, y);
            }
        })
    }
}

/// `dst[i] = f(dst[i], row[i % cols])` over `[start, end)` of a plan of rows (`ZipRows` in
/// place: `dst` is also the first input, so it is one mutable slice per segment, never a
/// second, shared one).
struct ZipRowsInPlace<'a, T, B, F> {
    dst: *mut T,
    row: *const B,
    cols: usize,
    start: usize,
    end: usize,
    f: &'a F,
}
impl<T: Copy, B: Copy, F: Fn(T, B) -> T> Body for ZipRowsInPlace<'_, T, B, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        row_segments(self.cols, self.start, self.end, |i, col, len| {
            // SAFETY: [i, i + len) lies in one row of dst, which holds it, and [col, col + len)
            // in `row`, which does not overlap dst (the kernel's contract).
            let (o, y) = unsafe {
                (std::slice::from_raw_parts_mut(self.dst.add(i), len), std::slice::from_raw_parts(self.row.add(col), len))
            };
            for (o, &y) in o.iter_mut().zip(y) {
                *o = (self.f)(*o, y);
            }
        })
    }
}

/// Runs `body` under `simd::exec_256` when the run is long enough to gain from vectors: these
/// loops stream their operands, and from L3 or DRAM 256-bit loads and stores beat AVX-512's
/// on this Zen 4 (docs/kernels.md, "Vector width of the streaming loops").
#[inline(always)]
pub fn wide<B: Body<Output = ()>>(len: usize, body: B) {
    if len >= WIDE_RUN {
        simd::exec_256(body)
    } else {
        body.call()
    }
}

pub unsafe fn map<S: Element, D: Element>(shape: &[usize], dst: Arg<D>, src: Arg<S>, f: impl Fn(S) -> D + Sync + Send) {
    let plan = Plan::new(shape, [dst.strides, src.strides], [dst.offset, src.offset]);
    let (d, s) = (SendPtr(dst.base), SendPtr(src.base));
    plan.for_each_run_cost(2, |o, len, st| {
        let (d, s) = (d.get().offset(o[0]), s.get().offset(o[1]) as *const S);
        if st == [1, 1] {
            // SAFETY: contiguous runs inside their storages; dst does not overlap src (contract).
            let (dv, sv) = (std::slice::from_raw_parts_mut(d, len), std::slice::from_raw_parts(s, len));
            wide(len, Map { dst: dv, src: sv, f: &f });
        } else if st == [1, 0] {
            // A broadcast source (stride 0: `expand`ed scalars and columns): one value fills
            // the run, a vectorised store instead of a strided loop (issue 13, 3x torch before).
            // SAFETY: a contiguous run of dst inside its storage; s is one readable element.
            std::slice::from_raw_parts_mut(d, len).fill(f(*s));
        } else {
            for i in 0..len as isize {
                *d.offset(i * st[0]) = f(*s.offset(i * st[1]));
            }
        }
    });
}

pub unsafe fn map_inplace<T: Element>(shape: &[usize], dst: Arg<T>, f: impl Fn(T) -> T + Sync + Send) {
    let plan = Plan::new(shape, [dst.strides], [dst.offset]);
    let d = SendPtr(dst.base);
    plan.for_each_run_cost(1, |o, len, st| {
        let d = d.get().offset(o[0]);
        if st[0] == 1 {
            // SAFETY: a contiguous run of dst that only this task touches.
            let body = MapInPlace { xs: std::slice::from_raw_parts_mut(d, len), f: &f };
            // AVX-512 here, not `wide`'s 256 bits: LLVM turns `*x = if x < 0 { 0 } else { x }`
            // (relu_) into a conditional store, a masked store, which AVX2 does with vmaskmovps,
            // microcoded on this Zen 4: relu_ of 1e5 floats took 43 us at 256 bits, 4 at 512.
            if len >= WIDE_RUN {
                simd::exec(body)
            } else {
                body.call()
            }
        } else {
            for i in 0..len as isize {
                let p = d.offset(i * st[0]);
                *p = f(*p);
            }
        }
    });
}

pub unsafe fn zip<A: Element, B: Element, D: Element>(
    shape: &[usize],
    dst: Arg<D>,
    a: Arg<A>,
    b: Arg<B>,
    f: impl Fn(A, B) -> D + Sync + Send,
) {
    let plan = Plan::new(shape, [dst.strides, a.strides, b.strides], [dst.offset, a.offset, b.offset]);
    if let Some((cols, [false, a_row, b_row])) = plan.rows() {
        if !(a_row && b_row) {
            let (d, pa, pb) = (dst.base.offset(plan.offset(0)), a.base.offset(plan.offset(1)), b.base.offset(plan.offset(2)));
            let (d, pa, pb) = (SendPtr(d), SendPtr(pa), SendPtr(pb));
            for_split(plan.numel(), split_threshold(3), |start, end| {
                simd::exec_256(ZipRows { dst: d.get(), a: pa.get() as *const A, b: pb.get() as *const B, a_row, b_row, cols, start, end, f: &f })
            });
            return;
        }
    }
    let (d, pa, pb) = (SendPtr(dst.base), SendPtr(a.base), SendPtr(b.base));
    plan.for_each_run_cost(3, |o, len, st| {
        let d = d.get().offset(o[0]);
        let a = pa.get().offset(o[1]) as *const A;
        let b = pb.get().offset(o[2]) as *const B;
        if st == [1, 1, 1] {
            // SAFETY: contiguous runs; dst overlaps neither input (contract).
            let dv = std::slice::from_raw_parts_mut(d, len);
            let (av, bv) = (std::slice::from_raw_parts(a, len), std::slice::from_raw_parts(b, len));
            wide(len, Zip { dst: dv, a: av, b: bv, f: &f });
        } else if st == [1, 1, 0] {
            // A scalar or broadcast row on the right: the commonest broadcast, kept vectorisable.
            let dv = std::slice::from_raw_parts_mut(d, len);
            let (av, bv) = (std::slice::from_raw_parts(a, len), std::slice::from_raw_parts(b, 1));
            wide(len, Zip { dst: dv, a: av, b: bv, f: &f });
        } else {
            for i in 0..len as isize {
                *d.offset(i * st[0]) = f(*a.offset(i * st[1]), *b.offset(i * st[2]));
            }
        }
    });
}

/// `dst[i] = f(dst[i], b[i])`; `b` must not overlap `dst` (pass `b == dst` through `map_inplace`).
pub unsafe fn zip_inplace<T: Element, B: Element>(shape: &[usize], dst: Arg<T>, b: Arg<B>, f: impl Fn(T, B) -> T + Sync + Send) {
    let plan = Plan::new(shape, [dst.strides, b.strides], [dst.offset, b.offset]);
    if let Some((cols, [false, true])) = plan.rows() {
        let (d, pb) = (SendPtr(dst.base.offset(plan.offset(0))), SendPtr(b.base.offset(plan.offset(1))));
        for_split(plan.numel(), split_threshold(2), |start, end| {
            simd::exec_256(ZipRowsInPlace { dst: d.get(), row: pb.get() as *const B, cols, start, end, f: &f })
        });
        return;
    }
    let (d, pb) = (SendPtr(dst.base), SendPtr(b.base));
    plan.for_each_run_cost(2, |o, len, st| {
        let d = d.get().offset(o[0]);
        let b = pb.get().offset(o[1]) as *const B;
        if st == [1, 1] {
            // SAFETY: contiguous, disjoint runs (contract).
            let dv = std::slice::from_raw_parts_mut(d, len);
            wide(len, ZipInPlace { dst: dv, b: std::slice::from_raw_parts(b, len), f: &f });
        } else if st == [1, 0] {
            let dv = std::slice::from_raw_parts_mut(d, len);
            wide(len, ZipInPlace { dst: dv, b: std::slice::from_raw_parts(b, 1), f: &f });
        } else {
            for i in 0..len as isize {
                let p = d.offset(i * st[0]);
                *p = f(*p, *b.offset(i * st[1]));
            }
        }
    });
}

pub unsafe fn zip3<A: Element, B: Element, C: Element, D: Element>(
    shape: &[usize],
    dst: Arg<D>,
    a: Arg<A>,
    b: Arg<B>,
    c: Arg<C>,
    f: impl Fn(A, B, C) -> D + Sync + Send,
) {
    let plan = Plan::new(
        shape,
        [dst.strides, a.strides, b.strides, c.strides],
        [dst.offset, a.offset, b.offset, c.offset],
    );
    let (d, pa, pb, pc) = (SendPtr(dst.base), SendPtr(a.base), SendPtr(b.base), SendPtr(c.base));
    plan.for_each_run_cost(4, |o, len, st| {
        let d = d.get().offset(o[0]);
        let a = pa.get().offset(o[1]) as *const A;
        let b = pb.get().offset(o[2]) as *const B;
        let c = pc.get().offset(o[3]) as *const C;
        for i in 0..len as isize {
            *d.offset(i * st[0]) = f(*a.offset(i * st[1]), *b.offset(i * st[2]), *c.offset(i * st[3]));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_segments_tile_the_range_within_rows() {
        for (cols, start, end) in [(7, 0, 70), (7, 3, 40), (1000, 999, 2001), (5, 4, 5), (3, 6, 6)] {
            let mut next = start;
            row_segments(cols, start, end, |i, col, len| {
                assert_eq!((i, col), (next, next % cols));
                assert!(len > 0 && col + len <= cols, "segment crosses a row end");
                next = i + len;
            });
            assert_eq!(next, end);
        }
    }

    /// A repeated row, on either side and in place, over enough rows that two threads split
    /// the plan mid-row: every element against a plain loop.
    #[test]
    fn row_broadcasts_match_a_plain_loop() {
        let (rows, cols) = (3001, 97);
        let n = rows * cols;
        let full: Vec<f32> = (0..n).map(|i| (i % 251) as f32 - 125.0).collect();
        let row: Vec<f32> = (0..cols).map(|c| 0.5 + c as f32).collect();
        let f = |x: f32, y: f32| x * 3.0 - y;
        let (full_s, row_s) = (&[cols as isize, 1][..], &[0isize, 1][..]);
        let arg = |v: &[f32], s| Arg { base: v.as_ptr() as *mut f32, strides: s, offset: 0 };
        for row_first in [false, true] {
            let mut out = vec![0f32; n];
            let dst = Arg { base: out.as_mut_ptr(), strides: full_s, offset: 0 };
            // SAFETY: every operand holds the shape's elements; `out` overlaps neither input.
            unsafe {
                if row_first {
                    zip(&[rows, cols], dst, arg(&row, row_s), arg(&full, full_s), f);
                } else {
                    zip(&[rows, cols], dst, arg(&full, full_s), arg(&row, row_s), f);
                }
            }
            for (i, &o) in out.iter().enumerate() {
                let (x, y) = (full[i], row[i % cols]);
                assert_eq!(o, if row_first { f(y, x) } else { f(x, y) }, "element {i}");
            }
        }
        let mut xs = full.clone();
        let dst = Arg { base: xs.as_mut_ptr(), strides: full_s, offset: 0 };
        // SAFETY: both operands hold the shape's elements; `row` does not overlap `xs`.
        unsafe { zip_inplace(&[rows, cols], dst, arg(&row, row_s), f) };
        for (i, &o) in xs.iter().enumerate() {
            assert_eq!(o, f(full[i], row[i % cols]), "element {i}");
        }
    }
}
