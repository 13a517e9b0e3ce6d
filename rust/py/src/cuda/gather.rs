//! Gathers and scatters on the GPU: along one dim (`gather.cu`: gather, index_select, scatter,
//! scatter_add, index_add) and advanced indexing (`index.cu`: `x[indices]`, `index_put_`)
//! (nonzero and masked_select: `compact.rs`). Scatters give each thread every update of the elements it owns, in
//! order, so results never depend on timing (docs/gpu.md, "Gathers and scatters").

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::{Geometry, Operand, Params};
use minigrad_core::device::{Backend, IndexTable, ScatterOp, Walk};
use minigrad_core::dtype::{DType, Scalar};
use minigrad_core::error::{Error, Result};
use minigrad_core::ops::copy::to_device_raw;
use minigrad_core::shape::contiguous_strides;
use minigrad_core::tensor::Tensor;

fn too_many_dims() -> Error {
    Error::Runtime("minigrad: CUDA kernels support at most 25 dimensions".into())
}

fn with_strides(t: &Tensor, offset: usize, strides: Vec<isize>) -> Operand {
    Operand { base: t.storage.as_ptr() as u64, offset, strides, elem_size: t.dtype().size() }
}

impl Cuda {
    pub(super) fn gather_impl(&self, dst: &Tensor, src: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
        let (src, index) = (self.resident(src)?, self.resident(index)?);
        let mut ss = src.strides().to_vec();
        let src_dim_stride = ss[dim];
        ss[dim] = 0;
        let g = Geometry::new(dst.shape(), vec![Operand::of(dst, dst.strides().to_vec()), Operand::of(&src, ss), Operand::of(&index, index.strides().to_vec())]);
        if g.numel == 0 {
            return Ok(());
        }
        if g.too_many_dims() {
            return Err(too_many_dims());
        }
        let mut p = Params::new();
        for o in &g.operands {
            p.ptr(o.base).strides(o.offset, &o.strides);
        }
        p.shape(&g.shape).i64(g.numel as i64).i64(src_dim_stride as i64);
        self.launch(&format!("mg_gather<{}>", ty(dst.dtype())), g.numel, &mut p)
    }

    pub(super) fn scatter_impl(&self, dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: ScatterOp) -> Result<()> {
        let (index, src) = (self.resident(index)?, self.resident(src)?);
        let len = index.shape()[dim];
        let mut outer = index.shape().to_vec();
        outer[dim] = 1;
        let mut ds = dst.strides().to_vec();
        let dst_dim_stride = ds[dim];
        ds[dim] = 0;
        let g = Geometry::new(&outer, vec![Operand::of(dst, ds), Operand::of(&index, index.strides().to_vec()), Operand::of(&src, src.strides().to_vec())]);
        if g.numel == 0 || len == 0 {
            return Ok(());
        }
        if g.too_many_dims() {
            return Err(too_many_dims());
        }
        let (name, alpha) = match op {
            ScatterOp::Assign => ("ScatterAssign", Scalar::Int(0)),
            ScatterOp::Add => ("ScatterAdd", Scalar::Int(0)),
            ScatterOp::Multiply => ("ScatterMul", Scalar::Int(0)),
            ScatterOp::AddScaled(a) => ("ScatterAddScaled", a),
        };
        let mut p = Params::new();
        for o in &g.operands {
            p.ptr(o.base).strides(o.offset, &o.strides);
        }
        p.shape(&g.shape).i64(g.numel as i64).i64(len as i64).i64(dst_dim_stride as i64);
        p.i64(index.strides()[dim] as i64).i64(src.strides()[dim] as i64).scalar(alpha, dst.dtype());
        self.launch(&format!("mg_scatter<{}, mg::{name}>", ty(dst.dtype())), g.numel, &mut p)
    }

    /// The walk's position table on this device: `[a0, b0, a1, b1, ...]` (int64).
    fn positions(&self, walk: &Walk) -> Result<Tensor> {
        let flat: Vec<i64> = walk.positions.iter().flat_map(|&(a, b)| [a as i64, b as i64]).collect();
        let n = flat.len();
        to_device_raw(&Tensor::from_vec(flat, &[n])?, self.device())
    }

    /// The position table made on this device (`Backend::index_*_table`): one launch for the
    /// row-major side and one per index tensor (`index.cu`'s `mg_index_table_*`).
    fn device_table(&self, t: &IndexTable) -> Result<Tensor> {
        let npos: usize = t.replacement.iter().product();
        let table = Tensor::empty_on(&[2 * npos], DType::Int64, self.device())?;
        if npos == 0 {
            return Ok(table);
        }
        let (rows_col, idx_col) = if t.indices_in_a { (1, 0) } else { (0, 1) };
        let column = |col: usize| with_strides(&table, col, contiguous_strides(&t.replacement).iter().map(|s| 2 * s).collect());
        // the row-major offsets: the second operand's strides give them (its memory is not read)
        let g = Geometry::new(&t.replacement, vec![column(rows_col), with_strides(&table, 0, t.rows.clone())]);
        if g.too_many_dims() {
            return Err(too_many_dims());
        }
        let mut p = Params::new();
        let (c, r) = (&g.operands[0], &g.operands[1]);
        p.ptr(c.base).strides(c.offset, &c.strides).strides(0, &r.strides).shape(&g.shape).i64(g.numel as i64);
        self.launch("mg_index_table_rows", g.numel, &mut p)?;
        for (j, (idx, size, stride)) in t.indices.iter().enumerate() {
            let idx = self.resident(idx)?;
            let g = Geometry::new(&t.replacement, vec![column(idx_col), Operand::of(&idx, idx.strides().to_vec())]);
            let mut p = Params::new();
            let (c, i) = (&g.operands[0], &g.operands[1]);
            p.ptr(c.base).strides(c.offset, &c.strides).ptr(i.base).strides(i.offset, &i.strides).shape(&g.shape);
            p.i64(g.numel as i64).i64(*size as i64).i64(*stride as i64).i32(i32::from(j == 0));
            self.launch("mg_index_table_add", g.numel, &mut p)?;
        }
        Ok(table)
    }

    pub(super) fn index_gather_impl(&self, dst: &Tensor, src: &Tensor, walk: &Walk) -> Result<()> {
        self.index_gather_with(dst, src, walk, walk.positions.len(), || self.positions(walk))
    }

    pub(super) fn index_gather_table_impl(&self, dst: &Tensor, src: &Tensor, walk: &Walk, table: &IndexTable) -> Result<bool> {
        let npos = table.replacement.iter().product();
        self.index_gather_with(dst, src, walk, npos, || self.device_table(table))?;
        Ok(true)
    }

    /// The gather of `walk` with `npos` positions whose device table `pos` makes (only when
    /// there is something to gather).
    fn index_gather_with(&self, dst: &Tensor, src: &Tensor, walk: &Walk, npos: usize, pos: impl FnOnce() -> Result<Tensor>) -> Result<()> {
        let src = self.resident(src)?;
        let mut shape: Vec<usize> = walk.outer.iter().map(|d| d.size).collect();
        let (mut sa, mut sb): (Vec<isize>, Vec<isize>) = walk.outer.iter().map(|d| (d.a, d.b)).unzip();
        let mut sp = vec![0isize; shape.len()];
        shape.push(npos);
        sa.push(0);
        sb.push(0);
        sp.push(1);
        for d in &walk.inner {
            shape.push(d.size);
            sa.push(d.a);
            sb.push(d.b);
            sp.push(0);
        }
        if shape.contains(&0) {
            return Ok(());
        }
        let pos = pos()?;
        let operands = vec![with_strides(dst, walk.a_offset as usize, sa), with_strides(&src, walk.b_offset as usize, sb), with_strides(&pos, 0, sp)];
        let g = Geometry::new(&shape, operands);
        if g.too_many_dims() {
            return Err(too_many_dims());
        }
        let mut p = Params::new();
        let (a, b, ps) = (&g.operands[0], &g.operands[1], &g.operands[2]);
        p.ptr(a.base).strides(a.offset, &a.strides).ptr(b.base).strides(b.offset, &b.strides).strides(0, &ps.strides);
        p.shape(&g.shape).i64(g.numel as i64).ptr(pos.storage.as_ptr() as u64);
        self.launch(&format!("mg_index_gather<{}>", ty(dst.dtype())), g.numel, &mut p)
    }

    pub(super) fn index_scatter_impl(&self, dst: &Tensor, values: &Tensor, walk: &Walk, accumulate: bool) -> Result<()> {
        self.index_scatter_with(dst, values, walk, walk.positions.len(), || self.positions(walk), accumulate)
    }

    pub(super) fn index_scatter_table_impl(&self, dst: &Tensor, values: &Tensor, walk: &Walk, table: &IndexTable, accumulate: bool) -> Result<bool> {
        let npos = table.replacement.iter().product();
        self.index_scatter_with(dst, values, walk, npos, || self.device_table(table), accumulate)?;
        Ok(true)
    }

    fn index_scatter_with(
        &self,
        dst: &Tensor,
        values: &Tensor,
        walk: &Walk,
        npos: usize,
        pos: impl FnOnce() -> Result<Tensor>,
        accumulate: bool,
    ) -> Result<()> {
        // A wrapped number (a 0-d CPU tensor, every `b` stride 0) is read from a device copy.
        let (values, b_offset) = if values.device() == self.device() { (values.clone(), walk.b_offset) } else { (self.resident(values)?, 0) };
        let dims = walk.outer.iter().chain(&walk.inner);
        let shape: Vec<usize> = dims.clone().map(|d| d.size).collect();
        let (sa, sb): (Vec<isize>, Vec<isize>) = dims.map(|d| (d.a, d.b)).unzip();
        if npos == 0 || shape.contains(&0) {
            return Ok(());
        }
        let pos = pos()?;
        let g = Geometry::new(&shape, vec![with_strides(dst, walk.a_offset as usize, sa), with_strides(&values, b_offset as usize, sb)]);
        if g.too_many_dims() {
            return Err(too_many_dims());
        }
        let mut p = Params::new();
        for o in &g.operands {
            p.ptr(o.base).strides(o.offset, &o.strides);
        }
        p.shape(&g.shape).i64(g.numel as i64).ptr(pos.storage.as_ptr() as u64).i64(npos as i64);
        self.launch(&format!("mg_index_scatter<{}, {accumulate}>", ty(dst.dtype())), g.numel, &mut p)
    }
}
