//! The dtypes, Python-scalar values, and torch's type-promotion rules.
//!
//! Five dtypes compute natively (bool, int32, int64, float32, float64). The five "narrow" ones
//! (float16, bfloat16, uint8, int8, int16) are storage formats: memory, casts, copies and data
//! movement handle them natively, and arithmetic widens them to their `opmath` dtype and rounds
//! once into the result (`device::widen`), as torch computes half in float32.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    Int32,
    Int64,
    Float32,
    Float64,
    // narrow storage dtypes (appended: the derived order is not the promotion order)
    Float16,
    BFloat16,
    UInt8,
    Int8,
    Int16,
}

/// Kinds ordered the way torch's `combine_categories` ranks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integer,
    Floating,
}

impl DType {
    /// The dtypes kernels compute in.
    pub const ALL: [DType; 5] = [DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64];
    /// The storage-only dtypes (see the module comment).
    pub const NARROW: [DType; 5] = [DType::Float16, DType::BFloat16, DType::UInt8, DType::Int8, DType::Int16];
    /// Every dtype, compute ones first.
    pub const EVERY: [DType; 10] = [
        DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64,
        DType::Float16, DType::BFloat16, DType::UInt8, DType::Int8, DType::Int16,
    ];

    /// A storage-only dtype, computed in `opmath()`.
    #[inline]
    pub fn is_narrow(self) -> bool {
        matches!(self, DType::Float16 | DType::BFloat16 | DType::UInt8 | DType::Int8 | DType::Int16)
    }

    /// The dtype arithmetic on this dtype runs in: float32 for half types (torch's opmath),
    /// int64 for the small integers (exact, then wrapped by the narrowing store), else itself.
    #[inline]
    pub fn opmath(self) -> DType {
        match self {
            DType::Float16 | DType::BFloat16 => DType::Float32,
            DType::UInt8 | DType::Int8 | DType::Int16 => DType::Int64,
            d => d,
        }
    }

    #[inline]
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::UInt8 | DType::Int8 => 1,
            DType::Int16 | DType::Float16 | DType::BFloat16 => 2,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 => 8,
        }
    }

    #[inline]
    pub fn is_floating(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64 | DType::Float16 | DType::BFloat16)
    }

    #[inline]
    pub fn is_integral(self, include_bool: bool) -> bool {
        match self {
            DType::Int32 | DType::Int64 | DType::UInt8 | DType::Int8 | DType::Int16 => true,
            DType::Bool => include_bool,
            _ => false,
        }
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::Int32 | DType::Int64 | DType::UInt8 | DType::Int8 | DType::Int16 => Category::Integer,
            DType::Float32 | DType::Float64 | DType::Float16 | DType::BFloat16 => Category::Floating,
        }
    }

    /// torch's name in messages and `ScalarType` spelling ("Float", "Long", ...).
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::Int32 => "Int",
            DType::Int64 => "Long",
            DType::Float32 => "Float",
            DType::Float64 => "Double",
            DType::Float16 => "Half",
            DType::BFloat16 => "BFloat16",
            DType::UInt8 => "Byte",
            DType::Int8 => "Char",
            DType::Int16 => "Short",
        }
    }

    /// The C++ type name torch prints for a `caffe2::TypeMeta` ("float", "long int"); some
    /// messages (masked_fill_, in-place clamp) use it instead of the ScalarType name.
    pub fn type_meta_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int32 => "int",
            DType::Int64 => "long int",
            DType::Float32 => "float",
            DType::Float64 => "double",
            DType::Float16 => "c10::Half",
            DType::BFloat16 => "c10::BFloat16",
            DType::UInt8 => "unsigned char",
            DType::Int8 => "signed char",
            DType::Int16 => "short int",
        }
    }

    /// Python-facing name without the module prefix ("float32").
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "int32" | "int" => DType::Int32,
            "int64" | "long" => DType::Int64,
            "float32" | "float" => DType::Float32,
            "float64" | "double" => DType::Float64,
            "float16" | "half" => DType::Float16,
            "bfloat16" => DType::BFloat16,
            "uint8" => DType::UInt8,
            "int8" => DType::Int8,
            "int16" | "short" => DType::Int16,
            _ => return None,
        })
    }

    /// Legacy tensor type names used in torch messages ("torch.FloatTensor").
    pub fn legacy_tensor_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolTensor",
            DType::Int32 => "IntTensor",
            DType::Int64 => "LongTensor",
            DType::Float32 => "FloatTensor",
            DType::Float64 => "DoubleTensor",
            DType::Float16 => "HalfTensor",
            DType::BFloat16 => "BFloat16Tensor",
            DType::UInt8 => "ByteTensor",
            DType::Int8 => "CharTensor",
            DType::Int16 => "ShortTensor",
        }
    }
}

/// Promotes two dtypes as `torch.promote_types`. Bool yields to anything; integers promote to
/// the wider signed type (uint8 with a signed type needs at least int16); any float beats any
/// integer; float16 with bfloat16 needs float32.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    // rank inside a category: the wider type wins
    let int_rank = |d: DType| match d {
        UInt8 | Int8 => 1,
        Int16 => 2,
        Int32 => 3,
        _ => 4,
    };
    let float_rank = |d: DType| match d {
        Float16 | BFloat16 => 1,
        Float32 => 2,
        _ => 3,
    };
    match (a.category(), b.category()) {
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        (Category::Floating, Category::Integer) => a,
        (Category::Integer, Category::Floating) => b,
        (Category::Integer, Category::Integer) => {
            if matches!((a, b), (UInt8, Int8) | (Int8, UInt8)) {
                Int16
            } else if int_rank(a) >= int_rank(b) {
                a
            } else {
                b
            }
        }
        _ => {
            if float_rank(a) == 1 && float_rank(b) == 1 {
                Float32
            } else if float_rank(a) >= float_rank(b) {
                a
            } else {
                b
            }
        }
    }
}

/// `can_cast(from, to)`: torch forbids only casts to a lower category.
pub fn can_cast(from: DType, to: DType) -> bool {
    from.category() <= to.category()
}

/// A Python number, before it becomes a tensor element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The dtype a wrapped Python number takes in promotion (floats use the default dtype).
    #[inline]
    pub fn wrapped_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::Int64,
            Scalar::Float(_) => DType::Float32,
        }
    }
    #[inline]
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    #[inline]
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
    #[inline]
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }
    #[inline]
    pub fn is_floating(self) -> bool {
        matches!(self, Scalar::Float(_))
    }
}

/// One operand of type promotion: a tensor with `dim() > 0`, a 0-d tensor, or a Python number.
#[derive(Debug, Clone, Copy)]
pub enum Operand {
    Dimensioned(DType),
    ZeroDim(DType),
    Wrapped(DType),
}

/// torch's `combine_categories(higher, lower)` for our dtypes.
fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (None, l) => l,
        (h, None) => h,
        (Some(h), Some(l)) => {
            if h.is_floating() {
                Some(h)
            } else if h == DType::Bool || l.is_floating() {
                Some(promote_types(h, l))
            } else {
                Some(h)
            }
        }
    }
}

/// torch's `result_type`: dimensioned tensors win within a category, then 0-d tensors, then numbers.
pub fn result_type(operands: &[Operand]) -> DType {
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    let fold = |acc: Option<DType>, d: DType| Some(acc.map_or(d, |a| promote_types(a, d)));
    for op in operands {
        match *op {
            Operand::Dimensioned(d) => dim = fold(dim, d),
            Operand::ZeroDim(d) => zero = fold(zero, d),
            Operand::Wrapped(d) => wrapped = fold(wrapped, d),
        }
    }
    combine_categories(dim, combine_categories(zero, wrapped)).unwrap_or(DType::Float32)
}

/// The check every in-place/out= write makes: the computed type must be castable to the destination.
pub fn check_castable(result: DType, dest: DType) -> Result<()> {
    if can_cast(result, dest) {
        Ok(())
    } else {
        Err(Error::Runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            result.scalar_type_name(),
            dest.scalar_type_name()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Operand::*;

    #[test]
    fn promotion_matches_torch() {
        // int tensor * 2.5 -> float32; bool + 1 -> int64; int32 + 5 -> int32
        assert_eq!(result_type(&[Dimensioned(DType::Int64), Wrapped(DType::Float32)]), DType::Float32);
        assert_eq!(result_type(&[Dimensioned(DType::Bool), Wrapped(DType::Int64)]), DType::Int64);
        assert_eq!(result_type(&[Dimensioned(DType::Int32), Wrapped(DType::Int64)]), DType::Int32);
        // float32 tensor + float64 0-d tensor -> float32; int tensor + float64 0-d -> float64
        assert_eq!(result_type(&[Dimensioned(DType::Float32), ZeroDim(DType::Float64)]), DType::Float32);
        assert_eq!(result_type(&[Dimensioned(DType::Int64), ZeroDim(DType::Float64)]), DType::Float64);
        assert_eq!(result_type(&[Dimensioned(DType::Int32), Dimensioned(DType::Float64)]), DType::Float64);
    }

    #[test]
    fn cast_rules() {
        assert!(check_castable(DType::Float32, DType::Int64).is_err());
        assert!(check_castable(DType::Int64, DType::Float32).is_ok());
        assert!(check_castable(DType::Float64, DType::Float32).is_ok());
        assert!(check_castable(DType::Int64, DType::Bool).is_err());
    }
}
