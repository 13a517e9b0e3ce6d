//! Packing a kernel launch: the parameter block `cuLaunchKernel` receives (one pointer per
//! parameter, pointing at its value laid out as docs/gpu.md's ABI says), the operands' geometry
//! with dims merged where every operand allows it, and the grid.

use minigrad_core::dtype::{DType, Scalar};
use minigrad_core::element::Element;
use minigrad_core::tensor::Tensor;

/// `MG_MAX_DIMS` of cuda_common.cuh: the fixed capacity of `MgShape` / `MgStrides`.
pub const MAX_DIMS: usize = 25;
/// Threads per block of the elementwise kernels (any value works: they loop grid-stride).
pub const BLOCK: u32 = 256;
/// At most this many blocks (CUDA's limit on a grid's x dimension); the grid-stride loops cover
/// the rest. There is no smaller cap: a thread per element (per 16-byte vector in the contiguous
/// kernels), as torch launches, moved 2.99 TB/s through relu at 1e8 floats on an H100 where the
/// same kernel over at most 4096 blocks of 256 looping grid-stride moved 2.85
/// (scripts/gpu-probe-elementwise.py, docs/gpu.md "Numbers").
const MAX_GRID: u64 = (1 << 31) - 1;

/// The parameter block of one launch. Each value lives in its own 8-byte-aligned box, so the
/// pointers handed to the driver stay valid until the block is dropped (after the launch call
/// returns: CUDA copies the parameters at launch).
#[derive(Default)]
pub struct Params {
    values: Vec<Box<[u64]>>,
}

impl Params {
    pub fn new() -> Params {
        Params::default()
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)].into_boxed_slice();
        // SAFETY: `words` has at least `bytes.len()` bytes and the two buffers are distinct.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr() as *mut u8, bytes.len()) };
        self.values.push(words);
        self
    }

    pub fn ptr(&mut self, address: u64) -> &mut Self {
        self.push_bytes(&address.to_ne_bytes())
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.push_bytes(&v.to_ne_bytes())
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.push_bytes(&v.to_ne_bytes())
    }

    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.push_bytes(&v.to_ne_bytes())
    }

    /// A Python number by value in the kernel's type `T` (`dtype`), converted as the CPU
    /// kernels convert it (`Element::from_scalar`).
    pub fn scalar(&mut self, v: Scalar, dtype: DType) -> &mut Self {
        minigrad_core::dispatch_all!(dtype, T => {
            let x = T::from_scalar(v);
            // SAFETY: reading the bytes of a plain numeric value of size_of::<T>() bytes.
            let bytes = unsafe { std::slice::from_raw_parts(&x as *const T as *const u8, std::mem::size_of::<T>()) };
            self.push_bytes(bytes)
        })
    }

    /// A struct of `long long` fields by value (`MgConv`, `MgPool`), in declaration order.
    pub fn i64s(&mut self, v: &[i64]) -> &mut Self {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        self.push_bytes(&bytes)
    }

    /// `MgShape { int ndim; long long sizes[25]; }`.
    pub fn shape(&mut self, sizes: &[usize]) -> &mut Self {
        let mut b = vec![0u8; 8 + 8 * MAX_DIMS];
        b[..4].copy_from_slice(&(sizes.len() as i32).to_ne_bytes());
        for (i, s) in sizes.iter().enumerate() {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&(*s as i64).to_ne_bytes());
        }
        self.push_bytes(&b)
    }

    /// `MgStrides { long long offset; long long strides[25]; }` (elements).
    pub fn strides(&mut self, offset: usize, strides: &[isize]) -> &mut Self {
        let mut b = vec![0u8; 8 + 8 * MAX_DIMS];
        b[..8].copy_from_slice(&(offset as i64).to_ne_bytes());
        for (i, s) in strides.iter().enumerate() {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&(*s as i64).to_ne_bytes());
        }
        self.push_bytes(&b)
    }

    /// The `void**` array to hand to the driver; valid while `self` and the returned vector live.
    pub fn pointers(&mut self) -> Vec<*mut std::ffi::c_void> {
        self.values.iter_mut().map(|v| v.as_mut_ptr() as *mut std::ffi::c_void).collect()
    }
}

/// Blocks for `n` threads' work (at least one).
pub fn grid_for(n: usize) -> u32 {
    (n as u64).div_ceil(u64::from(BLOCK)).clamp(1, MAX_GRID) as u32
}

/// Elements a `*_contig` kernel moves per thread and step: one 16-byte vector of its widest
/// operand (cuda_common.cuh `for_each_contig`).
pub fn vector_width(operands: &[Operand]) -> usize {
    16 / operands.iter().map(|o| o.elem_size).max().unwrap_or(1).clamp(1, 16)
}

/// One operand of an elementwise kernel as the strided kernels see it.
pub struct Operand {
    /// Device address of the storage's first byte.
    pub base: u64,
    pub offset: usize,
    /// Strides broadcast to the iteration shape (elements; 0 on expanded dims).
    pub strides: Vec<isize>,
    pub elem_size: usize,
}

impl Operand {
    pub fn of(t: &Tensor, strides: Vec<isize>) -> Operand {
        Operand { base: t.storage.as_ptr() as u64, offset: t.layout.offset, strides, elem_size: t.dtype().size() }
    }

    /// Address of the first element (what a `*_contig` kernel takes).
    pub fn first(&self) -> u64 {
        self.base + (self.offset * self.elem_size) as u64
    }
}

/// The iteration shape of an elementwise launch and its operands, with size-1 dims dropped and
/// neighbouring dims merged wherever every operand walks them as one (fewer divisions per
/// element in the kernel, and a contiguous launch whenever all operands are dense in one order).
pub struct Geometry {
    pub shape: Vec<usize>,
    pub operands: Vec<Operand>,
    pub numel: usize,
}

impl Geometry {
    pub fn new(shape: &[usize], operands: Vec<Operand>) -> Geometry {
        let numel = shape.iter().product();
        let mut g = Geometry { shape: Vec::new(), operands, numel };
        let mut strides: Vec<Vec<isize>> = vec![Vec::new(); g.operands.len()];
        for (d, &size) in shape.iter().enumerate() {
            if size == 1 {
                continue;
            }
            let merge = !g.shape.is_empty()
                && g.operands.iter().zip(&strides).all(|(op, kept)| *kept.last().unwrap() == op.strides[d] * size as isize);
            if merge {
                *g.shape.last_mut().unwrap() *= size;
                for (op, kept) in g.operands.iter().zip(strides.iter_mut()) {
                    *kept.last_mut().unwrap() = op.strides[d];
                }
            } else {
                g.shape.push(size);
                for (op, kept) in g.operands.iter().zip(strides.iter_mut()) {
                    kept.push(op.strides[d]);
                }
            }
        }
        for (op, s) in g.operands.iter_mut().zip(strides) {
            op.strides = s;
        }
        g
    }

    /// Every operand walks the elements densely in the same order (one dim of stride 1, or a
    /// single element): the `*_contig` kernels apply.
    pub fn is_contiguous(&self) -> bool {
        self.shape.len() <= 1 && self.operands.iter().all(|o| self.shape.is_empty() || o.strides[0] == 1)
    }

    /// More dims than `MgShape` holds after merging (torch allows 25 at most, as do we: never).
    pub fn too_many_dims(&self) -> bool {
        self.shape.len() > MAX_DIMS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(strides: &[isize]) -> Operand {
        Operand { base: 0, offset: 0, strides: strides.to_vec(), elem_size: 4 }
    }

    #[test]
    fn contiguous_operands_merge_into_one_dim() {
        let g = Geometry::new(&[2, 3, 4], vec![op(&[12, 4, 1]), op(&[12, 4, 1])]);
        assert_eq!(g.shape, vec![24]);
        assert!(g.is_contiguous());
    }

    #[test]
    fn a_broadcast_operand_keeps_its_dims_apart() {
        let g = Geometry::new(&[2, 3, 4], vec![op(&[12, 4, 1]), op(&[0, 0, 1])]);
        assert_eq!(g.shape, vec![6, 4]);
        assert_eq!(g.operands[1].strides, vec![0, 1]);
        assert!(!g.is_contiguous());
    }

    #[test]
    fn size_one_dims_are_dropped_and_a_transpose_is_strided() {
        let g = Geometry::new(&[1, 3, 1, 2], vec![op(&[6, 2, 2, 1]), op(&[6, 1, 6, 3])]);
        assert_eq!(g.shape, vec![3, 2]);
        assert_eq!(g.operands[1].strides, vec![1, 3]);
        let scalar = Geometry::new(&[], vec![op(&[])]);
        assert!(scalar.shape.is_empty() && scalar.is_contiguous() && scalar.numel == 1);
    }

    #[test]
    fn parameters_are_laid_out_as_the_abi_says() {
        let mut p = Params::new();
        p.shape(&[2, 3]).strides(5, &[3, -1]).i32(7).scalar(Scalar::Float(1.5), DType::Float32);
        let ptrs = p.pointers();
        // SAFETY: each pointer addresses the bytes pushed for it.
        unsafe {
            assert_eq!(*(ptrs[0] as *const i32), 2);
            assert_eq!(*(ptrs[0] as *const i64).add(2), 3);
            assert_eq!(*(ptrs[1] as *const i64), 5);
            assert_eq!(*(ptrs[1] as *const i64).add(2), -1);
            assert_eq!(*(ptrs[2] as *const i32), 7);
            assert_eq!(*(ptrs[3] as *const f32), 1.5);
        }
    }
}
