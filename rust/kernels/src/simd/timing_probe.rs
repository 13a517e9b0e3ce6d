//! Timing probe for the activations (not a test): `cargo test -p minigrad-kernels --profile
//! devopt -- --ignored --nocapture activation_timing`. One thread, float32, standard normal
//! inputs (as `minigrad bench elementwise` feeds them) and inputs all in |x| < 1; best of
//! 30 runs, ns per element.

use super::{map1, map2};
use crate::unary::*;
use std::time::Instant;

/// Standard normal samples (Box-Muller over the shared xorshift sequence).
fn normal(n: usize) -> Vec<f32> {
    let u = crate::test_data::pseudo_random(2 * n, 7, 0.0, 1.0);
    (0..n)
        .map(|i| {
            let (a, b) = (u[2 * i].max(1e-7) as f64, u[2 * i + 1] as f64);
            ((-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32
        })
        .collect()
}

fn best(n: usize, mut f: impl FnMut()) -> f64 {
    let reps = (2_000_000 / n).max(1);
    let mut b = f64::MAX;
    for _ in 0..30 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        b = b.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    b * 1e9 / n as f64
}

fn row(name: &str, xs: &[f32], f1: Option<&dyn Fn(&mut [f32], &[f32])>, f2: Option<&dyn Fn(&mut [f32], &[f32], &[f32])>) {
    let mut out = vec![0f32; xs.len()];
    let g = vec![1f32; xs.len()];
    let t = match (f1, f2) {
        (Some(f), _) => best(xs.len(), || f(&mut out, xs)),
        (_, Some(f)) => best(xs.len(), || f(&mut out, &g, xs)),
        _ => unreachable!(),
    };
    print!(" {name} {t:.3}");
}

fn table(xs: &[f32]) {
    row("sigmoid", xs, Some(&|o, x| map1(Sigmoid, o, x)), None);
    row("silu", xs, Some(&|o, x| map1(Silu, o, x)), None);
    row("gelu", xs, Some(&|o, x| map1(Gelu, o, x)), None);
    row("gelu_tanh", xs, Some(&|o, x| map1(GeluTanh, o, x)), None);
    row("silu'", xs, None, Some(&|o, g, x| map2(SiluGrad, o, g, x)));
    row("gelu'", xs, None, Some(&|o, g, x| map2(GeluGrad, o, g, x)));
    println!();
}

#[test]
#[ignore]
fn activation_timing() {
    for n in [10_000, 1_000_000] {
        let xs = normal(n);
        print!("normal {n}:");
        table(&xs);
        let small: Vec<f32> = xs.iter().map(|x| x.clamp(-1.0, 1.0)).collect();
        print!("|x|<=1 {n}:");
        table(&small);
    }
}
