use super::*;

fn values(len: usize, seed: u64) -> Vec<f32> {
    // Irregular values (not small integers) so that a different summation order shows in the bits.
    (0..len).map(|i| ((i as u64 * 2654435761 + seed * 40503) % 1013) as f32 / 97.3 - 5.1).collect()
}

fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

/// dst (m×n) with strides `ds` = a (m×k, strides `as_`) @ b (k×n, strides `bs`), through
/// `gemm` with `parallel`, on `threads` threads; `start` is dst's initial content.
#[allow(clippy::too_many_arguments)]
fn run(m: usize, n: usize, k: usize, a: &[f32], as_: (isize, isize), b: &[f32], bs: (isize, isize), ds: (isize, isize), start: &[f32], accumulate: bool, parallel: bool, threads: usize) -> Vec<f32> {
    let mut d = start.to_vec();
    let o = Operands {
        dst: (SendPtr(d.as_mut_ptr()), ds.0, ds.1),
        a: (SendPtr(a.as_ptr() as *mut f32), as_.0, as_.1),
        b: (SendPtr(b.as_ptr() as *mut f32), bs.0, bs.1),
    };
    // SAFETY: the buffers hold every element the strides address (sizes below), dst is its own
    // vector, initialised.
    in_pool(threads, || unsafe { gemm(m, n, k, o, accumulate, 1.0, 0.0, parallel, false) });
    d
}

#[test]
fn panels_match_one_call_bitwise() {
    // The MLP's products, conv-like long-k ones, k over 512 (several kc slices), odd sizes;
    // 60x120x1030 would differ if cut into 60-column panels (gemm's small path: another kc).
    let shapes = [(60, 120, 1030), (16, 4096, 144), (4, 3000, 50), (64, 256, 784), (784, 256, 64), (256, 784, 64), (64, 256, 256), (256, 256, 64), (16, 144, 4096),
        (144, 1024, 16), (100, 70, 1030), (65, 500, 33), (3000, 20, 40), (2048, 96, 600)];
    for &(m, n, k) in &shapes {
        let a = values(m * k, 1);
        let b = values(k * n, 2);
        let start = values(m * n, 3);
        // a row-major or transposed, b row-major or transposed, dst row- or column-major; the
        // fourth is a Linear weight's gradient, g.t() @ x (cut by rows, `preferred_cut`).
        for (as_, bs, ds) in [((k as isize, 1), (n as isize, 1), (n as isize, 1)), ((1, m as isize), (1, k as isize), (1, m as isize)),
            ((k as isize, 1), (1, k as isize), (1, m as isize)), ((1, m as isize), (n as isize, 1), (n as isize, 1))] {
            for accumulate in [false, true] {
                let one = run(m, n, k, &a, as_, &b, bs, ds, &start, accumulate, false, 1);
                for threads in [2, 3, 4] {
                    let cut = run(m, n, k, &a, as_, &b, bs, ds, &start, accumulate, true, threads);
                    assert!(one.iter().zip(&cut).all(|(x, y)| x.to_bits() == y.to_bits()), "{m}x{n}x{k} {as_:?} {bs:?} {ds:?} acc {accumulate} on {threads} threads");
                }
            }
        }
    }
}

#[test]
fn plans_cover_the_long_dim_in_whole_tiles() {
    for &(m, n, k) in &[(64, 256, 784), (784, 256, 64), (17, 4000, 9), (2048, 2048, 2048), (100, 97, 5), (256, 784, 64), (64, 2000, 9)] {
        for threads in 2..9 {
            for prefer in [None, Some(true), Some(false)] {
                let Some(p) = plan(m, n, k, threads, prefer) else { continue };
                let (along, across) = if p.rows { (m, n) } else { (n, m) };
                assert!(p.count >= 2 && p.count <= threads, "{p:?}");
                assert_eq!(p.width % ALIGN, 0);
                assert!((p.count - 1) * p.width < along && p.count * p.width >= along, "{p:?} for {along}");
                // The longer dim, or else the preferred one, thick enough.
                if p.rows != (m >= n) {
                    assert!(prefer == Some(p.rows) && along >= threads * PREFER_MIN, "{p:?} for {prefer:?}");
                }
                // No panel falls into gemm's small-matrix path.
                let last = along - (p.count - 1) * p.width;
                assert!(across > SMALL || last > SMALL, "{p:?}");
            }
        }
    }
    let rows = plan(256, 784, 64, 2, Some(true)).unwrap();
    assert_eq!((rows.rows, rows.width, rows.count), (true, 128, 2), "the W1 gradient by rows");
    assert!(plan(64, 256, 256, 2, Some(true)).unwrap().rows, "g @ W2 by rows: two 32-row panels");
    assert!(!plan(32, 4096, 144, 2, Some(true)).unwrap().rows, "16-row panels are too thin: columns");
    assert_eq!(plan(64, 100, 512, 2, Some(true)).map(|p| p.rows), Some(true), "32x100 panels: not gemm's small path");
}

#[test]
fn no_cut_for_one_thread_or_gemm_special_shapes() {
    for prefer in [None, Some(true), Some(false)] {
        assert_eq!(plan(512, 512, 512, 1, prefer), None);
        assert_eq!(plan(512, 3, 512, 2, prefer), None, "a panel of 3 x 64 would take gemm's m·n <= 256 path");
        assert_eq!(plan(512, 512, 2, 2, prefer), None, "k <= 2 takes gemm's outer-product path");
        if prefer != Some(true) {
            assert_eq!(plan(64, 100, 512, 2, prefer), None, "a panel of 50 columns would take the small path");
        }
        assert_eq!(plan(40, 15, 10_000, 4, prefer), None, "nothing to cut");
        assert!(plan(16, 4096, 144, 2, prefer).is_some(), "the conv net's forward: 16 channels x 4096 pixels");
        assert!(plan(64, 256, 784, 2, prefer).is_some());
    }
}

#[test]
fn padded_panels_match_one_unpadded_call_bitwise() {
    // b column-major at a 1 KiB column stride (k = 256 f32: padded, per column panel or once for
    // row panels) against the same values at a stride that does not alias (read in place, one
    // call, one thread): 64x256 (the MLP's h @ W2.t(), column panels), 512x96 (row panels),
    // 64x40 (not cut: gemm's small path, padded once).
    let k = 256;
    for &(m, n) in &[(64usize, 256usize), (512, 96), (64, 40), (100, 300)] {
        let a = values(m * k, 4);
        let cols = values(n * k, 5);
        let lay = |stride: usize| {
            let mut b = vec![0f32; n * stride];
            for j in 0..n {
                b[j * stride..j * stride + k].copy_from_slice(&cols[j * k..(j + 1) * k]);
            }
            b
        };
        let (aliased, plain) = (lay(k), lay(k + 3));
        let go = |b: &[f32], stride: usize, pad: bool, parallel: bool, threads: usize| {
            let mut d = vec![f32::NAN; m * n];
            let o = Operands {
                dst: (SendPtr(d.as_mut_ptr()), n as isize, 1),
                a: (SendPtr(a.as_ptr() as *mut f32), k as isize, 1),
                b: (SendPtr(b.as_ptr() as *mut f32), 1, stride as isize),
            };
            // SAFETY: b holds n columns of `stride` >= k elements, a m·k, d m·n (its own vector).
            in_pool(threads, || unsafe { gemm(m, n, k, o, false, 1.0, 0.0, parallel, pad) });
            d.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        let want = go(&plain, k + 3, false, false, 1);
        for threads in [1, 2, 3, 4] {
            assert_eq!(go(&aliased, k, true, true, threads), want, "{m}x{n}x{k} on {threads} threads");
        }
    }
}
