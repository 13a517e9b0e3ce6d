//! A register-tiled product for shallow convolutions: `dst[i][p] = Σ_r w[i][r] · cols[r][p]`
//! with few terms (K = Cin·KH·KW ≤ `MAX_K`, e.g. 27 for an RGB 3x3 stem).
//!
//! gemm's general kernels pack their operands and keep a 16x6 tile in registers over a deep k;
//! with k = 27 the packing and the tile loads and stores cost about as much as the arithmetic,
//! and 32 output channels split into 6-column tiles leave a 2-column remainder. Here a tile of
//! `MR` rows × `NR` pixels stays in registers for the whole (short) sum: per term, `NR / lanes`
//! vector loads of `cols`, `MR` broadcasts of `w` and `MR · NR / lanes` FMAs. The loops are
//! plain arrays that LLVM unrolls and vectorises under `simd::run`.
//!
//! Every output is `((w0·c0 + 0) + w1·c1) + ...` by FMA in term order, in the full tiles and in
//! the remainders alike, so the result does not depend on the tiling or the thread count.

use super::ConvElem;

/// Deepest sum this kernel is used for.
pub const MAX_K: usize = 64;
/// Rows (output channels) and pixels per register tile.
const MR: usize = 8;
const NR: usize = 16;

/// One full tile: `MR` rows of `w` (stride `k`), `k` rows of `cols` (stride `ps`) from the
/// tile's first pixel, `MR` rows of `dst` (stride `ps`).
#[inline(always)]
fn tile<T: ConvElem, const N: usize>(k: usize, w: &[T], cols: &[T], ps: usize, dst: &mut [T]) {
    // Each run of pixels copied into a local array and w read unchecked: with a checked
    // `w[i·k + r]` and a borrowed run, one build of this loop kept neither in registers (a
    // bounds check per term, the run reloaded per row: the 32x3x32x32 forward 714 -> 1727 us
    // on one thread, after an unrelated change to the crate moved it to another codegen unit).
    let w = &w[..MR * k];
    let mut acc = [[T::zero(); N]; MR];
    for r in 0..k {
        let c: [T; N] = *<&[T; N]>::try_from(&cols[r * ps..r * ps + N]).expect("N pixels");
        for (i, a) in acc.iter_mut().enumerate() {
            // SAFETY: i < MR and r < k, so i·k + r < MR·k = w.len().
            let wv = unsafe { *w.get_unchecked(i * k + r) };
            for (a, c) in a.iter_mut().zip(&c) {
                *a = wv.mul_add(*c, *a);
            }
        }
    }
    for (i, a) in acc.iter().enumerate() {
        dst[i * ps..i * ps + N].copy_from_slice(a);
    }
}

/// A remainder block of `mr × nr` (any sizes), same order of terms.
#[inline(always)]
fn block<T: ConvElem>(mr: usize, nr: usize, k: usize, w: &[T], cols: &[T], ps: usize, dst: &mut [T]) {
    for i in 0..mr {
        let line = &mut dst[i * ps..i * ps + nr];
        line.fill(T::zero());
        for r in 0..k {
            let wv = w[i * k + r];
            for (d, c) in line.iter_mut().zip(&cols[r * ps..r * ps + nr]) {
                *d = wv.mul_add(*c, *d);
            }
        }
    }
}

/// `dst[i·ps + p] = Σ_{r<k} w[i·k + r] · cols[r·ps + p]` for `i < m`, `p < n` (`n ≤ ps`).
pub fn product<T: ConvElem>(m: usize, n: usize, k: usize, w: &[T], cols: &[T], ps: usize, dst: &mut [T]) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(w.len() >= m * k && (k == 0 || cols.len() >= (k - 1) * ps + n) && dst.len() >= (m - 1) * ps + n && n <= ps);
    if k == 0 {
        for i in 0..m {
            dst[i * ps..i * ps + n].fill(T::zero());
        }
        return;
    }
    crate::simd::exec(Product { m, n, k, w, cols, ps, dst });
}

/// `product`'s loops as a `simd::exec` body, so that they are compiled with FMA and the wide
/// registers (a closure LLVM declines to inline would get neither: `mul_add` becomes a call).
struct Product<'a, T> {
    m: usize,
    n: usize,
    k: usize,
    w: &'a [T],
    cols: &'a [T],
    ps: usize,
    dst: &'a mut [T],
}

impl<T: ConvElem> crate::simd::Body for Product<'_, T> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let Product { m, n, k, w, cols, ps, dst } = self;
        let nr = if std::mem::size_of::<T>() == 4 { NR } else { NR / 2 };
        let full_n = n / nr * nr;
        let mut i = 0;
        while i < m {
            let mr = MR.min(m - i);
            let (wi, di) = (&w[i * k..], &mut dst[i * ps..]);
            if mr == MR {
                for p in (0..full_n).step_by(nr) {
                    if nr == NR {
                        tile::<T, NR>(k, wi, &cols[p..], ps, &mut di[p..]);
                    } else {
                        tile::<T, { NR / 2 }>(k, wi, &cols[p..], ps, &mut di[p..]);
                    }
                }
            } else {
                block(mr, full_n, k, wi, cols, ps, di);
            }
            if full_n < n {
                block(mr, n - full_n, k, wi, &cols[full_n..], ps, &mut di[full_n..]);
            }
            i += mr;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_sum_in_term_order() {
        for (m, n, k) in [(1, 1, 1), (6, 32, 27), (13, 70, 9), (32, 1024, 27), (5, 31, 0), (7, 100, 64)] {
            let ps = n + 3;
            let w: Vec<f64> = (0..m * k).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.5).collect();
            let cols: Vec<f64> = (0..k * ps).map(|i| ((i * 5 % 13) as f64 - 6.0) * 0.25).collect();
            let mut dst = vec![f64::NAN; (m - 1) * ps + n];
            product(m, n, k, &w, &cols, ps, &mut dst);
            for i in 0..m {
                for p in 0..n {
                    let mut want = 0.0;
                    for r in 0..k {
                        want = f64::mul_add(w[i * k + r], cols[r * ps + p], want);
                    }
                    assert_eq!(dst[i * ps + p].to_bits(), want.to_bits(), "({m}, {n}, {k}) at ({i}, {p})");
                }
            }
        }
    }
}
