//! Reductions: one engine that folds a strided input into per-output accumulators, and the
//! reducers it runs (in `reducers`).
//!
//! The engine sees the input as kept dims (one output element per index) and reduced dims.
//! Two loop shapes cover every layout:
//! - *inner*: the innermost dim in memory is reduced (sum over the last dim of a contiguous
//!   tensor): each output folds its own contiguous runs, through slices.
//! - *outer*: the innermost dim in memory is kept (sum over dim 0 of a contiguous matrix): a
//!   block of outputs accumulates whole rows at a time, so memory is read in order and the
//!   per-row loop vectorises, instead of striding through memory once per output element.
//!
//! Determinism (DESIGN invariant 7): how a reduction is split into partial results depends on
//! the shape only — fixed-size chunks of the reduced index (`GRAIN`), combined in index order —
//! never on the number of threads. Parallelism only decides who computes each partial, so
//! results are bit-identical run to run and on any machine. The two hot loops (a reducer's
//! fold of a contiguous run, and a block of outputs accumulating rows) run through
//! `simd::exec`, so the reducers' fixed-lane loops are vectorised with the machine's widest
//! registers; the lanes (and so the order of additions) are fixed by the code, not the width.

use super::parallel::{SendPtr, GRAIN, PAR_MIN_ELEMS};
use super::simd;
use super::Arg;
use crate::element::Element;
use rayon::prelude::*;

/// One reduction: accumulator type, how elements fold in, how partials combine, and where
/// results go. Implementations are small `Copy` structs, monomorphised per dtype.
pub trait Reducer: Copy + Send + Sync {
    type In: Element;
    type Acc: Copy + Send + Sync;
    /// Fresh accumulator for output element `o` (its row-major index in the output).
    fn init(&self, o: usize) -> Self::Acc;
    /// Folds `x`, the element at reduced index `i` (the position along the reduced dims).
    fn step(&self, acc: Self::Acc, x: Self::In, i: usize) -> Self::Acc;
    /// Combines partials of two consecutive ranges; `a` covers the earlier one.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// Stores the result of output element `o`.
    ///
    /// # Safety
    /// `o` is less than the output count the reducer's buffers were made for, and each `o` is
    /// written once, by one thread.
    unsafe fn write(&self, o: usize, acc: Self::Acc);
    /// Folds a contiguous run starting at reduced index `i0` (reducers override it to vectorise).
    #[inline(always)]
    fn fold_slice(&self, mut acc: Self::Acc, xs: &[Self::In], i0: usize) -> Self::Acc {
        for (k, &x) in xs.iter().enumerate() {
            acc = self.step(acc, x, i0 + k);
        }
        acc
    }
}

/// A kept dim: size, input stride, and stride in the (row-major, kept-dims-only) output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    size: usize,
    stride: isize,
    ostride: usize,
}

/// Kept and reduced dims of one reduction, with size-1 dims dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// Kept dims in logical order (the output's order).
    keep: Vec<Kept>,
    /// Reduced dims as (size, stride), outer to inner in memory, coalesced where contiguous.
    red: Vec<(usize, isize)>,
    offset: isize,
    pub out_numel: usize,
    pub red_numel: usize,
}

/// Sort key for "innermost in memory": a zero stride (an expanded dim) never is.
fn mem_key(stride: isize) -> usize {
    if stride == 0 {
        usize::MAX
    } else {
        stride.unsigned_abs()
    }
}

impl Geometry {
    /// `reduce[d]` says whether dim `d` is reduced; the output has the kept dims, row-major.
    /// Reduced dims are visited in memory order, so the reduced index `i` given to `step` is
    /// the logical position only when at most one reduced dim has size > 1 (the case of every
    /// reducer that reads `i`).
    pub fn new(shape: &[usize], strides: &[isize], offset: usize, reduce: &[bool]) -> Geometry {
        let mut keep = Vec::new();
        let mut red: Vec<(usize, isize)> = Vec::new();
        let (mut out_numel, mut red_numel) = (1usize, 1usize);
        for d in 0..shape.len() {
            if reduce[d] {
                red_numel *= shape[d];
                if shape[d] != 1 {
                    red.push((shape[d], strides[d]));
                }
            } else {
                out_numel *= shape[d];
                if shape[d] != 1 {
                    keep.push(Kept { size: shape[d], stride: strides[d], ostride: 0 });
                }
            }
        }
        let mut acc = 1usize;
        for k in keep.iter_mut().rev() {
            k.ostride = acc;
            acc *= k.size;
        }
        // Outer to inner by memory stride (stable: ties keep logical order), then merge dims
        // that continue each other in memory.
        red.sort_by_key(|&(_, stride)| std::cmp::Reverse(mem_key(stride)));
        let mut merged: Vec<(usize, isize)> = Vec::with_capacity(red.len());
        for (size, stride) in red {
            match merged.last_mut() {
                Some(last) if last.1 == stride * size as isize => *last = (last.0 * size, stride),
                _ => merged.push((size, stride)),
            }
        }
        Geometry { keep, red: merged, offset: offset as isize, out_numel, red_numel }
    }

    /// Input offset of output element `o`'s first reduced element.
    fn keep_offset(&self, mut o: usize) -> isize {
        let mut off = self.offset;
        for k in self.keep.iter().rev() {
            off += (o % k.size) as isize * k.stride;
            o /= k.size;
        }
        off
    }
}

/// Walks consecutive outputs, keeping the input offset of the current one (no divisions per
/// output: reductions of a few elements each are dominated by this bookkeeping otherwise).
struct Walker<'a> {
    keep: &'a [Kept],
    idx: Vec<usize>,
    off: isize,
}

impl<'a> Walker<'a> {
    fn new(g: &'a Geometry, o: usize) -> Walker<'a> {
        let mut idx = vec![0; g.keep.len()];
        let mut rem = o;
        for (d, k) in g.keep.iter().enumerate().rev() {
            idx[d] = rem % k.size;
            rem /= k.size;
        }
        Walker { keep: &g.keep, idx, off: g.keep_offset(o) }
    }

    fn advance(&mut self) {
        for d in (0..self.keep.len()).rev() {
            self.idx[d] += 1;
            self.off += self.keep[d].stride;
            if self.idx[d] < self.keep[d].size {
                return;
            }
            self.off -= self.keep[d].size as isize * self.keep[d].stride;
            self.idx[d] = 0;
        }
    }
}

/// Calls `f(offset, len, stride, pos)` for the runs covering reduced indices `[s, e)`, where
/// `pos` is the reduced index of the run's first element and offsets include `base`.
#[inline(always)]
fn red_runs(red: &[(usize, isize)], base: isize, s: usize, e: usize, mut f: impl FnMut(isize, usize, isize, usize)) {
    if s >= e {
        return;
    }
    let nd = red.len();
    if nd == 0 {
        // Every reduced dim has size 1: one element.
        f(base, 1, 0, 0);
        return;
    }
    let (inner, inner_stride) = red[nd - 1];
    if nd == 1 {
        f(base + s as isize * inner_stride, e - s, inner_stride, s);
        return;
    }
    let mut idx = vec![0usize; nd];
    let mut rem = s;
    let mut off = base;
    for d in (0..nd).rev() {
        idx[d] = rem % red[d].0;
        rem /= red[d].0;
        off += idx[d] as isize * red[d].1;
    }
    let mut pos = s;
    while pos < e {
        let len = (inner - idx[nd - 1]).min(e - pos);
        f(off, len, inner_stride, pos);
        pos += len;
        if pos >= e {
            break;
        }
        // This run ended at the end of the inner dim: carry into the outer ones.
        off -= idx[nd - 1] as isize * inner_stride;
        idx[nd - 1] = 0;
        let mut d = nd - 1;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            off += red[d].1;
            if idx[d] < red[d].0 {
                break;
            }
            off -= red[d].0 as isize * red[d].1;
            idx[d] = 0;
        }
    }
}

/// Contiguous runs at least this long are folded under `simd::exec` (shorter ones do not pay
/// for the dispatch).
const WIDE_RUN: usize = 64;

/// `r.fold_slice` as a `simd::exec` body.
struct FoldSlice<'a, R: Reducer> {
    r: &'a R,
    acc: R::Acc,
    xs: &'a [R::In],
    i0: usize,
}
impl<R: Reducer> simd::Body for FoldSlice<'_, R> {
    type Output = R::Acc;
    #[inline(always)]
    fn call(self) -> R::Acc {
        self.r.fold_slice(self.acc, self.xs, self.i0)
    }
}

/// `len` input rows (`stride` apart from element offset `run`) folded into a block of
/// accumulators, one per consecutive output along the kept dim (`kstride` apart in the input).
struct Rows<'a, R: Reducer> {
    r: &'a R,
    accs: &'a mut [R::Acc],
    base: SendPtr<R::In>,
    run: isize,
    len: usize,
    stride: isize,
    pos: usize,
    kstride: isize,
}
impl<R: Reducer> simd::Body for Rows<'_, R> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let Rows { r, accs, base, run, len, stride, pos, kstride } = self;
        for t in 0..len {
            // SAFETY: row run + t * stride lies inside the input (the constructor's contract).
            let row = unsafe { base.get().offset(run + t as isize * stride) } as *const R::In;
            let i = pos + t;
            if kstride == 1 {
                // SAFETY: the block's outputs are consecutive input elements of this row.
                let xs = unsafe { std::slice::from_raw_parts(row, accs.len()) };
                for (a, &x) in accs.iter_mut().zip(xs) {
                    *a = r.step(*a, x, i);
                }
            } else {
                for (jj, a) in accs.iter_mut().enumerate() {
                    // SAFETY: output jj of the block is an input element of this row.
                    *a = r.step(*a, unsafe { *row.offset(jj as isize * kstride) }, i);
                }
            }
        }
    }
}

/// Outputs per parallel task of the outer shape, and rows of the reduced range per task when
/// the outputs alone give too little parallel work.
const BLOCK: usize = 1024;
const MAX_ROW_CHUNKS: usize = 256;
/// With at least this many outputs, the outer shape never splits the reduced range.
const MANY_OUTPUTS: usize = 4096;

/// Runs reducer `r` over `src` (laid out as `shape`/`src.strides`), reducing the dims marked
/// in `reduce`. Output element `o` (row-major over the kept dims) is stored by `r.write(o, _)`.
///
/// # Safety
/// `src` must describe `shape` elements inside its storage, which must stay alive for the
/// call; the reducer's outputs must hold `Geometry::out_numel` elements and must not overlap
/// `src`.
pub unsafe fn reduce<R: Reducer>(r: R, shape: &[usize], src: Arg<R::In>, reduce: &[bool]) {
    let g = Geometry::new(shape, src.strides, src.offset, reduce);
    if g.out_numel == 0 {
        return;
    }
    if g.red_numel == 0 {
        for o in 0..g.out_numel {
            // SAFETY: o < out_numel, each written once.
            r.write(o, r.init(o));
        }
        return;
    }
    let base = SendPtr(src.base);
    let inner_red = g.red.last().map_or(usize::MAX, |&(_, s)| mem_key(s));
    let inner_keep = g.keep.iter().enumerate().min_by_key(|(_, k)| mem_key(k.stride));
    match inner_keep {
        Some((k, kept)) if mem_key(kept.stride) < inner_red => reduce_outer(r, &g, base, k),
        _ => reduce_inner(r, &g, base),
    }
}

/// Folds reduced indices `[s, e)` of the output whose reduced block starts at `off`.
#[inline(always)]
unsafe fn fold_range<R: Reducer>(r: &R, g: &Geometry, base: SendPtr<R::In>, off: isize, o: usize, s: usize, e: usize) -> R::Acc {
    let mut acc = r.init(o);
    red_runs(&g.red, off, s, e, |run, len, stride, pos| {
        let p = base.get().offset(run) as *const R::In;
        if stride == 1 {
            // SAFETY: a run of `len` consecutive elements inside the input (caller's contract).
            let xs = std::slice::from_raw_parts(p, len);
            acc = if len >= WIDE_RUN { simd::exec(FoldSlice { r, acc, xs, i0: pos }) } else { r.fold_slice(acc, xs, pos) };
        } else {
            for k in 0..len {
                // SAFETY: the k-th element of a run inside the input (caller's contract).
                acc = r.step(acc, *p.offset(k as isize * stride), pos + k);
            }
        }
    });
    acc
}

/// The inner shape: each output folds its reduced block in `GRAIN`-sized chunks, in order.
unsafe fn reduce_inner<R: Reducer>(r: R, g: &Geometry, base: SendPtr<R::In>) {
    let n = g.red_numel;
    let chunks = n.div_ceil(GRAIN);
    let chunk = |c: usize| (c * GRAIN, ((c + 1) * GRAIN).min(n));
    // One output, whole: the same partials whatever the schedule.
    let whole = |off: isize, o: usize| {
        let (s, e) = chunk(0);
        let mut acc = fold_range(&r, g, base, off, o, s, e);
        for c in 1..chunks {
            let (s, e) = chunk(c);
            acc = r.merge(acc, fold_range(&r, g, base, off, o, s, e));
        }
        acc
    };
    let outputs = |o0: usize, o1: usize| {
        let mut w = Walker::new(g, o0);
        for o in o0..o1 {
            // SAFETY: o < out_numel, written once here.
            r.write(o, whole(w.off, o));
            w.advance();
        }
    };
    let total = g.out_numel.saturating_mul(n);
    let threads = rayon::current_num_threads();
    if total < PAR_MIN_ELEMS || threads <= 1 {
        outputs(0, g.out_numel);
    } else if g.out_numel >= 4 * threads {
        // Many outputs: tasks of whole outputs, about GRAIN input elements each.
        let per = (GRAIN / n).max(1);
        (0..g.out_numel.div_ceil(per)).into_par_iter().for_each(|t| outputs(t * per, ((t + 1) * per).min(g.out_numel)));
    } else {
        // Few outputs: their chunks in parallel, merged in order.
        for o in 0..g.out_numel {
            let off = g.keep_offset(o);
            let parts: Vec<R::Acc> = (0..chunks)
                .into_par_iter()
                .map(|c| {
                    let (s, e) = chunk(c);
                    fold_range(&r, g, base, off, o, s, e)
                })
                .collect();
            let acc = parts.into_iter().reduce(|a, b| r.merge(a, b)).unwrap_or_else(|| r.init(o));
            // SAFETY: o < out_numel, written once here.
            r.write(o, acc);
        }
    }
}

/// The outer shape: outputs along kept dim `k` (innermost in memory) accumulate row by row.
unsafe fn reduce_outer<R: Reducer>(r: R, g: &Geometry, base: SendPtr<R::In>, k: usize) {
    let kd = g.keep[k];
    let rest: Vec<Kept> = g.keep.iter().enumerate().filter(|&(i, _)| i != k).map(|(_, &d)| d).collect();
    let m = kd.size;
    let n = g.red_numel;
    let n_rest = g.out_numel / m;
    let jb = m.min(BLOCK);
    let n_jb = m.div_ceil(jb);
    let total = g.out_numel.saturating_mul(n);
    // Split the reduced range only when outputs are few: fixed by the shape, not the machine.
    let rows = if g.out_numel >= MANY_OUTPUTS || total < PAR_MIN_ELEMS {
        n
    } else {
        (GRAIN / jb).max(1).max(n.div_ceil(MAX_ROW_CHUNKS))
    };
    let n_rc = n.div_ceil(rows);

    // Offsets of the rest dims for rest index q: (input, output).
    let rest_offsets = |mut q: usize| {
        let (mut ioff, mut ooff) = (g.offset, 0usize);
        for d in rest.iter().rev() {
            let i = q % d.size;
            q /= d.size;
            ioff += i as isize * d.stride;
            ooff += i * d.ostride;
        }
        (ioff, ooff)
    };
    // Accumulators of outputs j0..j1 (along k) of rest index q over reduced rows [s, e).
    let block = |q: usize, b: usize, s: usize, e: usize| -> (usize, Vec<R::Acc>) {
        let (ioff, ooff) = rest_offsets(q);
        let j0 = b * jb;
        let j1 = (j0 + jb).min(m);
        let mut accs: Vec<R::Acc> = (j0..j1).map(|j| r.init(ooff + j * kd.ostride)).collect();
        red_runs(&g.red, ioff + j0 as isize * kd.stride, s, e, |run, len, stride, pos| {
            let rows = Rows { r: &r, accs: &mut accs, base, run, len, stride, pos, kstride: kd.stride };
            // SAFETY: rows run + t * stride (t < len), columns j0..j1, lie inside the input.
            simd::exec(rows)
        });
        (ooff + j0 * kd.ostride, accs)
    };
    let store = |o0: usize, accs: Vec<R::Acc>| {
        for (jj, acc) in accs.into_iter().enumerate() {
            // SAFETY: distinct (q, j) give distinct outputs below out_numel.
            r.write(o0 + jj * kd.ostride, acc);
        }
    };
    let tasks = n_rest * n_jb;
    let parallel = total >= PAR_MIN_ELEMS && rayon::current_num_threads() > 1;
    if n_rc == 1 {
        let task = |t: usize| {
            let (o0, accs) = block(t / n_jb, t % n_jb, 0, n);
            store(o0, accs);
        };
        if parallel {
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
        return;
    }
    // Row chunks: partials per (task, chunk), merged in chunk order.
    let part = |t: usize, c: usize| block(t / n_jb, t % n_jb, c * rows, ((c + 1) * rows).min(n));
    for t in 0..tasks {
        let parts: Vec<(usize, Vec<R::Acc>)> = if parallel {
            (0..n_rc).into_par_iter().map(|c| part(t, c)).collect()
        } else {
            (0..n_rc).map(|c| part(t, c)).collect()
        };
        let mut it = parts.into_iter();
        let Some((o0, mut accs)) = it.next() else { continue };
        for (_, p) in it {
            for (a, b) in accs.iter_mut().zip(p) {
                *a = r.merge(*a, b);
            }
        }
        store(o0, accs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_drops_unit_dims_and_coalesces() {
        // [2, 3, 4] contiguous, reduce dims 1 and 2: one reduced run of 12.
        let g = Geometry::new(&[2, 3, 4], &[12, 4, 1], 0, &[false, true, true]);
        assert_eq!(g.red, vec![(12, 1)]);
        assert_eq!(g.keep, vec![Kept { size: 2, stride: 12, ostride: 1 }]);
        assert_eq!((g.out_numel, g.red_numel), (2, 12));
        // Transposed reduced dims are visited in memory order.
        let g = Geometry::new(&[4, 3], &[1, 4], 0, &[true, true]);
        assert_eq!(g.red, vec![(12, 1)]);
        // Size-1 dims vanish; an empty reduced dim gives red_numel 0.
        let g = Geometry::new(&[1, 0, 5], &[5, 5, 1], 0, &[true, true, false]);
        assert_eq!((g.out_numel, g.red_numel), (5, 0));
    }

    use crate::reducers::{ArgExtreme, SumProd};

    /// Deterministic pseudo-random values in [-1, 1).
    fn data(n: usize) -> Vec<f32> {
        let mut s = 0x2545F4914F6CDD1Du64;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// Sums `x` (laid out as shape/strides/offset) over `mask` with a pool of `threads`.
    fn sum_with(threads: usize, x: &[f32], shape: &[usize], strides: &[isize], offset: usize, mask: &[bool]) -> Vec<f32> {
        let out_numel: usize = shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&s, _)| s).product();
        let mut out = vec![0f32; out_numel];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let r = SumProd::<f32, f32, false>::new(out.as_mut_ptr(), None);
        // SAFETY: the layouts the tests use stay inside `x`; `out` holds out_numel elements.
        pool.install(|| unsafe { reduce(r, shape, Arg { base: x.as_ptr() as *mut f32, strides, offset }, mask) });
        out
    }

    /// The same sums in f64, element by element in logical order.
    fn naive_sum(x: &[f32], shape: &[usize], strides: &[isize], offset: usize, mask: &[bool]) -> Vec<f64> {
        let out_numel: usize = shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&s, _)| s).product();
        let mut out = vec![0f64; out_numel];
        let n: usize = shape.iter().product();
        for lin in 0..n {
            let (mut rem, mut off, mut o, mut ostride) = (lin, offset as isize, 0usize, 1usize);
            for d in (0..shape.len()).rev() {
                let i = rem % shape[d];
                rem /= shape[d];
                off += i as isize * strides[d];
                if !mask[d] {
                    o += i * ostride;
                    ostride *= shape[d];
                }
            }
            out[o] += x[off as usize] as f64;
        }
        out
    }

    #[test]
    fn bit_identical_across_thread_counts_and_close_to_exact() {
        let x = data(600 * 700 + 1);
        // contiguous, transposed, and stepped-with-offset layouts of a 600x700 block
        let layouts: [(&[usize], &[isize], usize); 3] =
            [(&[600, 700], &[700, 1], 0), (&[700, 600], &[1, 700], 0), (&[300, 233], &[1400, 3], 1)];
        for (shape, strides, offset) in layouts {
            for mask in [[true, true], [true, false], [false, true], [false, false]] {
                let one = sum_with(1, &x, shape, strides, offset, &mask);
                for threads in [2, 3, 8] {
                    let many = sum_with(threads, &x, shape, strides, offset, &mask);
                    assert!(one.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits()), "{:?} {:?}", shape, mask);
                }
                let exact = naive_sum(&x, shape, strides, offset, &mask);
                for (a, e) in one.iter().zip(&exact) {
                    assert!((*a as f64 - e).abs() <= 1e-6 * e.abs().max(1.0), "{} vs {}", a, e);
                }
            }
        }
    }

    #[test]
    fn arg_reductions_find_the_first_extreme_across_chunks() {
        // Ties straddling GRAIN-sized chunks: the first index must win however work is split.
        let n = 3 * GRAIN + 5;
        let mut x = vec![0f32; n];
        x[GRAIN + 1] = 2.0;
        x[2 * GRAIN + 7] = 2.0;
        x[n - 1] = 2.0;
        for threads in [1, 4] {
            let mut idx = [0i64];
            let r = ArgExtreme::<f32, true> { values: None, indices: SendPtr(idx.as_mut_ptr()) };
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let xs = &x;
            // SAFETY: one contiguous run of n elements; one output.
            pool.install(|| unsafe { reduce(r, &[n], Arg { base: xs.as_ptr() as *mut f32, strides: &[1], offset: 0 }, &[true]) });
            assert_eq!(idx[0], (GRAIN + 1) as i64);
        }
        // A NaN anywhere wins, and the first NaN's index is reported.
        x[2 * GRAIN] = f32::NAN;
        x[3 * GRAIN] = f32::NAN;
        let (mut v, mut idx) = ([0f32], [0i64]);
        let r = ArgExtreme::<f32, true> { values: Some(SendPtr(v.as_mut_ptr())), indices: SendPtr(idx.as_mut_ptr()) };
        let src = Arg { base: x.as_mut_ptr(), strides: &[1], offset: 0 };
        // SAFETY: as above.
        unsafe { reduce(r, &[n], src, &[true]) };
        assert!(v[0].is_nan());
        assert_eq!(idx[0], (2 * GRAIN) as i64);
    }

    #[test]
    fn outer_reductions_split_rows_the_same_way_on_any_pool() {
        // Few outputs, many rows: the outer shape splits the reduced range into row chunks.
        let (rows, cols) = (200_000, 3);
        let x = data(rows * cols);
        let one = sum_with(1, &x, &[rows, cols], &[cols as isize, 1], 0, &[true, false]);
        let many = sum_with(4, &x, &[rows, cols], &[cols as isize, 1], 0, &[true, false]);
        assert_eq!(one.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), many.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let exact = naive_sum(&x, &[rows, cols], &[cols as isize, 1], 0, &[true, false]);
        for (a, e) in one.iter().zip(&exact) {
            assert!((*a as f64 - e).abs() <= 1e-6 * e.abs().max(1.0));
        }
    }

    #[test]
    fn empty_reductions_write_the_identity() {
        let x: Vec<f32> = vec![];
        assert_eq!(sum_with(2, &x, &[0, 3], &[3, 1], 0, &[true, false]), vec![0.0; 3]);
        assert_eq!(sum_with(2, &x, &[3, 0], &[0, 1], 0, &[true, false]), Vec::<f32>::new());
        let one = [5.0f32];
        assert_eq!(sum_with(1, &one, &[], &[], 0, &[]), vec![5.0]);
    }

    #[test]
    fn runs_cover_partial_ranges_in_order() {
        // Reduced dims (3, stride 10) x (4, stride 2), base 1: split at awkward points.
        let red = [(3usize, 10isize), (4, 2)];
        let mut seen = vec![];
        for (s, e) in [(0, 5), (5, 6), (6, 12)] {
            red_runs(&red, 1, s, e, |off, len, st, pos| {
                for k in 0..len {
                    seen.push((pos + k, off + k as isize * st));
                }
            });
        }
        let want: Vec<(usize, isize)> = (0..12).map(|i| (i, 1 + 10 * (i / 4) as isize + 2 * (i % 4) as isize)).collect();
        assert_eq!(seen, want);
    }
}
