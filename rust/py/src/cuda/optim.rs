//! Fused optimizer steps on the GPU (rust/core/src/ops/optim.cu): the whole parameter group in
//! one launch, through a table of tensor addresses and sizes uploaded with the step's per-tensor
//! scalars. Every thread walks every tensor grid-stride, so the grid is sized by the largest.

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::Params;
use minigrad_core::device::Backend;
use minigrad_core::error::Result;
use minigrad_core::ops::copy::to_device_raw;
use minigrad_core::ops::optim::{Rule, Slot};
use minigrad_core::tensor::Tensor;

/// Address of a contiguous tensor's first element.
fn first(t: &Tensor) -> i64 {
    (t.storage.as_ptr() as u64 + (t.layout.offset * t.dtype().size()) as u64) as i64
}

impl Cuda {
    pub(super) fn optim_step_impl(&self, rule: Rule, slots: &[Slot]) -> Result<()> {
        let longest = slots.iter().map(|s| s.param.numel()).max().unwrap_or(0);
        if longest == 0 {
            return Ok(());
        }
        // slots of one group may differ in dtype: one launch per dtype, in first-seen order
        let mut dtypes = Vec::new();
        for s in slots {
            if !dtypes.contains(&s.param.dtype()) {
                dtypes.push(s.param.dtype());
            }
        }
        for dtype in dtypes {
            let group: Vec<&Slot> = slots.iter().filter(|s| s.param.dtype() == dtype).collect();
            let n = group.len();
            let mut ptrs = Vec::with_capacity(6 * n);
            let mut scal = Vec::with_capacity(2 * n);
            let mut fresh = Vec::with_capacity(n);
            for s in &group {
                ptrs.extend([first(&s.param), first(&s.grad)]);
                ptrs.extend((0..3).map(|k| s.state.get(k).map_or(0, first)));
                ptrs.push(s.param.numel() as i64);
                scal.extend([s.step_size, s.bc2_sqrt]);
                fresh.push(u8::from(s.first));
            }
            let longest = group.iter().map(|s| s.param.numel()).max().unwrap_or(0);
            let ptrs = to_device_raw(&Tensor::from_vec(ptrs, &[6 * n])?, self.device())?;
            let mut p = Params::new();
            p.ptr(first(&ptrs) as u64);
            let t = ty(dtype);
            match rule {
                Rule::Sgd(h) => {
                    let fresh = to_device_raw(&Tensor::from_vec(fresh.into_iter().map(|f| f != 0).collect::<Vec<bool>>(), &[n])?, self.device())?;
                    p.ptr(first(&fresh) as u64).i64(n as i64).f64(h.lr).f64(h.momentum).f64(h.dampening).f64(h.weight_decay);
                    p.i32(i32::from(h.nesterov)).i32(i32::from(h.maximize));
                    self.launch(&format!("mg_sgd_step<{t}>"), longest, &mut p)?;
                }
                Rule::Adam(h) => {
                    let scal = to_device_raw(&Tensor::from_vec(scal, &[2 * n])?, self.device())?;
                    p.ptr(first(&scal) as u64).i64(n as i64).f64(h.lr).f64(h.beta1).f64(h.beta2).f64(h.eps).f64(h.weight_decay);
                    p.i32(i32::from(h.decoupled)).i32(i32::from(h.amsgrad)).i32(i32::from(h.maximize));
                    self.launch(&format!("mg_adam_step<{t}>"), longest, &mut p)?;
                }
            }
        }
        Ok(())
    }
}
