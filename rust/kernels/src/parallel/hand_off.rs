//! `for_split`'s hand-off to helpers that spin between calls, like OpenMP's workers.
//!
//! A call publishes itself in one global slot; helpers (rayon jobs on the global pool, one per
//! thread beyond the caller) poll that slot, claim pieces from the call's counter, and after
//! their last piece keep polling for [`HELPER_SPIN`] before they return to rayon. Calls that
//! come back to back (a training step, `minigrad bench`) thus find a helper already running:
//! no job is injected and no sleeping thread woken (a futex and an inter-processor interrupt,
//! several µs in a VM). The caller never waits for a helper to arrive: it claims pieces itself,
//! and a helper that comes late finds less, or nothing, to do. It waits only for pieces a helper
//! has claimed. Which thread runs a piece cannot change a result (elementwise pieces).
//!
//! Protocol (all on `SeqCst`, so the two checks below see each other): a helper announces
//! itself in `ACTIVE` and then re-reads the slot, and only then touches the call; the caller
//! empties the slot and then waits for `ACTIVE` to reach 0 before its stack frame (the call)
//! goes away. A helper that read the slot too late sees it empty (or a newer live call).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a helper keeps polling after its last piece before it returns to rayon (whose
/// workers then yield a few rounds and sleep). Bounded, so an idle process burns no CPU after
/// this; long enough to span the few µs between calls of a loop of ops, and the ~100 µs of
/// small single-threaded ops between two split products of a training step (the MLP's second
/// layer forward and its backward: relu, the 10-wide layer, cross-entropy and its backward).
/// At 50 µs the helper had gone back to rayon by then, and the first product of the backward
/// ran mostly on the calling thread while a worker was woken: the MLP step on two threads took
/// 882-890 µs at 50 µs, 845-849 at 200, 851-853 at 1000 (loaded machine, `chrt -f 50`).
pub const HELPER_SPIN: Duration = Duration::from_micros(200);

/// One split call, on the caller's stack while it is published.
struct Call<'a> {
    next: AtomicUsize,
    pieces: usize,
    per: usize,
    n: usize,
    f: &'a (dyn Fn(usize, usize) + Sync),
    /// The first panic of a piece, re-raised by the caller after the join (a panic must not
    /// unwind out of a rayon job: rayon would abort the process).
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Call<'_> {
    /// Claims and runs pieces until none are left.
    fn work(&self) {
        loop {
            let p = self.next.fetch_add(1, SeqCst);
            if p >= self.pieces {
                return;
            }
            let (s, e) = (p * self.per, ((p + 1) * self.per).min(self.n));
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (self.f)(s, e))) {
                self.next.store(self.pieces, SeqCst);
                self.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(payload);
                return;
            }
        }
    }
}

/// The published call (null when none); its lifetime is the publishing `for_split`'s frame.
static SLOT: AtomicPtr<Call<'static>> = AtomicPtr::new(null_mut());
/// Bumped at each publication, so a helper can tell a new call from the one it just served
/// (successive calls from one loop sit at the same stack address).
static GENERATION: AtomicUsize = AtomicUsize::new(0);
/// Helpers inside a call (between their announcement and their last touch of it).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Helpers alive (spawned and not yet returned to rayon).
static HELPERS: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` over `pieces` pieces of `per` elements of `[0, n)` with up to `helpers` helpers
/// from rayon's global pool, the calling thread working too. False (nothing ran) when another
/// call holds the slot; the caller then splits another way. Call it only from outside rayon's
/// pools (the helpers are the global pool's threads).
pub(super) fn split(n: usize, per: usize, pieces: usize, helpers: usize, f: &(dyn Fn(usize, usize) + Sync)) -> bool {
    let call = Call { next: AtomicUsize::new(0), pieces, per, n, f, panic: Mutex::new(None) };
    let ptr = &call as *const Call<'_> as *mut Call<'static>;
    if SLOT.compare_exchange(null_mut(), ptr, SeqCst, SeqCst).is_err() {
        return false;
    }
    GENERATION.fetch_add(1, SeqCst);
    recruit(helpers);
    let start = Instant::now();
    call.work();
    // The join: no new helper can enter once the slot is empty; wait for those inside.
    SLOT.store(null_mut(), SeqCst);
    let spin = start.elapsed().max(super::SPIN_MIN);
    let waiting = Instant::now();
    while ACTIVE.load(SeqCst) != 0 {
        if waiting.elapsed() < spin {
            for _ in 0..16 {
                std::hint::spin_loop();
            }
        } else {
            // A helper descheduled mid-piece: let it have the core.
            std::thread::yield_now();
        }
    }
    if let Some(payload) = call.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(payload);
    }
    true
}

/// Spawns helpers until `want` are alive.
fn recruit(want: usize) {
    let mut alive = HELPERS.load(SeqCst);
    while alive < want {
        match HELPERS.compare_exchange_weak(alive, alive + 1, SeqCst, SeqCst) {
            Ok(_) => {
                rayon::spawn(helper);
                alive += 1;
            }
            Err(now) => alive = now,
        }
    }
}

/// A helper's life: serve each newly published call, and return to rayon after
/// `HELPER_SPIN` without one.
fn helper() {
    let mut served = None;
    let mut idle_since = Instant::now();
    loop {
        let generation = GENERATION.load(SeqCst);
        if served != Some(generation) {
            served = Some(generation);
            let ptr = SLOT.load(SeqCst);
            if !ptr.is_null() {
                ACTIVE.fetch_add(1, SeqCst);
                if SLOT.load(SeqCst) == ptr {
                    // SAFETY: the slot still holds `ptr` after this helper announced itself
                    // in ACTIVE, so its caller has not yet emptied the slot, and it waits for
                    // ACTIVE to reach 0 after emptying it: the call outlives this use.
                    unsafe { &*ptr }.work();
                }
                ACTIVE.fetch_sub(1, SeqCst);
            }
            idle_since = Instant::now();
            continue;
        }
        for _ in 0..8 {
            std::hint::spin_loop();
        }
        if idle_since.elapsed() > HELPER_SPIN {
            break;
        }
    }
    HELPERS.fetch_sub(1, SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    /// How many times each index of `[0, n)` was visited by one hand-off call (retried while
    /// another test's call holds the slot: a refused call runs nothing).
    fn visits(n: usize, per: usize, helpers: usize) -> Vec<u8> {
        let hits: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
        let f = |s: usize, e: usize| (s..e).for_each(|i| {
            hits[i].fetch_add(1, Relaxed);
        });
        while !split(n, per, n.div_ceil(per), helpers, &f) {
            std::thread::yield_now();
        }
        hits.into_iter().map(AtomicU8::into_inner).collect()
    }

    #[test]
    fn back_to_back_calls_visit_every_index_once() {
        for round in 0..300 {
            for (n, per) in [(1, 64), (1000, 64), (4096, 128), (100_003, 50_048)] {
                let v = visits(n, per, 1 + round % 3);
                assert!(v.iter().all(|&h| h == 1), "round {round} n {n}: {:?}", v.iter().position(|&h| h != 1));
            }
        }
    }

    #[test]
    fn concurrent_and_nested_callers_each_get_their_split() {
        // Threads outside the pool call at once: one holds the slot, the others split through
        // rayon's scope; a split inside a piece (on the caller or on a helper) nests the same way.
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for _ in 0..50 {
                        let n = 20_000 + 64 * t;
                        let hits: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
                        super::super::for_split(n, 0, |s, e| {
                            super::super::for_split(e - s, 0, |a, b| (s + a..s + b).for_each(|i| {
                                hits[i].fetch_add(1, Relaxed);
                            }))
                        });
                        assert!(hits.iter().all(|h| h.load(Relaxed) == 1));
                    }
                });
            }
        });
    }

    #[test]
    fn a_panicking_piece_reaches_the_caller_and_frees_the_slot() {
        for bad in [0, 1, 40, 63] {
            let r = catch_unwind(|| {
                let f = |s: usize, _: usize| assert!(s / 64 != bad, "piece {bad}");
                while !split(4096, 64, 64, 2, &f) {
                    std::thread::yield_now();
                }
            });
            let msg = r.expect_err("the panic reaches the caller");
            assert_eq!(msg.downcast_ref::<String>().map(String::as_str), Some(format!("piece {bad}").as_str()));
            assert!(visits(5000, 64, 2).iter().all(|&h| h == 1), "later calls still work");
        }
    }
}
