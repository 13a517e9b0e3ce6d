//! Sorting and selection along one dim: sort, topk, kthvalue, median.
//!
//! As for the scans, the op layer hands over rows: a row-major `[rows, n]` buffer whose last dim
//! is the one sorted or selected along, and row-major outputs. NaN counts as greater than every
//! number (numpy's order), for sorting and selecting alike.
//!
//! Which index a tie returns is part of torch's answer, and torch leaves it to the algorithm:
//! - `sort(stable=True)`, and `median(dim)` (whose comparator breaks ties by index), have one
//!   answer: the stable order.
//! - `sort(stable=False)` and `topk` run GNU libstdc++'s introsort / introselect / heap routines
//!   on (value, index) pairs; `libstdcxx` reproduces them step for step.
//! - `kthvalue` runs ATen's own quickselect (Sedgewick's partition with a median of three),
//!   reproduced in `quickselect` below.
//!
//! Rows are independent; many rows are split over rayon, which never changes a row's result.

mod libstdcxx;

use super::parallel::PAR_MIN_ELEMS;
use crate::element::Element;
use rayon::prelude::*;
use std::cmp::Ordering;

#[inline]
fn is_nan<T: Element>(x: T) -> bool {
    #[allow(clippy::eq_op)]
    {
        x != x
    }
}

/// torch's ascending order with NaN last: `a` comes before `b`.
#[inline]
fn before_asc<T: Element>(a: T, b: T) -> bool {
    (!is_nan(a) && is_nan(b)) || a < b
}

/// torch's descending order with NaN first.
#[inline]
fn before_desc<T: Element>(a: T, b: T) -> bool {
    (is_nan(a) && !is_nan(b)) || a > b
}

/// How `sort` orders equal values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortMethod {
    /// Equal values keep their order (`stable=True`).
    Stable,
    /// libstdc++'s `std::sort` (torch's `stable=False`).
    Introsort,
}

/// Runs `f(input row, its outputs)` for every row, in parallel when there is much to do.
fn for_rows<T: Element, O: Send>(xs: &[T], n: usize, outs: Vec<O>, f: impl Fn(&[T], O) + Sync + Send) {
    if xs.len() >= PAR_MIN_ELEMS && outs.len() > 1 {
        xs.par_chunks(n.max(1)).zip(outs.into_par_iter()).for_each(|(x, o)| f(x, o));
    } else {
        xs.chunks(n.max(1)).zip(outs).for_each(|(x, o)| f(x, o));
    }
}

/// Sorts every row of `xs` into `values`, with each value's position in its row in `indices`.
pub fn sort_rows<T: Element>(xs: &[T], n: usize, descending: bool, method: SortMethod, values: &mut [T], indices: &mut [i64]) {
    assert!(xs.len() == values.len() && xs.len() == indices.len(), "sort: buffers differ in length");
    if n == 0 || xs.is_empty() {
        return;
    }
    let outs: Vec<(&mut [T], &mut [i64])> = values.chunks_mut(n).zip(indices.chunks_mut(n)).collect();
    for_rows(xs, n, outs, |x, (v, ix)| {
        let mut pairs: Vec<(T, i64)> = x.iter().enumerate().map(|(i, &a)| (a, i as i64)).collect();
        let before = move |a: &(T, i64), b: &(T, i64)| if descending { before_desc(a.0, b.0) } else { before_asc(a.0, b.0) };
        match method {
            SortMethod::Stable => pairs.sort_by(|a, b| order(&before, a, b)),
            SortMethod::Introsort => libstdcxx::sort(&mut pairs, &before),
        }
        for ((vo, io), (a, i)) in v.iter_mut().zip(ix.iter_mut()).zip(pairs) {
            *vo = a;
            *io = i;
        }
    });
}

fn order<P>(before: &impl Fn(&P, &P) -> bool, a: &P, b: &P) -> Ordering {
    if before(a, b) {
        Ordering::Less
    } else if before(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// The `k` largest (or smallest) of every row, as torch's CPU topk finds them: `partial_sort`
/// when `k * 64 <= n`, else `nth_element` then a sort of the first `k - 1`. `values` and
/// `indices` hold `rows * k` elements. With `sorted` false the order is the algorithm's.
pub fn topk_rows<T: Element>(xs: &[T], n: usize, k: usize, largest: bool, sorted: bool, values: &mut [T], indices: &mut [i64]) {
    assert!(k <= n && values.len() == indices.len(), "topk: bad sizes");
    if k == 0 || n == 0 || xs.is_empty() {
        return;
    }
    assert_eq!(xs.len() / n * k, values.len(), "topk: output length");
    let outs: Vec<(&mut [T], &mut [i64])> = values.chunks_mut(k).zip(indices.chunks_mut(k)).collect();
    for_rows(xs, n, outs, |x, (v, ix)| {
        let before = move |a: &(T, i64), b: &(T, i64)| if largest { before_desc(a.0, b.0) } else { before_asc(a.0, b.0) };
        let mut queue: Vec<(T, i64)> = x.iter().enumerate().map(|(j, &a)| (a, j as i64)).collect();
        if k * 64 <= n {
            // torch 2.13 calls std::partial_sort here, which sorts whatever `sorted` says
            libstdcxx::partial_sort(&mut queue, k, &before);
        } else {
            libstdcxx::nth_element(&mut queue, k - 1, &before);
            if sorted {
                libstdcxx::sort(&mut queue[..k - 1], &before);
            }
        }
        queue.truncate(k);
        for ((vo, io), (a, i)) in v.iter_mut().zip(ix.iter_mut()).zip(queue) {
            *vo = a;
            *io = i;
        }
    });
}

/// ATen's `quick_select_template` with its comparator "greater, or NaN": after it, position
/// `k` (0-based) holds the element of rank `k`, and the swaps decide which of equal elements
/// that is. `vals` and `idx` are permuted together.
fn quickselect<T: Element>(vals: &mut [T], idx: &mut [i64], k: usize) {
    let gt = |a: T, b: T| (is_nan(a) && !is_nan(b)) || a > b;
    let swap = |vals: &mut [T], idx: &mut [i64], i: usize, j: usize| {
        vals.swap(i, j);
        idx.swap(i, j);
    };
    let (mut l, mut r) = (0usize, vals.len() - 1);
    loop {
        if r <= l {
            return;
        }
        if r == l + 1 {
            if gt(vals[l], vals[r]) {
                swap(vals, idx, l, r);
            }
            return;
        }
        // median of three: vals[l] <= vals[l + 1]... the pivot ends up at l
        let p = (l + r) >> 1;
        swap(vals, idx, p, l + 1);
        if gt(vals[l + 1], vals[r]) {
            swap(vals, idx, l + 1, r);
        }
        if gt(vals[l], vals[r]) {
            swap(vals, idx, l, r);
        }
        if gt(vals[l + 1], vals[l]) {
            swap(vals, idx, l + 1, l);
        }
        let (mut i, mut j) = (l + 1, r);
        let piv = vals[l];
        loop {
            i += 1;
            while gt(piv, vals[i]) {
                i += 1;
            }
            j -= 1;
            while gt(vals[j], piv) {
                j -= 1;
            }
            if j < i {
                break;
            }
            swap(vals, idx, i, j);
        }
        swap(vals, idx, l, j);
        if j <= k {
            l = i;
        }
        if j >= k {
            // j > l always (vals[l + 1] <= pivot stops the scan), so this never wraps
            r = j.saturating_sub(1);
        }
    }
}

/// The `k`-th smallest (1-based) of every row and its index, as torch's kthvalue picks it.
pub fn kthvalue_rows<T: Element>(xs: &[T], n: usize, k: usize, values: &mut [T], indices: &mut [i64]) {
    assert!(k >= 1 && k <= n, "kthvalue: k out of range");
    assert!(values.len() == indices.len() && xs.len() == values.len() * n, "kthvalue: output length");
    let outs: Vec<(&mut T, &mut i64)> = values.iter_mut().zip(indices.iter_mut()).collect();
    for_rows(xs, n, outs, |x, (v, ix)| {
        let mut vals = x.to_vec();
        let mut idx: Vec<i64> = (0..n as i64).collect();
        quickselect(&mut vals, &mut idx, k - 1);
        *v = vals[k - 1];
        *ix = idx[k - 1];
    });
}

/// The lower median of every row and its index: the first NaN when the row has one, else the
/// element of rank `(n - 1) / 2` when ties are ordered by index (torch's comparator).
pub fn median_rows<T: Element>(xs: &[T], n: usize, values: &mut [T], indices: &mut [i64]) {
    assert!(n >= 1 && values.len() == indices.len() && xs.len() == values.len() * n, "median: bad sizes");
    let outs: Vec<(&mut T, &mut i64)> = values.iter_mut().zip(indices.iter_mut()).collect();
    for_rows(xs, n, outs, |x, (v, ix)| {
        let at = match x.iter().position(|&a| is_nan(a)) {
            Some(first_nan) => first_nan,
            None => {
                let mut order: Vec<usize> = (0..n).collect();
                order.select_nth_unstable_by(
                    (n - 1) / 2,
                    |&i, &j| x[i].partial_cmp(&x[j]).unwrap_or(Ordering::Equal).then(i.cmp(&j)),
                );
                order[(n - 1) / 2]
            }
        };
        *v = x[at];
        *ix = at as i64;
    });
}

/// The lower median of all of `xs` (NaN if any element is NaN): `median()` without a dim.
pub fn median_all<T: Element>(xs: &[T]) -> Option<T> {
    if xs.is_empty() {
        return None;
    }
    let (mut v, mut i) = (vec![xs[0]], vec![0i64]);
    median_all_rows(xs, xs.len(), &mut v, &mut i);
    Some(v[0])
}

/// `median()`'s pick in every row, as torch's `median_impl` makes it: the first NaN of a row
/// that has one, else the element `std::nth_element` (value order only) leaves at `(n - 1) / 2`,
/// which decides whether -0.0 or 0.0 is returned. `indices` get that element's position.
pub fn median_all_rows<T: Element>(xs: &[T], n: usize, values: &mut [T], indices: &mut [i64]) {
    assert!(n >= 1 && values.len() == indices.len() && xs.len() == values.len() * n, "median: bad sizes");
    let outs: Vec<(&mut T, &mut i64)> = values.iter_mut().zip(indices.iter_mut()).collect();
    for_rows(xs, n, outs, |x, (v, ix)| {
        if let Some(first_nan) = x.iter().position(|&a| is_nan(a)) {
            (*v, *ix) = (x[first_nan], first_nan as i64);
            return;
        }
        let mut pairs: Vec<(T, i64)> = x.iter().enumerate().map(|(j, &a)| (a, j as i64)).collect();
        libstdcxx::nth_element(&mut pairs, (n - 1) / 2, &|a: &(T, i64), b: &(T, i64)| a.0 < b.0);
        (*v, *ix) = pairs[(n - 1) / 2];
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_puts_nan_last_ascending_and_first_descending() {
        let nan = f32::NAN;
        let xs = [3.0, nan, 1.0, nan, f32::NEG_INFINITY, 1.0];
        let (mut v, mut i) = ([0f32; 6], [0i64; 6]);
        sort_rows(&xs, 6, false, SortMethod::Stable, &mut v, &mut i);
        assert_eq!(i, [4, 2, 5, 0, 1, 3]);
        sort_rows(&xs, 6, true, SortMethod::Introsort, &mut v, &mut i);
        assert_eq!(i, [1, 3, 0, 2, 5, 4]);
        assert!(v[0].is_nan() && v[1].is_nan() && v[5] == f32::NEG_INFINITY);
    }

    #[test]
    fn topk_matches_torch_on_ties() {
        // torch 2.13: tensor([1., 3, 3, 2, 3, 1, 1]).topk(2) -> indices [2, 4];
        // topk(4, largest=False) -> [5, 0, 6, 3]; topk(3, sorted=False) -> [2, 4, 1]
        let xs = [1.0f32, 3.0, 3.0, 2.0, 3.0, 1.0, 1.0];
        let (mut v, mut i) = ([0f32; 2], [0i64; 2]);
        topk_rows(&xs, 7, 2, true, true, &mut v, &mut i);
        assert_eq!(i, [2, 4]);
        let (mut v, mut i) = ([0f32; 4], [0i64; 4]);
        topk_rows(&xs, 7, 4, false, true, &mut v, &mut i);
        assert_eq!(i, [5, 0, 6, 3]);
        let (mut v, mut i) = ([0f32; 3], [0i64; 3]);
        topk_rows(&xs, 7, 3, true, false, &mut v, &mut i);
        assert_eq!(i, [2, 4, 1]);
        // the heap path (k * 64 <= n): tensor([5., 1] * 100).topk(3) -> [4, 0, 2]
        let xs: Vec<f32> = (0..200).map(|j| if j % 2 == 0 { 5.0 } else { 1.0 }).collect();
        let (mut v, mut i) = ([0f32; 3], [0i64; 3]);
        topk_rows(&xs, 200, 3, true, true, &mut v, &mut i);
        assert_eq!((v, i), ([5.0; 3], [4, 0, 2]));
        topk_rows(&xs, 200, 3, false, true, &mut v, &mut i);
        assert_eq!(i, [5, 1, 3]);
    }

    #[test]
    fn kthvalue_and_median_match_torch_on_ties() {
        // torch 2.13: tensor([1., 3, 3, 2, 3, 1, 1]).kthvalue(2) -> index 6, kthvalue(3) -> 0,
        // kthvalue(5) -> 1; median(0) -> (2., 3)
        let xs = [1.0f64, 3.0, 3.0, 2.0, 3.0, 1.0, 1.0];
        for (k, want) in [(2, 6), (3, 0), (5, 1)] {
            let (mut v, mut i) = ([0f64], [0i64]);
            kthvalue_rows(&xs, 7, k, &mut v, &mut i);
            assert_eq!(i[0], want, "k = {}", k);
        }
        let (mut v, mut i) = ([0f64], [0i64]);
        median_rows(&xs, 7, &mut v, &mut i);
        assert_eq!((v[0], i[0]), (2.0, 3));
        median_rows(&[2.0, 2.0, 2.0, 2.0], 4, &mut v, &mut i);
        assert_eq!(i[0], 1);
        median_rows(&[1.0, f64::NAN, 2.0, f64::NAN], 4, &mut v, &mut i);
        assert!(v[0].is_nan() && i[0] == 1);
        assert_eq!(median_all(&[4i64, 1, 3, 2]), Some(2));
        assert_eq!(median_all::<f32>(&[]), None);
        // torch 2.13: tensor([0., -0., 0., -0., 0.]).median() is -0. and
        // tensor([-0., 0., -0., 0.]).median() is 0. (nth_element's pick among equal values)
        assert!(median_all(&[0.0f64, -0.0, 0.0, -0.0, 0.0]).unwrap().is_sign_negative());
        assert!(median_all(&[-0.0f64, 0.0, -0.0, 0.0]).unwrap().is_sign_positive());
    }
}
