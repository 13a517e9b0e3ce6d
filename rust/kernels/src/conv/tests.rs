//! The conv kernels against the definition, one output element at a time, over geometries that
//! exercise every span case (padding wider than the kernel, strides, dilation, groups, 1x1,
//! batch 1) and chunk boundaries (small budgets split the batch unevenly).

use super::*;

pub(super) fn geo(n: usize, c_in: usize, h: usize, w: usize, c_out: usize, k: [usize; 2], s: [usize; 2], pad: [usize; 2], d: [usize; 2], groups: usize) -> Geometry {
    let out = |i: usize| (([h, w][i] + 2 * pad[i]) - d[i] * (k[i] - 1) - 1) / s[i] + 1;
    Geometry { n, c_in, h, w, c_out, kh: k[0], kw: k[1], oh: out(0), ow: out(1), stride: s, padding: pad, dilation: d, groups }
}

/// The definition, one output element at a time.
pub(super) fn naive(x: &[f64], wt: &[f64], bias: Option<&[f64]>, g: &Geometry) -> Vec<f64> {
    let (cin_g, cout_g) = (g.c_in / g.groups, g.c_out / g.groups);
    let mut out = vec![0.0; g.n * g.c_out * g.oh * g.ow];
    for n in 0..g.n {
        for co in 0..g.c_out {
            let grp = co / cout_g;
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let mut acc = 0.0;
                    for ci in 0..cin_g {
                        for ki in 0..g.kh {
                            for kj in 0..g.kw {
                                if let (Some(iy), Some(ix)) = (g.src(0, oy, ki), g.src(1, ox, kj)) {
                                    let c = grp * cin_g + ci;
                                    acc += x[((n * g.c_in + c) * g.h + iy) * g.w + ix] * wt[((co * cin_g + ci) * g.kh + ki) * g.kw + kj];
                                }
                            }
                        }
                    }
                    out[((n * g.c_out + co) * g.oh + oy) * g.ow + ox] = acc + bias.map_or(0.0, |b| b[co]);
                }
            }
        }
    }
    out
}

/// Small integers and halves: every product and sum below is exact in f64, so results can be
/// compared with `==` whatever the summation order.
pub(super) fn seq(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 * 0.37 + seed).sin() * 3.0).round() / 2.0).collect()
}

pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// (kernel, stride, padding, dilation, groups, batch, c_in, c_out, h, w)
type Case = ([usize; 2], [usize; 2], [usize; 2], [usize; 2], usize, usize, usize, usize, usize, usize);

const CASES: &[Case] = &[
    ([3, 3], [1, 1], [1, 1], [1, 1], 1, 3, 4, 4, 7, 6),
    ([2, 3], [2, 1], [0, 2], [1, 2], 2, 3, 4, 4, 7, 6),
    ([1, 1], [3, 2], [0, 0], [1, 1], 4, 3, 4, 4, 7, 6),
    ([2, 2], [1, 1], [3, 4], [1, 1], 1, 2, 2, 3, 3, 4),   // padding wider than the kernel
    ([3, 2], [3, 3], [1, 2], [1, 1], 1, 5, 3, 2, 10, 11), // stride 3
    ([3, 3], [1, 2], [2, 1], [2, 2], 1, 2, 2, 3, 9, 8),   // dilation 2
    ([3, 3], [2, 2], [1, 1], [2, 1], 3, 4, 6, 3, 8, 9),   // depthwise-like groups
    ([1, 1], [1, 1], [0, 0], [1, 1], 1, 3, 5, 7, 4, 4),   // 1x1
    ([3, 3], [1, 1], [1, 1], [1, 1], 1, 1, 3, 5, 6, 5),   // batch 1
    ([5, 5], [1, 1], [0, 0], [1, 1], 1, 2, 1, 2, 5, 5),   // one output pixel
    ([3, 3], [1, 1], [1, 1], [1, 1], 1, 7, 1, 16, 8, 8),  // the digits stem
];

fn case(c: &Case) -> Geometry {
    let &(k, s, pad, d, groups, n, c_in, c_out, h, w) = c;
    geo(n, c_in, h, w, c_out, k, s, pad, d, groups)
}

#[test]
fn small_exact_case() {
    // 1x1x3x3 input, 2x2 ones kernel: each output is the sum of a 2x2 window.
    let g = geo(1, 1, 3, 3, 1, [2, 2], [1, 1], [0, 0], [1, 1], 1);
    let x: Vec<f64> = (1..=9).map(|v| v as f64).collect();
    let mut out = vec![0.0; 4];
    forward(&x, &[1.0; 4], Some(&[0.5]), &mut out, &g).unwrap();
    assert_eq!(out, vec![12.5, 16.5, 24.5, 28.5]);
}

/// Budgets (column elements per chunk) that give one image per chunk, uneven chunks, and the
/// whole batch in one chunk.
fn budgets(g: &Geometry) -> Vec<usize> {
    let per = g.c_in * g.kh * g.kw * g.oh * g.ow;
    vec![1, 2 * per + per / 2, 3 * per, COLS_BUDGET]
}

#[test]
fn forward_and_gradients_match_the_definition() {
    let mut uneven = 0;
    for c in CASES {
        let g = case(c);
        let x = seq(g.n * g.c_in * g.h * g.w, 0.1);
        let wt = seq(g.c_out * (g.c_in / g.groups) * g.kh * g.kw, 0.7);
        let bias = seq(g.c_out, 1.9);
        let want = naive(&x, &wt, Some(&bias), &g);
        let gy = seq(want.len(), 2.3);
        // Adjoint identities: <conv(x, w), gy> = <x, grad_input(gy, w)> = <w, grad_weight(x, gy)>.
        let want_no_bias = naive(&x, &wt, None, &g);
        for budget in budgets(&g) {
            let nb = chunk_images(&g, budget);
            uneven += usize::from(nb > 1 && g.n % nb != 0);
            let mut out = vec![f64::NAN; want.len()];
            forward_in_chunks(&x, &wt, Some(&bias), &mut out, &g, budget).unwrap();
            assert_eq!(out, want, "{g:?} budget {budget}");
            let mut dx = vec![7.0; x.len()];
            grad_input_in_chunks(&gy, &wt, &mut dx, &g, budget).unwrap();
            let mut dw = vec![7.0; wt.len()];
            grad_weight_in_chunks(&x, &gy, &mut dw, &g, budget).unwrap();
            assert_eq!(dot(&want_no_bias, &gy), dot(&x, &dx), "{g:?} budget {budget}");
            assert_eq!(dot(&want_no_bias, &gy), dot(&wt, &dw), "{g:?} budget {budget}");
        }
    }
    assert!(uneven > 3, "the budgets must split some batch unevenly");
}

/// Each gradient checked element by element on one geometry (the adjoint test above checks
/// only one inner product per case): dx and dw against the definition's partial derivatives.
#[test]
fn gradients_elementwise() {
    for c in [&CASES[0], &CASES[1], &CASES[3], &CASES[6], &CASES[8]] {
        let g = case(c);
        let x = seq(g.n * g.c_in * g.h * g.w, 0.3);
        let wt = seq(g.c_out * (g.c_in / g.groups) * g.kh * g.kw, 0.9);
        let gy = seq(g.n * g.c_out * g.oh * g.ow, 1.3);
        for budget in budgets(&g) {
            let mut dx = vec![0.0; x.len()];
            grad_input_in_chunks(&gy, &wt, &mut dx, &g, budget).unwrap();
            let mut dw = vec![0.0; wt.len()];
            grad_weight_in_chunks(&x, &gy, &mut dw, &g, budget).unwrap();
            assert_grads_match_definition(&x, &wt, &gy, &dx, &dw, &g, "in chunks");
        }
    }
}

/// im2col then col2im with a row stride wider than one image's row (images side by side).
#[test]
fn im2col_and_col2im_with_row_stride() {
    let g = case(&CASES[3]);
    let (p, rows, hw) = (g.oh * g.ow, g.c_in * g.kh * g.kw, g.h * g.w);
    let x = seq(g.c_in * hw, 0.5);
    let rs = 3 * p;
    let mut cols = vec![f64::NAN; rows * rs];
    im2col(&x, g.c_in, &g, &mut cols[p..], rs);
    for r in 0..rows {
        let (c, ki, kj) = (r / (g.kh * g.kw), (r / g.kw) % g.kh, r % g.kw);
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let want = match (g.src(0, oy, ki), g.src(1, ox, kj)) {
                    (Some(iy), Some(ix)) => x[c * hw + iy * g.w + ix],
                    _ => 0.0,
                };
                assert_eq!(cols[r * rs + p + oy * g.ow + ox], want);
            }
        }
        assert!(cols[r * rs..r * rs + p].iter().all(|v| v.is_nan()), "row {r}: only its own image's span is written");
    }
    let y = seq(rows * rs, 0.8);
    let mut back = vec![0.0; x.len()];
    col2im(&y[p..], rs, g.c_in, &g, &mut back);
    let own: Vec<f64> = (0..rows).flat_map(|r| y[r * rs + p..r * rs + 2 * p].to_vec()).collect();
    let mut cols1 = vec![0.0; rows * p];
    im2col(&x, g.c_in, &g, &mut cols1, p);
    assert_eq!(dot(&cols1, &own), dot(&x, &back));
}

/// Each gradient element against the partial derivative of `<conv(x, w), gy>` by the
/// definition: `dx[n, c, iy, ix] = Σ w[co, ci, ki, kj]·gy[n, co, oy, ox]` over the output
/// positions and taps that read `x[n, c, iy, ix]`, and `dw[co, ci, ki, kj] = Σ x[n, c, iy,
/// ix]·gy[n, co, oy, ox]` over the images and output positions; the definition's loops run once,
/// transposed (the derivative of the sum `naive` forms, term by term). On `seq`'s data every sum
/// is exact in f64, so `dx` and `dw` must equal it exactly. (The same values as `<conv(e_i), gy>`
/// for each basis vector `e_i`, without a forward convolution per element: that cost 60+ s of
/// an unoptimised test run.)
pub(super) fn assert_grads_match_definition(x: &[f64], wt: &[f64], gy: &[f64], dx: &[f64], dw: &[f64], g: &Geometry, what: &str) {
    let (want_dx, want_dw) = naive_grads(x, wt, gy, g);
    for i in 0..x.len() {
        assert_eq!(dx[i], want_dx[i], "dx[{i}] {g:?} {what}");
    }
    for i in 0..wt.len() {
        assert_eq!(dw[i], want_dw[i], "dw[{i}] {g:?} {what}");
    }
}

/// The gradients of `<naive(x, wt), gy>` by x and by wt, term by term.
fn naive_grads(x: &[f64], wt: &[f64], gy: &[f64], g: &Geometry) -> (Vec<f64>, Vec<f64>) {
    let (cin_g, cout_g) = (g.c_in / g.groups, g.c_out / g.groups);
    let (mut dx, mut dw) = (vec![0.0; x.len()], vec![0.0; wt.len()]);
    for n in 0..g.n {
        for co in 0..g.c_out {
            let grp = co / cout_g;
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let d = gy[((n * g.c_out + co) * g.oh + oy) * g.ow + ox];
                    for ci in 0..cin_g {
                        for ki in 0..g.kh {
                            for kj in 0..g.kw {
                                if let (Some(iy), Some(ix)) = (g.src(0, oy, ki), g.src(1, ox, kj)) {
                                    let xi = ((n * g.c_in + grp * cin_g + ci) * g.h + iy) * g.w + ix;
                                    let wi = ((co * cin_g + ci) * g.kh + ki) * g.kw + kj;
                                    dx[xi] += wt[wi] * d;
                                    dw[wi] += x[xi] * d;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    (dx, dw)
}

pub(super) fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

/// Results do not depend on the thread count: large enough for parallel gemm and copies, in
/// f32, compared bit for bit.
#[test]
fn bitwise_identical_on_one_and_two_threads() {
    // 8 images: each product still several times `GEMM_PAR_WORK` and the unfold above the
    // copies' threshold (32 images took 6 s of an unoptimised test run).
    let g = geo(8, 16, 12, 12, 24, [3, 3], [1, 1], [1, 1], [1, 1], 1);
    let x: Vec<f32> = seq(g.n * g.c_in * g.h * g.w, 0.2).iter().map(|&v| v as f32 * 0.37).collect();
    let wt: Vec<f32> = seq(g.c_out * g.c_in * 9, 0.4).iter().map(|&v| v as f32 * 0.11).collect();
    let gy: Vec<f32> = seq(g.n * g.c_out * g.oh * g.ow, 0.6).iter().map(|&v| v as f32 * 0.23).collect();
    assert!(g.c_out * g.n * g.oh * g.ow * g.c_in * 9 >= 4 * GEMM_PAR_WORK && g.c_in * 9 * g.n * g.oh * g.ow >= COPY_PAR_ELEMS);
    assert!(g.n % 5 != 0, "the weight gradient's chunks of 5 images must be uneven");
    let run = |threads| {
        in_pool(threads, || {
            let mut out = vec![0f32; gy.len()];
            forward(&x, &wt, None, &mut out, &g).unwrap();
            let mut dx = vec![0f32; x.len()];
            grad_input(&gy, &wt, &mut dx, &g).unwrap();
            let mut dw = vec![0f32; wt.len()];
            // Uneven chunks: the accumulation across chunks is part of the fixed order.
            grad_weight_in_chunks(&x, &gy, &mut dw, &g, 5 * g.c_in * 9 * g.oh * g.ow).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            (bits(&out), bits(&dx), bits(&dw))
        })
    };
    let one = run(1);
    for threads in [2, 2, 3, 4] {
        assert_eq!(one, run(threads), "{threads} threads");
    }
}

/// The per-image path (large output planes) against the definition on every case above (it
/// does not care how small P is) and on stem-like planes of at least `MIN_PIXELS` pixels.
#[test]
fn per_image_path_matches_the_definition() {
    let big = [
        geo(3, 3, 16, 16, 5, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        geo(2, 4, 18, 17, 6, [3, 3], [1, 1], [0, 2], [2, 1], 2),
        geo(9, 2, 16, 20, 3, [1, 1], [1, 1], [0, 0], [1, 1], 1), // 9 images: uneven weight slices
        geo(2, 8, 16, 16, 70, [3, 3], [1, 1], [1, 1], [1, 1], 1), // K = 72, Cout = 70: gemm, not small_k
    ];
    assert!(big.iter().all(per_image::suits));
    assert!(big[3].rows_g() > small_k::MAX_K && big[3].cout_g() > small_k::MAX_K);
    for g in CASES.iter().map(case).chain(big) {
        let x = seq(g.n * g.c_in * g.h * g.w, 0.1);
        let wt = seq(g.c_out * (g.c_in / g.groups) * g.kh * g.kw, 0.7);
        let bias = seq(g.c_out, 1.9);
        let want = naive(&x, &wt, Some(&bias), &g);
        let mut out = vec![f64::NAN; want.len()];
        per_image::forward(&x, &wt, Some(&bias), &mut out, &g).unwrap();
        assert_eq!(out, want, "{g:?}");
        let gy = seq(want.len(), 2.3);
        let want_no_bias = naive(&x, &wt, None, &g);
        let mut dx = vec![7.0; x.len()];
        per_image::grad_input(&gy, &wt, &mut dx, &g).unwrap();
        let mut dw = vec![7.0; wt.len()];
        per_image::grad_weight(&x, &gy, &mut dw, &g).unwrap();
        assert_eq!(dot(&want_no_bias, &gy), dot(&x, &dx), "{g:?}");
        assert_eq!(dot(&want_no_bias, &gy), dot(&wt, &dw), "{g:?}");
        assert_grads_match_definition(&x, &wt, &gy, &dx, &dw, &g, "per image");
    }
}

/// The per-image path gives the same bits on one and two threads (the stem conv's shape,
/// smaller batch): images in parallel, weight-gradient slices summed in a fixed order.
#[test]
fn per_image_bitwise_identical_on_one_and_two_threads() {
    let g = geo(10, 3, 32, 32, 16, [3, 3], [1, 1], [1, 1], [1, 1], 1);
    assert!(per_image::suits(&g) && g.n * g.c_out * g.oh * g.ow * g.c_in * 9 >= GEMM_PAR_WORK);
    let x: Vec<f32> = seq(g.n * g.c_in * g.h * g.w, 0.2).iter().map(|&v| v as f32 * 0.37).collect();
    let wt: Vec<f32> = seq(g.c_out * g.c_in * 9, 0.4).iter().map(|&v| v as f32 * 0.11).collect();
    let gy: Vec<f32> = seq(g.n * g.c_out * g.oh * g.ow, 0.6).iter().map(|&v| v as f32 * 0.23).collect();
    let run = |threads| {
        in_pool(threads, || {
            let mut out = vec![0f32; gy.len()];
            forward(&x, &wt, Some(&wt[..g.c_out]), &mut out, &g).unwrap();
            let mut dx = vec![0f32; x.len()];
            grad_input(&gy, &wt, &mut dx, &g).unwrap();
            let mut dw = vec![0f32; wt.len()];
            grad_weight(&x, &gy, &mut dw, &g).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            (bits(&out), bits(&dx), bits(&dw))
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

/// The digits conv net's residual conv (64 images of 16x8x8): its weight gradient is a deep
/// product ([16, 144] over k = 4096) cut into k slices (`deep_gemm`) summed in a fixed order:
/// the same bits on 1, 2 and 3 threads, and the gradient the definition gives.
#[test]
fn deep_weight_gradient_is_exact_and_bitwise_identical_across_threads() {
    let g = geo(64, 16, 8, 8, 16, [3, 3], [1, 1], [1, 1], [1, 1], 1);
    assert!(!per_image::suits(&g) && deep_slices(g.c_out, g.rows_g(), g.n * g.pixels()) == 4);
    let x = seq(g.n * g.c_in * g.h * g.w, 0.2);
    let wt = seq(g.c_out * g.c_in * 9, 0.4);
    let gy = seq(g.n * g.c_out * g.pixels(), 0.6);
    let mut dw = vec![7.0; wt.len()];
    grad_weight(&x, &gy, &mut dw, &g).unwrap();
    // Exact (`seq`'s values): the adjoint identity <conv(x, w), gy> = <w, dw>.
    assert_eq!(dot(&naive(&x, &wt, None, &g), &gy), dot(&wt, &dw));
    let (x32, gy32): (Vec<f32>, Vec<f32>) = (x.iter().map(|&v| v as f32 * 0.37).collect(), gy.iter().map(|&v| v as f32 * 0.23).collect());
    let run = |threads| {
        in_pool(threads, || {
            let mut dw = vec![0f32; wt.len()];
            grad_weight(&x32, &gy32, &mut dw, &g).unwrap();
            dw.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

/// `try_for_each_chunk` visits every chunk once (the last one short) on any thread count, and
/// reports the error of the lowest failing chunk whichever thread met it first.
#[test]
fn chunks_run_once_and_the_lowest_error_wins() {
    use crate::error::Error;
    for threads in 1..=4 {
        in_pool(threads, || {
            let mut out = vec![0u32; 103];
            super::try_for_each_chunk(&mut out, 10, true, |i, c| {
                c.iter_mut().for_each(|v| *v += i as u32 + 1);
                Ok(())
            })
            .unwrap();
            let want: Vec<u32> = (0..103).map(|j| j as u32 / 10 + 1).collect();
            assert_eq!(out, want, "{threads} threads");
            let err = super::try_for_each_chunk(&mut out, 10, true, |i, _| {
                if i % 3 == 2 {
                    Err(Error::Runtime(format!("chunk {i}")))
                } else {
                    Ok(())
                }
            });
            assert_eq!(err, Err(Error::Runtime("chunk 2".into())), "{threads} threads");
        });
    }
}
