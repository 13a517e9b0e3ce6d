//! Sorting, selection and scans on the GPU (`sort.cu`, `scan.cu` beside their ops). The op layer
//! hands over contiguous `[rows, n]` operands; a row of up to BITONIC_MAX elements is one
//! thread's work (one block's for the bitonic stable sort), in the CPU's algorithm and order, so
//! values and indices are the CPU's bit for bit; longer rows take the multi-block stable sort
//! (`sortlong.rs`) (docs/gpu.md, "Sorting and scans").

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::Params;
use minigrad_core::device::{Backend, ScanOp, SortOp};
use minigrad_core::dtype::DType;
use minigrad_core::error::Result;
use minigrad_core::ops::cuda_kernels::{BITONIC_MAX, SORT_THREADS};
use minigrad_core::tensor::Tensor;

fn addr(t: &Tensor) -> u64 {
    t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64
}

/// `[rows, n]` of a contiguous operand (a 1-d one is one row).
fn rows_n(src: &Tensor) -> (usize, usize) {
    let n = src.shape().last().copied().unwrap_or(1);
    (if n == 0 { 0 } else { src.numel() / n }, n)
}

impl Cuda {
    pub(super) fn sort_impl(&self, op: SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> Result<()> {
        let src = self.contiguous(src)?;
        let (rows, n) = rows_n(&src);
        if rows == 0 || n == 0 {
            return Ok(());
        }
        if n > BITONIC_MAX {
            return self.sort_long(op, values, indices, &src, rows, n);
        }
        let t = ty(src.dtype());
        let mut p = Params::new();
        p.ptr(addr(values)).ptr(addr(indices)).ptr(addr(&src));
        match op {
            SortOp::Sort { descending, stable: true } if n <= BITONIC_MAX => {
                p.i64(rows as i64).i64(n as i64).i32(i32::from(descending));
                let grid = rows.min(1 << 16) as u32;
                self.launch_on(&format!("mg_sort_bitonic<{t}>"), grid, SORT_THREADS, rows, &mut p)
            }
            SortOp::Sort { descending, stable } => {
                p.i64(rows as i64).i64(n as i64).i32(i32::from(descending)).i32(i32::from(stable));
                self.launch_rows(&format!("mg_sort<{t}>"), rows, &mut p)
            }
            _ => {
                // the selections permute a private copy of each row
                let sv = Tensor::empty_on(&[rows * n], src.dtype(), self.device())?;
                let si = Tensor::empty_on(&[rows * n], DType::Int64, self.device())?;
                p.ptr(addr(&sv)).ptr(addr(&si)).i64(rows as i64).i64(n as i64);
                let name = match op {
                    SortOp::Topk { k, largest, sorted } => {
                        p.i64(k as i64).i32(i32::from(largest)).i32(i32::from(sorted));
                        "mg_topk"
                    }
                    SortOp::Kthvalue { k } => {
                        p.i64(k as i64);
                        "mg_kthvalue"
                    }
                    _ => {
                        p.i32(i32::from(op == SortOp::MedianAll));
                        "mg_median"
                    }
                };
                self.launch_rows(&format!("{name}<{t}>"), rows, &mut p)
            }
        }
    }

    pub(super) fn scan_impl(&self, op: ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> Result<()> {
        let src = self.contiguous(src)?;
        let (rows, n) = rows_n(&src);
        let name = match op {
            ScanOp::Cumsum => "ScanSum",
            ScanOp::Cumprod => "ScanProd",
            ScanOp::Logcumsumexp => "ScanLse",
        };
        let mut p = Params::new();
        p.ptr(addr(dst)).ptr(addr(&src)).i64(rows as i64).i64(n as i64);
        self.launch_rows(&format!("mg_scan<{}, {}, mg::{name}>", ty(src.dtype()), ty(acc)), rows * usize::from(n > 0), &mut p)
    }

    /// One thread per row: small blocks, so that a few long rows still spread over the SMs.
    fn launch_rows(&self, name: &str, rows: usize, p: &mut Params) -> Result<()> {
        const ROW_BLOCK: u32 = 64;
        let grid = rows.div_ceil(ROW_BLOCK as usize).clamp(1, 1 << 16) as u32;
        self.launch_on(name, grid, ROW_BLOCK, rows, p)
    }
}
