//! Factory functions: arange, linspace, eye, and the random ones with a seedable generator.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::sync::Mutex;

/// The default generator behind `manual_seed`, `rand`, `randn`, `randint` (not torch's stream:
/// seeding makes runs reproducible within minigrad, not bit-equal to torch).
static GENERATOR: Mutex<Option<StdRng>> = Mutex::new(None);

pub fn manual_seed(seed: u64) {
    *GENERATOR.lock().unwrap_or_else(|e| e.into_inner()) = Some(StdRng::seed_from_u64(seed));
}

fn with_rng<R>(f: impl FnOnce(&mut StdRng) -> R) -> R {
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let rng = g.get_or_insert_with(|| StdRng::seed_from_u64(0x5eed_0f_3141_5926));
    f(rng)
}

fn fill_with<T: Element>(shape: &[usize], mut next: impl FnMut() -> T) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<T> = (0..n).map(|_| next()).collect();
    Tensor::from_vec(v, shape).expect("sizes agree")
}

fn require_float(dtype: DType, what: &str) -> Result<()> {
    if !dtype.is_floating() {
        return Err(Error::Runtime(format!("\"{}\" not implemented for '{}'", what, dtype.scalar_type_name())));
    }
    Ok(())
}

/// Uniform on [0, 1).
pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    require_float(dtype, "check_uniform_bounds")?;
    Ok(with_rng(|r| crate::dispatch_float!(dtype, T => fill_with::<T>(shape, || T::from_f64(r.random::<f64>())), _ => unreachable!())))
}

/// Standard normal.
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    require_float(dtype, "normal_kernel_cpu")?;
    Ok(with_rng(|r| {
        crate::dispatch_float!(dtype, T => fill_with::<T>(shape, || {
            let v: f64 = StandardNormal.sample(r);
            T::from_f64(v)
        }), _ => unreachable!())
    }))
}

/// Integers uniform on [low, high).
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if low >= high {
        return Err(Error::Runtime(format!(
            "random_ expects 'from' to be less than 'to', but got from={} >= to={}",
            low, high
        )));
    }
    Ok(with_rng(|r| crate::dispatch!(dtype, T => fill_with::<T>(shape, || T::from_i64(r.random_range(low..high))))))
}

/// Fills an existing tensor's elements in place with uniform [from, to) values (kernel level;
/// `uniform_`/`normal_` call it inside the write path).
pub fn uniform_values(n: usize, from: f64, to: f64) -> Vec<f64> {
    with_rng(|r| (0..n).map(|_| from + (to - from) * r.random::<f64>()).collect())
}

pub fn normal_values(n: usize, mean: f64, std: f64) -> Vec<f64> {
    with_rng(|r| {
        (0..n)
            .map(|_| {
                let v: f64 = StandardNormal.sample(r);
                mean + std * v
            })
            .collect()
    })
}

/// torch.arange. Float arguments default to float32, integers to int64.
pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let any_float = [start, end, step].iter().any(|s| s.is_floating());
    let dtype = dtype.unwrap_or(if any_float { DType::Float32 } else { DType::Int64 });
    let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
    if st == 0.0 {
        return Err(Error::Runtime("step must be nonzero".into()));
    }
    if !s.is_finite() || !e.is_finite() {
        return Err(Error::Runtime(format!("unsupported range: {} -> {}", s, e)));
    }
    if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
        return Err(Error::Runtime("upper bound and lower bound inconsistent with step sign".into()));
    }
    let n = if any_float || dtype.is_floating() {
        ((e - s) / st).ceil()
    } else {
        let (si, ei, sti) = (start.to_i64(), end.to_i64(), step.to_i64());
        ((ei - si + sti - sti.signum()) / sti) as f64
    };
    let n = n.max(0.0) as usize;
    Ok(crate::dispatch!(dtype, T => {
        if dtype.is_floating() {
            let v: Vec<T> = (0..n).map(|i| T::from_f64(s + i as f64 * st)).collect();
            Tensor::from_vec(v, &[n])?
        } else {
            let (si, sti) = (start.to_i64(), step.to_i64());
            let v: Vec<T> = (0..n).map(|i| if any_float { T::from_f64(s + i as f64 * st) } else { T::from_i64(si + i as i64 * sti) }).collect();
            Tensor::from_vec(v, &[n])?
        }
    }))
}

/// torch.linspace: symmetric from both ends as torch computes it.
pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(Error::Runtime("number of steps must be non-negative".into()));
    }
    let n = steps as usize;
    let step = if n > 1 { (end - start) / (n - 1) as f64 } else { 0.0 };
    let half = n / 2;
    let vals: Vec<f64> = (0..n)
        .map(|i| if i < half { start + step * i as f64 } else { end - step * (n - 1 - i) as f64 })
        .collect();
    Ok(crate::dispatch!(dtype, T => Tensor::from_vec(vals.iter().map(|&v| T::from_f64(v)).collect::<Vec<T>>(), &[n])?))
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
    let t = Tensor::zeros(&[n, m], dtype);
    crate::dispatch!(dtype, T => {
        let p = t.data_ptr::<T>();
        for i in 0..n.min(m) {
            // SAFETY: t is fresh, contiguous n*m; i*m+i < n*m.
            unsafe { *p.add(i * m + i) = T::one() };
        }
    });
    Ok(t)
}
