//! Where a tensor's memory lives. The CPU is always there; a CUDA device exists once a backend
//! for it has been registered with the core (the bindings do that when CuPy finds a GPU).
//!
//! The order and words follow torch: `cpu`, `cuda:0`; an op that mixes devices fails with
//! torch's "Expected all tensors to be on the same device" error (see `check_same_device`).

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    #[default]
    Cpu,
    /// A CUDA device by ordinal.
    Cuda(u32),
}

impl Device {
    pub fn is_cpu(self) -> bool {
        self == Device::Cpu
    }

    /// torch's spelling: `cpu`, `cuda:0`.
    pub fn name(self) -> String {
        match self {
            Device::Cpu => "cpu".into(),
            Device::Cuda(i) => format!("cuda:{}", i),
        }
    }

    /// The device type without the index (`cpu`, `cuda`), as `tensor.device.type` reads.
    pub fn kind(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// The device every operand of an op shares, or torch's error naming the first two that differ.
/// `what` is the op's name as torch's message gives it (`wrapper_CUDA__cat`, ...): callers that
/// have none pass "".
pub fn check_same_device(devices: impl IntoIterator<Item = Device>) -> Result<Device> {
    let mut it = devices.into_iter();
    let first = it.next().unwrap_or_default();
    for d in it {
        if d != first {
            // torch names the device it expected first (the CUDA one when a CPU tensor is mixed in).
            let (a, b) = if first.is_cpu() { (d, first) } else { (first, d) };
            return Err(Error::Runtime(format!(
                "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                a, b
            )));
        }
    }
    Ok(first)
}
