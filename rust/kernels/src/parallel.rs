//! When to go parallel, and the pointer wrapper that lets kernels hand memory to rayon.

mod hand_off;
pub use hand_off::HELPER_SPIN;

/// Element count above which the fixed-chunk kernels (reductions, softmax, rows, gathers) split
/// work over rayon's pool; elementwise ops use [`PAR_SPLIT_MIN`] and [`for_split`]. Where two
/// threads started to win for a copy-like op with 32k-element tasks. Measured on this 2-core AVX-512 machine: one rayon
/// fork-join costs t_p = 4.6 us, relu_ t_e = 0.087 ns per element in cache, so halving the
/// work pays from n = 2 t_p / t_e = 105k elements; 2^17 leaves a margin (near break-even the
/// gain is nil and the fork-join cost grows with load).
pub const PAR_MIN_ELEMS: usize = 1 << 17;
/// Elements per parallel task; fixed (not derived from the thread count) so that reductions
/// combine the same partial sums in the same order on every machine: results are deterministic.
pub const GRAIN: usize = 1 << 15;

/// Smallest chunk an elementwise op is split into, however costly its elements.
const MIN_GRAIN: usize = 2048;

/// (threshold, chunk) for an elementwise op whose element costs `cost` times a copy's work:
/// costlier elements go parallel at proportionally smaller sizes, in smaller chunks.
/// Elementwise results do not depend on the split (each element is computed alone).
pub fn elementwise_split(cost: usize) -> (usize, usize) {
    let cost = cost.max(1);
    ((PAR_MIN_ELEMS / cost).max(MIN_GRAIN), (GRAIN / cost).max(MIN_GRAIN))
}

/// Element count from which an elementwise op goes parallel through [`for_split`], for an op
/// whose element costs what one element of in-place relu_ costs (one stream read and written
/// in place). Measured on this 2-core AVX-512 VM (two threads, both libraries' pools at a
/// real-time priority so the other jobs on the machine did not interleave): the split costs
/// about 5-8 us of wall time (waking a worker, the caller spinning for the last piece), and
/// relu_ takes 0.043 ns per element from L2, so at 1e5 elements relu_ is 4.3 us alone and 7.4 us
/// split, at 2.5e5 about 10.8 alone and 11.0 split; 2^18 is that break-even. Kernels pass
/// their streams as the cost (out-of-place unary and in-place binary 2, binary 3: add of 1e5
/// went from 15.8 to 12.6 us split), the transcendentals their `MathOp::cost`.
/// Re-measured 2026-11-27 with the leaner per-call path (quiet machine, `minigrad bench
/// elementwise --threads 2 --compare torch`, the two builds one after the other): at 2^17
/// instead of 2^18, 1e5 elements relu 10.3 -> 7.7 us, relu_ 6.6 -> 4.2, add_ 10.9 -> 7.9,
/// mul_ 10.5 -> 8.0, add_row_ 9.1 -> 7.6 (torch 4.6-6.5); 1e4 and the 1e6 cases unchanged.
/// Swept again 2026-11-27 (h-gelu3; busy machine, load 9-10, `chrt -f 50`, two threads, two
/// rounds, the value read from the environment in a throwaway build): 2^15 / 2^16 / 2^17, us,
/// relu_ 1e5 5.65,5.43 / 5.15,5.35 / 4.44,4.41; add_ 1e5 6.29,7.25 / 6.01,6.21 / 6.10,6.13;
/// mul_ 1e5 6.00,6.73 / 6.05,6.25 / 5.82,5.96; add_row_ 1e5 5.37,5.86 / 5.15,5.43 / 4.79,5.12;
/// relu, add, mul, add_row 1e5 and gelu 1e4/1e5 within noise of each other. 2^17 kept (1e4
/// cases do not split at any of the three).
/// Lowered to 2^16 on 2026-11-28 (quiet machine, load ~1, `chrt -f 50`, two threads, `minigrad
/// bench elementwise --case "relu_ 1e5" --repeat 31`, the value read from the environment in a
/// throwaway build, five rounds alternating): relu_ 1e5 at 2^17 4.26-4.39 µs (one thread),
/// at 2^16 3.22-3.66 µs split, torch 3.8-4.9 (its OpenMP pool splits 1e5 too). With the helpers
/// of `hand_off` spinning between calls the split costs about 1.1 µs here, which 400 KB of relu_
/// repays. Only in-place unary maps and fills (cost 1) move at the bench's sizes: ops of cost 2
/// and more already split at 1e5 and still do not at 1e4.
pub const PAR_SPLIT_MIN: usize = 1 << 16;

/// Pieces per thread in [`for_split`]: one each (the caller's spinning wait makes more, smaller
/// pieces cost more than they balance: relu_ 1e6 split 29.6 us in two pieces, 33.2 in four).
const PIECES_PER_THREAD: usize = 1;

/// Longest piece of [`for_split`], in elements: a large op is cut into pieces claimed in turn,
/// so a thread slowed by something else on its core (an interrupt, another process) does less
/// of the work instead of holding up the call; one claim per 4 MB of float32 costs nothing.
/// Measured 2026-11-27 (seventh session, quiet machine, two threads, `minigrad bench
/// elementwise --case "add_ 1e7" --case "mul_ 1e7"`, two rounds, the piece length read from
/// the environment in a throwaway build): one piece per thread add_ 1e7 1.02 / 1.07 of torch,
/// mul_ 1e7 1.00 / 0.98; 2^20-element pieces 0.98 / 0.98 and 1.00 / 0.97 (memory bound: within
/// noise of each other, never worse).
const MAX_PIECE: usize = 1 << 20;

/// Element count from which an elementwise op whose element costs `cost` relu_ elements goes
/// parallel through [`for_split`].
pub fn split_threshold(cost: usize) -> usize {
    (PAR_SPLIT_MIN / cost.max(1)).max(MIN_GRAIN)
}

/// Split boundaries fall on multiples of this many elements: 64 elements are a whole number of
/// 64-byte cache lines for every dtype, so two threads never write into one line.
const SPLIT_ALIGN: usize = 64;

/// Runs `f(start, end)` over `[0, n)` for an elementwise op, whose results do not depend on the
/// split: one contiguous piece per thread (cache-line aligned), claimed in order from a shared
/// counter, with the calling thread working too (`in_place_scope`) while `threads - 1` pool
/// workers are woken for the rest. A worker that wakes late finds less (or nothing) left, so a
/// descheduled thread costs at most its piece, not the call. This replaced 32k-element rayon
/// tasks that the caller only waited on (relu_ 1e6 on two threads: 45.9 -> 29.6 us, torch 31.6).
/// Reductions keep `for_chunks` (fixed chunks, fixed combination order).
/// From outside rayon's pools (the Python thread) the pieces go to helpers that spin between
/// calls instead (`hand_off`): back-to-back calls then cost no wake-up (fork-join 3-7 us ->
/// 0.1-0.3 us, `benches/fork_join.rs`).
pub fn for_split(n: usize, min_par: usize, f: impl Fn(usize, usize) + Sync + Send) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = rayon::current_num_threads();
    if n < min_par.max(2 * SPLIT_ALIGN) || threads <= 1 {
        f(0, n);
        return;
    }
    let per = n.div_ceil(threads * PIECES_PER_THREAD).min(MAX_PIECE).next_multiple_of(SPLIT_ALIGN);
    let pieces = n.div_ceil(per);
    // From outside the pools (the Python thread), hand off to helpers that spin between calls.
    if rayon::current_thread_index().is_none() && hand_off::split(n, per, pieces, threads - 1, &f) {
        return;
    }
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let work = || loop {
        let p = next.fetch_add(1, Ordering::Relaxed);
        if p >= pieces {
            break;
        }
        f(p * per, ((p + 1) * per).min(n));
        done.fetch_add(1, Ordering::Release);
    };
    rayon::in_place_scope(|s| {
        for _ in 1..threads.min(pieces) {
            s.spawn(|_| work());
        }
        let start = std::time::Instant::now();
        work();
        // Spin (bounded) while workers finish the pieces they claimed rather than block at once:
        // a blocked caller sleeps, and waking it costs an inter-processor interrupt, which
        // in a VM costs about as much as a piece of work.
        let limit = start.elapsed().max(SPIN_MIN);
        let waiting = std::time::Instant::now();
        while done.load(Ordering::Acquire) < pieces && waiting.elapsed() < limit {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        }
    });
}

/// The caller spins for the other pieces at least this long (and as long as its own took).
const SPIN_MIN: std::time::Duration = std::time::Duration::from_micros(20);

/// A raw pointer that may cross into rayon tasks.
#[derive(Clone, Copy)]
pub struct SendPtr<T>(pub *mut T);
// SAFETY: kernels give each task a disjoint set of output elements to write and only read
// inputs; the op layer guarantees outputs do not overlap inputs (or are exactly the same
// elements, in which case each element is read then written by the one task that owns it).
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// Runs `f(start, end)` over `[0, n)` in fixed-size chunks, in parallel when `n` is large.
pub fn for_chunks(n: usize, min_par: usize, f: impl Fn(usize, usize) + Sync + Send) {
    for_chunks_of(n, min_par, GRAIN, f)
}

/// `for_chunks` with chunks of `grain` elements (through [`for_tasks`]: the chunks are fixed,
/// only who runs each one depends on the threads).
pub fn for_chunks_of(n: usize, min_par: usize, grain: usize, f: impl Fn(usize, usize) + Sync + Send) {
    if n < min_par || rayon::current_num_threads() <= 1 {
        f(0, n);
        return;
    }
    let grain = grain.max(1);
    for_tasks(n.div_ceil(grain), true, |c| f(c * grain, ((c + 1) * grain).min(n)));
}

/// One claim cursor per participant of [`for_tasks`], on its own cache line (the participants
/// bump their own cursors at the same time).
#[repr(align(64))]
struct Cursor(std::sync::atomic::AtomicUsize);

/// The caller spins for tasks other threads claimed at least this long (and as long as its own
/// share took) before it blocks: waking a blocked thread costs an inter-processor interrupt.
const TASK_SPIN_MIN: std::time::Duration = std::time::Duration::from_micros(20);

/// Runs `f(t)` once for every task `t < tasks`: on the calling thread alone when `parallel` is
/// false or the pool has one thread, otherwise on the caller and up to `threads - 1` pool
/// workers. The driver of the fixed-chunk kernels (reductions, softmax rows): tasks are fixed
/// by the caller (never by the thread count), so a kernel that gives each task its own output
/// (its rows, or its slot of partials combined in task order afterwards, [`map_tasks`]) gets the
/// same bits on any number of threads.
///
/// Participant `i` of `p` owns the contiguous tasks `[i·tasks/p, (i+1)·tasks/p)` and claims
/// them one at a time from its own cursor, then helps the others through theirs. The caller is
/// participant 0 and works at once (`in_place_scope`) instead of blocking while the pool runs
/// the job (rayon's `par_iter` from outside the pool: the caller sleeps and must be woken, as
/// must a sleeping worker). Owning a contiguous range keeps each thread on the same part of the
/// input call after call (its own L2 holds it: sum of 1e6 float32 is 2 MB per thread here) and
/// reading forward (the prefetcher's pattern); the helping makes a late or descheduled worker
/// cost only what it had not claimed yet.
pub fn for_tasks(tasks: usize, parallel: bool, f: impl Fn(usize) + Sync + Send) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let p = if parallel { rayon::current_num_threads().min(tasks) } else { 1 };
    if p <= 1 {
        (0..tasks).for_each(f);
        return;
    }
    let bound = |i: usize| i * tasks / p;
    let cursors: Vec<Cursor> = (0..p).map(|i| Cursor(AtomicUsize::new(bound(i)))).collect();
    let done = AtomicUsize::new(0);
    let work = |me: usize| {
        for k in 0..p {
            let i = (me + k) % p;
            let (cursor, end) = (&cursors[i].0, bound(i + 1));
            // A cheap look first: once a range is used up, nobody bumps its cursor again.
            while cursor.load(Ordering::Relaxed) < end {
                let t = cursor.fetch_add(1, Ordering::Relaxed);
                if t >= end {
                    break;
                }
                f(t);
                done.fetch_add(1, Ordering::Release);
            }
        }
    };
    // From outside the pools (the Python thread): one contiguous range of tasks per participant,
    // handed to `for_split`'s helpers, which spin between calls (hand_off.rs): back-to-back
    // reductions then wake no sleeping worker (the scope below: 3-7 us a call).
    if rayon::current_thread_index().is_none() {
        let per = tasks.div_ceil(p);
        let range = |s: usize, e: usize| (s..e).for_each(&f);
        if hand_off::split(tasks, per, tasks.div_ceil(per), p - 1, &range) {
            return;
        }
    }
    rayon::in_place_scope(|s| {
        let work = &work;
        for i in 1..p {
            s.spawn(move |_| work(i));
        }
        let start = std::time::Instant::now();
        work(0);
        // Everything is claimed; spin (bounded) while the others finish theirs.
        let limit = start.elapsed().max(TASK_SPIN_MIN);
        let waiting = std::time::Instant::now();
        while done.load(Ordering::Acquire) < tasks && waiting.elapsed() < limit {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        }
    });
}

/// Runs `f(start, end)` over `[0, n)` in one piece per thread (at most), through
/// [`for_tasks`] (from the Python thread: the hand-off's spinning helpers): piece `i` ends at
/// the multiple of `align` nearest to `(i + 1)·n / p`, so two threads share no `align` block
/// and the pieces differ by at most `align` (`for_split` rounds its one piece length up, which
/// leaves 64 of 100 outputs to one thread). For kernels whose results do not depend on the
/// split: the reductions whose every output is folded whole by one piece.
pub fn for_parts(n: usize, align: usize, f: impl Fn(usize, usize) + Sync + Send) {
    let align = align.max(1);
    let p = rayon::current_num_threads().min(n.div_ceil(align)).max(1);
    let bound = |i: usize| if i >= p { n } else { ((i * n / p + align / 2) / align * align).min(n) };
    for_tasks(p, true, |i| {
        let (s, e) = (bound(i), bound(i + 1));
        if s < e {
            f(s, e);
        }
    });
}

/// `f(t)` for every task `t < tasks` through [`for_tasks`], the results in task order (each
/// written to its own slot): the partials of a reduction, combined afterwards in a fixed order.
pub fn map_tasks<A: Copy + Send + Sync>(tasks: usize, parallel: bool, init: A, f: impl Fn(usize) -> A + Sync + Send) -> Vec<A> {
    let mut out = vec![init; tasks];
    let slots = SendPtr(out.as_mut_ptr());
    // SAFETY: t < tasks = out.len(), and for_tasks runs each t exactly once, so each slot is
    // written by one thread; `out` outlives the call and is read only after it returns.
    for_tasks(tasks, parallel, |t| unsafe { *slots.get().add(t) = f(t) });
    out
}

#[cfg(test)]
mod task_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    #[test]
    fn every_task_runs_once() {
        for threads in [1, 2, 3, 4] {
            for tasks in [0, 1, 2, 3, 5, 64, 1001] {
                let runs: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                pool(threads).install(|| for_tasks(tasks, true, |t| {
                    runs[t].fetch_add(1, Ordering::Relaxed);
                }));
                assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1), "threads {threads} tasks {tasks}");
            }
        }
    }

    #[test]
    fn results_come_back_in_task_order() {
        for threads in [1, 2, 3, 4] {
            let v = pool(threads).install(|| map_tasks(777, true, 0usize, |t| t * t));
            assert_eq!(v, (0..777).map(|t| t * t).collect::<Vec<_>>());
        }
    }

    #[test]
    fn not_parallel_runs_in_order_on_the_calling_thread() {
        let seen = Mutex::new(vec![]);
        pool(4).install(|| {
            let caller = std::thread::current().id();
            for_tasks(50, false, |t| {
                assert_eq!(std::thread::current().id(), caller);
                seen.lock().unwrap().push(t);
            })
        });
        assert_eq!(seen.into_inner().unwrap(), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn chunks_cover_the_range_in_grain_steps() {
        for threads in [1, 3] {
            let seen = Mutex::new(vec![]);
            pool(threads).install(|| for_chunks_of(10_007, 0, 1000, |s, e| seen.lock().unwrap().push((s, e))));
            let mut v = seen.into_inner().unwrap();
            v.sort();
            let want: Vec<_> = if threads == 1 { vec![(0, 10_007)] } else { (0..11).map(|c| (c * 1000, (c * 1000 + 1000).min(10_007))).collect() };
            assert_eq!(v, want);
        }
    }

    #[test]
    fn a_panicking_task_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| pool(2).install(|| for_tasks(16, true, |t| assert!(t != 11, "task 11"))));
        assert!(r.is_err());
    }

    #[test]
    fn from_outside_the_pools_every_task_runs_once_and_in_order() {
        // A thread of no pool (the Python thread's case): the ranges go to the hand-off's helpers
        // on the global pool (or, while another test holds the slot, to the scope).
        assert!(rayon::current_thread_index().is_none());
        for round in 0..200 {
            for tasks in [1, 2, 3, 7, 64, 1001] {
                let runs: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                for_tasks(tasks, true, |t| {
                    runs[t].fetch_add(1, Ordering::Relaxed);
                });
                assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1), "round {round} tasks {tasks}");
            }
            assert_eq!(map_tasks(777, true, 0usize, |t| t * 3), (0..777).map(|t| t * 3).collect::<Vec<_>>());
        }
        let r = std::panic::catch_unwind(|| for_tasks(16, true, |t| assert!(t != 11, "task 11")));
        assert!(r.is_err());
        assert_eq!(map_tasks(5, true, 0, |t| t + 1), vec![1, 2, 3, 4, 5], "the slot is free again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The pieces `for_split` hands out, sorted, in a pool of `threads`.
    fn pieces(threads: usize, n: usize, min_par: usize) -> Vec<(usize, usize)> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let seen = Mutex::new(vec![]);
        pool.install(|| for_split(n, min_par, |s, e| seen.lock().unwrap().push((s, e))));
        let mut v = seen.into_inner().unwrap();
        v.sort();
        v
    }

    #[test]
    fn split_covers_every_index_once_on_aligned_boundaries() {
        for threads in [1, 2, 3, 4] {
            for n in [0, 1, 127, 128, 129, 1000, 4096, 100_003, 1 << 20] {
                let v = pieces(threads, n, 0);
                let mut at = 0;
                for &(s, e) in &v {
                    assert_eq!(s, at, "threads {threads} n {n}: {v:?}");
                    assert!(e > s || n == 0);
                    assert!(s % SPLIT_ALIGN == 0);
                    at = e;
                }
                assert_eq!(at, n, "threads {threads} n {n}: {v:?}");
                if threads == 1 || n < 2 * SPLIT_ALIGN {
                    assert_eq!(v.len(), 1, "one piece, on the calling thread");
                } else {
                    assert!(v.len() >= threads.min(n / SPLIT_ALIGN).min(2), "threads {threads} n {n}: {v:?}");
                }
            }
        }
    }

    #[test]
    fn parts_cover_every_index_once_one_per_thread_on_aligned_boundaries() {
        for threads in [1, 2, 3, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (n, align) in [(0, 16), (1, 16), (15, 16), (100, 16), (100, 1), (1000, 64), (1001, 7)] {
                let seen = Mutex::new(vec![]);
                pool.install(|| for_parts(n, align, |s, e| seen.lock().unwrap().push((s, e))));
                let mut v = seen.into_inner().unwrap();
                v.sort();
                let mut at = 0;
                for &(s, e) in &v {
                    assert!(s == at && e > s && (s % align == 0), "threads {threads} n {n} align {align}: {v:?}");
                    assert!(e - s <= n.div_ceil(threads) + align, "balanced: {v:?}");
                    at = e;
                }
                assert_eq!(at, n, "threads {threads} n {n}: {v:?}");
                assert!(v.len() <= threads);
            }
        }
        // From outside the pools (the hand-off): 100 outputs in 16s on two threads are 48 + 52.
        let seen = Mutex::new(vec![]);
        for_parts(100, 16, |s, e| seen.lock().unwrap().push((s, e)));
        let mut v = seen.into_inner().unwrap();
        v.sort();
        if rayon::current_num_threads() == 2 {
            assert_eq!(v, vec![(0, 48), (48, 100)]);
        }
        assert_eq!(v.last().map(|l| l.1), Some(100));
    }

    #[test]
    fn split_below_threshold_is_one_call() {
        assert_eq!(pieces(4, 1000, 1001), vec![(0, 1000)]);
        assert!(pieces(4, 1001, 1001).len() > 1);
    }

    #[test]
    fn costlier_ops_split_earlier_but_not_below_the_floor() {
        assert!(split_threshold(10) < split_threshold(1));
        assert_eq!(split_threshold(1_000_000), MIN_GRAIN);
        assert_eq!(split_threshold(0), split_threshold(1));
    }
}
