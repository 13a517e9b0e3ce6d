//! Fill every element of a (possibly strided) tensor with one value.

use super::elementwise::map_inplace;
use super::Arg;
use crate::dtype::Scalar;
use crate::element::Element;
use crate::tensor::Tensor;

/// Writes `value` (cast to the tensor's dtype) into every element. Callers outside the op layer
/// use it only on tensors nobody else can see yet (fresh outputs); in-place `fill_` goes through
/// `ops::write`.
pub fn fill(t: &Tensor, value: Scalar) {
    crate::dispatch!(t.dtype(), T => {
        let v = T::from_scalar(value);
        // SAFETY: the tensor's layout lies within its storage; fill writes each element once and
        // reads nothing, and callers guarantee no internal overlap of `t`.
        unsafe { map_inplace::<T>(t.shape(), Arg::of(t), move |_| v) }
    })
}
