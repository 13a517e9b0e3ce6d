//! The CUDA backend: the core's `Backend` for one GPU, launching the `.cu` kernels that sit
//! beside each op through the driver (CuPy). Shapes, dtypes, the write path and autograd were
//! settled by the op layer before any of this runs; here an op becomes a kernel name, a
//! parameter block and a grid.

use super::driver::{CopyKind, Driver};
use super::kernels::{exists, ty, FunctionCache};
use super::launch::{grid_for, vector_width, Geometry, Operand, Params, BLOCK};
use super::memory::{counters, Counters, DeviceBlock};
use minigrad_core::device::{AvgWindows, Backend, BinaryMode, Bound, ConvGeometry, Device, FloatMap, IndexTable, MaxGeometry, RandomDist, ScatterOp, Walk};
use minigrad_core::dtype::{DType, Scalar};
use minigrad_core::error::{Error, Result};
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::ops::reduce::Reduction;
use minigrad_core::ops::broadcast_strides;
use minigrad_core::ops::unary::UnaryOp;
use minigrad_core::storage::Storage;
use minigrad_core::tensor::Tensor;
use std::sync::Arc;

pub struct Cuda {
    pub(super) index: u32,
    pub(super) driver: Driver,
    functions: FunctionCache,
    counters: &'static Counters,
    pub(super) scratch: super::scratch::Scratch,
}

impl Cuda {
    pub fn new(index: u32, driver: Driver) -> Result<Cuda> {
        let counters = counters(index)
            .ok_or_else(|| Error::Runtime(format!("minigrad: CUDA device ordinals above {} are not supported", super::memory::MAX_DEVICES - 1)))?;
        Ok(Cuda { index, driver, functions: FunctionCache::default(), counters, scratch: Default::default() })
    }

    /// Launches `name` with `params` over `n` elements (nothing to do when `n` is 0).
    pub(super) fn launch(&self, name: &str, n: usize, params: &mut Params) -> Result<()> {
        self.launch_on(name, grid_for(n), BLOCK, n, params)
    }

    pub(super) fn launch_on(&self, name: &str, grid: u32, block: u32, n: usize, params: &mut Params) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let f = self.functions.get(&self.driver, name)?;
        let ptrs = params.pointers();
        self.driver.launch(f, grid, block, 0, ptrs.as_ptr() as u64)
    }

    /// Launches a `*_contig` kernel over `g`'s elements: a thread per 16-byte vector.
    fn launch_contig(&self, name: &str, g: &Geometry, params: &mut Params) -> Result<()> {
        let threads = g.numel.div_ceil(vector_width(&g.operands));
        self.launch_on(name, grid_for(threads), BLOCK, g.numel, params)
    }

    /// `t` where a kernel can read it: a 0-d CPU tensor (a wrapped number, which may join ops on
    /// any device) is copied to this device; device tensors are returned as they are.
    pub(super) fn resident(&self, t: &Tensor) -> Result<Tensor> {
        if t.device() == self.device() {
            return Ok(t.clone());
        }
        if !t.device().is_cpu() || t.ndim() != 0 {
            // torch's "Expected all tensors to be on the same device" error
            minigrad_core::device::check_same_device([self.device(), t.device()])?;
        }
        minigrad_core::ops::copy::to_device_raw(t, self.device())
    }

    /// An elementwise launch over `shape`: the strided kernel `strided`, or `contig` when every
    /// operand is dense in the same order. `tail` appends the parameters after the operands
    /// and `n` (the strided kernels take the iteration shape before `n`).
    pub(super) fn elementwise(
        &self,
        strided: &str,
        contig: &str,
        shape: &[usize],
        operands: Vec<Operand>,
        tail: impl Fn(&mut Params),
    ) -> Result<()> {
        let g = Geometry::new(shape, operands);
        if g.numel == 0 {
            return Ok(());
        }
        let mut p = Params::new();
        if g.is_contiguous() {
            for o in &g.operands {
                p.ptr(o.first());
            }
            p.i64(g.numel as i64);
            tail(&mut p);
            return self.launch_contig(contig, &g, &mut p);
        }
        if g.too_many_dims() {
            return Err(Error::Runtime("minigrad: CUDA kernels support at most 25 dimensions".into()));
        }
        for o in &g.operands {
            p.ptr(o.base).strides(o.offset, &o.strides);
        }
        p.shape(&g.shape).i64(g.numel as i64);
        tail(&mut p);
        self.launch(strided, g.numel, &mut p)
    }
}

/// `(address of the first element, shape, strides in elements)` for the driver's cuBLAS calls.
pub(super) fn operand(t: &Tensor) -> (u64, Vec<usize>, Vec<isize>) {
    (t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64, t.shape().to_vec(), t.strides().to_vec())
}

pub(super) fn own(t: &Tensor) -> Operand {
    Operand::of(t, t.strides().to_vec())
}

fn bcast(t: &Tensor, shape: &[usize]) -> Operand {
    Operand::of(t, broadcast_strides(t, shape))
}

fn unsupported(what: &str, dtype: DType, device: Device) -> Error {
    Error::NotImplemented(format!("minigrad: {what} is not implemented for {} tensors on {device}", dtype.name()))
}

impl Backend for Cuda {
    fn device(&self) -> Device {
        Device::Cuda(self.index)
    }

    fn allocate(&self, nbytes: usize, dtype: DType, zeroed: bool) -> Result<Arc<Storage>> {
        let (ptr, owner) = self.driver.alloc(nbytes)?;
        let block = DeviceBlock::new(owner, nbytes, self.counters);
        if zeroed && nbytes > 0 {
            self.driver.memset_zero(ptr, nbytes)?;
        }
        // SAFETY: the driver returned `nbytes` of device memory at `ptr` (pool blocks are 512-byte
        // aligned), kept alive by `owner`, now owned by the storage through `block`; the core never
        // dereferences a CUDA storage's pointer (only this backend's kernels and copies use it).
        Ok(unsafe { Storage::from_foreign_on(self.device(), ptr as *mut u8, nbytes, dtype, Box::new(block)) })
    }

    fn copy(&self, dst: &Tensor, src: &Tensor, src_strides: &[isize]) -> Result<()> {
        let src = self.resident(src)?;
        let strides = if src.ndim() == 0 { vec![0; dst.ndim()] } else { src_strides.to_vec() };
        let (o, t) = (ty(dst.dtype()), ty(src.dtype()));
        self.elementwise(
            &format!("mg_copy<{o}, {t}>"),
            &format!("mg_copy_contig<{o}, {t}>"),
            dst.shape(),
            vec![own(dst), Operand::of(&src, strides)],
            |_| {},
        )
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        let t = ty(dst.dtype());
        let dtype = dst.dtype();
        self.elementwise(&format!("mg_fill<{t}>"), &format!("mg_fill_contig<{t}>"), dst.shape(), vec![own(dst)], |p| {
            p.scalar(value, dtype);
        })
    }

    fn unary(&self, op: UnaryOp, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        let (o, t) = (ty(dst.dtype()), ty(src.dtype()));
        let name = format!("{op:?}");
        let strided = format!("mg_unary<{o}, {t}, mg::{name}>");
        if !exists(&strided) {
            // bool -> bool ops other than sign/bitwise_not/logical_not leave values as they are
            // (abs, floor, ... of bool), as the CPU kernel does
            if dst.dtype() == DType::Bool && src.dtype() == DType::Bool {
                return if in_place { Ok(()) } else { self.copy(dst, src, src.strides()) };
            }
            return Err(unsupported(&format!("{op:?}"), src.dtype(), self.device()));
        }
        let ops = if in_place { vec![own(dst), own(dst)] } else { vec![own(dst), own(src)] };
        self.elementwise(&strided, &format!("mg_unary_contig<{o}, {t}, mg::{name}>"), dst.shape(), ops, |p| {
            p.f64(0.0).f64(0.0).f64(0.0);
        })
    }

    fn unary_backward(&self, op: UnaryOp, g: &Tensor, s: &Tensor, out: &dyn Fn() -> Result<Tensor>) -> Result<Option<Tensor>> {
        use UnaryOp::*;
        // the functors of unary.cu whose arithmetic is the composite formula's, operation for
        // operation (relu: threshold_backward's `s <= 0 ? 0 : g`)
        if !matches!(op, Relu | Sigmoid | Tanh | Sqrt | Reciprocal | Expm1 | Log1p | Sin | Cos) {
            return Ok(None);
        }
        let (t, name) = (ty(g.dtype()), format!("{op:?}Backward"));
        let strided = format!("mg_unary_backward<{t}, mg::{name}>");
        if !exists(&strided) {
            return Ok(None);
        }
        let dst = out()?;
        self.elementwise(&strided, &format!("mg_unary_backward_contig<{t}, mg::{name}>"), dst.shape(), vec![own(&dst), own(g), own(s)], |p| {
            p.f64(0.0);
        })?;
        Ok(Some(dst))
    }

    fn float_map(&self, map: FloatMap, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        let t = ty(dst.dtype());
        let name = match map {
            FloatMap::LeakyRelu { .. } => "LeakyRelu",
            FloatMap::Elu { .. } => "Elu",
            FloatMap::GeluCdf => "GeluCdf",
        };
        let strided = format!("mg_unary<{t}, {t}, mg::{name}>");
        if !exists(&strided) {
            return Err(unsupported(map.name(), dst.dtype(), self.device()));
        }
        let ops = if in_place { vec![own(dst), own(dst)] } else { vec![own(dst), own(src)] };
        let [p0, p1, p2] = map.params();
        self.elementwise(&strided, &format!("mg_unary_contig<{t}, {t}, mg::{name}>"), dst.shape(), ops, |p| {
            p.f64(p0).f64(p1).f64(p2);
        })
    }

    fn binary(&self, op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: BinaryMode, alpha: Option<f64>) -> Result<()> {
        let shape = dst.shape().to_vec();
        let (name, p0) = match alpha {
            Some(al) => ("AddAlpha".to_string(), if op == BinaryOp::Sub { -al } else { al }),
            None => (format!("{op:?}"), 0.0),
        };
        let compute = a.dtype();
        let (o, t) = (ty(dst.dtype()), ty(compute));
        let a_here = a.device() == self.device();
        let b_here = b.device() == self.device();
        if !a_here || !b_here {
            // One operand is a wrapped number on the CPU: pass it by value.
            let (x, s, scalar_first) = if b_here { (b, a, 1) } else { (a, b, 0) };
            if x.device() != self.device() {
                return Err(Error::Runtime("minigrad: a binary op needs at least one operand on the device".into()));
            }
            let value = s.item()?;
            let xo = if mode == BinaryMode::Fresh { bcast(x, &shape) } else { own(dst) };
            let g = Geometry::new(&shape, vec![own(dst), xo]);
            let mut p = Params::new();
            if g.is_contiguous() {
                p.ptr(g.operands[0].first()).ptr(g.operands[1].first()).scalar(value, compute).i64(g.numel as i64);
                p.i32(scalar_first).f64(p0);
                return self.launch_contig(&format!("mg_binary_scalar_contig<{o}, {t}, mg::{name}>"), &g, &mut p);
            }
            for op in &g.operands {
                p.ptr(op.base).strides(op.offset, &op.strides);
            }
            p.scalar(value, compute).shape(&g.shape).i64(g.numel as i64);
            p.i32(scalar_first).f64(p0);
            return self.launch(&format!("mg_binary_scalar<{o}, {t}, mg::{name}>"), g.numel, &mut p);
        }
        let ops = match mode {
            BinaryMode::Fresh => vec![own(dst), bcast(a, &shape), bcast(b, &shape)],
            BinaryMode::InPlace => vec![own(dst), own(dst), bcast(b, &shape)],
            BinaryMode::InPlaceSelf => vec![own(dst), own(dst), own(dst)],
        };
        self.elementwise(
            &format!("mg_binary<{o}, {t}, mg::{name}>"),
            &format!("mg_binary_contig<{o}, {t}, mg::{name}>"),
            &shape,
            ops,
            |p| {
                p.f64(p0);
            },
        )
    }

    fn where_(&self, dst: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        let shape = dst.shape().to_vec();
        let (c, a, b) = (self.resident(cond)?, self.resident(a)?, self.resident(b)?);
        let t = ty(dst.dtype());
        self.elementwise(
            &format!("mg_where<{t}>"),
            &format!("mg_where_contig<{t}>"),
            &shape,
            vec![own(dst), bcast(&c, &shape), bcast(&a, &shape), bcast(&b, &shape)],
            |_| {},
        )
    }

    fn masked_fill(&self, dst: &Tensor, mask: &Tensor, value: Scalar) -> Result<()> {
        let shape = dst.shape().to_vec();
        let m = self.resident(mask)?;
        let dtype = dst.dtype();
        let t = ty(dtype);
        self.elementwise(
            &format!("mg_masked_fill<{t}>"),
            &format!("mg_masked_fill_contig<{t}>"),
            &shape,
            vec![own(dst), bcast(&m, &shape)],
            |p| {
                p.scalar(value, dtype);
            },
        )
    }

    fn clamp(&self, dst: &Tensor, src: &Tensor, lo: Bound<'_>, hi: Bound<'_>, in_place: bool) -> Result<()> {
        let shape = dst.shape().to_vec();
        let dtype = dst.dtype();
        let t = ty(dtype);
        let x = if in_place { own(dst) } else { bcast(src, &shape) };
        let has = i32::from(!matches!(lo, Bound::None)) | (i32::from(!matches!(hi, Bound::None)) << 1);
        let numbers_only = !matches!(lo, Bound::Tensor(_)) && !matches!(hi, Bound::Tensor(_));
        if numbers_only && dtype != DType::Bool {
            let value = |b: Bound<'_>| match b {
                Bound::Number(s) => s,
                _ => Scalar::Int(0),
            };
            let (l, h) = (value(lo), value(hi));
            return self.elementwise(
                &format!("mg_clamp_scalar<{t}>"),
                &format!("mg_clamp_scalar_contig<{t}>"),
                &shape,
                vec![own(dst), x],
                |p| {
                    p.scalar(l, dtype).scalar(h, dtype).i32(has);
                },
            );
        }
        // Tensor bounds (a number beside one becomes a one-element device tensor).
        let bound = |b: Bound<'_>| -> Result<Tensor> {
            match b {
                Bound::Tensor(t) => self.resident(t),
                Bound::Number(s) => {
                    let d = Tensor::empty_on(&[], dtype, self.device())?;
                    self.fill(&d, s)?;
                    Ok(d)
                }
                Bound::None => Tensor::empty_on(&[], dtype, self.device()),
            }
        };
        let (l, h) = (bound(lo)?, bound(hi)?);
        self.elementwise(
            &format!("mg_clamp<{t}>"),
            &format!("mg_clamp_contig<{t}>"),
            &shape,
            vec![own(dst), x, bcast(&l, &shape), bcast(&h, &shape)],
            |p| {
                p.i32(has);
            },
        )
    }

    fn add_into(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        let shape = dst.shape().to_vec();
        let src = self.resident(src)?;
        let t = ty(dst.dtype());
        if dst.layout.has_internal_overlap() {
            let g = Geometry::new(&shape, vec![own(dst), own(dst), bcast(&src, &shape)]);
            // Elements of dst that share memory must each receive every contribution: one
            // thread walks them all, in order (rare: a gradient accumulated into an expanded view).
            let mut p = Params::new();
            for o in &g.operands {
                p.ptr(o.base).strides(o.offset, &o.strides);
            }
            p.shape(&g.shape).i64(g.numel as i64).f64(0.0);
            return self.launch_on(&format!("mg_binary<{t}, {t}, mg::Add>"), 1, 1, g.numel, &mut p);
        }
        self.elementwise(
            &format!("mg_binary<{t}, {t}, mg::Add>"),
            &format!("mg_binary_contig<{t}, {t}, mg::Add>"),
            &shape,
            // unmerged operands: `elementwise` merges dims itself
            vec![own(dst), own(dst), bcast(&src, &shape)],
            |p| {
                p.f64(0.0);
            },
        )
    }

    fn reduce(&self, op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> Result<()> {
        self.reduce_impl(op, values, indices, src, dims)
    }

    fn softmax(&self, dst: &Tensor, src: &Tensor, dim: usize, log: bool) -> Result<()> {
        self.softmax_impl(dst, src, dim, log)
    }

    fn softmax_backward(&self, grad_input: &Tensor, grad: &Tensor, result: &Tensor, dim: usize, log: bool) -> Result<bool> {
        self.softmax_backward_impl(grad_input, grad, result, dim, log)
    }

    fn matmul(&self, dst: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        self.matmul_impl(dst, a, b)
    }

    fn conv2d(&self, out: &Tensor, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, g: &ConvGeometry) -> Result<()> {
        self.conv2d_impl(out, x, w, bias, g)
    }

    fn conv2d_input_grad(&self, dx: &Tensor, grad: &Tensor, w: &Tensor, g: &ConvGeometry) -> Result<()> {
        self.conv2d_input_grad_impl(dx, grad, w, g)
    }

    fn conv2d_weight_grad(&self, dw: &Tensor, x: &Tensor, grad: &Tensor, g: &ConvGeometry) -> Result<()> {
        self.conv2d_weight_grad_impl(dw, x, grad, g)
    }

    fn max_pool2d(&self, out: &Tensor, indices: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        self.max_pool2d_impl(out, indices, x, g)
    }

    fn max_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, indices: &Tensor, g: &MaxGeometry) -> Result<()> {
        self.max_pool2d_backward_impl(dx, grad, indices, g)
    }

    fn avg_pool2d(&self, out: &Tensor, x: &Tensor, win: &AvgWindows) -> Result<()> {
        self.avg_pool2d_impl(out, x, win, false)
    }

    fn avg_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, win: &AvgWindows) -> Result<()> {
        self.avg_pool2d_impl(dx, grad, win, true)
    }

    fn pad2d(&self, out: &Tensor, x: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        self.pad2d_impl(out, x, rows, cols, false)
    }

    fn pad2d_backward(&self, dx: &Tensor, grad: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        self.pad2d_impl(dx, grad, rows, cols, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn batch_norm(
        &self,
        x: &Tensor,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        self.batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps)
    }

    fn batch_norm_backward(&self, g: &Tensor, x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Option<(Tensor, Tensor, Tensor)>> {
        self.batch_norm_backward_impl(g, x, weight, eps)
    }

    fn layer_norm(&self, x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
        self.layer_norm_impl(x, normalized_shape, weight, bias, eps)
    }

    fn random_fill(&self, dst: &Tensor, dist: RandomDist) -> Result<()> {
        self.random(dst, dist)
    }

    fn transfer(&self, host: &Tensor, device: &Tensor, to_host: bool) -> Result<()> {
        let n = device.numel() * device.dtype().size();
        if n == 0 {
            return Ok(());
        }
        let addr = |t: &Tensor| t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64;
        if to_host {
            self.driver.copy(addr(host), addr(device), n, CopyKind::DeviceToHost)
        } else {
            self.driver.copy(addr(device), addr(host), n, CopyKind::HostToDevice)
        }
    }

    fn gather(&self, dst: &Tensor, src: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
        self.gather_impl(dst, src, dim, index)
    }

    fn scatter(&self, dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: ScatterOp) -> Result<()> {
        self.scatter_impl(dst, dim, index, src, op)
    }

    fn index_gather(&self, dst: &Tensor, src: &Tensor, walk: &Walk) -> Result<()> {
        self.index_gather_impl(dst, src, walk)
    }

    fn index_scatter(&self, dst: &Tensor, values: &Tensor, walk: &Walk, accumulate: bool) -> Result<()> {
        self.index_scatter_impl(dst, values, walk, accumulate)
    }

    fn nonzero(&self, src: &Tensor) -> Result<Tensor> {
        self.nonzero_impl(src)
    }

    fn masked_select(&self, src: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.masked_select_impl(src, mask)
    }

    fn optim_step(&self, rule: minigrad_core::ops::optim::Rule, slots: &[minigrad_core::ops::optim::Slot]) -> Result<()> {
        self.optim_step_impl(rule, slots)
    }

    fn sort(&self, op: minigrad_core::device::SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> Result<()> {
        self.sort_impl(op, values, indices, src)
    }

    fn scan(&self, op: minigrad_core::device::ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> Result<()> {
        self.scan_impl(op, dst, src, acc)
    }

    fn mask_ranks(&self, mask: &Tensor) -> Result<(Tensor, usize)> {
        self.mask_ranks_impl(mask)
    }

    fn masked_put(&self, dst: &Tensor, first: usize, ranks: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
        self.masked_put_impl(dst, first, ranks, values, accumulate)
    }

    fn masked_take(&self, dst: &Tensor, src: &Tensor, first: usize, ranks: &Tensor) -> Result<()> {
        self.masked_take_impl(dst, src, first, ranks)
    }

    fn index_gather_table(&self, dst: &Tensor, src: &Tensor, walk: &Walk, table: &IndexTable) -> Result<bool> {
        self.index_gather_table_impl(dst, src, walk, table)
    }

    fn index_scatter_table(&self, dst: &Tensor, values: &Tensor, walk: &Walk, table: &IndexTable, accumulate: bool) -> Result<bool> {
        self.index_scatter_table_impl(dst, values, walk, table, accumulate)
    }
}
