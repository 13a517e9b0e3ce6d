//! The five dtypes, Python-scalar values, and torch's type-promotion rules.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    Int32,
    Int64,
    Float32,
    Float64,
}

/// Kinds ordered the way torch's `combine_categories` ranks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integer,
    Floating,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64];

    #[inline]
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 => 8,
        }
    }

    #[inline]
    pub fn is_floating(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }

    #[inline]
    pub fn is_integral(self, include_bool: bool) -> bool {
        match self {
            DType::Int32 | DType::Int64 => true,
            DType::Bool => include_bool,
            _ => false,
        }
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::Int32 | DType::Int64 => Category::Integer,
            DType::Float32 | DType::Float64 => Category::Floating,
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
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "int32" | "int" => DType::Int32,
            "int64" | "long" => DType::Int64,
            "float32" | "float" => DType::Float32,
            "float64" | "double" => DType::Float64,
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
        }
    }
}

/// Promotes two dtypes. For these five dtypes torch's lattice is a chain.
#[inline]
pub fn promote_types(a: DType, b: DType) -> DType {
    a.max(b)
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
