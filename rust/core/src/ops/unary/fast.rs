//! The fast path of out-of-place unary ops (`x.relu()`, `-x`, `x.sqrt()`...).
//!
//! As for `+ - * /` (`binary::fast`): on a row-major float tensor on the CPU, the general
//! path's layout work (result dtype, cast, iterator layout, run plan: about 1 µs a call) cannot
//! change the answer, so the loop runs at once over the tensor's slice into a fresh row-major
//! result, with the general path's own per-element function (`with_float_fn!`) through
//! `elementwise::wide`, as the general kernel runs it: the bits are the general path's. Large calls
//! split over the threads from the general kernel's threshold (`split_threshold(2)`). The ops
//! with vectorised kernels (exp, tanh, ... `kernels::unary::math`) keep the general path, as
//! does everything else.

use super::UnaryOp;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// `dst[i] = f(src[i])` over slices, as a `simd::Body`.
struct Map<'a, T, F> {
    dst: &'a mut [T],
    src: &'a [T],
    f: &'a F,
}

impl<T: Copy, F: Fn(T) -> T> crate::kernels::simd::Body for Map<'_, T, F> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        for (o, &x) in self.dst.iter_mut().zip(self.src) {
            *o = (self.f)(x);
        }
    }
}

/// True for the ops whose per-element function `with_float_fn!` holds (float in, same float out).
fn scalar_float_op(op: UnaryOp) -> bool {
    use UnaryOp::*;
    !matches!(op, LogicalNot | BitwiseNot | Exp | Log | Tanh | Sigmoid | Silu | Gelu | GeluTanh)
}

/// Out-of-place `op(x)` by the fast path, or None for the general path (which also raises
/// every error). Records nothing: the caller does.
pub(crate) fn fast_unary(op: UnaryOp, x: &Tensor) -> Result<Option<Tensor>> {
    let n = x.numel();
    let taken = scalar_float_op(op)
        && matches!(x.dtype(), DType::Float32 | DType::Float64)
        && n != 0
        && x.device().is_cpu()
        && crate::ops::binary::row_major(x);
    if !taken {
        return Ok(None);
    }
    let out = Tensor::empty(x.shape(), x.dtype())?;
    macro_rules! go {
        ($T:ty, $f:ident) => {{
            use crate::kernels::parallel::{for_split, split_threshold, SendPtr};
            let (d, sp) = (SendPtr(out.data_ptr::<$T>()), SendPtr(x.data_ptr::<$T>()));
            let f = &$f;
            for_split(n, split_threshold(2), |s, e| {
                // SAFETY: `out` is fresh (no other handle sees it) and row-major with n
                // elements; `x` is row-major inside its storage (checked above): [s, e) of
                // each is theirs, disjoint from other pieces', and `out` does not overlap `x`.
                let (dst, src) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(d.get().add(s), e - s),
                        std::slice::from_raw_parts(sp.get().add(s) as *const $T, e - s),
                    )
                };
                crate::kernels::elementwise::wide(e - s, Map { dst, src, f })
            })
        }};
    }
    match x.dtype() {
        DType::Float32 => with_float_fn!(op, f32, f => go!(f32, f)),
        _ => with_float_fn!(op, f64, f => go!(f64, f)),
    }
    Ok(Some(out))
}
