//! Where a reduction's elements are: kept and reduced dims, the walk over consecutive outputs,
//! and the runs that cover a range of reduced indices.

/// A kept dim: size, input stride, and stride in the (row-major, kept-dims-only) output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kept {
    pub(super) size: usize,
    pub(super) stride: isize,
    pub(super) ostride: usize,
}

/// Kept and reduced dims of one reduction, with size-1 dims dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// Kept dims in logical order (the output's order).
    pub(super) keep: Vec<Kept>,
    /// Reduced dims as (size, stride), outer to inner in memory, coalesced where contiguous.
    pub(super) red: Vec<(usize, isize)>,
    pub(super) offset: isize,
    pub out_numel: usize,
    pub red_numel: usize,
}

/// Sort key for "innermost in memory": a zero stride (an expanded dim) never is.
pub(super) fn mem_key(stride: isize) -> usize {
    if stride == 0 {
        usize::MAX
    } else {
        stride.unsigned_abs()
    }
}

impl Geometry {
    /// `reduce[d]` says whether dim `d` is reduced; the output has the kept dims, row-major.
    /// Reduced dims are visited in memory order, so the reduced index `i` given to `step` is
    /// the logical position only when at most one reduced dim has size > 1 (the case of every
    /// reducer that reads `i`).
    pub fn new(shape: &[usize], strides: &[isize], offset: usize, reduce: &[bool]) -> Geometry {
        let mut keep = Vec::new();
        let mut red: Vec<(usize, isize)> = Vec::new();
        let (mut out_numel, mut red_numel) = (1usize, 1usize);
        for d in 0..shape.len() {
            if reduce[d] {
                red_numel *= shape[d];
                if shape[d] != 1 {
                    red.push((shape[d], strides[d]));
                }
            } else {
                out_numel *= shape[d];
                if shape[d] != 1 {
                    keep.push(Kept { size: shape[d], stride: strides[d], ostride: 0 });
                }
            }
        }
        let mut acc = 1usize;
        for k in keep.iter_mut().rev() {
            k.ostride = acc;
            acc *= k.size;
        }
        // Outer to inner by memory stride (stable: ties keep logical order), then merge dims
        // that continue each other in memory.
        red.sort_by_key(|&(_, stride)| std::cmp::Reverse(mem_key(stride)));
        let mut merged: Vec<(usize, isize)> = Vec::with_capacity(red.len());
        for (size, stride) in red {
            match merged.last_mut() {
                Some(last) if last.1 == stride * size as isize => *last = (last.0 * size, stride),
                _ => merged.push((size, stride)),
            }
        }
        Geometry { keep, red: merged, offset: offset as isize, out_numel, red_numel }
    }

    /// Input offset of output element `o`'s first reduced element.
    pub(super) fn keep_offset(&self, mut o: usize) -> isize {
        let mut off = self.offset;
        for k in self.keep.iter().rev() {
            off += (o % k.size) as isize * k.stride;
            o /= k.size;
        }
        off
    }
}

/// Walks consecutive outputs, keeping the input offset of the current one (no divisions per
/// output: reductions of a few elements each are dominated by this bookkeeping otherwise).
pub(super) struct Walker<'a> {
    keep: &'a [Kept],
    idx: Vec<usize>,
    pub(super) off: isize,
}

impl<'a> Walker<'a> {
    pub(super) fn new(g: &'a Geometry, o: usize) -> Walker<'a> {
        let mut idx = vec![0; g.keep.len()];
        let mut rem = o;
        for (d, k) in g.keep.iter().enumerate().rev() {
            idx[d] = rem % k.size;
            rem /= k.size;
        }
        Walker { keep: &g.keep, idx, off: g.keep_offset(o) }
    }

    pub(super) fn advance(&mut self) {
        for d in (0..self.keep.len()).rev() {
            self.idx[d] += 1;
            self.off += self.keep[d].stride;
            if self.idx[d] < self.keep[d].size {
                return;
            }
            self.off -= self.keep[d].size as isize * self.keep[d].stride;
            self.idx[d] = 0;
        }
    }
}

/// Calls `f(offset, len, stride, pos)` for the runs covering reduced indices `[s, e)`, where
/// `pos` is the reduced index of the run's first element and offsets include `base`.
#[inline(always)]
pub(super) fn red_runs(red: &[(usize, isize)], base: isize, s: usize, e: usize, mut f: impl FnMut(isize, usize, isize, usize)) {
    if s >= e {
        return;
    }
    let nd = red.len();
    if nd == 0 {
        // Every reduced dim has size 1: one element.
        f(base, 1, 0, 0);
        return;
    }
    let (inner, inner_stride) = red[nd - 1];
    if nd == 1 {
        f(base + s as isize * inner_stride, e - s, inner_stride, s);
        return;
    }
    let mut idx = vec![0usize; nd];
    let mut rem = s;
    let mut off = base;
    for d in (0..nd).rev() {
        idx[d] = rem % red[d].0;
        rem /= red[d].0;
        off += idx[d] as isize * red[d].1;
    }
    let mut pos = s;
    while pos < e {
        let len = (inner - idx[nd - 1]).min(e - pos);
        f(off, len, inner_stride, pos);
        pos += len;
        if pos >= e {
            break;
        }
        // This run ended at the end of the inner dim: carry into the outer ones.
        off -= idx[nd - 1] as isize * inner_stride;
        idx[nd - 1] = 0;
        let mut d = nd - 1;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            off += red[d].1;
            if idx[d] < red[d].0 {
                break;
            }
            off -= red[d].0 as isize * red[d].1;
            idx[d] = 0;
        }
    }
}
