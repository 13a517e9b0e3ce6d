//! Factory functions: arange, linspace, eye, and the random ones with a seedable generator.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{fmt_g, Error, Result};
use crate::tensor::Tensor;
// rand's StdRng is this generator; it is named directly because its state can be read and set
use chacha20::ChaCha12Rng as StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::sync::Mutex;

/// The default generator behind `manual_seed`, `rand`, `randn`, `randint` (not torch's stream:
/// seeding makes runs reproducible within minigrad, not bit-equal to torch).
static GENERATOR: Mutex<Option<StdRng>> = Mutex::new(None);

pub fn manual_seed(seed: u64) {
    *GENERATOR.lock().unwrap_or_else(|e| e.into_inner()) = Some(StdRng::seed_from_u64(seed));
}

/// The generator's whole state (seed, stream, position): `get_rng_state`.
pub fn rng_state() -> Vec<u8> {
    with_rng(|r| r.serialize_state().to_vec())
}

/// Restores a state from `rng_state` (`set_rng_state`); torch's wording for a wrong size.
pub fn set_rng_state(state: &[u8]) -> Result<()> {
    let state: &chacha20::SerializedRngState = state
        .try_into()
        .map_err(|_| Error::Runtime(format!("Expected a minigrad generator state of size 49 but found the input RNG state size to be {}", state.len())))?;
    *GENERATOR.lock().unwrap_or_else(|e| e.into_inner()) = Some(StdRng::deserialize_state(state));
    Ok(())
}

fn with_rng<R>(f: impl FnOnce(&mut StdRng) -> R) -> R {
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let rng = g.get_or_insert_with(|| StdRng::seed_from_u64(0x5eed_0f_3141_5926));
    f(rng)
}

fn fill_with<T: Element>(shape: &[usize], mut next: impl FnMut() -> T) -> Result<Tensor> {
    Tensor::from_fn(shape, |_| next())
}

/// float16/bfloat16 draw their random values in float32 and round them.
fn narrow_float(dtype: DType) -> Option<DType> {
    (dtype.is_narrow() && dtype.is_floating()).then_some(DType::Float32)
}

fn require_float(dtype: DType, what: &str) -> Result<()> {
    if !dtype.is_floating() {
        return Err(crate::error::not_implemented_for(what, dtype));
    }
    Ok(())
}

/// Uniform on [0, 1) (drawn in the dtype's own precision, so float32 never rounds up to 1).
pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    if let Some(wide) = narrow_float(dtype) {
        return crate::ops::copy::to_dtype_raw(&rand(shape, wide)?, dtype);
    }
    require_float(dtype, "check_uniform_bounds")?;
    with_rng(|r| match dtype {
        DType::Float32 => fill_with::<f32>(shape, || r.random::<f32>()),
        _ => fill_with::<f64>(shape, || r.random::<f64>()),
    })
}

/// Standard normal. (torch never reaches the float-only kernel for an empty tensor.)
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    if shape.contains(&0) {
        return Ok(Tensor::empty(shape, dtype)?);
    }
    require_float(dtype, "normal_kernel_cpu")?;
    if let Some(wide) = narrow_float(dtype) {
        return crate::ops::copy::to_dtype_raw(&randn(shape, wide)?, dtype);
    }
    with_rng(|r| {
        crate::dispatch_float!(dtype, T => fill_with::<T>(shape, || {
            let v: f64 = StandardNormal.sample(r);
            T::from_f64(v)
        }), _ => unreachable!())
    })
}

/// Integers uniform on [low, high).
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if low >= high {
        return Err(Error::Runtime(format!(
            "random_ expects 'from' to be less than 'to', but got from={} >= to={}",
            low, high
        )));
    }
    let (min, max) = match dtype {
        DType::Bool => (0, 1),
        DType::Int32 => (i32::MIN as i64, i32::MAX as i64),
        DType::UInt8 => (0, u8::MAX as i64),
        DType::Int8 => (i8::MIN as i64, i8::MAX as i64),
        DType::Int16 => (i16::MIN as i64, i16::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    for (v, name) in [(low, "from"), (high - 1, "to - 1")] {
        if !dtype.is_floating() && !(min..=max).contains(&v) {
            return Err(Error::Runtime(format!("{} is out of bounds for {}", name, dtype.type_meta_name())));
        }
    }
    with_rng(|r| crate::dispatch_all!(dtype, T => fill_with::<T>(shape, || T::from_i64(r.random_range(low..high)))))
}

/// The largest float32 below `x`.
fn next_down_f32(x: f32) -> f32 {
    if x > 0.0 {
        f32::from_bits(x.to_bits() - 1)
    } else if x < 0.0 {
        f32::from_bits(x.to_bits() + 1)
    } else {
        -f32::from_bits(1)
    }
}

/// A tensor of `shape` and float `dtype` with `uniform_`'s values: in [from, to) once rounded to
/// the dtype (kernel level; `uniform_` copies it in inside the write path).
pub fn uniform_tensor(shape: &[usize], from: f64, to: f64, dtype: DType) -> Result<Tensor> {
    if let Some(wide) = narrow_float(dtype) {
        return crate::ops::copy::to_dtype_raw(&uniform_tensor(shape, from, to, wide)?, dtype);
    }
    with_rng(|r| {
        let mut next = || {
            let v = from + (to - from) * r.random::<f64>();
            if dtype == DType::Float32 && (v as f32) >= (to as f32) && from < to {
                // the largest float32 below `to`
                next_down_f32(to as f32) as f64
            } else {
                v
            }
        };
        crate::dispatch_float!(dtype, T => Tensor::from_fn(shape, |_| T::from_f64(next())), _ => require_float(dtype, "check_uniform_bounds").map(|_| unreachable!()))
    })
}

/// A tensor of `shape` and float `dtype` with `normal_`'s values, mean + std * N(0, 1).
pub fn normal_tensor(shape: &[usize], mean: f64, std: f64, dtype: DType) -> Result<Tensor> {
    if let Some(wide) = narrow_float(dtype) {
        return crate::ops::copy::to_dtype_raw(&normal_tensor(shape, mean, std, wide)?, dtype);
    }
    with_rng(|r| {
        crate::dispatch_float!(dtype, T => Tensor::from_fn(shape, |_| {
            let v: f64 = StandardNormal.sample(r);
            T::from_f64(mean + std * v)
        }), _ => require_float(dtype, "normal_kernel_cpu").map(|_| unreachable!()))
    })
}

/// The CPU backend's `random_fill`: the values drawn (in `dst`'s row-major order) as a fresh
/// tensor, then copied in. `uniform_`/`normal_` call it inside the write path.
pub fn random_fill_cpu(dst: &Tensor, dist: crate::device::RandomDist) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    let src = match dist {
        crate::device::RandomDist::Uniform { from, to } => uniform_tensor(dst.shape(), from, to, dst.dtype())?,
        crate::device::RandomDist::Normal { mean, std } => normal_tensor(dst.shape(), mean, std, dst.dtype())?,
    };
    crate::ops::copy::copy_kernel(dst, &src)?;
    Ok(())
}

/// Differentiable in-place `uniform_`/`normal_` through the write path: the values are drawn
/// inside the write, after its checks (a refused write draws nothing), by `dst`'s device; the
/// old values get no gradient (UniformBackward0 / NormalBackward0, as torch records).
pub fn random_(dst: &Tensor, dist: crate::device::RandomDist) -> Result<()> {
    let (op, node) = match dist {
        crate::device::RandomDist::Uniform { .. } => ("uniform_", "UniformBackward0"),
        crate::device::RandomDist::Normal { .. } => ("normal_", "NormalBackward0"),
    };
    let _blame = crate::autograd::blame::op(op);
    let rec = crate::autograd::Recorder::inplace(dst, &[])?;
    crate::ops::write::write(dst, &[], |_| crate::device::backend_for(&[dst])?.random_fill(dst, dist))?;
    match rec {
        Some(rec) => crate::ops::copy::zero_grad_node(node, dst, rec),
        None => Ok(()),
    }
}

/// torch.arange (`arange_out`, `compute_arange_size` and the CPU kernel): the bounds are checked
/// in double; the length is computed in double, except for int64, where it is exact integer
/// arithmetic on the bounds and step truncated to integers; element i is `start + step * i` in the
/// dtype's accumulation type (double for floats, int64 for integers: float arguments truncated).
/// Float arguments default to float32, integers to int64.
pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let any_float = [start, end, step].iter().any(|s| s.is_floating());
    let dtype = dtype.unwrap_or(if any_float { DType::Float32 } else { DType::Int64 });
    if dtype == DType::Bool {
        return Err(Error::NotImplemented("\"arange_cpu\" not implemented for 'Bool'".into()));
    }
    let (ds, de, dst) = (start.to_f64(), end.to_f64(), step.to_f64());
    if dst == 0.0 || dst.is_nan() {
        return Err(Error::Runtime("step must be nonzero".into()));
    }
    if !ds.is_finite() || !de.is_finite() {
        return Err(Error::Runtime(format!("unsupported range: {} -> {}", fmt_g(ds), fmt_g(de))));
    }
    if !((dst > 0.0 && de >= ds) || (dst < 0.0 && de <= ds)) {
        return Err(Error::Runtime("upper bound and lower bound inconsistent with step sign".into()));
    }
    let (s, e, st) = (start.to_i64(), end.to_i64(), step.to_i64());
    let size_d = if dtype == DType::Int64 {
        if st == 0 {
            return Err(Error::Value("step must be nonzero".into()));
        }
        let num = (e as i128) - (s as i128) + (st as i128) - (st.signum() as i128);
        (num / st as i128) as f64
    } else {
        ((de - ds) / dst).ceil()
    };
    if !(size_d >= 0.0 && size_d <= i64::MAX as f64) {
        return Err(Error::Runtime("invalid size, possible overflow?".into()));
    }
    let n = size_d as usize;
    crate::dispatch_all!(dtype, T => {
        if dtype.is_floating() {
            Tensor::from_fn(&[n], |i| T::from_f64(ds + dst * i as f64))
        } else {
            Tensor::from_fn(&[n], |i| T::from_i64(s.wrapping_add(st.wrapping_mul(i as i64))))
        }
    })
}

/// torch.linspace and its CPU kernel: `start`/`end` are cast to the dtype first, the step is
/// computed in the dtype (double for integers), and the two halves are filled from either end.
/// One step is `start` itself; bool has no kernel.
pub fn linspace(start: Scalar, end: Scalar, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(Error::Runtime("number of steps must be non-negative".into()));
    }
    let n = steps as usize;
    if n == 1 {
        return Ok(Tensor::full(&[1], start, dtype)?);
    }
    if n == 0 {
        return Ok(Tensor::empty(&[0], dtype)?);
    }
    let half = n / 2;
    // torch's kernel is compiled with fused multiply-add: `start + step * i` rounds once, which
    // decides where integer results truncate (linspace(-5, 3, 7) gives 0, not -1, at i = 3).
    macro_rules! fill {
        ($T:ty, $S:ty, $to:expr) => {{
            let (a, b) = (<$T>::from_scalar(start), <$T>::from_scalar(end));
            let (fa, fb) = (a as $S, b as $S);
            let step = (fb - fa) / (n - 1) as $S;
            Tensor::from_fn(&[n], |i| if i < half { $to(step.mul_add(i as $S, fa)) } else { $to((-step).mul_add((n - i - 1) as $S, fb)) })?
        }};
    }
    Ok(match dtype {
        DType::Float32 => fill!(f32, f32, |x: f32| x),
        DType::Float64 => fill!(f64, f64, |x: f64| x),
        DType::Int64 => fill!(i64, f64, |x: f64| x as i64),
        DType::Int32 => fill!(i32, f64, |x: f64| x as i32),
        DType::Bool => return Err(Error::NotImplemented("\"linspace_cpu\" not implemented for 'Bool'".into())),
        // half types: torch's kernel runs in c10::Half, whose every operation rounds to half
        d @ (DType::Float16 | DType::BFloat16) => {
            let r = |x: f32| crate::element::round_through(d, x as f64) as f32;
            let (a, b) = (r(start.to_f64() as f32), r(end.to_f64() as f32));
            let step = r(r(b - a) / (n - 1) as f32);
            let wide = Tensor::from_fn(&[n], |i| if i < half { r(a + r(step * i as f32)) } else { r(b - r(step * (n - i - 1) as f32)) })?;
            crate::ops::copy::to_dtype_raw(&wide, d)?
        }
        // small integers: computed as int64, wrapped once
        d => crate::ops::copy::to_dtype_raw(&linspace(start, end, steps, d.opmath())?, d)?,
    })
}

pub fn eye(n: i64, m: Option<i64>, dtype: DType) -> Result<Tensor> {
    let m = m.unwrap_or(n);
    if n < 0 {
        return Err(Error::Runtime(format!("n must be greater or equal to 0, got {}", n)));
    }
    if m < 0 {
        return Err(Error::Runtime(format!("m must be greater or equal to 0, got {}", m)));
    }
    let (n, m) = (n as usize, m as usize);
    crate::shape::checked_numel(&[n, m])?; // torch's eye resizes first: its numel check comes first
    let t = Tensor::zeros(&[n, m], dtype)?;
    crate::dispatch_all!(dtype, T => {
        let p = t.data_ptr::<T>();
        for i in 0..n.min(m) {
            // SAFETY: t is fresh, contiguous n*m; i*m+i < n*m.
            unsafe { *p.add(i * m + i) = T::one() };
        }
    });
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_double_formatting() {
        // what `std::cout << double` prints (checked against torch's messages)
        for (v, s) in [(0.5, "0.5"), (0.0, "0"), (0.1234567, "0.123457"), (1e20, "1e+20"), (1.0, "1"), (f64::NAN, "nan"),
                       (f64::NEG_INFINITY, "-inf"), (123456.0, "123456"), (1234567.0, "1.23457e+06"), (1e-5, "1e-05"), (0.0001, "0.0001")] {
            assert_eq!(fmt_g(v), s);
        }
    }
}
