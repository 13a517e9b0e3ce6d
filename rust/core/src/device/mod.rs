//! The device seam: every op reaches memory and kernels through one per-device interface,
//! `Backend`, and never asks which device it is on.
//!
//! An op computes shapes, dtypes, layouts and autograd bookkeeping itself (the same for every
//! device), then hands the element work to `backend_for(..)`: "write op(src) into dst". The CPU
//! implementation (`cpu.rs`) calls the kernels that live beside each op; a CUDA implementation
//! is registered at run time by the bindings (the only Rust code allowed to call Python, which
//! owns CuPy). Views, version counters, the write path, the engine and the saved-tensor checks
//! are above this line and shared by all devices.
//!
//! What crosses the seam is tensors (storage + layout) and small op enums, never closures: a
//! closure cannot be sent to a GPU, an enum names a kernel on every device.

mod cpu;
mod widen;

pub use minigrad_base::device::{check_same_device, Device};

use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::binary::BinaryOp;
pub use crate::kernels::index::Walk;
pub use crate::ops::gather::ScatterOp;
use crate::kernels::unary::MathOp;
pub use crate::kernels::conv::Geometry as ConvGeometry;
pub use crate::kernels::pool::{AvgWindows, MaxGeometry};
use crate::ops::reduce::Reduction;
use crate::ops::unary::UnaryOp;
pub use crate::ops::unary::FloatMap;
pub use crate::ops::scan::ScanOp;
pub use crate::ops::sort::SortOp;
use crate::storage::Storage;
use crate::tensor::Tensor;
use std::sync::{Arc, RwLock};

/// How a binary kernel's destination relates to its first operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryMode {
    /// `dst` is new memory.
    Fresh,
    /// `dst` is `a` itself; `b` does not overlap it (checked by the write path).
    InPlace,
    /// `dst` is `a` and `b` is the very same elements (`x += x`).
    InPlaceSelf,
}

/// The distribution of a random fill (`Backend::random_fill`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RandomDist {
    Uniform { from: f64, to: f64 },
    Normal { mean: f64, std: f64 },
}

/// One device's memory and kernels. Every method writes only `dst` (a fresh output, or a tensor
/// the caller has passed through `ops::write`), reads only its sources, and returns an error
/// (never panics) when the device refuses.
pub trait Backend: Send + Sync {
    fn device(&self) -> Device;

    /// `nbytes` of memory (size already checked by `shape::storage_nbytes_*`), zeroed on request.
    fn allocate(&self, nbytes: usize, dtype: DType, zeroed: bool) -> Result<Arc<Storage>>;

    /// `dst = cast(src)`, `src` read through `src_strides` (its strides broadcast to `dst`'s
    /// shape). Both on this device; `dst` does not overlap `src`.
    fn copy(&self, dst: &Tensor, src: &Tensor, src_strides: &[isize]) -> Result<()>;

    /// Every element of `dst` set to `value` cast to `dst`'s dtype.
    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()>;

    /// `dst = op(src)`; `src` already has the compute dtype (the op layer casts) and `dst` that
    /// dtype too, except for `logical_not` (bool out). `in_place`: `dst` is `src`.
    fn unary(&self, op: UnaryOp, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()>;

    /// `dst = op(a, b)` with `a`, `b` cast to the compute dtype and broadcast to `dst`'s shape;
    /// `alpha` (add/sub on floats) is fused as `a + alpha * b`, rounded once.
    fn binary(&self, op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: BinaryMode, alpha: Option<f64>) -> Result<()>;

    /// `dst = cond ? a : b`, all three broadcast to `dst`'s shape; `a`, `b` of `dst`'s dtype,
    /// `cond` bool.
    fn where_(&self, dst: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()>;

    /// In place: `dst[i] = value` where `mask` (bool, broadcast) is set. `dst` may alias itself
    /// (an expanded tensor, as torch allows here): every alias gets the same value.
    fn masked_fill(&self, dst: &Tensor, mask: &Tensor, value: Scalar) -> Result<()>;

    /// `dst = clamp(src, lo, hi)` in `dst`'s dtype (torch's rule: NaN in the input or a bound
    /// wins, raise to `lo` then lower to `hi`). Bounds are numbers or tensors broadcast to `dst`;
    /// `in_place`: `dst` is `src`.
    fn clamp(&self, dst: &Tensor, src: &Tensor, lo: Bound<'_>, hi: Bound<'_>, in_place: bool) -> Result<()>;

    /// `dst = map(src)` for a float map computed in f64 and rounded once to `dst`'s float dtype
    /// (leaky_relu, the elu family, gelu's cdf: `FloatMap`); `in_place`: `dst` is `src`.
    fn float_map(&self, map: FloatMap, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        let _ = (dst, src, in_place);
        Err(not_implemented(self.device(), map.name()))
    }

    /// `dst = g * op'(s)` in one pass (`s` the op's saved input or result, same shape and float
    /// dtype as `g`), an optimisation of the composite backward formula. Returns false when the
    /// device has no fused kernel for `op`; the caller then runs the composite formula.
    fn fused_unary_backward(&self, _op: MathOp, _dst: &Tensor, _g: &Tensor, _s: &Tensor) -> Result<bool> {
        Ok(false)
    }

    /// `g * op'(s)` by the device's own one-pass kernel for `op`, with the composite formula's
    /// arithmetic operation for operation (same shape and float dtype for `g` and `s`): a fresh
    /// tensor made by `out` (the op layer's layout), or None when the device has no such kernel
    /// (then `out` is not called and the caller runs the composite formula).
    fn unary_backward(&self, _op: UnaryOp, _g: &Tensor, _s: &Tensor, _out: &dyn Fn() -> Result<Tensor>) -> Result<Option<Tensor>> {
        Ok(None)
    }

    /// `dst += src` (same float dtype, `src` broadcast): gradient accumulation. Overlapping
    /// elements of `dst` each receive every contribution.
    fn add_into(&self, dst: &Tensor, src: &Tensor) -> Result<()>;

    /// One reduction of `src` over `dims`, written into `values` and/or `indices`.
    ///
    /// - `src`: any dtype the op allows (below), ANY strides (broadcast stride 0 included; a
    ///   backend that needs a contiguous `(outer, red, inner)` view makes that copy itself).
    /// - `dims`: the reduced dims of `src`, ascending and distinct, each `< src.ndim()`. Every dim
    ///   listed is folded; the others are kept. A full reduction lists every dim. An empty list
    ///   reduces nothing: each output is the reduction of one element (`all(dim=())`, a 0-d
    ///   `src`), so it is `red = 1`, never "all".
    /// - outputs: fresh contiguous tensors on this device, allocated by the op layer with the
    ///   result dtype. Their element count is the product of the kept sizes and element `o` is
    ///   the kept dims' row-major index (keepdim's size-1 dims are the op layer's business: a
    ///   backend reads only the element count, never the output shape). `values` is the result
    ///   of every op; `indices` (int64) is written by `Argmax`/`Argmin` only: `argmax` passes
    ///   `values: None`, `max(dim)` both. Other ops get `indices: None`.
    /// - dtypes (`T` = `src`'s): `Sum`/`Prod` any `T` into any dst dtype (the op layer picks it:
    ///   int64 for integer and bool sums, or `dtype=`); `Mean` any `T` into a float dst;
    ///   `Amax`/`Amin` and `Argmax`/`Argmin`'s values dst `T`; `All`/`Any` dst bool;
    ///   `CountNonzero` dst int64; `Norm` float `T` into a float dst at least as wide; `Var` and
    ///   `LogSumExp` float `T`, dst `T` (the op layer casts integer input to float first).
    ///   Accumulation as the CPU reducers (docs/gpu.md, "Accumulation and determinism").
    /// - empty reductions (a reduced size 0): `Sum` 0, `Prod` 1, `Mean` NaN, `All` true, `Any`
    ///   false, `CountNonzero` 0, `Norm` with `p >= 0` (not inf) 0, `LogSumExp` -inf. The op layer
    ///   never asks for `Amax`/`Amin`/`Argmax`/`Argmin`, norms without an identity (`p < 0` or
    ///   inf) or `Var` on an empty `src` (it raises torch's error or fills NaN itself). A `dst`
    ///   with no elements may return at once.
    ///
    /// Default: torch's NotImplementedError naming the op and the device.
    fn reduce(&self, op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> Result<()> {
        let _ = (values, indices, src, dims);
        Err(not_implemented(self.device(), op.name()))
    }

    /// `dst = softmax(src)` (or `log_softmax` when `log`) along `dim`. `src` and `dst` are
    /// contiguous (the op layer copies), of the same shape and float dtype; `dst` is fresh.
    /// `dim < src.ndim()`, or 0 for a 0-d `src` (one row of one element). Viewed as
    /// `(outer, n, inner)` around `dim`, as `mg_softmax<T, LOG>` takes it. `src` is not empty.
    ///
    /// Default: torch's NotImplementedError.
    fn softmax(&self, dst: &Tensor, src: &Tensor, dim: usize, log: bool) -> Result<()> {
        let _ = (dst, src, dim);
        Err(not_implemented(self.device(), if log { "_log_softmax" } else { "_softmax" }))
    }

    /// The backward of `softmax`/`log_softmax` in one pass, as `mg_softmax_backward<T, LOG>`:
    /// softmax `grad_input = r * (g - sum(g * r))`, log_softmax `grad_input = g - exp(r) *
    /// sum(g)`, sums along `dim`. `result` is the forward's output, `grad` the incoming gradient
    /// (same shape and float dtype, ANY strides: a backend that needs contiguous operands copies
    /// them), `grad_input` fresh and contiguous. Called only when no graph of the backward is
    /// recorded (not `create_graph`). Returns false when the device has no fused kernel: the op
    /// layer then runs the composite formula (sum, mul, sub, exp through this backend), which is
    /// what the default and the CPU do.
    fn softmax_backward(&self, grad_input: &Tensor, grad: &Tensor, result: &Tensor, dim: usize, log: bool) -> Result<bool> {
        let _ = (grad_input, grad, result, dim, log);
        Ok(false)
    }

    /// `dst[B] = a[B] @ b[B]` for every batch index `B`: `a` is `(B..., m, k)`, `b` `(B..., k, n)`,
    /// `dst` `(B..., m, n)`, all with the same batch shape (zero or more dims; the op layer has
    /// already broadcast `a` and `b` to it, with stride 0 on broadcast dims). `a` and `b` have
    /// ANY strides (transposed, sliced, broadcast; a vector operand of mv/dot arrives as a
    /// one-column or one-row matrix view), `dst` is fresh and contiguous; all three share one
    /// dtype among float32, float64, int32, int64 (integers wrap, as torch's). `m`, `n`, `k` and
    /// the batch count are all at least 1 (the op layer returns empty or zero results itself).
    /// Float products may use any summation order that is fixed for given shapes and strides.
    ///
    /// Default: torch's NotImplementedError.
    fn matmul(&self, dst: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        let _ = (dst, a, b);
        Err(not_implemented(self.device(), "mm"))
    }

    /// Fills `dst` (this device, ANY layout except overlapping: the write path has checked it;
    /// a float dtype; possibly empty) with independent draws from `dist`, in the row-major order
    /// of `dst`'s shape, from this device's own generator, which it advances. Uniform draws lie
    /// in `[from, to)` (a value that would round up to `to` is not drawn); normal draws have
    /// the given mean and standard deviation. The CPU backend draws from the core's generator
    /// (`manual_seed`); a GPU backend from a counter-based one seeded the same way.
    ///
    /// Default: torch's NotImplementedError.
    fn random_fill(&self, dst: &Tensor, dist: RandomDist) -> Result<()> {
        let _ = dst;
        Err(not_implemented(self.device(), match dist {
            RandomDist::Uniform { .. } => "uniform_",
            RandomDist::Normal { .. } => "normal_",
        }))
    }

    /// Copies a contiguous tensor on this device into contiguous host memory of the same dtype,
    /// or back (`to_host` false). Used by `to(device)`, `item()` and `tolist()` (which therefore
    /// synchronise, as torch's do).
    fn transfer(&self, host: &Tensor, device: &Tensor, to_host: bool) -> Result<()>;

    /// Gather along `dim` (gather, index_select, and so embedding and nll_loss): for every
    /// position `pos` of `dst`'s shape, `dst[pos] = src[pos with coordinate dim := index[pos]]`.
    ///
    /// - `dst`: fresh (no internal overlap, shares no memory with the sources), any dtype `T`,
    ///   at least 1-D (the op layer views a 0-d operand as `[1]`), any strides.
    /// - `index`: int64, `dst`'s shape, ANY strides (index_select passes its 1-D index with
    ///   stride 0 on every other dim). Every value is already checked to lie in
    ///   `[0, src.size(dim))` (the op layer reads the indices on the host first, so an
    ///   out-of-range index raises torch's CPU message on every device).
    /// - `src`: dtype `T`, `dst`'s number of dims, at least `dst`'s size on every dim but `dim`,
    ///   any strides.
    ///
    /// Default: torch's NotImplementedError.
    fn gather(&self, dst: &Tensor, src: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
        let _ = (dst, src, dim, index);
        Err(not_implemented(self.device(), "gather"))
    }

    /// Scatter along `dim` (scatter, scatter_add, index_add and their in-place forms, the
    /// backward of gather and index_select): for every position `pos` of `index`'s shape, in
    /// increasing order along `dim`, `dst[pos with dim := index[pos]] = op(that element,
    /// src[pos])`.
    ///
    /// - `dst`: any dtype `T`, at least 1-D, no internal overlap, shares no memory with `index`
    ///   or `src` (the op layer makes private copies); written in place (the op layer has passed
    ///   it through the write path, or it is fresh).
    /// - `index`: int64, its own shape (the iteration shape), ANY strides; values checked to
    ///   lie in `[0, dst.size(dim))`; on every other dim its size is at most `dst`'s.
    /// - `src`: dtype `T`, `index`'s shape, ANY strides (stride 0 everywhere for a number).
    /// - `op`: `Assign` (duplicates: the last in index order wins), `Add`, `Multiply`,
    ///   `AddScaled(alpha)` (`+= alpha * src`, alpha cast to `T`). Integers wrap; on bool, add
    ///   is `or` and multiply is `and`, as torch's. Each destination element receives its
    ///   updates in index order, so results are deterministic (float sums too).
    ///
    /// Default: torch's NotImplementedError.
    fn scatter(&self, dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: ScatterOp) -> Result<()> {
        let _ = (dst, dim, index, src, op);
        Err(not_implemented(self.device(), "scatter"))
    }

    /// Advanced-indexing read, `x[indices]` (torch's `index`), as a `Walk` the op layer built on
    /// the host (it reads the index values there, to check them and turn them into offsets):
    /// for every outer position `o`, index position `p` and inner position `i`,
    /// `dst[a_offset + o.a + positions[p].0 + i.a] = src[b_offset + o.b + positions[p].1 + i.b]`,
    /// offsets in elements from each storage's first element. `dst` is fresh (its reached
    /// elements distinct), `src` of `dst`'s dtype; every offset lies inside its storage.
    ///
    /// Default: torch's NotImplementedError.
    fn index_gather(&self, dst: &Tensor, src: &Tensor, walk: &Walk) -> Result<()> {
        let _ = (dst, src, walk);
        Err(not_implemented(self.device(), "index.Tensor"))
    }

    /// Advanced-indexing write (`index_put_`, `x[indices] = v`, IndexBackward0 with
    /// `accumulate`): the `Walk` of `index_gather` with the roles turned round,
    /// `dst[a..] = values[b..]`, or `+=` when `accumulate` (integers wrap, bool is `or`).
    /// Positions may repeat: each destination element receives its updates in position order
    /// (the last write wins; sums add in order), so results are deterministic. `dst` has no
    /// internal overlap and went through the write path; `values` (dst's dtype) does not
    /// overlap it. `values` may be a 0-d CPU tensor (a wrapped number; every `b` stride is 0).
    ///
    /// Default: torch's NotImplementedError.
    fn index_scatter(&self, dst: &Tensor, values: &Tensor, walk: &Walk, accumulate: bool) -> Result<()> {
        let _ = (dst, values, walk, accumulate);
        Err(not_implemented(self.device(), "index_put_"))
    }

    /// `nonzero(src)`: a fresh int64 tensor on this device of shape `(n, src.ndim())`, the
    /// coordinates of the nonzero elements in row-major order, laid out column-major (strides
    /// `(1, n)`) as torch's CPU kernel lays it out. `src` is contiguous, any dtype. The size `n`
    /// is data-dependent, so a device synchronises here (torch's CUDA nonzero does too).
    ///
    /// Default: torch's NotImplementedError.
    fn nonzero(&self, src: &Tensor) -> Result<Tensor> {
        let _ = src;
        Err(not_implemented(self.device(), "nonzero"))
    }

    /// `masked_select`: a fresh 1-D tensor on this device of the elements of `src` where `mask`
    /// is true, in row-major order. `src` and `mask` (bool) are contiguous, of one shape (the
    /// op layer broadcasts). Synchronises, as `nonzero`.
    ///
    /// Default: torch's NotImplementedError.
    fn masked_select(&self, src: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let _ = (src, mask);
        Err(not_implemented(self.device(), "masked_select"))
    }

    // ----- convolution, pooling and index-map padding (ops/conv.rs, ops/pool.rs, ops/pad.rs) -----
    //
    // Shared rules: every tensor is contiguous and on this device (the op layer copies), of one
    // float dtype (float32 or float64; pooling indices int64), NCHW; outputs are fresh and are
    // overwritten entirely. The geometry has been checked by the op layer with torch's rules
    // (sizes consistent, stride/dilation/groups >= 1, every output size >= 1 except the batch,
    // which may be 0). A backend may use any summation order that is fixed for given shapes
    // (the CPU's is its kernels'), so two runs give bit-identical results.

    /// `out = conv2d(x, w) + bias`: `x` `[n, c_in, h, w]`, `w` `[c_out, c_in / groups, kh,
    /// kw]`, `bias` `[c_out]` or None, `out` `[n, c_out, oh, ow]`, as `g` says (kernels'
    /// `conv::Geometry`: stride, zero padding, dilation, groups). `c_in / groups` may be 0 (then
    /// `out` is the bias, or zeros).
    ///
    /// Default: torch's NotImplementedError.
    fn conv2d(&self, out: &Tensor, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, g: &ConvGeometry) -> Result<()> {
        let _ = (out, x, w, bias, g);
        Err(not_implemented(self.device(), "convolution"))
    }

    /// The input gradient of `conv2d` (a transposed convolution): `dx` `[n, c_in, h, w]` from
    /// `grad` `[n, c_out, oh, ow]` and `w`. Input elements no tap reads get 0.
    ///
    /// Default: torch's NotImplementedError.
    fn conv2d_input_grad(&self, dx: &Tensor, grad: &Tensor, w: &Tensor, g: &ConvGeometry) -> Result<()> {
        let _ = (dx, grad, w, g);
        Err(not_implemented(self.device(), "convolution_backward"))
    }

    /// The weight gradient of `conv2d`: `dw` `[c_out, c_in / groups, kh, kw]` = the sum over
    /// images and output pixels of `grad ⊗ input patch`; zeros when `n` is 0.
    ///
    /// Default: torch's NotImplementedError.
    fn conv2d_weight_grad(&self, dw: &Tensor, x: &Tensor, grad: &Tensor, g: &ConvGeometry) -> Result<()> {
        let _ = (dw, x, grad, g);
        Err(not_implemented(self.device(), "convolution_backward"))
    }

    /// Max pooling of every `(h, w)` plane of `x` (`[planes.., h, w]`) into `out` and `indices`
    /// (`[planes.., oh, ow]`, int64: the flat position `iy * w + ix` of the chosen element in
    /// its plane). torch's rules: padding is -inf, the first maximum in row-major window order
    /// wins ties, a NaN is always taken (so NaN propagates); a window with no input element
    /// gives -inf and the index of its first tap at or after 0.
    ///
    /// Default: torch's NotImplementedError.
    fn max_pool2d(&self, out: &Tensor, indices: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        let _ = (out, indices, x, g);
        Err(not_implemented(self.device(), "max_pool2d_with_indices"))
    }

    /// The input gradient of `max_pool2d`: `dx` (shape of `x`) gets each output's `grad` added
    /// at its recorded index; elements chosen by no window get 0. `g` is the forward's.
    ///
    /// Default: torch's NotImplementedError.
    fn max_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, indices: &Tensor, g: &MaxGeometry) -> Result<()> {
        let _ = (dx, grad, indices, g);
        Err(not_implemented(self.device(), "max_pool2d_with_indices_backward"))
    }

    /// Average pooling of every `(h, w)` plane of `x` into `out` (`[planes.., oh, ow]`, `oh`
    /// = `win.rows.len()`, `ow` = `win.cols.len()`): output `(oy, ox)` is the sum of the input
    /// rows `win.rows[oy].start..end` x columns `win.cols[ox].start..end`, divided by
    /// `win.divisor`. Strided (`avg_pool2d`) and adaptive windows both arrive this way; starts
    /// and ends never decrease along a dim.
    ///
    /// Default: torch's NotImplementedError.
    fn avg_pool2d(&self, out: &Tensor, x: &Tensor, win: &AvgWindows) -> Result<()> {
        let _ = (out, x, win);
        Err(not_implemented(self.device(), "avg_pool2d"))
    }

    /// The adjoint of `avg_pool2d`: `dx` (`[planes.., h, w]`) gets, at every input element,
    /// the sum of `grad / divisor` of the windows that cover it.
    ///
    /// Default: torch's NotImplementedError.
    fn avg_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, win: &AvgWindows) -> Result<()> {
        let _ = (dx, grad, win);
        Err(not_implemented(self.device(), "avg_pool2d_backward"))
    }

    /// Index-map padding of the last two dims (reflect, replicate): `out[p][i][j] =
    /// x[p][rows[i]][cols[j]]`, `x` `[planes.., h, w]`, `out` `[planes.., rows.len(),
    /// cols.len()]`, every map entry inside the input.
    ///
    /// Default: torch's NotImplementedError.
    fn pad2d(&self, out: &Tensor, x: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        let _ = (out, x, rows, cols);
        Err(not_implemented(self.device(), "reflection_pad2d"))
    }

    /// The adjoint of `pad2d`: `dx` (`[planes.., h, w]`) gets every output gradient added at its
    /// source pixel (0 where no output reads it).
    ///
    /// Default: torch's NotImplementedError.
    fn pad2d_backward(&self, dx: &Tensor, grad: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        let _ = (dx, grad, rows, cols);
        Err(not_implemented(self.device(), "reflection_pad2d_backward"))
    }

    /// `torch.native_batch_norm` after the op layer's checks: `x` `[n, c, ...]` (float, any
    /// strides, `n·prod(...)` may be 0), the optional per-channel tensors of `c` elements and
    /// `x`'s dtype. Returns fresh tensors on this device: the output (`x`'s shape and dtype) and,
    /// in training, the batch mean and `1 / sqrt(biased var + eps)` (`[c]`), else two empty
    /// `[0]` tensors. In training with a non-empty batch, `running_mean`/`running_var` are
    /// updated in place to `(1 - momentum) * old + momentum * new` (unbiased variance) WITHOUT a
    /// version bump (torch updates them inside its kernel); in evaluation they normalise.
    /// Statistics accumulate in double, as the CPU's.
    ///
    /// Default: torch's NotImplementedError.
    #[allow(clippy::too_many_arguments)]
    fn batch_norm(
        &self,
        x: &Tensor,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let _ = (x, running_mean, running_var, weight, bias, training, momentum, eps);
        Err(not_implemented(self.device(), "native_batch_norm"))
    }

    /// `torch.native_layer_norm` after the op layer's checks: each row of the trailing
    /// `normalized_shape` elements of `x` (float, any strides) normalised to zero mean and unit
    /// biased variance, then `* weight + bias` (each of `normalized_shape`, optional). Returns
    /// fresh tensors on this device: the output, and the rows' mean and `1 / sqrt(var + eps)`
    /// shaped as `x`'s leading dims followed by ones. Statistics accumulate in double.
    ///
    /// Default: torch's NotImplementedError.
    fn layer_norm(&self, x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
        let _ = (x, normalized_shape, weight, bias, eps);
        Err(not_implemented(self.device(), "native_layer_norm"))
    }

    /// One optimizer step over a parameter group (ops/optim.rs): `rule` (SGD or Adam/AdamW with
    /// its hyper-parameters) applied to every slot's parameter, gradient and state buffers, in
    /// place, with the arithmetic of kernels/optim.rs. Every tensor of a slot is contiguous, of
    /// the parameter's shape and float dtype, on this device, and shares memory with no other
    /// operand; slots may differ in size. The op layer does the version bumps and the step
    /// counters. A GPU does the whole group in one launch.
    ///
    /// Default: torch's NotImplementedError.
    fn optim_step(&self, rule: crate::ops::optim::Rule, slots: &[crate::ops::optim::Slot]) -> Result<()> {
        let _ = slots;
        Err(not_implemented(self.device(), match rule {
            crate::ops::optim::Rule::Sgd(_) => "_fused_sgd_",
            crate::ops::optim::Rule::Adam(_) => "_fused_adam_",
        }))
    }

    /// The first-order gradients of training-mode `batch_norm` in one kernel, an optimisation
    /// of the composite formula (called only when no graph of the backward is recorded): `g`
    /// and `x` of one float dtype and shape, statistics recomputed from `x` (biased variance,
    /// `eps`) and per-channel sums in double. Returns (grad_input, grad_weight, grad_bias)
    /// (`[c]` each; grad_weight as if weight were given), or None when the device has no such
    /// kernel: the caller then runs the composite formula.
    fn batch_norm_backward(&self, g: &Tensor, x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Option<(Tensor, Tensor, Tensor)>> {
        let _ = (g, x, weight, eps);
        Ok(None)
    }

    // ----- sorting, selection and scans along the last dim (ops/sort.rs, ops/scan.rs) -----

    /// `op` (sort, topk, kthvalue, median: `SortOp`) on every row of `src`, a contiguous
    /// `[rows, n]` tensor on this device (`rows >= 1`, `n >= 1`: the op layer answers empty and
    /// 0-d inputs itself, and moves the dim along which it works last). `values` (`src`'s dtype)
    /// and `indices` (int64, positions in the row) are fresh and contiguous, `[rows, width]`
    /// with the width `SortOp` names. `src`'s dtype: any but bool for topk/kthvalue/median (the
    /// op layer refuses bool with torch's error). Values AND indices are the CPU's, ties and NaN
    /// placement included (`kernels::sort` says which algorithm decides them). A backend may
    /// instead give long rows the stable order (ties in index order; torch leaves them
    /// unspecified) and pick topk/kthvalue/median from it: CUDA does above 2048 (docs/gpu.md).
    ///
    /// Default: torch's NotImplementedError.
    fn sort(&self, op: SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> Result<()> {
        let _ = (values, indices, src);
        Err(not_implemented(self.device(), op.name()))
    }

    /// A running `op` (cumsum, cumprod, logcumsumexp) along every row of `src`, a contiguous
    /// `[rows, n]` tensor on this device (`rows, n >= 1`), into `dst` (fresh, contiguous, same
    /// shape and dtype: the op layer has cast to the result dtype; never bool; logcumsumexp
    /// float only). Each row left to right, accumulating in `acc` (torch's CPU `acc_type`:
    /// float64 for float32/float64, float32 for the half types, which `Widen` hands over as
    /// float32 rows, int64 wrapping for the integers), each partial result rounded once into
    /// `dst`: the CPU's order, so sums and products agree bit for bit on every device.
    ///
    /// Default: torch's NotImplementedError.
    fn scan(&self, op: ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> Result<()> {
        let _ = (dst, src, acc);
        Err(not_implemented(self.device(), op.name()))
    }

    /// `max_pool2d`'s values alone, for a call whose indices nobody reads (no gradient is
    /// recorded and the caller did not ask for them): the same maxima as `max_pool2d`.
    ///
    /// Default: `max_pool2d` into a scratch int64 index tensor on this device.
    fn max_pool2d_values(&self, out: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        let indices = Tensor::empty_on(out.shape(), DType::Int64, out.device())?;
        self.max_pool2d(out, &indices, x, g)
    }

    // ----- one bool mask (ops/advanced/mask_index.rs): `x[mask] = v`, `x[:, mask]`, the
    // backward of masked_select and of `x[mask]`; no index value leaves the device -----

    /// The rank of every true element of `mask` (bool, contiguous, at least 1-D): a fresh
    /// contiguous int64 tensor of `mask`'s shape on this device holding, where `mask` is true,
    /// the number of true elements before it in row-major order, and -1 elsewhere; with the
    /// number of true elements (a device synchronises for it, as for `nonzero`).
    ///
    /// Default: torch's NotImplementedError.
    fn mask_ranks(&self, mask: &Tensor) -> Result<(Tensor, usize)> {
        let _ = mask;
        Err(not_implemented(self.device(), "nonzero"))
    }

    /// The write through one mask over dims `[first, first + k)` of `dst` (`ranks` from
    /// `mask_ranks`, shape `dst.shape[first..first + k]`): for every position `(b, m, a)` of
    /// `dst` with `ranks[m] >= 0`, `dst[b, m, a] = values[b, ranks[m], a]` (`+=` when
    /// `accumulate`: integers wrap, bool is `or`, half types add in float32 and round).
    /// `values` has `dst`'s dtype and shape `dst.shape[..first] + [n] + dst.shape[first + k..]`
    /// (`n` the count), ANY strides (0 where broadcast), and does not overlap `dst`; `dst` has
    /// no internal overlap and went through the write path. Each element is written at most once.
    ///
    /// Default: torch's NotImplementedError.
    fn masked_put(&self, dst: &Tensor, first: usize, ranks: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
        let _ = (dst, first, ranks, values, accumulate);
        Err(not_implemented(self.device(), "index_put_"))
    }

    /// The read through one mask (`x[:, mask]`): `dst[b, ranks[m], a] = src[b, m, a]` for
    /// every position of `src` with `ranks[m] >= 0` (`ranks` as in `masked_put`). `dst` is
    /// fresh, of `src`'s dtype and shape `src.shape[..first] + [n] + src.shape[first + k..]`,
    /// any strides; `src` any strides.
    ///
    /// Default: torch's NotImplementedError.
    fn masked_take(&self, dst: &Tensor, src: &Tensor, first: usize, ranks: &Tensor) -> Result<()> {
        let _ = (dst, src, first, ranks);
        Err(not_implemented(self.device(), "index.Tensor"))
    }

    /// `index_gather` with the position table made on this device from the index tensors
    /// (`walk.positions` is empty; `table` says how to make it): the op layer has checked the
    /// integer indices (torch's errors) and a mask's columns are in range by construction, so
    /// no index value has to be read on the host for the table. Returns false when the device
    /// has no such path; the op layer then builds the table on the host and calls
    /// `index_gather`.
    fn index_gather_table(&self, dst: &Tensor, src: &Tensor, walk: &Walk, table: &IndexTable) -> Result<bool> {
        let _ = (dst, src, walk, table);
        Ok(false)
    }

    /// `index_scatter` with the position table made on this device, as `index_gather_table`.
    fn index_scatter_table(&self, dst: &Tensor, values: &Tensor, walk: &Walk, table: &IndexTable, accumulate: bool) -> Result<bool> {
        let _ = (dst, values, walk, table, accumulate);
        Ok(false)
    }

    /// `dst = bias + a @ b` for one `(m, k) @ (k, n)` float32/float64 product (addmm with beta
    /// and alpha 1, as every Linear layer calls it): `bias` is `(m, n)` with any strides (the
    /// broadcast `self`), `dst` fresh and contiguous; otherwise `matmul`'s contract. One pass
    /// over the output instead of a product and an add. Returns false when the device has no
    /// such kernel (nothing written); the op layer then computes the product and adds it.
    fn matmul_bias(&self, dst: &Tensor, bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<bool> {
        let _ = (dst, bias, a, b);
        Ok(false)
    }
}

/// How a backend makes an advanced index's position table (`Walk::positions`) on its device.
/// Position `p` runs row-major over `replacement`; its pair is `(a, b)` where one side is the
/// indexed tensor's offset `sum_j wrap(indices[j].0[p]) * indices[j].2` (`wrap(v)` is `v + size`
/// for a negative `v`, `size = indices[j].1`; every value is already known to be in range) and
/// the other the row-major side's offset `sum_d coord_d(p) * rows[d]`. `indices_in_a`: the
/// indexed tensor is `a` (a scatter, `index_put_`) rather than `b` (a gather, `x[idx]`).
/// Each index is an int64 tensor on the device with `replacement`'s shape (any strides, 0
/// where broadcast).
pub struct IndexTable {
    pub replacement: Vec<usize>,
    pub rows: Vec<isize>,
    pub indices: Vec<(Tensor, usize, isize)>,
    pub indices_in_a: bool,
}

/// torch's NotImplementedError for an op a backend does not have ("Could not run 'aten::sum'
/// with arguments from the 'CUDA' backend."), which the default trait methods return.
pub fn not_implemented(device: Device, op: &str) -> Error {
    let key = match device {
        Device::Cpu => "CPU",
        Device::Cuda(_) => "CUDA",
    };
    Error::NotImplemented(format!(
        "Could not run 'aten::{}' with arguments from the '{}' backend. minigrad does not implement {} on device {} yet.",
        op, key, op, device
    ))
}

/// A clamp bound.
#[derive(Clone, Copy)]
pub enum Bound<'a> {
    None,
    Number(Scalar),
    Tensor(&'a Tensor),
}

static CPU_KERNELS: cpu::Cpu = cpu::Cpu;
/// The CPU backend, behind the narrow-dtype widening every backend gets (`widen.rs`).
static CPU: widen::Widen = widen::Widen(&CPU_KERNELS);

/// Backends registered for CUDA devices, by ordinal (filled by the bindings).
static CUDA: RwLock<Vec<Option<&'static dyn Backend>>> = RwLock::new(Vec::new());

/// Makes `backend` the implementation of its device. Called once per device by the bindings;
/// a backend lives for the rest of the process (tensors on it may outlive any Python object).
pub fn register(backend: Box<dyn Backend>) -> Result<()> {
    let Device::Cuda(i) = backend.device() else {
        return Err(Error::Runtime("the CPU backend is built in".into()));
    };
    let mut table = CUDA.write().unwrap_or_else(|e| e.into_inner());
    let i = i as usize;
    if table.len() <= i {
        table.resize(i + 1, None);
    }
    table[i] = Some(Box::leak(Box::new(widen::Widen(Box::leak(backend)))));
    Ok(())
}

/// Forgets the backend of `device` (the CPU's stays). The backend itself is not freed: tensors
/// on it may still exist, and their ops now fail with the "no backend" error. For tests that
/// register a stand-in device and leave the process as they found it.
pub fn unregister(device: Device) {
    if let Device::Cuda(i) = device {
        let mut table = CUDA.write().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = table.get_mut(i as usize) {
            *slot = None;
        }
    }
}

/// The backend of `device`, or torch's words for a device this process cannot use.
pub fn backend(device: Device) -> Result<&'static dyn Backend> {
    match device {
        Device::Cpu => Ok(&CPU),
        Device::Cuda(i) => {
            let table = CUDA.read().unwrap_or_else(|e| e.into_inner());
            table.get(i as usize).copied().flatten().ok_or_else(|| {
                Error::Runtime(format!("minigrad: no backend for device '{}' (is minigrad.cuda available?)", device))
            })
        }
    }
}

/// The backend shared by `tensors` (torch's device-mismatch error when they differ). As in
/// torch, a 0-d CPU tensor (a wrapped Python number, or `torch.tensor(2.)`) may accompany tensors
/// of another device: backends accept such an operand wherever a scalar can stand.
pub fn backend_for(tensors: &[&Tensor]) -> Result<&'static dyn Backend> {
    backend(common_device(tensors)?)
}

/// The device an op over `tensors` runs on (see `backend_for`).
pub fn common_device(tensors: &[&Tensor]) -> Result<Device> {
    let is_cpu_scalar = |t: &&&Tensor| t.ndim() == 0 && t.device().is_cpu();
    if tensors.iter().all(|t| is_cpu_scalar(&t)) {
        return Ok(Device::Cpu);
    }
    check_same_device(tensors.iter().filter(|t| !is_cpu_scalar(t)).map(|t| t.device()))
}
