//! Activations built from elementwise ops: `gelu`, `gelu_approx`, `silu`.

use super::{add, astype, erf, multiply, sigmoid, tanh};
use crate::{Array, Result};

/// `a` as a scalar of `like`'s (float) dtype.
fn c(v: f64, like: &Array) -> Result<Array> {
    astype(&Array::scalar(v), like.dtype())
}

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
    let x = as_float(x)?;
    let e = erf(&multiply(&x, &c(std::f64::consts::FRAC_1_SQRT_2, &x)?)?)?;
    multiply(&multiply(&x, &c(0.5, &x)?)?, &add(&e, &c(1.0, &x)?)?)
}

/// GELU with the tanh approximation:
/// `x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`.
pub fn gelu_approx(x: &Array) -> Result<Array> {
    let x = as_float(x)?;
    let x3 = multiply(&multiply(&x, &x)?, &x)?;
    let inner = add(&x, &multiply(&x3, &c(0.044715, &x)?)?)?;
    let t = tanh(&multiply(&inner, &c((2.0 / std::f64::consts::PI).sqrt(), &x)?)?)?;
    multiply(&multiply(&x, &c(0.5, &x)?)?, &add(&t, &c(1.0, &x)?)?)
}

/// SiLU (swish): `x * sigmoid(x)`.
pub fn silu(x: &Array) -> Result<Array> {
    let x = as_float(x)?;
    multiply(&x, &sigmoid(&x)?)
}
