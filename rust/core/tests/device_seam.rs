//! The device seam without a GPU: a stand-in backend registered for `cuda:0` records what the
//! op layer asks of it. It computes nothing (its memory is never read); what is checked is the
//! routing: every routed op reaches the backend of its operands' device with the op's name, a
//! 0-d CPU operand may join a device tensor (torch's CPU-scalar rule), mixing devices otherwise
//! fails with torch's words, and a device tensor that reaches an unrouted CPU kernel stops with
//! a panic (which the bindings turn into a Python error) instead of touching device memory.

use minigrad_core::device::{self, Backend, BinaryMode, Bound, Device};
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::ops::unary::UnaryOp;
use minigrad_core::ops::{binary::binary_raw, copy, unary::unary_raw, Arg};
use minigrad_core::storage::Storage;
use minigrad_core::{DType, Scalar, Tensor};
use std::sync::{Arc, Once};

thread_local! {
    /// The calls made on this thread while recording (tests run in parallel threads, each
    /// sees only its own).
    static CALLS: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

struct StandIn;

fn log(s: String) {
    CALLS.with(|c| if let Some(v) = c.borrow_mut().as_mut() { v.push(s) });
}

impl Backend for StandIn {
    fn device(&self) -> Device {
        Device::Cuda(0)
    }
    fn allocate(&self, nbytes: usize, dtype: DType, _zeroed: bool) -> minigrad_core::Result<Arc<Storage>> {
        log(format!("allocate {} {:?}", nbytes, dtype));
        // Host bytes standing in for device memory; the core must never dereference them.
        let bytes = vec![0u8; nbytes.max(1)].into_boxed_slice();
        let ptr = bytes.as_ptr() as *mut u8;
        // SAFETY: `bytes` is moved into the owner, so the pointer stays valid as long as the storage.
        Ok(unsafe { Storage::from_foreign_on(Device::Cuda(0), ptr, nbytes, dtype, Box::new(bytes)) })
    }
    fn copy(&self, dst: &Tensor, src: &Tensor, _s: &[isize]) -> minigrad_core::Result<()> {
        log(format!("copy {:?}->{:?} from {}", src.dtype(), dst.dtype(), src.device()));
        Ok(())
    }
    fn fill(&self, _dst: &Tensor, value: Scalar) -> minigrad_core::Result<()> {
        log(format!("fill {:?}", value));
        Ok(())
    }
    fn unary(&self, op: UnaryOp, _dst: &Tensor, _src: &Tensor, in_place: bool) -> minigrad_core::Result<()> {
        log(format!("unary {:?} in_place={}", op, in_place));
        Ok(())
    }
    fn binary(&self, op: BinaryOp, _d: &Tensor, a: &Tensor, b: &Tensor, mode: BinaryMode, _alpha: Option<f64>) -> minigrad_core::Result<()> {
        log(format!("binary {:?} {:?} a on {} b on {}", op, mode, a.device(), b.device()));
        Ok(())
    }
    fn where_(&self, _dst: &Tensor, _cond: &Tensor, _a: &Tensor, _b: &Tensor) -> minigrad_core::Result<()> {
        log("where".into());
        Ok(())
    }
    fn masked_fill(&self, _dst: &Tensor, _mask: &Tensor, value: Scalar) -> minigrad_core::Result<()> {
        log(format!("masked_fill {:?}", value));
        Ok(())
    }
    fn clamp(&self, _dst: &Tensor, _src: &Tensor, lo: Bound<'_>, hi: Bound<'_>, in_place: bool) -> minigrad_core::Result<()> {
        let name = |b: Bound<'_>| match b {
            Bound::None => "none",
            Bound::Number(_) => "number",
            Bound::Tensor(_) => "tensor",
        };
        log(format!("clamp {} {} in_place={}", name(lo), name(hi), in_place));
        Ok(())
    }
    fn add_into(&self, _dst: &Tensor, _src: &Tensor) -> minigrad_core::Result<()> {
        log("add_into".into());
        Ok(())
    }
    fn transfer(&self, host: &Tensor, dev: &Tensor, to_host: bool) -> minigrad_core::Result<()> {
        assert!(host.device().is_cpu() && dev.device() == Device::Cuda(0));
        log(format!("transfer to_host={}", to_host));
        Ok(())
    }
}

/// The backend calls `f` makes (on this thread), in order.
fn calls_of(f: impl FnOnce()) -> Vec<String> {
    register();
    CALLS.with(|c| *c.borrow_mut() = Some(Vec::new()));
    f();
    CALLS.with(|c| c.borrow_mut().take().unwrap())
}

fn register() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| device::register(Box::new(StandIn)).unwrap());
}

/// A tensor on the stand-in device, made outside any logged section.
fn cuda(shape: &[usize]) -> Tensor {
    register();
    Tensor::empty_on(shape, DType::Float32, Device::Cuda(0)).unwrap()
}

#[test]
fn allocation_and_fill_go_to_the_device() {
    let calls = calls_of(|| {
        let t = Tensor::full_on(&[2, 3], Scalar::Float(1.5), DType::Float32, Device::Cuda(0)).unwrap();
        assert_eq!(t.device(), Device::Cuda(0));
    });
    assert_eq!(calls, vec!["allocate 24 Float32", "fill Float(1.5)"]);
}

#[test]
fn unary_ops_route_by_enum_and_outputs_stay_on_the_device() {
    let x = cuda(&[4]);
    let calls = calls_of(|| {
        let y = unary_raw(UnaryOp::Tanh, &x).unwrap();
        assert_eq!(y.device(), Device::Cuda(0));
        minigrad_core::ops::unary::unary_inplace_raw(UnaryOp::Relu, &x).unwrap();
    });
    assert_eq!(calls, vec!["allocate 16 Float32", "unary Tanh in_place=false", "unary Relu in_place=true"]);
}

#[test]
fn a_cpu_scalar_may_join_a_device_tensor_but_a_cpu_tensor_may_not() {
    let x = cuda(&[3]);
    let calls = calls_of(|| {
        let y = binary_raw(BinaryOp::Mul, &Arg::Tensor(x.clone()), &Arg::Scalar(Scalar::Float(2.0)), None).unwrap();
        assert_eq!(y.device(), Device::Cuda(0));
    });
    assert_eq!(calls, vec!["allocate 12 Float32", "binary Mul Fresh a on cuda:0 b on cpu"]);

    let cpu = Tensor::zeros(&[3], DType::Float32).unwrap();
    let err = binary_raw(BinaryOp::Add, &Arg::Tensor(x.clone()), &Arg::Tensor(cpu.clone()), None).unwrap_err();
    assert_eq!(err.to_string(), "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
    // torch names the CUDA device first whichever operand it is
    let err = binary_raw(BinaryOp::Add, &Arg::Tensor(cpu), &Arg::Tensor(x), None).unwrap_err();
    assert_eq!(err.to_string(), "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
}

#[test]
fn moving_between_devices_goes_through_transfer() {
    let host = Tensor::zeros(&[2, 2], DType::Float64).unwrap();
    let calls = calls_of(|| {
        let d = copy::to_device_raw(&host, Device::Cuda(0)).unwrap();
        assert_eq!(d.device(), Device::Cuda(0));
        let back = copy::to_device_raw(&d, Device::Cpu).unwrap();
        assert!(back.device().is_cpu());
        // already there: the same tensor, nothing moves
        assert!(copy::to_device_raw(&d, Device::Cuda(0)).unwrap().same_storage(&d));
    });
    assert_eq!(calls, vec!["allocate 32 Float64", "transfer to_host=false", "transfer to_host=true"]);
}

#[test]
fn a_device_tensor_never_reaches_a_host_pointer() {
    let x = cuda(&[2]);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| x.data_ptr::<f32>()));
    assert!(caught.is_err(), "a CPU kernel must not be handed device memory");
}

#[test]
fn an_unregistered_device_is_an_error() {
    let err = Tensor::empty_on(&[1], DType::Float32, Device::Cuda(7)).unwrap_err();
    assert!(err.to_string().contains("no backend for device 'cuda:7'"), "{}", err);
}

#[test]
fn where_clamp_and_masked_fill_route_too() {
    let x = cuda(&[3]);
    let calls = calls_of(|| {
        let y = minigrad_core::ops::binary::clamp_scalar_raw(&x, Some(Scalar::Float(0.0)), None, false).unwrap();
        assert_eq!(y.device(), Device::Cuda(0));
    });
    assert_eq!(calls, vec!["allocate 12 Float32", "clamp number none in_place=false"]);
}
