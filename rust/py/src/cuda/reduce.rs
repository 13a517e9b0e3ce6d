//! Reductions and softmax on the GPU: `reduce.cu` and `softmax.cu` reduce the middle axis of a
//! contiguous `(outer, red, inner)` tensor, so the operand is first brought to that form (as it
//! is, when the reduced dims are one consecutive run of a contiguous tensor; otherwise as a
//! contiguous copy with the kept dims first). Long reductions with few outputs take the split
//! pass, in chunks fixed by the shape alone (`reduce_chunk`), so results never depend on timing;
//! it is one launch (`mg_reduce_split`: the last block of each output combines its partials).

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::Params;
use minigrad_core::device::{Backend, BinaryMode};
use minigrad_core::dtype::{DType, Scalar};
use minigrad_core::error::{Error, Result};
use minigrad_core::layout::Layout;
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::ops::cuda_kernels::{
    reduce_chunk, softmax_warp_per, ACC_SLOT_BYTES, REDUCE_THREADS, REDUCE_WARP_MAX_ROW, SOFTMAX_WARP_MAX_ROW, SOURCES,
};
use minigrad_core::ops::reduce::Reduction;
use minigrad_core::tensor::Tensor;

/// Threads per block of the warp-per-row kernels (softmax, short reductions): four rows per block.
const SOFTMAX_WARP_THREADS: u32 = 128;

/// Whether `name` (`mg_reduce_warp<...>`) is instantiated: only the common float reductions are.
fn has_warp_instance(name: &str) -> bool {
    static NAMES: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            SOURCES.iter().flat_map(|s| s.instances()).filter(|i| i.starts_with("mg_reduce_warp<")).collect()
        })
        .contains(name)
}

/// A contiguous operand seen as `(outer, red, inner)`.
struct ThreeAxes {
    base: Tensor,
    outer: usize,
    red: usize,
    inner: usize,
}

pub(super) fn addr(t: &Tensor) -> u64 {
    t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64
}

fn opt_addr(t: Option<&Tensor>) -> u64 {
    t.map_or(0, addr)
}

impl Cuda {
    /// A contiguous copy of `t` on this device (or `t` itself when it already is one).
    pub(super) fn contiguous(&self, t: &Tensor) -> Result<Tensor> {
        minigrad_core::ops::copy::contiguous_raw(&self.resident(t)?)
    }

    fn three_axes(&self, src: &Tensor, dims: &[usize]) -> Result<ThreeAxes> {
        let shape = src.shape();
        let prod = |s: &[usize]| s.iter().product::<usize>();
        let src = self.resident(src)?;
        if dims.is_empty() {
            return Ok(ThreeAxes { base: self.contiguous(&src)?, outer: src.numel(), red: 1, inner: 1 });
        }
        let consecutive = dims.windows(2).all(|w| w[1] == w[0] + 1);
        if consecutive && src.is_contiguous() {
            let (d0, d1) = (dims[0], dims[dims.len() - 1]);
            return Ok(ThreeAxes {
                base: src.clone(),
                outer: prod(&shape[..d0]),
                red: prod(&shape[d0..=d1]),
                inner: prod(&shape[d1 + 1..]),
            });
        }
        // kept dims first, reduced dims last, copied into that order
        let order: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).chain(dims.iter().copied()).collect();
        let layout = Layout {
            shape: order.iter().map(|&d| shape[d]).collect(),
            strides: order.iter().map(|&d| src.strides()[d]).collect(),
            offset: src.layout.offset,
        };
        let permuted = src.view_as_layout(layout);
        let red = dims.iter().map(|&d| shape[d]).product();
        let outer = (0..shape.len()).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
        Ok(ThreeAxes { base: self.contiguous(&permuted)?, outer, red, inner: 1 })
    }

    /// Blocks for a reduce-family launch: one work item per output row (or 32-column tile) and
    /// chunk; the kernels loop over items grid-stride, so any count is correct.
    fn reduce_grid(outer: usize, nchunk: usize, inner: usize) -> (u32, usize) {
        let tiles = if inner == 1 { 1 } else { inner.div_ceil(32) };
        let items = outer * nchunk * tiles;
        (items.clamp(1, 1 << 16) as u32, items)
    }

    /// One reduction `op` (a name expression's functor, e.g. `mg::Sum<float, double>`) of `x`
    /// into `out` (and `values`), with the split pass when the shape calls for it.
    #[allow(clippy::too_many_arguments)]
    fn run_reduce(&self, op: &str, out: u64, values: u64, x: &ThreeAxes, aux: u64, p0: f64, p1: f64) -> Result<()> {
        let (outer, red, inner) = (x.outer, x.red, x.inner);
        let chunk = reduce_chunk(outer as u64, red as u64, inner as u64) as usize;
        let input = addr(&x.base);
        if chunk == 0 && inner == 1 && (1..=REDUCE_WARP_MAX_ROW).contains(&red) {
            let name = format!("mg_reduce_warp<{op}>");
            if has_warp_instance(&name) {
                let grid = outer.div_ceil((SOFTMAX_WARP_THREADS / 32) as usize).clamp(1, 1 << 16) as u32;
                let mut p = Params::new();
                p.ptr(out).ptr(values).ptr(input).i64(outer as i64).i64(red as i64).ptr(aux).f64(p0).f64(p1);
                return self.launch_on(&name, grid, SOFTMAX_WARP_THREADS, outer, &mut p);
            }
        }
        if chunk == 0 {
            let (grid, items) = Self::reduce_grid(outer, 1, inner);
            let mut p = Params::new();
            p.ptr(out).ptr(values).ptr(input).i64(outer as i64).i64(red as i64).i64(inner as i64).ptr(aux).f64(p0).f64(p1);
            return self.launch_on(&format!("mg_reduce<{op}>"), grid, REDUCE_THREADS, items, &mut p);
        }
        // the split pass, one launch: partial slots and ticket counters from this stream's scratch
        let nchunk = red.div_ceil(chunk);
        let tiles = if inner == 1 { 1 } else { inner.div_ceil(32) };
        let scratch = self.scratch.get(&self.driver, outer * tiles, outer * nchunk * inner, ACC_SLOT_BYTES)?;
        let (grid, items) = Self::reduce_grid(outer, nchunk, inner);
        let mut p = Params::new();
        p.ptr(out).ptr(values).ptr(scratch.slots()).ptr(scratch.tickets()).ptr(input);
        p.i64(outer as i64).i64(red as i64).i64(inner as i64).i64(chunk as i64).ptr(aux).f64(p0).f64(p1);
        self.launch_on(&format!("mg_reduce_split<{op}>"), grid, REDUCE_THREADS, items, &mut p)
    }

    pub(super) fn reduce_impl(&self, op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> Result<()> {
        let n_out = values.or(indices).map_or(0, |t| t.numel());
        if n_out == 0 {
            return Ok(());
        }
        let x = self.three_axes(src, dims)?;
        let t = ty(src.dtype());
        let o = values.map(|v| ty(v.dtype())).unwrap_or("long long");
        let out = opt_addr(values);
        let red = x.red as f64;
        match op {
            Reduction::Sum => self.run_reduce(&format!("mg::Sum<{t}, {o}>"), out, 0, &x, 0, 0.0, 0.0),
            Reduction::Prod => self.run_reduce(&format!("mg::Prod<{t}, {o}>"), out, 0, &x, 0, 0.0, 0.0),
            Reduction::Mean => self.run_reduce(&format!("mg::Mean<{t}, {o}>"), out, 0, &x, 0, red, 0.0),
            Reduction::Amax => self.run_reduce(&format!("mg::Amax<{t}>"), out, 0, &x, 0, 0.0, 0.0),
            Reduction::Amin => self.run_reduce(&format!("mg::Amin<{t}>"), out, 0, &x, 0, 0.0, 0.0),
            Reduction::Argmax | Reduction::Argmin => {
                let idx = indices.ok_or_else(|| Error::Runtime("minigrad internal error: argmax without indices".into()))?;
                let name = if op == Reduction::Argmax { "ArgMax" } else { "ArgMin" };
                self.run_reduce(&format!("mg::{name}<{t}>"), addr(idx), out, &x, 0, 0.0, 0.0)
            }
            Reduction::All => self.run_reduce(&format!("mg::All<{t}>"), out, 0, &x, 0, 0.0, 0.0),
            Reduction::Any => self.run_reduce(&format!("mg::Any<{t}>"), out, 0, &x, 0, 0.0, 0.0),
            Reduction::CountNonzero => {
                // (x != 0) as bool, then an int64 sum of it
                let nz = Tensor::empty_on(x.base.shape(), DType::Bool, self.device())?;
                let zero = Tensor::scalar(Scalar::Int(0), x.base.dtype())?;
                self.binary(BinaryOp::Ne, &nz, &x.base, &zero, BinaryMode::Fresh, None)?;
                let nzx = ThreeAxes { base: nz, ..x };
                self.run_reduce("mg::Sum<bool, long long>", out, 0, &nzx, 0, 0.0, 0.0)
            }
            Reduction::Norm { p } => {
                let (kind, p0) = if p == 2.0 {
                    ("Norm2", 0.0)
                } else if p == 1.0 {
                    ("Norm1", 0.0)
                } else if p == f64::INFINITY {
                    ("NormInf", 0.0)
                } else if p == f64::NEG_INFINITY {
                    ("NormNegInf", 0.0)
                } else if p == 0.0 {
                    ("Norm0", 0.0)
                } else {
                    ("NormP", p)
                };
                self.run_reduce(&format!("mg::{kind}<{t}, {o}>"), out, 0, &x, 0, p0, 0.0)
            }
            Reduction::Var { correction, std } => {
                let mean = Tensor::empty_on(&[x.outer * x.inner], DType::Float64, self.device())?;
                self.run_reduce(&format!("mg::Mean<{t}, double>"), addr(&mean), 0, &x, 0, red, 0.0)?;
                let divisor = (red - correction).max(0.0);
                self.run_reduce(&format!("mg::SqDev<{t}>"), out, 0, &x, addr(&mean), divisor, f64::from(u8::from(std)))
            }
            Reduction::LogSumExp => {
                let shift = Tensor::empty_on(&[x.outer * x.inner], DType::Float64, self.device())?;
                self.run_reduce(&format!("mg::LseShift<{t}>"), addr(&shift), 0, &x, 0, 0.0, 0.0)?;
                self.run_reduce(&format!("mg::LseSum<{t}>"), out, 0, &x, addr(&shift), 0.0, 0.0)
            }
        }
    }

    fn softmax_grid(outer: usize, inner: usize) -> (u32, usize) {
        Self::reduce_grid(outer, 1, inner)
    }

    /// Grid and elements per lane of the warp-per-row kernels, for rows along the last axis
    /// that fit in one warp's registers (`None`: the block-per-slice kernels).
    fn softmax_warp_grid(outer: usize, n: usize, inner: usize) -> Option<(u32, usize)> {
        if inner != 1 || n == 0 || n > SOFTMAX_WARP_MAX_ROW {
            return None;
        }
        let rows_per_block = (SOFTMAX_WARP_THREADS / 32) as usize;
        Some((outer.div_ceil(rows_per_block).clamp(1, 1 << 16) as u32, softmax_warp_per(n)))
    }

    /// `(outer, n, inner)` around `dim` of a contiguous shape (a 0-d tensor is one row of one).
    fn around(shape: &[usize], dim: usize) -> (usize, usize, usize) {
        if shape.is_empty() {
            return (1, 1, 1);
        }
        (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product())
    }

    pub(super) fn softmax_impl(&self, dst: &Tensor, src: &Tensor, dim: usize, log: bool) -> Result<()> {
        let src = self.contiguous(src)?;
        let (outer, n, inner) = Self::around(src.shape(), dim);
        if let Some((grid, per)) = Self::softmax_warp_grid(outer, n, inner) {
            let mut p = Params::new();
            p.ptr(addr(dst)).ptr(addr(&src)).i64(outer as i64).i64(n as i64);
            let name = format!("mg_softmax_warp<{}, {log}, {per}>", ty(src.dtype()));
            return self.launch_on(&name, grid, SOFTMAX_WARP_THREADS, outer * n, &mut p);
        }
        let (grid, items) = Self::softmax_grid(outer, inner);
        let mut p = Params::new();
        p.ptr(addr(dst)).ptr(addr(&src)).i64(outer as i64).i64(n as i64).i64(inner as i64);
        self.launch_on(&format!("mg_softmax<{}, {log}>", ty(src.dtype())), grid, REDUCE_THREADS, items * usize::from(n > 0), &mut p)
    }

    pub(super) fn softmax_backward_impl(&self, gi: &Tensor, g: &Tensor, r: &Tensor, dim: usize, log: bool) -> Result<bool> {
        let (g, r) = (self.contiguous(g)?, self.contiguous(r)?);
        let (outer, n, inner) = Self::around(r.shape(), dim);
        if let Some((grid, per)) = Self::softmax_warp_grid(outer, n, inner) {
            let mut p = Params::new();
            p.ptr(addr(gi)).ptr(addr(&g)).ptr(addr(&r)).i64(outer as i64).i64(n as i64);
            let name = format!("mg_softmax_warp_backward<{}, {log}, {per}>", ty(r.dtype()));
            self.launch_on(&name, grid, SOFTMAX_WARP_THREADS, outer * n, &mut p)?;
            return Ok(true);
        }
        let (grid, items) = Self::softmax_grid(outer, inner);
        let mut p = Params::new();
        p.ptr(addr(gi)).ptr(addr(&g)).ptr(addr(&r)).i64(outer as i64).i64(n as i64).i64(inner as i64);
        self.launch_on(&format!("mg_softmax_backward<{}, {log}>", ty(r.dtype())), grid, REDUCE_THREADS, items * usize::from(n > 0), &mut p)?;
        Ok(true)
    }
}
