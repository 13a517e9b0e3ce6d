//! Mask queries: `nonzero` (the coordinates advanced indexing expands a bool mask into) and
//! `masked_select`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::index as k;
use crate::layout::Layout;
use crate::ops::copy::contiguous_raw;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// `x.nonzero()`: an `(n, ndim)` int64 tensor of the coordinates of nonzero elements, in
/// row-major order. Laid out column-major (strides `(1, n)`), exactly as torch's CPU kernel.
pub fn nonzero(x: &Tensor) -> crate::error::Result<Tensor> {
    let c = contiguous_raw(x)?;
    crate::device::backend_for(&[&c])?.nonzero(&c)
}

/// The CPU side of `Backend::nonzero` (its contract there).
pub(crate) fn nonzero_cpu_kernel(c: &Tensor) -> crate::error::Result<Tensor> {
    let numel = c.numel();
    let k = c.ndim();
    let (n, t) = crate::dispatch_all!(c.dtype(), T => {
        // SAFETY: `c` is contiguous: `numel` elements of T start at its data pointer.
        let data = unsafe { std::slice::from_raw_parts(c.data_ptr::<T>() as *const T, numel) };
        let n = k::count_nonzero(data);
        let t = Tensor::empty(&[k * n], DType::Int64)?;
        // SAFETY: t is fresh and contiguous with k * n int64 elements; nobody else sees it.
        let out = unsafe { std::slice::from_raw_parts_mut(t.data_ptr::<i64>(), k * n) };
        k::nonzero(data, c.shape(), n, out);
        (n, t)
    });
    // Contiguous (k, n) memory seen as its transpose.
    let layout = Layout { shape: smallvec::smallvec![n, k], strides: smallvec::smallvec![1, n as isize], offset: 0 };
    Ok(Tensor { layout, ..t })
}

/// The columns of `nonzero(x)` (torch's `nonzero(as_tuple=True)`), as layouts of that tensor.
/// A 0-d input is treated as 1-d, as torch does.
pub fn nonzero_columns(nz: &Tensor) -> Result<Vec<Layout>> {
    (0..nz.shape()[1]).map(|j| nz.layout.select(1, j as i64)).collect()
}

/// `x.masked_select(mask)`: the elements where the (broadcast) mask is true, as a 1-d tensor.
pub fn masked_select_raw(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::Runtime("masked_select: expected BoolTensor for mask".into()));
    }
    let shape = broadcast_shapes(mask.shape(), x.shape())?;
    let sizes: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let m = contiguous_raw(&mask.view_as_layout(mask.layout.expand(&sizes)?))?;
    let v = contiguous_raw(&x.view_as_layout(x.layout.expand(&sizes)?))?;
    crate::device::backend_for(&[&v, &m])?.masked_select(&v, &m)
}

/// The CPU side of `Backend::masked_select` (its contract there).
pub(crate) fn masked_select_cpu_kernel(v: &Tensor, m: &Tensor) -> Result<Tensor> {
    let numel = m.numel();
    // SAFETY: `m` is contiguous with `numel` bools.
    let flags = unsafe { std::slice::from_raw_parts(m.data_ptr::<bool>() as *const bool, numel) };
    crate::dispatch_all!(v.dtype(), T => {
        // SAFETY: `v` is contiguous with `numel` elements of T.
        let data = unsafe { std::slice::from_raw_parts(v.data_ptr::<T>() as *const T, numel) };
        let picked = k::masked_select(data, flags);
        let n = picked.len();
        Tensor::from_vec(picked, &[n])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonzero_layout_is_torchs() {
        let x = Tensor::from_vec(vec![0f32, 1., 0., 2., 0., 3.], &[2, 3]).unwrap();
        let nz = nonzero(&x).unwrap();
        assert_eq!((nz.shape(), nz.strides()), (&[3usize, 2][..], &[1isize, 3][..]));
        assert_eq!(nz.to_vec::<i64>().unwrap(), vec![0, 1, 1, 0, 1, 2]);
    }

    #[test]
    fn masked_select_broadcasts() {
        let x = Tensor::from_vec(vec![1f32, 2., 3.], &[3]).unwrap();
        let m = Tensor::from_vec(vec![true, false, true, false, false, true], &[2, 3]).unwrap();
        assert_eq!(masked_select_raw(&x, &m).unwrap().to_vec::<f32>().unwrap(), vec![1., 3., 3.]);
    }
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

/// Differentiable `masked_select` (MaskedSelectBackward0: saves mask and self). The gradient
/// is written into zeros of the broadcast shape at the mask's positions (torch's
/// `masked_scatter`, here an index_put with the broadcast mask), then summed to self's shape.
pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let rec = crate::autograd::Recorder::new(&[Some(x)])?;
    let out = masked_select_raw(x, mask)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.save("mask", mask)?;
    rec.save("self", x)?;
    let x_shape = x.shape().to_vec();
    rec.finish("MaskedSelectBackward0", &[&out], Box::new(move |ctx| {
        let (g, mask) = (ctx.grad(), ctx.saved(0));
        let shape = broadcast_shapes(mask.shape(), &x_shape)?;
        let sizes: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let full_mask = mask.view_as_layout(mask.layout.expand(&sizes)?);
        let zeros = crate::ops::formulas::zeros(&shape, g.dtype(), g.device())?;
        let filled = crate::ops::advanced::index_put(&zeros, &[Some(full_mask)], g, false)?;
        Ok(vec![Some(crate::ops::formulas::sum_to(&filled, &x_shape)?)])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn masked_select_scatters_back_and_sums_broadcast() {
        let x = leaf(vec![1., 2., 3.], &[3]);
        let m = Tensor::from_vec(vec![true, false, true, false, false, true], &[2, 3]).unwrap();
        let out = masked_select(&x, &m).unwrap();
        assert_eq!(node_name(&out), "MaskedSelectBackward0");
        backward(&out, Some(vals(vec![10., 20., 30.], &[3])));
        assert_eq!(grad(&x), vec![10., 0., 50.]);
    }

    #[test]
    fn masked_select_passes_gradcheck() {
        let m = Tensor::from_vec(vec![true, false, true, true, false, false], &[2, 1, 3]).unwrap();
        gradcheck("masked_select", &move |t| masked_select(&t[0], &m), &[rand_leaf(&[4, 3], 1)], true);
    }
}
