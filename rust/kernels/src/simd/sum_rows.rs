//! Column sums of float32 rows (sum over dim 0 of a contiguous matrix: the outer shape of
//! `reduce`), in a fixed cascade like `sum`'s: the rows go in groups of `GROUP` from the start
//! of each run of rows; within a group each column adds its rows one after another in float32
//! (the first row copied, the next ones added); the group's float32 partial is widened once and
//! added to the column's f64 accumulator. A column's order depends on the row index only, never
//! on the vector width or on which columns share a strip, so every instruction set, strip width
//! and thread count gives the same bits.
//!
//! Why: the previous sweep added four rows in float32 and the result into f64 at every fourth
//! row; the f64 accumulator's load, two widenings, add and store then cost more than the rows'
//! own adds. Here a strip of 64 columns keeps its partials in registers for 16 rows. Accuracy:
//! a float32 partial holds at most 16 elements (rounding error at most ~16 ulps of it), and
//! everything above it adds in f64, so the error does not grow with the row count (torch's
//! float32 cascade grows with its log).
//!
//! Plain loops, auto-vectorised: callers run them under `simd::exec` (the outer sweep does).

/// Rows per float32 partial.
pub const GROUP: usize = 16;
/// Columns per strip: four AVX-512 registers of partials (enough independent adds to hide
/// their latency), eight AVX2 ones.
const STRIP: usize = 64;

/// `accs[c] += ` rows `0..len` of column `c`, in the grouping above.
///
/// # Safety
/// For every `t < len`, `first.offset(t * stride)` starts `accs.len()` readable float32s.
#[inline(always)]
pub unsafe fn add_rows(accs: &mut [f64], first: *const f32, stride: isize, len: usize) {
    let w = accs.len();
    let mut t = 0;
    while t < len {
        let g = (len - t).min(GROUP);
        // SAFETY: row t of the run (the caller's contract).
        let p = first.offset(t as isize * stride);
        let mut c = 0;
        while c + STRIP <= w {
            strip::<STRIP>(&mut accs[c..c + STRIP], p.add(c), stride, g);
            c += STRIP;
        }
        while c + 16 <= w {
            strip::<16>(&mut accs[c..c + 16], p.add(c), stride, g);
            c += 16;
        }
        // A last strip of 8 (rows of 1000: 15 x 64 + 2 x 16 + 8), rather than 8 scalar
        // columns, each a chain of dependent adds.
        while c + 8 <= w {
            strip::<8>(&mut accs[c..c + 8], p.add(c), stride, g);
            c += 8;
        }
        for c in c..w {
            strip::<1>(&mut accs[c..c + 1], p.add(c), stride, g);
        }
        t += g;
    }
}

/// One strip of `S` columns over `g` rows (1 <= g <= GROUP) from `p`.
///
/// # Safety
/// Rows `p + d * stride` (d < g) start `S` readable float32s; `accs` holds `S`.
#[inline(always)]
unsafe fn strip<const S: usize>(accs: &mut [f64], p: *const f32, stride: isize, g: usize) {
    // SAFETY: S readable float32s at p (the caller's contract); unaligned reads.
    let mut part: [f32; S] = (p as *const [f32; S]).read_unaligned();
    for d in 1..g {
        // SAFETY: as above, row d of the group.
        let row: [f32; S] = (p.offset(d as isize * stride) as *const [f32; S]).read_unaligned();
        for k in 0..S {
            part[k] += row[k];
        }
    }
    for (a, &x) in accs.iter_mut().zip(&part) {
        *a += x as f64;
    }
}

/// The reference order, one column at a time (what every strip width must give).
#[cfg(test)]
pub(crate) fn add_rows_ref(accs: &mut [f64], x: &[f32], stride: usize, len: usize) {
    for (c, a) in accs.iter_mut().enumerate() {
        for g0 in (0..len).step_by(GROUP) {
            let mut part = x[g0 * stride + c];
            for t in g0 + 1..(g0 + GROUP).min(len) {
                part += x[t * stride + c];
            }
            *a += part as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_and_instruction_set_gives_the_reference_bits() {
        let x = crate::test_data::pseudo_random(200 * 1031, 77, -3.0, 6.0);
        for (w, len) in [(1, 1), (15, 16), (16, 17), (63, 33), (64, 5), (65, 16), (1000, 100), (1031, 199), (130, 1)] {
            let mut want = vec![0.5f64; w];
            add_rows_ref(&mut want, &x, 1031, len);
            for a in [crate::simd::arch(), pulp::Arch::Scalar] {
                let mut got = vec![0.5f64; w];
                // SAFETY: rows of 1031 elements, len <= 200 of them inside x, w <= 1031.
                a.dispatch(|| unsafe { add_rows(&mut got, x.as_ptr(), 1031, len) });
                assert!(got.iter().zip(&want).all(|(p, q)| p.to_bits() == q.to_bits()), "w={w} len={len}");
            }
        }
    }
}
