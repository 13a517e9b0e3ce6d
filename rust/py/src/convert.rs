//! Python values <-> core values: tensors, numbers, shapes, dims, dtypes.

use crate::dtype::PyDType;
use crate::errors::type_err;
use crate::tensor::TensorBase;
use minigrad_core::ops::Arg;
use minigrad_core::{DType, Scalar, Tensor};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PySequence, PyTuple, PyType};
use std::cell::RefCell;

/// The Python `minigrad.Tensor` class (a subclass of TensorBase), registered at import.
static TENSOR_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// `minigrad.Size`, the tuple subclass `shape`/`size()` return.
static SIZE_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

thread_local! {
    /// The core tensor the next `TensorBase.__new__` on this thread adopts.
    pub static PENDING: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

#[pyfunction]
pub fn _set_classes(py: Python<'_>, tensor: Bound<'_, PyType>, size: Bound<'_, PyType>) -> PyResult<()> {
    if !tensor.is_subclass_of::<TensorBase>()? {
        return Err(type_err("_set_classes: the tensor class must subclass TensorBase"));
    }
    let _ = TENSOR_CLASS.set(py, tensor.unbind());
    let _ = SIZE_CLASS.set(py, size.unbind());
    Ok(())
}

/// torch's `Tensor._make_subclass(cls, data, requires_grad)`: an object of class `cls` (e.g.
/// `nn.Parameter`) over `data.detach()` — same memory, same version counter — as a leaf.
#[pyfunction]
pub fn _make_subclass(py: Python<'_>, cls: Bound<'_, PyType>, data: &Bound<'_, TensorBase>, requires_grad: bool) -> PyResult<Py<PyAny>> {
    let t = data.borrow().t.alias();
    if requires_grad {
        if !t.dtype().is_floating() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("Only Tensors of floating point and complex dtype can require gradients"));
        }
        t.set_requires_grad(true, minigrad_core::autograd::meta::RequiresGradEntry::Method).map_err(crate::errors::to_py)?;
    }
    // TensorBase.__new__(cls) adopts PENDING without running the subclass's own __new__
    // (Parameter.__new__ is what called us).
    let meta = t.meta.clone();
    PENDING.with(|p| *p.borrow_mut() = Some(t));
    let obj = py.get_type::<TensorBase>().getattr("__new__")?.call1((cls,))?;
    adopt(&obj, &meta);
    Ok(obj.unbind())
}

/// The Python object for a core tensor: the one already made for this tensor if it is still
/// alive (its address is kept in the tensor's autograd meta), so a tensor met twice is one
/// object (`x.grad is x.grad`, `v._base is x`); otherwise a new `minigrad.Tensor`.
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    let existing = t.meta.lock().py_object;
    if existing != 0 {
        // SAFETY: the slot holds the address of a live TensorBase object: it is set below when
        // the object is made and cleared by that object's Drop (both under the GIL), so a
        // non-zero value always names a live object; we take a new strong reference to it.
        let obj = unsafe { Bound::<PyAny>::from_borrowed_ptr(py, existing as *mut pyo3::ffi::PyObject).unbind() };
        return Ok(obj);
    }
    let cls = TENSOR_CLASS.get(py).ok_or_else(|| type_err("minigrad._C used before minigrad was imported"))?;
    wrap_as(t, cls.bind(py))
}

/// A new Python object of class `cls` (a TensorBase subclass) for a core tensor not yet wrapped.
///
/// `minigrad.Tensor` defines neither `__new__` nor `__init__`, so calling the class would only
/// run `TensorBase.__new__` (argument parsing, PENDING) and `object.__init__`. The object is
/// made the way that `__new__` makes it instead, by pyo3's own `tp_new` helper (about a tenth
/// of a one-element `x + y`'s cost; issue 13). pyo3 keeps that helper public for the code its
/// macros generate; if a pyo3 upgrade changes it, this is the one place to adapt.
fn wrap_as(t: Tensor, cls: &Bound<'_, PyType>) -> PyResult<Py<PyAny>> {
    let meta = t.meta.clone();
    if plain_new(cls) {
        let init = pyo3::PyClassInitializer::from(TensorBase { t, self_addr: 0 });
        // SAFETY: `cls` is the registered `minigrad.Tensor`, a subclass of TensorBase (checked
        // at registration), which is what `tp_new_impl` requires of its type argument.
        let ptr = unsafe { pyo3::impl_::pymethods::tp_new_impl::<_, TensorBase>(cls.py(), init, cls.as_ptr() as *mut pyo3::ffi::PyTypeObject)? };
        // SAFETY: a new, owned reference to the object just made.
        let obj = unsafe { Bound::from_owned_ptr(cls.py(), ptr) };
        adopt(&obj, &meta);
        return Ok(obj.unbind());
    }
    PENDING.with(|p| *p.borrow_mut() = Some(t));
    let obj = cls.call0()?;
    adopt(&obj, &meta);
    Ok(obj.unbind())
}

/// Whether making an object of `cls` runs nothing but TensorBase's `__new__` and object's
/// `__init__` (no subclass defines either), so `wrap_as` may make it directly.
fn plain_new(cls: &Bound<'_, PyType>) -> bool {
    let py = cls.py();
    let Some(tensor) = TENSOR_CLASS.get(py) else { return false };
    if cls.as_ptr() != tensor.as_ptr() {
        return false;
    }
    let base = py.get_type::<TensorBase>();
    // SAFETY: both are live type objects (held by `cls`, the registered class, and pyo3).
    unsafe {
        let (tp, bp) = (cls.as_ptr() as *mut pyo3::ffi::PyTypeObject, base.as_ptr() as *mut pyo3::ffi::PyTypeObject);
        // (slots compared as addresses: the inherited slot is the very same pointer)
        let addr = |f: Option<*const ()>| f.map_or(0, |f| f as usize);
        addr((*tp).tp_new.map(|f| f as *const ())) == addr((*bp).tp_new.map(|f| f as *const ()))
            && addr((*tp).tp_init.map(|f| f as *const ())) == addr(pyo3::ffi::PyBaseObject_Type.tp_init.map(|f| f as *const ()))
    }
}

/// Records `obj` as the one Python object of its core tensor (see `wrap`).
fn adopt(obj: &Bound<'_, PyAny>, meta: &minigrad_core::autograd::meta::MetaRef) {
    let addr = obj.as_ptr() as usize;
    if let Ok(b) = obj.cast::<TensorBase>() {
        b.borrow_mut().self_addr = addr;
    }
    meta.lock().py_object = addr;
}

/// Kept for call sites that wrap views: the base is now recorded in the core tensor itself.
pub fn wrap_view(py: Python<'_>, t: Tensor, _of: &Bound<'_, TensorBase>) -> PyResult<Py<PyAny>> {
    wrap(py, t)
}

/// A `minigrad.Size` of `dims`, built as `tuple.__new__(Size, dims)` builds it (what
/// `Size.__new__` returns for ints) without running `Size.__new__`'s Python frame: `x.shape`
/// is read in every shape check, so this is a per-op cost.
pub fn make_size(py: Python<'_>, dims: &[usize]) -> PyResult<Py<PyAny>> {
    let Some(cls) = SIZE_CLASS.get(py) else { return Ok(PyTuple::new(py, dims)?.into_any().unbind()) };
    let tp = cls.as_ptr() as *mut pyo3::ffi::PyTypeObject;
    // SAFETY: `cls` is the registered `Size`, a tuple subclass with `__slots__ = ()`, so its
    // instances are tuples: `tp_alloc(cls, n)` gives one of length n with zeroed (null) items,
    // owned by us, into which `PyTuple_SET_ITEM` moves one new reference per slot, exactly as
    // CPython's `tuple_subtype_new` fills it (a tuple may be freed with null items left).
    unsafe {
        let alloc = (*tp).tp_alloc.unwrap_or(pyo3::ffi::PyType_GenericAlloc);
        let obj = alloc(tp, dims.len() as pyo3::ffi::Py_ssize_t);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let obj = Bound::from_owned_ptr(py, obj);
        for (i, &d) in dims.iter().enumerate() {
            pyo3::ffi::PyTuple_SET_ITEM(obj.as_ptr(), i as pyo3::ffi::Py_ssize_t, d.into_pyobject(py)?.into_ptr());
        }
        Ok(obj.unbind())
    }
}

/// A Python number as a core scalar (bool before int: bool is an int subclass).
pub fn to_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        // (torch also takes [2**63, 2**64) as an unsigned scalar; minigrad refuses every int
        // outside int64, with torch's error for the ones beyond that)
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Some(Scalar::Int(v))),
            Err(_) => Err(pyo3::exceptions::PyOverflowError::new_err("int too big to convert")),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    // NumPy scalars and other number-likes (an ndarray is neither, even a 0-d one).
    if type_name(obj) == "numpy.ndarray" {
        return Ok(None);
    }
    let tname = crate::convert::type_name(obj).to_string();
    if tname.starts_with("bool") {
        return Ok(Some(Scalar::Bool(obj.is_truthy()?)));
    }
    if obj.hasattr("__index__")? && !obj.is_instance_of::<TensorBase>() {
        return Ok(Some(Scalar::Int(obj.call_method0("__index__")?.extract()?)));
    }
    if obj.hasattr("__float__")? && !obj.is_instance_of::<TensorBase>() {
        return Ok(Some(Scalar::Float(obj.call_method0("__float__")?.extract()?)));
    }
    Ok(None)
}

/// A tensor or number argument; anything else is a TypeError naming the op.
pub fn to_arg(obj: &Bound<'_, PyAny>, op: &str) -> PyResult<Arg> {
    if let Ok(t) = obj.cast::<TensorBase>() {
        return Ok(Arg::Tensor(t.borrow().t.clone()));
    }
    match to_scalar(obj)? {
        Some(s) => Ok(Arg::Scalar(s)),
        None => Err(type_err(format!(
            "{}(): argument 'other' (position 1) must be Tensor, not {}",
            op,
            crate::convert::type_name(obj)
        ))),
    }
}

pub fn tensor_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    match obj.cast::<TensorBase>() {
        Ok(t) => Ok(t.borrow().t.clone()),
        Err(_) => Err(type_err(format!("{} must be Tensor, not {}", what, crate::convert::type_name(obj)))),
    }
}

pub fn to_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match o.extract::<PyDType>() {
            Ok(d) => Ok(Some(d.d)),
            Err(_) => Err(type_err(format!("dtype must be minigrad.dtype, not {}", crate::convert::type_name(o)))),
        },
    }
}

/// True for what torch's parser takes as an `int`: a Python int (not bool), a NumPy integer, or a
/// 0-d integer tensor.
pub fn is_int_like(obj: &Bound<'_, PyAny>) -> bool {
    if obj.is_instance_of::<PyBool>() {
        return false;
    }
    if obj.is_instance_of::<PyInt>() {
        return true;
    }
    if let Ok(t) = obj.cast::<TensorBase>() {
        let t = &t.borrow().t;
        return t.ndim() == 0 && t.dtype().is_integral(false);
    }
    // NumPy integers register as numbers.Integral (NumPy bools do not)
    obj.py()
        .import("numbers")
        .and_then(|m| m.getattr("Integral"))
        .and_then(|integral| obj.is_instance(&integral))
        .unwrap_or(false)
}

fn int_value(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(t) = obj.cast::<TensorBase>() {
        return Ok(t.borrow().t.item().map_err(crate::errors::to_py)?.to_i64());
    }
    obj.call_method0("__index__")?.extract()
}

/// The type's name as torch's messages print it (C's `tp_name`: "str", "numpy.ndarray").
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj.get_type();
    let name = ty.name().map(|n| n.to_string()).unwrap_or_default();
    match ty.module().map(|m| m.to_string()) {
        Ok(m) if m != "builtins" => format!("{}.{}", m, name),
        _ => name,
    }
}

/// An `int` argument, or torch's TypeError: "transpose(): argument 'dim0' (position 1) must be
/// int, not float".
pub fn int_arg(obj: &Bound<'_, PyAny>, func: &str, arg: &str, pos: usize) -> PyResult<i64> {
    if is_int_like(obj) {
        return int_value(obj);
    }
    Err(type_err(format!("{}(): argument '{}' (position {}) must be int, not {}", func, arg, pos, type_name(obj))))
}

/// An optional `int` argument (None is absent).
pub fn opt_int_arg(obj: Option<&Bound<'_, PyAny>>, func: &str, arg: &str, pos: usize) -> PyResult<Option<i64>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => int_arg(o, func, arg, pos).map(Some),
    }
}

fn unpack_ints<'py>(items: impl Iterator<Item = PyResult<Bound<'py, PyAny>>>, func: &str, arg: &str) -> PyResult<Vec<i64>> {
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
        if !is_int_like(&item) && !(item.is_instance_of::<PyBool>()) {
            return Err(type_err(format!(
                "{}(): argument '{}' failed to unpack the object at pos {} with error \"type must be tuple of ints,but got {}\"",
                func,
                arg,
                i + 1,
                type_name(&item)
            )));
        }
        out.push(int_value(&item)?);
    }
    Ok(out)
}

/// A `tuple of ints` argument (one int also counts), or torch's TypeErrors.
pub fn int_list_arg(obj: &Bound<'_, PyAny>, func: &str, arg: &str, pos: usize) -> PyResult<Vec<i64>> {
    if is_int_like(obj) {
        return Ok(vec![int_value(obj)?]);
    }
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() || obj.is_instance_of::<TensorBase>() == false && obj.cast::<PySequence>().is_ok() && !obj.is_instance_of::<pyo3::types::PyString>() {
        return unpack_ints(obj.try_iter()?, func, arg);
    }
    Err(type_err(format!("{}(): argument '{}' (position {}) must be tuple of ints, not {}", func, arg, pos, type_name(obj))))
}

/// Sizes given either as varargs (`view(2, 3)`) or as one sequence (`view((2, 3))`).
pub fn sizes_arg(args: &Bound<'_, PyTuple>, func: &str, arg: &str) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        return int_list_arg(&args.get_item(0)?, func, arg, 1);
    }
    unpack_ints(args.iter().map(Ok), func, arg)
}

/// `sizes_arg` without names for the messages.
pub fn sizes_from_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    sizes_arg(args, "size", "size")
}

/// `int_list_arg` without names for the messages (for op families that have not named theirs).
#[allow(dead_code)]
pub fn int_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    int_list_arg(obj, "size", "size", 1)
}

/// Non-negative sizes for factories (`zeros(2, -1)` raises torch's message).
pub fn shape_from_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    let sizes = sizes_from_args(args)?;
    sizes
        .iter()
        .map(|&s| {
            if s < 0 {
                Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "Trying to create tensor with negative dimension {}: [{}]",
                    s,
                    sizes.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
                )))
            } else {
                Ok(s as usize)
            }
        })
        .collect()
}

pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}
