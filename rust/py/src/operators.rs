//! The Python operators of `Tensor` (`x + y`, `2 - x`, `x += y`, `x == y`, ...) as Rust methods.
//!
//! They are ordinary methods of `TensorBase` under private names (`_op_add`, ...), which
//! python/minigrad/_ops/elementwise.py installs on `Tensor` as `__add__`, `__radd__`, ... (a
//! `__add__` written here would become a C slot, whose direct calls answer wrong arguments with a
//! TypeError instead of torch's NotImplemented). Installed so, `x + y` costs what torch's does:
//! the interpreter's slot looks the method up and calls it, with no Python frame in between.
//!
//! Each answers NotImplemented, as torch's do, when called without exactly one operand or when
//! the operand is of a type it cannot take (the op's TypeError), so Python can try the other
//! operand and word the final TypeError itself; every other error propagates.

use crate::elementwise::{binary, binary_, unary};
use crate::tensor::TensorBase;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Which call of the op an operator makes.
#[derive(Clone, Copy)]
enum Form {
    /// `self op other`
    Forward,
    /// `other op self` (`__r*__`)
    Reflected,
    /// `self op= other` (`__i*__`), returning self
    InPlace,
}

/// One operator call with the rules above.
fn operator(slf: &Bound<'_, TensorBase>, other: Option<&Bound<'_, PyAny>>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>, op: &str, form: Form) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let not_implemented = || py.NotImplemented();
    let Some(other) = other else { return Ok(not_implemented()) };
    if !args.is_empty() || kwargs.is_some_and(|k| !k.is_empty()) {
        return Ok(not_implemented());
    }
    let this = slf.as_any();
    let out = match form {
        Form::Forward => binary(py, this, other, op, None, None),
        // torch computes `number / x` as `x.reciprocal() * number`
        Form::Reflected if op == "div" => unary(py, slf, "reciprocal").and_then(|r| binary(py, r.bind(py), other, "mul", None, None)),
        Form::Reflected => binary(py, other, this, op, None, None),
        Form::InPlace => binary_(py, slf, other, op, None, None),
    };
    match out {
        Err(e) if e.is_instance_of::<PyTypeError>(py) => Ok(not_implemented()),
        out => out,
    }
}

/// Defines `_op_<name>`, `_op_r<name>` and `_op_i<name>` for one operator.
macro_rules! operators {
    ($($fwd:ident, $rev:ident, $inp:ident => $op:literal;)*) => {
        #[pymethods]
        impl TensorBase {
            $(
                #[pyo3(signature = (other=None, *args, **kwargs))]
                fn $fwd(slf: &Bound<'_, Self>, other: Option<&Bound<'_, PyAny>>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
                    operator(slf, other, args, kwargs, $op, Form::Forward)
                }
                #[pyo3(signature = (other=None, *args, **kwargs))]
                fn $rev(slf: &Bound<'_, Self>, other: Option<&Bound<'_, PyAny>>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
                    operator(slf, other, args, kwargs, $op, Form::Reflected)
                }
                #[pyo3(signature = (other=None, *args, **kwargs))]
                fn $inp(slf: &Bound<'_, Self>, other: Option<&Bound<'_, PyAny>>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
                    operator(slf, other, args, kwargs, $op, Form::InPlace)
                }
            )*
        }
    };
}

operators! {
    _op_add, _op_radd, _op_iadd => "add";
    _op_sub, _op_rsub, _op_isub => "sub";
    _op_mul, _op_rmul, _op_imul => "mul";
    _op_truediv, _op_rtruediv, _op_itruediv => "div";
    _op_floordiv, _op_rfloordiv, _op_ifloordiv => "floor_divide";
    _op_mod, _op_rmod, _op_imod => "remainder";
    _op_pow, _op_rpow, _op_ipow => "pow";
    _op_and, _op_rand, _op_iand => "bitwise_and";
    _op_or, _op_ror, _op_ior => "bitwise_or";
    _op_xor, _op_rxor, _op_ixor => "bitwise_xor";
}

/// Defines `_op_<name>` for the comparisons (no reflected or in-place form).
macro_rules! comparisons {
    ($($name:ident => $op:literal;)*) => {
        #[pymethods]
        impl TensorBase {
            $(
                #[pyo3(signature = (other=None, *args, **kwargs))]
                fn $name(slf: &Bound<'_, Self>, other: Option<&Bound<'_, PyAny>>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
                    operator(slf, other, args, kwargs, $op, Form::Forward)
                }
            )*
        }
    };
}

comparisons! {
    _op_eq => "eq";
    _op_ne => "ne";
    _op_lt => "lt";
    _op_le => "le";
    _op_gt => "gt";
    _op_ge => "ge";
}
