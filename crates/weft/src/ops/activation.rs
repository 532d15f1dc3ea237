//! Activations, each one fused elementwise kernel: `gelu`, `gelu_approx`,
//! `silu`. Integer inputs compute in float32.

use super::{astype, elementwise::unary};
use crate::primitive::UnaryOp;
use crate::{Array, Result};

fn as_float(a: &Array) -> Result<Array> {
    astype(a, a.dtype().at_least_float())
}

/// Exact GELU: `x * (1 + erf(x / sqrt(2))) / 2`.
///
/// ```
/// use weft::{ops, Array};
/// let y = ops::gelu(&Array::from_slice(&[0.0f32, 1.0], &[2]).unwrap()).unwrap();
/// let y = y.to_vec::<f32>().unwrap();
/// assert_eq!(y[0], 0.0);
/// assert!((y[1] - 0.841_344_7).abs() < 1e-6);
/// ```
pub fn gelu(x: &Array) -> Result<Array> {
    unary(UnaryOp::Gelu, &as_float(x)?)
}

/// GELU with the tanh approximation:
/// `x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`.
pub fn gelu_approx(x: &Array) -> Result<Array> {
    unary(UnaryOp::GeluApprox, &as_float(x)?)
}

/// SiLU (swish): `x * sigmoid(x)`.
pub fn silu(x: &Array) -> Result<Array> {
    unary(UnaryOp::Silu, &as_float(x)?)
}
