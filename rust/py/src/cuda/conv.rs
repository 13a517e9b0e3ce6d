//! Convolution, pooling and index-map padding on the GPU (the `Backend` methods of docs/gpu.md,
//! "Convolution").
//!
//! conv2d is im2col + cuBLAS: a chunk of images is unfolded into a column buffer by `mg_im2col`
//! and multiplied by the weight with the driver's matmul, every group and image of the chunk in
//! one batched product; the chunk is as many images as keep the buffer under `cols_budget()`
//! elements. The input gradient is the transposed product folded back by `mg_col2im` (one
//! thread per input element, no atomics); the weight gradient is `grad · columnsᵀ` per chunk,
//! the chunks added in order. Pooling and padding are one kernel each way (pool.cu, pad.cu);
//! their window tables and index maps are computed on the host, as the CPU's are, and copied over.

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::{Params, BLOCK};
use minigrad_core::device::{AvgWindows, Backend, BinaryMode, ConvGeometry, MaxGeometry};
use minigrad_core::dtype::Scalar;
use minigrad_core::error::Result;
use minigrad_core::layout::Layout;
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::tensor::Tensor;
use minigrad_core::kernels::pool::Divisor;

/// Column-buffer elements per chunk of images (64 MiB of float32): big enough that cuBLAS sees
/// wide products, small enough that a large batch does not need a buffer per image.
const COLS_BUDGET: usize = 1 << 24;

/// The budget, or `MINIGRAD_CUDA_CONV_COLS` when set (the tests shrink it to exercise chunks).
fn cols_budget() -> usize {
    std::env::var("MINIGRAD_CUDA_CONV_COLS").ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0).unwrap_or(COLS_BUDGET)
}

fn addr(t: &Tensor) -> u64 {
    t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64
}

/// A view of `t`'s memory with `shape` and `strides`, `extra` elements past `t`'s first.
fn view(t: &Tensor, shape: &[usize], strides: &[isize], extra: usize) -> Tensor {
    t.view_as_layout(Layout { shape: shape.into(), strides: strides.into(), offset: t.layout.offset + extra })
}

fn dense(t: &Tensor, shape: &[usize], extra: usize) -> Tensor {
    view(t, shape, &Layout::contiguous(shape).strides, extra)
}

fn mg_conv(g: &ConvGeometry) -> [i64; 16] {
    let v = [
        g.n, g.c_in, g.h, g.w, g.c_out, g.kh, g.kw, g.oh, g.ow, g.stride[0], g.stride[1], g.padding[0], g.padding[1],
        g.dilation[0], g.dilation[1], g.groups,
    ];
    v.map(|x| x as i64)
}

fn mg_pool(g: &MaxGeometry) -> [i64; 12] {
    let v = [g.h, g.w, g.oh, g.ow, g.kernel[0], g.kernel[1], g.stride[0], g.stride[1], g.padding[0], g.padding[1], g.dilation[0], g.dilation[1]];
    v.map(|x| x as i64)
}

/// Grid and block of the column kernels, which loop over planes, a block's threads over one
/// plane's pixels: a warp multiple no wider than the plane (nor than 256), so a small plane does
/// not leave most of a block idle; blocks enough to fill the device several times.
fn plane_launch(planes: usize, pixels: usize) -> (u32, u32) {
    let block = pixels.next_multiple_of(32).clamp(32, BLOCK as usize) as u32;
    let grid = planes.clamp(1, MAX_PLANE_BLOCKS) as u32;
    (grid, block)
}

/// At most this many blocks for the column kernels (132 SMs x 16 resident blocks, several times).
const MAX_PLANE_BLOCKS: usize = 1 << 14;

fn hw(shape: &[usize]) -> (usize, usize) {
    (shape[shape.len() - 2], shape[shape.len() - 1])
}

impl Cuda {
    /// Host integers as an int64 tensor on this device (window tables, index maps).
    fn upload(&self, v: Vec<i64>) -> Result<Tensor> {
        let n = v.len();
        minigrad_core::ops::copy::to_device_raw(&Tensor::from_vec(v, &[n])?, self.device())
    }

    fn images_per_chunk(g: &ConvGeometry) -> usize {
        let per_image = (g.c_in * g.kh * g.kw * g.oh * g.ow).max(1);
        (cols_budget() / per_image).clamp(1, g.n.max(1))
    }

    /// `mg_im2col` or `mg_col2im` of images `first..first + nb`, columns at `r·rs + i·is + p`.
    #[allow(clippy::too_many_arguments)]
    fn columns(&self, kernel: &str, dst: &Tensor, src: &Tensor, g: &ConvGeometry, first: usize, nb: usize, rs: usize, is: usize) -> Result<()> {
        let mut p = Params::new();
        p.ptr(addr(dst)).ptr(addr(src)).i64s(&mg_conv(g)).i64(first as i64).i64(nb as i64).i64(rs as i64).i64(is as i64);
        // im2col's planes are column rows of P pixels; col2im's input planes of H·W pixels
        let (planes, pixels) = if kernel == "mg_im2col" { (g.c_in * g.kh * g.kw * nb, g.oh * g.ow) } else { (nb * g.c_in, g.h * g.w) };
        let (grid, block) = plane_launch(planes, pixels);
        self.launch_on(&format!("{kernel}<{}>", ty(dst.dtype())), grid, block, planes * pixels, &mut p)
    }

    pub(super) fn conv2d_impl(&self, out: &Tensor, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, g: &ConvGeometry) -> Result<()> {
        if out.numel() == 0 {
            return Ok(());
        }
        let (p, k, groups) = (g.oh * g.ow, g.kh * g.kw, g.groups);
        let (cout_g, rows_g) = (g.c_out / groups, g.c_in / groups * k);
        if rows_g == 0 {
            self.fill(out, Scalar::Int(0))?;
        } else {
            let nb_max = Self::images_per_chunk(g);
            let cols = Tensor::empty_on(&[nb_max * g.c_in * k * p], x.dtype(), self.device())?;
            let img = g.c_in * k * p;
            for first in (0..g.n).step_by(nb_max) {
                let nb = nb_max.min(g.n - first);
                self.columns("mg_im2col", &cols, x, g, first, nb, p, img)?;
                // out[i, grp] = W[grp] @ cols[i, grp]: the weight broadcast over the chunk's images.
                let a = view(w, &[nb, groups, cout_g, rows_g], &[0, (cout_g * rows_g) as isize, rows_g as isize, 1], 0);
                let b = dense(&cols, &[nb, groups, rows_g, p], 0);
                let d = dense(out, &[nb, groups, cout_g, p], first * g.c_out * p);
                self.matmul(&d, &a, &b)?;
            }
        }
        if let Some(b) = bias {
            let bv = view(b, &[g.c_out, 1, 1], &[1, 0, 0], 0);
            self.binary(BinaryOp::Add, out, out, &bv, BinaryMode::InPlace, None)?;
        }
        Ok(())
    }

    pub(super) fn conv2d_input_grad_impl(&self, dx: &Tensor, grad: &Tensor, w: &Tensor, g: &ConvGeometry) -> Result<()> {
        if dx.numel() == 0 {
            return Ok(());
        }
        let (p, k, groups) = (g.oh * g.ow, g.kh * g.kw, g.groups);
        let (cout_g, rows_g) = (g.c_out / groups, g.c_in / groups * k);
        let nb_max = Self::images_per_chunk(g);
        let img = g.c_in * k * p;
        let cols = Tensor::empty_on(&[nb_max * img], dx.dtype(), self.device())?;
        for first in (0..g.n).step_by(nb_max) {
            let nb = nb_max.min(g.n - first);
            // cols[i, grp] = W[grp]ᵀ @ grad[i, grp]
            let a = view(w, &[nb, groups, rows_g, cout_g], &[0, (cout_g * rows_g) as isize, 1, rows_g as isize], 0);
            let b = dense(grad, &[nb, groups, cout_g, p], first * g.c_out * p);
            let d = dense(&cols, &[nb, groups, rows_g, p], 0);
            self.matmul(&d, &a, &b)?;
            self.columns("mg_col2im", dx, &cols, g, first, nb, p, img)?;
        }
        Ok(())
    }

    pub(super) fn conv2d_weight_grad_impl(&self, dw: &Tensor, x: &Tensor, grad: &Tensor, g: &ConvGeometry) -> Result<()> {
        if dw.numel() == 0 {
            return Ok(());
        }
        let (p, k, groups) = (g.oh * g.ow, g.kh * g.kw, g.groups);
        let (cout_g, rows_g) = (g.c_out / groups, g.c_in / groups * k);
        if g.n == 0 || p == 0 {
            return self.fill(dw, Scalar::Int(0));
        }
        let nb_max = Self::images_per_chunk(g);
        let dev = self.device();
        let cols = Tensor::empty_on(&[g.c_in * k * nb_max * p], x.dtype(), dev)?;
        let regrouped = if nb_max > 1 { Some(Tensor::empty_on(&[g.c_out * nb_max * p], x.dtype(), dev)?) } else { None };
        let partial = if g.n > nb_max { Some(Tensor::empty_on(dw.shape(), dw.dtype(), dev)?) } else { None };
        for first in (0..g.n).step_by(nb_max) {
            let nb = nb_max.min(g.n - first);
            let rs = nb * p;
            // columns as [C·KH·KW, nb·P]: each group's rows are one matrix over the chunk's pixels
            self.columns("mg_im2col", &cols, x, g, first, nb, rs, p)?;
            // the chunk's gradient as [Cout, nb·P] (one image's already is)
            let gsrc = match &regrouped {
                Some(r) if nb > 1 => {
                    let src = view(grad, &[g.c_out, nb, p], &[p as isize, (g.c_out * p) as isize, 1], first * g.c_out * p);
                    let dst = dense(r, &[g.c_out, nb, p], 0);
                    self.copy(&dst, &src, src.strides())?;
                    r.clone()
                }
                _ => dense(grad, &[g.c_out * p], first * g.c_out * p),
            };
            // dw[grp] (+)= grad[grp] @ cols[grp]ᵀ
            let a = dense(&gsrc, &[groups, cout_g, rs], 0);
            let b = view(&cols, &[groups, rs, rows_g], &[(rows_g * rs) as isize, 1, rs as isize], 0);
            let target = if first == 0 { dw } else { partial.as_ref().expect("several chunks") };
            self.matmul(&dense(target, &[groups, cout_g, rows_g], 0), &a, &b)?;
            if first > 0 {
                self.add_into(dw, target)?;
            }
        }
        Ok(())
    }

    pub(super) fn max_pool2d_impl(&self, out: &Tensor, idx: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        let planes = out.numel() / (g.oh * g.ow).max(1);
        let mut p = Params::new();
        p.ptr(addr(out)).ptr(addr(idx)).ptr(addr(x)).i64s(&mg_pool(g)).i64(planes as i64);
        self.launch(&format!("mg_max_pool2d<{}>", ty(x.dtype())), out.numel(), &mut p)
    }

    pub(super) fn max_pool2d_backward_impl(&self, dx: &Tensor, grad: &Tensor, idx: &Tensor, g: &MaxGeometry) -> Result<()> {
        let planes = dx.numel() / (g.h * g.w).max(1);
        let mut p = Params::new();
        p.ptr(addr(dx)).ptr(addr(grad)).ptr(addr(idx)).i64s(&mg_pool(g)).i64(planes as i64);
        self.launch(&format!("mg_max_pool2d_backward<{}>", ty(dx.dtype())), dx.numel(), &mut p)
    }

    /// `mg_avg_pool2d` (forward: `dst` the output, `src` the input) or its backward.
    pub(super) fn avg_pool2d_impl(&self, dst: &Tensor, src: &Tensor, win: &AvgWindows, backward: bool) -> Result<()> {
        if dst.numel() == 0 {
            return Ok(());
        }
        let (h, w) = hw(if backward { dst.shape() } else { src.shape() });
        let (oh, ow) = (win.rows.len(), win.cols.len());
        let spans = win.rows.iter().chain(&win.cols).flat_map(|s| [s.start as i64, s.end as i64, s.padded as i64]).collect();
        let spans = self.upload(spans)?;
        let (divisor, value) = match win.divisor {
            Divisor::Override(d) => (0, d),
            Divisor::Padded => (1, 0.0),
            Divisor::Covered => (2, 0.0),
        };
        let planes = dst.numel() / if backward { h * w } else { oh * ow };
        let mut p = Params::new();
        p.ptr(addr(dst)).ptr(addr(src)).ptr(addr(&spans)).i64(h as i64).i64(w as i64).i64(oh as i64).i64(ow as i64);
        p.i64(planes as i64).i32(divisor).f64(value);
        let name = if backward { "mg_avg_pool2d_backward" } else { "mg_avg_pool2d" };
        self.launch(&format!("{name}<{}>", ty(dst.dtype())), dst.numel(), &mut p)
    }

    /// `mg_pad2d` (forward: `dst` the output, `src` the input) or its backward, through the
    /// inverse maps.
    pub(super) fn pad2d_impl(&self, dst: &Tensor, src: &Tensor, rows: &[usize], cols: &[usize], backward: bool) -> Result<()> {
        if dst.numel() == 0 {
            return Ok(());
        }
        let (h, w) = hw(if backward { dst.shape() } else { src.shape() });
        let maps: Vec<i64> = if backward {
            let mut v = inverse(rows, h);
            v.extend(inverse(cols, w));
            v
        } else {
            rows.iter().chain(cols).map(|&i| i as i64).collect()
        };
        let maps = self.upload(maps)?;
        let planes = dst.numel() / if backward { h * w } else { rows.len() * cols.len() };
        let mut p = Params::new();
        p.ptr(addr(dst)).ptr(addr(src)).ptr(addr(&maps)).i64(h as i64).i64(w as i64).i64(rows.len() as i64).i64(cols.len() as i64).i64(planes as i64);
        let name = if backward { "mg_pad2d_backward" } else { "mg_pad2d" };
        self.launch(&format!("{name}<{}>", ty(dst.dtype())), dst.numel(), &mut p)
    }
}

/// The inverse of an index map onto `0..size`: `start` (size + 1 entries) then the list of
/// outputs reading each source, ascending (a counting sort, so the order is the outputs').
fn inverse(map: &[usize], size: usize) -> Vec<i64> {
    let mut start = vec![0i64; size + 1];
    for &s in map {
        start[s + 1] += 1;
    }
    for i in 0..size {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut list = vec![0i64; map.len()];
    for (o, &s) in map.iter().enumerate() {
        list[next[s] as usize] = o as i64;
        next[s] += 1;
    }
    start.extend(list);
    start
}

#[cfg(test)]
mod tests {
    #[test]
    fn inverse_lists_outputs_in_order() {
        // reflect by 1 of a row of 3: outputs read 1 0 1 2 1
        assert_eq!(super::inverse(&[1, 0, 1, 2, 1], 3), vec![0, 1, 4, 5, 1, 0, 2, 4, 3]);
    }
}

