//! Timing probes of single kernels, printed as tables (no criterion: best-of loops, like
//! `fork_join`): `chrt -f 50 cargo bench --profile devopt -p minigrad-kernels --bench probes
//! [-- SECTION...]`, SECTION one of `sum`, `reduce`, `activation`, `conv`, `matmul` (all when
//! none).
//! They were `#[ignore]`d tests; they assert nothing, and speed claims still come from
//! `minigrad bench`. One thread unless a line says `t2`.

use minigrad_kernels::conv::bench_paths::{conv_path, ConvPath};
use minigrad_kernels::conv::Geometry;
use minigrad_kernels::parallel::SendPtr;
use minigrad_kernels::reduce::reduce;
use minigrad_kernels::reducers::{norm_kind, ArgExtreme, Extreme, Norm, SumProd};
use minigrad_kernels::simd::math::ExpShift;
use minigrad_kernels::simd::sum::{map_sum, sum, sum_map, sum_sq};
use minigrad_kernels::simd::{map1, map2};
use minigrad_kernels::unary::{Gelu, GeluGrad, GeluTanh, Sigmoid, Silu, SiluGrad};
use minigrad_kernels::test_data::pseudo_random;
use minigrad_kernels::Arg;
use std::hint::black_box;
use std::time::Instant;

/// Best over `rounds` of the mean seconds per call of `reps` back-to-back calls of `f`.
fn best(rounds: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut b = f64::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        b = b.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    b
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool")
}

/// `simd::sum` and friends over 1e6 float32: ns per element, best of 50.
fn sums() {
    let x: Vec<f32> = (0..1_000_000).map(|i| ((i * 7919) % 2000) as f32 / 1000.0 - 1.0).collect();
    let mut y = vec![0f32; x.len()];
    let time = |name: &str, f: &mut dyn FnMut() -> f64| {
        let t = best(50, 1, || {
            black_box(f());
        });
        println!("{name:>10}: {:.3} ns/elem", t * 1e9 / x.len() as f64);
    };
    time("sum", &mut || sum(&x));
    time("sum rows", &mut || x.chunks(1000).map(sum).sum());
    time("sum_sq", &mut || sum_sq(&x));
    time("exp_sum", &mut || sum_map(ExpShift(1.0), &x));
    time("map_sum", &mut || map_sum(ExpShift(1.0), &mut y, &x));
    time("map1", &mut || {
        map1(ExpShift(1.0), &mut y, &x);
        0.0
    });
}

/// Reductions of a (rows, 1000) float32 matrix through `reduce::reduce`, softmax and an exp
/// map, on one and two threads: best of 200 calls.
fn reductions() {
    for rows in [10usize, 100, 1000] {
        let x = pseudo_random(rows * 1000, 0x2545F4914F6CDD1D, -1.0, 2.0);
        let mut out = vec![0f32; rows.max(1000)];
        let mut idx = vec![0i64; rows.max(1000)];
        let mut y = vec![0f32; rows * 1000];
        let src = || Arg { base: x.as_ptr() as *mut f32, strides: &[1000, 1], offset: 0 };
        let shape = [rows, 1000];
        let (last, first, all) = (&[false, true], &[true, false], &[true, true]);
        let time = |name: &str, f: &mut dyn FnMut()| {
            let t = best(200, 1, f);
            println!("{name:>14} {rows:>5}x1000: {:8.2} us  {:.3} ns/elem", t * 1e6, t * 1e9 / (rows * 1000) as f64);
        };
        // SAFETY (every call below): x and y hold rows x 1000 elements, out and idx
        // max(rows, 1000), enough for any of these reductions' outputs.
        let run = |p: &str, o: *mut f32, ip: *mut i64, yp: *mut f32| {
            time(&format!("{p}sum dim -1"), &mut || unsafe { reduce(SumProd::<f32, f32, false>::new(o, None), &shape, src(), last) });
            time(&format!("{p}sum dim 0"), &mut || unsafe { reduce(SumProd::<f32, f32, false>::new(o, None), &shape, src(), first) });
            time(&format!("{p}sum all"), &mut || unsafe { reduce(SumProd::<f32, f32, false>::new(o, None), &shape, src(), all) });
            time(&format!("{p}norm dim -1"), &mut || unsafe { reduce(Norm::<f32, f32, { norm_kind::TWO }>::new(o, 2.0), &shape, src(), last) });
            time(&format!("{p}amax dim -1"), &mut || unsafe { reduce(Extreme::<f32, true> { out: SendPtr(o) }, &shape, src(), last) });
            time(&format!("{p}amax dim 0"), &mut || unsafe { reduce(Extreme::<f32, true> { out: SendPtr(o) }, &shape, src(), first) });
            time(&format!("{p}argmax dim -1"), &mut || unsafe { reduce(ArgExtreme::<f32, true> { values: None, indices: SendPtr(ip) }, &shape, src(), last) });
            time(&format!("{p}softmax -1"), &mut || unsafe { minigrad_kernels::softmax::softmax(x.as_ptr(), yp, rows, 1000, 1, false) });
            time(&format!("{p}logsoftmax -1"), &mut || unsafe { minigrad_kernels::softmax::softmax(x.as_ptr(), yp, rows, 1000, 1, true) });
        };
        pool(1).install(|| {
            run("", out.as_mut_ptr(), idx.as_mut_ptr(), y.as_mut_ptr());
            time("exp map1", &mut || map1(ExpShift(0.5), &mut y, &x));
        });
        // Wall clock on two threads: meaningful only on an idle machine.
        pool(2).install(|| run("t2 ", out.as_mut_ptr(), idx.as_mut_ptr(), y.as_mut_ptr()));
    }
}

/// Standard normal samples (Box-Muller over the xorshift sequence).
fn normal(n: usize) -> Vec<f32> {
    let u = pseudo_random(2 * n, 7, 0.0, 1.0);
    (0..n)
        .map(|i| {
            let (a, b) = (u[2 * i].max(1e-7) as f64, u[2 * i + 1] as f64);
            ((-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32
        })
        .collect()
}

/// The vectorised activations and two gradients, ns per element (best of 30), on standard
/// normal inputs (as `minigrad bench elementwise` feeds them) and on inputs clamped to |x| <= 1.
fn activations() {
    type F1 = fn(&mut [f32], &[f32]);
    type F2 = fn(&mut [f32], &[f32], &[f32]);
    let ones: [(&str, F1); 4] = [
        ("sigmoid", |o, x| map1(Sigmoid, o, x)),
        ("silu", |o, x| map1(Silu, o, x)),
        ("gelu", |o, x| map1(Gelu, o, x)),
        ("gelu_tanh", |o, x| map1(GeluTanh, o, x)),
    ];
    let twos: [(&str, F2); 2] = [("silu'", |o, g, x| map2(SiluGrad, o, g, x)), ("gelu'", |o, g, x| map2(GeluGrad, o, g, x))];
    pool(1).install(|| {
        for n in [10_000, 1_000_000] {
            let xs = normal(n);
            let small: Vec<f32> = xs.iter().map(|x| x.clamp(-1.0, 1.0)).collect();
            for (label, xs) in [("normal", &xs), ("|x|<=1", &small)] {
                let (mut out, g) = (vec![0f32; n], vec![1f32; n]);
                let reps = (2_000_000 / n).max(1);
                print!("{label} {n}:");
                for (name, f) in ones {
                    print!(" {name} {:.3}", best(30, reps, || f(&mut out, xs)) * 1e9 / n as f64);
                }
                for (name, f) in twos {
                    print!(" {name} {:.3}", best(30, reps, || f(&mut out, &g, xs)) * 1e9 / n as f64);
                }
                println!();
            }
        }
    });
}

/// Every conv path that can run a 3x3 'same' float32 conv (Winograd at several chunk budgets,
/// the chunked im2col + gemm, the per-image im2col + gemm), forward and both gradients, for the
/// bench's 64x16x8x8 -> 16 and two neighbours: best of 30 rounds of 10, µs; then max pooling.
fn conv_paths() {
    pool(1).install(|| {
        for (n, c, k, hw) in [(64, 16, 16, 8), (64, 16, 16, 16), (32, 32, 32, 8)] {
            let g = Geometry { n, c_in: c, h: hw, w: hw, c_out: k, kh: 3, kw: 3, oh: hw, ow: hw, stride: [1, 1], padding: [1, 1], dilation: [1, 1], groups: 1 };
            let x = pseudo_random(n * c * hw * hw, 1, -1.0, 2.0);
            let w = pseudo_random(k * c * 9, 2, -0.25, 0.5);
            let gy = pseudo_random(n * k * hw * hw, 3, -1.0, 2.0);
            let (mut out, mut dx, mut dw) = (vec![0f32; gy.len()], vec![0f32; x.len()], vec![0f32; w.len()]);
            println!("{n}x{c}x{hw}x{hw} -> {k}: fwd / input grad / weight grad, µs");
            let paths = [1usize << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18].map(|b| (format!("winograd budget 2^{:2}", b.trailing_zeros()), ConvPath::Winograd(b)));
            let more = [("im2col chunked".to_string(), ConvPath::Im2colChunked), ("im2col per image".to_string(), ConvPath::Im2colPerImage)];
            for (name, path) in paths.into_iter().chain(more) {
                let us = |f: &mut dyn FnMut()| best(30, 10, f) * 1e6;
                let f = us(&mut || conv_path(path, 0, &x, &w, &gy, &mut out, &g));
                let i = us(&mut || conv_path(path, 1, &x, &w, &gy, &mut dx, &g));
                let d = us(&mut || conv_path(path, 2, &x, &w, &gy, &mut dw, &g));
                println!("  {name:<22} {f:7.1} {i:7.1} {d:7.1}");
            }
        }
        // max_pool2d of the bench's 64x16x8x8: the 2x2 stride-2 windows (the stacked-planes
        // loop) and 3x3 stride-2 ones with padding 1 (the general runs), same output size.
        use minigrad_kernels::pool::{max_forward, max_forward_values, MaxGeometry};
        let x = pseudo_random(64 * 16 * 64, 4, -1.0, 2.0);
        let (mut out, mut idx) = (vec![0f32; 64 * 16 * 16], vec![0i64; 64 * 16 * 16]);
        println!("max_pool2d 64x16x8x8 -> 4x4: values / with indices, µs");
        for (name, k, p) in [("2x2 stride 2", 2, 0), ("3x3 stride 2 pad 1", 3, 1)] {
            let g = MaxGeometry { h: 8, w: 8, oh: 4, ow: 4, kernel: [k, k], stride: [2, 2], padding: [p, p], dilation: [1, 1] };
            let v = best(30, 20, || max_forward_values(&x, &g, &mut out)) * 1e6;
            let i = best(30, 20, || max_forward(&x, &g, &mut out, &mut idx)) * 1e6;
            println!("  {name:<22} {v:7.1} {i:7.1}");
        }
    });
}

/// The MLP 784-256-256-10's products at batch 64 (a Linear layer's forward `x @ W.t()`, its
/// weight gradient `g.t() @ x`, its input gradient `g @ W`) through `matmul::float_gemm`: one
/// thread, then from this (the main) thread on rayon's global pool, as the Python thread calls
/// them (the hand-off path): as `panels::plan` cuts them, and forced into two row or two column
/// panels. Best of 30 rounds of 20 calls, µs. Run the built binary itself, `RAYON_NUM_THREADS=2
/// chrt -f 50 target/devopt/deps/probes-* matmul`: under `cargo bench` (same flags) the helper
/// never took a panel here and every two-thread figure read as one thread's.
fn products() {
    use minigrad_kernels::matmul::{float_gemm, panels::for_each_index, Strides};
    // (name, m, n, k, a strides, b strides)
    let cases: [(&str, usize, usize, usize, (isize, isize), (isize, isize)); 5] = [
        ("x @ W1.t()", 64, 256, 784, (784, 1), (1, 784)),
        ("h @ W2.t()", 64, 256, 256, (256, 1), (1, 256)),
        ("g.t() @ x", 256, 784, 64, (1, 256), (784, 1)),
        ("g.t() @ h", 256, 256, 64, (1, 256), (256, 1)),
        ("g @ W2", 64, 256, 256, (256, 1), (256, 1)),
    ];
    for (name, m, n, k, (a_rs, a_cs), (b_rs, b_cs)) in cases {
        let a = pseudo_random(m * k, 1, -1.0, 2.0);
        let b = pseudo_random(k * n, 2, -1.0, 2.0);
        let mut d = vec![0f32; m * n];
        let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs, a_cs, b_rs, b_cs };
        let dp = SendPtr(d.as_mut_ptr());
        // SAFETY (every product below): a, b, d hold m·k, k·n, m·n elements, which the strides
        // and the panel offsets stay inside; each panel writes its own rows or columns of d.
        let whole = || unsafe { float_gemm(m, n, k, dp.get(), a.as_ptr(), b.as_ptr(), s, false, true, (1.0, 0.0)) };
        let forced = |rows: bool| {
            let (along, w) = if rows { (m, m / 2) } else { (n, (n / 2).next_multiple_of(16)) };
            for_each_index(2, |i| {
                let (lo, hi) = (i * w, ((i + 1) * w).min(along));
                let (pm, pn, ao, bo, dofs) = if rows { (hi - lo, n, lo as isize * a_rs, 0, (lo * n) as isize) } else { (m, hi - lo, 0, lo as isize * b_cs, lo as isize) };
                unsafe { float_gemm(pm, pn, k, dp.get().offset(dofs), a.as_ptr().offset(ao), b.as_ptr().offset(bo), s, false, false, (1.0, 0.0)) }
            })
        };
        let us = |f: &mut dyn FnMut()| best(30, 20, f) * 1e6;
        let t1 = pool(1).install(|| us(&mut || whole()));
        let (tn, rows, cols) = (us(&mut || whole()), us(&mut || forced(true)), us(&mut || forced(false)));
        let t = rayon::current_num_threads();
        println!("{name:>11} {m}x{n}x{k}: t1 {t1:7.1}  t{t} {tn:7.1}  t{t} rows {rows:7.1}  t{t} cols {cols:7.1}");
        // The same product into a column-major dst (gemm then packs a, not b).
        let sc = Strides { dst_rs: 1, dst_cs: m as isize, ..s };
        let colmajor = || unsafe { float_gemm(m, n, k, dp.get(), a.as_ptr(), b.as_ptr(), sc, false, true, (1.0, 0.0)) };
        let c1 = pool(1).install(|| us(&mut || colmajor()));
        let cn = us(&mut || colmajor());
        println!("{:>11} column-major dst: t1 {c1:7.1}  t{t} {cn:7.1}", "");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; every other argument picks sections by name.
    let picks: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let sections: [(&str, fn()); 5] = [("sum", sums), ("reduce", reductions), ("activation", activations), ("conv", conv_paths), ("matmul", products)];
    for (name, run) in sections {
        if picks.is_empty() || picks.iter().any(|p| name.contains(p.as_str())) {
            println!("== {name}");
            run();
        }
    }
}
