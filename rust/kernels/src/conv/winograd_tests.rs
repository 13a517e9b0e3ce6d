//! Winograd F(2x2, 3x3) against the definition. With small integers and halves as data every
//! transform coefficient (0, ±1, ±½) keeps values dyadic and small, so in f64 the result is
//! exact and compared with `==`; random f32 data is compared with the f64 definition under the
//! documented tolerance.

use super::super::tests::{assert_grads_match_definition, dot, geo, in_pool, naive, seq};
use super::*;

/// (batch, c_in, c_out, h, w, padding): odd and even sizes, paddings 0-2 (also mixed), batch 1,
/// one output pixel, one row, more channels than tiles.
type Case = (usize, usize, usize, usize, usize, [usize; 2]);

const CASES: &[Case] = &[
    (3, 4, 5, 8, 8, [1, 1]),
    (2, 5, 4, 7, 9, [1, 1]),
    (1, 4, 4, 6, 5, [0, 0]),
    (2, 6, 4, 5, 7, [2, 2]),
    (3, 4, 6, 7, 6, [0, 2]),
    (1, 4, 4, 3, 3, [0, 0]), // one output pixel
    (2, 4, 5, 1, 6, [1, 0]), // one input row: one output row
    (1, 7, 9, 2, 2, [2, 1]),
    (5, 16, 16, 8, 8, [1, 1]), // the digits net's residual convs, small batch
    (2, 66, 65, 4, 3, [1, 1]), // more channels than `small_k` sums: gemm's products, both ways
    (16, 16, 16, 8, 8, [1, 1]), // 8 images of 16 f64 channels per chunk: padded with image slots
];

fn cases() -> Vec<Geometry> {
    CASES.iter().map(|&(n, ci, co, h, w, p)| geo(n, ci, h, w, co, [3, 3], [1, 1], p, [1, 1], 1)).collect()
}

/// Budgets that give one image per chunk, uneven chunks and the default.
fn budgets(g: &Geometry) -> Vec<usize> {
    let per = 16 * g.oh.div_ceil(2) * g.ow.div_ceil(2) * g.c_in.max(g.c_out);
    vec![1, 2 * per, CHUNK_BUDGET]
}

#[test]
fn which_geometries_suit() {
    let ok = geo(2, 4, 6, 6, 4, [3, 3], [1, 1], [1, 1], [1, 1], 1);
    assert!(suits(&ok) && suits_input_grad(&ok));
    let pad3 = geo(2, 4, 6, 6, 4, [3, 3], [1, 1], [3, 1], [1, 1], 1);
    assert!(suits(&pad3) && !suits_input_grad(&pad3), "input grad needs padding <= 2");
    for g in [
        geo(2, 4, 6, 6, 4, [3, 3], [2, 1], [1, 1], [1, 1], 1),
        geo(2, 4, 6, 6, 4, [3, 3], [1, 1], [1, 1], [2, 1], 1),
        geo(2, 4, 6, 6, 4, [3, 3], [1, 1], [1, 1], [1, 1], 2),
        geo(2, 4, 6, 6, 4, [3, 2], [1, 1], [1, 1], [1, 1], 1),
        geo(2, 4, 6, 6, 4, [5, 5], [1, 1], [1, 1], [1, 1], 1),
        geo(2, 1, 6, 6, 16, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        geo(2, 16, 6, 6, 1, [3, 3], [1, 1], [1, 1], [1, 1], 1),
    ] {
        assert!(!suits(&g), "{g:?}");
    }
}

/// Grid blocks a multiple of 512 bytes get extra zero image slots (keeping the products' rows
/// a multiple of 8 where it can); others keep `nb`.
#[test]
fn image_slots_break_power_of_two_blocks() {
    assert_eq!(slots::<f32>(32, [16, 16], 4), 34);
    assert_eq!(slots::<f32>(32, [16, 16], 16), 33);
    assert_eq!(slots::<f64>(8, [16, 16], 4), 10);
    assert_eq!(slots::<f32>(3, [16, 16], 4), 3);
    assert_eq!(slots::<f32>(19, [16, 12], 4), 19);
    assert_eq!(slots::<f32>(8, [128, 128], 4), 8, "no slot count helps");
}

#[test]
fn exact_on_dyadic_data_in_f64() {
    let mut uneven = 0;
    let shallow = |cin: usize| Kernels::new(vec![0.0f64; 16 * cin], 1, cin).shallow;
    assert!(cases().iter().any(|g| shallow(g.c_in)) && cases().iter().any(|g| !shallow(g.c_in) && !shallow(g.c_out)));
    for g in cases() {
        let x = seq(g.n * g.c_in * g.h * g.w, 0.1);
        let wt = seq(g.c_out * g.c_in * 9, 0.7);
        let bias = seq(g.c_out, 1.9);
        let want = naive(&x, &wt, Some(&bias), &g);
        let want_nb = naive(&x, &wt, None, &g);
        let gy = seq(want.len(), 2.3);
        for budget in budgets(&g) {
            let nb = Plan::new(&g).images(&g, budget);
            uneven += usize::from(nb > 1 && g.n % nb != 0);
            let mut out = vec![f64::NAN; want.len()];
            forward_in_chunks(&x, &wt, Some(&bias), &mut out, &g, budget).unwrap();
            assert_eq!(out, want, "{g:?} budget {budget}");
            let mut dx = vec![f64::NAN; x.len()];
            grad_input_in_chunks(&gy, &wt, &mut dx, &g, budget).unwrap();
            let mut dw = vec![f64::NAN; wt.len()];
            grad_weight_in_chunks(&x, &gy, &mut dw, &g, budget).unwrap();
            assert_eq!(dot(&want_nb, &gy), dot(&x, &dx));
            assert_eq!(dot(&want_nb, &gy), dot(&wt, &dw));
            assert_grads_match_definition(&x, &wt, &gy, &dx, &dw, &g, "winograd");
        }
    }
    assert!(uneven > 0, "some budget must split a batch unevenly");
}

/// A deterministic pseudo-random value in [-1, 1).
fn rnd(i: usize, seed: u64) -> f64 {
    let mut z = (i as u64).wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// Max |a - b| / (1 + |b|) over the elements.
fn max_rel(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(&a, &b)| (a as f64 - b).abs() / (1.0 + b.abs())).fold(0.0, f64::max)
}

/// Random data in f32 against the f64 definition. The bound (documented in docs/kernels.md):
/// |error| <= 1e-5 · (1 + |exact|) at 64 channels; plain f32 im2col stays near 2e-6 here, the
/// transforms' extra additions cost a few ulps of the row sums more.
#[test]
fn f32_error_against_f64_definition() {
    // (64, 16, 16, 8): the bench's shape, chunks of 32 images in 34 slots.
    for &(n, c, k, hw, p) in &[(2, 64, 32, 9, 1), (3, 16, 16, 8, 1), (1, 32, 8, 11, 2), (2, 8, 24, 6, 0), (64, 16, 16, 8, 1)] {
        let g = geo(n, c, hw, hw, k, [3, 3], [1, 1], [p, p], [1, 1], 1);
        let x: Vec<f64> = (0..n * c * hw * hw).map(|i| rnd(i, 1)).collect();
        let wt: Vec<f64> = (0..k * c * 9).map(|i| rnd(i, 2) * 0.3).collect();
        let gy: Vec<f64> = (0..n * k * g.oh * g.ow).map(|i| rnd(i, 3)).collect();
        let f = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        let (x32, w32, gy32) = (f(&x), f(&wt), f(&gy));
        // The references from the f32-rounded data, in f64.
        let (xr, wr, gr): (Vec<f64>, Vec<f64>, Vec<f64>) =
            (x32.iter().map(|&v| v as f64).collect(), w32.iter().map(|&v| v as f64).collect(), gy32.iter().map(|&v| v as f64).collect());
        let want = naive(&xr, &wr, None, &g);
        let mut out = vec![0f32; want.len()];
        forward(&x32, &w32, None, &mut out, &g).unwrap();
        assert!(max_rel(&out, &want) < 1e-5, "forward {g:?}: {}", max_rel(&out, &want));
        let mut dx = vec![0f32; x.len()];
        grad_input(&gy32, &w32, &mut dx, &g).unwrap();
        let mut dx64 = vec![0f64; x.len()];
        super::super::grad_input(&gr, &wr, &mut dx64, &g).unwrap();
        assert!(max_rel(&dx, &dx64) < 1e-5, "grad_input {g:?}: {}", max_rel(&dx, &dx64));
        let mut dw = vec![0f32; wt.len()];
        grad_weight(&x32, &gy32, &mut dw, &g).unwrap();
        let mut dw64 = vec![0f64; wt.len()];
        super::super::grad_weight(&xr, &gr, &mut dw64, &g).unwrap();
        // The weight gradient sums n·OH·OW products: scale the bound by the sum's magnitude.
        let scale = ((n * g.oh * g.ow) as f64).sqrt();
        assert!(max_rel(&dw, &dw64) < 1e-5 * scale, "grad_weight {g:?}: {}", max_rel(&dw, &dw64));
    }
}

/// Results do not depend on the thread count (chunks are fixed by the sizes), bit for bit.
#[test]
fn bitwise_identical_on_one_and_two_threads() {
    // Uneven chunks; the bench's shape (chunks of 32 images in 34 slots).
    for g in [geo(37, 16, 8, 8, 12, [3, 3], [1, 1], [1, 1], [1, 1], 1), geo(64, 16, 8, 8, 16, [3, 3], [1, 1], [1, 1], [1, 1], 1)] {
        bitwise_identical_on_thread_counts(g);
    }
}

fn bitwise_identical_on_thread_counts(g: Geometry) {
    let x: Vec<f32> = (0..g.n * g.c_in * 64).map(|i| rnd(i, 4) as f32).collect();
    let wt: Vec<f32> = (0..g.c_out * g.c_in * 9).map(|i| rnd(i, 5) as f32).collect();
    let gy: Vec<f32> = (0..g.n * g.c_out * 64).map(|i| rnd(i, 6) as f32).collect();
    let run = |threads| {
        in_pool(threads, || {
            let mut out = vec![0f32; gy.len()];
            forward(&x, &wt, None, &mut out, &g).unwrap();
            let mut dx = vec![0f32; x.len()];
            grad_input(&gy, &wt, &mut dx, &g).unwrap();
            let mut dw = vec![0f32; wt.len()];
            grad_weight(&x, &gy, &mut dw, &g).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            (bits(&out), bits(&dx), bits(&dw))
        })
    };
    assert!(Plan::new(&g).images(&g, CHUNK_BUDGET) < g.n, "several chunks");
    let one = run(1);
    for threads in [2, 2, 3, 4] {
        assert_eq!(one, run(threads), "{threads} threads");
    }
}
