//! `Unary`: elementwise math on one input.

use super::num::{Arith, Float};
use super::map1;
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::Dtype;
use crate::primitive::{OutSpec, UnaryOp};
use crate::{Error, Result};
use half::{bf16, f16};

pub(crate) fn unary(op: UnaryOp, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    // The op in one closure, monomorphized per op: the match runs once per
    // kernel, not once per element.
    macro_rules! float {
        ($T:ty) => {
            match op {
                UnaryOp::Neg => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Neg)),
                UnaryOp::Abs => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Abs)),
                UnaryOp::Exp => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Exp)),
                UnaryOp::Log => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Log)),
                UnaryOp::Sqrt => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Sqrt)),
                UnaryOp::Rsqrt => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Rsqrt)),
                UnaryOp::Tanh => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Tanh)),
                UnaryOp::Sigmoid => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Sigmoid)),
                UnaryOp::Sin => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Sin)),
                UnaryOp::Cos => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Cos)),
                UnaryOp::Erf => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Erf)),
                UnaryOp::Gelu => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Gelu)),
                UnaryOp::GeluApprox => map1::<$T, $T>(a, |x| x.unary(UnaryOp::GeluApprox)),
                UnaryOp::Silu => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Silu)),
                UnaryOp::Floor => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Floor)),
                UnaryOp::Ceil => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Ceil)),
                UnaryOp::Round => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Round)),
                UnaryOp::Tan => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Tan)),
                UnaryOp::Sinh => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Sinh)),
                UnaryOp::Cosh => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Cosh)),
                UnaryOp::Arcsin => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Arcsin)),
                UnaryOp::Arccos => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Arccos)),
                UnaryOp::Arctan => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Arctan)),
                UnaryOp::Arcsinh => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Arcsinh)),
                UnaryOp::Arccosh => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Arccosh)),
                UnaryOp::Arctanh => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Arctanh)),
                UnaryOp::Log1p => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Log1p)),
                UnaryOp::Expm1 => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Expm1)),
                UnaryOp::Log2 => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Log2)),
                UnaryOp::Log10 => map1::<$T, $T>(a, |x| x.unary(UnaryOp::Log10)),
            }
        };
    }
    macro_rules! int {
        ($T:ty) => {
            match op {
                UnaryOp::Neg => map1::<$T, $T>(a, Arith::neg),
                UnaryOp::Abs => map1::<$T, $T>(a, Arith::abs),
                _ => Err(Error::Dtype(format!("{op:?} needs a float input, got {}", out.dtype))),
            }
        };
    }
    match out.dtype {
        Dtype::F32 => float!(f32),
        Dtype::F64 => float!(f64),
        Dtype::F16 => float!(f16),
        Dtype::BF16 => float!(bf16),
        Dtype::Bool => int!(bool),
        Dtype::U8 => int!(u8),
        Dtype::U32 => int!(u32),
        Dtype::I32 => int!(i32),
        Dtype::I64 => int!(i64),
    }
}
