//! Saved-tensor hooks in the core, with no Python: what a pack hook sees and in which order,
//! how hooks interact with the version check, and torch's errors.

use minigrad_core::autograd::meta::RequiresGradEntry;
use minigrad_core::autograd::saved_hooks::{self, PackHooks, Packed};
use minigrad_core::autograd::{run_backward, BackwardRequest};
use minigrad_core::ops::binary::{binary, binary_, BinaryOp};
use minigrad_core::ops::unary::{unary, UnaryOp};
use minigrad_core::ops::{copy, Arg};
use minigrad_core::{DType, Result, Scalar, Tensor};
use std::sync::{Arc, Mutex};

/// Records (shape, version) of each packed tensor; keeps the tensor itself or a copy.
struct Recording {
    log: Arc<Mutex<Vec<(Vec<usize>, u64)>>>,
    copy: bool,
    write_into_input: bool,
}

struct Keep(Tensor);
impl Packed for Keep {
    fn unpack(&self) -> Result<Tensor> {
        Ok(self.0.clone())
    }
}

impl PackHooks for Recording {
    fn pack(&self, t: &Tensor) -> Result<Box<dyn Packed>> {
        self.log.lock().unwrap().push((t.shape().to_vec(), t.version()));
        if self.write_into_input {
            binary_(BinaryOp::Mul, t, &Arg::Scalar(Scalar::Float(2.0)), None)?;
        }
        Ok(Box::new(Keep(if self.copy { copy::clone(t)? } else { t.clone() })))
    }
}

fn leaf(values: Vec<f64>) -> Tensor {
    let n = values.len();
    let t = Tensor::from_vec(values, &[n]).unwrap();
    t.set_requires_grad(true, RequiresGradEntry::Method).unwrap();
    t
}

fn backward(y: &Tensor) -> Result<()> {
    let s = minigrad_core::ops::reduce::sum(y, None, false, None)?;
    let one = Tensor::full(&[], Scalar::Float(1.0), DType::Float64)?;
    run_backward(BackwardRequest { roots: vec![(s.gradient_edge()?, one)], inputs: &[], keep_graph: false, create_graph: false, accumulate: true })?;
    Ok(())
}

/// sin(x) after x = a * 1 was saved, then x *= 2; returns a's gradient (or the error).
fn sin_then_modify(hooks: Option<Recording>) -> Result<Vec<f64>> {
    let a = leaf(vec![0.5, 1.5]);
    let pushed = hooks.is_some();
    if let Some(h) = hooks {
        saved_hooks::push(Arc::new(h))?;
    }
    let x = binary(BinaryOp::Mul, &Arg::Tensor(a.clone()), &Arg::Scalar(Scalar::Float(1.0)), None);
    let y = x.as_ref().map_err(Clone::clone).and_then(|x| unary(UnaryOp::Sin, x));
    if pushed {
        saved_hooks::pop();
    }
    let (x, y) = (x?, y?);
    binary_(BinaryOp::Mul, &x, &Arg::Scalar(Scalar::Float(2.0)), None)?;
    backward(&y)?;
    a.grad().unwrap().to_vec::<f64>()
}

#[test]
fn identity_hooks_turn_the_version_check_off_and_copies_keep_the_old_values() {
    let err = sin_then_modify(None).unwrap_err().to_string();
    assert!(err.starts_with("one of the variables needed for gradient computation has been modified"), "{}", err);

    let log = Arc::new(Mutex::new(Vec::new()));
    let g = sin_then_modify(Some(Recording { log: log.clone(), copy: false, write_into_input: false })).unwrap();
    // the modified x (2 * a) reached backward: d/da sin(x) read at x = 2a
    assert!((g[0] - (1.0f64).cos()).abs() < 1e-12 && (g[1] - (3.0f64).cos()).abs() < 1e-12, "{:?}", g);
    // `a * 1` saves nothing (a Python number is never packed); sin packs x at version 0
    assert_eq!(*log.lock().unwrap(), vec![(vec![2], 0)]);

    let g = sin_then_modify(Some(Recording { log: log.clone(), copy: true, write_into_input: false })).unwrap();
    assert!((g[0] - (0.5f64).cos()).abs() < 1e-12 && (g[1] - (1.5f64).cos()).abs() < 1e-12, "{:?}", g);
}

#[test]
fn inputs_are_packed_by_name_then_outputs() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = leaf(vec![1.0, 2.0, 3.0]);
    let b = Tensor::from_vec(vec![2.0f64], &[1]).unwrap();
    b.set_requires_grad(true, RequiresGradEntry::Method).unwrap();
    saved_hooks::push(Arc::new(Recording { log: log.clone(), copy: false, write_into_input: false })).unwrap();
    // mul saves `other` (b) then `self` (a); pow(tensor, tensor) saves exponent, self, result
    let r = binary(BinaryOp::Mul, &Arg::Tensor(a.clone()), &Arg::Tensor(b.clone()), None)
        .and_then(|_| binary(BinaryOp::Pow, &Arg::Tensor(a.clone()), &Arg::Tensor(b.clone()), None));
    saved_hooks::pop();
    r.unwrap();
    let shapes: Vec<Vec<usize>> = log.lock().unwrap().iter().map(|(s, _)| s.clone()).collect();
    assert_eq!(shapes, vec![vec![1], vec![3], vec![1], vec![3], vec![3]]);
}

#[test]
fn a_pack_hook_writing_into_its_input_is_refused() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = leaf(vec![0.5]);
    let x = binary(BinaryOp::Mul, &Arg::Tensor(a), &Arg::Scalar(Scalar::Float(1.0)), None).unwrap();
    saved_hooks::push(Arc::new(Recording { log, copy: false, write_into_input: true })).unwrap();
    let r = unary(UnaryOp::Sin, &x);
    saved_hooks::pop();
    assert!(r.unwrap_err().to_string().starts_with("A saved tensor pack hook is modifying its input in place."));
}

#[test]
fn disabled_hooks_refuse_a_push_with_the_message() {
    saved_hooks::disable("no hooks here".into()).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let err = saved_hooks::push(Arc::new(Recording { log, copy: false, write_into_input: false })).unwrap_err();
    saved_hooks::enable();
    assert_eq!(err.to_string(), "no hooks here");
    assert!(saved_hooks::current().is_none());
}
