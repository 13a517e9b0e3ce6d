//! View ops: new layouts over the same storage and version counter (R6). Nothing is copied,
//! except by `reshape`/`flatten` when no view can express the result (as torch).

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::copy::contiguous_copy;
use crate::shape::{infer_size, wrap_dim};
use crate::tensor::Tensor;

pub fn view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.view(shape)?))
}

/// A view when the strides allow one, otherwise a contiguous copy (fresh version counter).
pub fn reshape(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let new_shape = infer_size(shape, t.numel())?;
    match t.layout.view_strides(&new_shape) {
        Some(strides) => Ok(t.view_as_layout(Layout { shape: new_shape, strides, offset: t.layout.offset })),
        None => {
            let c = contiguous_copy(t, t.dtype());
            Ok(Tensor { layout: Layout::contiguous(&new_shape), ..c })
        }
    }
}

/// `flatten(start_dim, end_dim)`. When the two dims are the same (and the tensor is not 0-d)
/// torch returns the input itself; here that is a view with the same layout, and the binding
/// returns the very object.
pub fn flatten(t: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    let (s, e) = (wrap_dim(start_dim, t.ndim())?, wrap_dim(end_dim, t.ndim())?);
    if s > e {
        return Err(Error::Runtime("flatten() has invalid args: start_dim cannot come after end_dim".into()));
    }
    if t.ndim() == 0 {
        return reshape(t, &[1]);
    }
    if s == e {
        return Ok(t.view_as_layout(t.layout.clone()));
    }
    let mut shape: Vec<i64> = t.shape()[..s].iter().map(|&d| d as i64).collect();
    shape.push(t.shape()[s..=e].iter().product::<usize>() as i64);
    shape.extend(t.shape()[e + 1..].iter().map(|&d| d as i64));
    reshape(t, &shape)
}

pub fn permute(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.permute(dims)?))
}

pub fn transpose(t: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.transpose(d0, d1)?))
}

pub fn t(t: &Tensor) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.t()?))
}

pub fn unsqueeze(t: &Tensor, dim: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.unsqueeze(dim)?))
}

pub fn squeeze(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.squeeze(dims)?))
}

pub fn expand(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let layout = t.layout.expand(sizes).map_err(|e| match e {
        // torch names the type as its legacy tensor class, except bool's ("CPUBoolType")
        Error::Runtime(m) => Error::Runtime(m.replace(
            "torch.FloatTensor",
            &if t.dtype() == crate::DType::Bool { "CPUBoolType".to_string() } else { format!("torch.{}", t.dtype().legacy_tensor_name()) },
        )),
        other => other,
    })?;
    Ok(t.view_as_layout(layout))
}

pub fn narrow(t: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.narrow(dim, start, length)?))
}

/// Basic slicing `t[start:end:step]` along `dim` (Python's clamping of start/end).
pub fn slice(t: &Tensor, dim: usize, start: i64, end: i64, step: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.slice(dim, start, end, step)?))
}

pub fn select(t: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.select(dim, index)?))
}

pub fn diagonal(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.diagonal(offset, dim1, dim2)?))
}

pub fn as_strided(t: &Tensor, size: &[i64], stride: &[i64], offset: Option<i64>) -> Result<Tensor> {
    let offset = offset.unwrap_or(t.layout.offset as i64);
    let layout = Layout::as_strided(size, stride, offset, t.storage.len(), t.dtype().size())?;
    Ok(t.view_as_layout(layout))
}

pub fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let d = wrap_dim(dim, t.ndim())?;
    if t.ndim() == 0 {
        return Err(Error::Index("Dimension specified as 0 but tensor has no dimensions".into()));
    }
    (0..t.shape()[d]).map(|i| select(t, d as i64, i as i64)).collect()
}

/// `split(split_size, dim)`: pieces of `split_size` along `dim`, the last possibly smaller.
pub fn split(t: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        return Err(Error::Runtime("split expects at least a 1-dimensional tensor".into()));
    }
    if split_size < 0 {
        return Err(Error::Runtime(format!("split expects split_size be non-negative, but got split_size={}", split_size)));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d] as i64;
    if split_size == 0 && n != 0 {
        return Err(Error::Runtime(format!(
            "split_size can only be 0 if dimension size is 0, but got dimension size of {}",
            n
        )));
    }
    let count = if split_size == 0 { 1 } else { ((n + split_size - 1) / split_size).max(1) };
    (0..count)
        .map(|i| {
            let start = i * split_size;
            narrow(t, d as i64, start, split_size.min(n - start))
        })
        .collect()
}

/// `split(sizes, dim)` with explicit section sizes (`split_with_sizes`).
pub fn split_with_sizes(t: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        return Err(Error::Runtime("split expects at least a 1-dimensional tensor".into()));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d] as i64;
    if sizes.iter().any(|&s| s < 0) {
        return Err(Error::Runtime(format!(
            "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[{}]",
            sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    let total: i64 = sizes.iter().sum();
    if total != n {
        return Err(Error::Runtime(format!(
            "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got split_sizes=[{}]",
            n,
            dim,
            sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut start = 0;
    sizes
        .iter()
        .map(|&s| {
            let v = narrow(t, d as i64, start, s);
            start += s;
            v
        })
        .collect()
}

pub fn chunk(t: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        return Err(Error::Runtime("chunk expects at least a 1-dimensional tensor".into()));
    }
    if chunks <= 0 {
        return Err(Error::Runtime("chunk expects `chunks` to be greater than 0, got: ".to_string() + &chunks.to_string()));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d] as i64;
    let size = (n + chunks - 1) / chunks;
    if size == 0 {
        // torch returns `chunks` empty pieces when the dim is empty... only when n == 0.
        return split_with_sizes(t, &vec![0; chunks as usize], dim);
    }
    split(t, size, dim)
}
