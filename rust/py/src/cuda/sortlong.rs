//! Rows longer than the bitonic kernel's 2048 elements (sort.cu, "sorted runs, then merge
//! passes"): many blocks sort one row, in the stable order whatever `stable` says, and topk,
//! kthvalue and median pick from that order (docs/gpu.md, "Sorting and scans").

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::Params;
use minigrad_core::device::{Backend, SortOp};
use minigrad_core::dtype::DType;
use minigrad_core::error::Result;
use minigrad_core::ops::cuda_kernels::{BITONIC_MAX, SORT_THREADS};
use minigrad_core::tensor::Tensor;

fn addr(t: &Tensor) -> u64 {
    t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64
}

impl Cuda {
    /// `op` on `[rows, n]` rows with `n > BITONIC_MAX` (`src` contiguous).
    pub(super) fn sort_long(&self, op: SortOp, values: &Tensor, indices: &Tensor, src: &Tensor, rows: usize, n: usize) -> Result<()> {
        match op {
            SortOp::Sort { descending, .. } => self.merge_sort(src, rows, n, descending, Some((values, indices))).map(|_| ()),
            _ => {
                let (k, what, descending) = match op {
                    SortOp::Topk { k, largest, .. } => (k, 0, largest),
                    SortOp::Kthvalue { k } => (k, 1, false),
                    _ => (0, 2, false),
                };
                let (sv, si) = self.merge_sort(src, rows, n, descending, None)?;
                let width = if what == 0 { k } else { 1 };
                let mut p = Params::new();
                p.ptr(addr(values)).ptr(addr(indices)).ptr(addr(&sv)).ptr(addr(&si));
                p.i64(rows as i64).i64(n as i64).i64(k as i64).i32(what);
                self.launch(&format!("mg_sort_pick<{}>", ty(src.dtype())), rows * width, &mut p)
            }
        }
    }

    /// The stable sort of every row into `out` (or fresh buffers), returned: one block per run of
    /// BITONIC_MAX elements, then merge passes doubling the run width, ping-ponging between the
    /// output and a scratch pair so that the last pass lands in the output.
    fn merge_sort(&self, src: &Tensor, rows: usize, n: usize, descending: bool, out: Option<(&Tensor, &Tensor)>) -> Result<(Tensor, Tensor)> {
        let dev = self.device();
        let fresh = || -> Result<(Tensor, Tensor)> { Ok((Tensor::empty_on(&[rows * n], src.dtype(), dev)?, Tensor::empty_on(&[rows * n], DType::Int64, dev)?)) };
        let out = match out {
            Some((v, i)) => (v.clone(), i.clone()),
            None => fresh()?,
        };
        let scratch = fresh()?;
        let mut passes = 0;
        let mut width = BITONIC_MAX;
        while width < n {
            passes += 1;
            width *= 2;
        }
        // the runs go where an even number of passes later leaves the result in `out`
        let (mut cur, mut next) = if passes % 2 == 0 { (out.clone(), scratch) } else { (scratch, out.clone()) };
        let t = ty(src.dtype());
        let desc = i32::from(descending);
        let runs = rows * n.div_ceil(BITONIC_MAX);
        let mut p = Params::new();
        p.ptr(addr(&cur.0)).ptr(addr(&cur.1)).ptr(addr(src)).i64(rows as i64).i64(n as i64).i32(desc);
        self.launch_on(&format!("mg_sort_runs<{t}>"), runs.min(1 << 16) as u32, SORT_THREADS, runs, &mut p)?;
        let mut width = BITONIC_MAX;
        while width < n {
            let mut p = Params::new();
            p.ptr(addr(&next.0)).ptr(addr(&next.1)).ptr(addr(&cur.0)).ptr(addr(&cur.1));
            p.i64(rows as i64).i64(n as i64).i64(width as i64).i32(desc);
            self.launch(&format!("mg_sort_merge<{t}>"), rows * n, &mut p)?;
            std::mem::swap(&mut cur, &mut next);
            width *= 2;
        }
        Ok(cur)
    }
}
