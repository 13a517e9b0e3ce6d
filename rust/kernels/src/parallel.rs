//! When to go parallel, and the pointer wrapper that lets kernels hand memory to rayon.

/// Element count above which elementwise kernels split work over rayon's pool: where two
/// threads start to win for a copy-like op. Measured on this 2-core AVX-512 machine: one rayon
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

/// `for_chunks` with chunks of `grain` elements.
pub fn for_chunks_of(n: usize, min_par: usize, grain: usize, f: impl Fn(usize, usize) + Sync + Send) {
    use rayon::prelude::*;
    if n < min_par || rayon::current_num_threads() <= 1 {
        f(0, n);
        return;
    }
    let chunks = n.div_ceil(grain);
    (0..chunks).into_par_iter().for_each(|c| {
        let start = c * grain;
        f(start, (start + grain).min(n));
    });
}
