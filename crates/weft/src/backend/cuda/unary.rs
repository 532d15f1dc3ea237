//! `Unary`: elementwise math on one input.

use super::kernel::{compute_type, elementwise, load, store, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::unary::op::*;
use crate::primitive::{OutSpec, UnaryOp};
use crate::{Error, Result};

pub(crate) fn unary(k: &mut Launcher<'_>, op: UnaryOp, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let expr = unary_expr(op, out.dtype, "x0")?;
    elementwise(k, &format!("un{op:?}"), &[a], out.dtype, out.shape, &expr)
}

/// `op` of `x`, a stored value of `d`, as the stored value of `d` it gives
/// (also a step of a fused chain: `fused.rs`).
pub(crate) fn unary_expr(op: UnaryOp, d: Dtype, x: &str) -> Result<String> {
    let x = load(d, x);
    let expr = match d {
        // `kernel_for` sends complex64 to the host; this answers if it did not.
        Dtype::C64 => return Err(Error::Dtype(format!("{} on complex64 has no CUDA kernel", op.name()))),
        Dtype::F16 | Dtype::BF16 | Dtype::F32 => float_expr(op, &x, "f"),
        Dtype::F64 => float_expr(op, &x, ""),
        Dtype::Bool | Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64 => match op {
            UnaryOp::Neg | UnaryOp::Abs if d == Dtype::Bool || op == UnaryOp::Abs => x,
            UnaryOp::Neg if d == Dtype::U64 => format!("(0ull - (unsigned long long)({x}))"),
            UnaryOp::Neg => format!("(0u - (unsigned int)({x}))"),
            _ => return Err(int_err(op, d)),
        },
        Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64 => {
            let u = if d == Dtype::I64 { "unsigned long long" } else { "unsigned int" };
            let neg = format!("({}) (({u})0 - ({u})({x}))", compute_type(d));
            match op {
                UnaryOp::Neg => neg,
                UnaryOp::Abs => format!("(({x}) < 0 ? {neg} : ({x}))"),
                _ => return Err(int_err(op, d)),
            }
        }
    };
    Ok(store(d, &expr))
}

fn int_err(op: UnaryOp, d: Dtype) -> Error {
    Error::Dtype(format!("{} needs a float input, got {d}", op.name()))
}

/// A unary op's formula in CUDA C: a template in which `{x}` is the input,
/// `{f}` the float-function suffix (`"f"` for float, `""` for double) and
/// `{one}` the literal 1 of that type.
pub(crate) trait CudaUnary {
    const EXPR: &'static str;
}

/// `$Op: "expr";` implements [`CudaUnary`] for `$Op`.
macro_rules! exprs {
    ($($Op:ident: $e:expr;)*) => {$(
        impl CudaUnary for $Op {
            const EXPR: &'static str = $e;
        }
    )*};
}

exprs! {
    Neg: "(-({x}))";
    Abs: "fabs{f}({x})";
    Exp: "exp{f}({x})";
    Exp2: "exp2{f}({x})";
    Log: "log{f}({x})";
    Sqrt: "sqrt{f}({x})";
    Rsqrt: "({one} / sqrt{f}({x}))";
    Tanh: "tanh{f}({x})";
    Sigmoid: "({one} / ({one} + exp{f}(-({x}))))";
    Sin: "sin{f}({x})";
    Cos: "cos{f}({x})";
    Erf: "erf{f}({x})";
    Gelu: "(0.5{f} * ({x}) * ({one} + erf{f}(({x}) * 0.70710678118654752{f})))";
    GeluApprox: "(0.5{f} * ({x}) * ({one} + tanh{f}(0.79788456080286536{f} * (({x}) + 0.044715{f} * ({x}) * ({x}) * ({x})))))";
    Silu: "(({x}) / ({one} + exp{f}(-({x}))))";
    Floor: "floor{f}({x})";
    Ceil: "ceil{f}({x})";
    Round: "rint{f}({x})";
    Tan: "tan{f}({x})";
    Sinh: "sinh{f}({x})";
    Cosh: "cosh{f}({x})";
    Arcsin: "asin{f}({x})";
    Arccos: "acos{f}({x})";
    Arctan: "atan{f}({x})";
    Arcsinh: "asinh{f}({x})";
    Arccosh: "acosh{f}({x})";
    Arctanh: "atanh{f}({x})";
    Log1p: "log1p{f}({x})";
    Expm1: "expm1{f}({x})";
    Erfinv: "erfinv{f}({x})";
    Log2: "log2{f}({x})";
    Log10: "log10{f}({x})";
}

/// Each op's template, generated from the table.
macro_rules! templates {
    ($($(#[$doc:meta])* $Op:ident $name:ident $domain:ident $scope:ident;)*) => {
        fn template(op: UnaryOp) -> &'static str {
            match op {
                $(UnaryOp::$Op => <$Op as CudaUnary>::EXPR,)*
            }
        }
    };
}
crate::unary_ops!(templates);

/// The op on `x` in float (`f` = "f") or double (`f` = "").
fn float_expr(op: UnaryOp, x: &str, f: &str) -> String {
    let one = if f.is_empty() { "1.0" } else { "1.0f" };
    template(op).replace("{x}", x).replace("{f}", f).replace("{one}", one)
}
