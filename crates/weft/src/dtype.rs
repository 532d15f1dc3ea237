//! Element types, and MLX's rules for combining them.

use half::{bf16, f16};
use std::fmt;

/// The element type of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// `complex64`: two `f32` (real, imaginary); the element is
    /// [`Complex64`](crate::Complex64).
    C64,
}

impl Dtype {
    pub const ALL: [Dtype; 14] = [
        Dtype::Bool,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::F16,
        Dtype::BF16,
        Dtype::F32,
        Dtype::F64,
        Dtype::C64,
    ];

    /// The real dtypes (every dtype but `complex64`).
    pub const REAL: [Dtype; 13] = [
        Dtype::Bool,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::F16,
        Dtype::BF16,
        Dtype::F32,
        Dtype::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 | Dtype::F16 | Dtype::BF16 => 2,
            Dtype::U32 | Dtype::I32 | Dtype::F32 => 4,
            Dtype::U64 | Dtype::I64 | Dtype::F64 | Dtype::C64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::BF16 | Dtype::F32 | Dtype::F64)
    }

    /// `complex64`.
    pub fn is_complex(self) -> bool {
        self == Dtype::C64
    }

    /// Floats and `complex64` (what `mx.inexact` holds).
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    pub fn is_integer(self) -> bool {
        self.is_unsigned() || matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64)
    }

    pub fn is_unsigned(self) -> bool {
        matches!(self, Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64) || self.is_float()
    }

    /// MLX's name for the type (`float32`, `int64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "uint8",
            Dtype::U16 => "uint16",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::F16 => "float16",
            Dtype::BF16 => "bfloat16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            Dtype::C64 => "complex64",
        }
    }

    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The type `a` and `b` combine to, as MLX's `promote_types` gives it:
    /// bool gives way to anything; ints with floats give the float;
    /// `float16` with `bfloat16` gives `float32`; two ints of one signedness
    /// give the wider; an unsigned with a signed int gives the signed one if
    /// it is wider, else the signed int twice the unsigned's width, and
    /// `uint64` with any signed int gives `float32` (no int holds both);
    /// anything with `complex64` gives `complex64`.
    pub fn promote(a: Dtype, b: Dtype) -> Dtype {
        use Dtype::*;
        if a == b {
            return a;
        }
        if a == C64 || b == C64 {
            return C64;
        }
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        match (lo, hi) {
            (Bool, x) => x,
            (F16, BF16) => F32,
            // Floats order last, and by width, as ints of one signedness do.
            (_, y) if y.is_float() => y,
            (x, y) if x.is_unsigned() == y.is_unsigned() => y,
            // `lo` is the unsigned one (unsigned types order first).
            (U64, _) => F32,
            (u, s) if s.size() > u.size() => s,
            (u, _) => match u.size() {
                1 => I16,
                2 => I32,
                _ => I64,
            },
        }
    }

    /// The type a float-valued op (exp, sqrt, mean, ...) computes in: the
    /// type itself for floats and `complex64`, `float32` for everything else.
    pub fn at_least_float(self) -> Dtype {
        if self.is_inexact() {
            self
        } else {
            Dtype::F32
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be an array element.
pub trait Element: Copy + Send + Sync + PartialOrd + fmt::Debug + 'static {
    const DTYPE: Dtype;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    /// Integer view, wrapping like Rust's `as` (exact for every integer type).
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
}

macro_rules! element {
    ($t:ty, $d:ident, |$x:ident| $to:expr, |$v:ident| $from:expr) => {
        element!($t, $d, |$x| $to, |$v| $from, |x| x as i64, |v| v as $t);
    };
    ($t:ty, $d:ident, |$x:ident| $to:expr, |$v:ident| $from:expr,
     |$xi:ident| $toi:expr, |$vi:ident| $fromi:expr) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                let $x = self;
                $to
            }
            #[inline(always)]
            fn from_f64($v: f64) -> Self {
                $from
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                let $xi = self;
                $toi
            }
            #[inline(always)]
            fn from_i64($vi: i64) -> Self {
                $fromi
            }
        }
    };
}

element!(bool, Bool, |x| x as u8 as f64, |v| v != 0.0, |x| x as i64, |v| v != 0);
element!(u8, U8, |x| x as f64, |v| v as u8);
element!(u16, U16, |x| x as f64, |v| v as u16);
element!(u32, U32, |x| x as f64, |v| v as u32);
element!(u64, U64, |x| x as f64, |v| v as u64);
element!(i8, I8, |x| x as f64, |v| v as i8);
element!(i16, I16, |x| x as f64, |v| v as i16);
element!(i32, I32, |x| x as f64, |v| v as i32);
element!(i64, I64, |x| x as f64, |v| v as i64);
element!(f16, F16, |x| x.to_f64(), |v| f16::from_f64(v), |x| x.to_f64() as i64, |v| f16::from_f64(v as f64));
element!(bf16, BF16, |x| x.to_f64(), |v| bf16::from_f64(v), |x| x.to_f64() as i64, |v| bf16::from_f64(v as f64));
element!(f32, F32, |x| x as f64, |v| v as f32);
element!(f64, F64, |x| x, |v| v);

#[cfg(test)]
mod tests {
    use super::Dtype::{self, *};

    #[test]
    fn promotion_matches_mlx() {
        let cases = [
            (Bool, I32, I32),
            (U8, I32, I32),
            (U32, I32, I64),
            (I32, I64, I64),
            (I64, F16, F16),
            (F16, BF16, F32),
            (BF16, F32, F32),
            (F32, F64, F64),
            (U8, U32, U32),
            (Bool, Bool, Bool),
            (U8, I8, I16),
            (U16, I8, I32),
            (U16, I32, I32),
            (U32, I16, I64),
            (U64, I8, F32),
            (U64, U8, U64),
            (I8, I64, I64),
            (I16, F16, F16),
            (U64, BF16, BF16),
            (F16, F32, F32),
            (F64, C64, C64),
            (I64, C64, C64),
            (Bool, C64, C64),
            (BF16, C64, C64),
        ];
        for (a, b, want) in cases {
            assert_eq!(Dtype::promote(a, b), want, "{a} + {b}");
            assert_eq!(Dtype::promote(b, a), want, "{b} + {a}");
        }
    }

    #[test]
    fn names_round_trip() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::from_name(d.name()), Some(d));
        }
    }
}

/// Runs `$body` with the type alias `$T` bound to the Rust element type of
/// `$dtype` (a [`Dtype`]): one monomorphized body per dtype.
///
/// ```
/// use weft::{with_dtype, Dtype};
/// let size = |d: Dtype| with_dtype!(d, T => std::mem::size_of::<T>());
/// assert_eq!((size(Dtype::BF16), size(Dtype::I64)), (2, 8));
/// ```
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        match $dtype {
            $crate::Dtype::Bool => { type $T = bool; $body }
            $crate::Dtype::U8 => { type $T = u8; $body }
            $crate::Dtype::U16 => { type $T = u16; $body }
            $crate::Dtype::U32 => { type $T = u32; $body }
            $crate::Dtype::U64 => { type $T = u64; $body }
            $crate::Dtype::I8 => { type $T = i8; $body }
            $crate::Dtype::I16 => { type $T = i16; $body }
            $crate::Dtype::I32 => { type $T = i32; $body }
            $crate::Dtype::I64 => { type $T = i64; $body }
            $crate::Dtype::F16 => { type $T = $crate::half::f16; $body }
            $crate::Dtype::BF16 => { type $T = $crate::half::bf16; $body }
            $crate::Dtype::F32 => { type $T = f32; $body }
            $crate::Dtype::F64 => { type $T = f64; $body }
            $crate::Dtype::C64 => { type $T = $crate::Complex64; $body }
        }
    }};
}
