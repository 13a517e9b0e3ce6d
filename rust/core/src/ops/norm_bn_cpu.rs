//! The CPU batch-norm kernels over typed memory: float32/float64 elements are read and written
//! in place of a float64 copy of the whole input, statistics and sums accumulate in double in a
//! fixed order per channel (so results do not depend on the thread count), and each output is
//! computed in double and rounded once.
//!
//! The loops run under `simd::run` (wide registers: the eight f64 sums are one AVX-512 register,
//! the per-element formulas vectorise), which changes no bit: there is no FMA contraction and
//! no reassociation, only the same operations on more lanes at once. Small tensors, or one
//! thread, stay on the calling thread (see `parallel`).

use crate::dtype::DType;
use crate::element::Element;
use crate::error::Result;
use crate::ops::conv::{fresh, read};
use crate::ops::copy::contiguous_raw;
use crate::tensor::Tensor;
use crate::kernels::{parallel, simd};

/// Element count below which the loops stay on one thread.
const PAR_MIN: usize = 1 << 15;

/// Whether the loops over `len` elements are split over rayon's threads: only for large tensors
/// and more than one thread. Otherwise they run on the calling thread; handing even a single job
/// to rayon's pool from the Python thread (outside the pool: `par_iter`) blocks the caller until a
/// worker wakes: in the bench's conv net forward (one thread, 64x16x8x8) the batch norm after the
/// stem conv cost ~250 µs more inside the network than alone, the worker asleep after the conv.
fn parallel(len: usize) -> bool {
    len >= PAR_MIN && rayon::current_num_threads() > 1
}

/// `f(ch)` for every channel, in channel order; split over threads when `par` through
/// `parallel::map_tasks` (the caller works too, no rayon hand-off).
fn per_channel<R: Copy + Default + Send + Sync>(c: usize, par: bool, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if par {
        parallel::map_tasks(c, true, R::default(), |ch| simd::run(|| f(ch)))
    } else {
        simd::run(|| (0..c).map(&f).collect())
    }
}

/// Elements of the rows one task of `per_row` takes (whole rows, at least one).
const ROWS_TASK: usize = 1 << 12;

/// `f(row, dst)` for every `s`-element row of `out`; split over threads when `par`, each task a
/// run of rows (`ROWS_TASK` elements).
fn per_row<T: Element>(out: &mut [T], s: usize, par: bool, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if !par {
        simd::run(|| out.chunks_mut(s).enumerate().for_each(|(row, dst)| f(row, dst)));
        return;
    }
    let (rows, per) = (out.len() / s, (ROWS_TASK / s).max(1));
    let at = parallel::SendPtr(out.as_mut_ptr());
    parallel::for_tasks(rows.div_ceil(per), true, |t| {
        let (lo, hi) = (t * per, ((t + 1) * per).min(rows));
        // SAFETY: task t writes rows lo..hi of `out` (inside it: hi <= rows), disjoint from every
        // other task's; `out` is borrowed mutably for the whole call.
        let run = unsafe { std::slice::from_raw_parts_mut(at.get().add(lo * s), (hi - lo) * s) };
        simd::run(|| run.chunks_mut(s).enumerate().for_each(|(i, dst)| f(lo + i, dst)));
    });
}

/// (n, c, s): batch, channels, elements per channel and image.
fn dims(x: &Tensor) -> (usize, usize, usize) {
    (x.shape()[0], x.shape()[1], x.shape()[2..].iter().product())
}

/// Eight running sums, so that the adds do not wait on each other (one f64 chain would cost
/// its latency per element); combined pairwise in a fixed order at the end.
#[derive(Default)]
struct Acc([f64; 8]);

impl Acc {
    #[inline(always)]
    fn add<T: Element>(&mut self, row: &[T], f: impl Fn(f64) -> f64) {
        let mut it = row.chunks_exact(8);
        for c in &mut it {
            for k in 0..8 {
                self.0[k] += f(c[k].to_f64());
            }
        }
        for (k, v) in it.remainder().iter().enumerate() {
            self.0[k] += f(v.to_f64());
        }
    }
    #[inline(always)]
    fn add2<T: Element>(&mut self, a: &[T], b: &[T], f: impl Fn(f64, f64) -> f64) {
        let (mut ia, mut ib) = (a.chunks_exact(8), b.chunks_exact(8));
        for (ca, cb) in (&mut ia).zip(&mut ib) {
            for k in 0..8 {
                self.0[k] += f(ca[k].to_f64(), cb[k].to_f64());
            }
        }
        for (k, (x, y)) in ia.remainder().iter().zip(ib.remainder()).enumerate() {
            self.0[k] += f(x.to_f64(), y.to_f64());
        }
    }
    fn total(&self) -> f64 {
        let a = &self.0;
        ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
    }
}

/// Per channel: (mean, sum of squared deviations), two passes in double, images then
/// positions in order.
#[inline(always)]
fn stats<T: Element>(xs: &[T], (n, c, s): (usize, usize, usize), ch: usize) -> (f64, f64) {
    let rows = || (0..n).map(move |i| &xs[(i * c + ch) * s..(i * c + ch + 1) * s]);
    let mut sum = Acc::default();
    rows().for_each(|r| sum.add(r, |v| v));
    let m = sum.total() / (n * s) as f64;
    let mut sq = Acc::default();
    rows().for_each(|r| sq.add(r, |v| (v - m) * (v - m)));
    (m, sq.total())
}

fn channel_stats_t<T: Element>(xs: &[T], d: (usize, usize, usize)) -> Vec<(f64, f64)> {
    per_channel(d.1, parallel(xs.len()), |ch| stats(xs, d, ch))
}

/// `x` as a contiguous float32/float64 tensor (other dtypes as float64).
pub(super) fn typed(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::Float32 | DType::Float64 => contiguous_raw(x),
        _ => crate::ops::copy::to_dtype_raw(x, DType::Float64),
    }
}

/// Per channel (mean, sum of squared deviations) of a `typed` tensor.
pub(super) fn channel_stats(x: &Tensor) -> Vec<(f64, f64)> {
    crate::dispatch_float!(x.dtype(), T => channel_stats_t::<T>(read(x), dims(x)), _ => unreachable!("typed"))
}

fn normalize_t<T: Element>(xs: &[T], out: &mut [T], c: usize, s: usize, scale: &[f64], mean: &[f64], shift: &[f64]) {
    if s == 0 {
        return;
    }
    per_row(out, s, parallel(xs.len()), |row, dst| {
        let ch = row % c;
        let (m, k, b) = (mean[ch], scale[ch], shift[ch]);
        for (o, v) in dst.iter_mut().zip(&xs[row * s..row * s + s]) {
            *o = T::from_f64((v.to_f64() - m) * k + b);
        }
    });
}

/// `(x - mean) * invstd * w + b` per channel for a `typed` tensor, in its dtype.
pub(super) fn normalize(x: &Tensor, mean: &[f64], invstd: &[f64], w: Option<&[f64]>, b: Option<&[f64]>) -> Result<Tensor> {
    let (_, c, s) = dims(x);
    let scale: Vec<f64> = (0..c).map(|ch| invstd[ch] * w.map_or(1.0, |w| w[ch])).collect();
    let shift: Vec<f64> = (0..c).map(|ch| b.map_or(0.0, |b| b[ch])).collect();
    let out = Tensor::empty(x.shape(), x.dtype())?;
    crate::dispatch_float!(x.dtype(), T => normalize_t::<T>(read(x), fresh(&out), c, s, &scale, mean, &shift), _ => unreachable!("typed"));
    Ok(out)
}

/// Per channel (sum g, sum g·xhat) and the input gradient `invstd·w·(g - Σg/m - xhat·Σg·xhat/m)`.
fn backward_t<T: Element>(xs: &[T], gs: &[T], gi: &mut [T], w: Option<&[f64]>, d: (usize, usize, usize), eps: f64) -> Vec<(f64, f64)> {
    let (n, c, s) = d;
    let m = (n * s) as f64;
    let par = parallel(xs.len());
    // (mean, invstd, sum g, sum g·xhat) per channel
    let per: Vec<[f64; 4]> = per_channel(c, par, |ch| {
        let (mean, sq) = stats(xs, d, ch);
        let invstd = 1.0 / (sq / m + eps).sqrt();
        let (mut sg, mut sgx) = (Acc::default(), Acc::default());
        for i in 0..n {
            let r = (i * c + ch) * s..(i * c + ch + 1) * s;
            sg.add(&gs[r.clone()], |g| g);
            sgx.add2(&xs[r.clone()], &gs[r], |x, g| g * (x - mean) * invstd);
        }
        [mean, invstd, sg.total(), sgx.total()]
    });
    per_row(gi, s, par, |row, dst| {
        let ch = row % c;
        let [mean, invstd, sg, sgx] = per[ch];
        let k = invstd * w.map_or(1.0, |w| w[ch]);
        let (a, b) = (sg / m, sgx / m);
        for (o, (x, g)) in dst.iter_mut().zip(xs[row * s..row * s + s].iter().zip(&gs[row * s..row * s + s])) {
            let xhat = (x.to_f64() - mean) * invstd;
            *o = T::from_f64(k * (g.to_f64() - a - xhat * b));
        }
    });
    per.iter().map(|p| (p[3], p[2])).collect()
}

/// The CPU backend's `batch_norm_backward`: (grad_input, grad_weight, grad_bias), or None for
/// what the composite formula handles (other dtypes, an empty batch).
pub(crate) fn batch_norm_backward_cpu(g: &Tensor, x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Option<(Tensor, Tensor, Tensor)>> {
    let float = matches!(x.dtype(), DType::Float32 | DType::Float64);
    if !float || x.ndim() < 2 || g.shape() != x.shape() || g.dtype() != x.dtype() {
        return Ok(None);
    }
    let d = dims(x);
    if d.0 * d.2 == 0 || d.2 == 0 {
        return Ok(None);
    }
    let (x, g) = (contiguous_raw(x)?, contiguous_raw(g)?);
    let w = weight.map(super::f64s).transpose()?;
    let gi = Tensor::empty(x.shape(), x.dtype())?;
    let sums = crate::dispatch_float!(x.dtype(), T => backward_t::<T>(read(&x), read(&g), fresh(&gi), w.as_deref(), d, eps), _ => unreachable!("checked float"));
    let (gw, gb): (Vec<f64>, Vec<f64>) = sums.into_iter().unzip();
    let dt = x.dtype();
    Ok(Some((gi, super::from_f64s(gw, &[d.1], dt)?, super::from_f64s(gb, &[d.1], dt)?)))
}
