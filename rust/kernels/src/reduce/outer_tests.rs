//! The outer shape's tests: the same bits on any pool, against a plain scan in index order, for
//! both splits (whole columns per thread; fixed row chunks for few outputs), every reducer that
//! runs through it, special values and strided layouts.

use super::{row_chunk, FROM_MEMORY, MANY_OUTPUTS, PAR_MIN_ROWWISE, ROW_SPLIT_BELOW};
use crate::element::Element;
use crate::parallel::SendPtr;
use crate::reduce::{reduce, Reducer, PAR_MIN_REDUCE};
use crate::reducers::{norm_kind, ArgExtreme, Extreme, Norm, SumProd};
use crate::Arg;

/// A strided view of a buffer: shape, strides, offset.
#[derive(Clone, Copy, Debug)]
struct View<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    offset: usize,
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn out_numel(v: View, mask: &[bool]) -> usize {
    v.shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&s, _)| s).product()
}

/// Runs `make(out)` over `x` with a pool of `threads`; `out` holds the outputs.
fn run<T: Element, O: Copy + Default, R: Reducer<In = T>>(threads: usize, x: &[T], v: View, mask: &[bool], make: impl Fn(*mut O) -> R) -> Vec<O> {
    let mut out = vec![O::default(); out_numel(v, mask)];
    let r = make(out.as_mut_ptr());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    // SAFETY: every view the tests build stays inside `x`; `out` holds out_numel elements.
    pool.install(|| unsafe { reduce(r, v.shape, Arg { base: x.as_ptr() as *mut T, strides: v.strides, offset: v.offset }, mask) });
    out
}

/// For each output (row-major over the kept dims), its elements in logical order of the
/// reduced index: what a plain scan sees.
fn groups<T: Copy>(x: &[T], v: View, mask: &[bool]) -> Vec<Vec<T>> {
    let mut out = vec![vec![]; out_numel(v, mask)];
    for lin in 0..numel(v.shape) {
        let (mut rem, mut off, mut o, mut os) = (lin, v.offset as isize, 0usize, 1usize);
        for d in (0..v.shape.len()).rev() {
            let i = rem % v.shape[d];
            rem /= v.shape[d];
            off += i as isize * v.strides[d];
            if !mask[d] {
                o += i * os;
                os *= v.shape[d];
            }
        }
        out[o].push(x[off as usize]);
    }
    // Elements were pushed in row-major order of the whole index, which is logical order of
    // the reduced index within each output.
    out
}

/// The layouts of the outer shape, with the reduced dims: (buffer length, view, mask).
fn layouts() -> Vec<(usize, Vec<usize>, Vec<isize>, usize, Vec<bool>)> {
    vec![
        // dim 0 of a contiguous matrix, many outputs (whole columns per thread)
        (700 * 333, vec![700, 333], vec![333, 1], 0, vec![true, false]),
        // few outputs, many rows: fixed row chunks
        (40_000 * 7, vec![40_000, 7], vec![7, 1], 0, vec![true, false]),
        // the middle axis of a 3-D tensor
        (30 * 200 * 50, vec![30, 200, 50], vec![10_000, 50, 1], 0, vec![false, true, false]),
        // the middle axis, few outputs (2 x 3) and many rows
        (2 * 30_000 * 3, vec![2, 30_000, 3], vec![90_000, 3, 1], 0, vec![false, true, false]),
        // stepped rows and columns with an offset (non-contiguous)
        (1201 * 900, vec![600, 300], vec![1800, 3], 5, vec![true, false]),
        // outer dims 0 and 2 reduced, dim 1 kept innermost in memory (a permuted layout)
        (64 * 40 * 300, vec![64, 40, 300], vec![12_000, 1, 40], 0, vec![true, false, true]),
        // negative row stride (a flipped view)
        (500 * 400, vec![500, 400], vec![-400, 1], 499 * 400, vec![true, false]),
        // beyond the caches: whole rows in chunks, though the outputs are many
        (4500 * 1000, vec![4500, 1000], vec![1000, 1], 0, vec![true, false]),
        // more than BLOCK columns, rows below the split threshold
        (3 * 2500, vec![3, 2500], vec![2500, 1], 0, vec![true, false]),
        // between PAR_MIN_ROWWISE (PAR_MIN_WHOLE_SUM) and PAR_MIN_REDUCE: the columns split, the
        // rows never
        (100 * 1000, vec![100, 1000], vec![1000, 1], 0, vec![true, false]),
    ]
}

fn data(n: usize) -> Vec<f32> {
    crate::test_data::pseudo_random(n, 0x9E37_79B9_7F4A_7C15, -1.0, 2.0)
}

#[test]
fn every_layout_takes_the_outer_shape_and_a_known_split() {
    // The cases above cover both splits (the choice is a function of the shape).
    let mut kinds = (0, 0);
    for (_, shape, _, _, mask) in layouts() {
        let out: usize = shape.iter().zip(&mask).filter(|(_, &m)| !m).map(|(&s, _)| s).product();
        let n = numel(&shape) / out;
        if row_chunk(out, n) < n {
            kinds.1 += 1;
        } else {
            kinds.0 += 1;
        }
    }
    assert!(kinds.0 >= 3 && kinds.1 >= 3, "{kinds:?}");
    assert_eq!(row_chunk(ROW_SPLIT_BELOW, 1000), 1000);
    assert_eq!(row_chunk(MANY_OUTPUTS, 1 << 20), 1 << 20);
    assert!(row_chunk(MANY_OUTPUTS - 1, FROM_MEMORY) < FROM_MEMORY);
    assert_eq!(row_chunk(10, PAR_MIN_REDUCE / 10 - 1), PAR_MIN_REDUCE / 10 - 1);
    assert!(row_chunk(10, 1 << 20) < 1 << 20);
    assert!(PAR_MIN_ROWWISE <= 100 * 1000 && 100 * 1000 < PAR_MIN_REDUCE, "the (100, 1000) layout");
    assert!(crate::reduce::PAR_MIN_WHOLE_SUM <= 100 * 1000, "sums split the (100, 1000) layout's columns too");
}

#[test]
fn float_sums_are_the_same_bits_on_any_pool_and_near_exact() {
    for (len, shape, strides, offset, mask) in layouts() {
        let x = data(len);
        let v = View { shape: &shape, strides: &strides, offset };
        let sum = |t| run(t, &x, v, &mask, |o: *mut f32| SumProd::<f32, f32, false>::new(o, None));
        let one = sum(1);
        for t in [2, 3, 4] {
            let many = sum(t);
            assert!(one.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits()), "{shape:?} {mask:?} at {t} threads");
        }
        for (g, got) in groups(&x, v, &mask).iter().zip(&one) {
            let exact: f64 = g.iter().map(|&x| x as f64).sum();
            let mag: f64 = g.iter().map(|&x| x.abs() as f64).sum();
            assert!((*got as f64 - exact).abs() <= f32::EPSILON as f64 / 4.0 * mag + 1e-7 * exact.abs(), "{shape:?}: {got} vs {exact}");
        }
        // mean, float64 and the f64 accumulation of float32 (dtype=float64)
        let mean = |t| run(t, &x, v, &mask, |o: *mut f32| SumProd::<f32, f32, false>::new(o, Some(g_len(&shape, &mask) as f64)));
        assert_eq!(bits(&mean(1)), bits(&mean(3)));
        let xd: Vec<f64> = x.iter().map(|&a| a as f64).collect();
        let sumd = |t| run(t, &xd, v, &mask, |o: *mut f64| SumProd::<f64, f64, false>::new(o, None));
        let (a, b) = (sumd(1), sumd(4));
        assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()));
        for (g, got) in groups(&xd, v, &mask).iter().zip(&a) {
            let exact: f64 = g.iter().sum();
            assert!((got - exact).abs() <= 1e-12 * g.len() as f64, "{got} vs {exact}");
        }
    }
}

fn g_len(shape: &[usize], mask: &[bool]) -> usize {
    shape.iter().zip(mask).filter(|(_, &m)| m).map(|(&s, _)| s).product()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|a| a.to_bits()).collect()
}

#[test]
fn integer_sums_are_exact_and_wrap() {
    for (len, shape, strides, offset, mask) in layouts() {
        let v = View { shape: &shape, strides: &strides, offset };
        let x: Vec<i32> = (0..len).map(|i| ((i as i64 * 2_654_435_761) % 2_000_001 - 1_000_000) as i32).collect();
        let want: Vec<i64> = groups(&x, v, &mask).iter().map(|g| g.iter().map(|&a| a as i64).sum()).collect();
        for t in [1, 2, 4] {
            assert_eq!(run(t, &x, v, &mask, |o: *mut i64| SumProd::<i32, i64, false>::new(o, None)), want, "{shape:?}");
        }
    }
    // i64 sums wrap, as torch's do
    let x = vec![i64::MAX, 1, 2, 3];
    let v = View { shape: &[2, 2], strides: &[2, 1], offset: 0 };
    assert_eq!(run(2, &x, v, &[true, false], |o: *mut i64| SumProd::<i64, i64, false>::new(o, None)), vec![i64::MIN + 1, 4]);
}

#[test]
fn max_min_argmax_and_norms_match_a_scan_on_any_pool() {
    for (len, shape, strides, offset, mask) in layouts() {
        let mut x = data(len);
        // ties (rounded values) so the first occurrence matters
        for a in x.iter_mut().step_by(3) {
            *a = (*a * 4.0).round() / 4.0;
        }
        let v = View { shape: &shape, strides: &strides, offset };
        let gs = groups(&x, v, &mask);
        for t in [1, 2, 3, 4] {
            let mx = run(t, &x, v, &mask, |o: *mut f32| Extreme::<f32, true> { out: SendPtr(o) });
            let mn = run(t, &x, v, &mask, |o: *mut f32| Extreme::<f32, false> { out: SendPtr(o) });
            let am = run(t, &x, v, &mask, |o: *mut i64| ArgExtreme::<f32, true> { values: None, indices: SendPtr(o) });
            let an = run(t, &x, v, &mask, |o: *mut i64| ArgExtreme::<f32, false> { values: None, indices: SendPtr(o) });
            for (k, g) in gs.iter().enumerate() {
                let hi = g.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let lo = g.iter().copied().fold(f32::INFINITY, f32::min);
                assert_eq!((mx[k], mn[k]), (hi, lo), "{shape:?} output {k}");
                // argmax reads the reduced index `i` (one reduced dim of size > 1 only)
                if mask.iter().zip(&shape).filter(|(&m, &s)| m && s > 1).count() == 1 {
                    assert_eq!(am[k], g.iter().position(|&a| a == hi).unwrap() as i64, "{shape:?} output {k}");
                    assert_eq!(an[k], g.iter().position(|&a| a == lo).unwrap() as i64, "{shape:?} output {k}");
                }
            }
            let n2 = run(t, &x, v, &mask, |o: *mut f32| Norm::<f32, f32, { norm_kind::TWO }>::new(o, 2.0));
            let n1 = run(t, &x, v, &mask, |o: *mut f32| Norm::<f32, f32, { norm_kind::ONE }>::new(o, 1.0));
            for (k, g) in gs.iter().enumerate() {
                let sq: f64 = g.iter().map(|&a| (a as f64) * (a as f64)).sum();
                let ab: f64 = g.iter().map(|&a| a.abs() as f64).sum();
                assert!((n2[k] as f64 - sq.sqrt()).abs() <= 1e-5 * sq.sqrt());
                assert!((n1[k] as f64 - ab).abs() <= 1e-5 * ab);
            }
        }
    }
}

#[test]
fn nan_inf_and_signed_zeros_follow_a_scan_in_row_order() {
    // 40_000 x 4 (row chunks) and 600 x 300 (whole columns): specials planted in some columns.
    for (rows, cols) in [(40_000usize, 4usize), (600, 300)] {
        let mut x = vec![0.0f32; rows * cols];
        for (i, a) in x.iter_mut().enumerate() {
            *a = if (i / cols) % 2 == 0 { -0.0 } else { 0.0 };
        }
        let at = |r: usize, c: usize| r * cols + c;
        // column 0: all zeros of both signs (max/min keep the first: -0.0 at row 0)
        // column 1: NaN late, +inf early: max and sum are NaN; argmax is the NaN's row
        x[at(3, 1)] = f32::INFINITY;
        x[at(rows - 2, 1)] = f32::NAN;
        x[at(rows - 1, 1)] = f32::NAN;
        // column 2: +inf and -inf: the sum is NaN, max +inf, min -inf
        x[at(5, 2)] = f32::INFINITY;
        x[at(rows / 2, 2)] = f32::NEG_INFINITY;
        // column 3: a single -inf
        x[at(rows - 1, 3)] = f32::NEG_INFINITY;
        let v = View { shape: &[rows, cols], strides: &[cols as isize, 1], offset: 0 };
        let mask = [true, false];
        for t in [1, 2, 4] {
            let s = run(t, &x, v, &mask, |o: *mut f32| SumProd::<f32, f32, false>::new(o, None));
            let mx = run(t, &x, v, &mask, |o: *mut f32| Extreme::<f32, true> { out: SendPtr(o) });
            let mn = run(t, &x, v, &mask, |o: *mut f32| Extreme::<f32, false> { out: SendPtr(o) });
            let am = run(t, &x, v, &mask, |o: *mut i64| ArgExtreme::<f32, true> { values: None, indices: SendPtr(o) });
            assert_eq!(s[0].to_bits(), 0.0f32.to_bits(), "-0.0 + 0.0 is +0.0");
            assert_eq!((mx[0].to_bits(), mn[0].to_bits()), ((-0.0f32).to_bits(), (-0.0f32).to_bits()), "first zero kept");
            assert_eq!(am[0], 0);
            assert!(s[1].is_nan() && mx[1].is_nan() && mn[1].is_nan());
            assert_eq!(am[1], (rows - 2) as i64, "the first NaN");
            assert!(s[2].is_nan());
            assert_eq!((mx[2], mn[2]), (f32::INFINITY, f32::NEG_INFINITY));
            assert_eq!((s[3], mn[3]), (f32::NEG_INFINITY, f32::NEG_INFINITY));
            for c in 4..cols {
                assert_eq!((s[c].to_bits(), mx[c].to_bits(), am[c]), (0.0f32.to_bits(), (-0.0f32).to_bits(), 0));
            }
        }
    }
}

#[test]
fn float32_outer_sums_take_the_sum_rows_order_from_each_run() {
    // Contiguous columns: 16-row float32 groups from the start of each run of rows (the
    // reduced dim; in the 3-D case, whose outer stride keeps the dims apart, each of the 4
    // leading indices is its own run of 37 rows), widened into f64 per column: the order of
    // `simd::sum_rows`' reference, on any pool.
    use crate::simd::sum_rows::add_rows_ref;
    let cases: [(&[usize], &[isize], &[bool], usize, usize); 2] =
        [(&[100, 1000], &[1000, 1], &[true, false], 100, 1), (&[4, 37, 70], &[40 * 70, 70, 1], &[true, true, false], 37, 4)];
    for (shape, strides, mask, red, runs) in cases {
        let cols = *shape.last().unwrap();
        let x = data(shape[0] * strides[0] as usize);
        let mut want = vec![0f64; cols];
        for r in 0..runs {
            add_rows_ref(&mut want, &x[r * strides[0] as usize..], cols, red);
        }
        let v = View { shape, strides, offset: 0 };
        for t in [1, 2] {
            let got = run(t, &x, v, mask, |o: *mut f32| SumProd::<f32, f32, false>::new(o, None));
            assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == (*w as f32).to_bits()), "{shape:?} at {t} threads");
        }
    }
}
