//! The pooling kernels against per-window reference loops (torch's CPU kernels written plainly).

use super::*;

#[test]
fn spans_follow_torch_rules() {
    // size 5, kernel 3, stride 2, pad 1: windows [-1,2) [1,4) [3,6) -> clamped, padded lengths 3.
    let s = strided_spans(5, 3, 3, 2, 1);
    assert_eq!(s.iter().map(|s| (s.start, s.end, s.padded)).collect::<Vec<_>>(), vec![(0, 2, 3), (1, 4, 3), (3, 5, 3)]);
    let a = adaptive_spans(5, 3);
    assert_eq!(a.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>(), vec![(0, 2), (1, 4), (3, 5)]);
}

#[test]
fn avg_and_its_adjoint() {
    let x: Vec<f64> = (0..16).map(|v| v as f64).collect();
    let win = AvgWindows { rows: strided_spans(4, 2, 2, 2, 0), cols: strided_spans(4, 2, 2, 2, 0), divisor: Divisor::Padded };
    let mut out = vec![0.0; 4];
    avg_forward(&x, 4, 4, &win, &mut out);
    assert_eq!(out, vec![2.5, 4.5, 10.5, 12.5]);
    let mut dx = vec![9.0; 16];
    avg_backward(&[4.0, 0.0, 0.0, 8.0], 4, 4, &win, &mut dx);
    assert_eq!(&dx[..4], &[1.0, 1.0, 0.0, 0.0]);
    assert_eq!(dx[15], 2.0);
}

#[test]
fn max_indices_ties_and_nan() {
    let g = MaxGeometry { h: 2, w: 4, oh: 1, ow: 2, kernel: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1] };
    let x = [1.0, 3.0, f64::NAN, 0.0, 3.0, 2.0, 5.0, 0.0];
    let (mut out, mut idx) = (vec![0.0; 2], vec![0i64; 2]);
    max_forward(&x, &g, &mut out, &mut idx);
    assert_eq!(out[0], 3.0);
    assert!(out[1].is_nan());
    assert_eq!(idx, vec![1, 2]);
    let mut dx = vec![0.0; 8];
    max_backward(&[1.0, 2.0], &idx, 8, 2, &mut dx);
    assert_eq!(dx, vec![0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

/// A small deterministic generator (no rand dependency): values with many exact ties.
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 17) as f64 - 8.0
        })
        .collect()
}

/// torch's max_pool2d loop per window: (values, indices).
fn max_reference(x: &[f64], g: &MaxGeometry, planes: usize) -> (Vec<f64>, Vec<i64>) {
    let (mut out, mut idx) = (vec![], vec![]);
    for p in 0..planes {
        let plane = &x[p * g.h * g.w..(p + 1) * g.h * g.w];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let mut hs = (oy * g.stride[0]) as isize - g.padding[0] as isize;
                let mut ws = (ox * g.stride[1]) as isize - g.padding[1] as isize;
                let he = (hs + ((g.kernel[0] - 1) * g.dilation[0] + 1) as isize).min(g.h as isize);
                let we = (ws + ((g.kernel[1] - 1) * g.dilation[1] + 1) as isize).min(g.w as isize);
                while hs < 0 {
                    hs += g.dilation[0] as isize;
                }
                while ws < 0 {
                    ws += g.dilation[1] as isize;
                }
                let (mut best, mut at) = (f64::NEG_INFINITY, hs * g.w as isize + ws);
                let mut y = hs;
                while y < he {
                    let mut x_ = ws;
                    while x_ < we {
                        let v = plane[(y * g.w as isize + x_) as usize];
                        if v > best || v.is_nan() {
                            best = v;
                            at = y * g.w as isize + x_;
                        }
                        x_ += g.dilation[1] as isize;
                    }
                    y += g.dilation[0] as isize;
                }
                out.push(best);
                idx.push(at as i64);
            }
        }
    }
    (out, idx)
}

fn out_size(size: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> usize {
    let num = size + 2 * p - d * (k - 1) - 1 + if ceil { s - 1 } else { 0 };
    let mut o = num / s + 1;
    if ceil && (o - 1) * s >= size + p {
        o -= 1;
    }
    o
}

#[test]
fn max_matches_the_window_loop_over_geometries() {
    let mut cases = 0;
    for (h, w) in [(5, 7), (8, 8), (1, 9), (6, 3)] {
        for k in 1..4 {
            for s in 1..4 {
                for p in 0..=k / 2 {
                    for d in 1..3 {
                        for ceil in [false, true] {
                            if h + 2 * p < d * (k - 1) + 1 || w + 2 * p < d * (k - 1) + 1 || p > ((k - 1) * d + 1) / 2 {
                                continue;
                            }
                            let g = MaxGeometry {
                                h,
                                w,
                                oh: out_size(h, k, s, p, d, ceil),
                                ow: out_size(w, k, s, p, d, ceil),
                                kernel: [k, k],
                                stride: [s, s],
                                padding: [p, p],
                                dilation: [d, d],
                            };
                            let planes = 3;
                            let mut x = data(planes * h * w, cases);
                            if cases % 3 == 0 {
                                let at = cases as usize % x.len();
                                x[at] = f64::NAN;
                            }
                            let (want, want_idx) = max_reference(&x, &g, planes);
                            let n = planes * g.oh * g.ow;
                            let (mut out, mut idx, mut vals) = (vec![0.0; n], vec![0i64; n], vec![0.0; n]);
                            max_forward(&x, &g, &mut out, &mut idx);
                            max_forward_values(&x, &g, &mut vals);
                            let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
                            assert!(same(&out, &want), "{g:?}");
                            assert!(same(&vals, &want), "{g:?}");
                            assert_eq!(idx, want_idx, "{g:?}");
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(cases > 200);
}

#[test]
fn rectangular_max_and_a_large_batch_split_over_threads() {
    // Different kernel/stride/padding per dim, and enough planes to take the parallel path.
    let g = MaxGeometry { h: 9, w: 12, oh: 5, ow: 4, kernel: [3, 2], stride: [2, 3], padding: [1, 0], dilation: [1, 2] };
    let planes = 2000;
    let x = data(planes * 9 * 12, 7);
    let (want, want_idx) = max_reference(&x, &g, planes);
    let (mut out, mut idx, mut vals) = (vec![0.0; want.len()], vec![0; want.len()], vec![0.0; want.len()]);
    max_forward(&x, &g, &mut out, &mut idx);
    max_forward_values(&x, &g, &mut vals);
    assert_eq!((out.clone(), idx.clone()), (want.clone(), want_idx.clone()));
    assert_eq!(vals, want);
    // The gradient: the reference scatter.
    let grad = data(want.len(), 8);
    let mut want_dx = vec![0.0; x.len()];
    for (j, (&at, &gv)) in idx.iter().zip(&grad).enumerate() {
        want_dx[(j / 20) * 108 + at as usize] += gv;
    }
    let mut dx = vec![1.0; x.len()];
    max_backward(&grad, &idx, 108, 20, &mut dx);
    assert_eq!(dx, want_dx);
}

fn avg_reference(x: &[f64], h: usize, w: usize, win: &AvgWindows, planes: usize) -> Vec<f64> {
    let mut out = vec![];
    for p in 0..planes {
        for r in &win.rows {
            for c in &win.cols {
                let mut acc = 0.0;
                for iy in r.start..r.end {
                    for ix in c.start..c.end {
                        acc += x[p * h * w + iy * w + ix];
                    }
                }
                out.push(acc / win.divisor(r, c));
            }
        }
    }
    out
}

#[test]
fn avg_matches_the_window_loop_and_its_adjoint_is_the_transpose() {
    let (h, w, planes) = (7, 9, 700);
    let x = data(planes * h * w, 3);
    let wins = [
        AvgWindows { rows: strided_spans(h, 4, 3, 2, 1), cols: strided_spans(w, 5, 3, 2, 1), divisor: Divisor::Padded },
        AvgWindows { rows: strided_spans(h, 3, 2, 2, 0), cols: strided_spans(w, 9, 1, 1, 0), divisor: Divisor::Covered },
        AvgWindows { rows: adaptive_spans(h, 3), cols: adaptive_spans(w, 4), divisor: Divisor::Covered },
        AvgWindows { rows: strided_spans(h, 7, 3, 1, 1), cols: strided_spans(w, 9, 3, 1, 1), divisor: Divisor::Override(5.0) },
    ];
    for win in &wins {
        let want = avg_reference(&x, h, w, win, planes);
        let mut out = vec![0.0; want.len()];
        avg_forward(&x, h, w, win, &mut out);
        // Small integers: every partial sum is exact, so the order of the sums does not show.
        assert_eq!(out, want);
        // <avg(x), g> == <x, avg_backward(g)> for every x: check with unit vectors of g.
        let g = data(want.len(), 4);
        let mut dx = vec![0.0; x.len()];
        avg_backward(&g, h, w, win, &mut dx);
        let lhs: f64 = out.iter().zip(&g).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() <= 1e-9 * lhs.abs().max(1.0), "{lhs} {rhs}");
    }
}

#[test]
fn two_by_two_stride_two_matches_the_window_loop_bit_for_bit() {
    // The stacked-planes path (`is_2x2_stride_2`): serial and (from 2^18 elements) split over
    // threads, with NaNs, signed zeros and -inf, whose winners depend on the taps' order.
    for (h, w, planes) in [(8, 8, 3), (2, 2, 1), (4, 10, 7), (8, 8, 1024), (6, 32, 300), (8, 8, 4096), (16, 16, 1100)] {
        let g = MaxGeometry { h, w, oh: h / 2, ow: w / 2, kernel: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1] };
        let specials = [f64::NAN, -0.0, 0.0, f64::NEG_INFINITY, -f64::NAN];
        let x: Vec<f64> = data(planes * h * w, (h * w + planes) as u64)
            .into_iter()
            .enumerate()
            .map(|(i, v)| if i % 7 == 3 { specials[(i / 7) % specials.len()] } else { v })
            .collect();
        let (want, want_idx) = max_reference(&x, &g, planes);
        let n = want.len();
        let (mut out, mut idx, mut vals) = (vec![0.0; n], vec![0i64; n], vec![0.0; n]);
        max_forward(&x, &g, &mut out, &mut idx);
        max_forward_values(&x, &g, &mut vals);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        assert_eq!(bits(&out), bits(&want), "{g:?}");
        assert_eq!(bits(&vals), bits(&want), "{g:?}");
        assert_eq!(idx, want_idx, "{g:?}");
    }
}
