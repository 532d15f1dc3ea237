//! `Unary`: elementwise math on one input.

use super::kernel::{compute_type, elementwise, load, store, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::{OutSpec, UnaryOp};
use crate::{Error, Result};

pub(crate) fn unary(k: &mut Launcher<'_>, op: UnaryOp, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let d = out.dtype;
    let x = load(d, "x0");
    let expr = match d {
        Dtype::F16 | Dtype::BF16 | Dtype::F32 => float_expr(op, &x, "f"),
        Dtype::F64 => float_expr(op, &x, ""),
        Dtype::Bool | Dtype::U8 | Dtype::U32 => match op {
            UnaryOp::Neg | UnaryOp::Abs if d == Dtype::Bool || op == UnaryOp::Abs => x,
            UnaryOp::Neg => format!("(0u - (unsigned int)({x}))"),
            _ => return Err(int_err(op, d)),
        },
        Dtype::I32 | Dtype::I64 => {
            let u = if d == Dtype::I32 { "unsigned int" } else { "unsigned long long" };
            let neg = format!("({}) (({u})0 - ({u})({x}))", compute_type(d));
            match op {
                UnaryOp::Neg => neg,
                UnaryOp::Abs => format!("(({x}) < 0 ? {neg} : ({x}))"),
                _ => return Err(int_err(op, d)),
            }
        }
    };
    elementwise(k, &format!("un{op:?}"), &[a], d, out.shape, &store(d, &expr))
}

fn int_err(op: UnaryOp, d: Dtype) -> Error {
    Error::Dtype(format!("{op:?} needs a float input, got {d}"))
}

/// The op on `x` in float (`f` = "f") or double (`f` = "").
fn float_expr(op: UnaryOp, x: &str, f: &str) -> String {
    let one = if f.is_empty() { "1.0" } else { "1.0f" };
    match op {
        UnaryOp::Neg => format!("(-({x}))"),
        UnaryOp::Abs => format!("fabs{f}({x})"),
        UnaryOp::Exp => format!("exp{f}({x})"),
        UnaryOp::Log => format!("log{f}({x})"),
        UnaryOp::Sqrt => format!("sqrt{f}({x})"),
        UnaryOp::Rsqrt => format!("({one} / sqrt{f}({x}))"),
        UnaryOp::Tanh => format!("tanh{f}({x})"),
        UnaryOp::Sigmoid => format!("({one} / ({one} + exp{f}(-({x}))))"),
        UnaryOp::Sin => format!("sin{f}({x})"),
        UnaryOp::Cos => format!("cos{f}({x})"),
        UnaryOp::Erf => format!("erf{f}({x})"),
        UnaryOp::Gelu => format!("(0.5{f} * ({x}) * ({one} + erf{f}(({x}) * 0.70710678118654752{f})))"),
        UnaryOp::GeluApprox => {
            format!("(0.5{f} * ({x}) * ({one} + tanh{f}(0.79788456080286536{f} * (({x}) + 0.044715{f} * ({x}) * ({x}) * ({x})))))")
        }
        UnaryOp::Silu => format!("(({x}) / ({one} + exp{f}(-({x}))))"),
        UnaryOp::Floor => format!("floor{f}({x})"),
        UnaryOp::Ceil => format!("ceil{f}({x})"),
        UnaryOp::Round => format!("rint{f}({x})"),
        UnaryOp::Tan => format!("tan{f}({x})"),
        UnaryOp::Sinh => format!("sinh{f}({x})"),
        UnaryOp::Cosh => format!("cosh{f}({x})"),
        UnaryOp::Arcsin => format!("asin{f}({x})"),
        UnaryOp::Arccos => format!("acos{f}({x})"),
        UnaryOp::Arctan => format!("atan{f}({x})"),
        UnaryOp::Arcsinh => format!("asinh{f}({x})"),
        UnaryOp::Arccosh => format!("acosh{f}({x})"),
        UnaryOp::Arctanh => format!("atanh{f}({x})"),
        UnaryOp::Log1p => format!("log1p{f}({x})"),
        UnaryOp::Expm1 => format!("expm1{f}({x})"),
        UnaryOp::Log2 => format!("log2{f}({x})"),
        UnaryOp::Log10 => format!("log10{f}({x})"),
    }
}
