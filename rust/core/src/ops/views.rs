//! View ops: new layouts over the same storage and version counter (R6). Nothing is copied,
//! except by `reshape`/`flatten` when no view can express the result (as torch).

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::copy::contiguous_copy;
use crate::shape::{infer_view_size, wrap_dim};
use crate::tensor::Tensor;

pub fn view_raw(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.view(shape)?))
}

/// A view when the strides allow one, otherwise a contiguous copy (fresh version counter).
pub fn reshape_raw(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let new_shape = infer_view_size(shape, t.numel())?;
    match t.layout.view_strides(&new_shape) {
        Some(strides) => Ok(t.view_as_layout(Layout { shape: new_shape.into(), strides: strides.into(), offset: t.layout.offset })),
        None => {
            let c = contiguous_copy(t, t.dtype())?;
            Ok(Tensor { layout: Layout::contiguous(&new_shape), ..c })
        }
    }
}

/// `flatten(start_dim, end_dim)`. When the two dims are the same (and the tensor is not 0-d)
/// torch returns the input itself; here that is a view with the same layout, and the binding
/// returns the very object.
pub fn flatten_raw(t: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    let (s, e) = (wrap_dim(start_dim, t.ndim())?, wrap_dim(end_dim, t.ndim())?);
    if s > e {
        return Err(Error::Runtime("flatten() has invalid args: start_dim cannot come after end_dim".into()));
    }
    if t.ndim() == 0 {
        return reshape_raw(t, &[1]);
    }
    if s == e {
        return Ok(t.view_as_layout(t.layout.clone()));
    }
    let mut shape: Vec<i64> = t.shape()[..s].iter().map(|&d| d as i64).collect();
    shape.push(t.shape()[s..=e].iter().product::<usize>() as i64);
    shape.extend(t.shape()[e + 1..].iter().map(|&d| d as i64));
    reshape_raw(t, &shape)
}

pub fn permute_raw(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.permute(dims)?))
}

pub fn transpose_raw(t: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.transpose(d0, d1)?))
}

pub fn t_raw(t: &Tensor) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.t()?))
}

pub fn unsqueeze_raw(t: &Tensor, dim: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.unsqueeze(dim)?))
}

pub fn squeeze_raw(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.squeeze(dims)?))
}

pub fn expand_raw(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
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

pub fn narrow_raw(t: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.narrow(dim, start, length)?))
}

/// Basic slicing `t[start:end:step]` along `dim` (Python's clamping of start/end).
pub fn slice_raw(t: &Tensor, dim: usize, start: i64, end: i64, step: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.slice(dim, start, end, step)?))
}

pub fn select_raw(t: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.select(dim, index)?))
}

pub fn unfold_raw(t: &Tensor, dim: i64, size: i64, step: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.unfold(dim, size, step)?))
}

pub fn diagonal_raw(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    Ok(t.view_as_layout(t.layout.diagonal(offset, dim1, dim2)?))
}

pub fn as_strided_raw(t: &Tensor, size: &[i64], stride: &[i64], offset: Option<i64>) -> Result<Tensor> {
    let offset = offset.unwrap_or(t.layout.offset as i64);
    let layout = Layout::as_strided(size, stride, offset, t.storage.len(), t.dtype().size())?;
    Ok(t.view_as_layout(layout))
}

pub fn unbind_raw(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let d = wrap_dim(dim, t.ndim())?;
    if t.ndim() == 0 {
        return Err(Error::Index("Dimension specified as 0 but tensor has no dimensions".into()));
    }
    (0..t.shape()[d]).map(|i| select_raw(t, d as i64, i as i64)).collect()
}

/// `split(split_size, dim)`: pieces of `split_size` along `dim`, the last possibly smaller.
pub fn split_raw(t: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
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
            narrow_raw(t, d as i64, start, split_size.min(n - start))
        })
        .collect()
}

/// `split(sizes, dim)` with explicit section sizes (`split_with_sizes`).
pub fn split_with_sizes_raw(t: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
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
            let v = narrow_raw(t, d as i64, start, s);
            start += s;
            v
        })
        .collect()
}

pub fn chunk_raw(t: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
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
        return split_with_sizes_raw(t, &crate::alloc::try_vec(chunks as usize, 0)?, dim);
    }
    split_raw(t, size, dim)
}

// ----- autograd: each view op's node; the gradient goes back through the same view of zeros -----

use crate::autograd::{record_view, record_view_joined, record_view_with_backward_op, SavedValue, ViewValues};
use SavedValue::{Int, Ints};

/// `self_sym_sizes`, the input's shape most view nodes keep (torch's name).
fn sizes_of(t: &Tensor) -> (&'static str, SavedValue) {
    ("self_sym_sizes", SavedValue::sizes(t.shape()))
}
use std::sync::Arc;

fn one(v: Result<Tensor>) -> Result<Vec<Tensor>> {
    v.map(|t| vec![t])
}

/// Records a view whose backward is a view of the gradient (torch's formulas for view, t,
/// transpose, permute and unsqueeze: `grad.reshape(sizes)`, `grad.t()`, ...): no zero-filled
/// buffer and no copy, and the gradient keeps torch's strides and `_version` (a Linear weight's
/// `.grad` comes out of TBackward0 as a view torch's AccumulateGrad takes as is). The inverse is
/// the recorded op, so `create_graph` differentiates it.
fn record_view_of_grad(
    name: &'static str,
    input: &Tensor,
    out: &Tensor,
    values: impl FnOnce() -> ViewValues,
    back: impl Fn(&Tensor) -> Result<Tensor> + Send + 'static,
) -> Result<()> {
    if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(input)])? {
        rec.values(values());
        rec.finish(name, &[out], Box::new(move |ctx| Ok(vec![Some(back(ctx.grad())?)])))?;
    }
    Ok(())
}

/// `inv` with `inv[dims[i]] = i` (dims already checked by `permute_raw`, negatives wrapped).
fn inverse_permutation(dims: &[i64], ndim: usize) -> Result<Vec<i64>> {
    let mut inv = vec![0i64; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        inv[wrap_dim(d, ndim)?] = i as i64;
    }
    Ok(inv)
}

pub fn view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = view_raw(t, shape)?;
    let back: Vec<i64> = t.shape().iter().map(|&n| n as i64).collect();
    record_view_of_grad("ViewBackward0", t, &out, || vec![sizes_of(t)], move |g| reshape(g, &back))?;
    Ok(out)
}

/// A view (ViewBackward0) when possible; otherwise a copy recorded as UnsafeViewBackward0.
pub fn reshape(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    // torch's composite ops (reshape, flatten, narrow, chunk) check their arguments before the
    // view they call reaches autograd, so argument errors come before a stale view's error;
    // except that reshape hands a contiguous input straight to `view` (autograd first).
    if t.is_contiguous() {
        crate::autograd::precheck(&[Some(t)])?;
    }
    let out = reshape_raw(t, shape)?;
    if !t.is_contiguous() {
        crate::autograd::precheck(&[Some(t)])?;
    }
    record_reshape(t, &out)?;
    Ok(out)
}

fn record_reshape(t: &Tensor, out: &Tensor) -> Result<()> {
    if out.same_storage(t) {
        // torch: a contiguous input is `view`ed; a strided one that still allows a view goes
        // through `_reshape_alias`.
        // Both backwards are torch's `grad.reshape(self.sizes())`: a view of the gradient when
        // its strides allow one (a permuted gradient meeting a reshape alias stays permuted).
        let name = if t.is_contiguous() { "ViewBackward0" } else { "ReshapeAliasBackward0" };
        let back: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        return record_view_of_grad(name, t, out, || vec![sizes_of(t)], move |g| reshape(g, &back));
    }
    // torch: `_unsafe_view(clone(memory_format=contiguous), shape)`, two nodes: CloneBackward0
    // from the input to the copy in the input's shape, UnsafeViewBackward0 from it to the result
    // (the same memory). The graph shows both (next_functions), and the engine runs both, which
    // orders the gradient sums after it as torch's.
    if !crate::autograd::should_record(&[Some(t)]) {
        return Ok(());
    }
    let copy = Tensor { layout: Layout::contiguous(t.shape()), ..out.fresh_handle() };
    crate::ops::copy::record_identity("CloneBackward0", t, &copy)?;
    if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(&copy)])? {
        rec.value("self_sym_sizes", crate::ops::reduce::py_ints(t.shape()));
        let back: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        rec.finish("UnsafeViewBackward0", &[out], Box::new(move |ctx| Ok(vec![Some(reshape(ctx.grad(), &back)?)])))?;
    }
    Ok(())
}

pub fn flatten(t: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    let out = flatten_raw(t, start_dim, end_dim)?; // arguments first, as `reshape`
    crate::autograd::precheck(&[Some(t)])?;
    if out.layout == t.layout && out.same_storage(t) && t.ndim() > 0 {
        return Ok(out); // the binding returns the input itself
    }
    record_reshape(t, &out)?;
    Ok(out)
}

pub fn permute(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = permute_raw(t, dims)?;
    let inverse = inverse_permutation(dims, t.ndim())?;
    record_view_of_grad("PermuteBackward0", t, &out, || vec![("dims", Ints(dims.into()))], move |g| permute(g, &inverse))?;
    Ok(out)
}

pub fn transpose(t: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = transpose_raw(t, d0, d1)?;
    let values = || vec![("dim0", Int(d0)), ("dim1", Int(d1))];
    record_view_of_grad("TransposeBackward0", t, &out, values, move |g| transpose(g, d0, d1))?;
    Ok(out)
}

pub fn t(x: &Tensor) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = t_raw(x)?;
    record_view_of_grad("TBackward0", x, &out, ViewValues::new, t)?;
    Ok(out)
}

pub fn unsqueeze(t: &Tensor, dim: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = unsqueeze_raw(t, dim)?;
    let wrapped = wrap_dim(dim, t.ndim() + 1)? as i64;
    record_view_of_grad("UnsqueezeBackward0", t, &out, || vec![("dim", Int(dim))], move |g| squeeze_dim(g, wrapped))?;
    Ok(out)
}

/// `squeeze()` (SqueezeBackward0) and `squeeze(dims)` with a list of dims (SqueezeBackward2).
/// The backward is torch's `unsqueeze_to`: the gradient unsqueezed at the dims squeezed away.
pub fn squeeze(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = squeeze_raw(t, dims)?;
    let name = if dims.is_none() { "SqueezeBackward0" } else { "SqueezeBackward2" };
    let removed = squeezed_dims(t, dims)?;
    let values = || match dims {
        Some(ds) => vec![("dim", Ints(ds.into())), sizes_of(t)],
        None => vec![sizes_of(t)],
    };
    record_view_of_grad(name, t, &out, values, move |g| unsqueeze_dims_of(g, &removed))?;
    Ok(out)
}

/// `squeeze(dim)` with one int dim (SqueezeBackward1).
pub fn squeeze_dim(t: &Tensor, dim: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = squeeze_raw(t, Some(&[dim]))?;
    let removed = squeezed_dims(t, Some(&[dim]))?;
    let values = || vec![("dim", Int(dim)), sizes_of(t)];
    record_view_of_grad("SqueezeBackward1", t, &out, values, move |g| unsqueeze_dims_of(g, &removed))?;
    Ok(out)
}

/// The dims `squeeze` removes from `t` (targeted and of size 1), ascending.
fn squeezed_dims(t: &Tensor, dims: Option<&[i64]>) -> Result<Vec<i64>> {
    let n = t.ndim();
    let targets: Vec<usize> = match dims {
        None => (0..n).collect(),
        Some(ds) => crate::shape::wrap_dims(ds, n)?,
    };
    Ok((0..n).filter(|i| t.shape()[*i] == 1 && targets.contains(i)).map(|i| i as i64).collect())
}

/// `g` unsqueezed at each of `dims` (ascending, so each index is final); with none removed it is
/// the gradient itself, as torch passes it through unchanged.
fn unsqueeze_dims_of(g: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let mut out = g.clone();
    for &d in dims {
        out = unsqueeze(&out, d)?;
    }
    Ok(out)
}

/// ExpandBackward0: the gradient is summed over the expanded dims.
pub fn expand(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = expand_raw(t, sizes)?;
    if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(t)])? {
        let shape = t.shape().to_vec();
        rec.values(vec![sizes_of(t)]);
        rec.finish("ExpandBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(crate::ops::formulas::sum_to(ctx.grad(), &shape)?)])))?;
    }
    Ok(out)
}

/// SliceBackward0's values: the dim and bounds as given (torch keeps them unclamped: `x[1:]`
/// has end 2^63 - 1), and the input's shape.
pub(crate) fn slice_values(shape: &[usize], dim: i64, start: i64, end: i64, step: i64) -> ViewValues {
    let sizes = ("self_sym_sizes", SavedValue::sizes(shape));
    vec![("dim", Int(dim)), ("end", Int(end)), sizes, ("start", Int(start)), ("step", Int(step))]
}

/// SelectBackward0's values: the dim and index as given, and the input's shape.
pub(crate) fn select_values(shape: &[usize], dim: i64, index: i64) -> ViewValues {
    vec![("dim", Int(dim)), ("index", Int(index)), ("self_sym_sizes", SavedValue::sizes(shape))]
}

pub fn narrow(t: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let out = narrow_raw(t, dim, start, length)?; // arguments first, as `reshape`
    crate::autograd::precheck(&[Some(t)])?;
    // torch's narrow is a slice: it keeps the start wrapped and the end it implies
    let values = || {
        let size = wrap_dim(dim, t.ndim()).map_or(0, |d| t.shape()[d] as i64); // checked by narrow_raw
        let s = if start < 0 { start + size } else { start };
        slice_values(t.shape(), dim, s, s + length, 1)
    };
    record_view_with_backward_op("SliceBackward0", "SliceBackwardBackward0", t, &out, values, Arc::new(move |z| one(narrow_raw(z, dim, start, length))))?;
    Ok(out)
}

pub fn slice(t: &Tensor, dim: usize, start: i64, end: i64, step: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = slice_raw(t, dim, start, end, step)?;
    let values = || slice_values(t.shape(), dim as i64, start, end, step);
    record_view_with_backward_op("SliceBackward0", "SliceBackwardBackward0", t, &out, values, Arc::new(move |z| one(slice_raw(z, dim, start, end, step))))?;
    Ok(out)
}

pub fn select(t: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = select_raw(t, dim, index)?;
    let values = || select_values(t.shape(), dim, index);
    record_view_with_backward_op("SelectBackward0", "SelectBackwardBackward0", t, &out, values, Arc::new(move |z| one(select_raw(z, dim, index))))?;
    Ok(out)
}

pub fn diagonal(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = diagonal_raw(t, offset, dim1, dim2)?;
    let values = || vec![("dim1", Int(dim1)), ("dim2", Int(dim2)), ("offset", Int(offset)), sizes_of(t)];
    record_view_with_backward_op("DiagonalBackward0", "DiagonalBackwardBackward0", t, &out, values, Arc::new(move |z| one(diagonal_raw(z, offset, dim1, dim2))))?;
    Ok(out)
}

/// `x.unfold(dim, size, step)` (UnfoldBackward0): the gradient of a window element goes back to
/// the input element it views, summed where windows overlap, as torch's `unfold_backward`: the
/// windows' gradients, window dim moved next to `dim` and flattened into it, are `index_add`ed
/// at their positions (i * step + j), in index order (deterministic), into zeros shaped like x.
/// With `create_graph` that sum is recorded as those ops (torch records one
/// UnfoldBackwardBackward0; docs/divergences.md).
pub fn unfold(t: &Tensor, dim: i64, size: i64, step: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = unfold_raw(t, dim, size, step)?;
    if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(t)])? {
        rec.values(vec![("dimension", Int(dim)), sizes_of(t), ("size", Int(size)), ("step", Int(step))]);
        let (shape, dtype, device) = (t.shape().to_vec(), t.dtype(), t.device());
        let d = wrap_dim(dim, t.ndim())?;
        rec.finish("UnfoldBackward0", &[&out], Box::new(move |ctx| {
            let g = ctx.grad();
            if shape.is_empty() {
                // a 0-d input: its one element is every window element (size 0 or 1)
                return Ok(vec![Some(crate::ops::reduce::sum(g, None, false, None)?)]);
            }
            let zeros = crate::ops::for_autograd::zeros_raw(&shape, dtype, device)?;
            let windows = g.shape()[d];
            // (.., windows, .., size) -> (.., windows * size, ..): window i's element j at i * size + j
            let moved = crate::ops::views::movedim_one(g, -1, d as i64 + 1)?;
            let mut flat: Vec<i64> = moved.shape().iter().map(|&n| n as i64).collect();
            flat[d] *= size;
            flat.remove(d + 1);
            let src = reshape(&moved, &flat)?;
            let at: Vec<i64> = (0..windows as i64).flat_map(|i| (0..size).map(move |j| i * step + j)).collect();
            let n = at.len();
            let index = crate::ops::copy::to_device_raw(&Tensor::from_vec(at, &[n])?, device)?;
            let one = crate::dtype::Scalar::Int(1);
            Ok(vec![Some(crate::ops::gather::index_add(&zeros, d as i64, &index, &src, one, false)?)])
        }))?;
    }
    Ok(out)
}

/// `t` with dim `from` moved to position `to`, the others in order (a permute).
pub fn movedim_one(t: &Tensor, from: i64, to: i64) -> Result<Tensor> {
    let n = t.ndim();
    let (f, to) = (wrap_dim(from, n)?, wrap_dim(to, n)?);
    let mut order: Vec<i64> = (0..n as i64).filter(|&i| i != f as i64).collect();
    order.insert(to, f as i64);
    permute(t, &order)
}

/// AsStridedBackward0: geometry is in terms of the input's memory, so the gradient is
/// scattered into a buffer laid out like the input's storage.
pub fn as_strided(t: &Tensor, size: &[i64], stride: &[i64], offset: Option<i64>) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(t)])?;
    let out = as_strided_raw(t, size, stride, offset)?;
    if crate::autograd::should_record(&[Some(t)]) {
        let values = vec![
            ("size", Ints(size.into())),
            ("storage_offset", offset.map_or(SavedValue::Text("None".into()), Int)),
            ("stride", Ints(stride.into())),
        ];
        let node = crate::autograd::as_strided_node(t, &out.layout, values)?;
        out.set_gradient_edge(node, 0);
    }
    Ok(out)
}

/// The pieces of split / chunk / unbind: their gradients join by `cat` (`stack` for unbind) when
/// a graph of the backward is built, as torch's split_backward / unbind_backward.
fn record_pieces(
    name: &'static str,
    t: &Tensor,
    outs: &[Tensor],
    values: impl FnOnce() -> ViewValues,
    replay: Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync>,
    dim: i64,
) -> Result<()> {
    let refs: Vec<&Tensor> = outs.iter().collect();
    let join: crate::autograd::JoinGrads = if name.starts_with("Unbind") {
        Arc::new(move |gs| crate::ops::join::stack(gs, dim))
    } else {
        Arc::new(move |gs| crate::ops::join::cat(gs, dim))
    };
    record_view_joined(name, t, &refs, values, replay, Some(join))
}

pub fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    crate::autograd::precheck(&[Some(t)])?;
    let outs = unbind_raw(t, dim)?;
    record_pieces("UnbindBackward0", t, &outs, || vec![("dim", Int(dim))], Arc::new(move |z| unbind_raw(z, dim)), dim)?;
    Ok(outs)
}

pub fn split(t: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    crate::autograd::precheck(&[Some(t)])?;
    let outs = split_raw(t, split_size, dim)?;
    let values = || vec![("dim", Int(dim)), sizes_of(t), ("split_size", Int(split_size))];
    record_pieces("SplitBackward0", t, &outs, values, Arc::new(move |z| split_raw(z, split_size, dim)), dim)?;
    Ok(outs)
}

pub fn split_with_sizes(t: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    crate::autograd::precheck(&[Some(t)])?;
    let outs = split_with_sizes_raw(t, sizes, dim)?;
    let s = sizes.to_vec();
    let values = || vec![("dim", Int(dim)), sizes_of(t), ("split_sizes", Ints(sizes.into()))];
    record_pieces("SplitWithSizesBackward0", t, &outs, values, Arc::new(move |z| split_with_sizes_raw(z, &s, dim)), dim)?;
    Ok(outs)
}

/// chunk is split in torch (SplitBackward0), or split_with_sizes for an empty dim.
pub fn chunk(t: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    let outs = chunk_raw(t, chunks, dim)?; // arguments first, as `reshape`
    crate::autograd::precheck(&[Some(t)])?;
    // chunk of an empty dim goes through split_with_sizes in torch
    let empty = t.ndim() > 0 && crate::shape::wrap_dim(dim, t.ndim()).is_ok_and(|d| t.shape()[d] == 0);
    let name = if empty { "SplitWithSizesBackward0" } else { "SplitBackward0" };
    // torch's chunk is split by ceil(size / chunks) (split_with_sizes of zeros for an empty dim)
    let pieces = outs.len();
    let values = || {
        if empty {
            return vec![("dim", Int(dim)), sizes_of(t), ("split_sizes", Ints(smallvec::smallvec![0; pieces]))];
        }
        let size = crate::shape::wrap_dim(dim, t.ndim()).map_or(0, |d| t.shape()[d] as i64); // checked by chunk_raw
        vec![("dim", Int(dim)), sizes_of(t), ("split_size", Int((size + chunks - 1) / chunks.max(1)))]
    };
    record_pieces(name, t, &outs, values, Arc::new(move |z| chunk_raw(z, chunks, dim)), dim)?;
    Ok(outs)
}

/// `x[...]` and `view_as(x)`-like aliases of the whole tensor (AliasBackward0).
pub fn alias(t: &Tensor) -> Result<Tensor> {
    let out = t.view_as_layout(t.layout.clone());
    record_view("AliasBackward0", t, &[&out], Arc::new(|z| one(Ok(z.view_as_layout(z.layout.clone())))))?;
    Ok(out)
}
