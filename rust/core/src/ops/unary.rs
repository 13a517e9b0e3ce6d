//! Unary elementwise ops and their in-place variants.
//!
//! `UnaryOp` is the table: name, torch's backward node name, and which dtypes the op accepts.
//! `with_unary_fn!` binds the per-element function once per (op, dtype) so every kernel is
//! monomorphised and vectorisable; backward formulas will sit beside each entry.

use crate::device::backend_for;
use crate::kernels::TensorArg;
use crate::dtype::{check_castable, DType};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::elementwise::{map, map_inplace};
use crate::kernels::unary::MathOp;
use crate::kernels::Arg;
use crate::ops::copy::{cast_input, cast_layout, copy_kernel, empty_with_layout, iterator_layout};
use crate::ops::write::{check_no_internal_overlap, write, Alias};
use crate::tensor::Tensor;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sign,
    Exp,
    Log,
    Log1p,
    Expm1,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Log2,
    Log10,
    Exp2,
    Erf,
    Erfc,
    Erfinv,
    Frac,
    Deg2rad,
    Rad2deg,
    Sinc,
    Tanh,
    Sigmoid,
    Relu,
    Silu,
    Gelu,
    GeluTanh,
    Reciprocal,
    Floor,
    Ceil,
    Round,
    Trunc,
    LogicalNot,
    BitwiseNot,
}

/// What an op does with integer and bool inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntRule {
    /// Computes in the default float dtype (exp of an int tensor is float32).
    ToFloat,
    /// Keeps the integer dtype.
    Keep,
    /// Keeps integer dtypes; bool raises the given error.
    KeepNoBool(Error),
    /// Output is bool whatever the input.
    ToBool,
    /// Integer and bool only; floats raise torch's "not implemented" error.
    IntegralOnly,
    /// Float only; other dtypes raise "not implemented" naming this kernel.
    FloatOnly(&'static str),
}

pub struct UnaryDef {
    pub name: &'static str,
    /// The in-place method's name (`exp_`), for mutation blame.
    pub name_: &'static str,
    pub node: &'static str,
    pub ints: IntRule,
}

impl UnaryOp {
    pub fn def(self) -> UnaryDef {
        use IntRule::*;
        use UnaryOp::*;
        let (name, node, ints) = match self {
            Neg => ("neg", "NegBackward0", KeepNoBool(Error::Runtime("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into()))),
            Abs => ("abs", "AbsBackward0", KeepNoBool(Error::NotImplemented("\"abs_cpu\" not implemented for 'Bool'".into()))),
            Sign => ("sign", "SignBackward0", Keep),
            Exp => ("exp", "ExpBackward0", ToFloat),
            Log => ("log", "LogBackward0", ToFloat),
            Log1p => ("log1p", "Log1PBackward0", ToFloat),
            Expm1 => ("expm1", "Expm1Backward0", ToFloat),
            Sqrt => ("sqrt", "SqrtBackward0", ToFloat),
            Rsqrt => ("rsqrt", "RsqrtBackward0", ToFloat),
            Sin => ("sin", "SinBackward0", ToFloat),
            Cos => ("cos", "CosBackward0", ToFloat),
            Tan => ("tan", "TanBackward0", ToFloat),
            Asin => ("asin", "AsinBackward0", ToFloat),
            Acos => ("acos", "AcosBackward0", ToFloat),
            Atan => ("atan", "AtanBackward0", ToFloat),
            Sinh => ("sinh", "SinhBackward0", ToFloat),
            Cosh => ("cosh", "CoshBackward0", ToFloat),
            Asinh => ("asinh", "AsinhBackward0", ToFloat),
            Acosh => ("acosh", "AcoshBackward0", ToFloat),
            Atanh => ("atanh", "AtanhBackward0", ToFloat),
            Log2 => ("log2", "Log2Backward0", ToFloat),
            Log10 => ("log10", "Log10Backward0", ToFloat),
            Exp2 => ("exp2", "Exp2Backward0", ToFloat),
            Erf => ("erf", "ErfBackward0", ToFloat),
            Erfc => ("erfc", "ErfcBackward0", ToFloat),
            Erfinv => ("erfinv", "ErfinvBackward0", ToFloat),
            Frac => ("frac", "FracBackward0", FloatOnly("frac_cpu")),
            Deg2rad => ("deg2rad", "Deg2RadBackward0", ToFloat),
            Rad2deg => ("rad2deg", "Rad2DegBackward0", ToFloat),
            Sinc => ("sinc", "SincBackward0", ToFloat),
            Tanh => ("tanh", "TanhBackward0", ToFloat),
            Sigmoid => ("sigmoid", "SigmoidBackward0", ToFloat),
            Relu => ("relu", "ReluBackward0", KeepNoBool(Error::Runtime("Boolean inputs not supported for relu".into()))),
            Silu => ("silu", "SiluBackward0", FloatOnly("silu_cpu")),
            Gelu => ("gelu", "GeluBackward0", FloatOnly("GeluKernelImpl")),
            GeluTanh => ("gelu", "GeluBackward0", FloatOnly("GeluKernelImpl")),
            Reciprocal => ("reciprocal", "ReciprocalBackward0", ToFloat),
            Floor => ("floor", "FloorBackward0", KeepNoBool(not_for_bool("floor_vml_cpu"))),
            Ceil => ("ceil", "CeilBackward0", KeepNoBool(not_for_bool("ceil_vml_cpu"))),
            Round => ("round", "RoundBackward0", KeepNoBool(not_for_bool("round_vml_cpu"))),
            Trunc => ("trunc", "TruncBackward0", KeepNoBool(not_for_bool("trunc_vml_cpu"))),
            LogicalNot => ("logical_not", "NotImplemented", ToBool),
            BitwiseNot => ("bitwise_not", "NotImplemented", IntegralOnly),
        };
        UnaryDef { name, name_: inplace_name(name), node, ints }
    }

    /// The dtype the op computes and returns for an input of `dtype`.
    pub fn result_dtype(self, dtype: DType) -> Result<DType> {
        let def = self.def();
        Ok(match def.ints {
            _ if dtype.is_floating() && matches!(def.ints, IntRule::IntegralOnly) => {
                return Err(Error::NotImplemented(format!("\"{}_cpu\" not implemented for '{}'", def.name, dtype.scalar_type_name())))
            }
            IntRule::ToBool => DType::Bool,
            _ if dtype.is_floating() => dtype,
            IntRule::FloatOnly(kernel) => {
                return Err(Error::NotImplemented(format!("\"{}\" not implemented for '{}'", kernel, dtype.scalar_type_name())))
            }
            IntRule::ToFloat => DType::Float32,
            IntRule::KeepNoBool(err) if dtype == DType::Bool => return Err(err),
            _ => dtype,
        })
    }
}

fn inplace_name(name: &'static str) -> &'static str {
    match name {
        "neg" => "neg_", "abs" => "abs_", "sign" => "sign_", "exp" => "exp_", "log" => "log_", "log1p" => "log1p_",
        "expm1" => "expm1_", "sqrt" => "sqrt_", "rsqrt" => "rsqrt_", "sin" => "sin_", "cos" => "cos_", "tanh" => "tanh_",
        "sigmoid" => "sigmoid_", "relu" => "relu_", "silu" => "silu_", "gelu" => "gelu_", "reciprocal" => "reciprocal_",
        "floor" => "floor_", "ceil" => "ceil_", "round" => "round_", "trunc" => "trunc_", "logical_not" => "logical_not_",
        "tan" => "tan_", "asin" => "asin_", "acos" => "acos_", "atan" => "atan_", "sinh" => "sinh_", "cosh" => "cosh_",
        "asinh" => "asinh_", "acosh" => "acosh_", "atanh" => "atanh_", "log2" => "log2_", "log10" => "log10_",
        "exp2" => "exp2_", "erf" => "erf_", "erfc" => "erfc_", "erfinv" => "erfinv_", "frac" => "frac_",
        "deg2rad" => "deg2rad_", "rad2deg" => "rad2deg_", "sinc" => "sinc_",
        _ => "bitwise_not_",
    }
}

fn not_for_bool(kernel: &str) -> Error {
    Error::NotImplemented(format!("\"{}\" not implemented for 'Bool'", kernel))
}

impl UnaryOp {
    /// The ops with vectorised kernels (`kernels::unary`), forward and backward.
    fn math(self) -> Option<MathOp> {
        Some(match self {
            UnaryOp::Exp => MathOp::Exp,
            UnaryOp::Log => MathOp::Log,
            UnaryOp::Tanh => MathOp::Tanh,
            UnaryOp::Sigmoid => MathOp::Sigmoid,
            UnaryOp::Silu => MathOp::Silu,
            UnaryOp::Gelu => MathOp::Gelu,
            UnaryOp::GeluTanh => MathOp::GeluTanh,
            _ => return None,
        })
    }
}

/// deg2rad's and rad2deg's factors (torch's `M_PI_180` and `M_180_PI`).
pub const DEG_TO_RAD: f64 = std::f64::consts::PI / 180.0;
pub const RAD_TO_DEG: f64 = 180.0 / std::f64::consts::PI;

/// Binds `$f` to the per-element function of `$op` for float type `$T` and evaluates `$body`.
macro_rules! with_float_fn {
    ($op:expr, $T:ty, $f:ident => $body:expr) => {{
        let zero = 0.0 as $T;
        let one = 1.0 as $T;
        match $op {
            UnaryOp::Neg => { let $f = |x: $T| -x; $body }
            UnaryOp::Abs => { let $f = |x: $T| x.abs(); $body }
            // torch's sign: +0.0 for both zeros and for NaN.
            UnaryOp::Sign => { let $f = move |x: $T| if x > zero { one } else if x < zero { -one } else { zero }; $body }
            UnaryOp::Log1p => { let $f = |x: $T| x.ln_1p(); $body }
            UnaryOp::Expm1 => { let $f = |x: $T| x.exp_m1(); $body }
            UnaryOp::Sqrt => { let $f = |x: $T| x.sqrt(); $body }
            UnaryOp::Rsqrt => { let $f = move |x: $T| one / x.sqrt(); $body }
            UnaryOp::Sin => { let $f = |x: $T| x.sin(); $body }
            UnaryOp::Cos => { let $f = |x: $T| x.cos(); $body }
            UnaryOp::Tan => { let $f = |x: $T| $crate::ops::unary::special::Special::tan(x); $body }
            UnaryOp::Asin => { let $f = |x: $T| $crate::ops::unary::special::Special::asin(x); $body }
            UnaryOp::Acos => { let $f = |x: $T| $crate::ops::unary::special::Special::acos(x); $body }
            UnaryOp::Atan => { let $f = |x: $T| $crate::ops::unary::special::Special::atan(x); $body }
            UnaryOp::Sinh => { let $f = |x: $T| $crate::ops::unary::special::Special::sinh(x); $body }
            UnaryOp::Cosh => { let $f = |x: $T| $crate::ops::unary::special::Special::cosh(x); $body }
            UnaryOp::Asinh => { let $f = |x: $T| $crate::ops::unary::special::Special::asinh(x); $body }
            UnaryOp::Acosh => { let $f = |x: $T| $crate::ops::unary::special::Special::acosh(x); $body }
            UnaryOp::Atanh => { let $f = |x: $T| $crate::ops::unary::special::Special::atanh(x); $body }
            UnaryOp::Log2 => { let $f = |x: $T| $crate::ops::unary::special::Special::log2(x); $body }
            UnaryOp::Log10 => { let $f = |x: $T| $crate::ops::unary::special::Special::log10(x); $body }
            UnaryOp::Exp2 => { let $f = |x: $T| $crate::ops::unary::special::Special::exp2(x); $body }
            UnaryOp::Erf => { let $f = |x: $T| $crate::ops::unary::special::Special::erf(x); $body }
            UnaryOp::Erfc => { let $f = |x: $T| $crate::ops::unary::special::Special::erfc(x); $body }
            UnaryOp::Erfinv => { let $f = |x: $T| $crate::ops::unary::special::Special::erfinv(x); $body }
            // torch's frac: x - trunc(x) (inf gives NaN, -0.0 gives +0.0)
            UnaryOp::Frac => { let $f = |x: $T| x - x.trunc(); $body }
            // torch multiplies by the constant rounded to the tensor's dtype
            UnaryOp::Deg2rad => { let $f = |x: $T| x * ($crate::ops::unary::DEG_TO_RAD as $T); $body }
            UnaryOp::Rad2deg => { let $f = |x: $T| x * ($crate::ops::unary::RAD_TO_DEG as $T); $body }
            // torch's sinc: 1 at 0, else sin(π x) / (π x) with π x rounded to the dtype
            UnaryOp::Sinc => {
                let $f = move |x: $T| if x == zero { one } else { let p = std::f64::consts::PI as $T * x; p.sin() / p };
                $body
            }
            // torch's relu is clamp_min(x, 0): NaN and -0.0 pass unchanged.
            UnaryOp::Relu => { let $f = move |x: $T| if x < zero { zero } else { x }; $body }
            UnaryOp::Reciprocal => { let $f = move |x: $T| one / x; $body }
            UnaryOp::Floor => { let $f = |x: $T| x.floor(); $body }
            UnaryOp::Ceil => { let $f = |x: $T| x.ceil(); $body }
            // torch.round is rint: half to even, the sign kept (round(-0.5) is -0.0).
            UnaryOp::Round => { let $f = |x: $T| x.round_ties_even(); $body }
            UnaryOp::Trunc => { let $f = |x: $T| x.trunc(); $body }
            UnaryOp::LogicalNot | UnaryOp::BitwiseNot => unreachable!("handled before float dispatch"),
            UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Silu | UnaryOp::Gelu | UnaryOp::GeluTanh => {
                unreachable!("vectorised: kernels::unary::math")
            }
        }
    }};
}

/// Binds `$f` for integer type `$T` (ops that keep integer dtypes).
macro_rules! with_int_fn {
    ($op:expr, $T:ty, $f:ident => $body:expr) => {{
        match $op {
            UnaryOp::Neg => { let $f = |x: $T| x.wrapping_neg(); $body }
            UnaryOp::Abs => { let $f = |x: $T| x.wrapping_abs(); $body }
            UnaryOp::Sign => { let $f = |x: $T| x.signum(); $body }
            UnaryOp::Relu => { let $f = |x: $T| if x > 0 { x } else { 0 }; $body }
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => { let $f = |x: $T| x; $body }
            UnaryOp::BitwiseNot => { let $f = |x: $T| !x; $body }
            _ => unreachable!("float-only ops cast ints to float first"),
        }
    }};
}

mod backward_ops;
mod fast;
mod special;

/// The CPU backend's `unary`: runs `op` elementwise from `src` (already of the compute dtype)
/// into `dst` (same dtype). `in_place` means `dst` is `src` itself.
pub(crate) fn cpu_kernel(op: UnaryOp, dst: &Tensor, src: &Tensor, in_place: bool) {
    let shape = dst.shape().to_vec();
    if let (Some(m), true) = (op.math(), dst.dtype().is_floating()) {
        crate::dispatch_float!(dst.dtype(), T => {
            // SAFETY: as for `go!` below.
            unsafe { crate::kernels::unary::math::<T>(m, &shape, Arg::of(dst), Arg::of(src), in_place) }
        }, _ => unreachable!("checked floating"));
        return;
    }
    macro_rules! go {
        ($T:ty, $f:ident) => {
            // SAFETY: layouts are inside their storages; out-of-place dst is fresh, and in place
            // dst and src are the same elements (checked by the write path).
            unsafe {
                if in_place {
                    map_inplace::<$T>(&shape, Arg::of(dst), $f)
                } else {
                    map::<$T, $T>(&shape, Arg::of(dst), Arg::of(src), $f)
                }
            }
        };
    }
    match (op, dst.dtype()) {
        (UnaryOp::LogicalNot, _) => {
            // Output bool from any input dtype: never in place across dtypes.
            crate::dispatch!(src.dtype(), S => {
                if in_place && src.dtype() == DType::Bool {
                    // SAFETY: as above.
                    unsafe { map_inplace::<bool>(&shape, Arg::of(dst), |x| !x) }
                } else {
                    // SAFETY: as above.
                    unsafe { map::<S, bool>(&shape, Arg::of(dst), Arg::of(src), |x| !x.to_bool()) }
                }
            })
        }
        (_, DType::Float32) => with_float_fn!(op, f32, f => go!(f32, f)),
        (_, DType::Float64) => with_float_fn!(op, f64, f => go!(f64, f)),
        (_, DType::Int64) => with_int_fn!(op, i64, f => go!(i64, f)),
        (_, DType::Int32) => with_int_fn!(op, i32, f => go!(i32, f)),
        (_, DType::Bool) => {
            // Ops that keep bool: abs/sign/floor... are identities; bitwise_not is logical not.
            if op == UnaryOp::BitwiseNot {
                let f = |x: bool| !x;
                go!(bool, f)
            } else {
                let f = |x: bool| x;
                go!(bool, f)
            }
        }
        (_, d) => crate::element::narrow_in_compute_kernel(d),
    }
}

/// Out-of-place: a new tensor (torch's output layout: the input's memory order).
pub fn unary_raw(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    if let Some(out) = fast::fast_unary(op, x)? {
        return Ok(out);
    }
    let dtype = op.result_dtype(x.dtype())?;
    let compute = if op == UnaryOp::LogicalNot { x.clone() } else { cast_input(x, dtype)? };
    let layout = if op == UnaryOp::LogicalNot { x.layout.clone() } else { cast_layout(x, dtype) };
    let out_layout = match op {
        // torch writes these into `empty_like(self)` (a multiply by a constant into a tensor it
        // made), not into TensorIterator's result: the input's strides where it is dense
        UnaryOp::Deg2rad | UnaryOp::Rad2deg => crate::ops::copy::preserve_format(&x.layout),
        _ => iterator_layout(x.shape(), &[&layout]),
    };
    let out = empty_with_layout(&out_layout, dtype, x.device())?;
    backend_for(&[&out, &compute])?.unary(op, &out, &compute, false)?;
    Ok(out)
}

/// In-place: `x.op_()` through the write path; the result dtype must be castable to x's.
pub fn unary_inplace_raw(op: UnaryOp, x: &Tensor) -> Result<()> {
    // torch's order: argument checks (RuntimeError), overlap, cast, then the kernel's dtype support.
    let dtype = op.result_dtype(x.dtype());
    if let Err(e @ Error::Runtime(_)) = dtype {
        return Err(e);
    }
    check_no_internal_overlap(x)?;
    let dtype = dtype?;
    check_castable(dtype, x.dtype())?;
    write(x, &[x], |reads| {
        debug_assert_eq!(reads[0].1, Alias::Same);
        if dtype == x.dtype() {
            backend_for(&[x])?.unary(op, x, x, true)
        } else {
            // e.g. logical_not_ on a float tensor: compute to bool, cast back.
            let tmp = unary_raw(op, x)?;
            copy_kernel(x, &tmp)
        }
    })
}

/// A float map computed in f64 and rounded once to the tensor's float dtype: the
/// float-parameterised activations and gelu's cdf. The CPU evaluates `eval`; a device runs its
/// kernel of the same name (unary.cu's `LeakyRelu`, `Elu`, `GeluCdf` functors) with `params`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloatMap {
    /// `x > 0 || x is NaN ? x : slope · x`
    LeakyRelu { slope: f64 },
    /// torch's elu: `x < 0 ? alpha · scale · expm1(input_scale · x) : scale · x` (NaN and ±0 take
    /// the linear branch: with a negative alpha, elu(+0) is +0 as in torch)
    /// (elu: scale = input_scale = 1; selu: torch's constants; celu: input_scale = 1 / alpha)
    Elu { alpha: f64, scale: f64, input_scale: f64 },
    /// `(1 + erf(x / √2)) / 2`
    GeluCdf,
}

impl FloatMap {
    #[inline]
    pub fn eval(self, v: f64) -> f64 {
        match self {
            FloatMap::LeakyRelu { slope } => if v > 0.0 || v.is_nan() { v } else { v * slope },
            FloatMap::Elu { alpha, scale, input_scale } => {
                if v < 0.0 { (alpha * scale) * (v * input_scale).exp_m1() } else { v * scale }
            }
            FloatMap::GeluCdf => 0.5 * (1.0 + libm::erf(v * std::f64::consts::FRAC_1_SQRT_2)),
        }
    }

    /// The kernel's name (unary.cu) and torch's op name in errors.
    pub fn name(self) -> &'static str {
        match self {
            FloatMap::LeakyRelu { .. } => "leaky_relu",
            FloatMap::Elu { .. } => "elu",
            FloatMap::GeluCdf => "gelu",
        }
    }

    /// The parameters a device kernel takes (p0, p1, p2).
    pub fn params(self) -> [f64; 3] {
        match self {
            FloatMap::LeakyRelu { slope } => [slope, 0.0, 0.0],
            FloatMap::Elu { alpha, scale, input_scale } => [alpha, scale, input_scale],
            FloatMap::GeluCdf => [0.0; 3],
        }
    }
}

/// `map` over a float tensor, out of place or in place, on the tensor's device.
pub fn map_float_raw(x: &Tensor, in_place: bool, map: FloatMap) -> Result<Tensor> {
    if in_place {
        check_no_internal_overlap(x)?;
    }
    if !x.dtype().is_floating() {
        let device = if x.device().is_cpu() { "cpu" } else { "cuda" };
        return Err(Error::NotImplemented(format!("\"{}_{device}\" not implemented for '{}'", map.name(), x.dtype().scalar_type_name())));
    }
    if in_place {
        write(x, &[x], |_| backend_for(&[x])?.float_map(map, x, x, true))?;
        Ok(x.clone())
    } else {
        let out = empty_with_layout(&iterator_layout(x.shape(), &[&x.layout]), x.dtype(), x.device())?;
        backend_for(&[&out, x])?.float_map(map, &out, x, false)?;
        Ok(out)
    }
}

/// The CPU's `float_map`: each element through `map.eval` in f64.
pub(crate) fn float_map_cpu_kernel(fm: FloatMap, dst: &Tensor, src: &Tensor, in_place: bool) {
    crate::dispatch_float!(dst.dtype(), T => {
        let f = move |v: T| T::from_f64(fm.eval(v.to_f64()));
        // SAFETY: both layouts lie inside their storages (tensors' invariant) and the dtype is
        // T's; in place dst is src, checked free of internal overlap by `map_float_raw`; out of
        // place dst is a fresh tensor, so it overlaps nothing.
        unsafe {
            if in_place { map_inplace::<T>(dst.shape(), Arg::of(dst), f) }
            else { map::<T, T>(dst.shape(), Arg::of(dst), Arg::of(src), f) }
        }
    }, _ => unreachable!("checked floating"))
}

#[allow(dead_code)]
fn _uses<T: Element>() {}

// ----- autograd: what each op saves and its backward formula (derivatives.yaml) -----

/// What the formula of `op` reads: its input (`self`), its output (`result`), or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saves {
    Nothing,
    Input,
    Result,
}

impl UnaryOp {
    /// None for ops without a derivative (integer/bool outputs).
    pub fn saves(self) -> Option<Saves> {
        use UnaryOp::*;
        Some(match self {
            Neg | Sign | Floor | Ceil | Round | Trunc | Frac | Deg2rad | Rad2deg => Saves::Nothing,
            Abs | Log | Log1p | Sin | Cos | Silu | Gelu | GeluTanh => Saves::Input,
            Asin | Acos | Atan | Sinh | Cosh | Asinh | Acosh | Atanh | Log2 | Log10 | Erf | Erfc | Erfinv | Sinc => Saves::Input,
            Exp | Expm1 | Sqrt | Rsqrt | Tanh | Sigmoid | Relu | Reciprocal | Tan | Exp2 => Saves::Result,
            LogicalNot | BitwiseNot => return None,
        })
    }

    /// The node of an in-place form torch records without a derivative (derivatives.yaml's
    /// `not_implemented("inplace version of asinh")`): the graph is built, and backward through
    /// it raises NotImplementedError.
    fn inplace_without_derivative(self) -> Option<&'static str> {
        match self {
            UnaryOp::Asinh => Some("AsinhBackward1"),
            UnaryOp::Acosh => Some("AcoshBackward1"),
            UnaryOp::Atanh => Some("AtanhBackward1"),
            _ => None,
        }
    }

    /// d(op)/dx applied to `g`; `s` is the saved input or result (see `saves`). Where torch's
    /// formula is one backward op of its own (`tanh_backward`, ...), that op, recorded under
    /// its own node when building a graph of the backward (`backward_ops`).
    pub fn backward(self, g: &Tensor, s: Option<&Tensor>) -> Result<Tensor> {
        match (backward_ops::BackwardOp::of(self), s) {
            (Some(op), Some(s)) => backward_ops::apply(op, g, s),
            _ => self.composite_backward(g, s),
        }
    }

    /// `backward` without a node of its own: the fused kernel when nothing is recorded, the
    /// composite formula otherwise.
    pub(crate) fn plain_backward(self, g: &Tensor, s: &Tensor) -> Result<Tensor> {
        self.composite_backward(g, Some(s))
    }

    fn composite_backward(self, g: &Tensor, s: Option<&Tensor>) -> Result<Tensor> {
        use crate::ops::formulas::*;
        use crate::ops::binary::BinaryOp::Le;
        use UnaryOp::*;
        if let Some(out) = fused_backward(self, g, s)? {
            return Ok(out);
        }
        let s = || s.expect("saved by the forward");
        match self {
            Neg => neg(g),
            Sign | Floor | Ceil | Round | Trunc => Ok(zeros_like(g)?),
            // torch: grad * self.sgn() (SgnBackward0 in a recorded graph)
            Abs => mul(g, &crate::ops::sgn::sgn(s())?),
            Log => div(g, s()),
            Log1p => div(g, &add_c(s(), 1.0)?),
            Sin => mul(g, &un(Cos, s())?),
            Cos => mul(g, &neg(&un(Sin, s())?)?),
            // derivatives.yaml's formulas in their order: C++ `1 + t` and `t * c` are the
            // Scalar overloads (add_c, mul_c), `c - t` a filled tensor minus t (filled_minus)
            Tan => mul(g, &add_c(&pow_s(s(), 2.0)?, 1.0)?),
            Asin => mul(g, &un(Rsqrt, &add_c(&mul(&neg(s())?, s())?, 1.0)?)?),
            Acos => mul(g, &neg(&un(Rsqrt, &add_c(&mul(&neg(s())?, s())?, 1.0)?)?)?),
            Atan => div(g, &add_c(&mul(s(), s())?, 1.0)?),
            Sinh => mul(g, &un(Cosh, s())?),
            Cosh => mul(g, &un(Sinh, s())?),
            Asinh => mul(g, &un(Rsqrt, &add_c(&pow_s(s(), 2.0)?, 1.0)?)?),
            Acosh => mul(g, &un(Rsqrt, &sub_c(&mul(s(), s())?, 1.0)?)?),
            Atanh => div(&mul_c(g, 1.0)?, &filled_minus(1.0, &pow_s(s(), 2.0)?)?),
            Log2 => div(g, &mul_c(s(), std::f64::consts::LN_2)?),
            Log10 => div(g, &mul_c(s(), std::f64::consts::LN_10)?),
            Exp2 => mul_c(&mul(g, s())?, std::f64::consts::LN_2),
            Erf => mul(&mul_c(&un(Exp, &neg(&pow_s(s(), 2.0)?)?)?, 2.0 / std::f64::consts::PI.sqrt())?, g),
            Erfc => mul(&mul_c(&un(Exp, &neg(&pow_s(s(), 2.0)?)?)?, -2.0 / std::f64::consts::PI.sqrt())?, g),
            Erfinv => mul(&mul_c(&un(Exp, &pow_s(&un(Erfinv, s())?, 2.0)?)?, 0.5 * std::f64::consts::PI.sqrt())?, g),
            Frac => Ok(g.clone()),
            Deg2rad => mul_c(g, DEG_TO_RAD),
            Rad2deg => mul_c(g, RAD_TO_DEG),
            Sinc => sinc_backward(g, s()),
            Exp => mul(g, s()),
            Expm1 => mul(g, &add_c(s(), 1.0)?),
            Sqrt => div(g, &mul_c(s(), 2.0)?),
            // torch: -0.5 * grad * result^3 (the factor is a power of two: exact in either order)
            Rsqrt => mul(&mul_c(g, -0.5)?, &pow_s(s(), 3.0)?),
            Tanh => mul(g, &rsub_s(&mul(s(), s())?, 1.0)?),
            Sigmoid => mul(g, &mul(s(), &rsub_s(s(), 1.0)?)?),
            // torch's threshold_backward(grad, result, 0)
            Relu => zero_where(g, &cmp_s(Le, s(), 0.0)?),
            // torch: -grad * (result * result)
            Reciprocal => mul(&neg(g)?, &mul(s(), s())?),
            Silu => {
                // torch's infinitely_differentiable_silu_backward, in its order:
                // grad * sigmoid * (1.0 + x * (1.0 - sigmoid)), where C++'s `1.0 - t` is a
                // filled tensor minus t (SubBackward0) and `1.0 + t` the Scalar add (AddBackward1)
                let sig = un(Sigmoid, s())?;
                mul(&mul(g, &sig)?, &add_c(&mul(s(), &filled_minus(1.0, &sig)?)?, 1.0)?)
            }
            Gelu => {
                // 0.5 * (1 + erf(x / sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi)
                let x = s();
                let cdf = gelu_cdf(x)?;
                let pdf = mul_s(&un(Exp, &mul_s(&mul(x, x)?, -0.5)?)?, 1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
                mul(g, &add(&cdf, &mul(x, &pdf)?)?)
            }
            GeluTanh => {
                let x = s();
                let k = (2.0 / std::f64::consts::PI).sqrt();
                let x2 = mul(x, x)?;
                let inner = mul_s(&add(x, &mul_s(&mul(&x2, x)?, 0.044715)?)?, k)?;
                let th = un(Tanh, &inner)?;
                let left = mul_s(&add_s(&th, 1.0)?, 0.5)?;
                let dinner = mul_s(&add_s(&mul_s(&x2, 3.0 * 0.044715)?, 1.0)?, k)?;
                let right = mul(&mul_s(&mul(x, &rsub_s(&mul(&th, &th)?, 1.0)?)?, 0.5)?, &dinner)?;
                mul(g, &add(&left, &right)?)
            }
            LogicalNot | BitwiseNot => unreachable!("not differentiable"),
        }
    }
}

/// torch's `sinc_backward`: `g * (πx cos(πx) - sin(πx)) / (π x²)`, 0 where `π x²` is 0.
fn sinc_backward(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    use crate::ops::formulas::*;
    use std::f64::consts::PI;
    let x_pi = mul_c(x, PI)?;
    let x_squared_pi = mul_c(&mul(x, x)?, PI)?;
    let out = mul(g, &div(&sub(&mul(&x_pi, &un(UnaryOp::Cos, &x_pi)?)?, &un(UnaryOp::Sin, &x_pi)?)?, &x_squared_pi)?)?;
    where_t(&cmp_s(crate::ops::binary::BinaryOp::Eq, &x_squared_pi, 0.0)?, &zeros(&[], g.dtype(), g.device())?, &out)
}

/// `g * op'(s)` in one kernel pass, when no graph of the backward is being recorded (with
/// `create_graph=True` the composite formula below runs, so it can be differentiated again).
fn fused_backward(op: UnaryOp, g: &Tensor, s: Option<&Tensor>) -> Result<Option<Tensor>> {
    let Some(s) = s else { return Ok(None) };
    let plain = g.dtype() == s.dtype() && g.dtype().is_floating() && g.shape() == s.shape();
    if !plain || crate::autograd::should_record(&[Some(g), Some(s)]) {
        return Ok(None);
    }
    let out = || empty_with_layout(&iterator_layout(g.shape(), &[&g.layout, &s.layout]), g.dtype(), g.device());
    let backend = backend_for(&[g, s])?;
    if let Some(m) = op.math() {
        let dst = out()?;
        if backend.fused_unary_backward(m, &dst, g, s)? {
            return Ok(Some(dst));
        }
    }
    backend.unary_backward(op, g, s, &out)
}

/// The CPU backend's `fused_unary_backward`.
pub(crate) fn fused_backward_cpu_kernel(op: MathOp, out: &Tensor, g: &Tensor, s: &Tensor) {
    crate::dispatch_float!(g.dtype(), T => {
        // SAFETY: layouts inside their storages; `out` is fresh, so it overlaps neither input.
        unsafe { crate::kernels::unary::math_backward::<T>(op, g.shape(), Arg::of(out), Arg::of(g), Arg::of(s)) }
    }, _ => unreachable!("checked floating"));
}

/// 0.5 * (1 + erf(x / sqrt 2)), elementwise (a constant factor of the gelu derivative).
fn gelu_cdf(x: &Tensor) -> Result<Tensor> {
    map_float_raw(x, false, FloatMap::GeluCdf)
}

/// `unary(op, x)` when autograd records nothing and the small-call fast path
/// (`fast::fast_unary`) takes it; None otherwise, and the caller runs `unary`. (With nothing
/// to record, `unary`'s precheck has nothing to check: it looks only at inputs that require grad.)
pub fn unary_unrecorded(op: UnaryOp, x: &Tensor) -> Result<Option<Tensor>> {
    if crate::autograd::should_record(&[Some(x)]) {
        return Ok(None);
    }
    fast::fast_unary(op, x)
}

/// Differentiable `op(x)`.
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = unary_raw(op, x)?;
    let (Some(saves), Some(mut rec)) = (op.saves(), crate::autograd::Recorder::new(&[Some(x)])?) else { return Ok(out) };
    match saves {
        Saves::Nothing => {}
        Saves::Input => rec.save("self", x)?,
        Saves::Result => rec.save_output("result", &out, 0),
    }
    match op {
        UnaryOp::Gelu => rec.value("approximate", "none"),
        UnaryOp::GeluTanh => rec.value("approximate", "tanh"),
        _ => {}
    }
    rec.finish(op.def().node, &[&out], Box::new(move |ctx| Ok(vec![Some(op.backward(ctx.grad(), ctx.saved.first())?)])))?;
    Ok(out)
}

/// Differentiable `x.op_()`: formulas on the input save a copy of the old value (taken before
/// the write); formulas on the result save `x` itself after it (R14).
pub fn unary_(op: UnaryOp, x: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op(op.def().name_);
    let rec = crate::autograd::Recorder::inplace(x, &[])?;
    if let Some(node) = op.inplace_without_derivative() {
        unary_inplace_raw(op, x)?;
        let Some(rec) = rec else { return Ok(()) };
        let name = op.def().name;
        return rec.finish_inplace(node, x, Box::new(move |_| {
            Err(Error::NotImplemented(format!("the derivative for 'inplace version of {name}' is not implemented.")))
        }));
    }
    let saves = op.saves();
    // torch saves `self.clone()`, itself a recorded op
    let old = match (&rec, saves) {
        (Some(_), Some(Saves::Input)) => Some(crate::ops::copy::clone(x)?),
        _ => None,
    };
    unary_inplace_raw(op, x)?;
    let (Some(mut rec), Some(saves)) = (rec, saves) else { return Ok(()) };
    match saves {
        Saves::Nothing => {}
        Saves::Input => rec.save("self", old.as_ref().expect("cloned above"))?,
        Saves::Result => rec.save_output("result", x, 0),
    }
    rec.finish_inplace(op.def().node, x, Box::new(move |ctx| Ok(vec![Some(op.backward(ctx.grad(), ctx.saved.first())?)])))
}

/// `leaky_relu(x, negative_slope)`, `elu(x, alpha)` / `selu(x)` (torch's elu op with a scale:
/// EluBackward), `celu(x, alpha)` (elu with input_scale 1/alpha, its own node CeluBackward):
/// float-parameterised activations.
#[derive(Debug, Clone, Copy)]
pub enum ParamUnary {
    LeakyRelu(f64),
    Elu { alpha: f64, scale: f64, input_scale: f64 },
    Celu(f64),
}

/// selu's constants (torch's `SELU_ALPHA`, `SELU_SCALE`).
pub const SELU_ALPHA: f64 = 1.6732632423543772;
pub const SELU_SCALE: f64 = 1.0507009873554805;

impl ParamUnary {
    /// `elu(x, alpha)`.
    pub fn elu(alpha: f64) -> ParamUnary {
        ParamUnary::Elu { alpha, scale: 1.0, input_scale: 1.0 }
    }

    /// `selu(x)`: elu with torch's constants.
    pub fn selu() -> ParamUnary {
        ParamUnary::Elu { alpha: SELU_ALPHA, scale: SELU_SCALE, input_scale: 1.0 }
    }

    /// (alpha, scale, input_scale) of torch's elu op, which computes every elu-family member.
    fn elu_params(self) -> Option<(f64, f64, f64)> {
        match self {
            ParamUnary::LeakyRelu(_) => None,
            ParamUnary::Elu { alpha, scale, input_scale } => Some((alpha, scale, input_scale)),
            ParamUnary::Celu(alpha) => Some((alpha, 1.0, 1.0 / alpha)),
        }
    }

    fn map(self) -> FloatMap {
        match (self, self.elu_params()) {
            (ParamUnary::LeakyRelu(slope), _) => FloatMap::LeakyRelu { slope },
            (_, Some((alpha, scale, input_scale))) => FloatMap::Elu { alpha, scale, input_scale },
            (_, None) => unreachable!("only leaky_relu has no elu parameters"),
        }
    }

    /// Out of place the formula reads the input (`...Backward0`); in place it reads the result
    /// (`...Backward1`), as torch's leaky_relu_/elu_/celu_.
    fn node(self, in_place: bool) -> &'static str {
        match (self, in_place) {
            (ParamUnary::LeakyRelu(_), false) => "LeakyReluBackward0",
            (ParamUnary::LeakyRelu(_), true) => "LeakyReluBackward1",
            (ParamUnary::Elu { .. }, false) => "EluBackward0",
            (ParamUnary::Elu { .. }, true) => "EluBackward1",
            (ParamUnary::Celu(_), false) => "CeluBackward0",
            (ParamUnary::Celu(_), true) => "CeluBackward1",
        }
    }

    /// The parameters torch's node keeps beside the saved tensor (`grad_fn._saved_alpha`, ...).
    fn save_values(self, rec: &mut crate::autograd::Recorder) {
        let number = |v: f64| crate::ops::reduce::py_number(crate::dtype::Scalar::Float(v));
        match self {
            ParamUnary::LeakyRelu(slope) => rec.value("negative_slope", number(slope)),
            ParamUnary::Elu { alpha, scale, input_scale } => {
                rec.value("alpha", number(alpha));
                rec.value("input_scale", elu_scalar(input_scale));
                rec.value("scale", elu_scalar(scale));
            }
            ParamUnary::Celu(alpha) => rec.value("alpha", number(alpha)),
        }
    }

    /// d(op)/dx applied to `g`: torch's `leaky_relu_backward` / `elu_backward` op (`backward_ops`;
    /// celu's derivative is elu_backward with its parameters).
    fn backward(self, g: &Tensor, s: &Tensor, of_result: bool) -> Result<Tensor> {
        // With a negative slope / alpha the result's sign no longer tells which branch the input
        // took, so torch's backward of the in-place forms refuses (not a wrong gradient)
        match (self, of_result) {
            (ParamUnary::LeakyRelu(slope), true) if slope < 0.0 => return Err(Error::Runtime(
                "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope".into(),
            )),
            (_, true) if self.elu_params().is_some_and(|(alpha, _, _)| alpha < 0.0) => return Err(Error::Runtime(
                "In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead.".into(),
            )),
            _ => {}
        }
        let op = match (self, self.elu_params()) {
            (ParamUnary::LeakyRelu(slope), _) => backward_ops::BackwardOp::LeakyRelu(slope, of_result),
            // derivatives.yaml's celu entry passes `1.0 / alpha.toFloat()`: alpha rounded to
            // float32 first (the forward divides in double)
            (ParamUnary::Celu(alpha), _) => {
                backward_ops::BackwardOp::Elu { alpha, scale: 1.0, input_scale: 1.0 / f64::from(alpha as f32), is_result: of_result }
            }
            (_, Some((alpha, scale, input_scale))) => backward_ops::BackwardOp::Elu { alpha, scale, input_scale, is_result: of_result },
            (_, None) => unreachable!("only leaky_relu has no elu parameters"),
        };
        backward_ops::apply(op, g, s)
    }

    pub(crate) fn formula(self, g: &Tensor, s: &Tensor, of_result: bool) -> Result<Tensor> {
        use crate::ops::formulas::*;
        use crate::ops::binary::BinaryOp::{Gt, Le};
        let Some((alpha, scale, input_scale)) = self.elu_params() else {
            let ParamUnary::LeakyRelu(slope) = self else { unreachable!() };
            // torch: leaky_relu passes where `x > 0`, so at NaN it scales the gradient
            return where_t(&cmp_s(Gt, s, 0.0)?, g, &mul_s(g, slope)?);
        };
        // torch's elu_backward: `x <= 0 ? g · input_scale · (result + alpha · scale)` (of the
        // result) or `g · input_scale · alpha · scale · exp(x · input_scale)` (of the input)
        // `: g · scale`; the factors that are 1 (plain elu) are left out, so elu's values are
        // the same bits as before selu and celu joined
        let negcoef = alpha * scale;
        let scaled = |t: Tensor, c: f64| if c == 1.0 { Ok(t) } else { mul_s(&t, c) };
        let neg_part = if of_result {
            scaled(mul(g, &add_s(s, negcoef)?)?, input_scale)?
        } else {
            let e = un(UnaryOp::Exp, &scaled(s.clone(), input_scale)?)?;
            mul(g, &mul_s(&e, negcoef * input_scale)?)?
        };
        // elu takes its negative branch where `x <= 0`, so at NaN it passes the gradient
        where_t(&cmp_s(Le, s, 0.0)?, &neg_part, &scaled(g.clone(), scale)?)
    }
}

/// How torch's node shows elu's `scale` / `input_scale`: the integer 1 where the caller passed
/// the default, the float otherwise (selu's scale, celu's 1/alpha in the double backward).
pub(crate) fn elu_scalar(v: f64) -> String {
    if v == 1.0 {
        "1".into()
    } else {
        crate::ops::reduce::py_number(crate::dtype::Scalar::Float(v)).to_string()
    }
}

/// Differentiable `leaky_relu` / `elu` (`in_place` writes `x` and returns it).
pub fn param_unary(op: ParamUnary, x: &Tensor, in_place: bool) -> Result<Tensor> {
    if !in_place {
        crate::autograd::precheck(&[Some(x)])?;
    }
    if !in_place {
        let out = map_float_raw(x, false, op.map())?;
        if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(x)])? {
            rec.save("self", x)?;
            op.save_values(&mut rec);
            rec.finish(op.node(false), &[&out], Box::new(move |ctx| Ok(vec![Some(op.backward(ctx.grad(), ctx.saved(0), false)?)])))?;
        }
        return Ok(out);
    }
    let rec = crate::autograd::Recorder::inplace(x, &[])?;
    map_float_raw(x, true, op.map())?;
    if let Some(mut rec) = rec {
        rec.save_output("result", x, 0);
        op.save_values(&mut rec);
        rec.finish_inplace(op.node(true), x, Box::new(move |ctx| Ok(vec![Some(op.backward(ctx.grad(), ctx.saved(0), true)?)])))?;
    }
    Ok(x.clone())
}
