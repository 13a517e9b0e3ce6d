//! The CUDA kernel sources, kept as `.cu` files beside their ops and embedded here as text, with
//! every template instance the CUDA backend may launch (its NVRTC name expression). Nothing here
//! needs CUDA: the CUDA backend compiles these strings at first use (NVRTC through CuPy), and
//! `minigrad kernels --check` compiles all of them without a GPU. docs/gpu.md describes the ABI.

use crate::dtype::DType;

/// One `.cu` file: its sources and the instances it is compiled for.
pub struct CudaSource {
    /// Short name (`unary`, `binary`, ...).
    pub name: &'static str,
    /// Path from the repository root.
    pub path: &'static str,
    pub source: &'static str,
    pub families: &'static [Family],
}

/// A product of kernel templates, type pairs and ops: every `kernels` pattern with `{op}`, then
/// `{T}` (input type) and `{O}` (output type) substituted, for every op and every type pair.
pub struct Family {
    pub kernels: &'static [&'static str],
    /// (T, O) pairs, as C type names.
    pub types: &'static [(&'static str, &'static str)],
    pub ops: &'static [&'static str],
}

impl CudaSource {
    /// Every name expression of this source, in a fixed order.
    pub fn instances(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in self.families {
            for op in f.ops {
                for (t, o) in f.types {
                    for k in f.kernels {
                        out.push(k.replace("{op}", op).replace("{T}", t).replace("{O}", o));
                    }
                }
            }
        }
        out
    }
}

/// Headers the sources include, by the name they include them with.
pub const HEADERS: &[(&str, &str)] = &[("cuda_common.cuh", include_str!("cuda_common.cuh"))];

/// NVRTC options every source is compiled with, besides the target architecture. No fast math,
/// and no contraction of `a * b + c` into one rounding, so results follow the CPU's arithmetic.
pub const NVRTC_OPTIONS: &[&str] = &["-std=c++17", "--fmad=false"];

/// The block size every kernel that combines across threads (reductions, softmax) requires.
pub const REDUCE_THREADS: u32 = 256;

/// Bytes per partial result of `mg_reduce_split` (one `mg::AccSlot`).
pub const ACC_SLOT_BYTES: usize = 16;

/// The C type of a dtype's elements in the kernels.
pub fn c_type(dtype: DType) -> &'static str {
    match dtype {
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::Int64 => "long long",
        DType::Int32 => "int",
        DType::Bool => "bool",
        // storage-only dtypes (cuda_common.cuh): half formats are 16-bit words
        DType::Float16 => "mg_half",
        DType::BFloat16 => "mg_bf16",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short",
    }
}

/// The split `mg_reduce_split` uses for an `(outer, red, inner)` reduction: 0 (one pass,
/// `mg_reduce`) when its work items (one per output row, or per 32-column tile) already number
/// enough to fill a device, else the chunk length that gives about 1024 work items in all, each
/// reading at least 4096 elements (a chunk of a 32-column tile reads 32 per reduced index, so
/// its chunks can be 32 times shorter: with the row minimum, sum(dim=0) of 10000x1000 had 96
/// work items for an H100's 132 multiprocessors and ran at 2x torch's time, 2026-11-27). Row
/// chunks are whole multiples of the block's stride, tile chunks of its 8 row lanes. A function
/// of the shape only, so results do not depend on the device they run on (the order of
/// summation follows the chunks).
pub fn reduce_chunk(outer: u64, red: u64, inner: u64) -> u64 {
    const MIN_ITEM_ELEMENTS: u64 = 4096;
    const TARGET_ITEMS: u64 = 1024;
    let (width, multiple) = if inner <= 1 { (1, u64::from(REDUCE_THREADS)) } else { (32, u64::from(REDUCE_THREADS) / 32) };
    let min_chunk = MIN_ITEM_ELEMENTS / width;
    let items = outer.saturating_mul(if inner <= 1 { 1 } else { inner.div_ceil(32) });
    if items >= TARGET_ITEMS || red <= 2 * min_chunk {
        return 0;
    }
    let per_item = TARGET_ITEMS.div_ceil(items.max(1));
    red.div_ceil(per_item).max(min_chunk).next_multiple_of(multiple)
}

const F: &[(&str, &str)] = &[("float", "float"), ("double", "double")];
const I: &[(&str, &str)] = &[("int", "int"), ("long long", "long long")];
const NUMERIC: &[(&str, &str)] = &[("float", "float"), ("double", "double"), ("int", "int"), ("long long", "long long")];
const ALL: &[(&str, &str)] = &[("float", "float"), ("double", "double"), ("int", "int"), ("long long", "long long"), ("bool", "bool")];
const BITS: &[(&str, &str)] = &[("int", "int"), ("long long", "long long"), ("bool", "bool")];
const TO_BOOL: &[(&str, &str)] = &[("float", "bool"), ("double", "bool"), ("int", "bool"), ("long long", "bool"), ("bool", "bool")];
const FLOAT_OUT: &[(&str, &str)] = &[
    ("float", "float"), ("float", "double"), ("double", "float"), ("double", "double"), ("int", "float"),
    ("int", "double"), ("long long", "float"), ("long long", "double"), ("bool", "float"), ("bool", "double"),
];
const NORM_TYPES: &[(&str, &str)] = &[("float", "float"), ("float", "double"), ("double", "double")];
/// Every (input, output) pair of the five dtypes.
const PAIRS: &[(&str, &str)] = &[
    ("float", "float"), ("float", "double"), ("float", "int"), ("float", "long long"), ("float", "bool"),
    ("double", "float"), ("double", "double"), ("double", "int"), ("double", "long long"), ("double", "bool"),
    ("int", "float"), ("int", "double"), ("int", "int"), ("int", "long long"), ("int", "bool"),
    ("long long", "float"), ("long long", "double"), ("long long", "int"), ("long long", "long long"), ("long long", "bool"),
    ("bool", "float"), ("bool", "double"), ("bool", "int"), ("bool", "long long"), ("bool", "bool"),
];

/// The storage-only dtypes (float16, bfloat16, uint8, int8, int16): kernels that move data.
const NARROW: &[(&str, &str)] = &[
    ("mg_half", "mg_half"), ("mg_bf16", "mg_bf16"), ("unsigned char", "unsigned char"), ("signed char", "signed char"), ("short", "short"),
];
/// Every (input, output) pair with a narrow dtype on either side: with PAIRS, all 10 x 10 casts.
const NARROW_PAIRS: &[(&str, &str)] = &[
    ("float", "mg_half"), ("float", "mg_bf16"), ("float", "unsigned char"), ("float", "signed char"), ("float", "short"),
    ("double", "mg_half"), ("double", "mg_bf16"), ("double", "unsigned char"), ("double", "signed char"), ("double", "short"),
    ("int", "mg_half"), ("int", "mg_bf16"), ("int", "unsigned char"), ("int", "signed char"), ("int", "short"),
    ("long long", "mg_half"), ("long long", "mg_bf16"), ("long long", "unsigned char"), ("long long", "signed char"), ("long long", "short"),
    ("bool", "mg_half"), ("bool", "mg_bf16"), ("bool", "unsigned char"), ("bool", "signed char"), ("bool", "short"),
    ("mg_half", "float"), ("mg_half", "double"), ("mg_half", "int"), ("mg_half", "long long"), ("mg_half", "bool"),
    ("mg_half", "mg_half"), ("mg_half", "mg_bf16"), ("mg_half", "unsigned char"), ("mg_half", "signed char"), ("mg_half", "short"),
    ("mg_bf16", "float"), ("mg_bf16", "double"), ("mg_bf16", "int"), ("mg_bf16", "long long"), ("mg_bf16", "bool"),
    ("mg_bf16", "mg_half"), ("mg_bf16", "mg_bf16"), ("mg_bf16", "unsigned char"), ("mg_bf16", "signed char"), ("mg_bf16", "short"),
    ("unsigned char", "float"), ("unsigned char", "double"), ("unsigned char", "int"), ("unsigned char", "long long"), ("unsigned char", "bool"),
    ("unsigned char", "mg_half"), ("unsigned char", "mg_bf16"), ("unsigned char", "unsigned char"), ("unsigned char", "signed char"), ("unsigned char", "short"),
    ("signed char", "float"), ("signed char", "double"), ("signed char", "int"), ("signed char", "long long"), ("signed char", "bool"),
    ("signed char", "mg_half"), ("signed char", "mg_bf16"), ("signed char", "unsigned char"), ("signed char", "signed char"), ("signed char", "short"),
    ("short", "float"), ("short", "double"), ("short", "int"), ("short", "long long"), ("short", "bool"),
    ("short", "mg_half"), ("short", "mg_bf16"), ("short", "unsigned char"), ("short", "signed char"), ("short", "short"),
];

const UNARY_KERNELS: &[&str] = &["mg_unary<{O}, {T}, mg::{op}>", "mg_unary_contig<{O}, {T}, mg::{op}>"];
const UNARY_BACKWARD_KERNELS: &[&str] = &["mg_unary_backward<{T}, mg::{op}>", "mg_unary_backward_contig<{T}, mg::{op}>"];
const BINARY_KERNELS: &[&str] = &[
    "mg_binary<{O}, {T}, mg::{op}>",
    "mg_binary_contig<{O}, {T}, mg::{op}>",
    "mg_binary_scalar<{O}, {T}, mg::{op}>",
    "mg_binary_scalar_contig<{O}, {T}, mg::{op}>",
];
const REDUCE_KERNELS: &[&str] = &["mg_reduce<mg::{op}>", "mg_reduce_split<mg::{op}>"];

const UNARY: CudaSource = CudaSource {
    name: "unary",
    path: "rust/core/src/ops/unary.cu",
    source: include_str!("unary.cu"),
    families: &[
        Family {
            kernels: UNARY_KERNELS,
            types: F,
            ops: &[
                "Neg", "Abs", "Sign", "Exp", "Log", "Log1p", "Expm1", "Sqrt", "Rsqrt", "Sin", "Cos", "Tanh", "Sigmoid",
                "Relu", "Silu", "Gelu", "GeluTanh", "Reciprocal", "Floor", "Ceil", "Round", "Trunc", "LeakyRelu", "Elu",
                "GeluCdf", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Log2", "Log10",
                "Exp2", "Erf", "Erfc", "Erfinv", "Frac", "Deg2rad", "Rad2deg", "Sinc",
            ],
        },
        Family { kernels: UNARY_KERNELS, types: I, ops: &["Neg", "Abs", "Sign", "Relu", "Floor", "Ceil", "Round", "Trunc", "BitwiseNot"] },
        Family { kernels: UNARY_KERNELS, types: &[("bool", "bool")], ops: &["Sign", "BitwiseNot"] },
        Family { kernels: UNARY_KERNELS, types: TO_BOOL, ops: &["LogicalNot"] },
        Family {
            kernels: UNARY_BACKWARD_KERNELS,
            types: F,
            ops: &[
                "ReluBackward", "SigmoidBackward", "TanhBackward", "SqrtBackward", "RsqrtBackward", "ReciprocalBackward",
                "Expm1Backward", "Log1pBackward", "AbsBackward", "SinBackward", "CosBackward", "SiluBackward",
                "GeluBackward", "GeluTanhBackward", "LeakyReluBackward", "EluBackward", "EluResultBackward",
            ],
        },
    ],
};

const BINARY: CudaSource = CudaSource {
    name: "binary",
    path: "rust/core/src/ops/binary/binary.cu",
    source: include_str!("binary/binary.cu"),
    families: &[
        Family { kernels: BINARY_KERNELS, types: ALL, ops: &["Add", "Mul", "Maximum", "Minimum", "Pow"] },
        Family { kernels: BINARY_KERNELS, types: NUMERIC, ops: &["Sub", "DivFloor", "DivTrunc", "Remainder", "Fmod"] },
        Family {
            kernels: BINARY_KERNELS,
            types: F,
            ops: &["AddAlpha", "Div", "Atan2", "Hypot", "Copysign", "Xlogy", "Logaddexp", "Logaddexp2"],
        },
        Family { kernels: BINARY_KERNELS, types: BITS, ops: &["BitAnd", "BitOr", "BitXor"] },
        Family {
            kernels: BINARY_KERNELS,
            types: TO_BOOL,
            ops: &["Eq", "Ne", "Lt", "Le", "Gt", "Ge", "LogicalAnd", "LogicalOr", "LogicalXor"],
        },
        Family { kernels: &["mg_where<{T}>", "mg_where_contig<{T}>"], types: ALL, ops: &[""] },
        Family { kernels: &["mg_clamp_scalar<{T}>", "mg_clamp_scalar_contig<{T}>"], types: NUMERIC, ops: &[""] },
        // bool: clamp with one tensor bound is maximum/minimum, which bool supports
        Family { kernels: &["mg_clamp<{T}>", "mg_clamp_contig<{T}>"], types: ALL, ops: &[""] },
        Family { kernels: &["mg_masked_fill<{T}>", "mg_masked_fill_contig<{T}>"], types: ALL, ops: &[""] },
    ],
};

const COPY: CudaSource = CudaSource {
    name: "copy",
    path: "rust/core/src/ops/copy.cu",
    source: include_str!("copy.cu"),
    families: &[
        Family { kernels: &["mg_copy<{O}, {T}>", "mg_copy_contig<{O}, {T}>"], types: PAIRS, ops: &[""] },
        Family { kernels: &["mg_fill<{T}>", "mg_fill_contig<{T}>"], types: ALL, ops: &[""] },
        Family { kernels: &["mg_copy<{O}, {T}>", "mg_copy_contig<{O}, {T}>"], types: NARROW_PAIRS, ops: &[""] },
        Family { kernels: &["mg_fill<{T}>", "mg_fill_contig<{T}>"], types: NARROW, ops: &[""] },
    ],
};

const REDUCE: CudaSource = CudaSource {
    name: "reduce",
    path: "rust/core/src/ops/reduce/reduce.cu",
    source: include_str!("reduce/reduce.cu"),
    families: &[
        Family { kernels: REDUCE_KERNELS, types: PAIRS, ops: &["Sum<{T}, {O}>", "Prod<{T}, {O}>"] },
        Family { kernels: REDUCE_KERNELS, types: FLOAT_OUT, ops: &["Mean<{T}, {O}>"] },
        Family { kernels: REDUCE_KERNELS, types: ALL, ops: &["Amax<{T}>", "Amin<{T}>", "ArgMax<{T}>", "ArgMin<{T}>", "All<{T}>", "Any<{T}>"] },
        Family {
            kernels: REDUCE_KERNELS,
            types: NORM_TYPES,
            ops: &["Norm2<{T}, {O}>", "Norm1<{T}, {O}>", "NormInf<{T}, {O}>", "NormNegInf<{T}, {O}>", "Norm0<{T}, {O}>", "NormP<{T}, {O}>"],
        },
        Family { kernels: REDUCE_KERNELS, types: F, ops: &["SqDev<{T}>", "LseShift<{T}>", "LseSum<{T}>"] },
        // short rows of the common float reductions (REDUCE_WARP_MAX_ROW)
        Family {
            kernels: &["mg_reduce_warp<mg::{op}>"],
            types: F,
            ops: &["Sum<{T}, {O}>", "Mean<{T}, {O}>", "Amax<{T}>", "Amin<{T}>", "ArgMax<{T}>", "ArgMin<{T}>"],
        },
    ],
};

/// Rows (inner == 1) up to this long reduce with `mg_reduce_warp` where it is instantiated.
pub const REDUCE_WARP_MAX_ROW: usize = 1024;

const SOFTMAX: CudaSource = CudaSource {
    name: "softmax",
    path: "rust/core/src/ops/reduce/softmax.cu",
    source: include_str!("reduce/softmax.cu"),
    families: &[
        Family { kernels: &["mg_softmax<{T}, {op}>", "mg_softmax_backward<{T}, {op}>"], types: F, ops: &["false", "true"] },
        Family {
            kernels: &["mg_softmax_warp<{T}, {op}>", "mg_softmax_warp_backward<{T}, {op}>"],
            types: F,
            ops: &[
                "false, 1", "false, 2", "false, 4", "false, 8", "false, 16", "false, 32",
                "true, 1", "true, 2", "true, 4", "true, 8", "true, 16", "true, 32",
            ],
        },
    ],
};

/// Rows up to this long take softmax's warp-per-row kernels (`SOFTMAX_WARP_PER` elements per
/// lane at most).
pub const SOFTMAX_WARP_MAX_ROW: usize = 32 * 32;

/// The smallest instantiated elements-per-lane count that holds a row of `n` (<= the max row).
pub fn softmax_warp_per(n: usize) -> usize {
    n.div_ceil(32).max(1).next_power_of_two()
}

const GATHER: CudaSource = CudaSource {
    name: "gather",
    path: "rust/core/src/ops/gather/gather.cu",
    source: include_str!("gather/gather.cu"),
    families: &[
        Family { kernels: &["mg_gather<{T}>"], types: ALL, ops: &[""] },
        Family {
            kernels: &["mg_scatter<{T}, mg::{op}>"],
            types: ALL,
            ops: &["ScatterAssign", "ScatterAdd", "ScatterMul", "ScatterAddScaled"],
        },
        Family { kernels: &["mg_gather<{T}>"], types: NARROW, ops: &[""] },
        Family {
            kernels: &["mg_scatter<{T}, mg::{op}>"],
            types: NARROW,
            ops: &["ScatterAssign", "ScatterAdd", "ScatterMul", "ScatterAddScaled"],
        },
    ],
};

const INDEX: CudaSource = CudaSource {
    name: "index",
    path: "rust/core/src/ops/advanced/index.cu",
    source: include_str!("advanced/index.cu"),
    families: &[
        Family { kernels: &["mg_index_gather<{T}>"], types: ALL, ops: &[""] },
        Family { kernels: &["mg_index_scatter<{T}, {op}>"], types: ALL, ops: &["false", "true"] },
        Family { kernels: &["mg_index_gather<{T}>"], types: NARROW, ops: &[""] },
        Family { kernels: &["mg_index_scatter<{T}, {op}>"], types: NARROW, ops: &["false", "true"] },
        Family { kernels: &["mg_index_table_rows", "mg_index_table_add"], types: &[("", "")], ops: &[""] },
    ],
};

const CONV: CudaSource = CudaSource {
    name: "conv",
    path: "rust/core/src/ops/conv.cu",
    source: include_str!("conv.cu"),
    families: &[Family { kernels: &["mg_im2col<{T}>", "mg_col2im<{T}>"], types: F, ops: &[""] }],
};

const POOL: CudaSource = CudaSource {
    name: "pool",
    path: "rust/core/src/ops/pool.cu",
    source: include_str!("pool.cu"),
    families: &[Family {
        kernels: &["mg_max_pool2d<{T}>", "mg_max_pool2d_backward<{T}>", "mg_avg_pool2d<{T}>", "mg_avg_pool2d_backward<{T}>"],
        types: F,
        ops: &[""],
    }],
};

const PAD: CudaSource = CudaSource {
    name: "pad",
    path: "rust/core/src/ops/pad.cu",
    source: include_str!("pad.cu"),
    families: &[Family { kernels: &["mg_pad2d<{T}>", "mg_pad2d_backward<{T}>"], types: F, ops: &[""] }],
};

const NORM: CudaSource = CudaSource {
    name: "norm",
    path: "rust/core/src/ops/norm.cu",
    source: include_str!("norm.cu"),
    families: &[Family {
        kernels: &["mg_bn_stats<{T}>", "mg_bn_apply<{T}>", "mg_bn_backward_stats<{T}>", "mg_bn_backward_apply<{T}>"],
        types: F,
        ops: &[""],
    }],
};

const RANDOM: CudaSource = CudaSource {
    name: "random",
    path: "rust/core/src/ops/random.cu",
    source: include_str!("random.cu"),
    families: &[Family {
        kernels: &["mg_random<{T}, mg::{op}>", "mg_random_contig<{T}, mg::{op}>"],
        types: F,
        ops: &["Uniform", "Normal"],
    }],
};

const OPTIM: CudaSource = CudaSource {
    name: "optim",
    path: "rust/core/src/ops/optim.cu",
    source: include_str!("optim.cu"),
    families: &[Family { kernels: &["mg_sgd_step<{T}>", "mg_adam_step<{T}>"], types: F, ops: &[""] }],
};

const SORT: CudaSource = CudaSource {
    name: "sort",
    path: "rust/core/src/ops/sort.cu",
    source: include_str!("sort.cu"),
    families: &[
        Family { kernels: &["mg_sort<{T}>", "mg_sort_bitonic<{T}>"], types: ALL, ops: &[""] },
        // bool: torch refuses topk/kthvalue/median of bool before any kernel runs
        Family { kernels: &["mg_topk<{T}>", "mg_kthvalue<{T}>", "mg_median<{T}>"], types: NUMERIC, ops: &[""] },
        // rows longer than BITONIC_MAX: block-sorted runs, then merge passes (sort.cu)
        Family { kernels: &["mg_sort_runs<{T}>", "mg_sort_merge<{T}>"], types: ALL, ops: &[""] },
        Family { kernels: &["mg_sort_pick<{T}>"], types: NUMERIC, ops: &[""] },
    ],
};

/// The scans' (element, accumulator) pairs: torch's CPU `acc_type` (float rows from the half
/// types accumulate in float, `Backend::scan`'s `acc`).
const SCAN_ACC: &[(&str, &str)] = &[("float", "double"), ("float", "float"), ("double", "double"), ("int", "long long"), ("long long", "long long")];

const SCAN: CudaSource = CudaSource {
    name: "scan",
    path: "rust/core/src/ops/scan.cu",
    source: include_str!("scan.cu"),
    families: &[
        Family { kernels: &["mg_scan<{T}, {O}, mg::{op}>"], types: SCAN_ACC, ops: &["ScanSum", "ScanProd"] },
        Family {
            kernels: &["mg_scan<{T}, {O}, mg::{op}>"],
            types: &[("float", "double"), ("float", "float"), ("double", "double")],
            ops: &["ScanLse"],
        },
    ],
};

/// Rows up to this length are stable-sorted by `mg_sort_bitonic` (sort.cu's MG_BITONIC_MAX).
pub const BITONIC_MAX: usize = 2048;
/// `mg_sort_bitonic`'s block size (sort.cu's MG_SORT_THREADS).
pub const SORT_THREADS: u32 = 256;

/// Every dtype, the narrow ones included: compaction moves data without arithmetic.
const EVERY: &[(&str, &str)] = &[
    ("float", "float"), ("double", "double"), ("int", "int"), ("long long", "long long"), ("bool", "bool"),
    ("mg_half", "mg_half"), ("mg_bf16", "mg_bf16"), ("unsigned char", "unsigned char"), ("signed char", "signed char"), ("short", "short"),
];

const COMPACT: CudaSource = CudaSource {
    name: "compact",
    path: "rust/core/src/ops/compact.cu",
    source: include_str!("compact.cu"),
    families: &[
        Family { kernels: &["mg_compact_count<{T}>", "mg_nonzero_write<{T}>", "mg_masked_select_write<{T}>"], types: EVERY, ops: &[""] },
        Family { kernels: &["mg_compact_scan"], types: &[("", "")], ops: &[""] },
        Family { kernels: &["mg_compact_rank"], types: &[("", "")], ops: &[""] },
        Family { kernels: &["mg_masked_put<{T}, {op}>"], types: EVERY, ops: &["false", "true"] },
        Family { kernels: &["mg_masked_take<{T}>"], types: EVERY, ops: &[""] },
    ],
};

/// `compact.cu`'s block size (MG_COMPACT_THREADS) and elements per block (MG_COMPACT_CHUNK).
pub const COMPACT_THREADS: u32 = 256;
pub const COMPACT_CHUNK: usize = 4096;

/// Every kernel source, in a fixed order.
pub const SOURCES: &[CudaSource] = &[UNARY, BINARY, COPY, REDUCE, SOFTMAX, GATHER, INDEX, CONV, POOL, PAD, NORM, RANDOM, OPTIM, SORT, SCAN, COMPACT];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_are_unique_and_fully_substituted() {
        let mut seen = std::collections::HashSet::new();
        for s in SOURCES {
            let inst = s.instances();
            assert!(!inst.is_empty(), "{} has no instances", s.name);
            for i in inst {
                assert!(!i.contains('{') && !i.contains('}'), "unsubstituted placeholder in {i}");
                assert!(seen.insert(i.clone()), "{i} listed twice");
            }
        }
    }

    #[test]
    fn every_source_includes_only_listed_headers_and_defines_its_kernels() {
        for s in SOURCES {
            for line in s.source.lines().filter(|l| l.starts_with("#include")) {
                let name = line.trim_start_matches("#include").trim().trim_matches('"');
                assert!(HEADERS.iter().any(|(h, _)| *h == name), "{} includes unlisted {name}", s.name);
            }
            for i in s.instances() {
                let template = i.split('<').next().unwrap();
                assert!(s.source.contains(&format!("__global__ void {template}(")), "{template} is not defined in {}", s.path);
            }
        }
    }

    #[test]
    fn instances_name_dtypes_by_c_type() {
        let unary = SOURCES.iter().find(|s| s.name == "unary").unwrap().instances();
        for d in DType::ALL {
            let t = c_type(d);
            assert!(unary.contains(&format!("mg_unary_contig<bool, {t}, mg::LogicalNot>")), "logical_not for {t}");
        }
        let copy = SOURCES.iter().find(|s| s.name == "copy").unwrap().instances();
        for a in DType::ALL {
            for b in DType::ALL {
                assert!(copy.contains(&format!("mg_copy<{}, {}>", c_type(a), c_type(b))));
            }
        }
    }

    #[test]
    fn every_dtype_moves_on_cuda() {
        let every: Vec<DType> = DType::ALL.into_iter().chain(DType::NARROW).collect();
        let all: Vec<String> = SOURCES.iter().flat_map(|s| s.instances()).collect();
        for &a in &every {
            let t = c_type(a);
            for &b in &every {
                let u = c_type(b);
                assert!(all.contains(&format!("mg_copy<{t}, {u}>")) && all.contains(&format!("mg_copy_contig<{t}, {u}>")), "cast {u} -> {t}");
            }
            for k in ["mg_fill<{T}>", "mg_fill_contig<{T}>", "mg_gather<{T}>", "mg_scatter<{T}, mg::ScatterAdd>", "mg_index_gather<{T}>", "mg_index_scatter<{T}, true>"] {
                let i = k.replace("{T}", t);
                assert!(all.contains(&i), "{i}");
            }
        }
    }

    #[test]
    fn reduce_chunk_depends_on_the_shape_only_and_splits_long_reductions() {
        assert_eq!(reduce_chunk(4096, 1 << 20, 1), 0, "enough rows: one pass");
        assert_eq!(reduce_chunk(1, 1 << 20, 32 * 2048), 0, "enough column tiles: one pass");
        assert_eq!(reduce_chunk(1, 100, 1), 0, "short rows: one pass");
        let c = reduce_chunk(1, 100_000_000, 1);
        assert!(c >= 4096 && c % u64::from(REDUCE_THREADS) == 0);
        let parts = 100_000_000u64.div_ceil(c);
        assert!((512..=1024).contains(&parts), "{parts} partials");
        // a sum over dim 0 of a (1e6, 100) tensor: 4 column tiles, split into ~256 chunks each
        let c = reduce_chunk(1, 1_000_000, 100);
        assert!((200..=256).contains(&1_000_000u64.div_ceil(c)), "{c}");
        // (10000, 1000) over dim 0: 32 tiles, each cut in ~32 chunks of at least 128 rows (4096
        // elements of a tile), a multiple of the 8 row lanes
        let c = reduce_chunk(1, 10_000, 1000);
        assert!(c >= 128 && c % 8 == 0 && (28..=32).contains(&10_000u64.div_ceil(c)), "{c}");
        assert_eq!(reduce_chunk(1, 256, 1000), 0, "a tile chunk would be under 4096 elements: one pass");
        assert_ne!(reduce_chunk(1, 257, 1000), 0);
    }
}
