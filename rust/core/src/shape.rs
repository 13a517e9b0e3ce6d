//! Shape arithmetic: dim wrapping, broadcasting, contiguous strides.

use crate::error::{fmt_shape, Error, Result};

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major strides (in elements) for a shape; size-1 dims get the stride torch gives them.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc: isize = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1) as isize;
    }
    strides
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
    fn strides() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[]), Vec::<isize>::new());
        assert_eq!(contiguous_strides(&[2, 0, 3]), vec![3, 3, 1]);
    }
}
