//! `x[key] = value`: one in-place op per key (torch's `copy_to`: `copy_` or `fill_` of a view,
//! `index_put_` for advanced keys), so the version counter moves once; with autograd x's
//! history becomes CopySlices or IndexPutBackward0. Also the checked conversion of a number.

use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{fmt_shape, Error, Result};
use crate::ops::advanced;
use crate::ops::views;
use crate::ops::write::{write, Alias};
use crate::tensor::Tensor;
use super::{basic_view, view_or_self, Key, Step, TensorIndex};
use super::walk::{apply_slicing, precheck_key, select_x, slice, strip_leading_ones, trim};

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
        Key::Single(TensorIndex::Int(i)) => copy_to(&x.view_as_layout(select_x(x, *i)?), value),
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
            crate::ops::copy::copy_kernel(dst, src)?;
        }
        Ok(())
    })
}

/// `dst.fill_(value)` through the write path.
fn fill_(dst: &Tensor, value: Scalar) -> Result<()> {
    write(dst, &[], |_| crate::device::backend_for(&[dst])?.fill(dst, value))
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
        (Scalar::Float(f), DType::Float16) if f.is_finite() && f.abs() > 65504.0 => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::BFloat16) if f.is_finite() && f.abs() > crate::element::bf16::MAX.to_f64() => Err(conversion_overflow(dtype)),
        // small integers: c10's `overflows` lets an unsigned type take a negative int down to
        // -max (it wraps) but no negative float
        (Scalar::Int(i), DType::UInt8) if !(-255..=255).contains(&i) => Err(conversion_overflow(dtype)),
        (Scalar::Int(i), DType::Int8) if i8::try_from(i).is_err() => Err(conversion_overflow(dtype)),
        (Scalar::Int(i), DType::Int16) if i16::try_from(i).is_err() => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::UInt8) if !(0.0..=255.0).contains(&f) => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::Int8) if !(-128.0..=127.0).contains(&f) => Err(conversion_overflow(dtype)),
        (Scalar::Float(f), DType::Int16) if !(-32768.0..=32767.0).contains(&f) => Err(conversion_overflow(dtype)),
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
        DType::Float16 => "c10::Half",
        DType::BFloat16 => "c10::BFloat16",
        DType::UInt8 => "uint8_t",
        DType::Int8 => "int8_t",
        DType::Int16 => "int16_t",
    };
    Error::Runtime(format!("value cannot be converted to type {} without overflow", name))
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
            let l = select_x(x, *i)?;
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
            let value = if stripped.shape.as_slice() == value.shape() {
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
        Ok(vec![ctx.needs(0).then(|| Tensor::zeros_on(g.shape(), g.dtype(), g.device())).transpose()?, gv])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::index::test_util::arange;

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

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::index::test_util::sl;
    use crate::ops::reduce::testing::*;

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
    fn set_keys_pass_gradcheck() {
        let idx = || TensorIndex::Tensor(Tensor::from_vec(vec![2i64, 0], &[2]).unwrap());
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
                crate::ops::formulas::mul(&y, &y)
            };
            gradcheck(&format!("set {:?}", key), &f, &[rand_leaf(&[3, 4], 2), rand_leaf(&vshape, 3)], double);
        }
    }
}
