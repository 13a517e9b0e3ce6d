//! `clamp` / `clamp_min` / `clamp_max` with number bounds (`clamp.Scalar`) or tensor bounds
//! (`clamp.Tensor`), in place or not, and their gradients (the bounds pass it inclusively).

use crate::bail;
use crate::dtype::{check_castable, result_type, DType, Scalar};
use crate::element::Element;
use crate::error::Result;
use crate::kernels::elementwise::{map, map_inplace, zip, zip3};
use crate::kernels::Arg as K;
use crate::kernels::TensorArg;
use crate::layout::Layout;
use crate::ops::copy::{cast_input, cast_layout, check_no_partial_overlap, copy_kernel, empty_with_layout, iterator_layout};
use crate::ops::write::{check_no_internal_overlap, write};
use crate::ops::{broadcast_strides, Arg};
use crate::shape::{broadcast_all, check_inplace_shape};
use crate::tensor::Tensor;
use super::{not, BinaryOp};
use crate::device::Bound;

/// torch's clamp: NaN in the input or a bound gives NaN; otherwise the value is raised to `lo`,
/// then lowered to `hi` (so `lo > hi` gives `hi`). `x != x` is false for integers and bools.
#[allow(clippy::eq_op)]
fn clamp3<T: Element>(x: T, lo: Option<T>, hi: Option<T>) -> T {
    if x != x {
        return x;
    }
    let mut v = x;
    if let Some(lo) = lo {
        if lo != lo {
            return lo;
        }
        if v < lo {
            v = lo;
        }
    }
    if let Some(hi) = hi {
        if hi != hi {
            return hi;
        }
        if v > hi {
            v = hi;
        }
    }
    v
}

/// `clamp`/`clamp_min`/`clamp_max` with Python-number bounds (torch's `clamp.Scalar`, where a 0-d
/// tensor bound also counts as a number): computed in `x`'s dtype promoted by the bounds (floats
/// stay), laid out as a unary op. In place, the promoted type must be `x`'s own.
pub fn clamp_scalar_raw(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>, in_place: bool) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let dtype = if x.dtype().is_floating() {
        x.dtype()
    } else {
        let mut ops = vec![Arg::Tensor(x.clone()).promotion()];
        ops.extend([min, max].into_iter().flatten().map(|s| Arg::Scalar(s).promotion()));
        result_type(&ops)
    };
    if in_place && dtype != x.dtype() {
        bail!(Runtime, "result type {} can't be cast to the desired output type {}", dtype.scalar_type_name(), x.dtype().type_meta_name());
    }
    if in_place {
        check_no_internal_overlap(x)?;
    }
    if dtype == DType::Bool {
        let kernel = match (min, max) {
            (Some(_), Some(_)) => "clamp_scalar_cpu",
            (Some(_), None) => "clamp_min_scalar_cpu",
            _ => "clamp_max_scalar_cpu",
        };
        bail!(NotImplemented, "\"{}\" not implemented for 'Bool'", kernel);
    }
    if dtype.is_narrow() {
        // the kernel converts each bound to the narrow type with torch's overflow check
        for b in [min, max].into_iter().flatten() {
            crate::ops::index::checked_convert(b, dtype)?;
        }
    }
    // Both bounds given and either is NaN: torch fills the result with NaN.
    let nan_fill = matches!((min, max), (Some(a), Some(b)) if a.to_f64().is_nan() || b.to_f64().is_nan());
    let bound = |b: Option<Scalar>| b.map_or(Bound::None, Bound::Number);
    let body = |dst: &Tensor, src: &Tensor, inplace: bool| {
        let backend = crate::device::backend_for(&[dst, src])?;
        if nan_fill {
            backend.fill(dst, Scalar::Float(f64::NAN))
        } else {
            backend.clamp(dst, src, bound(min), bound(max), inplace)
        }
    };
    if in_place {
        write(x, &[x], |_| body(x, x, true))?;
        return Ok(x.clone());
    }
    let out = empty_with_layout(&iterator_layout(x.shape(), &[&cast_layout(x, dtype)]), dtype, x.device())?;
    body(&out, &cast_input(x, dtype)?, false)?;
    Ok(out)
}

/// `clamp`/`clamp_min`/`clamp_max` with tensor bounds (torch's `clamp.Tensor`): an elementwise op
/// over `x` and the bounds with full type promotion and broadcasting.
pub fn clamp_tensor_raw(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>, in_place: bool) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let bounds: Vec<&Tensor> = [min, max].into_iter().flatten().collect();
    if in_place {
        check_no_internal_overlap(x)?;
        for b in &bounds {
            check_no_partial_overlap(x, b)?;
        }
    }
    let mut shapes = vec![x.shape()];
    shapes.extend(bounds.iter().map(|b| b.shape()));
    let shape = broadcast_all(&shapes)?;
    let mut ops = vec![Arg::Tensor(x.clone()).promotion()];
    ops.extend(bounds.iter().map(|b| Arg::Tensor((*b).clone()).promotion()));
    let dtype = result_type(&ops);
    if in_place {
        check_inplace_shape(x.shape(), &shape)?;
        check_castable(dtype, x.dtype())?;
    }
    // (one tensor bound is maximum/minimum in torch, which bools support; two are not)
    if dtype == DType::Bool && bounds.len() == 2 {
        bail!(NotImplemented, "\"clamp_cpu\" not implemented for 'Bool'");
    }
    let mut operands = vec![x];
    operands.extend(bounds.iter().copied());
    let device = crate::device::common_device(&operands)?;
    let out = if in_place {
        Tensor::empty_on(&shape, dtype, device)?
    } else {
        let mut layouts = vec![cast_layout(x, dtype)];
        layouts.extend(bounds.iter().map(|b| cast_layout(b, dtype)));
        let refs: Vec<&Layout> = layouts.iter().collect();
        empty_with_layout(&iterator_layout(&shape, &refs), dtype, device)?
    };
    let tx = cast_input(x, dtype)?;
    let cast: Vec<Tensor> = bounds.iter().map(|b| cast_input(b, dtype)).collect::<Result<_>>()?;
    let (lo, hi) = match (min.is_some(), max.is_some()) {
        (true, true) => (Bound::Tensor(&cast[0]), Bound::Tensor(&cast[1])),
        (true, false) => (Bound::Tensor(&cast[0]), Bound::None),
        _ => (Bound::None, Bound::Tensor(&cast[0])),
    };
    let mut operands = vec![&out, &tx];
    operands.extend(cast.iter());
    crate::device::backend_for(&operands)?.clamp(&out, &tx, lo, hi, false)?;
    if in_place {
        write(x, &[&out], |reads| {
            copy_kernel(x, &reads[0].0)?;
            Ok(())
        })?;
        return Ok(x.clone());
    }
    Ok(out)
}

/// The mask where a clamp passes the gradient to `x`: `lo <= x <= hi` (bounds inclusive, R57).
fn clamp_pass(x: &Tensor, lo: Option<&Arg>, hi: Option<&Arg>) -> Result<Tensor> {
    use crate::ops::formulas::cmp;
    let mut m: Option<Tensor> = None;
    if let Some(lo) = lo {
        m = Some(cmp(BinaryOp::Ge, x, lo)?);
    }
    if let Some(hi) = hi {
        let le = cmp(BinaryOp::Le, x, hi)?;
        m = Some(match m {
            Some(m) => cmp(BinaryOp::LogicalAnd, &m, &Arg::Tensor(le))?,
            None => le,
        });
    }
    Ok(m.expect("clamp has a bound"))
}

/// Differentiable clamp with number bounds; `node` is torch's name for the API used
/// (`ClampBackward1`, `ClampMinBackward0`, `ClampMaxBackward0`).
pub fn clamp_scalar(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>, in_place: bool, node: &'static str) -> Result<Tensor> {
    if !in_place {
        crate::autograd::precheck(&[Some(x)])?;
    }
    let formula = move |ctx: &crate::autograd::Ctx| -> Result<Vec<Option<Tensor>>> {
        let lo = min.map(Arg::Scalar);
        let hi = max.map(Arg::Scalar);
        let pass = clamp_pass(ctx.saved(0), lo.as_ref(), hi.as_ref())?;
        Ok(vec![Some(crate::ops::formulas::zero_where(ctx.grad(), &not(&pass)?)?)])
    };
    if !in_place {
        let out = clamp_scalar_raw(x, min, max, false)?;
        if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(x)])? {
            rec.save("self", x)?;
            rec.finish(node, &[&out], Box::new(formula))?;
        }
        return Ok(out);
    }
    let _blame = crate::autograd::blame::op("clamp_");
    let rec = crate::autograd::Recorder::inplace(x, &[])?;
    let old = rec.as_ref().map(|_| crate::ops::copy::clone(x)).transpose()?;
    clamp_scalar_raw(x, min, max, true)?;
    if let (Some(mut rec), Some(old)) = (rec, old) {
        rec.save("self", &old)?;
        rec.finish_inplace(node, x, Box::new(formula))?;
    }
    Ok(x.clone())
}

/// Differentiable clamp with tensor bounds (ClampBackward0 / ClampMinBackward1 / ClampMaxBackward1).
pub fn clamp_tensor(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>, in_place: bool, node: &'static str) -> Result<Tensor> {
    if !in_place {
        crate::autograd::precheck(&[Some(x), min, max])?;
    }
    let (smin, smax) = (min.map(|t| t.shape().to_vec()), max.map(|t| t.shape().to_vec()));
    let (has_min, has_max) = (min.is_some(), max.is_some());
    let x_shape = x.shape().to_vec();
    let formula = move |ctx: &crate::autograd::Ctx| -> Result<Vec<Option<Tensor>>> {
        use crate::ops::formulas::*;
        let g = ctx.grad();
        let xs = ctx.saved(0);
        let lo = has_min.then(|| Arg::Tensor(ctx.saved(1).clone()));
        let hi = has_max.then(|| Arg::Tensor(ctx.saved(if has_min { 2 } else { 1 }).clone()));
        let pass = clamp_pass(xs, lo.as_ref(), hi.as_ref())?;
        let gx = if ctx.needs(0) { Some(sum_to(&zero_where(g, &not(&pass)?)?, &x_shape)?) } else { None };
        let mut out = vec![gx];
        if let Some(lo) = &lo {
            let mut m = cmp(BinaryOp::Lt, xs, lo)?;
            if let Some(hi) = &hi {
                let Arg::Tensor(lo_t) = lo else { unreachable!() };
                m = cmp(BinaryOp::LogicalAnd, &m, &Arg::Tensor(cmp(BinaryOp::Lt, lo_t, hi)?))?;
            }
            out.push(if ctx.needs(1) { Some(sum_to(&zero_where(g, &not(&m)?)?, smin.as_ref().expect("min given"))?) } else { None });
        }
        if let Some(hi) = &hi {
            let mut m = cmp(BinaryOp::Gt, xs, hi)?;
            if let Some(lo) = &lo {
                let Arg::Tensor(hi_t) = hi else { unreachable!() };
                m = cmp(BinaryOp::LogicalOr, &m, &Arg::Tensor(cmp(BinaryOp::Lt, hi_t, lo)?))?;
            }
            let i = out.len();
            out.push(if ctx.needs(i) { Some(sum_to(&zero_where(g, &not(&m)?)?, smax.as_ref().expect("max given"))?) } else { None });
        }
        Ok(out)
    };
    let operands: Vec<Option<&Tensor>> = [min, max].into_iter().flatten().map(Some).collect();
    if !in_place {
        let out = clamp_tensor_raw(x, min, max, false)?;
        let mut all = vec![Some(x)];
        all.extend(operands.iter().copied());
        if let Some(mut rec) = crate::autograd::Recorder::new(&all)? {
            rec.save("self", x)?;
            for (name, t) in [("min", min), ("max", max)] {
                if let Some(t) = t {
                    rec.save(name, t)?;
                }
            }
            rec.finish(node, &[&out], Box::new(formula))?;
        }
        return Ok(out);
    }
    let _blame = crate::autograd::blame::op("clamp_");
    let rec = crate::autograd::Recorder::inplace(x, &operands)?;
    let old = rec.as_ref().map(|_| crate::ops::copy::clone(x)).transpose()?;
    let mut rec = rec;
    if let (Some(r), Some(old)) = (rec.as_mut(), old.as_ref()) {
        r.save("self", old)?;
        for (name, t) in [("min", min), ("max", max)] {
            if let Some(t) = t {
                r.save(name, t)?;
            }
        }
    }
    clamp_tensor_raw(x, min, max, true)?;
    if let Some(rec) = rec {
        rec.finish_inplace(node, x, Box::new(formula))?;
    }
    Ok(x.clone())
}

/// Differentiable `clamp(min, max)` with tensor or number bounds (either may be absent, not
/// both): tensor bounds take `clamp_tensor`, numbers (and 0-d tensors mixed with numbers)
/// `clamp_scalar`.
pub fn clamp(x: &Tensor, min: Option<&Arg>, max: Option<&Arg>, in_place: bool) -> Result<Tensor> {
    let number = |a: &Arg| matches!(a, Arg::Scalar(_));
    if min.is_some_and(number) || max.is_some_and(number) {
        let scalar = |a: Option<&Arg>| -> Result<Option<Scalar>> {
            match a {
                None => Ok(None),
                Some(Arg::Scalar(s)) => Ok(Some(*s)),
                Some(Arg::Tensor(t)) => t.item().map(Some),
            }
        };
        return clamp_scalar(x, scalar(min)?, scalar(max)?, in_place, "ClampBackward1");
    }
    let tensor = |a: Option<&Arg>| match a {
        Some(Arg::Tensor(t)) => Some(t.clone()),
        _ => None,
    };
    clamp_tensor(x, tensor(min).as_ref(), tensor(max).as_ref(), in_place, "ClampBackward0")
}

/// The CPU backend's `clamp`: number bounds as a map over `src` (in place or not), tensor
/// bounds as a zip with `src` into a fresh `dst`.
pub(crate) fn cpu_kernel(dst: &Tensor, src: &Tensor, lo: Bound<'_>, hi: Bound<'_>, in_place: bool) {
    let shape = dst.shape();
    let sx = broadcast_strides(src, shape);
    crate::dispatch!(dst.dtype(), T => {
        let number = |b: Bound<'_>| match b { Bound::Number(s) => Some(T::from_scalar(s)), _ => None };
        match (lo, hi) {
            (Bound::Tensor(l), Bound::Tensor(h)) => {
                let (sl, sh) = (broadcast_strides(l, shape), broadcast_strides(h, shape));
                // SAFETY: dst is fresh; every input is only read.
                unsafe { zip3::<T, T, T, T>(shape, K::of(dst), K::broadcast(src, &sx), K::broadcast(l, &sl), K::broadcast(h, &sh), |v, lo, hi| clamp3(v, Some(lo), Some(hi))) }
            }
            (Bound::Tensor(l), Bound::None) => {
                let sl = broadcast_strides(l, shape);
                // SAFETY: as above.
                unsafe { zip::<T, T, T>(shape, K::of(dst), K::broadcast(src, &sx), K::broadcast(l, &sl), |v, lo| clamp3(v, Some(lo), None)) }
            }
            (Bound::None, Bound::Tensor(h)) => {
                let sh = broadcast_strides(h, shape);
                // SAFETY: as above.
                unsafe { zip::<T, T, T>(shape, K::of(dst), K::broadcast(src, &sx), K::broadcast(h, &sh), |v, hi| clamp3(v, None, Some(hi))) }
            }
            (l, h) => {
                let (lo, hi) = (number(l), number(h));
                let f = move |v: T| clamp3(v, lo, hi);
                // SAFETY: dst is fresh, or is src itself with no zero-stride aliasing (checked by the op).
                unsafe {
                    if in_place { map_inplace::<T>(shape, K::of(dst), f) } else { map::<T, T>(shape, K::of(dst), K::of(src), f) }
                }
            }
        }
    })
}
