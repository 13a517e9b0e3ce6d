//! 2-d pooling over contiguous (planes, H, W) buffers: every (n, c) plane is independent, so
//! planes run in parallel and each output is computed by one thread in a fixed order.
//!
//! A pooling window along one dim is a `Span`: the input range it reads, and the length it
//! would have with the padding counted (average pooling's `count_include_pad`).

use super::conv::ConvElem;
use rayon::prelude::*;

/// Planes per parallel task below which the work is not worth splitting.
const PAR_MIN_ELEMS: usize = 1 << 14;

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
}

fn for_planes<T: Send>(out: &mut [T], plane: usize, work: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if plane == 0 {
        return;
    }
    if work >= PAR_MIN_ELEMS {
        out.par_chunks_mut(plane).enumerate().for_each(|(i, o)| f(i, o));
    } else {
        out.chunks_mut(plane).enumerate().for_each(|(i, o)| f(i, o));
    }
}

/// Average pooling: `out[p][oy][ox]` = window sum / divisor. `x` has planes of h·w.
pub fn avg_forward<T: ConvElem>(x: &[T], h: usize, w: usize, win: &AvgWindows, out: &mut [T]) {
    let (oh, ow) = (win.rows.len(), win.cols.len());
    for_planes(out, oh * ow, x.len(), |p, o| {
        let plane = &x[p * h * w..(p + 1) * h * w];
        for (oy, r) in win.rows.iter().enumerate() {
            for (ox, c) in win.cols.iter().enumerate() {
                let mut acc = T::zero();
                for iy in r.start..r.end {
                    for ix in c.start..c.end {
                        acc += plane[iy * w + ix];
                    }
                }
                o[oy * ow + ox] = acc / T::from_f64(win.divisor(r, c));
            }
        }
    });
}

/// The adjoint of `avg_forward`: each input element gathers `grad / divisor` from every window
/// that covers it. Written as a gather per input plane so that planes stay independent.
pub fn avg_backward<T: ConvElem>(grad: &[T], h: usize, w: usize, win: &AvgWindows, dx: &mut [T]) {
    let (oh, ow) = (win.rows.len(), win.cols.len());
    for_planes(dx, h * w, dx.len(), |p, d| {
        d.fill(T::zero());
        let g = &grad[p * oh * ow..(p + 1) * oh * ow];
        for (oy, r) in win.rows.iter().enumerate() {
            for (ox, c) in win.cols.iter().enumerate() {
                let v = g[oy * ow + ox] / T::from_f64(win.divisor(r, c));
                for iy in r.start..r.end {
                    for ix in c.start..c.end {
                        d[iy * w + ix] += v;
                    }
                }
            }
        }
    });
}

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

/// Max pooling with torch's indices (flat positions within the plane). As torch: the first
/// maximum wins ties, and a NaN is always taken (so NaNs propagate).
pub fn max_forward<T: ConvElem>(x: &[T], g: &MaxGeometry, out: &mut [T], idx: &mut [i64]) {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    if plane_out == 0 {
        return;
    }
    let rows = max_taps(g.h, g.oh, g.kernel[0], g.stride[0], g.padding[0], g.dilation[0]);
    let cols = max_taps(g.w, g.ow, g.kernel[1], g.stride[1], g.padding[1], g.dilation[1]);
    let (dy, dx) = (g.dilation[0], g.dilation[1]);
    let neg_inf = T::from_f64(f64::NEG_INFINITY);
    let one = |p: usize, o: &mut [T], ix: &mut [i64]| {
        let plane = &x[p * plane_in..(p + 1) * plane_in];
        for (oy, r) in rows.iter().enumerate() {
            for (ox, c) in cols.iter().enumerate() {
                let (mut best, mut at) = (neg_inf, r.origin * g.w + c.origin);
                for ty in 0..r.count {
                    let row = (r.first + ty * dy) * g.w;
                    for tx in 0..c.count {
                        let pos = row + c.first + tx * dx;
                        let v = plane[pos];
                        // `v != v`: NaN, always taken.
                        #[allow(clippy::eq_op)]
                        if v > best || v != v {
                            best = v;
                            at = pos;
                        }
                    }
                }
                o[oy * g.ow + ox] = best;
                ix[oy * g.ow + ox] = at as i64;
            }
        }
    };
    let planes = out.len() / plane_out;
    if x.len() >= PAR_MIN_ELEMS && rayon::current_num_threads() > 1 {
        // Tasks of several planes each: one rayon task per small plane costs more than its work.
        let per = (PAR_MIN_ELEMS / 4 / plane_in.max(1)).clamp(1, planes.max(1));
        out.par_chunks_mut(per * plane_out).zip(idx.par_chunks_mut(per * plane_out)).enumerate().for_each(|(t, (o, ix))| {
            for (j, (o, ix)) in o.chunks_mut(plane_out).zip(ix.chunks_mut(plane_out)).enumerate() {
                one(t * per + j, o, ix);
            }
        });
    } else {
        for (p, (o, ix)) in out.chunks_mut(plane_out).zip(idx.chunks_mut(plane_out)).enumerate() {
            one(p, o, ix);
        }
    }
}

/// Max pooling's input gradient: each output's gradient is added at its recorded index, plane
/// by plane in output order.
pub fn max_backward<T: ConvElem>(grad: &[T], idx: &[i64], plane_in: usize, plane_out: usize, dx: &mut [T]) {
    for_planes(dx, plane_in, dx.len(), |p, d| {
        d.fill(T::zero());
        for j in p * plane_out..(p + 1) * plane_out {
            // An index past the plane only comes from a window with no input in it (its
            // output is -inf); torch would write out of bounds there, minigrad skips it.
            if let Some(v) = d.get_mut(idx[j] as usize) {
                *v += grad[j];
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_follow_torch_rules() {
        // size 5, kernel 3, stride 2, pad 1: windows [-1,2) [1,4) [3,6) -> clamped, padded lengths 3.
        let s = strided_spans(5, 3, 3, 2, 1);
        assert_eq!(s.iter().map(|s| (s.start, s.end, s.padded)).collect::<Vec<_>>(), vec![(0, 2, 3), (1, 4, 3), (3, 5, 3)]);
        let a = adaptive_spans(5, 3);
        assert_eq!(a.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>(), vec![(0, 2), (1, 4), (3, 5)]);
    }

    #[test]
    fn avg_and_its_adjoint() {
        let x: Vec<f64> = (0..16).map(|v| v as f64).collect();
        let win = AvgWindows { rows: strided_spans(4, 2, 2, 2, 0), cols: strided_spans(4, 2, 2, 2, 0), divisor: Divisor::Padded };
        let mut out = vec![0.0; 4];
        avg_forward(&x, 4, 4, &win, &mut out);
        assert_eq!(out, vec![2.5, 4.5, 10.5, 12.5]);
        let mut dx = vec![9.0; 16];
        avg_backward(&[4.0, 0.0, 0.0, 8.0], 4, 4, &win, &mut dx);
        assert_eq!(&dx[..4], &[1.0, 1.0, 0.0, 0.0]);
        assert_eq!(dx[15], 2.0);
    }

    #[test]
    fn max_indices_ties_and_nan() {
        let g = MaxGeometry { h: 2, w: 4, oh: 1, ow: 2, kernel: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1] };
        let x = [1.0, 3.0, f64::NAN, 0.0, 3.0, 2.0, 5.0, 0.0];
        let (mut out, mut idx) = (vec![0.0; 2], vec![0i64; 2]);
        max_forward(&x, &g, &mut out, &mut idx);
        assert_eq!(out[0], 3.0);
        assert!(out[1].is_nan());
        assert_eq!(idx, vec![1, 2]);
        let mut dx = vec![0.0; 8];
        max_backward(&[1.0, 2.0], &idx, 8, 2, &mut dx);
        assert_eq!(dx, vec![0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }
}
