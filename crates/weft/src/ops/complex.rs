//! The parts of complex64 arrays: `real`, `imag`, `conjugate`, and `abs` of
//! a complex array (the modulus, float32), on the one [`Primitive::Complex`].
//! On real arrays they are what NumPy and MLX give: `real` and `conjugate`
//! are the array itself, `imag` is zeros.

use super::{astype, zeros};
use crate::primitive::{ComplexOp, Primitive};
use crate::{Array, Dtype, Result};

fn part(op: ComplexOp, a: &Array) -> Result<Array> {
    Array::from_op(Primitive::Complex(op), vec![a.clone()], a.shape().to_vec(), op.out_dtype())
}

/// The real part (float32 for complex64; real arrays are returned as they are).
///
/// ```
/// use weft::{ops, Array, Complex64};
/// let z = Array::from_slice(&[Complex64::new(1.0, -2.0)], &[1]).unwrap();
/// assert_eq!(ops::real(&z).unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
/// assert_eq!(ops::imag(&z).unwrap().to_vec::<f32>().unwrap(), vec![-2.0]);
/// ```
pub fn real(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() { part(ComplexOp::Real, a) } else { Ok(a.clone()) }
}

/// The imaginary part (float32 for complex64; zeros of a real array's dtype).
pub fn imag(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() { part(ComplexOp::Imag, a) } else { zeros(a.shape(), a.dtype()) }
}

/// The complex conjugate (real arrays are their own).
pub fn conjugate(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() { part(ComplexOp::Conj, a) } else { Ok(a.clone()) }
}

/// `|a|` of a complex64 array: float32 (`ops::abs` calls it).
pub(super) fn complex_abs(a: &Array) -> Result<Array> {
    part(ComplexOp::Abs, a)
}

/// `re + i * im` from two real arrays (broadcast together).
pub fn complex(re: &Array, im: &Array) -> Result<Array> {
    let i = Array::scalar(crate::Complex64::new(0.0, 1.0));
    super::add(&astype(re, Dtype::C64)?, &super::multiply(&astype(im, Dtype::C64)?, &i)?)
}
