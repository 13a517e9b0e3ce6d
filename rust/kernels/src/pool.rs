//! 2-d pooling over contiguous (planes, H, W) buffers: every (n, c) plane is independent, so
//! runs of planes go to rayon's threads and each output element is computed by one thread in a
//! fixed order (results do not depend on the split or the thread count).
//!
//! A pooling window along one dim is a `Span`: the input range it reads, and the length it
//! would have with the padding counted (average pooling's `count_include_pad`). Max pooling
//! (`pool/max.rs`) runs tap-major over whole output rows, so that its inner loops run along
//! constant-stride memory and vectorise; average pooling sums each window in torch's order.

use super::conv::ConvElem;
use rayon::prelude::*;

mod max;
pub use max::{max_backward, max_forward, max_forward_values, MaxGeometry};

/// Work (input elements read plus window taps) below which a pooling call stays on the
/// calling thread: the vectorised loops do such a job in ~10-20 us, about what waking a second
/// thread can cost on a busy 2-core machine.
const PAR_MIN_WORK: usize = 1 << 17;
/// Work per parallel task: small enough that a thread that wakes late leaves the rest to the
/// others (rayon lets the caller take back unstarted tasks), large enough to amortise a task.
const TASK_WORK: usize = 1 << 15;

/// Planes per parallel task for `planes` planes of `work_per_plane` each, or None to run
/// serially.
fn planes_per_task(planes: usize, work_per_plane: usize) -> Option<usize> {
    if planes < 2 || planes.saturating_mul(work_per_plane) < PAR_MIN_WORK || rayon::current_num_threads() <= 1 {
        return None;
    }
    Some((TASK_WORK / work_per_plane.max(1)).clamp(1, planes.div_ceil(2)))
}

/// Runs `f(first_plane, run)` over runs of whole `plane`-element planes of `out`, in parallel
/// when the job is large enough; `f` runs under `simd::run`.
fn for_plane_runs<T: Send>(out: &mut [T], plane: usize, work_per_plane: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if plane == 0 || out.is_empty() {
        return;
    }
    let planes = out.len() / plane;
    match planes_per_task(planes, work_per_plane) {
        None => crate::simd::run(|| f(0, out)),
        Some(per) => out.par_chunks_mut(per * plane).enumerate().for_each(|(t, run)| crate::simd::run(|| f(t * per, run))),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    /// Length including the padding it overlaps (≥ end - start).
    pub padded: usize,
}

/// Windows of a strided, padded pooling along one dim (torch's avg_pool2d rules: the padded
/// window is cut at `size + pad`, then clamped to the input).
pub fn strided_spans(size: usize, out: usize, kernel: usize, stride: usize, pad: usize) -> Vec<Span> {
    (0..out)
        .map(|o| {
            let start = (o * stride) as isize - pad as isize;
            let end = (start + kernel as isize).min((size + pad) as isize);
            let padded = (end - start) as usize;
            Span { start: start.max(0) as usize, end: end.min(size as isize) as usize, padded }
        })
        .collect()
}

/// Windows of adaptive pooling: output `o` of `out` reads `[floor(o·size/out), ceil((o+1)·size/out))`.
pub fn adaptive_spans(size: usize, out: usize) -> Vec<Span> {
    (0..out)
        .map(|o| {
            let start = o * size / out;
            let end = ((o + 1) * size).div_ceil(out);
            Span { start, end, padded: end - start }
        })
        .collect()
}

/// How an average window's sum is divided.
#[derive(Debug, Clone, Copy)]
pub enum Divisor {
    Override(f64),
    /// The window's length with padding counted (`count_include_pad=True`).
    Padded,
    /// Only the input elements it covers.
    Covered,
}

pub struct AvgWindows {
    pub rows: Vec<Span>,
    pub cols: Vec<Span>,
    pub divisor: Divisor,
}

impl AvgWindows {
    fn divisor(&self, r: &Span, c: &Span) -> f64 {
        match self.divisor {
            Divisor::Override(d) => d,
            Divisor::Padded => (r.padded * c.padded) as f64,
            Divisor::Covered => ((r.end - r.start) * (c.end - c.start)) as f64,
        }
    }
    fn taps(&self) -> usize {
        let len = |s: &[Span]| s.iter().map(|s| s.end - s.start).max().unwrap_or(0);
        len(&self.rows) * len(&self.cols)
    }
}

/// Average pooling: `out[p][oy][ox]` = window sum / divisor. `x` has planes of h·w.
///
/// Each window is summed row by row in torch's order (the CUDA kernel sums the same way, and
/// the host-emulation tests compare the two bit for bit), one plane per thread at a time.
pub fn avg_forward<T: ConvElem>(x: &[T], h: usize, w: usize, win: &AvgWindows, out: &mut [T]) {
    let (oh, ow) = (win.rows.len(), win.cols.len());
    let work = h * w + oh * ow * win.taps();
    for_plane_runs(out, oh * ow, work, |first, run| {
        for (j, o) in run.chunks_mut(oh * ow).enumerate() {
            let plane = &x[(first + j) * h * w..(first + j + 1) * h * w];
            for (r, line) in win.rows.iter().zip(o.chunks_mut(ow)) {
                for (v, c) in line.iter_mut().zip(&win.cols) {
                    let mut acc = T::zero();
                    for iy in r.start..r.end {
                        for s in &plane[iy * w + c.start..iy * w + c.end] {
                            acc += *s;
                        }
                    }
                    *v = acc / T::from_f64(win.divisor(r, c));
                }
            }
        }
    });
}

/// The adjoint of `avg_forward`: each input element gathers `grad / divisor` from every window
/// that covers it, in output order (as the CUDA kernel). Written per input plane so that
/// planes stay independent.
pub fn avg_backward<T: ConvElem>(grad: &[T], h: usize, w: usize, win: &AvgWindows, dx: &mut [T]) {
    let (oh, ow) = (win.rows.len(), win.cols.len());
    let work = h * w + oh * ow * win.taps();
    for_plane_runs(dx, h * w, work, |first, run| {
        for (j, d) in run.chunks_mut(h * w).enumerate() {
            d.fill(T::zero());
            let g = &grad[(first + j) * oh * ow..(first + j + 1) * oh * ow];
            for (r, gl) in win.rows.iter().zip(g.chunks(ow)) {
                for (c, gv) in win.cols.iter().zip(gl) {
                    let v = *gv / T::from_f64(win.divisor(r, c));
                    for iy in r.start..r.end {
                        for s in &mut d[iy * w + c.start..iy * w + c.end] {
                            *s += v;
                        }
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests;
