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
            operands.iter().map(|o| Layout { shape: o.shape.clone(), strides: o.strides.clone(), offset: 0 }).collect();
        if layouts.iter().all(Layout::is_contiguous) {
            return IterLayout { perm: (0..n).rev().collect(), strides: contiguous_strides(shape) };
        }
        if layouts.iter().all(non_overlapping_and_dense) && operands.windows(2).all(|w| w[0].strides == w[1].strides) {
            let strides = operands.last().map_or_else(|| contiguous_strides(shape), |o| o.strides.clone());
            let mut perm: Vec<usize> = (0..n).rev().collect();
            perm.sort_by_key(|&d| strides[d]);
            return IterLayout { perm, strides };
        }
    }
    let broadcast: Vec<Vec<isize>> = operands.iter().map(|o| broadcast(shape, o)).collect();
    let perm = reorder(shape, &broadcast);
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

/// torch's `reorder_dimensions`: an insertion sort on pairwise comparisons of the operands'
/// strides, where broadcast (zero) strides and ties leave the decision to later operands.
fn reorder(shape: &[usize], strides: &[Vec<isize>]) -> Vec<usize> {
    let n = shape.len();
    if n <= 1 {
        return (0..n).collect();
    }
    // > 0 when d0 should move outside d1, < 0 when it should stay, 0 when undecided.
    let should_swap = |d0: usize, d1: usize| -> i32 {
        for s in strides {
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
    let mut perm: Vec<usize> = (0..n).rev().collect();
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            let c = should_swap(perm[d0], perm[d1]);
            if c > 0 {
                perm.swap(d0, d1);
                d1 = d0;
            } else if c < 0 {
                break;
            }
        }
    }
    perm
}

/// Dense strides with `perm[0]` innermost; the plain reversed order gives row-major strides.
fn dense_in_order(shape: &[usize], perm: &[usize]) -> Vec<isize> {
    let n = shape.len();
    if perm.iter().enumerate().all(|(i, &d)| d == n - 1 - i) {
        return contiguous_strides(shape);
    }
    let mut strides = vec![0isize; n];
    let mut next: isize = 1;
    for &d in perm {
        strides[d] = next;
        next *= shape[d] as isize;
    }
    strides
}

/// The layout torch's `empty_like(x, preserve_format)` gives (as in `clone()` and `.to()`): x's
/// own strides when x is dense, else dense strides in x's dim order (`infer_dense_strides`).
pub fn preserve_layout(l: &Layout) -> Layout {
    if non_overlapping_and_dense(l) {
        return Layout { shape: l.shape.clone(), strides: l.strides.clone(), offset: 0 };
    }
    let perm = reorder(&l.shape, std::slice::from_ref(&l.strides));
    let mut strides = vec![0isize; l.ndim()];
    let mut next: isize = 1;
    for d in perm {
        strides[d] = next;
        // Size-0 and size-1 dims do not scale the dims outside them.
        if l.shape[d] > 1 {
            next *= l.shape[d] as isize;
        }
    }
    Layout { shape: l.shape.clone(), strides, offset: 0 }
}

/// torch's `is_non_overlapping_and_dense`: some order of the dims is exactly row-major (an
/// empty tensor counts as contiguous, hence dense).
pub fn non_overlapping_and_dense(l: &Layout) -> bool {
    if l.is_contiguous() {
        return true;
    }
    if l.ndim() == 1 {
        return l.shape[0] < 2 || l.strides[0] == 1;
    }
    let mut dims: Vec<usize> = (0..l.ndim()).filter(|&d| l.shape[d] >= 2).collect();
    dims.sort_by_key(|&d| l.strides[d]);
    let mut want: isize = 1;
    for d in dims {
        if l.strides[d] != want {
            return false;
        }
        want *= l.shape[d] as isize;
    }
    true
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
        assert_eq!(l.strides, vec![6, 1, 3]);
    }

    #[test]
    fn empty_operands_of_one_shape_are_contiguous() {
        let l = iter_layout(&[0, 1], &[op(&[0, 1], &[0, 1]), op(&[0, 1], &[1, 1])]);
        assert_eq!(l.strides, vec![1, 1]);
    }

    #[test]
    fn preserve_format_like_torch() {
        // torch: zeros(1, 2).t() keeps strides (1, 2); zeros(4, 6).t()[::2] clones to (1, 3).
        let l = Layout { shape: vec![2, 1], strides: vec![1, 2], offset: 0 };
        assert_eq!(preserve_layout(&l).strides, vec![1, 2]);
        let l = Layout { shape: vec![3, 4], strides: vec![2, 6], offset: 0 };
        assert_eq!(preserve_layout(&l).strides, vec![1, 3]);
        let l = Layout { shape: vec![3, 4], strides: vec![0, 1], offset: 0 };
        assert_eq!(preserve_layout(&l).strides, vec![4, 1]);
    }

    #[test]
    fn dense_test() {
        assert!(non_overlapping_and_dense(&Layout { shape: vec![3, 4], strides: vec![1, 3], offset: 0 }));
        assert!(!non_overlapping_and_dense(&Layout { shape: vec![3, 4], strides: vec![8, 1], offset: 0 }));
        assert!(non_overlapping_and_dense(&Layout { shape: vec![0, 4], strides: vec![9, 9], offset: 0 }));
    }
}
