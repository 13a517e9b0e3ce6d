//! The engine's tests: geometry, determinism across thread counts, and edge cases.

use super::geometry::{red_runs, Geometry, Kept};
use super::reduce;
use crate::parallel::{SendPtr, GRAIN};
use crate::reducers::{ArgExtreme, SumProd};
use crate::Arg;

#[test]
fn geometry_drops_unit_dims_and_coalesces() {
    // [2, 3, 4] contiguous, reduce dims 1 and 2: one reduced run of 12.
    let g = Geometry::new(&[2, 3, 4], &[12, 4, 1], 0, &[false, true, true]);
    assert_eq!(g.red, vec![(12, 1)]);
    assert_eq!(g.keep, vec![Kept { size: 2, stride: 12, ostride: 1 }]);
    assert_eq!((g.out_numel, g.red_numel), (2, 12));
    // Transposed reduced dims are visited in memory order.
    let g = Geometry::new(&[4, 3], &[1, 4], 0, &[true, true]);
    assert_eq!(g.red, vec![(12, 1)]);
    // Size-1 dims vanish; an empty reduced dim gives red_numel 0.
    let g = Geometry::new(&[1, 0, 5], &[5, 5, 1], 0, &[true, true, false]);
    assert_eq!((g.out_numel, g.red_numel), (5, 0));
}

/// Deterministic pseudo-random values in [-1, 1).
fn data(n: usize) -> Vec<f32> {
    crate::test_data::pseudo_random(n, 0x2545F4914F6CDD1D, -1.0, 2.0)
}

/// Sums `x` (laid out as shape/strides/offset) over `mask` with a pool of `threads`.
fn sum_with(threads: usize, x: &[f32], shape: &[usize], strides: &[isize], offset: usize, mask: &[bool]) -> Vec<f32> {
    let out_numel: usize = shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&s, _)| s).product();
    let mut out = vec![0f32; out_numel];
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let r = SumProd::<f32, f32, false>::new(out.as_mut_ptr(), None);
    // SAFETY: the layouts the tests use stay inside `x`; `out` holds out_numel elements.
    pool.install(|| unsafe { reduce(r, shape, Arg { base: x.as_ptr() as *mut f32, strides, offset }, mask) });
    out
}

/// The same sums in f64, element by element in logical order.
fn naive_sum(x: &[f32], shape: &[usize], strides: &[isize], offset: usize, mask: &[bool]) -> Vec<f64> {
    let out_numel: usize = shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&s, _)| s).product();
    let mut out = vec![0f64; out_numel];
    let n: usize = shape.iter().product();
    for lin in 0..n {
        let (mut rem, mut off, mut o, mut ostride) = (lin, offset as isize, 0usize, 1usize);
        for d in (0..shape.len()).rev() {
            let i = rem % shape[d];
            rem /= shape[d];
            off += i as isize * strides[d];
            if !mask[d] {
                o += i * ostride;
                ostride *= shape[d];
            }
        }
        out[o] += x[off as usize] as f64;
    }
    out
}

#[test]
fn bit_identical_across_thread_counts_and_close_to_exact() {
    let x = data(600 * 700 + 1);
    // contiguous, transposed, and stepped-with-offset layouts of a 600x700 block
    let layouts: [(&[usize], &[isize], usize); 3] =
        [(&[600, 700], &[700, 1], 0), (&[700, 600], &[1, 700], 0), (&[300, 233], &[1400, 3], 1)];
    for (shape, strides, offset) in layouts {
        for mask in [[true, true], [true, false], [false, true], [false, false]] {
            let one = sum_with(1, &x, shape, strides, offset, &mask);
            for threads in [2, 3, 8] {
                let many = sum_with(threads, &x, shape, strides, offset, &mask);
                assert!(one.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits()), "{:?} {:?}", shape, mask);
            }
            // float32 sums add in float32 lanes (as torch does): the error scales with the
            // magnitudes added, a small fraction of one float32 ulp of their sum.
            let exact = naive_sum(&x, shape, strides, offset, &mask);
            let abs: Vec<f32> = x.iter().map(|v| v.abs()).collect();
            let mag = naive_sum(&abs, shape, strides, offset, &mask);
            for ((a, e), m) in one.iter().zip(&exact).zip(&mag) {
                let tol = f32::EPSILON as f64 / 4.0 * m + 1e-7 * e.abs();
                assert!((*a as f64 - e).abs() <= tol, "{} vs {} (magnitudes {})", a, e, m);
            }
        }
    }
}

#[test]
fn arg_reductions_find_the_first_extreme_across_chunks() {
    // Ties straddling GRAIN-sized chunks: the first index must win however work is split.
    let n = 3 * GRAIN + 5;
    let mut x = vec![0f32; n];
    x[GRAIN + 1] = 2.0;
    x[2 * GRAIN + 7] = 2.0;
    x[n - 1] = 2.0;
    for threads in [1, 4] {
        let mut idx = [0i64];
        let r = ArgExtreme::<f32, true> { values: None, indices: SendPtr(idx.as_mut_ptr()) };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let xs = &x;
        // SAFETY: one contiguous run of n elements; one output.
        pool.install(|| unsafe { reduce(r, &[n], Arg { base: xs.as_ptr() as *mut f32, strides: &[1], offset: 0 }, &[true]) });
        assert_eq!(idx[0], (GRAIN + 1) as i64);
    }
    // A NaN anywhere wins, and the first NaN's index is reported.
    x[2 * GRAIN] = f32::NAN;
    x[3 * GRAIN] = f32::NAN;
    let (mut v, mut idx) = ([0f32], [0i64]);
    let r = ArgExtreme::<f32, true> { values: Some(SendPtr(v.as_mut_ptr())), indices: SendPtr(idx.as_mut_ptr()) };
    let src = Arg { base: x.as_mut_ptr(), strides: &[1], offset: 0 };
    // SAFETY: as above.
    unsafe { reduce(r, &[n], src, &[true]) };
    assert!(v[0].is_nan());
    assert_eq!(idx[0], (2 * GRAIN) as i64);
}

#[test]
fn outer_reductions_split_rows_the_same_way_on_any_pool() {
    // Few outputs, many rows: the outer shape splits the reduced range into row chunks.
    let (rows, cols) = (200_000, 3);
    let x = data(rows * cols);
    let one = sum_with(1, &x, &[rows, cols], &[cols as isize, 1], 0, &[true, false]);
    let many = sum_with(4, &x, &[rows, cols], &[cols as isize, 1], 0, &[true, false]);
    assert_eq!(one.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), many.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let exact = naive_sum(&x, &[rows, cols], &[cols as isize, 1], 0, &[true, false]);
    for (a, e) in one.iter().zip(&exact) {
        assert!((*a as f64 - e).abs() <= 1e-6 * e.abs().max(1.0));
    }
}

#[test]
fn empty_reductions_write_the_identity() {
    let x: Vec<f32> = vec![];
    assert_eq!(sum_with(2, &x, &[0, 3], &[3, 1], 0, &[true, false]), vec![0.0; 3]);
    assert_eq!(sum_with(2, &x, &[3, 0], &[0, 1], 0, &[true, false]), Vec::<f32>::new());
    let one = [5.0f32];
    assert_eq!(sum_with(1, &one, &[], &[], 0, &[]), vec![5.0]);
}

#[test]
fn runs_cover_partial_ranges_in_order() {
    // Reduced dims (3, stride 10) x (4, stride 2), base 1: split at awkward points.
    let red = [(3usize, 10isize), (4, 2)];
    let mut seen = vec![];
    for (s, e) in [(0, 5), (5, 6), (6, 12)] {
        red_runs(&red, 1, s, e, |off, len, st, pos| {
            for k in 0..len {
                seen.push((pos + k, off + k as isize * st));
            }
        });
    }
    let want: Vec<(usize, isize)> = (0..12).map(|i| (i, 1 + 10 * (i / 4) as isize + 2 * (i % 4) as isize)).collect();
    assert_eq!(seen, want);
}
