//! The GPU's random generator: per device, a seed and an offset into Philox's counter space
//! (rust/core/src/ops/random.cu). A fill of n elements takes counters [offset, offset + n) and
//! moves the offset past them, so a seed fixes every later fill, whatever grid runs it.
//! Seeds are kept even for devices without a backend yet (torch lets `torch.cuda.manual_seed` run
//! before CUDA starts; the seed applies once it does).

use super::backend::{own, Cuda};
use super::kernels::ty;
use super::memory::MAX_DEVICES;
use minigrad_core::device::{Backend, RandomDist};
use minigrad_core::error::{Error, Result};
use minigrad_core::tensor::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Mutex;

/// What a fresh torch.cuda generator reports as its initial seed; minigrad starts from it too.
pub const DEFAULT_SEED: u64 = 67280421310721;

#[derive(Clone, Copy)]
struct Generator {
    seed: u64,
    offset: u64,
}

static GENERATORS: [Mutex<Generator>; MAX_DEVICES] = [const { Mutex::new(Generator { seed: DEFAULT_SEED, offset: 0 }) }; MAX_DEVICES];

fn generator(index: u32) -> PyResult<&'static Mutex<Generator>> {
    GENERATORS.get(index as usize).ok_or_else(|| PyRuntimeError::new_err("CUDA error: invalid device ordinal"))
}

/// Takes `n` counters of device `index`'s stream: the seed and the first counter.
fn reserve(index: u32, n: u64) -> (u64, u64) {
    let mut g = GENERATORS[index as usize].lock().unwrap_or_else(|e| e.into_inner());
    let first = g.offset;
    g.offset = g.offset.wrapping_add(n);
    (g.seed, first)
}

impl Cuda {
    /// `Backend::random_fill` on this GPU: one Philox draw per element, in place, any layout.
    pub(super) fn random(&self, dst: &Tensor, dist: RandomDist) -> Result<()> {
        let dtype = dst.dtype();
        let (op, p0, p1) = match dist {
            RandomDist::Uniform { from, to } => ("Uniform", from, to),
            RandomDist::Normal { mean, std } => ("Normal", mean, std),
        };
        if dst.numel() == 0 {
            return Ok(()); // torch's normal_ accepts an empty integer tensor: nothing is drawn
        }
        if !dtype.is_floating() {
            return Err(Error::NotImplemented(format!(
                "\"{}\" not implemented for '{}'",
                if op == "Uniform" { "check_uniform_bounds" } else { "normal_kernel_cuda" },
                dtype.scalar_type_name()
            )));
        }
        let (seed, offset) = reserve(self.index, dst.numel() as u64);
        let t = ty(dtype);
        self.elementwise(&format!("mg_random<{t}, mg::{op}>"), &format!("mg_random_contig<{t}, mg::{op}>"), dst.shape(), vec![own(dst)], |p| {
            p.i64(seed as i64).i64(offset as i64).f64(p0).f64(p1);
        })
        .map_err(|e| match e {
            Error::NotImplemented(_) => Error::NotImplemented(format!("minigrad: random fills are not implemented for {} tensors on {}", dtype.name(), self.device())),
            e => e,
        })
    }
}

/// `minigrad.cuda.manual_seed`: seeds device `index` and restarts its stream.
#[pyfunction]
pub fn _cuda_manual_seed(index: u32, seed: i64) -> PyResult<()> {
    *generator(index)?.lock().unwrap_or_else(|e| e.into_inner()) = Generator { seed: seed as u64, offset: 0 };
    Ok(())
}

/// `minigrad.cuda.manual_seed_all` (and `minigrad.manual_seed`, which seeds every device).
#[pyfunction]
pub fn _cuda_manual_seed_all(seed: i64) {
    for g in &GENERATORS {
        *g.lock().unwrap_or_else(|e| e.into_inner()) = Generator { seed: seed as u64, offset: 0 };
    }
}

/// `(seed, offset)` of device `index`'s generator (`minigrad.cuda.initial_seed`,
/// `get_rng_state`).
#[pyfunction]
pub fn _cuda_rng_state(index: u32) -> PyResult<(u64, u64)> {
    let g = *generator(index)?.lock().unwrap_or_else(|e| e.into_inner());
    Ok((g.seed, g.offset))
}

#[pyfunction]
pub fn _cuda_set_rng_state(index: u32, seed: u64, offset: u64) -> PyResult<()> {
    *generator(index)?.lock().unwrap_or_else(|e| e.into_inner()) = Generator { seed, offset };
    Ok(())
}
