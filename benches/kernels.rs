//! `cargo bench -p minigrad-core`: the Rust kernels alone, without Python in the way.
//! The in-place vs out-of-place pair shows what the caching allocator saves: a fresh
//! 40 MB output would otherwise page-fault on first touch.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use minigrad_core::ops::binary::{binary_inplace_raw, binary_operand_, binary_raw, BinaryOp, Operand};
use minigrad_core::ops::unary::{unary_raw, unary_inplace_raw, UnaryOp};
use minigrad_core::ops::{copy, views, Arg};
use minigrad_core::{DType, Scalar, Tensor};
use std::hint::black_box;

fn randn(n: usize) -> Tensor {
    minigrad_core::ops::creation::manual_seed(0);
    minigrad_core::ops::creation::randn(&[n], DType::Float32).unwrap()
}

fn elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise_f32");
    for &n in &[1_000usize, 100_000, 10_000_000] {
        let a = randn(n);
        let b = randn(n);
        g.throughput(Throughput::Bytes((3 * 4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("add", n), &n, |bch, _| {
            bch.iter(|| black_box(binary_raw(BinaryOp::Add, &Arg::Tensor(a.clone()), &Arg::Tensor(b.clone()), None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("add_inplace", n), &n, |bch, _| {
            let x = copy::clone_raw(&a).unwrap();
            bch.iter(|| binary_inplace_raw(BinaryOp::Add, &x, &Arg::Tensor(b.clone()), None).unwrap())
        });
        g.throughput(Throughput::Bytes((2 * 4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("relu", n), &n, |bch, _| bch.iter(|| black_box(unary_raw(UnaryOp::Relu, &a).unwrap())));
        g.bench_with_input(BenchmarkId::new("relu_inplace", n), &n, |bch, _| {
            let x = copy::clone_raw(&a).unwrap();
            bch.iter(|| unary_inplace_raw(UnaryOp::Relu, &x).unwrap())
        });
    }
    g.finish();
}

fn strided(c: &mut Criterion) {
    let mut g = c.benchmark_group("strided_f32");
    let n = 2048;
    let a = minigrad_core::ops::creation::randn(&[n, n], DType::Float32).unwrap();
    let at = views::t_raw(&a).unwrap();
    let row = minigrad_core::ops::creation::randn(&[n], DType::Float32).unwrap();
    g.throughput(Throughput::Bytes((2 * 4 * n * n) as u64));
    g.bench_function("contiguous_copy_of_transpose_2048", |b| b.iter(|| black_box(copy::contiguous_raw(&at))));
    g.bench_function("add_broadcast_row_2048", |b| {
        b.iter(|| black_box(binary_raw(BinaryOp::Add, &Arg::Tensor(a.clone()), &Arg::Tensor(row.clone()), None).unwrap()))
    });
    g.bench_function("mul_scalar_transposed_2048", |b| {
        b.iter(|| black_box(binary_raw(BinaryOp::Mul, &Arg::Tensor(at.clone()), &Arg::Scalar(Scalar::Float(2.0)), None).unwrap()))
    });
    g.finish();
}

/// Small calls of the binary fast path (ops/binary/fast.rs), where the fixed cost is the
/// story: a row broadcast out of place, and in place on a borrowed operand (no handle clones,
/// no run plan) beside the general in-place entry it replaces for such calls.
fn small_calls(c: &mut Criterion) {
    let mut g = c.benchmark_group("small_calls_f32");
    let a = minigrad_core::ops::creation::randn(&[10, 100], DType::Float32).unwrap();
    let row = randn(100);
    g.bench_function("add_row_1000", |b| {
        b.iter(|| black_box(binary_raw(BinaryOp::Add, &Arg::Tensor(a.clone()), &Arg::Tensor(row.clone()), None).unwrap()))
    });
    let x = copy::clone_raw(&a).unwrap();
    g.bench_function("add_row_inplace_fast_1000", |b| b.iter(|| binary_operand_(BinaryOp::Add, &x, Operand::Tensor(&row), None).unwrap()));
    g.bench_function("add_row_inplace_general_1000", |b| {
        b.iter(|| binary_inplace_raw(BinaryOp::Add, &x, &Arg::Tensor(row.clone()), None).unwrap())
    });
    g.finish();
}

/// The vectorised transcendentals (float32) and their fused backward formulas.
fn transcendentals(c: &mut Criterion) {
    let mut g = c.benchmark_group("math_f32");
    for &n in &[10_000usize, 1_000_000] {
        let a = randn(n);
        let grad = randn(n);
        g.throughput(Throughput::Bytes((2 * 4 * n) as u64));
        for op in [UnaryOp::Exp, UnaryOp::Log, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh] {
            let x = if op == UnaryOp::Log { unary_raw(UnaryOp::Abs, &a).unwrap() } else { a.clone() };
            g.bench_with_input(BenchmarkId::new(op.def().name.to_string() + if op == UnaryOp::GeluTanh { "_tanh" } else { "" }, n), &n, |b, _| {
                b.iter(|| black_box(unary_raw(op, &x).unwrap()))
            });
        }
        g.throughput(Throughput::Bytes((3 * 4 * n) as u64));
        for op in [UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh] {
            let saved = if op.saves() == Some(minigrad_core::ops::unary::Saves::Result) { unary_raw(op, &a).unwrap() } else { a.clone() };
            let name = format!("{}{}_backward", op.def().name, if op == UnaryOp::GeluTanh { "_tanh" } else { "" });
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| black_box(op.backward(&grad, Some(&saved)).unwrap()))
            });
        }
    }
    g.finish();
}

/// Reductions over the last and the outer dim of a (n / 1000, 1000) float32 matrix, and softmax.
fn reductions(c: &mut Criterion) {
    use minigrad_core::ops::reduce;
    let mut g = c.benchmark_group("reduce_f32");
    for &n in &[100_000usize, 10_000_000] {
        let x = views::reshape_raw(&randn(n), &[(n / 1000) as i64, 1000]).unwrap();
        g.throughput(Throughput::Bytes((4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("sum", n), &n, |b, _| b.iter(|| black_box(reduce::sum_raw(&x, None, false, None).unwrap())));
        g.bench_with_input(BenchmarkId::new("sum_dim0", n), &n, |b, _| {
            b.iter(|| black_box(reduce::sum_raw(&x, Some(&[0]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("amax_dim-1", n), &n, |b, _| b.iter(|| black_box(reduce::amax_raw(&x, &[-1], false, true).unwrap())));
        g.bench_with_input(BenchmarkId::new("argmax_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::argmax(&x, Some(-1), false, true).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("logsumexp_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::logsumexp_raw(&x, &[-1], false).unwrap()))
        });
        g.throughput(Throughput::Bytes((2 * 4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("softmax_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::softmax_raw(&x, -1, None, false).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("log_softmax_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::softmax_raw(&x, -1, None, true).unwrap()))
        });
        g.throughput(Throughput::Bytes((4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("sum_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::sum_raw(&x, Some(&[-1]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("amax_dim0", n), &n, |b, _| b.iter(|| black_box(reduce::amax_raw(&x, &[0], false, true).unwrap())));
        // the contiguous-rows path with each reducer's own vector kernel (fold_wide)
        g.bench_with_input(BenchmarkId::new("amin_dim-1", n), &n, |b, _| b.iter(|| black_box(reduce::amax_raw(&x, &[-1], false, false).unwrap())));
        g.bench_with_input(BenchmarkId::new("mean_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::mean_raw(&x, Some(&[-1]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("norm_dim-1", n), &n, |b, _| {
            b.iter(|| black_box(reduce::vector_norm_raw(&x, 2.0, Some(&[-1]), false, None).unwrap()))
        });
    }
    g.finish();
}

/// conv2d forward and both gradients on the bench's shape (batch 64, 16 -> 16 channels, 8x8,
/// 3x3, padding 1) and the digits conv-net's first layer (1 -> 8 channels, 8x8).
fn conv(c: &mut Criterion) {
    use minigrad_core::ops::conv::{conv2d_input_grad_raw, conv2d_raw, conv2d_weight_grad_raw, Conv2dParams};
    let mut g = c.benchmark_group("conv2d_f32");
    let p = Conv2dParams { stride: [1, 1], padding: [1, 1], dilation: [1, 1], groups: 1 };
    for &(name, n, cin, cout) in &[("64x16x8x8->16", 64usize, 16usize, 16usize), ("64x1x8x8->8", 64, 1, 8)] {
        let x = views::reshape_raw(&randn(n * cin * 64), &[n as i64, cin as i64, 8, 8]).unwrap();
        let w = views::reshape_raw(&randn(cout * cin * 9), &[cout as i64, cin as i64, 3, 3]).unwrap();
        let y = conv2d_raw(&x, &w, None, &p).unwrap();
        g.throughput(Throughput::Elements((2 * n * cout * 64 * cin * 9) as u64));
        g.bench_function(BenchmarkId::new("forward", name), |b| b.iter(|| black_box(conv2d_raw(&x, &w, None, &p).unwrap())));
        g.bench_function(BenchmarkId::new("grad_input", name), |b| {
            b.iter(|| black_box(conv2d_input_grad_raw(&y, &w, x.shape(), &p).unwrap()))
        });
        g.bench_function(BenchmarkId::new("grad_weight", name), |b| {
            b.iter(|| black_box(conv2d_weight_grad_raw(&x, &y, w.shape(), &p).unwrap()))
        });
    }
    g.finish();
}

fn allocation(c: &mut Criterion) {
    let mut g = c.benchmark_group("allocator");
    g.bench_function("empty_40MB_reused", |b| b.iter(|| black_box(Tensor::empty(&[10_000_000], DType::Float32))));
    g.finish();
}

/// Float products that `matmul::panels` cuts over threads: the MLP 784-256-256-10's forward
/// (64x256x784) and weight gradient (784x256x64, a transposed operand), and a square 1024.
/// Run with RAYON_NUM_THREADS=1 and 2 to see the split.
fn matmul(c: &mut Criterion) {
    use minigrad_core::ops::linalg::mm_raw;
    let mut g = c.benchmark_group("matmul_f32");
    minigrad_core::ops::creation::manual_seed(0);
    for &(m, n, k, left_t) in &[(64usize, 256usize, 784usize, false), (784, 256, 64, true), (1024, 1024, 1024, false)] {
        let a = if left_t {
            views::t_raw(&minigrad_core::ops::creation::randn(&[k, m], DType::Float32).unwrap()).unwrap()
        } else {
            minigrad_core::ops::creation::randn(&[m, k], DType::Float32).unwrap()
        };
        let b = minigrad_core::ops::creation::randn(&[k, n], DType::Float32).unwrap();
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        g.bench_function(BenchmarkId::new("mm", format!("{m}x{n}x{k}")), |bch| bch.iter(|| black_box(mm_raw(&a, &b).unwrap())));
    }
    g.finish();
}

/// Reductions over outer dims (the engine's outer shape): dim 0 of a (n / 1000, 1000) float32
/// matrix (whole columns per thread), of a tall (n / 8, 8) one (fixed row chunks), and the
/// middle axis of a (10, n / 10000, 1000) tensor. Run with RAYON_NUM_THREADS=1 and 2.
fn outer_reductions(c: &mut Criterion) {
    use minigrad_core::ops::reduce;
    let mut g = c.benchmark_group("reduce_outer_f32");
    for &n in &[1_000_000usize] {
        let x = views::reshape_raw(&randn(n), &[(n / 1000) as i64, 1000]).unwrap();
        let tall = views::reshape_raw(&randn(n), &[(n / 8) as i64, 8]).unwrap();
        let cube = views::reshape_raw(&randn(n), &[10, (n / 10_000) as i64, 1000]).unwrap();
        g.throughput(Throughput::Bytes((4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("sum_dim0", n), &n, |b, _| {
            b.iter(|| black_box(reduce::sum_raw(&x, Some(&[0]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("amax_dim0", n), &n, |b, _| b.iter(|| black_box(reduce::amax_raw(&x, &[0], false, true).unwrap())));
        g.bench_with_input(BenchmarkId::new("mean_dim0", n), &n, |b, _| {
            b.iter(|| black_box(reduce::mean_raw(&x, Some(&[0]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("argmax_dim0", n), &n, |b, _| b.iter(|| black_box(reduce::argmax(&x, Some(0), false, true).unwrap())));
        g.bench_with_input(BenchmarkId::new("norm_dim0", n), &n, |b, _| {
            b.iter(|| black_box(reduce::vector_norm_raw(&x, 2.0, Some(&[0]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("sum_dim0_tall8", n), &n, |b, _| {
            b.iter(|| black_box(reduce::sum_raw(&tall, Some(&[0]), false, None).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("sum_dim1_of_3d", n), &n, |b, _| {
            b.iter(|| black_box(reduce::sum_raw(&cube, Some(&[1]), false, None).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, elementwise, strided, transcendentals, reductions, conv, allocation, small_calls, matmul, outer_reductions);
criterion_main!(benches);
