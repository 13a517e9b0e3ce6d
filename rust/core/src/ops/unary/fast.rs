//! The small-call fast path of out-of-place unary ops (`x.relu()`, `-x`, `x.sqrt()`...).
//!
//! As for `+ - * /` (`binary::fast`): on a row-major float tensor on the CPU below `FAST_MAX`
//! elements, the general path's layout work (result dtype, cast, iterator layout, run plan)
//! cannot change the answer, so the loop runs at once over the tensor's slice into a fresh
//! row-major result, with the general path's own per-element function (`with_float_fn!`) under
//! `simd::exec`, as the general kernel runs it: the bits are the general path's. The ops with
//! vectorised kernels (exp, tanh, ... `kernels::unary::math`) split earlier than this size
//! (they are costlier per element) and keep the general path, as does everything else.

use super::UnaryOp;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Below this many elements the fast path runs the loop itself, on one thread. The general
/// path's `map` goes parallel from `parallel::split_threshold(2)` = 2^16 elements, above this.
const FAST_MAX: usize = 1 << 15;

/// `dst[i] = f(src[i])` over slices, as a `simd::exec` body.
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
        && n < FAST_MAX
        && x.device().is_cpu()
        && crate::ops::binary::row_major(x);
    if !taken {
        return Ok(None);
    }
    let out = Tensor::empty(x.shape(), x.dtype())?;
    macro_rules! go {
        ($T:ty, $f:ident) => {{
            // SAFETY: `out` is fresh (no other handle sees it) and row-major with n elements;
            // `x` is row-major inside its storage (checked above), so the slice covers exactly
            // its n elements, none of which is in `out`.
            let (dst, src) = unsafe {
                (
                    std::slice::from_raw_parts_mut(out.data_ptr::<$T>(), n),
                    std::slice::from_raw_parts(x.data_ptr::<$T>() as *const $T, n),
                )
            };
            let body = Map { dst, src, f: &$f };
            if n >= 64 {
                crate::kernels::simd::exec(body)
            } else {
                crate::kernels::simd::Body::call(body)
            }
        }};
    }
    match x.dtype() {
        DType::Float32 => with_float_fn!(op, f32, f => go!(f32, f)),
        _ => with_float_fn!(op, f64, f => go!(f64, f)),
    }
    Ok(Some(out))
}
