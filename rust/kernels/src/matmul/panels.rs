//! One large float product split over threads by us, not by gemm's `Rayon` mode: the output is
//! cut into one panel per thread (along the dim the layouts favour, `preferred_cut`, or else
//! along the longer dim), each panel is one single-threaded gemm call, and the panels are
//! claimed from a shared counter (`parallel::for_split`: the calling thread works too, and a
//! worker that wakes late costs at most its panel, never a wait).
//!
//! Why: gemm's `Rayon` mode forks and joins twice per kc-deep slice of k (kc <= 512 here: one
//! fork-join packs the right operand, the next multiplies) and packs the left operand on the
//! calling thread alone in between. The products of a training step are short (the MLP's
//! 64x256x784 forward takes ~150 us on two threads), so those joins and the serial packing are a
//! large share of them; here a product costs one fork-join, and each thread packs only what its
//! panel reads (an operand gemm packs is cut, not packed whole by every thread: `preferred_cut`).
//!
//! Same bits on any thread count: on its general path gemm computes each output element as one
//! chain of fused multiply-adds over k, in slices of kc that depend on k alone
//! (`gemm_common::cache::kernel_params`), never on m or n or where the element sits in its tile.
//! A panel therefore gives its elements exactly the arithmetic the whole product gives them,
//! provided the panel and the whole product both take that general path; `plan` only cuts where
//! they do (gemm's other paths: m·n <= 256, k <= 2, a dim of 1, and both dims <= 64, whose
//! kc differs). `tests::panels_match_one_call_bitwise` holds the panels to the single call.

use super::super::parallel::{for_split, SendPtr};

/// Panel widths are multiples of this: whole SIMD vectors of gemm's microkernel rows (16 f32
/// on AVX-512) and whole 64-byte cache lines of a contiguous dst, so two threads never write one
/// line; finer than gemm's 48-row tile, so that two panels of 256 are 128 + 128, not 144 + 112.
const ALIGN: usize = 16;
/// The shorter output dim must exceed this for a cut: with every panel longer than `SMALL`, a
/// panel then has more than 256 elements and no dim of 1, out of reach of gemm's special paths.
/// (The conv net's forward product is 16 x 4096: its 16 output channels are the short dim.)
const MIN_SHORT: usize = 3;
/// gemm's small-matrix path (different kc) is taken when both dims are at most this.
const SMALL: usize = 64;
/// A preferred cut (`preferred_cut`) needs at least this many rows (columns) per thread; fewer
/// and the longer dim is cut instead (the 64-row products of a batch-64 MLP cut into two
/// 32-row panels: 38 µs against 43 by columns for g @ W2, 64x256x256).
const PREFER_MIN: usize = 32;

/// How one product is cut: `count` panels of `width` rows (`rows`) or columns, the last one
/// shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub rows: bool,
    pub width: usize,
    pub count: usize,
}

/// The cut of an (m×n) = (m×k)·(k×n) product for `threads` threads, or None for one call:
/// along `prefer` (true: rows, false: columns) where that dim gives every thread a panel of at
/// least `PREFER_MIN` lines, otherwise along the longer dim.
pub fn plan(m: usize, n: usize, k: usize, threads: usize, prefer: Option<bool>) -> Option<Plan> {
    if threads < 2 || k <= 2 || m.min(n) <= MIN_SHORT {
        return None;
    }
    if let Some(rows) = prefer {
        let (along, across) = if rows { (m, n) } else { (n, m) };
        if along >= threads * PREFER_MIN {
            if let Some((width, count)) = cut_along(along, across, threads) {
                return Some(Plan { rows, width, count });
            }
        }
    }
    let rows = m >= n;
    let (long, short) = if rows { (m, n) } else { (n, m) };
    cut_along(long, short, threads).map(|(width, count)| Plan { rows, width, count })
}

/// (width, count) of the panels that cut a dim of `along` lines for `threads` threads, the
/// other dim being `across` long; None where a panel would fall into gemm's small path.
fn cut_along(along: usize, across: usize, threads: usize) -> Option<(usize, usize)> {
    let mut count = threads.min(along / ALIGN);
    while count >= 2 {
        let width = along.div_ceil(count).next_multiple_of(ALIGN);
        let real = along.div_ceil(width);
        let last = along - (real - 1) * width;
        if real >= 2 && (across > SMALL || last > SMALL) {
            return Some((width, real));
        }
        count -= 1;
    }
    None
}

/// The dim to cut, from the layouts: rows of a row-major dst when b is row-major (columns of a
/// column-major dst when a is column-major: the same product transposed), else None (the longer
/// dim). A row panel of a row-major dst is one contiguous block, and such a b is read in place
/// by gemm (not packed), so every thread reading all of it duplicates no packing; column panels
/// instead interleave the two threads' writes row by row, which costs far more than the flops
/// when dst is the largest operand: the MLP's W1 gradient, g.t() @ x (256x784x64), took 199 µs
/// on two threads cut by columns and 123 by rows (each panel alone ~120). Where b is
/// column-major (a Linear layer's forward, x @ W.t()), gemm packs b, and column panels each pack
/// only their own part (64x256x784: 153 µs by columns, 173 by rows).
fn preferred_cut<T>(o: &Operands<T>) -> Option<bool> {
    if o.dst.2 == 1 && o.b.2 == 1 {
        Some(true)
    } else if o.dst.1 == 1 && o.a.1 == 1 {
        Some(false)
    } else {
        None
    }
}

/// The operands of `dst = a @ b` (or `dst = dst + a @ b` with `accumulate`), each a pointer with
/// its (row, column) strides in elements.
#[derive(Clone, Copy)]
pub struct Operands<T> {
    pub dst: (SendPtr<T>, isize, isize),
    pub a: (SendPtr<T>, isize, isize),
    pub b: (SendPtr<T>, isize, isize),
}

/// `dst = a @ b` (or `dst += a @ b` with `accumulate`) as one single-threaded gemm call, or, with
/// `parallel`, at least `GEMM_PAR_MIN_WORK` of work and more than one rayon thread, cut into
/// panels as `plan` says; shapes it will not cut go to gemm's own `Rayon` mode as before. With
/// `pad`, b is read through `with_padded` (its columns alias in L1): once for the whole product,
/// or, when the cut is by columns, each panel pads its own columns on its own thread.
///
/// # Safety
/// gemm's contract: for i < m, j < n, p < k every addressed element of a and b is readable, the
/// dst elements are distinct, writable, overlap neither input, and are initialised when
/// `accumulate`. m, n, k are non-zero. With `pad`, b is column-major (row stride 1).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm<T: Copy + Send + Sync + 'static>(m: usize, n: usize, k: usize, o: Operands<T>, accumulate: bool, one: T, zero: T, parallel: bool, pad: bool) {
    let big = m.saturating_mul(n).saturating_mul(k) >= super::GEMM_PAR_MIN_WORK;
    let threads = if parallel && big { rayon::current_num_threads() } else { 1 };
    let call = |m: usize, n: usize, o: Operands<T>, par: gemm::Parallelism| {
        let (alpha, beta) = if accumulate { (one, one) } else { (zero, one) };
        // SAFETY: the caller's contract, for this panel's rows/columns (a sub-block of the
        // product: same strides, offset pointers). read_dst = false (not `accumulate`) makes
        // gemm overwrite dst (dst := 1·a·b) without reading it.
        unsafe {
            gemm::gemm(
                m, n, k, o.dst.0.get(), o.dst.2, o.dst.1, accumulate, o.a.0.get(), o.a.2, o.a.1, o.b.0.get(), o.b.2, o.b.1,
                alpha, beta, false, false, false, par,
            )
        }
    };
    // b padded (when `pad`), then `call`: the copy holds the same values, so the same bits.
    let padded = |m: usize, n: usize, o: Operands<T>, par: gemm::Parallelism| {
        if !pad {
            return call(m, n, o, par);
        }
        // SAFETY: with `pad` b is column-major (contract), its n columns of k elements readable.
        unsafe { super::with_padded(o.b, n, k, |b| call(m, n, Operands { b, ..o }, par)) }
    };
    if threads < 2 {
        return padded(m, n, o, gemm::Parallelism::None);
    }
    let Some(p) = plan(m, n, k, threads, preferred_cut(&o)) else {
        return padded(m, n, o, gemm::Parallelism::Rayon(0));
    };
    if pad && p.rows {
        // Row panels all read the whole of b: pad it once, here.
        // SAFETY: as above; the panels below read the copy, which outlives them.
        return unsafe { super::with_padded(o.b, n, k, |b| cut(m, n, Operands { b, ..o }, p, &call)) };
    }
    cut(m, n, o, p, &padded);
}

/// Runs `call` on each panel of `p` (rows or columns of dst, with a's rows or b's columns).
fn cut<T: Copy>(m: usize, n: usize, o: Operands<T>, p: Plan, call: &(dyn Fn(usize, usize, Operands<T>, gemm::Parallelism) + Sync)) {
    let long = if p.rows { m } else { n };
    for_each_index(p.count, |i| {
        let (lo, hi) = (i * p.width, ((i + 1) * p.width).min(long));
        let at = |(ptr, rs, cs): (SendPtr<T>, isize, isize), along_rows: bool| {
            let off = lo as isize * if along_rows { rs } else { cs };
            (SendPtr(ptr.get().wrapping_offset(off)), rs, cs)
        };
        let q = if p.rows {
            Operands { dst: at(o.dst, true), a: at(o.a, true), b: o.b }
        } else {
            Operands { dst: at(o.dst, false), a: o.a, b: at(o.b, false) }
        };
        let (pm, pn) = if p.rows { (hi - lo, n) } else { (m, hi - lo) };
        call(pm, pn, q, gemm::Parallelism::None);
    });
}

/// Runs `f(i)` for every `i < count`, runs of consecutive indices on up to all of rayon's threads,
/// through `parallel::for_split`: the calling thread takes part and only waits (spinning) for
/// pieces already claimed. rayon's `par_iter` from a thread outside the pool instead queues the
/// whole job, blocks the caller, and wakes it at the end (two thread wake-ups per fork-join).
pub fn for_each_index(count: usize, f: impl Fn(usize) + Sync + Send) {
    // for_split hands out runs of whole multiples of 64 indices; 64·i stands for index i.
    for_split(count * 64, 0, |s, e| (s / 64..e / 64).for_each(&f));
}

#[cfg(test)]
mod tests;
