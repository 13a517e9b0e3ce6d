//! Timing probe for the conv paths (not a test): `cargo test -p minigrad-kernels --profile devopt
//! -- --ignored --nocapture conv_path_timing`. One thread, float32, the bench's 64x16x8x8 -> 16
//! 3x3 'same' conv: every path that can run it (Winograd at several chunk budgets, the chunked
//! im2col + gemm, the per-image im2col + gemm), forward and both gradients; best of 30, µs.

use super::tests::{geo, in_pool};
use super::{per_image, winograd, COLS_BUDGET};
use std::time::Instant;

fn best(mut f: impl FnMut()) -> f64 {
    f();
    let mut b = f64::MAX;
    for _ in 0..30 {
        let t = Instant::now();
        for _ in 0..10 {
            f();
        }
        b = b.min(t.elapsed().as_secs_f64() / 10.0);
    }
    b * 1e6
}

#[test]
#[ignore = "timing probe, run by hand"]
fn conv_path_timing() {
    in_pool(1, || {
        for (n, c, k, hw) in [(64, 16, 16, 8), (64, 16, 16, 16), (32, 32, 32, 8)] {
            let g = geo(n, c, hw, hw, k, [3, 3], [1, 1], [1, 1], [1, 1], 1);
            let x: Vec<f32> = crate::test_data::pseudo_random(n * c * hw * hw, 1, -1.0, 2.0);
            let w: Vec<f32> = crate::test_data::pseudo_random(k * c * 9, 2, -0.25, 0.5);
            let gy: Vec<f32> = crate::test_data::pseudo_random(n * k * hw * hw, 3, -1.0, 2.0);
            let (mut out, mut dx, mut dw) = (vec![0f32; gy.len()], vec![0f32; x.len()], vec![0f32; w.len()]);
            println!("{n}x{c}x{hw}x{hw} -> {k}: fwd / input grad / weight grad, µs");
            for budget in [1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18] {
                let f = best(|| winograd::forward_in_chunks(&x, &w, None, &mut out, &g, budget).unwrap());
                let i = best(|| winograd::grad_input_in_chunks(&gy, &w, &mut dx, &g, budget).unwrap());
                let d = best(|| winograd::grad_weight_in_chunks(&x, &gy, &mut dw, &g, budget).unwrap());
                println!("  winograd budget 2^{:2}: {f:7.1} {i:7.1} {d:7.1}", budget.trailing_zeros());
            }
            let f = best(|| super::forward_in_chunks(&x, &w, None, &mut out, &g, COLS_BUDGET).unwrap());
            let i = best(|| super::grad_input_in_chunks(&gy, &w, &mut dx, &g, COLS_BUDGET).unwrap());
            let d = best(|| super::grad_weight_in_chunks(&x, &gy, &mut dw, &g, COLS_BUDGET).unwrap());
            println!("  im2col chunked:        {f:7.1} {i:7.1} {d:7.1}");
            let f = best(|| per_image::forward(&x, &w, None, &mut out, &g).unwrap());
            let i = best(|| per_image::grad_input(&gy, &w, &mut dx, &g).unwrap());
            let d = best(|| per_image::grad_weight(&x, &gy, &mut dw, &g).unwrap());
            println!("  im2col per image:      {f:7.1} {i:7.1} {d:7.1}");
        }
    });
}
