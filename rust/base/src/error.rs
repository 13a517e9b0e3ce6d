//! Errors raised by the core. Each variant maps to the Python exception class torch raises
//! for the same mistake; the message text is torch's, word for word.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// torch: RuntimeError
    Runtime(String),
    /// torch: IndexError (out-of-range dims and indices)
    Index(String),
    /// torch: TypeError (wrong argument kinds)
    Type(String),
    /// torch: ValueError
    Value(String),
    /// torch: NotImplementedError
    NotImplemented(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime(m) | Error::Index(m) | Error::Type(m) | Error::Value(m) | Error::NotImplemented(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for Error {}

/// `return Err(Error::Runtime(format!(...)))` in one line.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::$kind(format!($($arg)*)))
    };
}

/// Formats a shape the way torch prints sizes in messages: `[2, 3]`.
pub fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// torch's dispatch error for a kernel without an instance for `dtype`:
/// `"name" not implemented for 'Float'`.
pub fn not_implemented_for(kernel: &str, dtype: crate::dtype::DType) -> Error {
    Error::NotImplemented(format!("\"{}\" not implemented for '{}'", kernel, dtype.scalar_type_name()))
}

/// A double as C++'s `ostream << double` prints it (`%g`, 6 significant digits), for messages.
pub fn fmt_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let e = format!("{:.5e}", v);
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if (-4..6).contains(&exp) {
        trim(format!("{:.*}", (5 - exp) as usize, v))
    } else {
        format!("{}e{}{:02}", trim(mantissa.to_string()), if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}
