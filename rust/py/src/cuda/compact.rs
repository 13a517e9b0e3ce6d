//! The ops whose output size depends on the data, on the device (`compact.cu`): nonzero and
//! masked_select (and through nonzero the bool masks of advanced indexing). Per-chunk counts,
//! an exclusive scan of them, then a scatter in row-major order; the only copy back to the host
//! is the total (8 bytes), which sizes the output (torch's CUDA nonzero synchronises there too).

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::{Geometry, Operand, Params};
use minigrad_core::device::{Backend, Device};
use minigrad_core::dtype::DType;
use minigrad_core::error::{Error, Result};
use minigrad_core::layout::Layout;
use minigrad_core::ops::copy::to_device_raw;
use minigrad_core::ops::cuda_kernels::{COMPACT_CHUNK, COMPACT_THREADS};
use minigrad_core::shape::contiguous_strides;
use minigrad_core::tensor::Tensor;

fn addr(t: &Tensor) -> u64 {
    t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64
}

impl Cuda {
    /// Counts the kept elements of `flags` (contiguous; an element is kept when nonzero) per
    /// chunk and scans the counts: the offsets table (`nchunks + 1` int64 on the device, the
    /// last the total) and the total, read back.
    fn compact_offsets(&self, flags: &Tensor) -> Result<(Tensor, usize)> {
        let n = flags.numel();
        let nchunks = n.div_ceil(COMPACT_CHUNK);
        let counts = Tensor::empty_on(&[nchunks + 1], DType::Int64, self.device())?;
        let grid = nchunks.min(1 << 16) as u32;
        let mut p = Params::new();
        p.ptr(addr(&counts)).ptr(addr(flags)).i64(n as i64);
        self.launch_on(&format!("mg_compact_count<{}>", ty(flags.dtype())), grid, COMPACT_THREADS, nchunks, &mut p)?;
        let mut p = Params::new();
        p.ptr(addr(&counts)).i64(nchunks as i64);
        self.launch_on("mg_compact_scan", 1, COMPACT_THREADS, 1, &mut p)?;
        let last = Tensor { layout: Layout { shape: smallvec::smallvec![1], strides: smallvec::smallvec![1], offset: nchunks }, ..counts.clone() };
        let total = to_device_raw(&last, Device::Cpu)?.to_vec::<i64>()?[0];
        let total = usize::try_from(total).map_err(|_| Error::Runtime(format!("minigrad: compaction counted {total} elements")))?;
        Ok((counts, total))
    }

    /// `nonzero` on the device (`Backend::nonzero`'s contract: torch's column-major layout).
    pub(super) fn nonzero_impl(&self, src: &Tensor) -> Result<Tensor> {
        let k = src.ndim();
        let n = src.numel();
        let (counts, total) = if n == 0 { (None, 0) } else { self.compact_offsets(src).map(|(c, t)| (Some(c), t))? };
        let out = Tensor::empty_on(&[k * total], DType::Int64, self.device())?;
        if let Some(counts) = counts.filter(|_| total > 0 && k > 0) {
            let nchunks = n.div_ceil(COMPACT_CHUNK);
            let mut p = Params::new();
            p.ptr(addr(&out)).ptr(addr(&counts)).ptr(addr(src)).i64(n as i64).shape(src.shape());
            self.launch_on(&format!("mg_nonzero_write<{}>", ty(src.dtype())), nchunks.min(1 << 16) as u32, COMPACT_THREADS, nchunks, &mut p)?;
        }
        // (k, total) memory seen as its transpose, as the CPU kernel lays it out
        Ok(Tensor { layout: Layout { shape: smallvec::smallvec![total, k], strides: smallvec::smallvec![1, total as isize], offset: 0 }, ..out })
    }

    /// `masked_select` on the device (`Backend::masked_select`'s contract).
    pub(super) fn masked_select_impl(&self, src: &Tensor, mask: &Tensor) -> Result<Tensor> {
        debug_assert_eq!(mask.dtype(), DType::Bool);
        let n = mask.numel();
        let (counts, total) = if n == 0 { (None, 0) } else { self.compact_offsets(mask).map(|(c, t)| (Some(c), t))? };
        let out = Tensor::empty_on(&[total], src.dtype(), self.device())?;
        if let Some(counts) = counts.filter(|_| total > 0) {
            let nchunks = n.div_ceil(COMPACT_CHUNK);
            let mut p = Params::new();
            p.ptr(addr(&out)).ptr(addr(&counts)).ptr(addr(src)).ptr(addr(mask)).i64(n as i64);
            self.launch_on(&format!("mg_masked_select_write<{}>", ty(src.dtype())), nchunks.min(1 << 16) as u32, COMPACT_THREADS, nchunks, &mut p)?;
        }
        Ok(out)
    }

    /// `Backend::mask_ranks` on the device: the counts and their scan as for masked_select,
    /// then `mg_compact_rank` writes each element's rank (or -1); only the count comes back.
    pub(super) fn mask_ranks_impl(&self, mask: &Tensor) -> Result<(Tensor, usize)> {
        debug_assert_eq!(mask.dtype(), DType::Bool);
        let n = mask.numel();
        let ranks = Tensor::empty_on(mask.shape(), DType::Int64, self.device())?;
        if n == 0 {
            return Ok((ranks, 0));
        }
        let (counts, total) = self.compact_offsets(mask)?;
        let nchunks = n.div_ceil(COMPACT_CHUNK);
        let mut p = Params::new();
        p.ptr(addr(&ranks)).ptr(addr(&counts)).ptr(addr(mask)).i64(n as i64);
        self.launch_on("mg_compact_rank", nchunks.min(1 << 16) as u32, COMPACT_THREADS, nchunks, &mut p)?;
        Ok((ranks, total))
    }

    /// `Backend::masked_put` (and, `take`, `masked_take` with the roles turned round): one
    /// thread per element of `over` (dst for a put, src for a take); `by_rank` is the other
    /// tensor, indexed on its dim `first` by the rank.
    fn masked_move(&self, name: &str, over: &Tensor, by_rank: &Tensor, first: usize, ranks: &Tensor, take: bool) -> Result<()> {
        let k = ranks.ndim();
        let shape = over.shape();
        let after = shape.len() - first - k;
        let rb = by_rank.strides();
        let mut vs = rb[..first].to_vec();
        vs.extend(std::iter::repeat_n(0, k));
        vs.extend_from_slice(&rb[first + 1..]);
        let mut rs = vec![0isize; first];
        rs.extend(contiguous_strides(ranks.shape()));
        rs.extend(std::iter::repeat_n(0, after));
        let (o, b, r) = (Operand::of(over, over.strides().to_vec()), Operand::of(by_rank, vs), Operand::of(ranks, rs));
        // the kernels take the written tensor first
        let ops = if take { vec![b, o, r] } else { vec![o, b, r] };
        let g = Geometry::new(shape, ops);
        if g.numel == 0 {
            return Ok(());
        }
        if g.too_many_dims() {
            return Err(Error::Runtime("minigrad: CUDA kernels support at most 25 dimensions".into()));
        }
        let mut p = Params::new();
        for o in &g.operands {
            p.ptr(o.base).strides(o.offset, &o.strides);
        }
        p.shape(&g.shape).i64(g.numel as i64).i64(rb[first] as i64);
        self.launch(name, g.numel, &mut p)
    }

    pub(super) fn masked_put_impl(&self, dst: &Tensor, first: usize, ranks: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
        let values = self.resident(values)?;
        self.masked_move(&format!("mg_masked_put<{}, {accumulate}>", ty(dst.dtype())), dst, &values, first, ranks, false)
    }

    pub(super) fn masked_take_impl(&self, dst: &Tensor, src: &Tensor, first: usize, ranks: &Tensor) -> Result<()> {
        self.masked_move(&format!("mg_masked_take<{}>", ty(dst.dtype())), src, dst, first, ranks, true)
    }
}
