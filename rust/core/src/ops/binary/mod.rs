//! Binary elementwise ops (arithmetic, comparisons, bitwise), `where`, `clamp`, `masked_fill`,
//! and their in-place variants, with torch's type promotion and broadcasting.
//!
//! This file holds the op table (`BinaryOp`) and what the family shares. `arithmetic.rs` runs
//! every `BinaryOp` out of place and in place and holds the backward formulas (comparisons,
//! bitwise and logical ops take the same path and have no gradient); `compute.rs` is what each
//! op computes per element and dtype, and the loop that applies it; `where_.rs`, `clamp.rs` and
//! `masked_fill.rs` each hold one op with its gradient.

use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::copy::{cast_layout, empty_with_layout, iterator_layout};
use crate::ops::Arg;
use crate::tensor::Tensor;

mod arithmetic;
mod clamp;
#[macro_use]
mod compute;
mod fast;
mod floor_divide;
mod masked_fill;
mod where_;

pub use arithmetic::{binary, binary_, binary_inplace_raw, binary_operand_, binary_operands, binary_raw, binary_unrecorded};
pub use fast::Operand;
pub(crate) use fast::row_major;
pub use clamp::{clamp, clamp_scalar, clamp_scalar_raw, clamp_tensor, clamp_tensor_raw};
pub use compute::IntArith;
pub use floor_divide::{floor_divide, floor_divide_, NOT_IMPLEMENTED_NODE};
pub(crate) use clamp::cpu_kernel as clamp_cpu_kernel;
pub(crate) use compute::cpu_kernel;
pub(crate) use masked_fill::cpu_kernel as masked_fill_cpu_kernel;
pub(crate) use where_::cpu_kernel as where_cpu_kernel;
pub use masked_fill::{masked_fill, masked_fill_raw};
pub use where_::{where_, where_raw};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    DivFloor,
    DivTrunc,
    Remainder,
    Pow,
    Maximum,
    Minimum,
    Atan2,
    Hypot,
    Fmod,
    Copysign,
    Xlogy,
    Logaddexp,
    Logaddexp2,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

pub struct BinaryDef {
    pub name: &'static str,
    pub node: &'static str,
}

impl BinaryOp {
    pub fn def(self) -> BinaryDef {
        use BinaryOp::*;
        let (name, node) = match self {
            Add => ("add", "AddBackward0"),
            Sub => ("sub", "SubBackward0"),
            Mul => ("mul", "MulBackward0"),
            Div => ("div", "DivBackward0"),
            DivFloor => ("div", "DivBackward1"),
            DivTrunc => ("div", "DivBackward1"),
            Remainder => ("remainder", "RemainderBackward0"),
            Pow => ("pow", "PowBackward1"),
            Maximum => ("maximum", "MaximumBackward0"),
            Minimum => ("minimum", "MinimumBackward0"),
            Atan2 => ("atan2", "Atan2Backward0"),
            Hypot => ("hypot", "HypotBackward0"),
            Fmod => ("fmod", "FmodBackward1"),
            Copysign => ("copysign", "CopysignBackward0"),
            Xlogy => ("xlogy", "XlogyBackward0"),
            Logaddexp => ("logaddexp", "LogaddexpBackward0"),
            Logaddexp2 => ("logaddexp2", "Logaddexp2Backward0"),
            BitAnd => ("bitwise_and", "NotImplemented"),
            BitOr => ("bitwise_or", "NotImplemented"),
            BitXor => ("bitwise_xor", "NotImplemented"),
            Eq => ("eq", "NotImplemented"),
            Ne => ("ne", "NotImplemented"),
            Lt => ("lt", "NotImplemented"),
            Le => ("le", "NotImplemented"),
            Gt => ("gt", "NotImplemented"),
            Ge => ("ge", "NotImplemented"),
            LogicalAnd => ("logical_and", "NotImplemented"),
            LogicalOr => ("logical_or", "NotImplemented"),
            LogicalXor => ("logical_xor", "NotImplemented"),
        };
        BinaryDef { name, node }
    }

    /// Ops whose result is bool whatever they compute in (comparisons and the logical ops).
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }

    /// Checks torch makes before anything else (sub refuses any bool operand).
    pub fn pre_check(self, a: &Arg, b: &Arg) -> Result<()> {
        if self == BinaryOp::Sub {
            let (ba, bb) = (a.promotion_dtype() == DType::Bool, b.promotion_dtype() == DType::Bool);
            if ba && bb {
                bail!(Runtime, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
            }
            if ba || bb {
                bail!(Runtime, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
            }
        }
        Ok(())
    }

    /// (dtype the kernel computes in, dtype of the result) for promoted operand type `common`.
    pub fn dtypes(self, common: DType) -> (DType, DType) {
        use BinaryOp::*;
        match self {
            // torch promotes integer (and bool) operands of these to the default float dtype
            Div | Atan2 | Copysign | Xlogy if !common.is_floating() => (DType::Float32, DType::Float32),
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => (common, DType::Bool),
            _ => (common, common),
        }
    }

    /// torch's "not implemented for <dtype>" kernels, raised once shapes and casts are known.
    pub fn kernel_check(self, compute: DType, b: &Arg) -> Result<()> {
        use BinaryOp::*;
        let kernel = match (self, compute) {
            (BitAnd | BitOr | BitXor, d) if d.is_floating() => format!("{}_cpu", self.def().name),
            (DivFloor, DType::Bool) => "div_floor_cpu".into(),
            (DivTrunc, DType::Bool) => "div_trunc_cpu".into(),
            (Remainder, DType::Bool) => "remainder_cpu".into(),
            (Fmod, DType::Bool) => "fmod_cpu".into(),
            // float-only kernels: integer and bool operands are not promoted, they are refused
            (Hypot | Logaddexp | Logaddexp2, d) if !d.is_floating() => format!("{}_cpu", self.def().name),
            // `b ** True` / `b ** False` are a copy / a fill of ones in torch.
            (Pow, DType::Bool) if matches!(b, Arg::Tensor(_)) => "pow".into(),
            _ => return Ok(()),
        };
        bail!(NotImplemented, "\"{}\" not implemented for '{}'", kernel, compute.scalar_type_name())
    }
}

impl Arg {
    fn promotion_dtype(&self) -> DType {
        match self {
            Arg::Tensor(t) => t.dtype(),
            Arg::Scalar(s) => s.wrapped_dtype(),
        }
    }
}

/// The result of an elementwise op over `args` (cast to `compute`), laid out as torch's
/// TensorIterator lays it out. `where`'s condition (`cond`) takes part but is never cast.
fn output_like(op: Option<BinaryOp>, shape: &[usize], cond: Option<&Tensor>, args: &[&Arg], compute: DType, dtype: DType) -> crate::error::Result<Tensor> {
    let mut tensors: Vec<&Tensor> = cond.into_iter().collect();
    tensors.extend(args.iter().filter_map(|a| match a {
        Arg::Tensor(t) => Some(t),
        Arg::Scalar(_) => None,
    }));
    let device = crate::device::common_device(&tensors)?;
    if let (Some(BinaryOp::Pow), [a, b]) = (op, args) {
        match (a, b) {
            // pow(number, tensor) allocates a plain contiguous result of the exponent's shape;
            // pow(tensor, number) is a unary op over the (cast) base.
            (Arg::Scalar(_), Arg::Tensor(_)) => return Tensor::empty_on(shape, dtype, device),
            (Arg::Tensor(t), Arg::Scalar(_)) => {
                return empty_with_layout(&iterator_layout(shape, &[&cast_layout(t, compute)]), dtype, device)
            }
            _ => {}
        }
    }
    let scalar = Layout::contiguous(&[]);
    let mut layouts: Vec<Layout> = cond.map(|c| c.layout.clone()).into_iter().collect();
    layouts.extend(args.iter().map(|a| match a {
        Arg::Tensor(t) => cast_layout(t, compute),
        Arg::Scalar(_) => scalar.clone(),
    }));
    let refs: Vec<&Layout> = layouts.iter().collect();
    empty_with_layout(&iterator_layout(shape, &refs), dtype, device)
}

fn not(m: &Tensor) -> Result<Tensor> {
    crate::ops::unary::unary_raw(crate::ops::unary::UnaryOp::LogicalNot, m)
}
