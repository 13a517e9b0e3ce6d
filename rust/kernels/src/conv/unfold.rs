//! im2col and its adjoint col2im, written as span copies.
//!
//! For one kernel tap the output positions that read inside the input form one contiguous range
//! (`valid_outputs`); outside it the tap reads padding. So a column row is: zeros, a plain (or
//! strided) copy of an input line, zeros — no per-element bounds test. col2im walks the same spans
//! and adds instead of copying.
//!
//! A column row of one image holds OH·OW entries; rows of several images can sit side by side in
//! one wider matrix, so both functions take the distance between consecutive rows (`row_stride`).

use super::{ConvElem, Geometry};
use std::ops::Range;

/// Output positions `o < out` whose input position `o·stride + offset - pad` (offset = tap ·
/// dilation) lies inside `[0, size)`: always one contiguous range, possibly empty.
pub fn valid_outputs(size: usize, out: usize, offset: usize, stride: usize, pad: usize) -> Range<usize> {
    let lo = if offset >= pad { 0 } else { (pad - offset).div_ceil(stride) };
    let hi = if size + pad <= offset { 0 } else { (size + pad - offset).div_ceil(stride) };
    let hi = hi.min(out);
    lo.min(hi)..hi
}

/// Spans of tap (ki, kj): valid output rows and columns, and the input row/column the first
/// valid output reads.
#[derive(Debug, Clone)]
pub struct Tap {
    ys: Range<usize>,
    xs: Range<usize>,
    iy0: usize,
    ix0: usize,
}

impl Tap {
    fn new(g: &Geometry, ki: usize, kj: usize) -> Tap {
        let (oy_off, ox_off) = (ki * g.dilation[0], kj * g.dilation[1]);
        let ys = valid_outputs(g.h, g.oh, oy_off, g.stride[0], g.padding[0]);
        let xs = valid_outputs(g.w, g.ow, ox_off, g.stride[1], g.padding[1]);
        // Only used when the spans are non-empty, where these do not underflow.
        let iy0 = (ys.start * g.stride[0] + oy_off).saturating_sub(g.padding[0]);
        let ix0 = (xs.start * g.stride[1] + ox_off).saturating_sub(g.padding[1]);
        Tap { ys, xs, iy0, ix0 }
    }
    fn empty(&self) -> bool {
        self.ys.is_empty() || self.xs.is_empty()
    }
    /// The valid block as one flat range of a row, when the row is a shifted copy of the
    /// plane (stride 1, output lines as wide as input lines: a 'same' convolution), with the
    /// plane index of its first entry.
    fn dense(&self, g: &Geometry) -> Option<(Range<usize>, usize)> {
        (g.stride == [1, 1] && g.w == g.ow && !self.empty())
            .then(|| (self.ys.start * g.ow + self.xs.start..(self.ys.end - 1) * g.ow + self.xs.end, self.iy0 * g.w + self.ix0))
    }
}

/// The taps of a kernel, in (ki, kj) order: computed once per call, used for every row.
pub fn taps(g: &Geometry) -> Vec<Tap> {
    (0..g.kh * g.kw).map(|k| Tap::new(g, k / g.kw, k % g.kw)).collect()
}

/// One column row: tap `t` of one input plane read at every output pixel, zeros where it
/// reads padding. `dst` holds OH·OW entries.
pub fn unfold_row<T: ConvElem>(plane: &[T], t: &Tap, g: &Geometry, dst: &mut [T]) {
    let ow = g.ow;
    if let Some((block, src)) = t.dense(g) {
        // One copy of the shifted plane; then zero the entries between the valid spans of
        // consecutive lines (reads of the left/right padding).
        zero(&mut dst[..block.start]);
        zero(&mut dst[block.end..]);
        dst[block.clone()].copy_from_slice(&plane[src..src + block.len()]);
        mask_gaps(t, g, dst);
        return;
    }
    if t.empty() {
        dst.fill(T::zero());
        return;
    }
    dst[..t.ys.start * ow].fill(T::zero());
    dst[t.ys.end * ow..].fill(T::zero());
    let (sy, sx) = (g.stride[0], g.stride[1]);
    let len = t.xs.len();
    for (i, oy) in t.ys.clone().enumerate() {
        let line = &mut dst[oy * ow..(oy + 1) * ow];
        line[..t.xs.start].fill(T::zero());
        line[t.xs.end..].fill(T::zero());
        let row = t.iy0 + i * sy;
        let src = &plane[row * g.w..(row + 1) * g.w];
        let out = &mut line[t.xs.clone()];
        if sx == 1 {
            // A plain loop, not copy_from_slice: lines are short and a memcpy call per line
            // costs more than the copy.
            for (v, s) in out.iter_mut().zip(&src[t.ix0..t.ix0 + len]) {
                *v = *s;
            }
        } else {
            for (v, s) in out.iter_mut().zip(src[t.ix0..].iter().step_by(sx)) {
                *v = *s;
            }
        }
    }
}

/// Zeroes a short run (a few padding reads) element by element: a memset call per run costs
/// more than the stores.
#[inline]
fn zero<T: ConvElem>(run: &mut [T]) {
    for v in run {
        // black_box keeps LLVM from turning the loop back into a memset call (measured: the
        // 3x3 'same' unfold of 64x16x8x8 went from ~200 to ~160 us).
        *std::hint::black_box(v) = T::zero();
    }
}

/// Zeroes the entries of a dense row's block that read the left/right padding: those between
/// the valid spans of consecutive lines.
fn mask_gaps<T: ConvElem>(t: &Tap, g: &Geometry, row: &mut [T]) {
    if t.xs.len() < g.ow {
        for oy in t.ys.start..t.ys.end - 1 {
            zero(&mut row[oy * g.ow + t.xs.end..(oy + 1) * g.ow + t.xs.start]);
        }
    }
}

/// Prepares one image's column row for `col2im_masked`: zeroes the entries of tap `t` that read
/// padding inside its dense block. Rows that are not dense are left alone.
pub fn mask_row<T: ConvElem>(t: &Tap, g: &Geometry, row: &mut [T]) {
    if t.dense(g).is_some() {
        mask_gaps(t, g, row);
    }
}

/// Unfolds `channels` planes of one image (`x`, each H·W) into column rows (c, ki, kj), each
/// OH·OW long and `row_stride` apart in `cols`.
pub fn im2col<T: ConvElem>(x: &[T], channels: usize, g: &Geometry, cols: &mut [T], row_stride: usize) {
    let (hw, p, k) = (g.h * g.w, g.oh * g.ow, g.kh * g.kw);
    let taps = taps(g);
    for r in 0..channels * k {
        let c = r / k;
        unfold_row(&x[c * hw..(c + 1) * hw], &taps[r % k], g, &mut cols[r * row_stride..r * row_stride + p]);
    }
}

/// The adjoint of `im2col`: adds every column entry back onto the input pixel it was read
/// from, in a fixed order (channel, tap, output pixel). `x` is accumulated into, not cleared.
pub fn col2im<T: ConvElem>(cols: &[T], row_stride: usize, channels: usize, g: &Geometry, x: &mut [T]) {
    fold(cols, row_stride, channels, g, &taps(g), x, false)
}

/// `col2im` for columns passed through `mask_row`: a dense row's block is added in one pass
/// (its masked entries add +0.0 to a neighbouring pixel, which leaves every value as it was:
/// x starts at +0.0 and can never become -0.0 by adding).
pub fn col2im_masked<T: ConvElem>(cols: &[T], row_stride: usize, channels: usize, g: &Geometry, taps: &[Tap], x: &mut [T]) {
    fold(cols, row_stride, channels, g, taps, x, true)
}

fn fold<T: ConvElem>(cols: &[T], row_stride: usize, channels: usize, g: &Geometry, taps: &[Tap], x: &mut [T], masked: bool) {
    let (hw, p) = (g.h * g.w, g.oh * g.ow);
    let (sy, sx) = (g.stride[0], g.stride[1]);
    for c in 0..channels {
        let plane = &mut x[c * hw..(c + 1) * hw];
        for (k, t) in taps.iter().enumerate() {
            let r = c * taps.len() + k;
            let src = &cols[r * row_stride..r * row_stride + p];
            if let (true, Some((block, at))) = (masked, t.dense(g)) {
                for (d, v) in plane[at..at + block.len()].iter_mut().zip(&src[block]) {
                    *d += *v;
                }
                continue;
            }
            if t.empty() {
                continue;
            }
            for (i, oy) in t.ys.clone().enumerate() {
                let row = t.iy0 + i * sy;
                let dst = &mut plane[row * g.w..(row + 1) * g.w];
                let vals = &src[oy * g.ow + t.xs.start..oy * g.ow + t.xs.end];
                if sx == 1 {
                    for (d, v) in dst[t.ix0..t.ix0 + vals.len()].iter_mut().zip(vals) {
                        *d += *v;
                    }
                } else {
                    for (d, v) in dst[t.ix0..].iter_mut().step_by(sx).zip(vals) {
                        *d += *v;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_outputs_matches_the_bounds_test() {
        for size in 1..7 {
            for out in 0..9 {
                for offset in 0..7 {
                    for stride in 1..4 {
                        for pad in 0..6 {
                            let want: Vec<usize> = (0..out)
                                .filter(|&o| {
                                    let pos = (o * stride + offset) as isize - pad as isize;
                                    pos >= 0 && pos < size as isize
                                })
                                .collect();
                            let got: Vec<usize> = valid_outputs(size, out, offset, stride, pad).collect();
                            assert_eq!(got, want, "size {size} out {out} offset {offset} stride {stride} pad {pad}");
                        }
                    }
                }
            }
        }
    }
}
