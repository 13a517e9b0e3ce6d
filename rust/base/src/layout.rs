//! Strided layout: shape, strides (in elements) and storage offset, and every zero-copy view
//! transformation torch defines on them. Nothing here touches memory.

use crate::error::{fmt_shape, Error, Result};
use crate::shape::{checked_numel, contiguous_strides, infer_view_size, numel, storage_nbytes_strided, wrap_dim, wrap_dim_insert, wrap_dims};

pub use crate::shape::{Dims, Strides};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub shape: Dims,
    pub strides: Strides,
    pub offset: usize,
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: Dims::from_slice(shape), strides: contiguous_strides(shape), offset: 0 }
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// torch's definition: dims of size 1 may have any stride; an empty tensor is contiguous.
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected: isize = 1;
        for i in (0..self.ndim()).rev() {
            if self.shape[i] == 1 {
                continue;
            }
            if self.strides[i] != expected {
                return false;
            }
            expected *= self.shape[i] as isize;
        }
        true
    }

    /// Smallest and one-past-largest element offsets the layout can reach (None when empty).
    /// Every live layout's extent fits `isize` (its storage holds it), so the narrowing is exact.
    pub fn extent(&self) -> Option<(isize, isize)> {
        self.wide_extent().map(|(lo, hi)| (lo as isize, hi as isize))
    }

    /// `extent` computed without overflow (in i128), for checking layouts built from raw numbers.
    pub fn wide_extent(&self) -> Option<(i128, i128)> {
        if self.shape.contains(&0) {
            return None;
        }
        let (mut lo, mut hi) = (self.offset as i128, self.offset as i128);
        for (&s, &st) in self.shape.iter().zip(&self.strides) {
            let span = (s as i128 - 1) * st as i128;
            if span < 0 { lo += span } else { hi += span }
        }
        Some((lo, hi + 1))
    }

    /// torch's `has_internal_overlap(...) == MemOverlap::Yes`: a dim of size > 1 with stride 0 (an
    /// expanded tensor). Writes into such a tensor are refused; other self-overlapping layouts
    /// (`as_strided` with small strides) are "too hard" for torch and allowed, and so here.
    pub fn has_internal_overlap(&self) -> bool {
        self.numel() > 0 && self.shape.iter().zip(&self.strides).any(|(&s, &st)| s > 1 && st == 0)
    }

    /// True when two different indices may name the same element (any layout that is not provably
    /// free of self-overlap). Kernels writing such a layout run on one thread.
    pub fn may_self_overlap(&self) -> bool {
        may_self_overlap(&self.shape, &self.strides)
    }

    // ----- view transformations (each returns the new layout, sharing storage) -----

    /// torch's `computeStride`: the strides `view(shape)` would need, or None when the memory
    /// cannot be re-read as that shape without a copy.
    pub fn view_strides(&self, new_shape: &[usize]) -> Option<Vec<isize>> {
        let old_shape = &self.shape;
        let old_strides = &self.strides;
        if old_shape.is_empty() {
            return Some(vec![1; new_shape.len()]);
        }
        let n = numel(old_shape);
        if n == 0 && **old_shape == *new_shape {
            return Some(old_strides.to_vec());
        }
        let mut new_strides = vec![0isize; new_shape.len()];
        if n == 0 {
            return Some(contiguous_strides(new_shape).to_vec());
        }
        let mut view_d = new_shape.len() as isize - 1;
        let mut chunk_base_stride = *old_strides.last().unwrap();
        let mut tensor_numel: usize = 1;
        let mut view_numel: usize = 1;
        for tensor_d in (0..old_shape.len()).rev() {
            tensor_numel *= old_shape[tensor_d];
            if tensor_d == 0
                || (old_shape[tensor_d - 1] != 1
                    && old_strides[tensor_d - 1] != tensor_numel as isize * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel as isize * chunk_base_stride;
                    view_numel *= new_shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = old_strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(new_strides)
    }

    pub fn view(&self, shape: &[i64]) -> Result<Layout> {
        let new_shape = infer_view_size(shape, self.numel())?;
        match self.view_strides(&new_shape) {
            Some(strides) => Ok(Layout { shape: new_shape.into(), strides: strides.into(), offset: self.offset }),
            None => Err(Error::Runtime(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.".into(),
            )),
        }
    }

    pub fn permute(&self, dims: &[i64]) -> Result<Layout> {
        let n = self.ndim();
        if dims.len() != n {
            return Err(Error::Runtime(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
                n,
                dims.len()
            )));
        }
        let mut seen = vec![false; n];
        let mut shape = Vec::with_capacity(n);
        let mut strides = Vec::with_capacity(n);
        for &d in dims {
            let w = wrap_dim(d, n)?;
            if seen[w] {
                return Err(Error::Runtime("permute(): duplicate dims are not allowed.".into()));
            }
            seen[w] = true;
            shape.push(self.shape[w]);
            strides.push(self.strides[w]);
        }
        Ok(Layout { shape: shape.into(), strides: strides.into(), offset: self.offset })
    }

    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Layout> {
        let n = self.ndim();
        let (a, b) = (wrap_dim(d0, n)?, wrap_dim(d1, n)?);
        let mut out = self.clone();
        if n > 0 {
            out.shape.swap(a, b);
            out.strides.swap(a, b);
        }
        Ok(out)
    }

    pub fn t(&self) -> Result<Layout> {
        if self.ndim() > 2 {
            return Err(Error::Runtime(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.ndim()
            )));
        }
        if self.ndim() < 2 {
            return Ok(self.clone());
        }
        self.transpose(0, 1)
    }

    pub fn unsqueeze(&self, dim: i64) -> Result<Layout> {
        let d = wrap_dim_insert(dim, self.ndim())?;
        let mut out = self.clone();
        let stride = if d >= self.ndim() { 1 } else { self.strides[d] * self.shape[d] as isize };
        out.shape.insert(d, 1);
        out.strides.insert(d, stride);
        Ok(out)
    }

    /// squeeze() with no dims drops every size-1 dim; with dims, only those of size 1.
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Layout> {
        let n = self.ndim();
        let targets: Vec<usize> = match dims {
            None => (0..n).collect(),
            Some(ds) => wrap_dims(ds, n)?,
        };
        let mut out = Layout { shape: Default::default(), strides: Default::default(), offset: self.offset };
        for i in 0..n {
            if self.shape[i] == 1 && targets.contains(&i) {
                continue;
            }
            out.shape.push(self.shape[i]);
            out.strides.push(self.strides[i]);
        }
        Ok(out)
    }

    pub fn expand(&self, sizes: &[i64]) -> Result<Layout> {
        let n = self.ndim();
        if sizes.len() < n {
            return Err(Error::Runtime(format!(
                "expand(torch.FloatTensor{{{}}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                fmt_shape(&self.shape),
                sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
                sizes.len(),
                n
            )));
        }
        let lead = sizes.len() - n;
        let mut shape = vec![0usize; sizes.len()];
        let mut strides = vec![0isize; sizes.len()];
        for i in (0..sizes.len()).rev() {
            let want = sizes[i];
            // torch's inferExpandGeometry: a new leading dim first gets the stride that steps over
            // the dims inside it (0 for a 0-d tensor), then 0 if its size differs from 1.
            let (have, mut stride) = if i >= lead {
                (self.shape[i - lead], self.strides[i - lead])
            } else if n == 0 || i + 1 == sizes.len() {
                (1, 0)
            } else {
                (1, shape[i + 1] as isize * strides[i + 1])
            };
            let mut size = have;
            if want == -1 {
                if i < lead {
                    return Err(Error::Runtime(format!(
                        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {}",
                        i
                    )));
                }
            } else if want < 0 || want as usize != have {
                if have != 1 {
                    return Err(Error::Runtime(format!(
                        "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  Target sizes: [{}].  Tensor sizes: {}",
                        want,
                        have,
                        i,
                        sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
                        fmt_shape(&self.shape)
                    )));
                }
                if want < 0 {
                    return Err(Error::Runtime(format!(
                        "Trying to create tensor with negative dimension {}: [{}]",
                        want,
                        sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
                    )));
                }
                size = want as usize;
                stride = 0;
            }
            shape[i] = size;
            strides[i] = stride;
        }
        checked_numel(&shape)?;
        Ok(Layout { shape: shape.into(), strides: strides.into(), offset: self.offset })
    }

    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Layout> {
        if self.ndim() == 0 {
            return Err(Error::Runtime("narrow() cannot be applied to a 0-dim tensor.".into()));
        }
        if length < 0 {
            return Err(Error::Runtime("narrow(): length must be non-negative.".into()));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if start < -size || start > size {
            return Err(Error::Index(format!(
                "start out of range (expected to be in range of [{}, {}], but got {})",
                -size, size, start
            )));
        }
        let start = if start < 0 { start + size } else { start };
        if start.checked_add(length).is_none_or(|end| end > size) {
            return Err(Error::Runtime(format!(
                "start ({}) + length ({}) exceeds dimension size ({}).",
                start, length, size
            )));
        }
        self.slice(d, start, start + length, 1)
    }

    /// `unfold(dim, size, step)`: the windows of `size` elements every `step` along `dim`, as a
    /// dim of window starts (stride `step` times the old one) and a new last dim over each
    /// window (the old stride). Windows overlap when step < size: one element, several places.
    /// A 0-d tensor counts as one element along dim 0, and its result is the window alone.
    pub fn unfold(&self, dim: i64, size: i64, step: i64) -> Result<Layout> {
        let d = wrap_dim(dim, self.ndim())?;
        let max = if self.ndim() == 0 { 1 } else { self.shape[d] as i64 };
        if size > max {
            return Err(Error::Runtime(format!("maximum size for tensor at dimension {} is {} but size is {}", d, max, size)));
        }
        if size < 0 {
            return Err(Error::Runtime(format!("size is {} but must be >= 0", size)));
        }
        if step <= 0 {
            return Err(Error::Runtime(format!("step is {} but must be > 0", step)));
        }
        let mut out = self.clone();
        out.shape.push(size as usize);
        if self.ndim() == 0 {
            out.strides.push(1);
            return Ok(out);
        }
        out.strides.push(self.strides[d]);
        out.shape[d] = ((max - size) / step + 1) as usize;
        // one window: its stride is never used to index, and may pass isize (as `slice`)
        out.strides[d] = self.strides[d].saturating_mul(step as isize);
        Ok(out)
    }

    /// Basic slicing along one dim; start/end already clamped by the caller or clamped here.
    pub fn slice(&self, dim: usize, start: i64, end: i64, step: i64) -> Result<Layout> {
        if step <= 0 {
            return Err(Error::Value("step must be greater than zero".into()));
        }
        let size = self.shape[dim] as i64;
        let clamp = |v: i64| -> i64 {
            let v = if v < 0 { v + size } else { v };
            v.clamp(0, size)
        };
        let (s, e) = (clamp(start), clamp(end));
        // (e - s - 1) / step + 1 rather than (e - s + step - 1) / step: no overflow for huge steps
        let len = if e > s { (e - s - 1) / step + 1 } else { 0 };
        let mut out = self.clone();
        out.offset = (self.offset as isize + s as isize * self.strides[dim]) as usize;
        out.shape[dim] = len as usize;
        // a slice of one element may carry a stride past isize (never used to index): saturate
        out.strides[dim] = self.strides[dim].saturating_mul(step as isize);
        Ok(out)
    }

    pub fn select(&self, dim: i64, index: i64) -> Result<Layout> {
        if self.ndim() == 0 {
            return Err(Error::Index("select() cannot be applied to a 0-dim tensor.".into()));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if index < -size || index >= size {
            return Err(Error::Index(format!(
                "select(): index {} out of range for tensor of size {} at dimension {}",
                index,
                fmt_shape(&self.shape),
                d
            )));
        }
        let i = if index < 0 { index + size } else { index };
        let mut out = self.clone();
        out.offset = (self.offset as isize + i as isize * self.strides[d]) as usize;
        out.shape.remove(d);
        out.strides.remove(d);
        Ok(out)
    }

    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Layout> {
        let n = self.ndim();
        let (d1, d2) = (wrap_dim(dim1, n)?, wrap_dim(dim2, n)?);
        if d1 == d2 {
            return Err(Error::Runtime(format!(
                "diagonal dimensions cannot be identical {}, {}",
                dim1, dim2
            )));
        }
        let (s1, s2) = (self.shape[d1] as i64, self.shape[d2] as i64);
        // saturating: an offset past either size leaves an empty diagonal, whatever its magnitude
        let len = if offset >= 0 { s1.min(s2.saturating_sub(offset)).max(0) } else { s1.saturating_add(offset).min(s2).max(0) };
        let mut out = Layout { shape: Default::default(), strides: Default::default(), offset: self.offset };
        if len > 0 {
            // |offset| < the dim's size here, so the step fits inside the storage
            let start = if offset >= 0 { offset * self.strides[d2] as i64 } else { -offset * self.strides[d1] as i64 };
            out.offset = (self.offset as i64 + start) as usize;
        }
        for i in 0..n {
            if i != d1 && i != d2 {
                out.shape.push(self.shape[i]);
                out.strides.push(self.strides[i]);
            }
        }
        out.shape.push(len as usize);
        out.strides.push(self.strides[d1] + self.strides[d2]);
        Ok(out)
    }

    /// as_strided, bounds-checked against the storage size (in elements), with torch's checks in
    /// torch's order. `itemsize` and `storage_bytes` only word the out-of-bounds message.
    pub fn as_strided(size: &[i64], stride: &[i64], offset: i64, storage_len: usize, itemsize: usize) -> Result<Layout> {
        let list = |v: &[i64]| format!("[{}]", v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "));
        if size.len() != stride.len() {
            return Err(Error::Runtime("mismatch in length of strides and shape".into()));
        }
        if stride.iter().any(|&s| s < 0) {
            return Err(Error::Runtime(format!("as_strided: Negative strides are not supported at the moment, got strides: {}", list(stride))));
        }
        if offset < 0 {
            return Err(Error::Runtime(format!("Tensor: invalid storage offset {}", offset)));
        }
        if size.iter().any(|&s| s < 0) {
            return Err(Error::Runtime(format!(
                "Storage size calculation overflowed with sizes={} and strides={}",
                list(size),
                list(stride)
            )));
        }
        // torch's order: the storage size (overflow, then bounds), then the view's numel.
        let needed = storage_nbytes_strided(size, stride, offset, itemsize)?;
        if needed > storage_len.saturating_mul(itemsize) {
            return Err(Error::Runtime(format!(
                "setStorage: sizes {}, strides {}, storage offset {}, and itemsize {} requiring a storage size of {} are out of bounds for storage of size {}",
                list(size),
                list(stride),
                offset,
                itemsize,
                needed,
                storage_len * itemsize
            )));
        }
        let layout = Layout {
            shape: size.iter().map(|&s| s as usize).collect(),
            strides: stride.iter().map(|&s| s as isize).collect(),
            offset: offset as usize,
        };
        checked_numel(&layout.shape)?;
        Ok(layout)
    }
}

/// True unless (shape, strides) provably gives every index its own element: after dropping
/// size-1 dims and sorting by |stride|, each stride must step over everything the inner dims
/// cover. Sufficient, not necessary: interleaved layouts such as sizes (2, 2) with strides
/// (9, 12) are distinct yet reported here, which only costs them parallelism.
pub fn may_self_overlap(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return false;
    }
    let mut dims: Vec<(usize, usize)> =
        shape.iter().zip(strides).filter(|(&s, _)| s > 1).map(|(&s, &st)| (s, st.unsigned_abs())).collect();
    dims.sort_by_key(|&(_, st)| st);
    let mut covered: usize = 1;
    for (s, st) in dims {
        if st < covered {
            return true;
        }
        covered = st * s;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity() {
        let l = Layout::contiguous(&[2, 3]);
        assert!(l.is_contiguous());
        assert!(!l.transpose(0, 1).unwrap().is_contiguous());
        assert!(Layout::contiguous(&[1, 3]).transpose(0, 1).unwrap().is_contiguous());
    }

    #[test]
    fn view_of_transposed_fails_like_torch() {
        let t = Layout::contiguous(&[2, 3]).transpose(0, 1).unwrap();
        assert!(t.view(&[6]).is_err());
        assert_eq!(t.view(&[3, 2]).unwrap().strides.to_vec(), vec![1, 3]);
        let l = Layout::contiguous(&[4, 6]);
        assert_eq!(l.view(&[2, 2, 6]).unwrap().strides.to_vec(), vec![12, 6, 1]);
        let sliced = l.slice(1, 0, 6, 2).unwrap(); // [4,3] strides [6,2]
        assert_eq!(sliced.view(&[2, 2, 3]).unwrap().strides.to_vec(), vec![12, 6, 2]);
        // [4,3] with strides [6,2] is one run of stride 2: viewable as [12] (torch agrees).
        assert_eq!(sliced.view(&[12]).unwrap().strides.to_vec(), vec![2]);
        let holes = Layout::contiguous(&[4, 6]).slice(1, 0, 3, 1).unwrap(); // [4,3] strides [6,1]
        assert!(holes.view(&[12]).is_err());
    }

    #[test]
    fn expand_and_overlap() {
        let l = Layout::contiguous(&[3, 1]);
        let e = l.expand(&[2, 3, 4]).unwrap();
        assert_eq!(e.shape.to_vec(), vec![2, 3, 4]);
        assert_eq!(e.strides.to_vec(), vec![0, 1, 0]);
        assert!(e.has_internal_overlap());
        assert!(!l.has_internal_overlap());
        // overlapping as_strided: "too hard" for torch's check, but kernels must know
        let o = Layout { shape: smallvec::smallvec![2, 2], strides: smallvec::smallvec![1, 1], offset: 0 };
        assert!(!o.has_internal_overlap() && o.may_self_overlap());
        assert!(!Layout::contiguous(&[3, 4]).transpose(0, 1).unwrap().may_self_overlap());
        assert!(l.expand(&[3, 2, 2]).is_err());
    }

    #[test]
    fn diagonal_and_select() {
        let l = Layout::contiguous(&[3, 4]);
        let d = l.diagonal(1, 0, 1).unwrap();
        assert_eq!((d.shape.to_vec(), d.strides.to_vec(), d.offset), (vec![3], vec![5], 1));
        let s = l.select(1, -1).unwrap();
        assert_eq!((s.shape.to_vec(), s.strides.to_vec(), s.offset), (vec![3], vec![4], 3));
        assert!(l.select(0, 3).is_err());
    }

    #[test]
    fn slicing_with_steps() {
        let l = Layout::contiguous(&[10]);
        let s = l.slice(0, 1, 100, 3).unwrap();
        assert_eq!((s.shape.to_vec(), s.strides.to_vec(), s.offset), (vec![3], vec![3], 1));
        let e = l.slice(0, 8, 2, 1).unwrap();
        assert_eq!(e.shape.to_vec(), vec![0]);
    }
}
