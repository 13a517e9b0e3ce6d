//! Shape arithmetic: dim wrapping, broadcasting, contiguous strides.

use crate::error::{fmt_shape, Error, Result};

/// Element count of a shape that is already known to be valid (every live layout is: the checked
/// helpers below guard every place a new shape enters). Wrapping arithmetic, so never a panic.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |acc, &d| acc.wrapping_mul(d))
}

/// The largest element or byte count torch accepts: `int64_t`'s maximum.
pub const MAX_SIZE: u64 = i64::MAX as u64;

/// torch's `safe_multiplies_u64`: the product of `sizes` left to right, and whether any step
/// overflowed 64 bits. As in torch, a zero late in the list does not excuse an earlier overflow.
fn multiply_sizes(sizes: impl IntoIterator<Item = u64>) -> (u64, bool) {
    let mut prod: u64 = 1;
    let mut overflowed = false;
    for d in sizes {
        let (p, o) = prod.overflowing_mul(d);
        prod = p;
        overflowed |= o;
    }
    (prod, overflowed)
}

/// Element count of a shape entering the core (a view's new sizes), raising torch's
/// `TensorImpl::safe_compute_numel` error when it does not fit in an `int64_t`.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    let (n, overflowed) = multiply_sizes(shape.iter().map(|&d| d as u64));
    if overflowed || n > MAX_SIZE {
        return Err(Error::Runtime("numel: integer multiplication overflow".into()));
    }
    Ok(n as usize)
}

/// Bytes a contiguous tensor of `shape` needs (torch's `computeStorageNbytesContiguous`), with
/// torch's error when the count overflows. Every allocation of tensor memory goes through it.
pub fn storage_nbytes_contiguous(shape: &[usize], itemsize: usize) -> Result<usize> {
    let (n, mut overflowed) = multiply_sizes(shape.iter().map(|&d| d as u64));
    let (bytes, o) = n.overflowing_mul(itemsize as u64);
    overflowed |= o || bytes > MAX_SIZE;
    if overflowed {
        return Err(Error::Runtime(format!("Storage size calculation overflowed with sizes={}", fmt_shape(shape))));
    }
    Ok(bytes as usize)
}

/// Bytes a strided layout reaches from the storage's start (torch's `computeStorageNbytes`):
/// `(offset + 1 + sum((size - 1) * stride)) * itemsize`, 0 when any size is 0. Sizes and strides
/// are torch's signed arguments; the caller has rejected negative ones.
pub fn storage_nbytes_strided(sizes: &[i64], strides: &[i64], offset: i64, itemsize: usize) -> Result<usize> {
    let err = || {
        let list = |v: &[i64]| format!("[{}]", v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "));
        Error::Runtime(format!("Storage size calculation overflowed with sizes={} and strides={}", list(sizes), list(strides)))
    };
    if sizes.contains(&0) {
        return Ok(0);
    }
    let mut overflowed = false;
    let (mut size, o) = (offset as u64).overflowing_add(1);
    overflowed |= o;
    for (&d, &st) in sizes.iter().zip(strides) {
        let (span, o1) = (st as u64).overflowing_mul(d as u64 - 1);
        let (s, o2) = size.overflowing_add(span);
        size = s;
        overflowed |= o1 || o2;
    }
    let (bytes, o) = size.overflowing_mul(itemsize as u64);
    if overflowed || o || bytes > MAX_SIZE {
        return Err(err());
    }
    Ok(bytes as usize)
}

/// A shape, inline up to 5 dims: cloning a tensor handle or its layout allocates nothing (a
/// heap `Vec` each for shape and strides made every op's handles cost two allocations).
pub type Dims = smallvec::SmallVec<[usize; 5]>;
/// Strides in elements, inline like `Dims`.
pub type Strides = smallvec::SmallVec<[isize; 5]>;

/// Row-major strides (in elements) for a shape; size-1 dims get the stride torch gives them.
/// For shapes already in the core (see `checked_contiguous_strides` for new ones).
pub fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = smallvec::smallvec![0isize; shape.len()];
    let mut acc: isize = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc = acc.wrapping_mul(shape[i].max(1) as isize);
    }
    strides
}

/// Row-major strides for a new shape, with torch's error when they overflow (an empty tensor
/// such as `zeros(0, 2**40, 2**40)` needs no memory but its strides still must fit).
pub fn checked_contiguous_strides(shape: &[usize]) -> Result<Strides> {
    let mut strides: Strides = smallvec::smallvec![0isize; shape.len()];
    let mut acc: i64 = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc as isize;
        if i > 0 {
            acc = acc
                .checked_mul(shape[i].max(1) as i64)
                .ok_or_else(|| Error::Runtime("Stride calculation overflowed".into()))?;
        }
    }
    Ok(strides)
}

/// torch's `maybe_wrap_dim`: negative dims count from the end; 0-d tensors accept -1 and 0.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::Index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {})",
            -n,
            n - 1,
            dim
        )));
    }
    Ok(if dim < 0 { (dim + n) as usize } else { dim as usize })
}

/// Wraps dims for an op that accepts one extra position (unsqueeze, stack): range is [-(n+1), n].
pub fn wrap_dim_insert(dim: i64, ndim: usize) -> Result<usize> {
    wrap_dim(dim, ndim + 1)
}

/// Wraps a list of dims and rejects repeats with torch's message.
pub fn wrap_dims(dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if out.contains(&w) {
            return Err(Error::Runtime(format!("dim {} appears multiple times in the list of dims", w)));
        }
        out.push(w);
    }
    Ok(out)
}

/// Broadcasts two shapes with NumPy's rules, raising torch's message on mismatch. Dims are
/// compared from the last one, as torch's `infer_size` does (it names the last mismatch).
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in (0..n).rev() {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Runtime(format!(
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {}",
                da, db, i
            )));
        };
    }
    Ok(out)
}

/// Broadcasts many shapes left to right.
pub fn broadcast_all(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::new();
    for s in shapes {
        out = broadcast_shapes(&out, s)?;
    }
    Ok(out)
}

/// Checks that an in-place result keeps `self`'s shape (R44).
pub fn check_inplace_shape(self_shape: &[usize], broadcast: &[usize]) -> Result<()> {
    if self_shape != broadcast {
        return Err(Error::Runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_shape(self_shape),
            fmt_shape(broadcast)
        )));
    }
    Ok(())
}

/// Resolves a shape with at most one -1 against a numel, with torch's messages (`infer_size`).
pub fn infer_size(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let fmt = || {
        let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        format!("[{}]", parts.join(", "))
    };
    let mut infer = None;
    let mut newsize: usize = 1;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return Err(Error::Runtime("only one dimension can be inferred".into()));
            }
            infer = Some(i);
        } else if d >= 0 {
            newsize = newsize.saturating_mul(d as usize);
        } else {
            return Err(Error::Runtime(format!("invalid shape dimension {} at index {} of shape {}", d, i, fmt())));
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    if numel == newsize || (infer.is_some() && newsize > 0 && numel % newsize == 0) {
        if let Some(i) = infer {
            if newsize == 0 {
                return Err(Error::Runtime(format!(
                    "cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                    fmt()
                )));
            }
            out[i] = numel / newsize;
        }
        return Ok(out);
    }
    Err(Error::Runtime(format!("shape '{}' is invalid for input of size {}", fmt(), numel)))
}

/// `infer_size` for a view's new shape, which must also have a representable element count
/// (a zero in the shape does not excuse an overflow before it, as in torch).
pub fn infer_view_size(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let out = infer_size(shape, numel)?;
    checked_numel(&out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(), vec![2, 4, 3]);
        assert_eq!(broadcast_shapes(&[], &[3]).unwrap(), vec![3]);
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 5]).unwrap(), vec![0, 5]);
        let e = broadcast_shapes(&[2, 3], &[4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
    }

    #[test]
    fn wrap() {
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        assert_eq!(
            wrap_dim(3, 3).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
        );
    }

    #[test]
    fn infer() {
        assert_eq!(infer_size(&[-1, 3], 12).unwrap(), vec![4, 3]);
        assert_eq!(infer_size(&[5, -1], 12).unwrap_err().to_string(), "shape '[5, -1]' is invalid for input of size 12");
        assert!(infer_size(&[-1, -1], 4).is_err());
    }

    #[test]
    fn overflow_checks_use_torchs_words() {
        let big = 1usize << 40;
        assert_eq!(checked_numel(&[big, big]).unwrap_err().to_string(), "numel: integer multiplication overflow");
        assert_eq!(checked_numel(&[1 << 31, big, 0]).unwrap_err().to_string(), "numel: integer multiplication overflow");
        assert_eq!(checked_numel(&[0, big, big]).unwrap(), 0);
        assert_eq!(checked_numel(&[1 << 62, 1]).unwrap(), 1 << 62);
        assert_eq!(
            storage_nbytes_contiguous(&[big, big], 4).unwrap_err().to_string(),
            "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]"
        );
        assert!(storage_nbytes_contiguous(&[1 << 62], 4).is_err());
        assert!(storage_nbytes_contiguous(&[1 << 61], 4).is_err(), "2**63 bytes is past int64");
        assert_eq!(storage_nbytes_contiguous(&[1 << 60], 4).unwrap(), 1 << 62);
        assert_eq!(checked_contiguous_strides(&[0, big, big]).unwrap_err().to_string(), "Stride calculation overflowed");
        assert_eq!(checked_contiguous_strides(&[big, big, 0]).unwrap().to_vec(), vec![big as isize, 1, 1]);
        assert_eq!(storage_nbytes_strided(&[3, 2], &[2, 1], 1, 4).unwrap(), (1 + 1 + 4 + 1) * 4);
        assert_eq!(storage_nbytes_strided(&[0, 1 << 62], &[1 << 62, 1 << 62], 0, 4).unwrap(), 0);
        assert_eq!(
            storage_nbytes_strided(&[1 << 62, 2], &[1, 1], 0, 4).unwrap_err().to_string(),
            "Storage size calculation overflowed with sizes=[4611686018427387904, 2] and strides=[1, 1]"
        );
    }

    #[test]
    fn strides() {
        assert_eq!(contiguous_strides(&[2, 3, 4]).to_vec(), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[]).to_vec(), Vec::<isize>::new());
        assert_eq!(contiguous_strides(&[2, 0, 3]).to_vec(), vec![3, 3, 1]);
    }
}
