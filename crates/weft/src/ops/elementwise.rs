//! Elementwise ops: unary math, binary arithmetic and comparisons, `where`,
//! `astype`.

use crate::dtype::Dtype;
use crate::primitive::{BinaryOp, Primitive, UnaryOp};
use crate::shape::broadcast_shapes;
use crate::{Array, Error, Result};

/// Converts `a` to `dtype` (the same array if it already is).
pub fn astype(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    Ok(Array::from_op(Primitive::AsType, vec![a.clone()], a.shape().to_vec(), dtype))
}

pub(super) fn unary(op: UnaryOp, a: &Array) -> Result<Array> {
    let dtype = match op {
        UnaryOp::Neg if a.dtype() == Dtype::Bool => {
            return Err(Error::Dtype("cannot negate a bool array; use logical not".into()))
        }
        UnaryOp::Neg | UnaryOp::Abs => a.dtype(),
        _ => a.dtype().at_least_float(),
    };
    let a = astype(a, dtype)?;
    Ok(Array::from_op(Primitive::Unary(op), vec![a.clone()], a.shape().to_vec(), dtype))
}

macro_rules! unary_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array) -> Result<Array> {
            unary(UnaryOp::$op, a)
        }
    )*};
}

unary_ops! {
    /// `-a`.
    negative => Neg,
    /// `|a|`.
    abs => Abs,
    /// `e^a` (integers are computed in float32, as in MLX).
    exp => Exp,
    /// Natural logarithm.
    log => Log,
    sqrt => Sqrt,
    /// `1 / sqrt(a)`.
    rsqrt => Rsqrt,
    tanh => Tanh,
    /// `1 / (1 + e^-a)`.
    sigmoid => Sigmoid,
    sin => Sin,
    cos => Cos,
    /// The error function `2/sqrt(pi) * integral_0^a e^(-t^2) dt`.
    erf => Erf,
}

fn binary(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let mut dtype = Dtype::promote(a.dtype(), b.dtype());
    if op == BinaryOp::Div {
        // True division, as MLX's `divide`: integers divide in float32.
        dtype = dtype.at_least_float();
    }
    let (a, b) = (astype(a, dtype)?, astype(b, dtype)?);
    let out = if op.is_comparison() { Dtype::Bool } else { dtype };
    Ok(Array::from_op(Primitive::Binary(op), vec![a, b], shape, out))
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, b: &Array) -> Result<Array> {
            binary(BinaryOp::$op, a, b)
        }
    )*};
}

binary_ops! {
    add => Add,
    subtract => Sub,
    multiply => Mul,
    /// True division: integer inputs give float32.
    divide => Div,
    /// `a ** b`.
    power => Pow,
    maximum => Maximum,
    minimum => Minimum,
    equal => Equal,
    not_equal => NotEqual,
    less => Less,
    less_equal => LessEqual,
    greater => Greater,
    greater_equal => GreaterEqual,
}

/// `cond ? x : y`, elementwise, with all three broadcast together.
pub fn where_(cond: &Array, x: &Array, y: &Array) -> Result<Array> {
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), x.shape())?, y.shape())?;
    let dtype = Dtype::promote(x.dtype(), y.dtype());
    let inputs = vec![astype(cond, Dtype::Bool)?, astype(x, dtype)?, astype(y, dtype)?];
    Ok(Array::from_op(Primitive::Select, inputs, shape, dtype))
}
