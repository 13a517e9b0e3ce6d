//! The device seam without a GPU: a stand-in backend registered for `cuda:0` records what the
//! op layer asks of it. It computes nothing (its memory is never read); what is checked is the
//! routing: every routed op reaches the backend of its operands' device with the op's name, a
//! 0-d CPU operand may join a device tensor (torch's CPU-scalar rule), mixing devices otherwise
//! fails with torch's words, and a device tensor that reaches an unrouted CPU kernel stops with
//! a panic (which the bindings turn into a Python error) instead of touching device memory.
//! A second stand-in (`cuda:1`) implements only the required methods: the optional families
//! (reductions, softmax, matmul) give torch's NotImplementedError there, never a panic.

use minigrad_core::device::{self, Backend, BinaryMode, Bound, Device, RandomDist, ScatterOp, Walk};
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::ops::reduce::{self, Reduction};
use minigrad_core::ops::linalg;
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
    fn reduce(&self, op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> minigrad_core::Result<()> {
        let out = |t: Option<&Tensor>| t.map_or("-".to_string(), |t| format!("{:?}{:?}@{}", t.dtype(), t.shape(), t.device()));
        log(format!("reduce {:?} {:?} dims={:?} values={} indices={}", op, src.shape(), dims, out(values), out(indices)));
        Ok(())
    }
    fn softmax(&self, dst: &Tensor, src: &Tensor, dim: usize, log_: bool) -> minigrad_core::Result<()> {
        assert!(src.is_contiguous() && dst.shape() == src.shape());
        log(format!("softmax {:?} dim={} log={}", src.shape(), dim, log_));
        Ok(())
    }
    fn softmax_backward(&self, gi: &Tensor, g: &Tensor, r: &Tensor, dim: usize, log_: bool) -> minigrad_core::Result<bool> {
        assert!(gi.device() == Device::Cuda(0) && g.shape() == r.shape());
        log(format!("softmax_backward {:?} dim={} log={}", g.shape(), dim, log_));
        Ok(true)
    }
    fn matmul(&self, dst: &Tensor, a: &Tensor, b: &Tensor) -> minigrad_core::Result<()> {
        log(format!("matmul {:?} = {:?}{:?} @ {:?}{:?}", dst.shape(), a.shape(), a.strides(), b.shape(), b.strides()));
        Ok(())
    }
    fn random_fill(&self, dst: &Tensor, dist: RandomDist) -> minigrad_core::Result<()> {
        log(format!("random_fill {:?}{:?} {:?}", dst.shape(), dst.strides(), dist));
        Ok(())
    }
    fn transfer(&self, host: &Tensor, dev: &Tensor, to_host: bool) -> minigrad_core::Result<()> {
        assert!(host.device().is_cpu() && dev.device() == Device::Cuda(0));
        log(format!("transfer to_host={}", to_host));
        if to_host {
            // The stand-in device reads as zeros (so index values read back are in range).
            let n = host.numel() * host.dtype().size();
            // SAFETY: `host` is a contiguous CPU tensor of `n` bytes from its offset.
            unsafe { std::ptr::write_bytes(host.storage.as_ptr().add(host.layout.offset * host.dtype().size()), 0, n) };
        }
        Ok(())
    }
    fn gather(&self, dst: &Tensor, src: &Tensor, dim: usize, index: &Tensor) -> minigrad_core::Result<()> {
        assert!(dst.device() == Device::Cuda(0) && src.device() == Device::Cuda(0) && index.dtype() == DType::Int64);
        log(format!("gather dim={} dst={:?} index={:?}{:?}", dim, dst.shape(), index.shape(), index.strides()));
        Ok(())
    }
    fn scatter(&self, dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: ScatterOp) -> minigrad_core::Result<()> {
        assert!(src.device() == Device::Cuda(0) && index.shape() == src.shape());
        log(format!("scatter {:?} dim={} dst={:?} index={:?}{:?}", op, dim, dst.shape(), index.shape(), index.strides()));
        Ok(())
    }
    fn index_gather(&self, dst: &Tensor, _src: &Tensor, walk: &Walk) -> minigrad_core::Result<()> {
        log(format!("index_gather dst={:?} positions={}", dst.shape(), walk.positions.len()));
        Ok(())
    }
    fn index_scatter(&self, dst: &Tensor, _values: &Tensor, walk: &Walk, accumulate: bool) -> minigrad_core::Result<()> {
        log(format!("index_scatter dst={:?} positions={} accumulate={}", dst.shape(), walk.positions.len(), accumulate));
        Ok(())
    }
    fn nonzero(&self, src: &Tensor) -> minigrad_core::Result<Tensor> {
        log(format!("nonzero {:?}", src.shape()));
        Tensor::empty_on(&[0, src.ndim()], DType::Int64, Device::Cuda(0))
    }
    fn masked_select(&self, src: &Tensor, mask: &Tensor) -> minigrad_core::Result<Tensor> {
        assert!(src.is_contiguous() && mask.is_contiguous() && src.shape() == mask.shape());
        log(format!("masked_select {:?}", src.shape()));
        Tensor::empty_on(&[0], src.dtype(), Device::Cuda(0))
    }
}

/// A device whose backend has only the required methods (memory, copies, elementwise).
struct Bare;

impl Backend for Bare {
    fn device(&self) -> Device {
        Device::Cuda(1)
    }
    fn allocate(&self, nbytes: usize, dtype: DType, _zeroed: bool) -> minigrad_core::Result<Arc<Storage>> {
        let bytes = vec![0u8; nbytes.max(1)].into_boxed_slice();
        let ptr = bytes.as_ptr() as *mut u8;
        // SAFETY: `bytes` is moved into the owner, so the pointer stays valid as long as the storage.
        Ok(unsafe { Storage::from_foreign_on(Device::Cuda(1), ptr, nbytes, dtype, Box::new(bytes)) })
    }
    fn copy(&self, _: &Tensor, _: &Tensor, _: &[isize]) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn fill(&self, _: &Tensor, _: Scalar) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn unary(&self, _: UnaryOp, _: &Tensor, _: &Tensor, _: bool) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn binary(&self, _: BinaryOp, _: &Tensor, _: &Tensor, _: &Tensor, _: BinaryMode, _: Option<f64>) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn where_(&self, _: &Tensor, _: &Tensor, _: &Tensor, _: &Tensor) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn masked_fill(&self, _: &Tensor, _: &Tensor, _: Scalar) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn clamp(&self, _: &Tensor, _: &Tensor, _: Bound<'_>, _: Bound<'_>, _: bool) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn add_into(&self, _: &Tensor, _: &Tensor) -> minigrad_core::Result<()> {
        Ok(())
    }
    fn transfer(&self, host: &Tensor, _: &Tensor, to_host: bool) -> minigrad_core::Result<()> {
        if to_host {
            // SAFETY: `host` is a contiguous CPU tensor of numel * size bytes from its offset.
            unsafe { std::ptr::write_bytes(host.storage.as_ptr().add(host.layout.offset * host.dtype().size()), 0, host.numel() * host.dtype().size()) };
        }
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
    REGISTER.call_once(|| {
        device::register(Box::new(StandIn)).unwrap();
        device::register(Box::new(Bare)).unwrap();
    });
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
    let payload = caught.expect_err("a CPU kernel must not be handed device memory");
    // the payload the bindings turn into a NotImplementedError (not an "internal error")
    let p = payload.downcast_ref::<minigrad_core::tensor::NoKernelOnDevice>().expect("a NoKernelOnDevice payload");
    assert_eq!(p.0, Device::Cuda(0));
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

#[test]
fn reductions_route_with_their_dims_and_outputs() {
    let x = cuda(&[2, 3, 4]);
    let calls = calls_of(|| {
        let s = reduce::sum_raw(&x, Some(&[-1, 0]), false, None).unwrap();
        assert_eq!((s.device(), s.shape()), (Device::Cuda(0), &[3][..]));
        reduce::mean_raw(&x, None, true, None).unwrap();
        reduce::prod_raw(&x, Some(1), false, Some(DType::Float64)).unwrap();
        reduce::amax_raw(&x, &[2], true, false).unwrap();
        let (v, i) = reduce::max_dim_raw(&x, 1, false, true).unwrap();
        assert_eq!((v.device(), i.device(), i.dtype()), (Device::Cuda(0), Device::Cuda(0), DType::Int64));
        reduce::argmax(&x, Some(-1), false, false).unwrap();
        reduce::all(&x, Some(&[]), false, true).unwrap();
        reduce::count_nonzero(&x, Some(&[0])).unwrap();
        reduce::vector_norm_raw(&x, 3.0, Some(&[2]), false, None).unwrap();
        reduce::var_raw(&x, Some(&[0, 2]), 1.0, false, true).unwrap();
        reduce::logsumexp_raw(&x, &[1], false).unwrap();
    });
    let f = "Float32";
    assert_eq!(
        calls,
        vec![
            "allocate 12 Float32".to_string(),
            format!("reduce Sum [2, 3, 4] dims=[0, 2] values={f}[3]@cuda:0 indices=-"),
            "allocate 4 Float32".into(),
            format!("reduce Mean [2, 3, 4] dims=[0, 1, 2] values={f}[1, 1, 1]@cuda:0 indices=-"),
            "allocate 64 Float64".into(),
            "reduce Prod [2, 3, 4] dims=[1] values=Float64[2, 4]@cuda:0 indices=-".into(),
            "allocate 24 Float32".into(),
            format!("reduce Amin [2, 3, 4] dims=[2] values={f}[2, 3, 1]@cuda:0 indices=-"),
            "allocate 32 Float32".into(),
            "allocate 64 Int64".into(),
            format!("reduce Argmax [2, 3, 4] dims=[1] values={f}[2, 4]@cuda:0 indices=Int64[2, 4]@cuda:0"),
            "allocate 48 Int64".into(),
            "reduce Argmin [2, 3, 4] dims=[2] values=- indices=Int64[2, 3]@cuda:0".into(),
            "allocate 24 Bool".into(),
            "reduce All [2, 3, 4] dims=[] values=Bool[2, 3, 4]@cuda:0 indices=-".into(),
            "allocate 96 Int64".into(),
            "reduce CountNonzero [2, 3, 4] dims=[0] values=Int64[3, 4]@cuda:0 indices=-".into(),
            "allocate 24 Float32".into(),
            format!("reduce Norm {{ p: 3.0 }} [2, 3, 4] dims=[2] values={f}[2, 3]@cuda:0 indices=-"),
            "allocate 12 Float32".into(),
            format!("reduce Var {{ correction: 1.0, std: true }} [2, 3, 4] dims=[0, 2] values={f}[3]@cuda:0 indices=-"),
            "allocate 32 Float32".into(),
            format!("reduce LogSumExp [2, 3, 4] dims=[1] values={f}[2, 4]@cuda:0 indices=-"),
        ]
    );
}

#[test]
fn softmax_routes_forward_and_fused_backward() {
    use minigrad_core::autograd::meta::RequiresGradEntry;
    use minigrad_core::autograd::{run_backward, BackwardRequest};
    let x = cuda(&[2, 5]);
    x.set_requires_grad(true, RequiresGradEntry::Factory).unwrap();
    let calls = calls_of(|| {
        let y = reduce::softmax(&x, -1, None, true).unwrap();
        assert_eq!(y.device(), Device::Cuda(0));
        let seed = cuda(&[2, 5]);
        let g = run_backward(BackwardRequest { roots: vec![(y.gradient_edge().unwrap(), seed)], inputs: &[x.gradient_edge().unwrap()], keep_graph: false, create_graph: false, accumulate: false }).unwrap();
        assert_eq!(g[0].as_ref().unwrap().device(), Device::Cuda(0));
    });
    assert_eq!(calls, vec!["allocate 40 Float32", "softmax [2, 5] dim=1 log=true", "allocate 40 Float32", "allocate 40 Float32", "softmax_backward [2, 5] dim=1 log=true"]);
}

#[test]
fn matrix_products_route_as_batched_matrices() {
    let (a, b, v) = (cuda(&[2, 3]), cuda(&[3, 4]), cuda(&[3]));
    let batch = cuda(&[5, 2, 3]);
    let calls = calls_of(|| {
        let c = linalg::mm_raw(&a, &b).unwrap();
        assert_eq!((c.device(), c.shape()), (Device::Cuda(0), &[2, 4][..]));
        // mv: the vector is a one-column matrix, the result a (2, 1) view of the output
        let y = linalg::mv_raw(&a, &v).unwrap();
        assert_eq!(y.shape(), &[2]);
        linalg::bmm_raw(&batch, &cuda(&[5, 3, 4])).unwrap();
        // matmul broadcasts the batch dims: b's size-1 batch dim is read with stride 0
        let c = linalg::matmul_raw(&batch, &cuda(&[1, 3, 4])).unwrap();
        assert_eq!(c.shape(), &[5, 2, 4]);
    });
    assert_eq!(
        calls,
        [
            "allocate 32 Float32",
            "matmul [2, 4] = [2, 3][3, 1] @ [3, 4][4, 1]",
            "allocate 8 Float32",
            "matmul [2, 1] = [2, 3][3, 1] @ [3, 1][1, 0]",
            "allocate 240 Float32",
            "allocate 160 Float32",
            "matmul [5, 2, 4] = [5, 2, 3][6, 3, 1] @ [5, 3, 4][12, 4, 1]",
            "allocate 48 Float32",
            "allocate 160 Float32",
            "matmul [5, 2, 4] = [5, 2, 3][6, 3, 1] @ [5, 3, 4][0, 4, 1]",
        ]
    );
}

#[test]
fn a_backend_without_a_family_says_not_implemented() {
    register();
    let x = Tensor::empty_on(&[2, 3], DType::Float32, Device::Cuda(1)).unwrap();
    let not_impl = |r: minigrad_core::Result<Tensor>, op: &str| match r {
        Err(minigrad_core::Error::NotImplemented(m)) => {
            assert!(m.starts_with(&format!("Could not run 'aten::{}' with arguments from the 'CUDA' backend.", op)), "{}", m);
            assert!(m.contains("cuda:1"), "{}", m);
        }
        other => panic!("expected NotImplemented for {}, got {:?}", op, other.map(|t| t.shape().to_vec())),
    };
    not_impl(reduce::sum_raw(&x, None, false, None), "sum");
    not_impl(reduce::max_dim_raw(&x, 0, false, true).map(|(v, _)| v), "argmax");
    not_impl(reduce::var_raw(&x, None, 1.0, false, true).map(|(v, _)| v), "std");
    not_impl(reduce::softmax_raw(&x, 1, None, false), "_softmax");
    not_impl(linalg::mm_raw(&x, &Tensor::empty_on(&[3, 2], DType::Float32, Device::Cuda(1)).unwrap()), "mm");
}

/// An int64 tensor of zeros on the stand-in device (it reads as zeros).
fn cuda_index(shape: &[usize]) -> Tensor {
    register();
    Tensor::empty_on(shape, DType::Int64, Device::Cuda(0)).unwrap()
}

#[test]
fn gathers_and_scatters_route_along_their_dim() {
    use minigrad_core::ops::gather;
    let x = cuda(&[3, 4]);
    let (idx, row) = (cuda_index(&[2, 4]), cuda_index(&[2]));
    let calls = calls_of(|| {
        let g = gather::gather_raw(&x, 0, &idx).unwrap();
        assert_eq!((g.device(), g.shape()), (Device::Cuda(0), &[2, 4][..]));
        // index_select: the 1-D index read along the dim, stride 0 elsewhere
        let s = gather::index_select_raw(&x, 1, &row).unwrap();
        assert_eq!((s.device(), s.shape()), (Device::Cuda(0), &[3, 2][..]));
        gather::scatter_add_raw(&x, 0, &idx, &cuda(&[2, 4]), true).unwrap();
        gather::scatter_raw(&x, 0, &idx, &gather::Source::Value(Scalar::Float(2.0)), Some("multiply"), true).unwrap();
        gather::index_add_raw(&x, 1, &row, &cuda(&[3, 2]), Scalar::Float(0.5), true).unwrap();
    });
    let routed: Vec<&String> = calls.iter().filter(|c| c.starts_with("gather") || c.starts_with("scatter")).collect();
    assert_eq!(
        routed,
        [
            "gather dim=0 dst=[2, 4] index=[2, 4][4, 1]",
            "gather dim=1 dst=[3, 2] index=[3, 2][0, 1]",
            "scatter Add dim=0 dst=[3, 4] index=[2, 4][4, 1]",
            "scatter Multiply dim=0 dst=[3, 4] index=[2, 4][4, 1]",
            "scatter AddScaled(Float(0.5)) dim=1 dst=[3, 4] index=[3, 2][0, 1]",
        ]
    );
    assert_eq!(x.version(), 3, "each in-place scatter bumps the version once");
}

#[test]
fn advanced_indexing_and_masks_route_to_the_device() {
    use minigrad_core::ops::{advanced, mask};
    let x = cuda(&[3, 4]);
    let idx = cuda_index(&[5]);
    let calls = calls_of(|| {
        let r = advanced::index_raw(&x, &[None, Some(idx.clone())]).unwrap();
        assert_eq!((r.device(), r.shape()), (Device::Cuda(0), &[3, 5][..]));
        // a CPU index list is moved to the indexed tensor's device, as torch allows
        let cpu_idx = Tensor::from_vec(vec![2i64, 0], &[2]).unwrap();
        advanced::index_put_inplace_raw(&x, &[Some(cpu_idx)], &cuda(&[4]), true).unwrap();
        mask::nonzero(&x).unwrap();
        let m = Tensor::empty_on(&[4], DType::Bool, Device::Cuda(0)).unwrap();
        assert_eq!(mask::masked_select_raw(&x, &m).unwrap().device(), Device::Cuda(0));
    });
    let routed: Vec<&String> = calls.iter().filter(|c| !c.starts_with("allocate") && !c.starts_with("transfer") && !c.starts_with("copy")).collect();
    assert_eq!(
        routed,
        ["index_gather dst=[3, 5] positions=5", "index_scatter dst=[3, 4] positions=2 accumulate=true", "nonzero [3, 4]", "masked_select [3, 4]"]
    );
}

#[test]
fn class_index_losses_gather_on_the_device() {
    use minigrad_core::ops::loss::{cross_entropy, Reduction};
    let (x, t) = (cuda(&[4, 3]), cuda_index(&[4]));
    let calls = calls_of(|| {
        let l = cross_entropy(&x, &t, None, Reduction::Mean, -100, 0.0).unwrap();
        assert_eq!(l.device(), Device::Cuda(0));
    });
    assert!(calls.iter().any(|c| c == "softmax [4, 3] dim=1 log=true"), "{calls:?}");
    assert!(calls.iter().any(|c| c == "gather dim=1 dst=[4, 1, 1] index=[4, 1, 1][1, 1, 1]"), "{calls:?}");
}

#[test]
fn a_backend_without_gathers_says_not_implemented() {
    use minigrad_core::ops::{advanced, gather};
    register();
    let on1 = |shape: &[usize], dtype| Tensor::zeros_on(shape, dtype, Device::Cuda(1)).unwrap();
    let x = on1(&[2, 3], DType::Float32);
    let idx = on1(&[1, 3], DType::Int64);
    let msg = |r: minigrad_core::Result<Tensor>| match r {
        Err(minigrad_core::Error::NotImplemented(m)) => m,
        other => panic!("expected NotImplemented, got {:?}", other.map(|t| t.shape().to_vec())),
    };
    assert!(msg(gather::gather_raw(&x, 0, &idx)).starts_with("Could not run 'aten::gather' with arguments from the 'CUDA' backend."));
    assert!(msg(gather::scatter_add_raw(&x, 0, &idx, &x, false)).starts_with("Could not run 'aten::scatter'"));
    let r = advanced::index_raw(&x, &[Some(Tensor::from_vec(vec![0i64], &[1]).unwrap())]);
    assert!(msg(r).starts_with("Could not run 'aten::index.Tensor'"));
}

#[test]
fn random_fills_route_with_the_view_they_write() {
    let x = cuda(&[2, 3]);
    let t = minigrad_core::ops::views::transpose(&x, 0, 1).unwrap();
    let calls = calls_of(|| {
        minigrad_core::ops::creation::random_(&t, RandomDist::Normal { mean: 1.0, std: 2.0 }).unwrap();
        minigrad_core::ops::creation::random_(&x, RandomDist::Uniform { from: -1.0, to: 1.0 }).unwrap();
    });
    assert_eq!(calls, ["random_fill [3, 2][1, 3] Normal { mean: 1.0, std: 2.0 }", "random_fill [2, 3][3, 1] Uniform { from: -1.0, to: 1.0 }"]);
    assert_eq!(x.version.get(), 2);
    let bare = Tensor::empty_on(&[2], DType::Float32, Device::Cuda(1)).unwrap();
    match minigrad_core::ops::creation::random_(&bare, RandomDist::Uniform { from: 0.0, to: 1.0 }) {
        Err(minigrad_core::Error::NotImplemented(m)) => assert!(m.starts_with("Could not run 'aten::uniform_'"), "{}", m),
        other => panic!("expected NotImplemented, got {:?}", other.is_ok()),
    }
}
