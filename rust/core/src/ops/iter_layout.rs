//! How torch's TensorIterator lays out a new output and orders its loop, for ops whose result
//! layout users can observe (advanced indexing): `fast_set_up` for operands that share one
//! shape and layout, else `reorder_dimensions` and dense strides in that order.

use crate::layout::Layout;
use crate::shape::contiguous_strides;

/// An operand as TensorIterator receives it: its own shape and strides (elements), trailing-
/// aligned with the iteration shape.
#[derive(Debug, Clone)]
pub struct Operand {
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
}

/// The loop order (`perm[0]` innermost) and the strides a new output gets.
#[derive(Debug, Clone)]
pub struct IterLayout {
    pub perm: Vec<usize>,
    pub strides: Vec<isize>,
}

/// `operands` are the iterator's defined operands in its order (a given output first).
pub fn iter_layout(shape: &[usize], operands: &[Operand]) -> IterLayout {
    let n = shape.len();
    if operands.iter().all(|o| o.shape == shape) {
        let layouts: Vec<Layout> =
            operands.iter().map(|o| Layout { shape: o.shape[..].into(), strides: o.strides[..].into(), offset: 0 }).collect();
        if layouts.iter().all(Layout::is_contiguous) {
            return IterLayout { perm: (0..n).rev().collect(), strides: contiguous_strides(shape).to_vec() };
        }
        if layouts.iter().all(is_non_overlapping_and_dense) && operands.windows(2).all(|w| w[0].strides == w[1].strides) {
            let strides = operands.last().map_or_else(|| contiguous_strides(shape), |o| o.strides[..].into());
            let mut perm: Vec<usize> = (0..n).rev().collect();
            perm.sort_by_key(|&d| strides[d]);
            return IterLayout { perm, strides: strides.to_vec() };
        }
    }
    let broadcast: Vec<Vec<isize>> = operands.iter().map(|o| broadcast(shape, o)).collect();
    let perm = stride_order(shape, &broadcast);
    let strides = dense_in_order(shape, &perm);
    IterLayout { perm, strides }
}

/// An operand's strides over the iteration shape: 0 where it is broadcast.
fn broadcast(shape: &[usize], o: &Operand) -> Vec<isize> {
    let lead = shape.len() - o.shape.len().min(shape.len());
    let mut out = vec![0isize; shape.len()];
    for (i, (&s, &st)) in o.shape.iter().zip(&o.strides).enumerate() {
        let d = lead + i;
        out[d] = if s == 1 && shape[d] != 1 { 0 } else { st };
    }
    out
}

/// Dense strides with `perm[0]` innermost; the plain reversed order gives row-major strides.
fn dense_in_order(shape: &[usize], perm: &[usize]) -> Vec<isize> {
    let n = shape.len();
    if perm.iter().enumerate().all(|(i, &d)| d == n - 1 - i) {
        return contiguous_strides(shape).to_vec();
    }
    let mut strides = vec![0isize; n];
    let mut next: isize = 1;
    for &d in perm {
        strides[d] = next;
        next *= shape[d] as isize;
    }
    strides
}

/// torch's `is_non_overlapping_and_dense`: the elements fill a block of memory exactly, in some
/// order of the dims (size-0 and size-1 dims may have any stride). Contiguous layouts, empty ones
/// included, always qualify.
pub fn is_non_overlapping_and_dense(l: &Layout) -> bool {
    if l.is_contiguous() {
        return true;
    }
    let n = l.ndim();
    if n == 1 {
        return l.shape[0] < 2 || l.strides[0] == 1;
    }
    let mut perm: Vec<usize> = (0..n).collect();
    // Dims of size < 2 last, the rest by increasing stride.
    perm.sort_by_key(|&d| (l.shape[d] < 2, l.strides[d]));
    let mut require: isize = 1;
    for &d in &perm {
        if l.shape[d] < 2 {
            return true;
        }
        if l.strides[d] != require {
            return false;
        }
        require *= l.shape[d] as isize;
    }
    true
}

/// torch's `is_contiguous(memory_format=torch.channels_last)` for a 4-d layout (dims in the order
/// C, W, H, N from the innermost out; size-1 dims may have any stride).
pub(crate) fn is_channels_last_contiguous(l: &Layout) -> bool {
    if l.ndim() != 4 {
        return false;
    }
    let mut expected: isize = 1;
    for d in [1, 3, 2, 0] {
        if l.shape[d] != 1 {
            if l.strides[d] != expected {
                return false;
            }
            expected *= l.shape[d] as isize;
        }
    }
    true
}

/// The order in which torch lays out the dims of a new tensor computed from operands with the given
/// strides (TensorIterator's `reorder_dimensions`, also `infer_dense_strides`): innermost dim first.
/// Each operand's strides are over `shape`, 0 where it is broadcast. An operand decides a pair of
/// dims only when both strides are nonzero and differ (or are equal and the first dim is larger);
/// otherwise the next operand is asked, and undecided pairs keep their logical order.
fn stride_order<S: AsRef<[isize]>>(shape: &[usize], operands: &[S]) -> Vec<usize> {
    let n = shape.len();
    let mut perm: Vec<usize> = (0..n).rev().collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        for s in operands {
            let s = s.as_ref();
            let (s0, s1) = (s[d0], s[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    // Insertion sort that tolerates undecided comparisons, exactly as torch's.
    for i in 1..n {
        let mut dim1 = i;
        for dim0 in (0..i).rev() {
            match should_swap(perm[dim0], perm[dim1]) {
                c if c > 0 => {
                    perm.swap(dim0, dim1);
                    dim1 = dim0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm
}

/// torch's `preserve_format` layout for a new tensor (`clone()`, `to(dtype)`, `*_like`): the
/// layout's own strides when it is non-overlapping and dense, else dense strides in its dim order.
pub fn preserve_format(l: &Layout) -> Layout {
    if is_non_overlapping_and_dense(l) {
        return Layout { shape: l.shape.clone(), strides: l.strides.clone(), offset: 0 };
    }
    let n = l.ndim();
    let mut strides = vec![1isize; n];
    if n > 1 {
        let mut acc: isize = 1;
        for d in stride_order(&l.shape, std::slice::from_ref(&l.strides)) {
            strides[d] = acc;
            if l.shape[d] > 1 {
                acc *= l.shape[d] as isize;
            }
        }
    }
    Layout { shape: l.shape.clone(), strides: strides.into(), offset: 0 }
}

/// The layout torch's TensorIterator gives the result of an elementwise op whose (already cast)
/// inputs have layouts `inputs` and broadcast to `shape`. A Python number is a 0-d layout.
/// Same-shape inputs that are all contiguous, all channels-last, or all dense with one set of
/// strides give that layout; otherwise the dims are ordered as the inputs' strides suggest.
pub fn iterator_layout(shape: &[usize], inputs: &[&Layout]) -> Layout {
    if inputs.iter().all(|l| l.shape.as_slice() == shape) {
        if inputs.iter().all(|l| l.is_contiguous()) {
            return Layout::contiguous(shape);
        }
        if inputs.iter().all(|l| is_channels_last_contiguous(l)) {
            let (c, h, w) = (shape[1] as isize, shape[2] as isize, shape[3] as isize);
            return Layout { shape: shape.into(), strides: smallvec::smallvec![c * h * w, 1, c * w, c], offset: 0 };
        }
        if let Some(last) = inputs.last() {
            if inputs.iter().all(|l| is_non_overlapping_and_dense(l) && l.strides == last.strides) {
                return Layout { shape: shape.into(), strides: last.strides.clone(), offset: 0 };
            }
        }
    }
    let n = shape.len();
    if n <= 1 {
        return Layout::contiguous(shape);
    }
    let operands: Vec<Vec<isize>> = inputs
        .iter()
        .map(|l| {
            let k = l.ndim();
            (0..n)
                .map(|d| match (d + k).checked_sub(n) {
                    Some(j) if !(l.shape[j] == 1 && shape[d] != 1) => l.strides[j],
                    _ => 0,
                })
                .collect()
        })
        .collect();
    let perm = stride_order(shape, &operands);
    if perm.iter().copied().eq((0..n).rev()) {
        return Layout::contiguous(shape);
    }
    let mut strides = vec![0isize; n];
    let mut acc: isize = 1;
    for d in perm {
        strides[d] = acc;
        acc *= shape[d] as isize;
    }
    Layout { shape: shape.into(), strides: strides.into(), offset: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(shape: &[usize], strides: &[isize]) -> Operand {
        Operand { shape: shape.to_vec(), strides: strides.to_vec() }
    }

    #[test]
    fn transposed_source_keeps_its_order() {
        // torch: x.transpose(0, 2)[[0, 1]] for x of (2, 3, 4) has strides (6, 1, 3).
        let l = iter_layout(&[2, 3, 2], &[op(&[2, 3, 2], &[0, 4, 12]), op(&[2, 1, 1], &[1, 1, 1])]);
        assert_eq!(l.strides.to_vec(), vec![6, 1, 3]);
    }

    #[test]
    fn empty_operands_of_one_shape_are_contiguous() {
        let l = iter_layout(&[0, 1], &[op(&[0, 1], &[0, 1]), op(&[0, 1], &[1, 1])]);
        assert_eq!(l.strides.to_vec(), vec![1, 1]);
    }

    #[test]
    fn preserve_format_like_torch() {
        // torch: zeros(1, 2).t() keeps strides (1, 2); zeros(4, 6).t()[::2] clones to (1, 3).
        let l = Layout { shape: smallvec::smallvec![2, 1], strides: smallvec::smallvec![1, 2], offset: 0 };
        assert_eq!(preserve_format(&l).strides.to_vec(), vec![1, 2]);
        let l = Layout { shape: smallvec::smallvec![3, 4], strides: smallvec::smallvec![2, 6], offset: 0 };
        assert_eq!(preserve_format(&l).strides.to_vec(), vec![1, 3]);
        let l = Layout { shape: smallvec::smallvec![3, 4], strides: smallvec::smallvec![0, 1], offset: 0 };
        assert_eq!(preserve_format(&l).strides.to_vec(), vec![4, 1]);
    }

    #[test]
    fn dense_test() {
        assert!(is_non_overlapping_and_dense(&Layout { shape: smallvec::smallvec![3, 4], strides: smallvec::smallvec![1, 3], offset: 0 }));
        assert!(!is_non_overlapping_and_dense(&Layout { shape: smallvec::smallvec![3, 4], strides: smallvec::smallvec![8, 1], offset: 0 }));
        assert!(is_non_overlapping_and_dense(&Layout { shape: smallvec::smallvec![0, 4], strides: smallvec::smallvec![9, 9], offset: 0 }));
    }
}
