//! `_C` entry points for elementwise ops. The Python `Tensor` methods and operators call these
//! by op name; in-place variants return the very `self` object (R59).

use crate::convert::{tensor_of, to_arg, to_dtype, to_scalar, wrap};
use crate::errors::{run, to_py, type_err};
use crate::tensor::TensorBase;
use minigrad_core::ops::binary::{self as binops, BinaryOp};
use minigrad_core::ops::unary::{self as unops, UnaryOp};
use minigrad_core::ops::{copy, Arg};
use minigrad_core::{Error, Scalar, Tensor};
use pyo3::prelude::*;

fn unary_op(name: &str) -> PyResult<UnaryOp> {
    use UnaryOp::*;
    Ok(match name {
        "neg" | "negative" => Neg,
        "abs" | "absolute" => Abs,
        "sign" => Sign,
        "exp" => Exp,
        "log" => Log,
        "log1p" => Log1p,
        "expm1" => Expm1,
        "sqrt" => Sqrt,
        "rsqrt" => Rsqrt,
        "sin" => Sin,
        "cos" => Cos,
        "tan" => Tan,
        "asin" | "arcsin" => Asin,
        "acos" | "arccos" => Acos,
        "atan" | "arctan" => Atan,
        "sinh" => Sinh,
        "cosh" => Cosh,
        "asinh" | "arcsinh" => Asinh,
        "acosh" | "arccosh" => Acosh,
        "atanh" | "arctanh" => Atanh,
        "log2" => Log2,
        "log10" => Log10,
        "exp2" => Exp2,
        "erf" => Erf,
        "erfc" => Erfc,
        "erfinv" => Erfinv,
        "frac" => Frac,
        "deg2rad" => Deg2rad,
        "rad2deg" => Rad2deg,
        "sinc" => Sinc,
        "tanh" => Tanh,
        "sigmoid" => Sigmoid,
        "relu" => Relu,
        "silu" => Silu,
        "gelu" => Gelu,
        "gelu_tanh" => GeluTanh,
        "reciprocal" => Reciprocal,
        "floor" => Floor,
        "ceil" => Ceil,
        "round" => Round,
        "trunc" => Trunc,
        "logical_not" => LogicalNot,
        "bitwise_not" => BitwiseNot,
        _ => return Err(type_err(format!("unknown unary op {}", name))),
    })
}

fn binary_op(name: &str) -> PyResult<BinaryOp> {
    use BinaryOp::*;
    Ok(match name {
        "add" => Add,
        "sub" => Sub,
        "mul" => Mul,
        "div" => Div,
        "div_floor" | "floor_divide" => DivFloor,
        "div_trunc" => DivTrunc,
        "remainder" => Remainder,
        "pow" => Pow,
        "maximum" => Maximum,
        "minimum" => Minimum,
        "atan2" => Atan2,
        "hypot" => Hypot,
        "fmod" => Fmod,
        "copysign" => Copysign,
        "xlogy" => Xlogy,
        "logaddexp" => Logaddexp,
        "logaddexp2" => Logaddexp2,
        "bitwise_and" => BitAnd,
        "bitwise_or" => BitOr,
        "bitwise_xor" => BitXor,
        "eq" => Eq,
        "ne" => Ne,
        "lt" => Lt,
        "le" => Le,
        "gt" => Gt,
        "ge" => Ge,
        "logical_and" => LogicalAnd,
        "logical_or" => LogicalOr,
        "logical_xor" => LogicalXor,
        _ => return Err(type_err(format!("unknown binary op {}", name))),
    })
}

fn work(a: &Arg) -> usize {
    match a {
        Arg::Tensor(t) => t.numel(),
        Arg::Scalar(_) => 1,
    }
}

#[pyfunction]
pub fn unary(py: Python<'_>, x: &Bound<'_, TensorBase>, op: &str) -> PyResult<Py<PyAny>> {
    let op = unary_op(op)?;
    let t = x.borrow().t.clone();
    // A small call with nothing to record that the core's fast path takes: skip `run`, as
    // `binary_small` does (larger calls go through `run`, which releases the GIL).
    if t.numel() < crate::errors::GIL_RELEASE_ELEMS {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unops::unary_unrecorded(op, &t))) {
            Ok(Ok(Some(out))) => return wrap(py, out),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => return Err(to_py(e)),
            Err(_) => return Err(pyo3::exceptions::PyRuntimeError::new_err("minigrad internal error (please report): a panic in the unary fast path")),
        }
    }
    let out = run(py, t.numel(), move || unops::unary(op, &t))?;
    wrap(py, out)
}

#[pyfunction]
pub fn unary_(py: Python<'_>, x: &Bound<'_, TensorBase>, op: &str) -> PyResult<Py<PyAny>> {
    let op = unary_op(op)?;
    let t = x.borrow().t.clone();
    run(py, t.numel(), move || unops::unary_(op, &t))?;
    Ok(x.clone().into_any().unbind())
}

fn alpha_of(alpha: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Scalar>> {
    match alpha {
        None => Ok(None),
        Some(a) => to_scalar(a)?
            .map(Some)
            .ok_or_else(|| type_err(format!("{}(): argument 'alpha' must be Number, not {}", name, crate::convert::type_name(a)))),
    }
}

/// `op(a, b)` where either side may be a number (reflected operators pass the number first).
/// `name` is the public name errors are worded with (`floor_divide`, not the kernel's name).
#[pyfunction]
#[pyo3(signature = (a, b, op, alpha=None, name=None))]
pub fn binary(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, op: &str, alpha: Option<&Bound<'_, PyAny>>, name: Option<&str>) -> PyResult<Py<PyAny>> {
    let op_name = op;
    let name = name.unwrap_or(op);
    let op = binary_op(op)?;
    if op_name != "floor_divide" {
        if let Some(out) = binary_small(py, a, b, op, alpha)? {
            return wrap(py, out);
        }
    }
    let (x, y) = (to_arg(a, name)?, to_arg(b, name)?);
    let alpha = alpha_of(alpha, name)?;
    let n = work(&x).max(work(&y));
    let floor_divide = op_name == "floor_divide";
    let out = run(py, n, move || if floor_divide { binops::floor_divide(&x, &y) } else { binops::binary(op, &x, &y, alpha) })?;
    wrap(py, out)
}

/// A Python float or int (not bool, not a NumPy scalar) as a core number; None for anything
/// else, which the general path converts or refuses.
fn plain_number(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_exact_instance_of::<pyo3::types::PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    if obj.is_exact_instance_of::<pyo3::types::PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    None
}

fn small_operand<'a>(t: &'a Option<PyRef<'_, TensorBase>>, obj: &Bound<'_, PyAny>) -> Option<binops::Operand<'a>> {
    match t {
        Some(t) => Some(binops::Operand::Tensor(&t.t)),
        None => plain_number(obj).map(binops::Operand::Number),
    }
}

/// Whether a small call may borrow the Python objects' tensors for the whole core call instead
/// of copying their handles out (`binops::binary_operands`): it never releases the GIL, and no
/// Python code runs inside it that could want one of them mutably (`x.data = y`): anomaly mode
/// (traces) and saved-tensor hooks call into Python while an op records, so they take the
/// general path.
fn may_borrow(numel: usize) -> bool {
    use minigrad_core::autograd::{mode, saved_hooks};
    numel < crate::errors::GIL_RELEASE_ELEMS && !mode::is_anomaly_enabled() && saved_hooks::current().is_none()
}

/// A small call's alpha: absent, or a plain number (anything else takes the general path,
/// which words its errors).
fn small_alpha(alpha: Option<&Bound<'_, PyAny>>) -> Option<Option<Scalar>> {
    match alpha {
        None => Some(None),
        Some(a) => plain_number(a).map(Some),
    }
}

/// `binary` on the Python objects' own tensors, borrowed rather than copied out (the core's
/// small-call fast path then allocates only the result and its node). None when it does not
/// apply.
fn binary_small(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, op: BinaryOp, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    let (ta, tb) = (a.cast::<TensorBase>().ok().map(|t| t.borrow()), b.cast::<TensorBase>().ok().map(|t| t.borrow()));
    let (Some(x), Some(y), Some(alpha)) = (small_operand(&ta, a), small_operand(&tb, b), small_alpha(alpha)) else { return Ok(None) };
    let numel = |o: &binops::Operand<'_>| o.tensor().map_or(1, |t| t.numel());
    if numel(&x).max(numel(&y)) >= crate::errors::GIL_RELEASE_ELEMS {
        return Ok(None); // the core's fast path takes it too, through `run`, GIL released
    }
    // Nothing to record and the core's fast path takes it: no warnings can be queued, so the
    // call skips `run` (a third of this path's cost for a one-element add).
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| binops::binary_unrecorded(op, x, y, alpha))) {
        Ok(Ok(Some(out))) => return Ok(Some(out)),
        Ok(Ok(None)) => {}
        Ok(Err(e)) => return Err(to_py(e)),
        Err(_) => return Err(pyo3::exceptions::PyRuntimeError::new_err("minigrad internal error (please report): a panic in the binary fast path")),
    }
    if !may_borrow(numel(&x).max(numel(&y))) {
        return Ok(None);
    }
    run(py, 0, move || binops::binary_operands(op, x, y, alpha)).map(Some)
}

/// `binary_` on the Python objects' own tensors (see `binary_small`); false when it does not
/// apply and nothing ran.
fn binary_small_(py: Python<'_>, a: &Bound<'_, TensorBase>, b: &Bound<'_, PyAny>, op: BinaryOp, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let ta = a.borrow();
    let tb = b.cast::<TensorBase>().ok().map(|t| t.borrow());
    let (Some(y), Some(alpha)) = (small_operand(&tb, b), small_alpha(alpha)) else { return Ok(false) };
    if !may_borrow(ta.t.numel()) {
        return Ok(false);
    }
    let x = &ta.t;
    run(py, 0, move || binops::binary_operand_(op, x, y, alpha))?;
    Ok(true)
}

#[pyfunction]
#[pyo3(signature = (a, b, op, alpha=None, name=None))]
pub fn binary_(py: Python<'_>, a: &Bound<'_, TensorBase>, b: &Bound<'_, PyAny>, op: &str, alpha: Option<&Bound<'_, PyAny>>, name: Option<&str>) -> PyResult<Py<PyAny>> {
    // `floor_divide` (not `div_floor`, div's rounding mode) has no derivative in torch
    let floor_divide = op == "floor_divide";
    let name = match name {
        Some(n) => std::borrow::Cow::Borrowed(n),
        None => std::borrow::Cow::Owned(format!("{}_", op)),
    };
    let name = name.as_ref();
    let op = binary_op(op)?;
    if !floor_divide && binary_small_(py, a, b, op, alpha)? {
        return Ok(a.clone().into_any().unbind());
    }
    let y = to_arg(b, name)?;
    let alpha = alpha_of(alpha, name)?;
    let t = a.borrow().t.clone();
    run(py, t.numel(), move || if floor_divide { binops::floor_divide_(&t, &y) } else { binops::binary_(op, &t, &y, alpha) })?;
    Ok(a.clone().into_any().unbind())
}

#[pyfunction]
#[pyo3(name = "where")]
pub fn where_(py: Python<'_>, cond: &Bound<'_, PyAny>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let c = tensor_of(cond, "where(): argument 'condition' (position 1)")?;
    let (x, y) = (to_arg(a, "where")?, to_arg(b, "where")?);
    let n = c.numel();
    let out = run(py, n, move || binops::where_(&c, &x, &y))?;
    wrap(py, out)
}

/// A clamp bound as torch's argument parser sees it.
enum ClampBound {
    None,
    Tensor(Tensor),
    Number(Scalar),
}

fn clamp_bound(v: Option<&Bound<'_, PyAny>>) -> PyResult<ClampBound> {
    match v {
        None => Ok(ClampBound::None),
        Some(o) if o.is_none() => Ok(ClampBound::None),
        Some(o) => match to_arg(o, "clamp") {
            Ok(Arg::Tensor(t)) => Ok(ClampBound::Tensor(t)),
            Ok(Arg::Scalar(s)) => Ok(ClampBound::Number(s)),
            Err(_) => Err(type_err(format!("clamp(): argument 'min' must be Tensor or Number, not {}", crate::convert::type_name(o)))),
        },
    }
}

/// `clamp`, `clamp_min`, `clamp_max` (and `_` forms). Like torch, tensor bounds (and None) pick
/// the tensor overload; otherwise bounds are numbers, where a 0-d tensor counts as its value.
#[pyfunction]
#[pyo3(signature = (x, min=None, max=None, inplace=false, name="clamp"))]
pub fn clamp(py: Python<'_>, x: &Bound<'_, TensorBase>, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>, inplace: bool, name: &str) -> PyResult<Py<PyAny>> {
    let (lo, hi) = (clamp_bound(min)?, clamp_bound(max)?);
    let t = x.borrow().t.clone();
    let is_tensor = |b: &ClampBound| matches!(b, ClampBound::Tensor(_));
    let tensor_overload = (is_tensor(&lo) || is_tensor(&hi)) && !matches!(lo, ClampBound::Number(_)) && !matches!(hi, ClampBound::Number(_));
    let out = if tensor_overload {
        let as_t = |b: ClampBound| match b {
            ClampBound::Tensor(t) => Some(t),
            _ => None,
        };
        let (lo, hi) = (as_t(lo), as_t(hi));
        let node = match (name, lo.is_some(), hi.is_some()) {
            ("clamp_min", _, _) => "ClampMinBackward1",
            ("clamp_max", _, _) => "ClampMaxBackward1",
            _ => "ClampBackward0",
        };
        run(py, t.numel(), move || binops::clamp_tensor(&t, lo.as_ref(), hi.as_ref(), inplace, node))?
    } else {
        let mut kinds = Vec::new();
        let mut as_s = |b: ClampBound| -> PyResult<Option<Scalar>> {
            match b {
                ClampBound::None => {
                    kinds.push("NoneType");
                    Ok(None)
                }
                ClampBound::Number(s) => {
                    kinds.push(match s { Scalar::Bool(_) => "bool", Scalar::Int(_) => "int", Scalar::Float(_) => "float" });
                    Ok(Some(s))
                }
                ClampBound::Tensor(t) if t.ndim() == 0 => {
                    kinds.push("Tensor");
                    Ok(Some(t.item().map_err(crate::errors::to_py)?))
                }
                ClampBound::Tensor(_) => {
                    kinds.push("Tensor!");
                    Ok(None)
                }
            }
        };
        let (lo, hi) = (as_s(lo)?, as_s(hi)?);
        if kinds.contains(&"Tensor!") {
            // torch's argument-parser message for positional `x.clamp(lo, hi)`
            let got: Vec<&str> = kinds.iter().map(|k| k.trim_end_matches('!')).collect();
            let marked: Vec<String> = got.iter().map(|k| format!("!{}!", k)).collect();
            let why = format!("      didn't match because some of the arguments have invalid types: ({})\n", marked.join(", "));
            return Err(type_err(format!(
                "{}{}() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor min = None, Tensor max = None)\n{} * (Number min = None, Number max = None)\n{}",
                name,
                if inplace { "_" } else { "" },
                got.join(", "),
                why,
                why
            )));
        }
        let node = match name {
            "clamp_min" => "ClampMinBackward0",
            "clamp_max" => "ClampMaxBackward0",
            _ => "ClampBackward1",
        };
        run(py, t.numel(), move || binops::clamp_scalar(&t, lo, hi, inplace, node))?
    };
    if inplace {
        return Ok(x.clone().into_any().unbind());
    }
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (x, mask, value, inplace=false))]
pub fn masked_fill(py: Python<'_>, x: &Bound<'_, TensorBase>, mask: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let m = tensor_of(mask, "masked_fill(): argument 'mask' (position 1)")?;
    let v = to_arg(value, "masked_fill")?;
    let t = x.borrow().t.clone();
    let out = run(py, t.numel(), move || binops::masked_fill(&t, &m, &v, inplace))?;
    if inplace {
        return Ok(x.clone().into_any().unbind());
    }
    wrap(py, out)
}

/// `fill_(value)`: value is a number or a 0-d tensor.
#[pyfunction]
pub fn fill_(py: Python<'_>, x: &Bound<'_, TensorBase>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let t = x.borrow().t.clone();
    match to_arg(value, "fill_")? {
        Arg::Scalar(v) => run(py, t.numel(), move || copy::fill_(&t, v))?,
        Arg::Tensor(v) => run(py, t.numel(), move || copy::fill_tensor_(&t, &v))?,
    };
    Ok(x.clone().into_any().unbind())
}

#[pyfunction]
pub fn zero_(py: Python<'_>, x: &Bound<'_, TensorBase>) -> PyResult<Py<PyAny>> {
    let t = x.borrow().t.clone();
    run(py, t.numel(), move || copy::zero_(&t))?;
    Ok(x.clone().into_any().unbind())
}

/// `copy_(src)`: broadcasts src to self's shape and casts to self's dtype.
#[pyfunction]
#[pyo3(signature = (x, src, non_blocking=false))]
pub fn copy_(py: Python<'_>, x: &Bound<'_, TensorBase>, src: &Bound<'_, PyAny>, non_blocking: bool) -> PyResult<Py<PyAny>> {
    let _ = non_blocking;
    let s = match to_arg(src, "copy_")? {
        Arg::Tensor(t) => t,
        // torch's parser turns a number into a 0-d tensor here
        Arg::Scalar(s) => Tensor::scalar(s, s.wrapped_dtype()).map_err(to_py)?,
    };
    let t = x.borrow().t.clone();
    run(py, t.numel(), move || copy::copy_(&t, &s))?;
    Ok(x.clone().into_any().unbind())
}

/// `to(dtype)` / `float()` ...: the same object when nothing changes (R6).
#[pyfunction]
#[pyo3(signature = (x, dtype, copy=false))]
pub fn to_dtype_(py: Python<'_>, x: &Bound<'_, TensorBase>, dtype: &Bound<'_, PyAny>, copy: bool) -> PyResult<Py<PyAny>> {
    let d = to_dtype(Some(dtype))?.unwrap_or(x.borrow().t.dtype());
    let t = x.borrow().t.clone();
    if d == t.dtype() && !copy {
        return Ok(x.clone().into_any().unbind());
    }
    let out = run(py, t.numel(), move || if copy && d == t.dtype() { copy::clone(&t) } else { copy::to_dtype(&t, d) })?;
    wrap(py, out)
}

/// Parameterised float maps: leaky_relu, elu, celu (param: slope / alpha) and selu (param
/// unused: torch's constants), with an inplace flag.
#[pyfunction]
#[pyo3(signature = (x, op, param, inplace=false))]
pub fn param_unary(py: Python<'_>, x: &Bound<'_, TensorBase>, op: &str, param: f64, inplace: bool) -> PyResult<Py<PyAny>> {
    let t = x.borrow().t.clone();
    let name = op.to_string();
    let out = run(py, t.numel(), move || -> minigrad_core::Result<Tensor> {
        match name.as_str() {
            "leaky_relu" => unops::param_unary(unops::ParamUnary::LeakyRelu(param), &t, inplace),
            "elu" => unops::param_unary(unops::ParamUnary::elu(param), &t, inplace),
            "selu" => unops::param_unary(unops::ParamUnary::selu(), &t, inplace),
            "celu" if param == 0.0 => Err(Error::Runtime("ZeroDivisionError: alpha cannot be 0 for CELU".into())),
            "celu" => unops::param_unary(unops::ParamUnary::Celu(param), &t, inplace),
            other => Err(Error::Type(format!("unknown op {}", other))),
        }
    })?;
    if inplace {
        return Ok(x.clone().into_any().unbind());
    }
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(unary, m)?)?;
    m.add_function(wrap_pyfunction!(unary_, m)?)?;
    m.add_function(wrap_pyfunction!(binary, m)?)?;
    m.add_function(wrap_pyfunction!(binary_, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(clamp, m)?)?;
    m.add_function(wrap_pyfunction!(masked_fill, m)?)?;
    m.add_function(wrap_pyfunction!(fill_, m)?)?;
    m.add_function(wrap_pyfunction!(zero_, m)?)?;
    m.add_function(wrap_pyfunction!(copy_, m)?)?;
    m.add_function(wrap_pyfunction!(to_dtype_, m)?)?;
    m.add_function(wrap_pyfunction!(param_unary, m)?)?;
    Ok(())
}
