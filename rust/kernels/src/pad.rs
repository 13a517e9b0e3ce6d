//! Reflection and replication padding of the last two dims as an index map: output pixel
//! (i, j) of each plane copies input pixel (rows[i], cols[j]). The backward adds each output
//! gradient back at its source pixel (plane by plane, in output order: deterministic).

use super::conv::ConvElem;
use rayon::prelude::*;

const PAR_MIN_ELEMS: usize = 1 << 14;

/// out[p][i][j] = x[p][rows[i]][cols[j]]; `x` planes are h·w with w = input width.
pub fn gather2d<T: ConvElem>(x: &[T], w: usize, plane_in: usize, rows: &[usize], cols: &[usize], out: &mut [T]) {
    let plane_out = rows.len() * cols.len();
    if plane_out == 0 || out.is_empty() {
        return;
    }
    let one = |(p, o): (usize, &mut [T])| {
        let src = &x[p * plane_in..(p + 1) * plane_in];
        for (i, &r) in rows.iter().enumerate() {
            let line = &src[r * w..(r + 1) * w];
            for (j, &c) in cols.iter().enumerate() {
                o[i * cols.len() + j] = line[c];
            }
        }
    };
    if out.len() >= PAR_MIN_ELEMS {
        out.par_chunks_mut(plane_out).enumerate().for_each(one);
    } else {
        out.chunks_mut(plane_out).enumerate().for_each(one);
    }
}

/// The adjoint of `gather2d`: dx (planes of h·w, overwritten) gets every output gradient added at
/// its source pixel.
pub fn scatter2d<T: ConvElem>(grad: &[T], w: usize, plane_in: usize, rows: &[usize], cols: &[usize], dx: &mut [T]) {
    let plane_out = rows.len() * cols.len();
    if plane_in == 0 || dx.is_empty() {
        return;
    }
    let one = |(p, d): (usize, &mut [T])| {
        d.fill(T::zero());
        let g = &grad[p * plane_out..(p + 1) * plane_out];
        for (i, &r) in rows.iter().enumerate() {
            for (j, &c) in cols.iter().enumerate() {
                d[r * w + c] += g[i * cols.len() + j];
            }
        }
    };
    if dx.len() >= PAR_MIN_ELEMS {
        dx.par_chunks_mut(plane_in).enumerate().for_each(one);
    } else {
        dx.chunks_mut(plane_in).enumerate().for_each(one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_and_adjoint() {
        let x: Vec<f64> = (0..6).map(|v| v as f64).collect(); // one 2x3 plane
        let (rows, cols) = ([1, 0, 1], [1, 0, 1, 2, 1]); // reflect by 1 on every side
        let mut out = vec![0.0; 15];
        gather2d(&x, 3, 6, &rows, &cols, &mut out);
        assert_eq!(&out[..5], &[4.0, 3.0, 4.0, 5.0, 4.0]);
        let mut dx = vec![9.0; 6];
        scatter2d(&[1.0; 15], 3, 6, &rows, &cols, &mut dx);
        // Each input pixel gets (uses of its row) x (uses of its column).
        assert_eq!(dx, vec![1.0, 3.0, 1.0, 2.0, 6.0, 2.0]);
    }
}
