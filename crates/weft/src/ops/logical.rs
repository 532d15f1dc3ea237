//! Truth values and predicates: `logical_not/and/or`, `isnan`, `isinf`,
//! `isfinite`, `all`, `any`, `isclose`, `allclose`, `array_equal`.
//!
//! All are compositions of elementwise ops and `sum`, so they run on every
//! backend and stay lazy. A value is true when it is nonzero (NaN is true),
//! as in NumPy and MLX.

use super::{abs, add, astype, equal, full, greater, less, less_equal, multiply, not_equal, subtract, sum, where_};
use super::complex::{imag, real};
use super::creation::scalar;
use crate::dtype::Dtype;
use crate::shape::Axes;
use crate::{Array, Result};

/// `a` as bool: nonzero (and NaN) is true.
fn truth(a: &Array) -> Result<Array> {
    if a.dtype() == Dtype::Bool {
        return Ok(a.clone());
    }
    not_equal(a, &scalar(0.0, a.dtype())?)
}

/// Elementwise `not a`.
pub fn logical_not(a: &Array) -> Result<Array> {
    equal(&truth(a)?, &Array::scalar(false))
}

/// Elementwise `a and b` (broadcast).
pub fn logical_and(a: &Array, b: &Array) -> Result<Array> {
    where_(&truth(a)?, &truth(b)?, &Array::scalar(false))
}

/// Elementwise `a or b` (broadcast).
pub fn logical_or(a: &Array, b: &Array) -> Result<Array> {
    where_(&truth(a)?, &Array::scalar(true), &truth(b)?)
}

/// Which elements are NaN (none of an integer array; a complex number is
/// NaN when either part is).
pub fn isnan(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() {
        return logical_or(&isnan(&real(a)?)?, &isnan(&imag(a)?)?);
    }
    if !a.dtype().is_float() {
        return full(a.shape(), false);
    }
    not_equal(a, a)
}

/// Which elements are +inf or -inf (a complex number: either part).
pub fn isinf(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() {
        return logical_or(&isinf(&real(a)?)?, &isinf(&imag(a)?)?);
    }
    if !a.dtype().is_float() {
        return full(a.shape(), false);
    }
    equal(&abs(a)?, &scalar(f64::INFINITY, a.dtype())?)
}

/// Which elements are neither infinite nor NaN (a complex number: both parts).
pub fn isfinite(a: &Array) -> Result<Array> {
    if a.dtype().is_complex() {
        return logical_and(&isfinite(&real(a)?)?, &isfinite(&imag(a)?)?);
    }
    if !a.dtype().is_float() {
        return full(a.shape(), true);
    }
    // NaN compares false, so `|a| < inf` is exactly "finite".
    less(&abs(a)?, &scalar(f64::INFINITY, a.dtype())?)
}

/// Whether every element over `axes` (`Axes::All`: every axis) is true; true for
/// an empty array.
pub fn all(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    let falses = sum(&astype(&logical_not(a)?, Dtype::I64)?, axes, keepdims)?;
    equal(&falses, &scalar(0.0, Dtype::I64)?)
}

/// Whether any element over `axes` (`Axes::All`: every axis) is true; false for
/// an empty array.
pub fn any(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    let trues = sum(&astype(&truth(a)?, Dtype::I64)?, axes, keepdims)?;
    greater(&trues, &scalar(0.0, Dtype::I64)?)
}

/// Elementwise `|a - b| <= atol + rtol * |b|` (equal infinities are close;
/// NaNs are close to each other only with `equal_nan`), as MLX's `isclose`.
pub fn isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let dtype = Dtype::promote(a.dtype(), b.dtype()).at_least_float();
    let (a, b) = (astype(a, dtype)?, astype(b, dtype)?);
    // `abs` of complex64 is float32: the bound is compared in real numbers.
    let real_dtype = if dtype.is_complex() { Dtype::F32 } else { dtype };
    let diff = abs(&subtract(&a, &b)?)?;
    let tol = add(&scalar(atol, real_dtype)?, &multiply(&scalar(rtol, real_dtype)?, &abs(&b)?)?)?;
    // An infinity is close only to itself: `inf - (-inf)` is inf, and so is
    // the tolerance `rtol * |inf|`, so the bound alone would call them close.
    let finite = logical_not(&logical_or(&isinf(&a)?, &isinf(&b)?)?)?;
    let close = logical_or(&equal(&a, &b)?, &logical_and(&less_equal(&diff, &tol)?, &finite)?)?;
    if equal_nan {
        return logical_or(&close, &logical_and(&isnan(&a)?, &isnan(&b)?)?);
    }
    Ok(close)
}

/// Whether every element of `a` is close to `b` (see [`isclose`]); a bool scalar.
pub fn allclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    all(&isclose(a, b, rtol, atol, equal_nan)?, Axes::All, false)
}

/// Whether `a` and `b` have the same shape and equal elements (of any
/// dtypes); a bool scalar. NaNs are equal only with `equal_nan`.
pub fn array_equal(a: &Array, b: &Array, equal_nan: bool) -> Result<Array> {
    if a.shape() != b.shape() {
        return Ok(Array::scalar(false));
    }
    let mut eq = equal(a, b)?;
    if equal_nan {
        eq = logical_or(&eq, &logical_and(&isnan(a)?, &isnan(b)?)?)?;
    }
    all(&eq, Axes::All, false)
}

/// Where `a` and `b` differ in truth.
pub fn logical_xor(a: &Array, b: &Array) -> Result<Array> {
    not_equal(&truth(a)?, &truth(b)?)
}

/// Where `a` is `+inf` (never, for non-floats; a complex number equal to `inf + 0j`, as MLX).
pub fn isposinf(a: &Array) -> Result<Array> {
    let inf = astype(&Array::scalar(f64::INFINITY), a.dtype().at_least_float())?;
    if !a.dtype().is_inexact() {
        return super::zeros(a.shape(), Dtype::Bool);
    }
    equal(a, &inf)
}

/// Where `a` is `-inf` (never, for non-floats; a complex number equal to `-inf + 0j`, as MLX).
pub fn isneginf(a: &Array) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return super::zeros(a.shape(), Dtype::Bool);
    }
    equal(a, &astype(&Array::scalar(f64::NEG_INFINITY), a.dtype())?)
}
