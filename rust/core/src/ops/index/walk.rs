//! Reading a key: basic items change the layout, tensors are recorded as advanced indices
//! (torch's `applySlicing`), with Python's slice clamping and torch's error texts; and the order
//! in which torch's checks and autograd's precheck meet a key.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;
use super::{Key, Step, TensorIndex};

/// Walks a tuple key: basic items reshape the view, tensors are recorded per dim
/// (torch's `applySlicing` + `handleDimInMultiDimIndexing`).
/// Also returns the basic steps that changed the view (torch skips a slice `0:stop:1` with
/// `stop >= size` here), for autograd to record the view and replay it on gradients.
pub(super) fn apply_slicing(x: &Tensor, items: &[TensorIndex]) -> Result<(Layout, Vec<Option<Tensor>>, Vec<Step>)> {
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
pub(super) fn trim(indices: &[Option<Tensor>]) -> &[Option<Tensor>] {
    let end = indices.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
    &indices[..end]
}

/// A Python bool as an index: `True` is `[0]` on a new size-1 dim, `False` is `[]`.
pub(super) fn bool_index(b: bool) -> crate::error::Result<Tensor> {
    if b {
        Tensor::zeros(&[1], DType::Int64)
    } else {
        Tensor::empty(&[0], DType::Int64)
    }
}

/// `select` on `x` itself, for a key that is one integer: a 0-d output of max/min/kthvalue(dim)
/// is bounds-checked against the stale size 1 torch reads there (`Tensor::stale_size0`), so -1
/// reaches `select()` and fails there, as in torch.
pub(super) fn select_x(x: &Tensor, index: i64) -> Result<Layout> {
    if x.stale_size0 && x.ndim() == 0 && index != 0 {
        if index == -1 {
            return Err(Error::Index("select() cannot be applied to a 0-dim tensor.".into()));
        }
        return Err(Error::Index(format!("index {index} is out of bounds for dimension 0 with size 1")));
    }
    select(&x.layout, 0, index, 0)
}

/// torch's `applySelect`: bounds check with the position in the key as the reported dim.
pub(super) fn select(layout: &Layout, dim: usize, index: i64, real_dim: usize) -> Result<Layout> {
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
pub(super) fn slice(layout: &Layout, dim: usize, start: i64, stop: i64, step: i64) -> Result<Layout> {
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
pub(super) fn strip_leading_ones(l: &Layout) -> Layout {
    let k = l.shape.iter().position(|&s| s != 1).unwrap_or(l.ndim());
    Layout { shape: l.shape[k..].into(), strides: l.strides[k..].into(), offset: l.offset }
}

/// torch runs a key's first view op through autograd (collecting x's gradient edge, which may
/// raise a stale view's error) before that op's own shape checks; integer items check their
/// range before any op. This reproduces that order.
pub(super) fn precheck_key(x: &Tensor, key: &Key, setting: bool) -> Result<()> {
    let precheck = || crate::autograd::precheck(&[Some(x)]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_slice_clamping() {
        let l = Layout::contiguous(&[3, 4]);
        let s = slice(&l, 0, i64::MAX, i64::MAX, 1).unwrap();
        assert_eq!((s.shape[0], s.offset), (0, 12));
        let s = slice(&l, 1, -100, -1, 2).unwrap();
        assert_eq!((s.shape[1], s.strides[1], s.offset), (2, 2, 0));
        assert!(slice(&l, 0, 0, i64::MAX, i64::MAX).is_err());
    }
}
