//! Max pooling with and without torch's indices, and its input gradient.
//!
//! Each output is the maximum over its window's taps taken in torch's order (window row, then
//! window column, both increasing), keeping the first maximum on ties and always taking a NaN
//! (`v > best || v != v`, as torch's CPU kernel), so NaNs propagate and the index is torch's.
//!
//! The loops are tap-major over a whole output row: for one window row `ty` and window column
//! `tx`, the outputs whose tap lies inside the input form one range (`valid_outputs`), and the
//! tap reads the input row at a constant stride. So the update is a branch-free select over a
//! run that vectorises; every output still sees its own taps in the same order as the
//! per-window loop, so values and indices are the same.

use super::{for_plane_runs, planes_per_task, ConvElem};
use crate::conv::valid_outputs;
use rayon::prelude::*;
use std::ops::Range;

/// Max pooling geometry along both dims.
#[derive(Debug, Clone, Copy)]
pub struct MaxGeometry {
    pub h: usize,
    pub w: usize,
    pub oh: usize,
    pub ow: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
}

/// The taps of one max window along one dim: input positions `first + t·dilation` for
/// `t < count` (those inside the input), and torch's index origin for the window.
#[derive(Debug, Clone, Copy)]
struct Taps {
    first: usize,
    count: usize,
    /// torch's starting index: the first tap at or after 0 (possibly past the edge when no tap
    /// falls inside; then the output is -inf and this index is kept).
    origin: usize,
}

fn max_taps(size: usize, out: usize, kernel: usize, stride: usize, pad: usize, dilation: usize) -> Vec<Taps> {
    (0..out)
        .map(|o| {
            let start = (o * stride) as isize - pad as isize;
            // Taps before 0 are skipped: the first valid t is ceil(-start / dilation).
            let skip = if start < 0 { ((-start) as usize).div_ceil(dilation) } else { 0 };
            let origin = (start + (skip * dilation) as isize) as usize;
            let count = if skip >= kernel || origin >= size { 0 } else { (kernel - skip).min((size - origin).div_ceil(dilation)) };
            Taps { first: origin, count, origin }
        })
        .collect()
}

/// One window column `tx` across an output row: the outputs it is valid for and the input
/// column the first of them reads.
struct ColTap {
    outs: Range<usize>,
    ix0: usize,
}

/// Everything a plane's loop needs, computed once per call.
struct Plan {
    rows: Vec<Taps>,
    /// torch's index origin column of each output column.
    col_origin: Vec<usize>,
    cols: Vec<ColTap>,
}

impl Plan {
    fn new(g: &MaxGeometry) -> Plan {
        let rows = max_taps(g.h, g.oh, g.kernel[0], g.stride[0], g.padding[0], g.dilation[0]);
        let col_origin = max_taps(g.w, g.ow, g.kernel[1], g.stride[1], g.padding[1], g.dilation[1]).iter().map(|t| t.origin).collect();
        let cols = (0..g.kernel[1])
            .map(|tx| {
                let off = tx * g.dilation[1];
                let outs = valid_outputs(g.w, g.ow, off, g.stride[1], g.padding[1]);
                // Only read when `outs` is non-empty, where this does not underflow.
                let ix0 = (outs.start * g.stride[1] + off).saturating_sub(g.padding[1]);
                ColTap { outs, ix0 }
            })
            .filter(|c| !c.outs.is_empty())
            .collect();
        Plan { rows, col_origin, cols }
    }
}

/// `best[k] = max(best[k], src[k·S])` with NaN taken, for a compile-time stride `S`.
#[inline(always)]
fn max_run<T: ConvElem, const S: usize>(src: &[T], best: &mut [T]) {
    let n = best.len();
    let src = &src[..(n - 1) * S + 1];
    for (k, b) in best.iter_mut().enumerate() {
        let v = src[k * S];
        #[allow(clippy::eq_op)]
        let take = (v > *b) | (v != v);
        *b = if take { v } else { *b };
    }
}

/// A plane position while a row is pooled: u32 where planes are small enough (the common case:
/// it has the width of an f32 lane, so the select below vectorises), u64 otherwise. Rows are
/// widened to torch's int64 indices once finished.
trait Pos: Copy + Send + Sync + Default + std::ops::Add<Output = Self> {
    fn of(v: usize) -> Self;
    fn to_i64(self) -> i64;
}

impl Pos for u32 {
    #[inline(always)]
    fn of(v: usize) -> u32 {
        v as u32
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl Pos for u64 {
    #[inline(always)]
    fn of(v: usize) -> u64 {
        v as u64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
}

/// `max_run` that also records the position (`at0 + k·S`) of each taken element.
#[inline(always)]
fn max_run_at<T: ConvElem, P: Pos, const S: usize>(src: &[T], best: &mut [T], at: &mut [P], at0: usize) {
    let n = best.len();
    let src = &src[..(n - 1) * S + 1];
    for (k, (b, a)) in best.iter_mut().zip(at.iter_mut()).enumerate() {
        let v = src[k * S];
        // `|`, not `||`: no short-circuit branch, so both selects stay branch-free (cmov or
        // vector blends; a branch mispredicts on every other element of random data).
        #[allow(clippy::eq_op)]
        let take = (v > *b) | (v != v);
        *b = if take { v } else { *b };
        *a = if take { P::of(at0 + k * S) } else { *a };
    }
}

/// The runtime-stride versions (strides other than 1 and 2).
#[inline(always)]
fn max_run_any<T: ConvElem, P: Pos>(src: &[T], stride: usize, best: &mut [T], at: Option<(&mut [P], usize)>) {
    match at {
        Some((at, at0)) => {
            for (k, ((b, a), v)) in best.iter_mut().zip(at.iter_mut()).zip(src.iter().step_by(stride)).enumerate() {
                #[allow(clippy::eq_op)]
                if *v > *b || *v != *v {
                    *b = *v;
                    *a = P::of(at0 + k * stride);
                }
            }
        }
        None => {
            for (b, v) in best.iter_mut().zip(src.iter().step_by(stride)) {
                #[allow(clippy::eq_op)]
                if *v > *b || *v != *v {
                    *b = *v;
                }
            }
        }
    }
}

/// One plane: `o` (OH·OW values) and, if given, `ix` (their flat input positions), with `row`
/// (OW positions) as the scratch row of positions.
#[inline(always)]
fn max_plane<T: ConvElem, P: Pos>(plane: &[T], g: &MaxGeometry, plan: &Plan, o: &mut [T], mut ix: Option<&mut [i64]>, row: &mut [P]) {
    let (w, ow, sx) = (g.w, g.ow, g.stride[1]);
    let neg_inf = T::from_f64(f64::NEG_INFINITY);
    let with_at = ix.is_some();
    for (oy, r) in plan.rows.iter().enumerate() {
        let best = &mut o[oy * ow..(oy + 1) * ow];
        best.fill(neg_inf);
        if with_at {
            for (a, c) in row.iter_mut().zip(&plan.col_origin) {
                *a = P::of(r.origin * w + c);
            }
        }
        for ty in 0..r.count {
            let iy = r.first + ty * g.dilation[0];
            let line = &plane[iy * w..(iy + 1) * w];
            for c in &plan.cols {
                let (src, b) = (&line[c.ix0..], &mut best[c.outs.clone()]);
                let at0 = iy * w + c.ix0;
                match (with_at, sx) {
                    (true, 1) => max_run_at::<T, P, 1>(src, b, &mut row[c.outs.clone()], at0),
                    (true, 2) => max_run_at::<T, P, 2>(src, b, &mut row[c.outs.clone()], at0),
                    (true, _) => max_run_any(src, sx, b, Some((&mut row[c.outs.clone()], at0))),
                    (false, 1) => max_run::<T, 1>(src, b),
                    (false, 2) => max_run::<T, 2>(src, b),
                    (false, _) => max_run_any::<T, P>(src, sx, b, None),
                }
            }
        }
        if let Some(ix) = ix.as_deref_mut() {
            for (d, a) in ix[oy * ow..(oy + 1) * ow].iter_mut().zip(row.iter()) {
                *d = a.to_i64();
            }
        }
    }
}

/// Planes `first..` of one task as a `simd::exec` body (so that the loops are compiled for the
/// wide registers: a closure LLVM does not inline would run with SSE2 and branches).
struct Planes<'a, T, P> {
    x: &'a [T],
    g: &'a MaxGeometry,
    plan: &'a Plan,
    first: usize,
    out: &'a mut [T],
    idx: Option<&'a mut [i64]>,
    row: &'a mut [P],
}

impl<T: ConvElem, P: Pos> crate::simd::Body for Planes<'_, T, P> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let Planes { x, g, plan, first, out, mut idx, row } = self;
        let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
        for (j, o) in out.chunks_mut(plane_out).enumerate() {
            let p = first + j;
            let ix = idx.as_deref_mut().map(|ix| &mut ix[j * plane_out..(j + 1) * plane_out]);
            max_plane(&x[p * plane_in..(p + 1) * plane_in], g, plan, o, ix, &mut *row);
        }
    }
}

/// Runs one task's planes with the position type its plane size allows.
fn planes<T: ConvElem>(x: &[T], g: &MaxGeometry, plan: &Plan, first: usize, out: &mut [T], idx: Option<&mut [i64]>) {
    if g.h * g.w <= u32::MAX as usize {
        let mut row = vec![0u32; g.ow];
        crate::simd::exec(Planes { x, g, plan, first, out, idx, row: &mut row });
    } else {
        let mut row = vec![0u64; g.ow];
        crate::simd::exec(Planes { x, g, plan, first, out, idx, row: &mut row });
    }
}

/// The common window: 2x2 at stride 2, no padding or dilation, over planes of even height and
/// width. Every input row then belongs to one output row, so the planes stack into one tall
/// plane and the loop runs over the output rows of the whole batch, four taps per output in
/// torch's order (the same selects as `max_plane`, so the same bits and indices), with no
/// per-plane plan and no runs: for the 8x8 planes of the examples' conv net the general loop's
/// runs are 4 outputs long, and their setup cost more than the maxima.
fn is_2x2_stride_2(g: &MaxGeometry) -> bool {
    g.kernel == [2, 2] && g.stride == [2, 2] && g.padding == [0, 0] && g.dilation == [1, 1] && g.h % 2 == 0 && g.w % 2 == 0 && g.oh == g.h / 2 && g.ow == g.w / 2
}

/// Whether tap value `v` replaces `best` (torch's CPU rule: a larger value or any NaN).
#[inline(always)]
fn takes<T: ConvElem>(best: T, v: T) -> bool {
    #[allow(clippy::eq_op)]
    let nan = v != v;
    (v > best) | nan
}

/// Output rows `first..` (rows of the stacked planes) of a 2x2, stride-2 pooling into `out`,
/// with their positions within each plane into `idx` when given; a `simd::exec` body, so that
/// wide output rows vectorise.
struct Rows2x2<'a, T> {
    x: &'a [T],
    g: &'a MaxGeometry,
    first: usize,
    out: &'a mut [T],
    idx: Option<&'a mut [i64]>,
}

impl<T: ConvElem> crate::simd::Body for Rows2x2<'_, T> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let Rows2x2 { x, g, first, out, idx } = self;
        let (w, ow) = (g.w, g.ow);
        let rows = |j: usize| {
            let r = first + j;
            (&x[2 * r * w..(2 * r + 1) * w], &x[(2 * r + 1) * w..(2 * r + 2) * w])
        };
        match idx {
            None => {
                for (j, o) in out.chunks_mut(ow).enumerate() {
                    let (top, bot) = rows(j);
                    for (k, b) in o.iter_mut().enumerate() {
                        // The first tap always replaces the initial -inf (or is -inf itself).
                        let mut best = top[2 * k];
                        for v in [top[2 * k + 1], bot[2 * k], bot[2 * k + 1]] {
                            best = if takes(best, v) { v } else { best };
                        }
                        *b = best;
                    }
                }
            }
            Some(idx) => {
                for (j, (o, ix)) in out.chunks_mut(ow).zip(idx.chunks_mut(ow)).enumerate() {
                    let (top, bot) = rows(j);
                    // Plane-local position of the window row pair.
                    let base = (((first + j) % g.oh) * 2 * w) as i64;
                    for (k, (b, a)) in o.iter_mut().zip(ix.iter_mut()).enumerate() {
                        let (mut best, mut at) = (top[2 * k], 0i64);
                        for (v, tap) in [(top[2 * k + 1], 1), (bot[2 * k], w as i64), (bot[2 * k + 1], w as i64 + 1)] {
                            let t = takes(best, v);
                            best = if t { v } else { best };
                            at = if t { tap } else { at };
                        }
                        *b = best;
                        *a = base + 2 * k as i64 + at;
                    }
                }
            }
        }
    }
}

/// Input elements from which the 2x2 loop splits over threads. It reads about four elements a
/// nanosecond on one thread, so below this a second thread's wake-up (10-20 us on a busy
/// 2-core machine) costs about what it saves: 64 planes of 16 x 8x8 (2^16 elements), median
/// of a Python loop, 27 us on one thread and 36 us split over two.
const PAR_MIN_2X2: usize = 1 << 18;

/// `max_forward` / `max_forward_values` for `is_2x2_stride_2` geometries.
fn max_2x2<T: ConvElem>(x: &[T], g: &MaxGeometry, out: &mut [T], idx: Option<&mut [i64]>) {
    let plane_out = g.oh * g.ow;
    let run = |first: usize, out: &mut [T], idx: Option<&mut [i64]>| crate::simd::exec(Rows2x2 { x, g, first, out, idx });
    let split = if x.len() >= PAR_MIN_2X2 { planes_per_task(out.len() / plane_out, work_per_plane(g)) } else { None };
    match (split, idx) {
        (None, idx) => run(0, out, idx),
        (Some(per), None) => out.par_chunks_mut(per * plane_out).enumerate().for_each(|(t, o)| run(t * per * g.oh, o, None)),
        (Some(per), Some(idx)) => out
            .par_chunks_mut(per * plane_out)
            .zip(idx.par_chunks_mut(per * plane_out))
            .enumerate()
            .for_each(|(t, (o, ix))| run(t * per * g.oh, o, Some(ix))),
    }
}

fn work_per_plane(g: &MaxGeometry) -> usize {
    g.h * g.w + g.oh * g.ow * g.kernel[0] * g.kernel[1]
}

/// Max pooling with torch's indices (flat positions within the plane). As torch: the first
/// maximum wins ties, and a NaN is always taken (so NaNs propagate).
pub fn max_forward<T: ConvElem>(x: &[T], g: &MaxGeometry, out: &mut [T], idx: &mut [i64]) {
    let plane_out = g.oh * g.ow;
    if plane_out == 0 || out.is_empty() {
        return;
    }
    if is_2x2_stride_2(g) {
        return max_2x2(x, g, out, Some(idx));
    }
    let plan = Plan::new(g);
    match planes_per_task(out.len() / plane_out, work_per_plane(g)) {
        None => planes(x, g, &plan, 0, out, Some(idx)),
        Some(per) => out
            .par_chunks_mut(per * plane_out)
            .zip(idx.par_chunks_mut(per * plane_out))
            .enumerate()
            .for_each(|(t, (o, ix))| planes(x, g, &plan, t * per, o, Some(ix))),
    }
}

/// Max pooling values only (what `max_pool2d` returns when nothing needs the indices): the
/// same maxima as `max_forward`, without writing an index per output.
pub fn max_forward_values<T: ConvElem>(x: &[T], g: &MaxGeometry, out: &mut [T]) {
    let plane_out = g.oh * g.ow;
    if plane_out == 0 || out.is_empty() {
        return;
    }
    if is_2x2_stride_2(g) {
        return max_2x2(x, g, out, None);
    }
    let plan = Plan::new(g);
    match planes_per_task(out.len() / plane_out, work_per_plane(g)) {
        None => planes(x, g, &plan, 0, out, None),
        Some(per) => out.par_chunks_mut(per * plane_out).enumerate().for_each(|(t, o)| planes(x, g, &plan, t * per, o, None)),
    }
}

/// Max pooling's input gradient: each output's gradient is added at its recorded index, plane
/// by plane in output order.
pub fn max_backward<T: ConvElem>(grad: &[T], idx: &[i64], plane_in: usize, plane_out: usize, dx: &mut [T]) {
    for_plane_runs(dx, plane_in, plane_in + plane_out, |first, run| {
        for (j, d) in run.chunks_mut(plane_in).enumerate() {
            d.fill(T::zero());
            let p = first + j;
            for (&at, &v) in idx[p * plane_out..(p + 1) * plane_out].iter().zip(&grad[p * plane_out..(p + 1) * plane_out]) {
                // An index past the plane only comes from a window with no input in it (its
                // output is -inf); torch would write out of bounds there, minigrad skips it.
                if let Some(s) = d.get_mut(at as usize) {
                    *s += v;
                }
            }
        }
    });
}
