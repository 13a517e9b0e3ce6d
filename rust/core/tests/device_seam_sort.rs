//! The sort and scan families through the device seam, without a GPU: a stand-in backend for
//! `cuda:0` records what `ops::sort` and `ops::scan` ask of it (rows moved last and contiguous,
//! the `SortOp`/`ScanOp`, the accumulator dtype, outputs on the device), and a bare one for
//! `cuda:1` (required methods only) answers with torch's NotImplementedError, never a panic.
//! Its own test binary, so it registers its own stand-ins.

use minigrad_core::device::{self, Backend, BinaryMode, Bound, Device, ScanOp, SortOp};
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::ops::unary::UnaryOp;
use minigrad_core::ops::{copy, scan, sort};
use minigrad_core::storage::Storage;
use minigrad_core::{DType, Scalar, Tensor};
use std::sync::{Arc, Once};

thread_local! {
    static CALLS: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

fn log(s: String) {
    CALLS.with(|c| if let Some(v) = c.borrow_mut().as_mut() { v.push(s) });
}

struct StandIn(u32);

fn memory(device: Device, nbytes: usize, dtype: DType) -> minigrad_core::Result<Arc<Storage>> {
    let bytes = vec![0u8; nbytes.max(1)].into_boxed_slice();
    let ptr = bytes.as_ptr() as *mut u8;
    // SAFETY: `bytes` is moved into the owner, so the pointer stays valid as long as the storage.
    Ok(unsafe { Storage::from_foreign_on(device, ptr, nbytes, dtype, Box::new(bytes)) })
}

fn desc(t: &Tensor) -> String {
    format!("{:?}{:?}{}", t.dtype(), t.shape(), if t.is_contiguous() { "" } else { " strided" })
}

impl Backend for StandIn {
    fn device(&self) -> Device {
        Device::Cuda(self.0)
    }
    fn allocate(&self, nbytes: usize, dtype: DType, _zeroed: bool) -> minigrad_core::Result<Arc<Storage>> {
        memory(self.device(), nbytes, dtype)
    }
    fn copy(&self, _dst: &Tensor, _src: &Tensor, _s: &[isize]) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn fill(&self, _dst: &Tensor, _value: Scalar) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn unary(&self, _op: UnaryOp, _dst: &Tensor, _src: &Tensor, _in_place: bool) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn binary(&self, _op: BinaryOp, _d: &Tensor, _a: &Tensor, _b: &Tensor, _m: BinaryMode, _al: Option<f64>) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn where_(&self, _dst: &Tensor, _c: &Tensor, _a: &Tensor, _b: &Tensor) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn masked_fill(&self, _dst: &Tensor, _mask: &Tensor, _value: Scalar) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn clamp(&self, _dst: &Tensor, _src: &Tensor, _lo: Bound<'_>, _hi: Bound<'_>, _in_place: bool) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn add_into(&self, _dst: &Tensor, _src: &Tensor) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn transfer(&self, host: &Tensor, _dev: &Tensor, to_host: bool) -> minigrad_core::Result<()> {
        if to_host {
            let n = host.numel() * host.dtype().size();
            // SAFETY: `host` is a contiguous CPU tensor of `n` bytes from its offset.
            unsafe { std::ptr::write_bytes(host.storage.as_ptr().add(host.layout.offset * host.dtype().size()), 0, n) };
        }
        Ok(())
    }
    // cuda:0 only (cuda:1 keeps the defaults)
    fn sort(&self, op: SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> minigrad_core::Result<()> {
        if self.0 != 0 {
            return Err(device::not_implemented(self.device(), op.name()));
        }
        assert!([values.device(), indices.device(), src.device()].iter().all(|&d| d == Device::Cuda(0)));
        log(format!("sort {:?} src={} values={} indices={}", op, desc(src), desc(values), desc(indices)));
        Ok(())
    }
    fn scan(&self, op: ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> minigrad_core::Result<()> {
        if self.0 != 0 {
            return Err(device::not_implemented(self.device(), op.name()));
        }
        assert!(dst.device() == Device::Cuda(0) && src.device() == Device::Cuda(0));
        log(format!("scan {:?} src={} dst={} acc={:?}", op, desc(src), desc(dst), acc));
        Ok(())
    }
}

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        device::register(Box::new(StandIn(0))).unwrap();
        device::register(Box::new(StandIn(1))).unwrap();
    });
}

fn on(shape: &[usize], dtype: DType, ordinal: u32) -> Tensor {
    setup();
    Tensor::empty_on(shape, dtype, Device::Cuda(ordinal)).unwrap()
}

fn calls_of(f: impl FnOnce()) -> Vec<String> {
    CALLS.with(|c| *c.borrow_mut() = Some(Vec::new()));
    f();
    CALLS.with(|c| c.borrow_mut().take().unwrap())
}

#[test]
fn sorting_hands_over_contiguous_rows_along_the_last_dim() {
    let x = on(&[3, 4], DType::Float32, 0);
    let calls = calls_of(|| {
        let (v, i) = sort::sort_raw(&x, 0, true, false).unwrap();
        assert_eq!((v.device(), i.device(), v.shape(), i.dtype()), (Device::Cuda(0), Device::Cuda(0), &[3usize, 4][..], DType::Int64));
    });
    assert_eq!(calls, vec!["sort Sort { descending: true, stable: false } src=Float32[4, 3] values=Float32[4, 3] indices=Int64[4, 3]"]);
    let calls = calls_of(|| {
        let (v, _) = sort::topk_raw(&x, 2, -1, false, true).unwrap();
        assert_eq!(v.shape(), &[3, 2]);
        let (v, i) = sort::kthvalue_raw(&x, 3, 1, true).unwrap();
        assert_eq!((v.shape(), i.shape(), v.device()), (&[3usize, 1][..], &[3usize, 1][..], Device::Cuda(0)));
        sort::median_dim_raw(&x, 0, false).unwrap();
        let m = sort::median_raw(&x).unwrap();
        assert_eq!((m.shape(), m.device()), (&[][..], Device::Cuda(0)));
    });
    assert_eq!(calls, vec![
        "sort Topk { k: 2, largest: false, sorted: true } src=Float32[3, 4] values=Float32[3, 2] indices=Int64[3, 2]",
        "sort Kthvalue { k: 3 } src=Float32[3, 4] values=Float32[3, 1] indices=Int64[3, 1]",
        "sort Median src=Float32[4, 3] values=Float32[4, 1] indices=Int64[4, 1]",
        "sort MedianAll src=Float32[1, 12] values=Float32[1, 1] indices=Int64[1, 1]",
    ]);
}

#[test]
fn a_long_1d_integer_sort_is_asked_for_as_stable() {
    // torch sorts it with a radix sort (stable) whatever `stable=` says
    let x = on(&[40000], DType::Int64, 0);
    let calls = calls_of(|| drop(sort::sort_raw(&x, 0, false, false).unwrap()));
    assert_eq!(calls, vec!["sort Sort { descending: false, stable: true } src=Int64[40000] values=Int64[40000] indices=Int64[40000]"]);
}

#[test]
fn scans_pass_the_result_dtype_and_torchs_accumulator() {
    let f = on(&[2, 5], DType::Float32, 0);
    let i = on(&[2, 5], DType::Int32, 0);
    let calls = calls_of(|| {
        assert_eq!(scan::cum_raw(ScanOp::Cumsum, &f, 0, None).unwrap().device(), Device::Cuda(0));
        assert_eq!(scan::cum_raw(ScanOp::Cumprod, &i, 1, None).unwrap().dtype(), DType::Int64);
        scan::cum_raw(ScanOp::Cumsum, &i, 1, Some(DType::Float64)).unwrap();
        scan::logcumsumexp_raw(&f, -1).unwrap();
    });
    assert_eq!(calls, vec![
        "scan Cumsum src=Float32[5, 2] dst=Float32[5, 2] acc=Float64",
        "scan Cumprod src=Int64[2, 5] dst=Int64[2, 5] acc=Int64",
        "scan Cumsum src=Float64[2, 5] dst=Float64[2, 5] acc=Float64",
        "scan Logcumsumexp src=Float32[2, 5] dst=Float32[2, 5] acc=Float64",
    ]);
    assert_eq!(scan::acc_dtype(DType::Float16), DType::Float32);
    assert_eq!(scan::acc_dtype(DType::BFloat16), DType::Float32);
    assert_eq!(scan::acc_dtype(DType::Int8), DType::Int64);
}

#[test]
fn empty_and_0d_inputs_never_reach_the_backend_and_stay_on_the_device() {
    let e = on(&[0, 3], DType::Float32, 0);
    let s = on(&[], DType::Float64, 0);
    let calls = calls_of(|| {
        for t in [&e, &s] {
            let (v, i) = sort::sort_raw(t, 0, false, true).unwrap();
            assert_eq!((v.device(), i.device()), (Device::Cuda(0), Device::Cuda(0)));
            assert_eq!(scan::cum_raw(ScanOp::Cumsum, t, 0, None).unwrap().device(), Device::Cuda(0));
        }
        assert_eq!(sort::median_raw(&e).unwrap().device(), Device::Cuda(0));
        assert_eq!(sort::topk_raw(&e, 0, 1, true, true).unwrap().1.device(), Device::Cuda(0));
    });
    assert_eq!(calls, Vec::<String>::new());
}

#[test]
fn a_backend_without_the_kernels_says_so_in_torchs_words() {
    let x = on(&[4], DType::Float32, 1);
    let e = sort::sort_raw(&x, 0, false, true).unwrap_err().to_string();
    assert!(e.starts_with("Could not run 'aten::sort.stable' with arguments from the 'CUDA' backend."), "{e}");
    let e = scan::cum_raw(ScanOp::Cumsum, &x, 0, None).unwrap_err().to_string();
    assert!(e.starts_with("Could not run 'aten::cumsum' with arguments from the 'CUDA' backend."), "{e}");
    // the CPU runs both
    let c = copy::to_device_raw(&Tensor::from_vec(vec![3f32, 1., 2.], &[3]).unwrap(), Device::Cpu).unwrap();
    assert_eq!(sort::sort_raw(&c, 0, false, true).unwrap().1.to_vec::<i64>().unwrap(), vec![1, 2, 0]);
    assert_eq!(scan::cum_raw(ScanOp::Cumsum, &c, 0, None).unwrap().to_vec::<f32>().unwrap(), vec![3., 4., 6.]);
}
