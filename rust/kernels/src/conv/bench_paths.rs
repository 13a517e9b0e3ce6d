//! Entry points for `benches/probes.rs` (not an API): each conv path forced, with its chunk
//! budget, so that the bench can time the paths side by side on one geometry.

use super::{per_image, winograd, Geometry, COLS_BUDGET};

/// Which implementation runs.
#[derive(Clone, Copy, Debug)]
pub enum ConvPath {
    /// Winograd F(2x2, 3x3) with this chunk budget (elements of V or M per chunk).
    Winograd(usize),
    /// im2col + gemm over chunks of images (`COLS_BUDGET`).
    Im2colChunked,
    /// im2col + gemm one image at a time.
    Im2colPerImage,
}

/// Runs `path` for `g` (which it must suit): `which` 0 is the forward of `x`, `w` into `out`;
/// 1 the input gradient of `gy` into `out`; 2 the weight gradient into `out`.
pub fn conv_path(path: ConvPath, which: u8, x: &[f32], w: &[f32], gy: &[f32], out: &mut [f32], g: &Geometry) {
    let r = match (path, which) {
        (ConvPath::Winograd(b), 0) => winograd::forward_in_chunks(x, w, None, out, g, b),
        (ConvPath::Winograd(b), 1) => winograd::grad_input_in_chunks(gy, w, out, g, b),
        (ConvPath::Winograd(b), _) => winograd::grad_weight_in_chunks(x, gy, out, g, b),
        (ConvPath::Im2colChunked, 0) => super::forward_in_chunks(x, w, None, out, g, COLS_BUDGET),
        (ConvPath::Im2colChunked, 1) => super::grad_input_in_chunks(gy, w, out, g, COLS_BUDGET),
        (ConvPath::Im2colChunked, _) => super::grad_weight_in_chunks(x, gy, out, g, COLS_BUDGET),
        (ConvPath::Im2colPerImage, 0) => per_image::forward(x, w, None, out, g),
        (ConvPath::Im2colPerImage, 1) => per_image::grad_input(gy, w, out, g),
        (ConvPath::Im2colPerImage, _) => per_image::grad_weight(x, gy, out, g),
    };
    r.expect("conv path");
}
