//! Indexing keys: `x[key]` and `x[key] = value`, following torch's rules step by step
//! (`THPVariable_getitem`/`setitem`, `at::indexing::applySlicing`).
//!
//! A key is read left to right. Ints, slices, `None`, `...` and 0-d integer tensors change the
//! layout (a view); tensors, lists and bools are *recorded* as advanced indices, which
//! `ops::advanced` then applies: a copy on read, `index_put_` on write.

use crate::dtype::{DType, Scalar};
use crate::error::{fmt_shape, Error, Result};
use crate::layout::Layout;
use crate::ops::advanced;
use crate::ops::views;
use crate::ops::write::{write, Alias};
use crate::tensor::Tensor;

/// One item of a key, as torch's `TensorIndex`.
#[derive(Debug, Clone)]
pub enum TensorIndex {
    Int(i64),
    /// start/stop/step as Python unpacks them (`None` already replaced, huge values clamped).
    Slice { start: i64, stop: i64, step: i64 },
    None,
    Ellipsis,
    Bool(bool),
    Tensor(Tensor),
    /// An item that could not be converted (a bad list, an unsupported type). torch converts
    /// items while it walks the key, so the error is raised only when the walk reaches it.
    Invalid(Error),
}

/// A whole key. torch takes shortcuts for a bare int, slice, `None`, `...` or bool; everything
/// else (tuples, tensors, lists) is walked as a tuple of items.
#[derive(Debug, Clone)]
pub enum Key {
    Single(TensorIndex),
    Tuple(Vec<TensorIndex>),
}

/// What `x[key]` gives: a view of `x` (basic keys) or a new tensor (advanced keys).
#[derive(Debug)]
pub enum Indexed {
    View(Tensor),
    Copy(Tensor),
}

impl TensorIndex {
    /// How many dims of the indexed tensor this item consumes (torch's
    /// `count_specified_dimensions`): a bool mask consumes its own rank.
    fn specified_dims(&self) -> usize {
        match self {
            TensorIndex::None | TensorIndex::Ellipsis | TensorIndex::Bool(_) => 0,
            TensorIndex::Tensor(t) if t.dtype() == DType::Bool => t.ndim(),
            _ => 1,
        }
    }
}

/// `x[key]`.
pub fn get_item_raw(x: &Tensor, key: &Key) -> Result<Indexed> {
    match key {
        Key::Single(TensorIndex::Int(i)) => Ok(Indexed::View(x.view_as_layout(select(&x.layout, 0, *i, 0)?))),
        Key::Single(TensorIndex::Slice { start, stop, step }) => {
            Ok(Indexed::View(x.view_as_layout(slice(&x.layout, 0, *start, *stop, *step)?)))
        }
        Key::Single(TensorIndex::None) => Ok(Indexed::View(x.view_as_layout(x.layout.unsqueeze(0)?))),
        Key::Single(TensorIndex::Ellipsis) => Ok(Indexed::View(x.view_as_layout(x.layout.clone()))),
        Key::Single(TensorIndex::Bool(b)) => {
            let v = x.view_as_layout(x.layout.unsqueeze(0)?);
            Ok(Indexed::Copy(advanced::index_raw(&v, &[Some(bool_index(*b)?)])?))
        }
        Key::Single(item) => get_item_raw(x, &Key::Tuple(vec![item.clone()])),
        Key::Tuple(items) => {
            let (layout, indices, _) = apply_slicing(x, items)?;
            let sliced = x.view_as_layout(layout);
            if indices.is_empty() {
                return Ok(Indexed::View(sliced));
            }
            Ok(Indexed::Copy(advanced::index_raw(&sliced, trim(&indices))?))
        }
    }
}

/// `x[key] = value`, where `value` is already a tensor (numbers arrive as 0-d tensors of x's
/// dtype). Each path is one in-place op, so the version counter moves by exactly one (R1).
pub fn set_item_raw(x: &Tensor, key: &Key, value: &Tensor) -> Result<()> {
    match key {
        // torch does nothing at all for a bare False (no bump either).
        Key::Single(TensorIndex::Bool(false)) => Ok(()),
        Key::Single(TensorIndex::Ellipsis) => copy_to(&x.view_as_layout(x.layout.clone()), value),
        Key::Single(TensorIndex::None) | Key::Single(TensorIndex::Bool(true)) => {
            copy_to(&x.view_as_layout(x.layout.unsqueeze(0)?), value)
        }
        Key::Single(TensorIndex::Int(i)) => copy_to(&x.view_as_layout(select(&x.layout, 0, *i, 0)?), value),
        Key::Single(TensorIndex::Slice { start, stop, step }) => {
            copy_to(&x.view_as_layout(slice(&x.layout, 0, *start, *stop, *step)?), value)
        }
        Key::Single(item) => set_item_raw(x, &Key::Tuple(vec![item.clone()]), value),
        Key::Tuple(items) => {
            let (layout, indices, _) = apply_slicing(x, items)?;
            let sliced = x.view_as_layout(layout);
            if indices.is_empty() {
                return copy_to(&sliced, value);
            }
            // NumPy compatibility: leading 1s of the value are dropped before broadcasting.
            let stripped = value.view_as_layout(strip_leading_ones(&value.layout));
            advanced::index_put_inplace_raw(&sliced, trim(&indices), &stripped, false)
        }
    }
}

/// Walks a tuple key: basic items reshape the view, tensors are recorded per dim
/// (torch's `applySlicing` + `handleDimInMultiDimIndexing`).
/// Also returns the basic steps that changed the view (torch skips a slice `0:stop:1` with
/// `stop >= size` here), for autograd to record the view and replay it on gradients.
fn apply_slicing(x: &Tensor, items: &[TensorIndex]) -> Result<(Layout, Vec<Option<Tensor>>, Vec<Step>)> {
    let ndim = x.ndim();
    let specified: usize = items.iter().map(TensorIndex::specified_dims).sum();
    if specified > ndim {
        return Err(Error::Index(format!("too many indices for tensor of dimension {}", ndim)));
    }
    let mut layout = x.layout.clone();
    let mut dim = 0usize;
    let mut recorded: Vec<Option<Tensor>> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    for (real_dim, item) in items.iter().enumerate() {
        match item {
            TensorIndex::Int(i) => {
                layout = select(&layout, dim, *i, real_dim)?;
                steps.push(Step::Select(dim, *i));
            }
            TensorIndex::Slice { start, stop, step } => {
                let size = layout.shape.get(dim).map_or_else(|| size_past_end(&layout, dim), |&s| s as i64);
                layout = slice(&layout, dim, *start, *stop, *step)?;
                if !(*start == 0 && *step == 1 && *stop >= size) {
                    steps.push(Step::Slice(dim, *start, *stop, *step));
                }
                dim += 1;
                // Once an index is recorded, later positions are kept relative to it.
                if !recorded.is_empty() {
                    recorded.push(None);
                }
            }
            TensorIndex::Ellipsis => {
                let n = ndim - specified;
                dim += n;
                if !recorded.is_empty() {
                    recorded.extend(std::iter::repeat_n(None, n));
                }
            }
            TensorIndex::None => {
                layout = layout.unsqueeze(dim as i64)?;
                steps.push(Step::Unsqueeze(dim));
                dim += 1;
                if !recorded.is_empty() {
                    recorded.push(None);
                }
            }
            TensorIndex::Bool(b) => {
                layout = layout.unsqueeze(dim as i64)?;
                steps.push(Step::Unsqueeze(dim));
                record(bool_index(*b)?, &mut recorded, &mut dim);
            }
            TensorIndex::Tensor(t) if t.ndim() == 0 && t.dtype().is_integral(true) => {
                // A 0-d integer tensor selects (a view); a 0-d bool acts like a Python bool.
                let v = t.item()?;
                if t.dtype() == DType::Bool {
                    layout = layout.unsqueeze(dim as i64)?;
                    steps.push(Step::Unsqueeze(dim));
                    record(bool_index(v.to_bool())?, &mut recorded, &mut dim);
                } else {
                    layout = select(&layout, dim, v.to_i64(), real_dim)?;
                    steps.push(Step::Select(dim, v.to_i64()));
                }
            }
            TensorIndex::Tensor(t) => record(t.clone(), &mut recorded, &mut dim),
            TensorIndex::Invalid(e) => return Err(e.clone()),
        }
    }
    Ok((layout, recorded, steps))
}

/// torch's `recordTensorIndex`: the first index lands at its dim, later ones follow it; a mask
/// spans as many dims as it has.
fn record(t: Tensor, recorded: &mut Vec<Option<Tensor>>, dim: &mut usize) {
    let span = if t.dtype() == DType::Bool { t.ndim() } else { 1 };
    if recorded.is_empty() {
        recorded.resize(*dim + 1, None);
        recorded[*dim] = Some(t);
    } else {
        recorded.push(Some(t));
    }
    *dim += span;
}

/// Drops trailing `None`s (torch's `dispatch_index`/`dispatch_index_put_`).
fn trim(indices: &[Option<Tensor>]) -> &[Option<Tensor>] {
    let end = indices.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
    &indices[..end]
}

/// A Python bool as an index: `True` is `[0]` on a new size-1 dim, `False` is `[]`.
fn bool_index(b: bool) -> crate::error::Result<Tensor> {
    if b {
        Tensor::zeros(&[1], DType::Int64)
    } else {
        Tensor::empty(&[0], DType::Int64)
    }
}

/// torch's `applySelect`: bounds check with the position in the key as the reported dim.
fn select(layout: &Layout, dim: usize, index: i64, real_dim: usize) -> Result<Layout> {
    if index == 0 && dim == 0 && layout.ndim() == 0 {
        return Err(Error::Index(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number".into(),
        ));
    }
    let size = layout.shape.get(dim).map_or_else(|| size_past_end(layout, dim), |&s| s as i64);
    // `-1 - index` cannot overflow, unlike `-index` for i64::MIN.
    if !(size > index && size > -1 - index) {
        return Err(Error::Index(format!(
            "index {} is out of bounds for dimension {} with size {}",
            index, real_dim, size
        )));
    }
    layout.select(dim as i64, index)
}

/// torch's `applySlice` + `at::slice`: positive steps only, Python clamping of start/stop.
fn slice(layout: &Layout, dim: usize, start: i64, stop: i64, step: i64) -> Result<Layout> {
    if step <= 0 {
        return Err(Error::Value("step must be greater than zero".into()));
    }
    if layout.ndim() == 0 {
        return Err(Error::Index("slice() cannot be applied to a 0-dim tensor.".into()));
    }
    let Some(&size) = layout.shape.get(dim) else {
        // Only repeated `...` get here: torch skips a slice that spans the (misread) size and
        // fails to wrap the dim for any other.
        if start == 0 && step == 1 && size_past_end(layout, dim) <= stop {
            return Ok(layout.clone());
        }
        let n = layout.ndim() as i64;
        return Err(Error::Index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {})",
            -n,
            n - 1,
            dim
        )));
    };
    let size = size as i64;
    let mut s = if start < 0 { start + size } else { start };
    let mut e = if stop < 0 { stop + size } else { stop };
    s = s.clamp(0, size);
    e = e.clamp(s, size);
    let len = if e > s { (e - s - 1) / step + 1 } else { 0 };
    let mut out = layout.clone();
    // A huge step overflows torch's stride product; it reports the wrapped stride.
    out.strides[dim] = layout.strides[dim].wrapping_mul(step as isize);
    if out.strides[dim] < 0 {
        let strides: Vec<String> = out.strides.iter().map(|s| s.to_string()).collect();
        return Err(Error::Runtime(format!(
            "as_strided: Negative strides are not supported at the moment, got strides: [{}]",
            strides.join(", ")
        )));
    }
    out.offset = (layout.offset as isize + s as isize * layout.strides[dim]) as usize;
    out.shape[dim] = len as usize;
    Ok(out)
}

/// What torch 2.13 reads as `sizes[dim]` for a dim past the rank (reachable only with repeated
/// `...`; it reads past the end of its sizes array). Up to 5 dims, sizes and strides sit in two
/// inline arrays of 5 (unused slots zero); beyond that, in one heap array of 2 * ndim.
fn size_past_end(l: &Layout, dim: usize) -> i64 {
    let slots = l.ndim().max(5);
    if dim < slots {
        return 0;
    }
    l.strides.get(dim - slots).map_or(0, |&s| s as i64)
}

/// The value's layout without its leading size-1 dims (torch's `slicePrefix1sSize`).
fn strip_leading_ones(l: &Layout) -> Layout {
    let k = l.shape.iter().position(|&s| s != 1).unwrap_or(l.ndim());
    Layout { shape: l.shape[k..].to_vec(), strides: l.strides[k..].to_vec(), offset: l.offset }
}

/// torch's `copy_to`: a basic-index write is `copy_` of the broadcast value, or `fill_` of a
/// 0-d value.
fn copy_to(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.shape() == src.shape() {
        return copy_(dst, src);
    }
    if src.ndim() == 0 {
        return fill_(dst, src.item()?);
    }
    let stripped = src.view_as_layout(strip_leading_ones(&src.layout));
    if stripped.ndim() > dst.ndim() {
        // Spelled here: torch prints the tensor's sizes in brackets inside the braces.
        return Err(Error::Runtime(format!(
            "expand({}{{{}}}, size={}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            type_string(src.dtype()),
            fmt_shape(stripped.shape()),
            fmt_shape(dst.shape()),
            dst.ndim(),
            stripped.ndim()
        )));
    }
    let sizes: Vec<i64> = dst.shape().iter().map(|&d| d as i64).collect();
    let expanded = views::expand_raw(&stripped, &sizes)?;
    copy_(dst, &expanded)
}

/// How torch names a CPU tensor type in messages: legacy names, except for bool.
fn type_string(dtype: DType) -> String {
    match dtype {
        DType::Bool => "CPUBoolType".into(),
        d => format!("torch.{}", d.legacy_tensor_name()),
    }
}

/// `dst.copy_(src)` for same-shape operands, through the write path.
pub(crate) fn copy_(dst: &Tensor, src: &Tensor) -> Result<()> {
    write(dst, &[src], |reads| {
        let (src, alias) = &reads[0];
        // The very same elements: nothing to move (torch skips the kernel too), still a bump.
        if *alias != Alias::Same {
            crate::ops::copy::copy_kernel(dst, src);
        }
        Ok(())
    })
}

/// `dst.fill_(value)` through the write path.
fn fill_(dst: &Tensor, value: Scalar) -> Result<()> {
    write(dst, &[], |_| {
        crate::kernels::fill::fill(dst, value);
        Ok(())
    })
}

/// A Python number converted for `x[key] = number` (torch's `valueToTensor`): a 0-d tensor of
/// x's dtype; values the dtype cannot hold are an error, as torch's checked conversion.
pub fn value_tensor(value: Scalar, dtype: DType) -> Result<Tensor> {
    Ok(Tensor::scalar(checked_convert(value, dtype)?, dtype)?)
}

/// torch's `checked_convert`: integers must fit, floats must be finite and in range for
/// integer dtypes, doubles must be in float32's range (inf and nan pass); bool takes anything.
pub fn checked_convert(value: Scalar, dtype: DType) -> Result<Scalar> {
    match (value, dtype) {
        (v, DType::Bool) => Ok(Scalar::Bool(v.to_bool())),
        (Scalar::Bool(b), _) => Ok(Scalar::Int(b as i64)),
        (Scalar::Int(i), DType::Int32) if i32::try_from(i).is_err() => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::Int32) if !(f >= i32::MIN as f64 && f <= i32::MAX as f64) => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::Int64) if !(f >= i64::MIN as f64 && f <= i64::MAX as f64) => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::Float32) if f.is_finite() && f.abs() > f32::MAX as f64 => Err(conversion_overflow(dtype)),
        (v, _) => Ok(v),
    }
}

/// torch's error for a number that `dtype` cannot hold (named by its C++ type).
pub fn conversion_overflow(dtype: DType) -> Error {
    let name = match dtype {
        DType::Bool => "bool",
        DType::Int32 => "int",
        DType::Int64 => "int64_t",
        DType::Float32 => "float",
        DType::Float64 => "double",
    };
    Error::Runtime(format!("value cannot be converted to type {} without overflow", name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arange(n: usize, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }

    fn view(r: Indexed) -> Tensor {
        match r {
            Indexed::View(t) => t,
            Indexed::Copy(_) => panic!("expected a view"),
        }
    }

    #[test]
    fn basic_keys_are_views_with_torch_layouts() {
        let x = arange(12, &[3, 4]);
        let r = view(get_item_raw(&x, &Key::Single(TensorIndex::Int(-1))).unwrap());
        assert_eq!((r.shape().to_vec(), r.layout.offset), (vec![4], 8));
        let key = Key::Tuple(vec![
            TensorIndex::Slice { start: 1, stop: i64::MAX, step: 2 },
            TensorIndex::None,
            TensorIndex::Ellipsis,
            TensorIndex::Int(0),
        ]);
        let r = view(get_item_raw(&x, &key).unwrap());
        assert_eq!((r.shape().to_vec(), r.strides().to_vec(), r.layout.offset), (vec![1, 1], vec![8, 4], 4));
        assert!(r.version.shares_with(&x.version));
    }

    #[test]
    fn errors_match_torch() {
        let x = arange(12, &[3, 4]);
        let e = get_item_raw(&x, &Key::Tuple(vec![TensorIndex::Int(0), TensorIndex::Int(5)])).unwrap_err();
        assert_eq!(e, Error::Index("index 5 is out of bounds for dimension 1 with size 4".into()));
        let e = get_item_raw(&x, &Key::Tuple(vec![TensorIndex::Int(0); 3])).unwrap_err();
        assert_eq!(e.to_string(), "too many indices for tensor of dimension 2");
        let e = get_item_raw(&x, &Key::Single(TensorIndex::Slice { start: 0, stop: 3, step: -1 })).unwrap_err();
        assert_eq!(e, Error::Value("step must be greater than zero".into()));
        // Repeated `...` walk past the rank; torch then misreads a stride as the size.
        let y = arange(24, &[2, 3, 4]);
        let key = |i| Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::Ellipsis, TensorIndex::Ellipsis, TensorIndex::Int(i)]);
        assert_eq!(get_item_raw(&y, &key(5)).unwrap_err().to_string(), "index 5 is out of bounds for dimension 3 with size 4");
        assert_eq!(
            get_item_raw(&y, &key(0)).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-3, 2], but got 6)"
        );
        let s = Tensor::scalar(Scalar::Float(1.0), DType::Float32).unwrap();
        let e = get_item_raw(&s, &Key::Single(TensorIndex::Int(1))).unwrap_err();
        assert_eq!(e.to_string(), "index 1 is out of bounds for dimension 0 with size 0");
    }

    #[test]
    fn python_slice_clamping() {
        let l = Layout::contiguous(&[3, 4]);
        let s = slice(&l, 0, i64::MAX, i64::MAX, 1).unwrap();
        assert_eq!((s.shape[0], s.offset), (0, 12));
        let s = slice(&l, 1, -100, -1, 2).unwrap();
        assert_eq!((s.shape[1], s.strides[1], s.offset), (2, 2, 0));
        assert!(slice(&l, 0, 0, i64::MAX, i64::MAX).is_err());
    }

    #[test]
    fn setitem_bumps_once() {
        let x = arange(12, &[3, 4]);
        let v = value_tensor(Scalar::Float(7.0), DType::Float32).unwrap();
        set_item_raw(&x, &Key::Single(TensorIndex::Int(1)), &v).unwrap();
        assert_eq!(x.version(), 1);
        assert_eq!(x.to_vec::<f32>().unwrap()[4..8], [7.0; 4]);
        set_item_raw(&x, &Key::Single(TensorIndex::Bool(false)), &v).unwrap();
        assert_eq!(x.version(), 1);
    }

    #[test]
    fn checked_conversion() {
        assert!(checked_convert(Scalar::Float(1e10), DType::Int32).is_err());
        assert!(checked_convert(Scalar::Float(f64::NAN), DType::Int64).is_err());
        assert_eq!(checked_convert(Scalar::Float(2.5), DType::Int64).unwrap(), Scalar::Float(2.5));
        assert!(checked_convert(Scalar::Float(1e39), DType::Float32).is_err());
        assert!(checked_convert(Scalar::Float(f64::INFINITY), DType::Float32).is_ok());
        assert_eq!(checked_convert(Scalar::Float(-0.5), DType::Bool).unwrap(), Scalar::Bool(true));
    }
}

// ----- autograd: basic keys as recorded views, advanced keys through index / index_put_ -----

use crate::autograd::Recorder;
use std::sync::Arc;

/// One basic step of a key, in terms of the view so far (for replaying it on a gradient).
#[derive(Debug, Clone)]
pub enum Step {
    Select(usize, i64),
    Slice(usize, i64, i64, i64),
    Unsqueeze(usize),
}

impl Step {
    fn apply(&self, l: &Layout) -> Result<Layout> {
        match *self {
            Step::Select(d, i) => l.select(d as i64, i),
            Step::Slice(d, start, stop, step) => slice(l, d, start, stop, step),
            Step::Unsqueeze(d) => l.unsqueeze(d as i64),
        }
    }

    fn node(&self) -> &'static str {
        match self {
            Step::Select(..) => "SelectBackward0",
            Step::Slice(..) => "SliceBackward0",
            Step::Unsqueeze(_) => "UnsqueezeBackward0",
        }
    }
}

/// The view `layout` of `x` reached through `steps`, recorded as one view node named after
/// the last step (torch records a chain, one node per step; the gradient is the same).
fn basic_view(x: &Tensor, layout: Layout, steps: Vec<Step>) -> Result<Tensor> {
    let out = x.view_as_layout(layout);
    let name = steps.last().map_or("AliasBackward0", Step::node);
    crate::autograd::record::record_view(name, x, &[&out], Arc::new(move |z| {
        let mut l = z.layout.clone();
        for s in &steps {
            l = s.apply(&l)?;
        }
        Ok(vec![z.view_as_layout(l)])
    }))?;
    Ok(out)
}

/// `x` itself when no step changed it, else the recorded view.
fn view_or_self(x: &Tensor, layout: Layout, steps: Vec<Step>) -> Result<Tensor> {
    if steps.is_empty() {
        Ok(x.clone())
    } else {
        basic_view(x, layout, steps)
    }
}

/// Differentiable `x[key]`: basic keys give a recorded view (SelectBackward0, SliceBackward0,
/// UnsqueezeBackward0 for the last step; AliasBackward0 for `...` and keys that change
/// nothing); advanced keys give IndexBackward0 on the basic view before them.
pub fn get_item(x: &Tensor, key: &Key) -> Result<Indexed> {
    precheck_key(x, key, false)?;
    match key {
        Key::Single(TensorIndex::Int(i)) => {
            let l = select(&x.layout, 0, *i, 0)?;
            Ok(Indexed::View(basic_view(x, l, vec![Step::Select(0, *i)])?))
        }
        Key::Single(TensorIndex::Slice { start, stop, step }) => {
            // A lone slice is always a slice (torch disables the full-slice shortcut here).
            let l = slice(&x.layout, 0, *start, *stop, *step)?;
            Ok(Indexed::View(basic_view(x, l, vec![Step::Slice(0, *start, *stop, *step)])?))
        }
        Key::Single(TensorIndex::None) => Ok(Indexed::View(basic_view(x, x.layout.unsqueeze(0)?, vec![Step::Unsqueeze(0)])?)),
        Key::Single(TensorIndex::Ellipsis) => Ok(Indexed::View(views::alias(x)?)),
        Key::Single(TensorIndex::Bool(b)) => {
            let v = basic_view(x, x.layout.unsqueeze(0)?, vec![Step::Unsqueeze(0)])?;
            Ok(Indexed::Copy(advanced::index(&v, &[Some(bool_index(*b)?)])?))
        }
        Key::Single(item) => get_item(x, &Key::Tuple(vec![item.clone()])),
        Key::Tuple(items) => {
            let (layout, indices, steps) = apply_slicing(x, items)?;
            if indices.is_empty() {
                if steps.is_empty() {
                    return Ok(Indexed::View(views::alias(x)?));
                }
                return Ok(Indexed::View(basic_view(x, layout, steps)?));
            }
            let sliced = view_or_self(x, layout, steps)?;
            Ok(Indexed::Copy(advanced::index(&sliced, trim(&indices))?))
        }
    }
}

/// torch runs a key's first view op through autograd (collecting x's gradient edge, which may
/// raise a stale view's error) before that op's own shape checks; integer items check their
/// range before any op. This reproduces that order.
fn precheck_key(x: &Tensor, key: &Key, setting: bool) -> Result<()> {
    let precheck = || crate::autograd::record::precheck(&[Some(x)]);
    let in_range = |i: i64, size: Option<&usize>| size.is_some_and(|&n| i >= -(n as i64) && i < n as i64);
    let items = match key {
        Key::Single(TensorIndex::Int(i)) => return if in_range(*i, x.shape().first()) { precheck() } else { Ok(()) },
        // a lone slice always runs when reading (torch disables the full-slice shortcut there)
        Key::Single(TensorIndex::Slice { step, .. }) if !setting => return if *step > 0 { precheck() } else { Ok(()) },
        Key::Single(item @ TensorIndex::Slice { .. }) => std::slice::from_ref(item),
        Key::Single(TensorIndex::Invalid(_)) => return Ok(()),
        Key::Single(_) => return precheck(), // None / True / False unsqueeze, `...` aliases, a tensor indexes
        Key::Tuple(items) => items,
    };
    // torch's applySlicing: first "too many indices", then item by item; the first item that
    // runs an op (after its own argument check) reaches autograd.
    let consumes = |it: &TensorIndex| match it {
        TensorIndex::Int(_) | TensorIndex::Slice { .. } => 1,
        TensorIndex::Tensor(t) if t.dtype() == crate::DType::Bool => t.ndim(),
        TensorIndex::Tensor(_) => 1,
        _ => 0,
    };
    let specified: usize = items.iter().map(consumes).sum();
    if specified > x.ndim() {
        return Ok(());
    }
    let mut dim = 0;
    for item in items {
        match item {
            TensorIndex::Int(i) => return if in_range(*i, x.shape().get(dim)) { precheck() } else { Ok(()) },
            TensorIndex::Slice { start, stop, step } => {
                if *step <= 0 {
                    return Ok(());
                }
                let full = *start == 0 && *step == 1 && x.shape().get(dim).is_some_and(|&n| *stop >= n as i64);
                if !full {
                    return precheck();
                }
            }
            TensorIndex::None | TensorIndex::Bool(_) => return precheck(),
            TensorIndex::Ellipsis => dim += x.ndim() - specified,
            TensorIndex::Tensor(_) => {}
            TensorIndex::Invalid(_) => return Ok(()),
        }
        dim += consumes(item);
    }
    if setting {
        Ok(()) // index_put_ or the copy into x: the in-place op's own checks come first
    } else {
        precheck() // the advanced-index op, or the alias of a key that changed nothing
    }
}

/// Differentiable `x[key] = value`: basic keys write a recorded view of x (so x's history
/// becomes CopySlices), or x itself when the key changes nothing (`...`, full slices); advanced
/// keys go through index_put_ (IndexPutBackward0). Each path is one write (R1).
pub fn set_item(x: &Tensor, key: &Key, value: &Tensor) -> Result<()> {
    if !matches!(key, Key::Single(TensorIndex::Ellipsis)) {
        precheck_key(x, key, true)?;
    }
    match key {
        // torch does nothing at all for a bare False (no bump either).
        Key::Single(TensorIndex::Bool(false)) => Ok(()),
        Key::Single(TensorIndex::Ellipsis) => copy_to_grad(x, value),
        Key::Single(TensorIndex::None) | Key::Single(TensorIndex::Bool(true)) => {
            copy_to_grad(&basic_view(x, x.layout.unsqueeze(0)?, vec![Step::Unsqueeze(0)])?, value)
        }
        Key::Single(TensorIndex::Int(i)) => {
            let l = select(&x.layout, 0, *i, 0)?;
            copy_to_grad(&basic_view(x, l, vec![Step::Select(0, *i)])?, value)
        }
        Key::Single(TensorIndex::Slice { start, stop, step }) => {
            let l = slice(&x.layout, 0, *start, *stop, *step)?;
            let full = *start == 0 && *step == 1 && x.shape().first().is_some_and(|&s| *stop >= s as i64);
            let steps = if full { vec![] } else { vec![Step::Slice(0, *start, *stop, *step)] };
            copy_to_grad(&view_or_self(x, l, steps)?, value)
        }
        Key::Single(item) => set_item(x, &Key::Tuple(vec![item.clone()]), value),
        Key::Tuple(items) => {
            let (layout, indices, steps) = apply_slicing(x, items)?;
            let sliced = view_or_self(x, layout, steps)?;
            if indices.is_empty() {
                return copy_to_grad(&sliced, value);
            }
            // NumPy compatibility: leading 1s of the value are dropped before broadcasting.
            let stripped = strip_leading_ones(&value.layout);
            let value = if stripped.shape == value.shape() {
                value.clone()
            } else {
                views::view(value, &stripped.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?
            };
            advanced::index_put_(&sliced, trim(&indices), &value, false)
        }
    }
}

/// torch's `copy_to` with differentiable pieces: `copy_` of the same shape, `fill_` of a 0-d
/// value, else the value viewed without leading 1s, expanded, and copied.
fn copy_to_grad(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.shape() == src.shape() {
        return crate::ops::copy::copy_(dst, src);
    }
    if src.ndim() == 0 {
        return fill_with_tensor_(dst, src);
    }
    let stripped = strip_leading_ones(&src.layout);
    if stripped.ndim() > dst.ndim() {
        return copy_to(dst, src);
    }
    let v = views::view(src, &stripped.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
    let v = if v.shape() == dst.shape() { v } else { views::expand(&v, &dst.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())? };
    crate::ops::copy::copy_(dst, &v)
}

/// `dst.fill_(0-d tensor)` (FillBackward3). Unlike `fill_(number)`, torch refuses a
/// destination whose elements alias each other here, so this goes through the write path.
fn fill_with_tensor_(dst: &Tensor, value: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op("fill_");
    let rec = Recorder::inplace(dst, &[Some(value)])?;
    fill_(dst, value.item()?)?;
    let Some(rec) = rec else { return Ok(()) };
    rec.finish_inplace("FillBackward3", dst, Box::new(|ctx| {
        let g = ctx.grad();
        let gv = if ctx.needs(1) { Some(crate::ops::reduce::sum(g, None, false, None)?) } else { None };
        Ok(vec![ctx.needs(0).then(|| Tensor::zeros(g.shape(), g.dtype())).transpose()?, gv])
    }))
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn sl(start: i64, stop: i64) -> TensorIndex {
        TensorIndex::Slice { start, stop, step: 1 }
    }

    fn get(x: &Tensor, key: Key) -> Tensor {
        match get_item(x, &key).unwrap() {
            Indexed::View(t) | Indexed::Copy(t) => t,
        }
    }

    #[test]
    fn view_keys_name_their_last_step() {
        let x = leaf((0..12).map(f64::from).collect(), &[3, 4]);
        let cases: Vec<(Key, &str)> = vec![
            (Key::Single(sl(0, i64::MAX)), "SliceBackward0"),
            (Key::Single(TensorIndex::Int(0)), "SelectBackward0"),
            (Key::Tuple(vec![TensorIndex::Int(0), sl(1, 3)]), "SliceBackward0"),
            (Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::Int(0)]), "SelectBackward0"),
            (Key::Tuple(vec![TensorIndex::None, TensorIndex::Int(0)]), "SelectBackward0"),
            (Key::Single(TensorIndex::Ellipsis), "AliasBackward0"),
            (Key::Tuple(vec![sl(0, i64::MAX), sl(0, 4)]), "AliasBackward0"),
            (Key::Tuple(vec![sl(0, 10), TensorIndex::Int(1)]), "SelectBackward0"),
            (Key::Tuple(vec![sl(1, i64::MAX), TensorIndex::Tensor(Tensor::from_vec(vec![0i64, 1], &[2]).unwrap())]), "IndexBackward0"),
        ];
        for (key, name) in cases {
            assert_eq!(node_name(&get(&x, key.clone())), name, "{:?}", key);
        }
    }

    #[test]
    fn gradients_reach_x_through_views_and_indices() {
        let x = leaf((0..12).map(f64::from).collect(), &[3, 4]);
        // x[1:, [0, 3]]: a slice, then an index on it.
        let key = Key::Tuple(vec![sl(1, i64::MAX), TensorIndex::Tensor(Tensor::from_vec(vec![0i64, 3], &[2]).unwrap())]);
        let out = get(&x, key);
        backward(&out, Some(vals(vec![1., 2., 3., 4.], &[2, 2])));
        assert_eq!(grad(&x), vec![0., 0., 0., 0., 1., 0., 0., 2., 3., 0., 0., 4.]);
        // x[None, 2][..., 1:3]
        let x = leaf((0..12).map(f64::from).collect(), &[3, 4]);
        let v = get(&x, Key::Tuple(vec![TensorIndex::None, TensorIndex::Int(2), sl(1, 3)]));
        assert_eq!(v.shape(), &[1, 2]);
        backward(&v, Some(vals(vec![5., 6.], &[1, 2])));
        assert_eq!(grad(&x), vec![0., 0., 0., 0., 0., 0., 0., 0., 0., 5., 6., 0.]);
    }

    #[test]
    fn setitem_histories_and_one_bump() {
        let x0 = leaf(vec![1., 2., 3., 4., 5., 6.], &[2, 3]);
        let t = leaf(vec![7., 8., 9.], &[3]);
        let cases: Vec<(Key, Tensor, &str)> = vec![
            (Key::Single(TensorIndex::Int(0)), t.clone(), "torch::autograd::CopySlices"),
            (Key::Single(sl(0, 5)), t.clone(), "torch::autograd::CopyBackwards"),
            (Key::Single(sl(-2, i64::MAX)), t.clone(), "torch::autograd::CopySlices"),
            (Key::Single(TensorIndex::Ellipsis), Tensor::scalar(crate::Scalar::Float(1.0), DType::Float64).unwrap(), "FillBackward3"),
            (Key::Tuple(vec![sl(0, i64::MAX), TensorIndex::Tensor(Tensor::from_vec(vec![0i64], &[1]).unwrap())]), Tensor::scalar(crate::Scalar::Float(1.0), DType::Float64).unwrap(), "IndexPutBackward0"),
            (Key::Tuple(vec![sl(1, 2), TensorIndex::Tensor(Tensor::from_vec(vec![0i64], &[1]).unwrap())]), Tensor::scalar(crate::Scalar::Float(1.0), DType::Float64).unwrap(), "torch::autograd::CopySlices"),
        ];
        for (key, value, name) in cases {
            let x = crate::ops::copy::clone(&x0).unwrap();
            let v0 = x.version();
            set_item(&x, &key, &value).unwrap();
            assert_eq!(x.version(), v0 + 1, "{:?}", key);
            assert_eq!(node_name(&x), name, "{:?}", key);
        }
        // x[0] = t: row 0 of x gets no gradient, t gets row 0's.
        let x = crate::ops::copy::clone(&x0).unwrap();
        set_item(&x, &Key::Single(TensorIndex::Int(0)), &t).unwrap();
        assert_eq!(x.to_vec::<f64>().unwrap(), vec![7., 8., 9., 4., 5., 6.]);
        backward(&x, Some(vals(vec![1., 2., 3., 4., 5., 6.], &[2, 3])));
        assert_eq!(grad(&x0), vec![0., 0., 0., 4., 5., 6.]);
        assert_eq!(grad(&t), vec![1., 2., 3.]);
        // A leaf that requires grad refuses, and nothing moves.
        let e = set_item(&x0, &Key::Single(TensorIndex::Int(0)), &t).unwrap_err();
        assert_eq!(e.to_string(), "a view of a leaf Variable that requires grad is being used in an in-place operation.");
        assert_eq!(x0.version(), 0);
    }

    #[test]
    fn keys_pass_gradcheck() {
        let idx = || TensorIndex::Tensor(Tensor::from_vec(vec![2i64, 0], &[2]).unwrap());
        let gets: Vec<Key> = vec![
            Key::Single(TensorIndex::Int(-1)),
            Key::Single(sl(1, i64::MAX)),
            Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::None, sl(0, 2)]),
            Key::Tuple(vec![TensorIndex::Slice { start: 0, stop: 3, step: 2 }, idx()]),
            Key::Tuple(vec![idx(), TensorIndex::Int(1)]),
            Key::Single(TensorIndex::Bool(true)),
        ];
        for key in gets {
            let k = key.clone();
            gradcheck(&format!("get {:?}", key), &move |t| Ok(get(&t[0], k.clone())), &[rand_leaf(&[3, 4], 1)], true);
        }
        // Writes through a view make x's history CopySlices, whose backward (autograd/inplace.rs)
        // hands the in-place node a detached clone of the gradient, so those are checked to
        // first order only; writes into x itself are checked to second order too.
        let sets: Vec<(Key, Vec<usize>, bool)> = vec![
            (Key::Single(TensorIndex::Int(1)), vec![4], false),
            (Key::Single(TensorIndex::Int(1)), vec![], false),
            (Key::Single(sl(0, 10)), vec![4], true),
            (Key::Single(TensorIndex::Ellipsis), vec![], true),
            (Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::Int(0)]), vec![1, 3], false),
            (Key::Tuple(vec![sl(1, 3), idx()]), vec![2], false),
            (Key::Tuple(vec![idx()]), vec![1, 4], true),
            (Key::Tuple(vec![sl(0, 3), idx()]), vec![], true),
            (Key::Single(TensorIndex::None), vec![3, 4], false),
        ];
        for (key, vshape, double) in sets {
            let k = key.clone();
            let f = move |t: &[Tensor]| {
                let y = crate::ops::copy::clone(&t[0])?;
                set_item(&y, &k, &t[1])?;
                crate::autograd::formulas::mul(&y, &y)
            };
            gradcheck(&format!("set {:?}", key), &f, &[rand_leaf(&[3, 4], 2), rand_leaf(&vshape, 3)], double);
        }
    }
}
