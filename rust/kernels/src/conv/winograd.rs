//! Winograd F(2x2, 3x3) for 3x3, stride-1, dilation-1, ungrouped convolutions.
//!
//! Each 2x2 output tile is `Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A` for the 4x4 input patch `d` under it
//! (Lavin & Gray 2015): 16 multiplies per tile and channel pair instead of 36. Summed over input
//! channels, the 16 elementwise products become 16 matrix products, one per position ξ of the
//! 4x4 transformed tile: `M[ξ] (Cout × tiles) = U[ξ] (Cout × Cin) @ V[ξ] (Cin × tiles)`, run by
//! the gemm crate.
//!
//! Layouts (per chunk of `nb` images) are chosen so that every transform is a long unit-stride
//! loop the compiler vectorises: the padded input is packed "parity-split, channels last",
//! `[col % 2][col / 2][row % 2][row / 2][image][channel]`, so that one tap of every tile in a tile
//! column (all tile rows, all images, all channels) is one contiguous run; `V[ξ]` and `M[ξ]` are
//! `[tile col][tile row][image][channel]`, i.e. the gemm's column index times the channel count
//! plus the channel. The output transform writes the same parity-split layout, which `unpack`
//! turns back into NCHW (adding the bias).
//!
//! The input gradient of such a convolution is the same kind of convolution of the output
//! gradient with the flipped, transposed kernel and padding `2 - p`; the weight gradient is the
//! adjoint of the tile formula, `G [(A dy Aᵀ) ⊙ V] Gᵀ` summed over tiles: 16 products
//! `dU[ξ] (Cout × Cin) = Mg[ξ] (Cout × tiles) @ V[ξ]ᵀ`, then `dW = Gᵀ dU G` per channel pair.
//!
//! With few input channels (at most `small_k::MAX_K`) the 16 forward products run on `small_k`'s
//! register tiles instead of gemm: per tile column j, `M[ξ][j][co] = Σ_ci V[ξ][j][ci] ·
//! Uᵀ[ξ][ci][co]`, the output channels in one vector. gemm's packing and its 16x6 tile over a sum
//! of 16 terms made the products ~40% of the bench's 64x16x8x8 forward.
//!
//! Determinism: chunks depend on the sizes only; each chunk is computed the same way whichever
//! thread runs it; the weight gradient adds the chunks' partial sums in chunk order.

use super::{gemm, scratch::Buf, small_k, ConvElem, Geometry, Mat};
use crate::error::Result;
use std::ops::Sub;

/// Element types of the Winograd kernels (the conv element types, which also subtract).
pub trait WinoElem: ConvElem + Sub<Output = Self> {}
impl<T: ConvElem + Sub<Output = T>> WinoElem for T {}

/// Fewest input and output channels for which the transforms pay off (below, im2col's single
/// product over Cin·9 rows is as fast: measured on the digits stem, Cin = 1).
pub const MIN_CHANNELS: usize = 4;
/// Elements of the largest of V and M per chunk of images: they stay in the L2 cache.
pub const CHUNK_BUDGET: usize = 1 << 17;

/// Whether the forward (and the weight gradient) of `g` can run here.
pub fn suits(g: &Geometry) -> bool {
    g.kh == 3 && g.kw == 3 && g.stride == [1, 1] && g.dilation == [1, 1] && g.groups == 1
        && g.c_in >= MIN_CHANNELS && g.c_out >= MIN_CHANNELS && g.n > 0 && g.oh > 0 && g.ow > 0
}

/// Whether the input gradient can (its padding `2 - p` must not be negative).
pub fn suits_input_grad(g: &Geometry) -> bool {
    suits(g) && g.padding[0] <= 2 && g.padding[1] <= 2 && g.h > 0 && g.w > 0
}

/// Tile counts of one image and the packed input grid (half-sizes: rows/2, cols/2).
#[derive(Clone, Copy)]
struct Plan {
    th: usize,
    tw: usize,
}

impl Plan {
    fn new(g: &Geometry) -> Plan {
        Plan { th: g.oh.div_ceil(2), tw: g.ow.div_ceil(2) }
    }
    fn tiles(&self) -> usize {
        self.th * self.tw
    }
    /// Images per chunk: V and M of one chunk within `budget` elements, at least one image,
    /// and at least two chunks where the batch allows (so that two threads share the work).
    fn images(&self, g: &Geometry, budget: usize) -> usize {
        let per_image = (16 * self.tiles() * g.c_in.max(g.c_out)).max(1);
        (budget / per_image).clamp(1, g.n.div_ceil(2).max(1))
    }
}

/// `U[ξ][co][ci] = (G k Gᵀ)[ξ]` for the 3x3 kernels `k(co, ci, tap)`; G's rows are (1, 0, 0),
/// (½, ½, ½), (½, -½, ½), (0, 0, 1).
fn transform_weights<T: WinoElem>(cout: usize, cin: usize, k: impl Fn(usize, usize, usize) -> T) -> Vec<T> {
    let half = T::from_f64(0.5);
    let g3 = |a: T, b: T, c: T| [a, (a + b + c) * half, (a - b + c) * half, c];
    let mut u = vec![T::zero(); 16 * cout * cin];
    for co in 0..cout {
        for ci in 0..cin {
            let w = |i: usize, j: usize| k(co, ci, i * 3 + j);
            let cols = [g3(w(0, 0), w(1, 0), w(2, 0)), g3(w(0, 1), w(1, 1), w(2, 1)), g3(w(0, 2), w(1, 2), w(2, 2))];
            for a in 0..4 {
                let row = g3(cols[0][a], cols[1][a], cols[2][a]);
                for (b, &v) in row.iter().enumerate() {
                    u[((a * 4 + b) * cout + co) * cin + ci] = v;
                }
            }
        }
    }
    u
}

/// `dW[co][ci] = Gᵀ dU G` from `dU[ξ][ci][co]` (the gemm's column-major output), into the
/// `[co][ci][3][3]` weight gradient.
fn untransform_weights<T: WinoElem>(du: &[T], cout: usize, cin: usize, dw: &mut [T]) {
    let half = T::from_f64(0.5);
    // Gᵀ's rows: (1, ½, ½, 0), (0, ½, -½, 0), (0, ½, ½, 1).
    let gt = |v: [T; 4]| [v[0] + (v[1] + v[2]) * half, (v[1] - v[2]) * half, (v[1] + v[2]) * half + v[3]];
    for co in 0..cout {
        for ci in 0..cin {
            let d = |x: usize| du[(x * cin + ci) * cout + co];
            let rows: Vec<[T; 3]> = (0..4).map(|a| gt([d(a * 4), d(a * 4 + 1), d(a * 4 + 2), d(a * 4 + 3)])).collect();
            for j in 0..3 {
                let col = gt([rows[0][j], rows[1][j], rows[2][j], rows[3][j]]);
                for i in 0..3 {
                    dw[((co * cin + ci) * 3 + i) * 3 + j] = col[i];
                }
            }
        }
    }
}

/// Block (position) index of padded-grid row `r`, column `c` in the parity-split layout with
/// `hh` row halves and `wh` column halves.
#[inline(always)]
fn block(r: usize, c: usize, hh: usize, wh: usize) -> usize {
    (((c % 2) * wh + c / 2) * 2 + r % 2) * hh + r / 2
}

/// Image slots per grid position: `nb`, or a few more (kept zero) when a position's block
/// (`slots·ch` elements, for each of `chans`) would be a multiple of 512 bytes. `pack` and
/// `unpack` touch one line in each of an image's positions per channel; blocks a power of two
/// apart put all of them into a couple of L1 sets (2 KiB apart for the bench's 32 images of 16
/// channels: 64 lines in 2 sets, pack and unpack 3-4x slower), blocks an odd number of lines
/// apart spread them over all sets. `rows · slots` (the products' rows per tile column) is kept
/// a multiple of 8, `small_k`'s register tile, where a few more slots allow (with 33 slots of
/// 4 tile rows, 4 rows of each 132 ran through its slow remainder: the products took 150 µs
/// instead of 85 on the bench shape).
fn slots<T>(nb: usize, chans: [usize; 2], rows: usize) -> usize {
    let aliases = |s: usize| chans.iter().any(|&ch| {
        let bytes = s * ch * std::mem::size_of::<T>();
        bytes >= 1024 && bytes % 512 == 0
    });
    if !aliases(nb) {
        return nb;
    }
    let free = || (nb + 1..=nb + 8).filter(|&s| !aliases(s));
    // No count helps when a slot itself is a multiple of 512 bytes (128 f32 channels).
    free().find(|&s| rows * s % 8 == 0).or_else(|| free().next()).unwrap_or(nb)
}

/// Packs `nb` images `[nb][ch][h][w]` into the parity-split grid of `2hh × 2wh` positions, each a
/// block of `slots·ch` values (`[image slot][channel]`); the image sits at offset (`ph`, `pw`) and
/// every other position, and the slots past `nb`, are zero. Each channel plane is read in order
/// and its pixels stored one per position: with `slots` spreading the positions over the L1
/// sets, an image's 16-channel lines stay in L1 while its channels are written (a transpose
/// through a small buffer and line copies, before, cost about twice as much).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pack<T: WinoElem>(src: &[T], nb: usize, slots: usize, ch: usize, (h, w): (usize, usize), (ph, pw): (usize, usize), (hh, wh): (usize, usize), dst: &mut [T]) {
    let blk = slots * ch;
    let dst = &mut dst[..4 * hh * wh * blk];
    for r in 0..2 * hh {
        for c in 0..2 * wh {
            let inside = (ph..ph + h).contains(&r) && (pw..pw + w).contains(&c);
            let at = block(r, c, hh, wh) * blk;
            let from = if inside { nb * ch } else { 0 };
            dst[at + from..at + blk].fill(T::zero());
        }
    }
    let hw = h * w;
    // Destination of each source pixel (all inside the grid: see `Plan`).
    let offs: Vec<usize> = (0..hw).map(|p| block(p / w + ph, p % w + pw, hh, wh) * blk).collect();
    let last = offs.iter().max().map_or(0, |&o| o + nb * ch);
    assert!(last <= dst.len() && src.len() >= nb * ch * hw);
    for (i, img) in src[..nb * ch * hw].chunks_exact(ch * hw).enumerate() {
        for (c, plane) in img.chunks_exact(hw).enumerate() {
            let at = i * ch + c;
            for (&v, &o) in plane.iter().zip(&offs) {
                // SAFETY: o + at <= max(offs) + (nb - 1)·ch + ch - 1 < last <= dst.len() (asserted).
                unsafe { *dst.get_unchecked_mut(o + at) = v };
            }
        }
    }
}

/// The inverse of `pack` for the output: `out[i][co][oy][ox] = y[block(oy, ox)][i][co] + bias[co]`,
/// `y` a parity-split grid of `2th × 2tw` positions of `slots·ch` values; read one channel plane
/// at a time, as `pack` writes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn unpack<T: WinoElem>(y: &[T], nb: usize, slots: usize, ch: usize, (oh, ow): (usize, usize), (th, tw): (usize, usize), bias: Option<&[T]>, out: &mut [T]) {
    let (blk, hw) = (slots * ch, oh * ow);
    let zeros = vec![T::zero(); ch];
    let bias = bias.unwrap_or(&zeros);
    let offs: Vec<usize> = (0..hw).map(|p| block(p / ow, p % ow, th, tw) * blk).collect();
    let last = offs.iter().max().map_or(0, |&o| o + nb * ch);
    assert!(last <= y.len() && bias.len() >= ch);
    for (i, img) in out[..nb * ch * hw].chunks_exact_mut(ch * hw).enumerate() {
        for (c, (plane, &b)) in img.chunks_exact_mut(hw).zip(bias).enumerate() {
            let at = i * ch + c;
            for (o, &off) in plane.iter_mut().zip(&offs) {
                // SAFETY: off + at <= max(offs) + (nb - 1)·ch + ch - 1 < last <= y.len() (asserted).
                *o = unsafe { *y.get_unchecked(off + at) } + b;
            }
        }
    }
}

/// `a ± b`, the sign fixed at compile time.
#[inline(always)]
fn pm<T: WinoElem, const SUB: bool>(a: T, b: T) -> T {
    if SUB {
        a - b
    } else {
        a + b
    }
}

/// One row `a` of `Bᵀ d B` for a run of tiles: `t_j = p_j ± q_j` (rows `pa`, `qa` of the
/// patch, Bᵀ's row a), then `o_b = (t B)_b`: `t0 - t2`, `t1 + t2`, `t2 - t1`, `t1 - t3`.
#[inline(always)]
fn input_row<T: WinoElem, const SUB: bool>(o: [&mut [T]; 4], p: [&[T]; 4], q: [&[T]; 4]) {
    let [o0, o1, o2, o3] = o;
    let n = o0.len();
    let (o1, o2, o3) = (&mut o1[..n], &mut o2[..n], &mut o3[..n]);
    let (p0, p1, p2, p3) = (&p[0][..n], &p[1][..n], &p[2][..n], &p[3][..n]);
    let (q0, q1, q2, q3) = (&q[0][..n], &q[1][..n], &q[2][..n], &q[3][..n]);
    for e in 0..n {
        let (t0, t1, t2, t3) = (pm::<T, SUB>(p0[e], q0[e]), pm::<T, SUB>(p1[e], q1[e]), pm::<T, SUB>(p2[e], q2[e]), pm::<T, SUB>(p3[e], q3[e]));
        o0[e] = t0 - t2;
        o1[e] = t1 + t2;
        o2[e] = t2 - t1;
        o3[e] = t1 - t3;
    }
}

/// One row `a` of `Aᵀ M A`: `s_j = m0j + m1j + m2j` (a = 0) or `m1j - m2j - m3j` (a = 1), read
/// as `p_j ± q_j ± r_j`; then `o0 = s0 + s1 + s2`, `o1 = s1 - s2 - s3`.
#[inline(always)]
fn output_row<T: WinoElem, const SUB: bool>(o: [&mut [T]; 2], p: [&[T]; 4], q: [&[T]; 4], r: [&[T]; 4]) {
    let [o0, o1] = o;
    let n = o0.len();
    let o1 = &mut o1[..n];
    let (p0, p1, p2, p3) = (&p[0][..n], &p[1][..n], &p[2][..n], &p[3][..n]);
    let (q0, q1, q2, q3) = (&q[0][..n], &q[1][..n], &q[2][..n], &q[3][..n]);
    let (r0, r1, r2, r3) = (&r[0][..n], &r[1][..n], &r[2][..n], &r[3][..n]);
    for e in 0..n {
        let s0 = pm::<T, SUB>(pm::<T, SUB>(p0[e], q0[e]), r0[e]);
        let s1 = pm::<T, SUB>(pm::<T, SUB>(p1[e], q1[e]), r1[e]);
        let s2 = pm::<T, SUB>(pm::<T, SUB>(p2[e], q2[e]), r2[e]);
        let s3 = pm::<T, SUB>(pm::<T, SUB>(p3[e], q3[e]), r3[e]);
        o0[e] = s0 + s1 + s2;
        o1[e] = s1 - s2 - s3;
    }
}

/// A's row `R` applied to (p, q): (1, 0), (1, 1), (1, -1), (0, -1).
#[inline(always)]
fn a_row<T: WinoElem, const R: usize>(p: T, q: T) -> T {
    match R {
        0 => p,
        1 => p + q,
        2 => p - q,
        _ => T::zero() - q,
    }
}

/// One row `i` of `A dy Aᵀ`: `r_b = (A dy)_ib` from the 2x2 gradient tile `d[a][b]`, then
/// `o_j = A_j · (r0, r1)`.
#[inline(always)]
fn grad_row<T: WinoElem, const R: usize>(o: [&mut [T]; 4], d: [&[T]; 4]) {
    let [o0, o1, o2, o3] = o;
    let n = o0.len();
    let (o1, o2, o3) = (&mut o1[..n], &mut o2[..n], &mut o3[..n]);
    let (d00, d01, d10, d11) = (&d[0][..n], &d[1][..n], &d[2][..n], &d[3][..n]);
    for e in 0..n {
        let (r0, r1) = (a_row::<T, R>(d00[e], d10[e]), a_row::<T, R>(d01[e], d11[e]));
        o0[e] = r0;
        o1[e] = r0 + r1;
        o2[e] = r0 - r1;
        o3[e] = T::zero() - r1;
    }
}

/// Bᵀ's rows as (first, second, subtract): (1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1).
const BT: [(usize, usize, bool); 4] = [(0, 2, true), (1, 2, false), (2, 1, true), (1, 3, true)];

/// The 16 planes of V, M or Mg (`ps` apart) as mutable slices.
fn planes<T>(v: &mut [T], ps: usize) -> Vec<&mut [T]> {
    v.chunks_mut(ps).take(16).collect()
}

/// `V[ξ][tx][ty][i][c] = (Bᵀ d B)[ξ]` for every tile of the packed chunk `xp` (grid of
/// `(th+1) × (tw+1)` halves); planes `ps` apart. Per tile column and tile row of Bᵀ, one loop
/// over (tile row, image, channel).
#[inline(always)]
fn input_transform<T: WinoElem>(xp: &[T], blk: usize, pl: Plan, v: &mut [T], ps: usize) {
    for tx in 0..pl.tw {
        input_column(xp, blk, pl, tx, v, ps, tx * pl.th * blk);
    }
}

/// Tile column `tx` of `input_transform`, its runs at offset `at` of each plane.
#[inline(always)]
fn input_column<T: WinoElem>(xp: &[T], blk: usize, pl: Plan, tx: usize, v: &mut [T], ps: usize, at: usize) {
    let (hh, wh) = (pl.th + 1, pl.tw + 1);
    let l = pl.th * blk;
    let tap = |i: usize, j: usize| {
        let at = block(i, j + 2 * tx, hh, wh) * blk;
        &xp[at..at + l]
    };
    for (a, quad) in planes(v, ps).chunks_mut(4).enumerate() {
        let [v0, v1, v2, v3] = quad else { unreachable!("16 planes") };
        let r = at..at + l;
        let o = [&mut v0[r.clone()], &mut v1[r.clone()], &mut v2[r.clone()], &mut v3[r]];
        let (pa, qa, sub) = BT[a];
        let (p, q) = ([0, 1, 2, 3].map(|j| tap(pa, j)), [0, 1, 2, 3].map(|j| tap(qa, j)));
        if sub {
            input_row::<T, true>(o, p, q);
        } else {
            input_row::<T, false>(o, p, q);
        }
    }
}

/// `y = Aᵀ M A` for every tile: `m` is `[16][tx][ty][i][co]` (planes `ps` apart), `y` the
/// parity-split output grid (`th × tw` halves). Aᵀ's rows: (1, 1, 1, 0), (0, 1, -1, -1).
#[inline(always)]
fn output_transform<T: WinoElem>(m: &[T], blk: usize, pl: Plan, ps: usize, y: &mut [T]) {
    for tx in 0..pl.tw {
        output_column(m, blk, pl, tx, ps, tx * pl.th * blk, y);
    }
}

/// Tile column `tx` of `output_transform`, read from offset `at` of each plane of `m`.
#[inline(always)]
fn output_column<T: WinoElem>(m: &[T], blk: usize, pl: Plan, tx: usize, ps: usize, at: usize, y: &mut [T]) {
    let l = pl.th * blk;
    let mt = |xi: usize| &m[xi * ps + at..xi * ps + at + l];
    for a in 0..2 {
        let at0 = block(a, 2 * tx, pl.th, pl.tw) * blk;
        let at1 = block(a, 2 * tx + 1, pl.th, pl.tw) * blk;
        // Column parity is the outermost index: the two runs never overlap.
        let (lo, hi) = y.split_at_mut(at1);
        let o = [&mut lo[at0..at0 + l], &mut hi[..l]];
        let row = |i: usize| [0, 1, 2, 3].map(|j| mt(i * 4 + j));
        if a == 0 {
            output_row::<T, false>(o, row(0), row(1), row(2));
        } else {
            output_row::<T, true>(o, row(1), row(2), row(3));
        }
    }
}

/// `Mg = A dy Aᵀ` for every tile: `dp` is the output gradient packed as a parity-split grid of
/// `th × tw` halves, `mg` `[16][tx][ty][i][co]` (planes `ps` apart).
#[inline(always)]
fn grad_transform<T: WinoElem>(dp: &[T], blk: usize, pl: Plan, mg: &mut [T], ps: usize) {
    let l = pl.th * blk;
    let dy = |tx: usize, a: usize, b: usize| {
        let at = block(a, b + 2 * tx, pl.th, pl.tw) * blk;
        &dp[at..at + l]
    };
    let mut planes = planes(mg, ps);
    for tx in 0..pl.tw {
        let d = [dy(tx, 0, 0), dy(tx, 0, 1), dy(tx, 1, 0), dy(tx, 1, 1)];
        for (i, quad) in planes.chunks_mut(4).enumerate() {
            let [v0, v1, v2, v3] = quad else { unreachable!("16 planes") };
            let r = tx * l..(tx + 1) * l;
            let o = [&mut v0[r.clone()], &mut v1[r.clone()], &mut v2[r.clone()], &mut v3[r]];
            match i {
                0 => grad_row::<T, 0>(o, d),
                1 => grad_row::<T, 1>(o, d),
                2 => grad_row::<T, 2>(o, d),
                _ => grad_row::<T, 3>(o, d),
            }
        }
    }
}

/// Distance between the 16 planes of a chunk's V or M: one cache line more than a plane, so
/// that the 12-16 runs a transform reads at once do not fall into the same L1 sets.
fn plane_stride<T>(plane: usize) -> usize {
    plane + 64 / std::mem::size_of::<T>()
}

/// The 16 transformed kernels in the layout their products read: `[16][Cout][Cin]` for gemm, or
/// `[16][Cin][Cout]` for `small_k` (`shallow`: at most `small_k::MAX_K` input channels).
struct Kernels<T> {
    u: Vec<T>,
    shallow: bool,
}

impl<T: WinoElem> Kernels<T> {
    /// From `u` `[16][Cout][Cin]`, transposed where the products are `small_k`'s.
    fn new(u: Vec<T>, cout: usize, cin: usize) -> Kernels<T> {
        if cin > small_k::MAX_K {
            return Kernels { u, shallow: false };
        }
        let mut t = vec![T::zero(); u.len()];
        for xi in 0..16 {
            for co in 0..cout {
                for ci in 0..cin {
                    t[(xi * cin + ci) * cout + co] = u[(xi * cout + co) * cin + ci];
                }
            }
        }
        Kernels { u: t, shallow: true }
    }
}

/// The forward of one chunk of `nb` images: pack, input transform, 16 products, output
/// transform, unpack. With `small_k`'s products the middle three run per tile column, so that
/// the column's V and M (`16·th·nb` rows) stay in L2 between the steps; the whole chunk's
/// (1 MiB for the bench's 64x16x8x8) went out to L3 and back.
fn forward_chunk<T: WinoElem>(x: &[T], u: &Kernels<T>, bias: Option<&[T]>, out: &mut [T], nb: usize, g: &Geometry) -> Result<()> {
    let pl = Plan::new(g);
    let (c, k, t) = (g.c_in, g.c_out, pl.tiles());
    let sl = slots::<T>(nb, [c, k], pl.th);
    let cols = if u.shallow { pl.th * sl } else { t * sl };
    let mut xp = Buf::<T>::new(&[4 * (pl.th + 1) * (pl.tw + 1), sl, c])?;
    let (vs, ms) = (plane_stride::<T>(cols * c), plane_stride::<T>(cols * k));
    let mut v = Buf::<T>::new(&[16, vs])?;
    let mut m = Buf::<T>::new(&[16, ms])?;
    let mut y = Buf::<T>::new(&[4 * t, sl, k])?;
    crate::simd::exec(ForwardChunk { x, u, bias, out, nb, sl, g, pl, xp: &mut xp, v: &mut v, vs, m: &mut m, ms, y: &mut y });
    Ok(())
}

/// `forward_chunk`'s loops as a `simd::exec` body: the transforms, pack and unpack compiled for
/// the wide registers (under `simd::run` closures LLVM did not inline, they ran as SSE2).
struct ForwardChunk<'a, T> {
    x: &'a [T],
    u: &'a Kernels<T>,
    bias: Option<&'a [T]>,
    out: &'a mut [T],
    nb: usize,
    /// Image slots per grid position (`slots`).
    sl: usize,
    g: &'a Geometry,
    pl: Plan,
    xp: &'a mut [T],
    v: &'a mut [T],
    vs: usize,
    m: &'a mut [T],
    ms: usize,
    y: &'a mut [T],
}

impl<T: WinoElem> crate::simd::Body for ForwardChunk<'_, T> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let ForwardChunk { x, u, bias, out, nb, sl, g, pl, xp, v, vs, m, ms, y } = self;
        let (c, k) = (g.c_in, g.c_out);
        pack(x, nb, sl, c, (g.h, g.w), (g.padding[0], g.padding[1]), (pl.th + 1, pl.tw + 1), xp);
        if u.shallow {
            let cols = pl.th * sl;
            for tx in 0..pl.tw {
                input_column(xp, sl * c, pl, tx, v, vs, 0);
                for xi in 0..16 {
                    // Row j of V[ξ] (its c channels) times Uᵀ[ξ] ([c][k]): row j of M[ξ].
                    small_k::product(cols, k, c, &v[xi * vs..], &u.u[xi * c * k..], k, &mut m[xi * ms..xi * ms + cols * k]);
                }
                output_column(m, sl * k, pl, tx, ms, 0, y);
            }
        } else {
            let cols = pl.tiles() * sl;
            input_transform(xp, sl * c, pl, v, vs);
            for xi in 0..16 {
                let a = Mat { data: &u.u[xi * k * c..], rs: c, cs: 1 };
                let b = Mat { data: &v[xi * vs..], rs: 1, cs: c };
                gemm(k, cols, c, &mut m[xi * ms..xi * ms + cols * k], (1, k), a, b, false);
            }
            output_transform(m, sl * k, pl, ms, y);
        }
        unpack(y, nb, sl, k, (g.oh, g.ow), (pl.th, pl.tw), bias, out);
    }
}

/// Runs `f(first image, images, chunk of out)` over the chunks of `nb` images of `out` (`img`
/// elements per image), on rayon's threads when there are several chunks and threads.
fn chunked<T: Copy + Send>(out: &mut [T], img: usize, nb: usize, f: impl Fn(usize, &mut [T]) -> Result<()> + Sync + Send) -> Result<()> {
    super::try_for_each_chunk(out, nb * img, true, |i, o| f(i * nb, o))
}

/// Forward with weights already transformed (`u` `[16][Cout][Cin]`).
fn forward_u<T: WinoElem>(x: &[T], u: Vec<T>, bias: Option<&[T]>, out: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    let nb = Plan::new(g).images(g, budget);
    let (img_in, img_out) = (g.c_in * g.h * g.w, g.c_out * g.oh * g.ow);
    let u = Kernels::new(u, g.c_out, g.c_in);
    chunked(&mut out[..g.n * img_out], img_out, nb, |first, o| {
        let nbi = o.len() / img_out;
        forward_chunk(&x[first * img_in..(first + nbi) * img_in], &u, bias, o, nbi, g)
    })
}

/// Forward: `out = conv(x, w) + bias` for a geometry that `suits`.
pub fn forward<T: WinoElem>(x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T], g: &Geometry) -> Result<()> {
    forward_in_chunks(x, w, bias, out, g, CHUNK_BUDGET)
}

pub(crate) fn forward_in_chunks<T: WinoElem>(x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    debug_assert!(suits(g));
    let u = transform_weights(g.c_out, g.c_in, |co, ci, tap| w[(co * g.c_in + ci) * 9 + tap]);
    forward_u(x, u, bias, out, g, budget)
}

/// Input gradient for a geometry that `suits_input_grad`: the convolution of `grad` with the
/// flipped kernel, channels swapped, padding `2 - p`. `dx` is overwritten.
pub fn grad_input<T: WinoElem>(grad: &[T], w: &[T], dx: &mut [T], g: &Geometry) -> Result<()> {
    grad_input_in_chunks(grad, w, dx, g, CHUNK_BUDGET)
}

pub(crate) fn grad_input_in_chunks<T: WinoElem>(grad: &[T], w: &[T], dx: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    debug_assert!(suits_input_grad(g));
    let t = Geometry {
        c_in: g.c_out,
        h: g.oh,
        w: g.ow,
        c_out: g.c_in,
        oh: g.h,
        ow: g.w,
        padding: [2 - g.padding[0], 2 - g.padding[1]],
        ..*g
    };
    let u = transform_weights(t.c_out, t.c_in, |a, b, tap| w[(b * g.c_in + a) * 9 + 8 - tap]);
    forward_u(grad, u, None, dx, &t, budget)
}

/// Weight gradient for a geometry that `suits`: per chunk, `dU[ξ] = Mg[ξ] @ V[ξ]ᵀ`; the
/// chunks' sums are added in order, then `dW = Gᵀ dU G`. `dw` is overwritten.
pub fn grad_weight<T: WinoElem>(x: &[T], grad: &[T], dw: &mut [T], g: &Geometry) -> Result<()> {
    grad_weight_in_chunks(x, grad, dw, g, CHUNK_BUDGET)
}

pub(crate) fn grad_weight_in_chunks<T: WinoElem>(x: &[T], grad: &[T], dw: &mut [T], g: &Geometry, budget: usize) -> Result<()> {
    debug_assert!(suits(g));
    let pl = Plan::new(g);
    let nb = pl.images(g, budget);
    let (c, k) = (g.c_in, g.c_out);
    let (img_in, img_out) = (c * g.h * g.w, k * g.oh * g.ow);
    let chunk = |first: usize, du: &mut [T]| -> Result<()> {
        let nb = nb.min(g.n - first);
        let sl = slots::<T>(nb, [c, k], pl.tiles());
        let cols = pl.tiles() * sl;
        let mut xp = Buf::<T>::new(&[4 * (pl.th + 1) * (pl.tw + 1), sl, c])?;
        let (vs, ms) = (plane_stride::<T>(cols * c), plane_stride::<T>(cols * k));
        let mut v = Buf::<T>::new(&[16, vs])?;
        let mut dp = Buf::<T>::new(&[4 * pl.tiles(), sl, k])?;
        let mut mg = Buf::<T>::new(&[16, ms])?;
        let (xs, gs) = (&x[first * img_in..(first + nb) * img_in], &grad[first * img_out..(first + nb) * img_out]);
        crate::simd::exec(WeightTransforms { xs, gs, nb, sl, g, pl, xp: &mut xp, v: &mut v, vs, dp: &mut dp, mg: &mut mg, ms });
        // dU[ξ] stored column-major ([ci][co]): gemm's preferred output layout.
        for xi in 0..16 {
            let a = Mat { data: &mg[xi * ms..], rs: 1, cs: k };
            let b = Mat { data: &v[xi * vs..], rs: c, cs: 1 };
            gemm(k, c, cols, &mut du[xi * k * c..(xi + 1) * k * c], (1, k), a, b, false);
        }
        Ok(())
    };
    let firsts: Vec<usize> = (0..g.n).step_by(nb).collect();
    // Each chunk's dU (`16·k·c` elements) into its own slot, in parallel; summed in chunk order.
    let size = 16 * k * c;
    let mut parts = vec![T::zero(); firsts.len() * size];
    super::try_for_each_chunk(&mut parts, size, true, |i, slot| chunk(firsts[i], slot))?;
    let mut sum = parts[..size].to_vec();
    for p in parts[size..].chunks(size) {
        sum.iter_mut().zip(p).for_each(|(s, v)| *s += *v);
    }
    untransform_weights(&sum, k, c, dw);
    Ok(())
}

/// The packs and transforms of one weight-gradient chunk as a `simd::exec` body (wide
/// registers, as `ForwardChunk`).
struct WeightTransforms<'a, T> {
    xs: &'a [T],
    gs: &'a [T],
    nb: usize,
    sl: usize,
    g: &'a Geometry,
    pl: Plan,
    xp: &'a mut [T],
    v: &'a mut [T],
    vs: usize,
    dp: &'a mut [T],
    mg: &'a mut [T],
    ms: usize,
}

impl<T: WinoElem> crate::simd::Body for WeightTransforms<'_, T> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let WeightTransforms { xs, gs, nb, sl, g, pl, xp, v, vs, dp, mg, ms } = self;
        let (c, k) = (g.c_in, g.c_out);
        pack(xs, nb, sl, c, (g.h, g.w), (g.padding[0], g.padding[1]), (pl.th + 1, pl.tw + 1), xp);
        pack(gs, nb, sl, k, (g.oh, g.ow), (0, 0), (pl.th, pl.tw), dp);
        input_transform(xp, sl * c, pl, v, vs);
        grad_transform(dp, sl * k, pl, mg, ms);
    }
}

#[cfg(test)]
#[path = "winograd_tests.rs"]
mod tests;
