//! `Unary`: elementwise math on one input. Each op of the table
//! (`primitive/unary.rs`) has its formula here, as an impl of [`CpuUnary`]
//! on the op's type; the dispatch is generated from the table, so an op
//! without a formula does not compile.

use super::strided::{Apply1, Whole1};
use super::num::{Acc, Arith, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::Dtype;
use crate::primitive::unary::op::*;
use crate::primitive::{OutSpec, UnaryOp};
use crate::{Error, Result};
use half::{bf16, f16};

/// A unary op's formula on the CPU, on one `f32` or `f64` (16-bit floats
/// compute in `f32`).
pub(crate) trait CpuUnary {
    fn apply<A: Acc>(x: A) -> A;
}

/// `$Op: |x| expr;` implements [`CpuUnary`] for `$Op` with that formula.
macro_rules! formulas {
    ($($Op:ident: |$x:ident| $e:expr;)*) => {$(
        impl CpuUnary for $Op {
            #[inline(always)]
            fn apply<A: Acc>($x: A) -> A {
                $e
            }
        }
    )*};
}

/// A constant in the formula's float type.
#[inline(always)]
fn c<A: Acc>(v: f64) -> A {
    A::of_f64(v)
}

formulas! {
    Neg: |x| -x;
    Abs: |x| x.abs();
    Exp: |x| x.exp();
    Exp2: |x| x.exp2();
    Log: |x| x.ln();
    Sqrt: |x| x.sqrt();
    Rsqrt: |x| x.sqrt().recip();
    Tanh: |x| x.tanh();
    Sigmoid: |x| (A::one() + (-x).exp()).recip();
    Sin: |x| x.sin();
    Cos: |x| x.cos();
    Erf: |x| x.erf();
    Gelu: |x| x * c(0.5) * (A::one() + (x * c(std::f64::consts::FRAC_1_SQRT_2)).erf());
    // sqrt(2 / pi) = 0.7978845608028654.
    GeluApprox: |x| x * c(0.5) * (A::one() + (x * c(0.797_884_560_802_865_4) * (A::one() + x * x * c(0.044715))).tanh());
    Silu: |x| x / (A::one() + (-x).exp());
    Floor: |x| x.floor();
    Ceil: |x| x.ceil();
    Round: |x| x.round_even();
    Tan: |x| x.tan();
    Sinh: |x| x.sinh();
    Cosh: |x| x.cosh();
    Arcsin: |x| x.asin();
    Arccos: |x| x.acos();
    Arctan: |x| x.atan();
    Arcsinh: |x| x.asinh();
    Arccosh: |x| x.acosh();
    Arctanh: |x| x.atanh();
    Log1p: |x| x.ln_1p();
    Expm1: |x| x.exp_m1();
    Log2: |x| x.log2();
    Log10: |x| x.log10();
    Erfinv: |x| x.erfinv();
}

/// The float kernel of every op: one closure per op, monomorphized, so the
/// match runs once per kernel and not once per element.
macro_rules! float_kernel {
    ($($(#[$doc:meta])* $Op:ident $name:ident $domain:ident $scope:ident;)*) => {
        fn float<T: FloatElem, M: Apply1>(op: UnaryOp, m: M) -> Result<M::Out> {
            match op {
                $(UnaryOp::$Op => m.apply::<T, T>(|x| T::from_acc($Op::apply(x.to_acc()))),)*
            }
        }
    };
}
crate::unary_ops!(float_kernel);

/// Integer and bool inputs: only the `Numeric` ops reach a kernel with them
/// (`ops` computes the others in float).
fn int<T: Arith, M: Apply1>(op: UnaryOp, m: M, dtype: Dtype) -> Result<M::Out> {
    match op {
        UnaryOp::Neg => m.apply::<T, T>(Arith::neg),
        UnaryOp::Abs => m.apply::<T, T>(Arith::abs),
        op => Err(Error::Dtype(format!("{} needs a float input, got {dtype}", op.name()))),
    }
}

/// complex64: the ops `primitive/complex.rs` lets through, on `Complex32`.
fn complex<M: Apply1>(op: UnaryOp, m: M) -> Result<M::Out> {
    use crate::Complex64;
    use num_complex::Complex32 as C;
    use std::f32::consts::{LN_10, LN_2};
    let f: fn(C) -> C = match op {
        UnaryOp::Neg => |z| -z,
        UnaryOp::Exp => |z| z.exp(),
        UnaryOp::Exp2 => |z| (z * LN_2).exp(),
        UnaryOp::Expm1 => |z| z.exp() - C::new(1.0, 0.0),
        UnaryOp::Log => |z| z.ln(),
        UnaryOp::Log2 => |z| z.ln() / LN_2,
        UnaryOp::Log10 => |z| z.ln() / LN_10,
        UnaryOp::Log1p => |z| (z + C::new(1.0, 0.0)).ln(),
        UnaryOp::Sqrt => |z| z.sqrt(),
        UnaryOp::Rsqrt => |z| C::new(1.0, 0.0) / z.sqrt(),
        UnaryOp::Sigmoid => |z| C::new(1.0, 0.0) / (C::new(1.0, 0.0) + (-z).exp()),
        UnaryOp::Sin => |z| z.sin(),
        UnaryOp::Cos => |z| z.cos(),
        UnaryOp::Tan => |z| z.tan(),
        UnaryOp::Sinh => |z| z.sinh(),
        UnaryOp::Cosh => |z| z.cosh(),
        UnaryOp::Tanh => |z| z.tanh(),
        UnaryOp::Arcsin => |z| z.asin(),
        UnaryOp::Arccos => |z| z.acos(),
        UnaryOp::Arctan => |z| z.atan(),
        UnaryOp::Arcsinh => |z| z.asinh(),
        UnaryOp::Arccosh => |z| z.acosh(),
        UnaryOp::Arctanh => |z| z.atanh(),
        op => return Err(Error::Dtype(format!("{} does not support complex64 inputs", op.name()))),
    };
    m.apply::<Complex64, Complex64>(move |z| Complex64(f(z.0)))
}

pub(crate) fn unary(op: UnaryOp, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    unary_with(op, out.dtype, Whole1(a))
}

/// `op` on elements of `dtype` (the input's and the output's), applied by `m`.
pub(crate) fn unary_with<M: Apply1>(op: UnaryOp, dtype: Dtype, m: M) -> Result<M::Out> {
    match dtype {
        Dtype::C64 => complex(op, m),
        Dtype::F32 => float::<f32, M>(op, m),
        Dtype::F64 => float::<f64, M>(op, m),
        Dtype::F16 => float::<f16, M>(op, m),
        Dtype::BF16 => float::<bf16, M>(op, m),
        d @ Dtype::Bool => int::<bool, M>(op, m, d),
        d @ Dtype::U8 => int::<u8, M>(op, m, d),
        d @ Dtype::U16 => int::<u16, M>(op, m, d),
        d @ Dtype::U32 => int::<u32, M>(op, m, d),
        d @ Dtype::U64 => int::<u64, M>(op, m, d),
        d @ Dtype::I8 => int::<i8, M>(op, m, d),
        d @ Dtype::I16 => int::<i16, M>(op, m, d),
        d @ Dtype::I32 => int::<i32, M>(op, m, d),
        d @ Dtype::I64 => int::<i64, M>(op, m, d),
    }
}
