//! Arrays made from nothing: `zeros`, `ones`, `full`, `arange`, `eye`.

use super::{astype, broadcast_to, equal, expand_dims};
use crate::buffer::CpuElement;
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::{bail, Array, Result};

/// An array of `shape` with every element `value` (a broadcast view of one
/// scalar: no memory per element until something copies it).
pub fn full<T: CpuElement>(shape: &[usize], value: T) -> Result<Array> {
    broadcast_to(&Array::scalar(value), shape)
}

/// The 0-d array `v` in `dtype`: the constant operand of a composed op.
pub(super) fn scalar(v: f64, dtype: Dtype) -> Result<Array> {
    astype(&Array::scalar(v), dtype)
}

pub fn zeros(shape: &[usize], dtype: Dtype) -> Result<Array> {
    astype(&full(shape, 0.0f64)?, dtype)
}

pub fn ones(shape: &[usize], dtype: Dtype) -> Result<Array> {
    astype(&full(shape, 1.0f64)?, dtype)
}

/// `start, start + step, ...` below `stop` (above it for a negative step).
pub fn arange(start: f64, stop: f64, step: f64, dtype: Dtype) -> Result<Array> {
    if step == 0.0 || step.is_nan() || !start.is_finite() || !stop.is_finite() {
        bail!(InvalidArgument, "arange needs finite bounds and a nonzero step, got ({start}, {stop}, {step})");
    }
    let n = ((stop - start) / step).ceil().max(0.0);
    // An infinite step (as NumPy and MLX): `start` alone when it lies
    // before `stop` in the step's direction, else nothing.
    let (n, step) = if step.is_infinite() { (if (stop - start) * step.signum() > 0.0 { 1.0 } else { 0.0 }, 1.0) } else { (n, step) };
    if n > i32::MAX as f64 {
        bail!(InvalidArgument, "arange: {n} elements is more than the maximum array size {}", i32::MAX);
    }
    // Integer output steps by the integer distance between the first two
    // elements, `int(start + step) - int(start)` (MLX's rule), so
    // `arange(0, 3, 0.2, int32)` is fifteen zeros.
    let (start, step) = if dtype.is_integer() {
        (start.trunc(), (start + step).trunc() - start.trunc())
    } else {
        (start, step)
    };
    Array::from_op(Primitive::Arange { start, step }, vec![], vec![n as usize], dtype)
}

/// An `n x m` matrix with ones on diagonal `k` (above the main one for `k > 0`).
pub fn eye(n: usize, m: usize, k: isize, dtype: Dtype) -> Result<Array> {
    let rows = expand_dims(&arange(k as f64, k as f64 + n as f64, 1.0, Dtype::I64)?, 1)?;
    let cols = expand_dims(&arange(0.0, m as f64, 1.0, Dtype::I64)?, 0)?;
    astype(&equal(&rows, &cols)?, dtype)
}

/// `num` evenly spaced values from `start` to `stop` (`stop` included when
/// `endpoint`), computed in float64 and cast to `dtype` (integers truncate).
pub fn linspace(start: f64, stop: f64, num: usize, endpoint: bool, dtype: Dtype) -> Result<Array> {
    if !start.is_finite() || !stop.is_finite() {
        bail!(InvalidArgument, "linspace needs finite bounds, got ({start}, {stop})");
    }
    let intervals = if endpoint { num.saturating_sub(1) } else { num };
    let step = if intervals > 0 { (stop - start) / intervals as f64 } else { 0.0 };
    let i = arange(0.0, num as f64, 1.0, Dtype::F64)?;
    let v = super::add(&super::multiply(&i, &Array::scalar(step))?, &Array::scalar(start))?;
    astype(&v, dtype)
}

/// `[n, m]` ones on and below diagonal `k` (0 the main one, positive above
/// it), zeros above, in `dtype`.
pub fn tri(n: usize, m: usize, k: isize, dtype: Dtype) -> Result<Array> {
    astype(&lower_mask(n, m, k)?, dtype)
}

/// Whether element `(i, j)` of an `[n, m]` matrix has `j <= i + k`.
fn lower_mask(n: usize, m: usize, k: isize) -> Result<Array> {
    let rows = expand_dims(&arange(k as f64, n as f64 + k as f64, 1.0, Dtype::I64)?, 1)?;
    let cols = expand_dims(&arange(0.0, m as f64, 1.0, Dtype::I64)?, 0)?;
    super::less_equal(&cols, &rows)
}

/// `a` (at least 2-D) with the elements above diagonal `k` of its last two
/// axes set to zero.
pub fn tril(a: &Array, k: isize) -> Result<Array> {
    triangle(a, k, true)
}

/// `a` (at least 2-D) with the elements below diagonal `k` of its last two
/// axes set to zero.
pub fn triu(a: &Array, k: isize) -> Result<Array> {
    triangle(a, k, false)
}

fn triangle(a: &Array, k: isize, lower: bool) -> Result<Array> {
    let nd = a.ndim();
    if nd < 2 {
        bail!(Shape, "{} needs at least 2 dimensions, got shape {:?}", if lower { "tril" } else { "triu" }, a.shape());
    }
    let (n, m) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    // triu keeps j >= i + k, the complement of tril's mask at k - 1.
    let keep = if lower { lower_mask(n, m, k)? } else { super::logical_not(&lower_mask(n, m, k - 1)?)? };
    super::where_(&keep, a, &scalar(0.0, a.dtype())?)
}

/// A window of `m` points `sum_k c_k cos(2 pi k n / (m - 1))` (a generalized
/// cosine window, float32); `m = 1` gives `[1]`, as NumPy.
fn cosine_window(m: usize, coeffs: &[f64]) -> Result<Array> {
    if m <= 1 {
        return ones(&[m], Dtype::F32);
    }
    let n = arange(0.0, m as f64, 1.0, Dtype::F64)?;
    let mut w = zeros(&[m], Dtype::F64)?;
    for (k, &c) in coeffs.iter().enumerate() {
        let phase = super::multiply(&n, &Array::scalar(2.0 * std::f64::consts::PI * k as f64 / (m - 1) as f64))?;
        w = super::add(&w, &super::multiply(&super::cos(&phase)?, &Array::scalar(c))?)?;
    }
    astype(&w, Dtype::F32)
}

/// The Hann window of `m` points.
pub fn hanning(m: usize) -> Result<Array> {
    cosine_window(m, &[0.5, -0.5])
}

/// The Hamming window of `m` points.
pub fn hamming(m: usize) -> Result<Array> {
    cosine_window(m, &[0.54, -0.46])
}

/// The Blackman window of `m` points.
pub fn blackman(m: usize) -> Result<Array> {
    cosine_window(m, &[0.42, -0.5, 0.08])
}

/// The Bartlett (triangular) window of `m` points: `1 - |2n / (m - 1) - 1|`.
pub fn bartlett(m: usize) -> Result<Array> {
    if m <= 1 {
        return ones(&[m], Dtype::F32);
    }
    let n = arange(0.0, m as f64, 1.0, Dtype::F64)?;
    let t = super::subtract(&super::multiply(&n, &Array::scalar(2.0 / (m - 1) as f64))?, &Array::scalar(1.0))?;
    astype(&super::subtract(&Array::scalar(1.0), &super::abs(&t)?)?, Dtype::F32)
}
