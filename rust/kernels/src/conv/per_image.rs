//! im2col + gemm one image at a time, the product transposed so that gemm writes NCHW.
//!
//! `out_nᵀ [P, Cout] = cols_nᵀ [P, K] @ Wᵀ [K, Cout]` (K = Cin_g·KH·KW): stored column-major,
//! `out_nᵀ` IS image n's [Cout, P] block of the NCHW output, and `cols_nᵀ` column-major is
//! the [K, P] column matrix as im2col writes it. So there is no scatter of a [Cout, nb·P]
//! product back to NCHW (which cost as much as the product itself for the 3-channel stem conv
//! of the bench, 32x3x32x32), the long dim P is gemm's m (the one its microkernel vectorises),
//! and each image's columns (K·P elements) stay in the cache between unfold and product.
//!
//! Images run in parallel, each task unfolding into its own buffer and calling a single-threaded
//! gemm; a batch of one lets gemm split the product instead. Every output element is computed
//! by one task in an order fixed by the sizes, so results do not depend on the thread count.

use super::{gemm_with, im2col, scratch::Buf, small_k, ConvElem, Geometry, Mat, GEMM_PAR_WORK};
use crate::error::Result;

/// Smallest output plane (OH·OW) for which the per-image gemm is used: below it, gemm's
/// m = P is too short and the chunked path's one wide product wins.
pub const MIN_PIXELS: usize = 256;

/// Whether `g`'s weight gradient runs here (a gemm per image).
pub fn suits(g: &Geometry) -> bool {
    g.oh * g.ow >= MIN_PIXELS
}

/// Whether the forward runs here: large planes, or shallow sums (`small_k`, which has no
/// per-call packing, so small planes suit it too).
pub fn suits_forward(g: &Geometry) -> bool {
    suits(g) || (g.oh * g.ow > 0 && g.rows_g() <= small_k::MAX_K)
}

/// Whether the input gradient runs here (its sum runs over Cout_g).
pub fn suits_input_grad(g: &Geometry) -> bool {
    suits(g) || (g.oh * g.ow > 0 && g.cout_g() <= small_k::MAX_K)
}

/// Runs `f(i, out_i)` for every image, in parallel over images when the job is big enough;
/// `f` is told whether it may split its own product over threads.
fn for_images<T: ConvElem>(out: &mut [T], per_image: usize, n: usize, work: usize, f: impl Fn(usize, &mut [T], bool) -> Result<()> + Sync + Send) -> Result<()> {
    if per_image == 0 {
        return Ok(());
    }
    if n > 1 && work >= GEMM_PAR_WORK && rayon::current_num_threads() > 1 {
        super::try_for_each_chunk(out, per_image, true, |i, o| f(i, o, false))
    } else {
        out.chunks_mut(per_image).enumerate().try_for_each(|(i, o)| f(i, o, true))
    }
}

/// Forward: `out[n] = conv(x[n], w) + bias`, one image per task.
pub fn forward<T: ConvElem>(x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T], g: &Geometry) -> Result<()> {
    let (p, rows, cout_g) = (g.pixels(), g.rows_g(), g.cout_g());
    let img_in = g.c_in * g.h * g.w;
    let work = g.n.saturating_mul(p).saturating_mul(g.c_out).saturating_mul(rows);
    for_images(out, g.c_out * p, g.n, work, |i, o, threads| {
        let mut cols = Buf::<T>::new(&[g.c_in * g.kh * g.kw, p])?;
        im2col(&x[i * img_in..(i + 1) * img_in], g.c_in, g, &mut cols, p);
        for grp in 0..g.groups {
            if rows <= small_k::MAX_K {
                small_k::product(cout_g, p, rows, &w[grp * cout_g * rows..], &cols[grp * rows * p..], p, &mut o[grp * cout_g * p..]);
                continue;
            }
            // a = cols_gᵀ: element (pixel, r) is cols[(grp·rows + r)·P + pixel].
            let a = Mat { data: &cols[grp * rows * p..], rs: 1, cs: p };
            // b = W_gᵀ: element (r, co) is w[(grp·Cout_g + co)·rows + r].
            let b = Mat { data: &w[grp * cout_g * rows..], rs: 1, cs: rows };
            gemm_with(threads, p, cout_g, rows, &mut o[grp * cout_g * p..], (1, p), a, b, false);
        }
        if let Some(bias) = bias {
            for (plane, b) in o.chunks_mut(p).zip(bias) {
                plane.iter_mut().for_each(|v| *v += *b);
            }
        }
        Ok(())
    })
}

/// Input gradient, one image per task: `cols_nᵀ [P, K] = grad_nᵀ [P, Cout_g] @ W_g [Cout_g, K]`
/// (column-major: the [K, P] column matrix), folded back by col2im. `dx` is overwritten.
pub fn grad_input<T: ConvElem>(grad: &[T], w: &[T], dx: &mut [T], g: &Geometry) -> Result<()> {
    let (p, rows, cout_g) = (g.pixels(), g.rows_g(), g.cout_g());
    let img_in = g.c_in * g.h * g.w;
    let taps = super::taps(g);
    let k = taps.len();
    let work = g.n.saturating_mul(p).saturating_mul(g.c_out).saturating_mul(rows);
    // For `small_k`: each group's Wᵀ, [rows][Cout_g].
    let shallow = cout_g <= small_k::MAX_K;
    let wt: Vec<T> = if shallow {
        (0..g.groups * rows * cout_g).map(|at| {
            let (grp, r, co) = (at / (rows * cout_g), at / cout_g % rows, at % cout_g);
            w[(grp * cout_g + co) * rows + r]
        }).collect()
    } else {
        Vec::new()
    };
    for_images(dx, img_in, g.n, work, |i, d, threads| {
        let mut cols = Buf::<T>::new(&[g.c_in * k, p])?;
        let gi = &grad[i * g.c_out * p..(i + 1) * g.c_out * p];
        for grp in 0..g.groups {
            if shallow {
                small_k::product(rows, p, cout_g, &wt[grp * rows * cout_g..], &gi[grp * cout_g * p..], p, &mut cols[grp * rows * p..]);
                continue;
            }
            // a = grad_gᵀ: element (pixel, co) is gi[(grp·Cout_g + co)·P + pixel].
            let a = Mat { data: &gi[grp * cout_g * p..], rs: 1, cs: p };
            // b = W_g: element (co, r) is w[(grp·Cout_g + co)·rows + r].
            let b = Mat { data: &w[grp * cout_g * rows..], rs: rows, cs: 1 };
            gemm_with(threads, p, rows, cout_g, &mut cols[grp * rows * p..], (1, p), a, b, false);
        }
        for (r, row) in cols.chunks_mut(p).enumerate() {
            super::mask_row(&taps[r % k], g, row);
        }
        d.fill(T::zero());
        super::col2im_masked(&cols, p, g.c_in, g, &taps, d);
        Ok(())
    })
}

/// Images per partial sum of the weight gradient: the batch is cut into at most this many
/// slices (a number fixed by the batch size, not the thread count), each summed by one task;
/// the slices' sums are then added in order.
const WEIGHT_SLICES: usize = 8;

/// Weight gradient: `dW_g = Σ_n grad_n,g [Cout_g, P] @ cols_n,gᵀ [P, K]`, images summed in
/// order within each slice of the batch, slices in parallel, then the slices' partial sums
/// added in slice order. `dw` is overwritten.
pub fn grad_weight<T: ConvElem>(x: &[T], grad: &[T], dw: &mut [T], g: &Geometry) -> Result<()> {
    let (p, rows, cout_g) = (g.pixels(), g.rows_g(), g.cout_g());
    let img_in = g.c_in * g.h * g.w;
    let size = g.c_out * rows;
    if g.n == 0 || size == 0 {
        dw.fill(T::zero());
        return Ok(());
    }
    let per = g.n.div_ceil(WEIGHT_SLICES);
    let slices = g.n.div_ceil(per);
    // Each slice's sum is kept column-major ([K, Cout_g] per group), gemm's preferred output
    // layout for this long-k product, and transposed at the end.
    let mut partial = Buf::<T>::new(&[slices, size])?;
    let work = g.n.saturating_mul(p).saturating_mul(g.c_out).saturating_mul(rows);
    for_images(&mut partial, size, slices, work, |s, acc, threads| {
        let mut cols = Buf::<T>::new(&[g.c_in * g.kh * g.kw, p])?;
        for (j, i) in (s * per..((s + 1) * per).min(g.n)).enumerate() {
            im2col(&x[i * img_in..(i + 1) * img_in], g.c_in, g, &mut cols, p);
            let gi = &grad[i * g.c_out * p..(i + 1) * g.c_out * p];
            for grp in 0..g.groups {
                let a = Mat { data: &gi[grp * cout_g * p..], rs: p, cs: 1 };
                // b = cols_gᵀ: element (pixel, r) is cols[(grp·rows + r)·P + pixel].
                let b = Mat { data: &cols[grp * rows * p..], rs: 1, cs: p };
                gemm_with(threads, cout_g, rows, p, &mut acc[grp * cout_g * rows..(grp + 1) * cout_g * rows], (1, cout_g), a, b, j > 0);
            }
        }
        Ok(())
    })?;
    for (s, part) in partial.chunks(size).enumerate() {
        for (d, a) in dw.chunks_mut(cout_g * rows).zip(part.chunks(cout_g * rows)) {
            for (co, line) in d.chunks_mut(rows).enumerate() {
                for (v, src) in line.iter_mut().zip(a[co..].iter().step_by(cout_g)) {
                    *v = if s == 0 { *src } else { *v + *src };
                }
            }
        }
    }
    Ok(())
}
