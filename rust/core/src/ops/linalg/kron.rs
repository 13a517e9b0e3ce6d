//! `kron(self, other)`, the Kronecker product, built as torch's `KronImpl` builds it so the graph
//! shows its nodes: both operands `_unsafe_view`ed to rank 2·n with size-1 dims interleaved
//! (self's sizes at even positions, other's at odd ones, the shorter shape padded with leading
//! 1s), multiplied with broadcasting, and the product `_unsafe_view`ed to the n sizes
//! `self_i · other_i`. So the gradient flows UnsafeViewBackward0 -> MulBackward0 ->
//! UnsafeViewBackward0 for each operand, and what torch refuses is refused here too (the
//! product of a transposed operand keeps its permuted layout, which the last view cannot
//! express: torch's "view size is not compatible" error).

use crate::error::Result;
use crate::ops::formulas as fm;
use crate::tensor::Tensor;
use super::unsafe_view;

/// Differentiable `kron(self, other)`.
pub fn kron(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let n = a.ndim().max(b.ndim());
    let size = |t: &Tensor, i: usize| if i + t.ndim() >= n { t.shape()[i + t.ndim() - n] } else { 1 };
    let (mut a_shape, mut b_shape, mut out_shape) = (Vec::with_capacity(2 * n), Vec::with_capacity(2 * n), Vec::with_capacity(n));
    for i in 0..n {
        let (sa, sb) = (size(a, i), size(b, i));
        a_shape.extend([sa, 1]);
        b_shape.extend([1, sb]);
        out_shape.push(sa * sb);
    }
    unsafe_view(&fm::mul(&unsafe_view(a, &a_shape)?, &unsafe_view(b, &b_shape)?)?, &out_shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;
    use crate::ops::views;

    #[test]
    fn blocks_are_self_times_other() {
        let a = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![0f32, 1., 10.], &[3]).unwrap();
        let k = kron(&a, &b).unwrap();
        assert_eq!(k.shape(), &[2, 6]);
        assert_eq!(k.to_vec::<f32>().unwrap(), vec![0., 1., 10., 0., 2., 20., 0., 3., 30., 0., 4., 40.]);
        let e = kron(&views::t_raw(&a).unwrap(), &b).unwrap_err();
        assert!(e.to_string().starts_with("view size is not compatible"));
    }

    #[test]
    fn kron_passes_gradcheck() {
        let (a, b) = (rand_leaf(&[2, 3], 1), rand_leaf(&[3, 1, 2], 2));
        gradcheck("kron", &|t| kron(&t[0], &t[1]), &[a, b], true);
    }
}
