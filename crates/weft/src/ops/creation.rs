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

pub fn zeros(shape: &[usize], dtype: Dtype) -> Result<Array> {
    astype(&full(shape, 0.0f64)?, dtype)
}

pub fn ones(shape: &[usize], dtype: Dtype) -> Result<Array> {
    astype(&full(shape, 1.0f64)?, dtype)
}

/// `start, start + step, ...` below `stop` (above it for a negative step).
pub fn arange(start: f64, stop: f64, step: f64, dtype: Dtype) -> Result<Array> {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
        bail!(InvalidArgument, "arange needs finite bounds and a nonzero step, got ({start}, {stop}, {step})");
    }
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    Ok(Array::from_op(Primitive::Arange { start, step }, vec![], vec![n], dtype))
}

/// An `n x m` matrix with ones on diagonal `k` (above the main one for `k > 0`).
pub fn eye(n: usize, m: usize, k: isize, dtype: Dtype) -> Result<Array> {
    let rows = expand_dims(&arange(k as f64, k as f64 + n as f64, 1.0, Dtype::I64)?, 1)?;
    let cols = expand_dims(&arange(0.0, m as f64, 1.0, Dtype::I64)?, 0)?;
    astype(&equal(&rows, &cols)?, dtype)
}
