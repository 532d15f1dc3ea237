//! Reductions over axes: `sum`, `mean`, `max`, `min`, `argmax`, `argmin`.

use super::creation::scalar;
use super::{astype, multiply, reshape, sqrt, subtract};
use crate::dtype::Dtype;
use crate::primitive::{ArgReduceOp, BinaryOp, Primitive, ReduceOp};
use crate::shape::{normalize_axis, Axes};
use crate::{bail, Array, Result};

fn squeeze_axes(out: Array, axes: &[usize], keepdims: bool) -> Result<Array> {
    if keepdims {
        return Ok(out);
    }
    super::shape::reshape_units(&out, axes, &[])
}

fn reduce(op: ReduceOp, a: &Array, axes: Axes, keepdims: bool) -> Result<Array> {
    let axes = axes.normalize(a.ndim())?;
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&ax| a.shape()[ax] == 0) {
        bail!(Shape, "cannot {op:?}-reduce an axis of size 0 (shape {:?})", a.shape());
    }
    let dtype = match (op, a.dtype()) {
        // MLX's sum and prod widen narrow ints to 32 bits (bool counts as int32).
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::Bool | Dtype::I8 | Dtype::I16) => Dtype::I32,
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::U8 | Dtype::U16) => Dtype::U32,
        (_, d) => d,
    };
    let a = astype(a, dtype)?;
    if axes.is_empty() {
        return Ok(a);
    }
    let mut shape = a.shape().to_vec();
    for &ax in &axes {
        shape[ax] = 1;
    }
    let out = Array::from_op(Primitive::Reduce { op, axes: axes.clone() }, vec![a], shape, dtype)?;
    squeeze_axes(out, &axes, keepdims)
}

/// Sum over `axes` (`Axes::All`: every axis). Bools sum to int32, uint8 to uint32.
pub fn sum(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    reduce(ReduceOp::Sum, a, axes.into(), keepdims)
}

/// Product over `axes` (`Axes::All`: every axis); narrow integers widen
/// as in `sum`. The product of nothing is 1.
pub fn prod(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    reduce(ReduceOp::Prod, a, axes.into(), keepdims)
}

/// How many elements are nonzero over `axes`, as int32 (MLX's type).
pub fn count_nonzero(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    let nonzero = super::not_equal(a, &astype(&Array::scalar(0i32), a.dtype())?)?;
    astype(&sum(&nonzero, axes, keepdims)?, Dtype::I32)
}

/// Maximum over `axes` (`Axes::All`: every axis). complex64 is ordered
/// by real part, then imaginary part (as MLX); a NaN in either part makes
/// the result NaN.
pub fn max(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    if a.dtype().is_complex() {
        return complex_extreme(ReduceOp::Max, a, axes.into(), keepdims);
    }
    reduce(ReduceOp::Max, a, axes.into(), keepdims)
}

/// Minimum over `axes` (`Axes::All`: every axis); complex64 as in [`max`].
pub fn min(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    if a.dtype().is_complex() {
        return complex_extreme(ReduceOp::Min, a, axes.into(), keepdims);
    }
    reduce(ReduceOp::Min, a, axes.into(), keepdims)
}

/// Max or min of complex64 in the lexicographic order (real, then
/// imaginary), composed from real reductions: the extreme real part, then
/// the extreme imaginary part among the elements that reach it.
fn complex_extreme(op: ReduceOp, a: &Array, axes: Axes, keepdims: bool) -> Result<Array> {
    let (re, im) = (super::real(a)?, super::imag(a)?);
    let top = reduce(op, &re, axes.clone(), true)?;
    let reaches = super::equal(&re, &top)?;
    let excluded = scalar(if op == ReduceOp::Max { f64::NEG_INFINITY } else { f64::INFINITY }, Dtype::F32)?;
    let im_top = reduce(op, &super::where_(&reaches, &im, &excluded)?, axes.clone(), true)?;
    let nan = super::any(&super::isnan(a)?, axes.clone(), true)?;
    let out = super::where_(&nan, &scalar(f64::NAN, Dtype::C64)?, &super::complex(&top, &im_top)?)?;
    let axes = axes.normalize(a.ndim())?;
    squeeze_axes(out, &axes, keepdims)
}

/// Mean over `axes` (`Axes::All`: every axis); integers give float32.
pub fn mean(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    let dtype = a.dtype().at_least_float();
    let axes = axes.into();
    let ax = axes.normalize(a.ndim())?;
    let n: usize = ax.iter().map(|&i| a.shape()[i]).product();
    let x = astype(a, dtype)?;
    let s = sum(&x, axes, keepdims)?;
    scale_by_inv_count(&s, 1.0 / n as f64, &x, ax, 0)
}

/// `s * inv` with `inv = 1 / (n - ddof)` counted from `axes` of `of`: the
/// node notes how a shapeless replay recounts `n` for new shapes of `of`
/// (`ShapeNote::InvCount`), so the count is never a stale constant.
fn scale_by_inv_count(s: &Array, inv: f64, of: &Array, axes: Vec<usize>, ddof: usize) -> Result<Array> {
    let c = scalar(inv, s.dtype())?;
    let note = || Some(crate::transforms::trace::ShapeNote::InvCount { operand: 1, of: of.clone(), axes, ddof });
    Array::from_op_noted(Primitive::Binary(BinaryOp::Mul), vec![s.clone(), c], s.shape().to_vec(), s.dtype(), note)
}

/// Variance over `axes` (`Axes::All`: every axis), dividing by `n - ddof`;
/// integers give float32.
/// complex64 gives float32: the mean of `|x - mean|^2`.
pub fn var(a: &Array, axes: impl Into<Axes>, keepdims: bool, ddof: usize) -> Result<Array> {
    let dtype = a.dtype().at_least_float();
    let a = astype(a, dtype)?;
    let axes = axes.into();
    let ax = axes.normalize(a.ndim())?;
    let n: usize = ax.iter().map(|&i| a.shape()[i]).product();
    let mut centered = subtract(&a, &mean(&a, axes.clone(), true)?)?;
    if dtype.is_complex() {
        // The modulus is float32.
        centered = super::abs(&centered)?;
    }
    let ss = sum(&multiply(&centered, &centered)?, axes, keepdims)?;
    // As NumPy: n <= ddof gives inf or NaN, not an error.
    let denom = n as f64 - ddof as f64;
    let inv = if denom > 0.0 { 1.0 / denom } else { f64::INFINITY };
    scale_by_inv_count(&ss, inv, &a, ax, ddof)
}

/// Standard deviation: `sqrt(var(a, axes, keepdims, ddof))`.
pub fn std(a: &Array, axes: impl Into<Axes>, keepdims: bool, ddof: usize) -> Result<Array> {
    sqrt(&var(a, axes, keepdims, ddof)?)
}

fn arg_reduce(op: ArgReduceOp, a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    if axis.is_none() && keepdims {
        // As NumPy and MLX: every axis kept, as size 1.
        let out = arg_reduce(op, a, None, false)?;
        return reshape(&out, &vec![1; a.ndim()]);
    }
    let (a, axis) = match axis {
        Some(ax) => (a.clone(), normalize_axis(ax, a.ndim())?),
        None => (reshape(a, &[-1])?, 0),
    };
    if a.ndim() == 0 || a.shape()[axis] == 0 {
        bail!(Shape, "{op:?} needs a non-empty axis (shape {:?})", a.shape());
    }
    let mut shape = a.shape().to_vec();
    shape[axis] = 1;
    let out = Array::from_op(Primitive::ArgReduce { op, axis }, vec![a], shape, Dtype::U32)?;
    squeeze_axes(out, &[axis], keepdims)
}

/// Index (uint32) of the largest element along `axis` (of the flattened array
/// when `None`; `keepdims` then keeps every axis as size 1).
pub fn argmax(a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_reduce(ArgReduceOp::ArgMax, a, axis, keepdims)
}

/// Index (uint32) of the smallest element along `axis` (of the flattened array when `None`).
pub fn argmin(a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_reduce(ArgReduceOp::ArgMin, a, axis, keepdims)
}
