//! Finding a kernel: the name expression of an instance (as `cuda_kernels.rs` lists them), the
//! source it comes from, and the function handle, compiled at first use and cached here so that
//! a launch does no Python-side lookup.

use super::driver::Driver;
use minigrad_core::dtype::DType;
use minigrad_core::error::{Error, Result};
use minigrad_core::ops::cuda_kernels::{c_type, SOURCES};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Where an instance is listed: its source, and the instances compiled with it (the same kernel
/// family and op for every type pair: one NVRTC program serves all dtypes of an op).
struct Listing {
    source: &'static str,
    group: usize,
}

struct Table {
    listing: HashMap<String, Listing>,
    groups: Vec<Vec<String>>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table { listing: HashMap::new(), groups: Vec::new() };
        for s in SOURCES {
            for f in s.families {
                for op in f.ops {
                    let mut group = Vec::new();
                    for (ty, out) in f.types {
                        for k in f.kernels {
                            group.push(k.replace("{op}", op).replace("{T}", ty).replace("{O}", out));
                        }
                    }
                    for name in &group {
                        t.listing.insert(name.clone(), Listing { source: s.name, group: t.groups.len() });
                    }
                    t.groups.push(group);
                }
            }
        }
        t
    })
}

/// True when `name` is an instance the sources provide.
pub fn exists(name: &str) -> bool {
    table().listing.contains_key(name)
}

/// The C type of `dtype` in a name expression.
pub fn ty(dtype: DType) -> &'static str {
    c_type(dtype)
}

/// Function handles by name expression, for one device.
#[derive(Default)]
pub struct FunctionCache {
    handles: Mutex<HashMap<String, u64>>,
}

impl FunctionCache {
    pub fn get(&self, driver: &Driver, name: &str) -> Result<u64> {
        if let Some(&h) = self.handles.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
            return Ok(h);
        }
        let listing = table().listing.get(name).ok_or_else(|| {
            Error::NotImplemented(format!("minigrad: no CUDA kernel `{name}` (see `minigrad kernels --instances`)"))
        })?;
        // Not holding the lock while Python compiles: another thread may need the interpreter.
        let h = driver.function(listing.source, name, table().groups[listing.group].clone())?;
        self.handles.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), h);
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instance_is_listed_with_its_group() {
        let n: usize = SOURCES.iter().map(|s| s.instances().len()).sum();
        assert_eq!(table().listing.len(), n);
        assert!(exists("mg_unary_contig<float, float, mg::Relu>"));
        let l = &table().listing["mg_binary<bool, double, mg::Lt>"];
        assert_eq!(l.source, "binary");
        assert!(table().groups[l.group].contains(&"mg_binary_scalar_contig<bool, int, mg::Lt>".to_string()));
    }
}
