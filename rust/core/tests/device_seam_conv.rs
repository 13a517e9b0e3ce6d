//! The conv / pool / pad family on the device seam, without a GPU: a stand-in backend for
//! `cuda:0` records what the op layer asks of it (as device_seam.rs does for the elementwise,
//! reduction and matmul families; a separate test binary, so each registers its own devices).
//! It checks that convolution, its two gradients, max/avg/adaptive pooling and their backward,
//! index-map padding and the batch_norm / layer_norm forwards reach the backend's methods with contiguous device operands, fresh
//! device outputs and the geometry the CPU kernels get; that a backend without the family
//! (`cuda:1`) answers torch's NotImplementedError; and that mixing devices fails with torch's
//! words before anything is allocated.

use minigrad_core::autograd::meta::RequiresGradEntry;
use minigrad_core::autograd::{run_backward, BackwardRequest};
use minigrad_core::device::{self, AvgWindows, Backend, BinaryMode, Bound, ConvGeometry, Device, MaxGeometry};
use minigrad_core::ops::binary::BinaryOp;
use minigrad_core::ops::conv::{self, Conv2dParams, Padding};
use minigrad_core::ops::unary::UnaryOp;
use minigrad_core::ops::{pad, pool};
use minigrad_core::storage::Storage;
use minigrad_core::{DType, Scalar, Tensor};
use std::sync::{Arc, Once};

thread_local! {
    static CALLS: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

fn log(s: String) {
    CALLS.with(|c| if let Some(v) = c.borrow_mut().as_mut() { v.push(s) });
}

fn on_device(ts: &[&Tensor]) {
    for t in ts {
        assert_eq!(t.device(), Device::Cuda(0));
        assert!(t.is_contiguous(), "operands reach the backend contiguous");
    }
}

/// Host bytes standing in for device memory; the core must never dereference them.
fn host_bytes(device: Device, nbytes: usize, dtype: DType) -> Arc<Storage> {
    let bytes = vec![0u8; nbytes.max(1)].into_boxed_slice();
    let ptr = bytes.as_ptr() as *mut u8;
    // SAFETY: `bytes` is moved into the owner, so the pointer stays valid as long as the storage.
    unsafe { Storage::from_foreign_on(device, ptr, nbytes, dtype, Box::new(bytes)) }
}

/// The required methods of a stand-in: memory, and elementwise calls that only log.
macro_rules! required {
    ($dev:expr) => {
        fn device(&self) -> Device {
            $dev
        }
        fn allocate(&self, nbytes: usize, dtype: DType, _zeroed: bool) -> minigrad_core::Result<Arc<Storage>> {
            Ok(host_bytes($dev, nbytes, dtype))
        }
        fn copy(&self, _: &Tensor, _: &Tensor, _: &[isize]) -> minigrad_core::Result<()> {
            log("copy".into());
            Ok(())
        }
        fn fill(&self, _: &Tensor, v: Scalar) -> minigrad_core::Result<()> {
            log(format!("fill {:?}", v));
            Ok(())
        }
        fn unary(&self, op: UnaryOp, _: &Tensor, _: &Tensor, _: bool) -> minigrad_core::Result<()> {
            log(format!("unary {:?}", op));
            Ok(())
        }
        fn binary(&self, op: BinaryOp, _: &Tensor, _: &Tensor, _: &Tensor, _: BinaryMode, _: Option<f64>) -> minigrad_core::Result<()> {
            log(format!("binary {:?}", op));
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
        fn transfer(&self, _: &Tensor, _: &Tensor, _: bool) -> minigrad_core::Result<()> {
            Ok(())
        }
    };
}

struct StandIn;

impl Backend for StandIn {
    required!(Device::Cuda(0));

    fn reduce(&self, op: minigrad_core::ops::reduce::Reduction, _: Option<&Tensor>, _: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> minigrad_core::Result<()> {
        log(format!("reduce {:?} {:?} dims={:?}", op, src.shape(), dims));
        Ok(())
    }
    fn conv2d(&self, out: &Tensor, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, g: &ConvGeometry) -> minigrad_core::Result<()> {
        on_device(&[out, x, w]);
        log(format!(
            "conv2d {:?} = {:?} * {:?} bias={} stride={:?} padding={:?} dilation={:?} groups={} out={}x{}",
            out.shape(), x.shape(), w.shape(), bias.is_some(), g.stride, g.padding, g.dilation, g.groups, g.oh, g.ow
        ));
        Ok(())
    }
    fn conv2d_input_grad(&self, dx: &Tensor, grad: &Tensor, w: &Tensor, _g: &ConvGeometry) -> minigrad_core::Result<()> {
        on_device(&[dx, grad, w]);
        log(format!("conv2d_input_grad {:?} from {:?}", dx.shape(), grad.shape()));
        Ok(())
    }
    fn conv2d_weight_grad(&self, dw: &Tensor, x: &Tensor, grad: &Tensor, _g: &ConvGeometry) -> minigrad_core::Result<()> {
        on_device(&[dw, x, grad]);
        log(format!("conv2d_weight_grad {:?} from {:?}", dw.shape(), grad.shape()));
        Ok(())
    }
    fn max_pool2d(&self, out: &Tensor, idx: &Tensor, x: &Tensor, g: &MaxGeometry) -> minigrad_core::Result<()> {
        on_device(&[out, idx, x]);
        assert_eq!(idx.dtype(), DType::Int64);
        log(format!("max_pool2d {:?} -> {:?} kernel={:?} stride={:?}", x.shape(), out.shape(), g.kernel, g.stride));
        Ok(())
    }
    fn max_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, idx: &Tensor, g: &MaxGeometry) -> minigrad_core::Result<()> {
        on_device(&[dx, grad, idx]);
        log(format!("max_pool2d_backward {:?} from {:?} kernel={:?}", dx.shape(), grad.shape(), g.kernel));
        Ok(())
    }
    fn avg_pool2d(&self, out: &Tensor, x: &Tensor, win: &AvgWindows) -> minigrad_core::Result<()> {
        on_device(&[out, x]);
        log(format!("avg_pool2d {:?} -> {:?} windows={}x{}", x.shape(), out.shape(), win.rows.len(), win.cols.len()));
        Ok(())
    }
    fn avg_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, _win: &AvgWindows) -> minigrad_core::Result<()> {
        on_device(&[dx, grad]);
        log(format!("avg_pool2d_backward {:?} from {:?}", dx.shape(), grad.shape()));
        Ok(())
    }
    fn pad2d(&self, out: &Tensor, x: &Tensor, rows: &[usize], cols: &[usize]) -> minigrad_core::Result<()> {
        on_device(&[out, x]);
        log(format!("pad2d {:?} -> {:?} rows={:?} cols={:?}", x.shape(), out.shape(), rows, cols));
        Ok(())
    }
    fn pad2d_backward(&self, dx: &Tensor, grad: &Tensor, _rows: &[usize], _cols: &[usize]) -> minigrad_core::Result<()> {
        on_device(&[dx, grad]);
        log(format!("pad2d_backward {:?} from {:?}", dx.shape(), grad.shape()));
        Ok(())
    }
    #[allow(clippy::too_many_arguments)]
    fn batch_norm(
        &self,
        x: &Tensor,
        rm: Option<&Tensor>,
        rv: Option<&Tensor>,
        w: Option<&Tensor>,
        b: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> minigrad_core::Result<(Tensor, Tensor, Tensor)> {
        log(format!("batch_norm {:?} stats={} affine={} training={} momentum={} eps={}", x.shape(), rm.is_some() && rv.is_some(), w.is_some() && b.is_some(), training, momentum, eps));
        let c = x.shape()[1];
        Ok((cuda(x.shape()), cuda(&[c]), cuda(&[c])))
    }
    fn layer_norm(&self, x: &Tensor, shape: &[usize], w: Option<&Tensor>, _b: Option<&Tensor>, eps: f64) -> minigrad_core::Result<(Tensor, Tensor, Tensor)> {
        log(format!("layer_norm {:?} over {:?} affine={} eps={}", x.shape(), shape, w.is_some(), eps));
        Ok((cuda(x.shape()), cuda(&[x.shape()[0], 1]), cuda(&[x.shape()[0], 1])))
    }
}

/// A device whose backend has only the required methods.
struct Bare;

impl Backend for Bare {
    required!(Device::Cuda(1));
}

fn register() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        device::register(Box::new(StandIn)).unwrap();
        device::register(Box::new(Bare)).unwrap();
    });
}

fn calls_of(f: impl FnOnce()) -> Vec<String> {
    register();
    CALLS.with(|c| *c.borrow_mut() = Some(Vec::new()));
    f();
    CALLS.with(|c| c.borrow_mut().take().unwrap())
}

fn on(device: Device, shape: &[usize]) -> Tensor {
    register();
    Tensor::empty_on(shape, DType::Float32, device).unwrap()
}

fn cuda(shape: &[usize]) -> Tensor {
    on(Device::Cuda(0), shape)
}

fn leaf(shape: &[usize]) -> Tensor {
    let t = cuda(shape);
    t.set_requires_grad(true, RequiresGradEntry::Factory).unwrap();
    t
}

fn backward(y: &Tensor, inputs: &[&Tensor]) -> Vec<Option<Tensor>> {
    let seed = cuda(y.shape());
    let inputs: Vec<_> = inputs.iter().map(|t| t.gradient_edge().unwrap()).collect();
    run_backward(BackwardRequest { roots: vec![(y.gradient_edge().unwrap(), seed)], inputs: &inputs, keep_graph: false, create_graph: false, accumulate: false }).unwrap()
}

#[test]
fn conv2d_and_its_gradients_reach_the_backend() {
    let (x, w, b) = (leaf(&[2, 4, 9, 8]), leaf(&[6, 2, 3, 3]), leaf(&[6]));
    let calls = calls_of(|| {
        let y = conv::conv2d(&x, &w, Some(&b), &[2, 1], &Padding::Explicit(vec![1, 0]), &[1, 2], 2).unwrap();
        assert_eq!((y.device(), y.shape()), (Device::Cuda(0), &[2, 6, 5, 4][..]));
        let g = backward(&y, &[&x, &w, &b]);
        assert!(g.iter().all(|g| g.as_ref().unwrap().device() == Device::Cuda(0)));
    });
    assert_eq!(
        calls,
        [
            "conv2d [2, 6, 5, 4] = [2, 4, 9, 8] * [6, 2, 3, 3] bias=true stride=[2, 1] padding=[1, 0] dilation=[1, 2] groups=2 out=5x4",
            "conv2d_input_grad [2, 4, 9, 8] from [2, 6, 5, 4]",
            "conv2d_weight_grad [6, 2, 3, 3] from [2, 6, 5, 4]",
            "reduce Sum [2, 6, 5, 4] dims=[0, 2, 3]",
        ]
    );
}

#[test]
fn a_non_contiguous_input_is_copied_before_the_backend_sees_it() {
    let x = cuda(&[2, 3, 5, 5]);
    let xt = minigrad_core::ops::views::transpose(&x, 2, 3).unwrap();
    let w = cuda(&[4, 3, 3, 3]);
    let calls = calls_of(|| {
        conv::conv2d_raw(&xt, &w, None, &Conv2dParams { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 }).unwrap();
    });
    assert_eq!(calls, ["copy", "conv2d [2, 4, 3, 3] = [2, 3, 5, 5] * [4, 3, 3, 3] bias=false stride=[1, 1] padding=[0, 0] dilation=[1, 1] groups=1 out=3x3"]);
}

#[test]
fn pooling_and_its_backward_reach_the_backend() {
    let x = leaf(&[2, 3, 7, 6]);
    let calls = calls_of(|| {
        let (y, idx) = pool::max_pool2d(&x, &[3, 2], &[2, 2], &[1, 0], &[1, 1], false).unwrap();
        assert_eq!((y.device(), idx.device(), idx.dtype()), (Device::Cuda(0), Device::Cuda(0), DType::Int64));
        backward(&y, &[&x]);
        let a = pool::avg_pool2d(&x, &[2, 2], &[2, 2], &[0, 0], true, true, None).unwrap();
        backward(&a, &[&x]);
        let ad = pool::adaptive_avg_pool2d(&x, &[4, 5]).unwrap();
        assert_eq!(ad.device(), Device::Cuda(0));
    });
    assert_eq!(
        calls,
        [
            "max_pool2d [2, 3, 7, 6] -> [2, 3, 4, 3] kernel=[3, 2] stride=[2, 2]",
            "max_pool2d_backward [2, 3, 7, 6] from [2, 3, 4, 3] kernel=[3, 2]",
            "avg_pool2d [2, 3, 7, 6] -> [2, 3, 4, 3] windows=4x3",
            "avg_pool2d_backward [2, 3, 7, 6] from [2, 3, 4, 3]",
            "avg_pool2d [2, 3, 7, 6] -> [2, 3, 4, 5] windows=4x5",
        ]
    );
}

#[test]
fn padding_routes_by_mode() {
    let x = leaf(&[1, 2, 3, 4]);
    let calls = calls_of(|| {
        let y = pad::pad2d(&x, &[1, 1, 2, 0], pad::Mode2d::Reflect).unwrap();
        assert_eq!((y.device(), y.shape()), (Device::Cuda(0), &[1, 2, 5, 6][..]));
        backward(&y, &[&x]);
        // constant padding is a fill of a device tensor and a copy into it
        let c = pad::constant_pad(&x, &[1, 1], 0.5).unwrap();
        assert_eq!((c.device(), c.shape()), (Device::Cuda(0), &[1, 2, 3, 6][..]));
    });
    assert_eq!(
        calls,
        ["pad2d [1, 2, 3, 4] -> [1, 2, 5, 6] rows=[2, 1, 0, 1, 2] cols=[1, 0, 1, 2, 3, 2]", "pad2d_backward [1, 2, 3, 4] from [1, 2, 5, 6]", "fill Float(0.5)", "copy"]
    );
}

#[test]
fn mixing_devices_fails_with_torchs_words() {
    let x = cuda(&[1, 2, 5, 5]);
    let w = Tensor::zeros(&[3, 2, 3, 3], DType::Float32).unwrap();
    let err = conv::conv2d(&x, &w, None, &[1, 1], &Padding::Explicit(vec![0, 0]), &[1, 1], 1).unwrap_err();
    assert_eq!(err.to_string(), "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
}

#[test]
fn a_backend_without_the_family_says_not_implemented() {
    let dev = Device::Cuda(1);
    let x = on(dev, &[1, 2, 5, 5]);
    let expect = |r: minigrad_core::Result<Tensor>, op: &str| match r {
        Err(minigrad_core::Error::NotImplemented(m)) => {
            assert!(m.starts_with(&format!("Could not run 'aten::{}' with arguments from the 'CUDA' backend.", op)), "{}", m)
        }
        other => panic!("expected NotImplemented for {}, got {:?}", op, other.map(|t| t.shape().to_vec())),
    };
    let p = Conv2dParams { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 };
    expect(conv::conv2d_raw(&x, &on(dev, &[3, 2, 3, 3]), None, &p), "convolution");
    expect(pool::max_pool2d_raw(&x, &[2, 2], &[2, 2], &[0, 0], &[1, 1], false).map(|r| r.0), "max_pool2d_with_indices");
    expect(pool::avg_pool2d(&x, &[2, 2], &[2, 2], &[0, 0], false, true, None), "avg_pool2d");
    expect(pad::pad2d(&x, &[1, 1, 1, 1], pad::Mode2d::Replicate), "reflection_pad2d");
}

#[test]
fn norm_forwards_reach_the_backend() {
    let (x, w, b) = (cuda(&[2, 3, 4]), cuda(&[3]), cuda(&[3]));
    let (rm, rv) = (cuda(&[3]), cuda(&[3]));
    let calls = calls_of(|| {
        let y = minigrad_core::ops::norm::batch_norm(&x, Some(&rm), Some(&rv), Some(&w), Some(&b), true, 0.25, 1e-3).unwrap();
        assert_eq!((y.device(), y.shape()), (Device::Cuda(0), &[2, 3, 4][..]));
        let l = minigrad_core::ops::norm::layer_norm(&x, &[3, 4], None, None, 1e-5).unwrap();
        assert_eq!(l.device(), Device::Cuda(0));
    });
    assert_eq!(calls, ["batch_norm [2, 3, 4] stats=true affine=true training=true momentum=0.25 eps=0.001", "layer_norm [2, 3, 4] over [3, 4] affine=false eps=0.00001"]);
    let bare = on(Device::Cuda(1), &[2, 3]);
    match minigrad_core::ops::norm::layer_norm(&bare, &[3], None, None, 1e-5) {
        Err(minigrad_core::Error::NotImplemented(m)) => assert!(m.starts_with("Could not run 'aten::native_layer_norm' with arguments from the 'CUDA' backend."), "{}", m),
        other => panic!("expected NotImplemented, got {:?}", other.map(|t| t.shape().to_vec())),
    }
}
