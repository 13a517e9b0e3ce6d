//! Optimizer steps (SGD, Adam/AdamW) over one tensor's contiguous elements, in one pass.
//!
//! Each element is updated with the arithmetic torch's for-loop (`foreach=False`) step performs
//! op by op, in the same order and with the same roundings, so one pass here equals torch's
//! chain of in-place ops: every Python number is rounded to the element type first (as torch's
//! wrapped scalars are), `add_(x, alpha=a)` / `lerp_` / `addcmul_` are one fused multiply-add
//! (torch's vectorised CPU kernels fuse them: `vec::fmadd`), `addcdiv_` and the division by the
//! bias correction round each operation. The one step that differs is the square root: ours is
//! IEEE's (correctly rounded); torch's CPU `sqrt` is MKL's vectorised one, off by an ulp for about
//! one element in five (docs/optim.md).

use crate::parallel::{for_split, split_threshold, SendPtr};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// SGD's hyper-parameters (torch.optim.SGD's names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sgd {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
}

/// Adam's and AdamW's hyper-parameters (`decoupled`: AdamW's `p *= 1 - lr * weight_decay`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub decoupled: bool,
    pub amsgrad: bool,
    pub maximize: bool,
}

/// Which step a group takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    Sgd(Sgd),
    Adam(Adam),
}

/// The element types the steps run in (float32, float64).
pub trait Real: Copy + Send + Sync + PartialOrd + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self> {
    fn of(v: f64) -> Self;
    /// `self * b + c`, rounded once.
    fn fma(self, b: Self, c: Self) -> Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            #[inline(always)]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn fma(self, b: Self, c: Self) -> Self {
                self.mul_add(b, c)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
real!(f32);
real!(f64);

/// torch.maximum: NaN wins.
#[inline(always)]
fn maximum<T: Real>(a: T, b: T) -> T {
    if a.is_nan() {
        a
    } else if b.is_nan() || b > a {
        b
    } else {
        a
    }
}

/// `self.lerp_(end, w)` as torch's vectorised kernel: `fma(w, end - self, self)` for |w| < 0.5,
/// else `fma(w - 1, end - self, end)`.
#[inline(always)]
fn lerp<T: Real>(start: T, end: T, w: T, small: bool, w_minus_1: T) -> T {
    if small { w.fma(end - start, start) } else { w_minus_1.fma(end - start, end) }
}

/// Relative cost of one element against a copy, for the parallel split.
const COST: usize = 8;

/// Runs `f(start, end)` over `[0, n)` compiled for the CPU's widest instruction set (so
/// `mul_add` is one FMA instruction), in parallel chunks when `n` is large. Each element is
/// computed alone, so the split never changes a result.
fn chunks(n: usize, f: impl Fn(usize, usize) + Sync + Send) {
    for_split(n, split_threshold(COST), |a, b| crate::simd::run(|| f(a, b)));
}

/// One SGD step of `n` elements: `p` updated in place from `g`; `buf` (with momentum) is the
/// momentum buffer, set to the gradient when `first` (torch's `clone(grad)`), else updated.
///
/// # Safety
/// `p` and `g` (and `buf` when given) address `n` valid elements each, in distinct memory;
/// no other thread touches `p` or `buf` meanwhile.
pub unsafe fn sgd<T: Real>(h: &Sgd, n: usize, p: *mut T, g: *const T, buf: Option<*mut T>, first: bool) {
    let (p, g, buf) = (SendPtr(p), SendPtr(g as *mut T), buf.map(SendPtr));
    let (wd, mom, damp1, neg_lr) = (T::of(h.weight_decay), T::of(h.momentum), T::of(1.0 - h.dampening), T::of(-h.lr));
    let (decay, nesterov, maximize) = (h.weight_decay != 0.0, h.nesterov, h.maximize);
    chunks(n, move |a, b| {
        for i in a..b {
            // SAFETY: i < n (the caller's bound); each chunk owns its elements.
            unsafe {
                let pi = *p.get().add(i);
                let mut d = *g.get().add(i);
                if maximize {
                    d = -d;
                }
                if decay {
                    d = pi.fma(wd, d); // grad.add(param, alpha=wd)
                }
                if let Some(buf) = buf {
                    let bp = buf.get().add(i);
                    let bv = if first { d } else { d.fma(damp1, *bp * mom) }; // buf.mul_(m).add_(g, alpha=1-damp)
                    *bp = bv;
                    d = if nesterov { bv.fma(mom, d) } else { bv };
                }
                *p.get().add(i) = d.fma(neg_lr, pi); // param.add_(grad, alpha=-lr)
            }
        }
    });
}

/// The state buffers of one Adam tensor: `exp_avg`, `exp_avg_sq` and, with amsgrad,
/// `max_exp_avg_sq`.
pub struct AdamState<T> {
    pub m: *mut T,
    pub v: *mut T,
    pub vmax: Option<*mut T>,
}

/// One Adam/AdamW step of `n` elements at the tensor's step `t`: `step_size` is
/// `lr / (1 - beta1^t)` and `bc2_sqrt` `(1 - beta2^t) ** 0.5`, both computed in double as torch's
/// Python does.
///
/// # Safety
/// As `sgd`: every pointer addresses `n` valid elements, all in distinct memory, written by this
/// call only.
pub unsafe fn adam<T: Real>(h: &Adam, n: usize, p: *mut T, g: *const T, s: AdamState<T>, step_size: f64, bc2_sqrt: f64) {
    let (p, g) = (SendPtr(p), SendPtr(g as *mut T));
    let (m, v, vmax) = (SendPtr(s.m), SendPtr(s.v), s.vmax.map(SendPtr));
    let decay = h.weight_decay != 0.0;
    let (wd, shrink) = (T::of(h.weight_decay), T::of(1.0 - h.lr * h.weight_decay));
    let w1 = 1.0 - h.beta1;
    let (w, small, w_minus_1) = (T::of(w1), w1.abs() < 0.5, T::of(w1) - T::of(1.0));
    let (beta2, one_minus_beta2) = (T::of(h.beta2), T::of(1.0 - h.beta2));
    let (bc2, eps, neg_step) = (T::of(bc2_sqrt), T::of(h.eps), T::of(-step_size));
    let (decoupled, maximize) = (h.decoupled, h.maximize);
    chunks(n, move |a, b| {
        for i in a..b {
            // SAFETY: i < n (the caller's bound); each chunk owns its elements.
            unsafe {
                let mut pi = *p.get().add(i);
                let mut d = *g.get().add(i);
                if maximize {
                    d = -d;
                }
                if decay {
                    if decoupled {
                        pi = pi * shrink; // param.mul_(1 - lr * wd)
                    } else {
                        d = pi.fma(wd, d); // grad.add(param, alpha=wd)
                    }
                }
                let mi = lerp(*m.get().add(i), d, w, small, w_minus_1);
                *m.get().add(i) = mi;
                let vi = (one_minus_beta2 * d).fma(d, *v.get().add(i) * beta2); // mul_(b2).addcmul_(g, g, 1-b2)
                *v.get().add(i) = vi;
                let top = match vmax {
                    Some(vmax) => {
                        let x = maximum(*vmax.get().add(i), vi);
                        *vmax.get().add(i) = x;
                        x
                    }
                    None => vi,
                };
                let denom = top.sqrt() / bc2 + eps;
                *p.get().add(i) = pi + (neg_step * mi) / denom; // addcdiv_(m, denom, value=-step_size)
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sgd_rule() -> Sgd {
        Sgd { lr: 0.1, momentum: 0.9, dampening: 0.0, weight_decay: 0.0, nesterov: false, maximize: false }
    }

    #[test]
    fn sgd_with_momentum_copies_the_first_gradient_then_accumulates() {
        let (mut p, g, mut buf) = (vec![1.0f64, 2.0], vec![0.5f64, -1.0], vec![0.0f64; 2]);
        // SAFETY: three distinct vectors of 2 elements.
        unsafe { sgd(&sgd_rule(), 2, p.as_mut_ptr(), g.as_ptr(), Some(buf.as_mut_ptr()), true) };
        assert_eq!(buf, g);
        assert_eq!(p, vec![1.0 - 0.1 * 0.5, 2.0 + 0.1]);
        // SAFETY: as above.
        unsafe { sgd(&sgd_rule(), 2, p.as_mut_ptr(), g.as_ptr(), Some(buf.as_mut_ptr()), false) };
        assert_eq!(buf, vec![0.5f64.mul_add(1.0, 0.5 * 0.9), (-1.0f64).mul_add(1.0, -0.9)]);
    }

    #[test]
    fn adam_first_step_moves_each_element_by_about_lr() {
        let h = Adam { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0, decoupled: false, amsgrad: true, maximize: false };
        let (mut p, g) = (vec![1.0f32, -1.0, 0.0], vec![3.0f32, -0.25, 0.0]);
        let (mut m, mut v, mut vmax) = (vec![0.0f32; 3], vec![0.0f32; 3], vec![0.0f32; 3]);
        let s = AdamState { m: m.as_mut_ptr(), v: v.as_mut_ptr(), vmax: Some(vmax.as_mut_ptr()) };
        // SAFETY: five distinct vectors of 3 elements.
        unsafe { adam(&h, 3, p.as_mut_ptr(), g.as_ptr(), s, 0.01 / (1.0 - 0.9), (1.0f64 - 0.999).powf(0.5)) };
        assert!((p[0] - 0.99).abs() < 1e-6 && (p[1] + 0.99).abs() < 1e-6 && p[2] == 0.0, "{p:?}");
        assert_eq!(vmax, v);
    }

    #[test]
    fn maximum_lets_nan_win() {
        assert!(maximum(f32::NAN, 1.0).is_nan() && maximum(1.0, f32::NAN).is_nan());
        assert_eq!(maximum(1.0f32, 2.0), 2.0);
    }
}
