//! The cost of one `parallel::for_split` fork-join, without Python or tensors in the way:
//! `RAYON_NUM_THREADS=2 chrt -f 50 cargo bench --profile devopt -p minigrad-kernels --bench fork_join`.
//!
//! Calls come back to back, as in `minigrad bench` (and in a training loop): each line is the
//! median over rounds of a tight loop of calls, for a kernel that does nothing (the fork-join
//! alone) and for relu_ over n float32 elements split (`min_par` 0) and on one thread.

use minigrad_kernels::parallel::for_split;
use minigrad_kernels::parallel::SendPtr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// Median µs per call of `f` over `rounds` rounds of `loops` calls.
fn time(rounds: usize, loops: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..loops {
        f();
    }
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..loops {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / loops as f64
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Pieces run, and pieces run by another thread than the caller (a helper).
static PIECES: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

fn relu_(xs: &mut [f32], min_par: usize) {
    let p = SendPtr(xs.as_mut_ptr());
    let caller = std::thread::current().id();
    for_split(xs.len(), min_par, |s, e| {
        PIECES[0].fetch_add(1, Relaxed);
        if std::thread::current().id() != caller {
            PIECES[1].fetch_add(1, Relaxed);
        }
        // SAFETY: for_split hands out disjoint [s, e) ranges inside xs.
        let part = unsafe { std::slice::from_raw_parts_mut(p.get().add(s), e - s) };
        // under the detected instruction set (AVX-512 here), as the elementwise kernels run
        minigrad_kernels::simd::run(|| {
            for x in part {
                *x = if *x < 0.0 { 0.0 } else { *x };
            }
        });
    });
}

fn main() {
    let threads = rayon::current_num_threads();
    let (rounds, loops) = (15, 2000);
    println!("threads {threads}; median of {rounds} rounds of {loops} back-to-back calls, us per call");
    let empty = time(rounds, loops, || for_split(1 << 20, 0, |s, e| {
        std::hint::black_box((s, e));
    }));
    println!("fork-join alone (empty pieces)        {empty:8.2}");
    for n in [100_000usize, 250_000, 1_000_000] {
        let mut xs: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        PIECES.iter().for_each(|c| c.store(0, Relaxed));
        let split = time(rounds, loops.min(2000 * 100_000 / n), || relu_(&mut xs, 0));
        let (all, off) = (PIECES[0].swap(0, Relaxed), PIECES[1].swap(0, Relaxed));
        let alone = time(rounds, loops.min(2000 * 100_000 / n), || relu_(&mut xs, usize::MAX));
        let share = 100.0 * off as f64 / all.max(1) as f64;
        println!("relu_ {n:>9}: split {split:8.2}  one thread {alone:8.2}  (split: {share:.0}% of pieces run by a helper)");
    }
    // The reductions' driver, `for_tasks`: from outside the pools it hands its ranges to the same
    // spinning helpers (before 2026-11-27 it woke pool workers through a rayon scope).
    let tasks = time(rounds, loops, || minigrad_kernels::parallel::for_tasks(32, true, |t| {
        std::hint::black_box(t);
    }));
    println!("for_tasks alone (32 empty tasks)      {tasks:8.2}");
}
