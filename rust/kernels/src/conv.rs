//! 2-d convolution as im2col + gemm, over contiguous NCHW buffers.
//!
//! `im2col` unfolds the receptive field of every output pixel into a column, so that one group's
//! convolution becomes one matrix product: `out[Cout_g, OH·OW] = W[Cout_g, Cin_g·KH·KW] @
//! cols[Cin_g·KH·KW, OH·OW]`. The two gradients are the same products transposed:
//! `cols = Wᵀ @ grad` folded back by `col2im` (input gradient) and `grad @ colsᵀ` (weight gradient).
//!
//! Determinism: batch items run in parallel but each writes only its own output; the weight
//! gradient sums over the batch inside a single gemm (k = N·OH·OW), which never splits along k.

use crate::error::Result;
use super::matmul::{MatElem, Strides};
use rayon::prelude::*;
use std::ops::AddAssign;

/// Element types the conv and pooling kernels run on (f32, f64).
pub trait ConvElem: MatElem + AddAssign + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> {}
impl ConvElem for f32 {}
impl ConvElem for f64 {}

/// Sizes of one convolution (all already validated by the op layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub n: usize,
    pub c_in: usize,
    pub h: usize,
    pub w: usize,
    pub c_out: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

impl Geometry {
    fn cin_g(&self) -> usize {
        self.c_in / self.groups
    }
    fn cout_g(&self) -> usize {
        self.c_out / self.groups
    }
    /// Rows of one group's column matrix: Cin_g·KH·KW.
    fn rows_g(&self) -> usize {
        self.cin_g() * self.kh * self.kw
    }
    fn pixels(&self) -> usize {
        self.oh * self.ow
    }
    /// Input row (or column) read by output position `o` and kernel tap `k` along dim `d`,
    /// or None where it falls in the zero padding.
    #[inline]
    fn src(&self, d: usize, o: usize, k: usize) -> Option<usize> {
        let pos = (o * self.stride[d] + k * self.dilation[d]) as isize - self.padding[d] as isize;
        let size = if d == 0 { self.h } else { self.w };
        (pos >= 0 && (pos as usize) < size).then_some(pos as usize)
    }
}

/// One row of the column matrix: kernel tap (ki, kj) of one input plane, read at every output
/// pixel (zeros in the padding).
fn unfold_row<T: ConvElem>(plane: &[T], ki: usize, kj: usize, g: &Geometry, dst: &mut [T]) {
    for oy in 0..g.oh {
        let line = &mut dst[oy * g.ow..(oy + 1) * g.ow];
        match g.src(0, oy, ki) {
            None => line.fill(T::zero()),
            Some(iy) => {
                let src = &plane[iy * g.w..(iy + 1) * g.w];
                for (ox, v) in line.iter_mut().enumerate() {
                    *v = g.src(1, ox, kj).map_or(T::zero(), |ix| src[ix]);
                }
            }
        }
    }
}

/// Unfolds `channels` planes of one image (`x`, each h·w) into `cols` ([channels·KH·KW, OH·OW]):
/// row (c, ki, kj), column (oy, ox).
pub fn im2col<T: ConvElem>(x: &[T], channels: usize, g: &Geometry, cols: &mut [T]) {
    let (hw, p, k) = (g.h * g.w, g.pixels(), g.kh * g.kw);
    for (r, dst) in cols.chunks_mut(p).take(channels * k).enumerate() {
        let c = r / k;
        unfold_row(&x[c * hw..(c + 1) * hw], (r % k) / g.kw, r % g.kw, g, dst);
    }
}

/// The adjoint of `im2col`: adds every column entry back onto the input pixel it was read from.
pub fn col2im<T: ConvElem>(cols: &[T], channels: usize, g: &Geometry, x: &mut [T]) {
    let (hw, p) = (g.h * g.w, g.pixels());
    for c in 0..channels {
        let plane = &mut x[c * hw..(c + 1) * hw];
        for ki in 0..g.kh {
            for kj in 0..g.kw {
                let row = ((c * g.kh + ki) * g.kw + kj) * p;
                let src = &cols[row..row + p];
                for oy in 0..g.oh {
                    let Some(iy) = g.src(0, oy, ki) else { continue };
                    let dst = &mut plane[iy * g.w..(iy + 1) * g.w];
                    for ox in 0..g.ow {
                        if let Some(ix) = g.src(1, ox, kj) {
                            dst[ix] += src[oy * g.ow + ox];
                        }
                    }
                }
            }
        }
    }
}

/// `dst = a @ b` on row-major slices with explicit strides (gemm reads strided operands).
#[allow(clippy::too_many_arguments)]
fn product<T: ConvElem>(m: usize, n: usize, k: usize, dst: &mut [T], a: &[T], b: &[T], s: Strides, parallel: bool) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst.fill(T::zero());
        return;
    }
    let last = |rs: isize, cs: isize, r: usize, c: usize| (r - 1) as isize * rs + (c - 1) as isize * cs;
    assert!(last(s.a_rs, s.a_cs, m, k) < a.len() as isize && last(s.b_rs, s.b_cs, k, n) < b.len() as isize);
    assert!(last(s.dst_rs, s.dst_cs, m, n) < dst.len() as isize && s.dst_rs >= n as isize && s.dst_cs == 1);
    // SAFETY: all strides are non-negative; the asserts above show the last (largest-offset)
    // element of each operand lies inside its slice, so every addressed element does. dst rows
    // are at least n apart with unit column stride, so its elements are distinct; dst is a
    // `&mut` slice, so it overlaps neither input slice.
    unsafe { T::product(m, n, k, dst.as_mut_ptr(), a.as_ptr(), b.as_ptr(), s, parallel) }
}

fn row_major(rs: usize) -> (isize, isize) {
    (rs as isize, 1)
}

/// Whether to parallelise inside gemm rather than over the batch.
fn inner_parallel(g: &Geometry) -> bool {
    g.n == 1 && g.cout_g() * g.pixels() * g.rows_g() >= super::matmul::GEMM_PAR_MIN_WORK
}

/// Forward: `out[n] = conv(x[n], w) + bias`, batch items in parallel, one column buffer per
/// worker thread.
pub fn forward<T: ConvElem>(x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T], g: &Geometry) -> Result<()> {
    let (p, rows) = (g.pixels(), g.rows_g());
    let cout_g = g.cout_g();
    let img = g.c_in * g.h * g.w;
    if p == 0 || g.c_out == 0 {
        return Ok(());
    }
    let par = inner_parallel(g);
    let one = |cols: &mut Vec<T>, (n, out_n): (usize, &mut [T])| -> Result<()> {
        workspace(cols, &[g.c_in * g.kh * g.kw, p])?;
        im2col(&x[n * img..(n + 1) * img], g.c_in, g, cols);
        for grp in 0..g.groups {
            let (ra, ca) = row_major(rows);
            let (rb, cb) = row_major(p);
            let s = Strides { dst_rs: p as isize, dst_cs: 1, a_rs: ra, a_cs: ca, b_rs: rb, b_cs: cb };
            product(cout_g, p, rows, &mut out_n[grp * cout_g * p..(grp + 1) * cout_g * p], &w[grp * cout_g * rows..], &cols[grp * rows * p..], s, par);
        }
        if let Some(b) = bias {
            for (co, plane) in out_n.chunks_mut(p).enumerate() {
                plane.iter_mut().for_each(|v| *v += b[co]);
            }
        }
        Ok(())
    };
    let chunk = g.c_out * p;
    if g.n > 1 {
        out.par_chunks_mut(chunk).enumerate().try_for_each_init(Vec::new, one)
    } else {
        let mut cols = Vec::new();
        out.chunks_mut(chunk).enumerate().try_for_each(|it| one(&mut cols, it))
    }
}

/// Sizes a column buffer to the product of `dims` elements, failing with the allocator's
/// error (not aborting the process) when the product overflows or the system refuses.
fn workspace<T: ConvElem>(cols: &mut Vec<T>, dims: &[usize]) -> Result<()> {
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).unwrap_or(usize::MAX);
    if n > cols.len() {
        cols.try_reserve_exact(n - cols.len()).map_err(|_| crate::alloc::out_of_memory(n.saturating_mul(std::mem::size_of::<T>())))?;
    }
    cols.resize(n, T::zero());
    Ok(())
}

/// Input gradient: `dx[n] = col2im(Wᵀ @ grad[n])`, batch items in parallel. `dx` is overwritten.
pub fn grad_input<T: ConvElem>(grad: &[T], w: &[T], dx: &mut [T], g: &Geometry) -> Result<()> {
    let (p, rows) = (g.pixels(), g.rows_g());
    let (cin_g, cout_g) = (g.cin_g(), g.cout_g());
    let img = g.c_in * g.h * g.w;
    dx.fill(T::zero());
    if p == 0 || img == 0 || g.c_out == 0 {
        return Ok(());
    }
    let par = inner_parallel(g);
    let one = |cols: &mut Vec<T>, (n, dx_n): (usize, &mut [T])| -> Result<()> {
        workspace(cols, &[rows, p])?;
        let grad_n = &grad[n * g.c_out * p..(n + 1) * g.c_out * p];
        for grp in 0..g.groups {
            // a = W_gᵀ: element (r, co) of the transpose is w[co·rows + r].
            let s = Strides { dst_rs: p as isize, dst_cs: 1, a_rs: 1, a_cs: rows as isize, b_rs: p as isize, b_cs: 1 };
            product(rows, p, cout_g, cols, &w[grp * cout_g * rows..], &grad_n[grp * cout_g * p..], s, par);
            let plane = g.h * g.w;
            col2im(cols, cin_g, g, &mut dx_n[grp * cin_g * plane..(grp + 1) * cin_g * plane]);
        }
        Ok(())
    };
    if g.n > 1 {
        dx.par_chunks_mut(img).enumerate().try_for_each_init(Vec::new, one)
    } else {
        let mut cols = Vec::new();
        dx.chunks_mut(img).enumerate().try_for_each(|it| one(&mut cols, it))
    }
}

/// Weight gradient: `dw_g = grad_g @ cols_gᵀ`, summed over the batch inside one product per
/// group. Columns of all images sit side by side ([Cin·KH·KW, N·OH·OW]) and the gradient is
/// regrouped to [Cout, N·OH·OW] so the batch sum is the gemm's own k loop. `dw` is overwritten.
pub fn grad_weight<T: ConvElem>(x: &[T], grad: &[T], dw: &mut [T], g: &Geometry) -> Result<()> {
    let (p, rows) = (g.pixels(), g.rows_g());
    let cout_g = g.cout_g();
    let np = g.n * p;
    let img = g.c_in * g.h * g.w;
    let all_rows = g.c_in * g.kh * g.kw;
    if np == 0 {
        dw.fill(T::zero());
        return Ok(());
    }
    // cols[row][n·p + pix]: rows are independent, so they are filled in parallel.
    let (hw, k) = (g.h * g.w, g.kh * g.kw);
    let mut cols = Vec::new();
    workspace(&mut cols, &[all_rows, np])?;
    cols.par_chunks_mut(np).enumerate().for_each(|(r, row)| {
        let c = r / k;
        for (n, dst) in row.chunks_mut(p).enumerate() {
            let plane = &x[n * img + c * hw..n * img + (c + 1) * hw];
            unfold_row(plane, (r % k) / g.kw, r % g.kw, g, dst);
        }
    });
    // grad regrouped: gr[co][n·p + pix].
    let mut gr = Vec::new();
    workspace(&mut gr, &[g.c_out, np])?;
    gr.par_chunks_mut(np).enumerate().for_each(|(co, row)| {
        for n in 0..g.n {
            let src = &grad[(n * g.c_out + co) * p..(n * g.c_out + co + 1) * p];
            row[n * p..(n + 1) * p].copy_from_slice(src);
        }
    });
    let par = cout_g * rows * np >= super::matmul::GEMM_PAR_MIN_WORK;
    for grp in 0..g.groups {
        // b = cols_gᵀ: element (k, r) is cols[r·np + k].
        let s = Strides { dst_rs: rows as isize, dst_cs: 1, a_rs: np as isize, a_cs: 1, b_rs: 1, b_cs: np as isize };
        product(cout_g, rows, np, &mut dw[grp * cout_g * rows..(grp + 1) * cout_g * rows], &gr[grp * cout_g * np..], &cols[grp * rows * np..], s, par);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(n: usize, c_in: usize, h: usize, w: usize, c_out: usize, k: [usize; 2], s: [usize; 2], pad: [usize; 2], d: [usize; 2], groups: usize) -> Geometry {
        let out = |i: usize| (([h, w][i] + 2 * pad[i]) - d[i] * (k[i] - 1) - 1) / s[i] + 1;
        Geometry { n, c_in, h, w, c_out, kh: k[0], kw: k[1], oh: out(0), ow: out(1), stride: s, padding: pad, dilation: d, groups }
    }

    /// The definition, one output element at a time.
    fn naive(x: &[f64], wt: &[f64], g: &Geometry) -> Vec<f64> {
        let (cin_g, cout_g) = (g.c_in / g.groups, g.c_out / g.groups);
        let mut out = vec![0.0; g.n * g.c_out * g.oh * g.ow];
        for n in 0..g.n {
            for co in 0..g.c_out {
                let grp = co / cout_g;
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        let mut acc = 0.0;
                        for ci in 0..cin_g {
                            for ki in 0..g.kh {
                                for kj in 0..g.kw {
                                    if let (Some(iy), Some(ix)) = (g.src(0, oy, ki), g.src(1, ox, kj)) {
                                        let c = grp * cin_g + ci;
                                        acc += x[((n * g.c_in + c) * g.h + iy) * g.w + ix] * wt[((co * cin_g + ci) * g.kh + ki) * g.kw + kj];
                                    }
                                }
                            }
                        }
                        out[((n * g.c_out + co) * g.oh + oy) * g.ow + ox] = acc;
                    }
                }
            }
        }
        out
    }

    fn seq(n: usize, seed: f64) -> Vec<f64> {
        (0..n).map(|i| ((i as f64 * 0.37 + seed).sin() * 3.0).round() / 2.0).collect()
    }

    #[test]
    fn small_exact_case() {
        // 1x1x3x3 input, 2x2 ones kernel: each output is the sum of a 2x2 window.
        let g = geo(1, 1, 3, 3, 1, [2, 2], [1, 1], [0, 0], [1, 1], 1);
        let x: Vec<f64> = (1..=9).map(|v| v as f64).collect();
        let mut out = vec![0.0; 4];
        forward(&x, &[1.0; 4], Some(&[0.5]), &mut out, &g).unwrap();
        assert_eq!(out, vec![12.5, 16.5, 24.5, 28.5]);
    }

    #[test]
    fn forward_and_gradients_match_the_definition() {
        for (k, s, pad, d, groups) in [([3, 3], [1, 1], [1, 1], [1, 1], 1), ([2, 3], [2, 1], [0, 2], [1, 2], 2), ([1, 1], [3, 2], [0, 0], [1, 1], 4)] {
            let g = geo(3, 4, 7, 6, 4, k, s, pad, d, groups);
            let x = seq(g.n * g.c_in * g.h * g.w, 0.1);
            let wt = seq(g.c_out * (g.c_in / groups) * g.kh * g.kw, 0.7);
            let mut out = vec![0.0; g.n * g.c_out * g.oh * g.ow];
            forward(&x, &wt, None, &mut out, &g).unwrap();
            assert_eq!(out, naive(&x, &wt, &g));
            // <conv(x, w), gy> = <x, grad_input(gy, w)> = <w, grad_weight(x, gy)>: the
            // gradients are the adjoints of the forward in each argument.
            let gy = seq(out.len(), 2.3);
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(a, b)| a * b).sum::<f64>();
            let mut dx = vec![7.0; x.len()];
            grad_input(&gy, &wt, &mut dx, &g).unwrap();
            let mut dw = vec![7.0; wt.len()];
            grad_weight(&x, &gy, &mut dw, &g).unwrap();
            assert!((dot(&out, &gy) - dot(&x, &dx)).abs() < 1e-9);
            assert!((dot(&out, &gy) - dot(&wt, &dw)).abs() < 1e-9);
        }
    }
}
