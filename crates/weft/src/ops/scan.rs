//! Scans: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`.

use super::astype;
use crate::dtype::Dtype;
use crate::primitive::{Primitive, ReduceOp};
use crate::shape::normalize_axis;
use crate::{Array, Result};

/// A running `op` along `axis` (of the flattened array when `None`).
fn scan(op: ReduceOp, a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    let (a, axis) = match axis {
        Some(ax) => (a.clone(), normalize_axis(ax, a.ndim())?),
        None => (super::reshape(a, &[-1])?, 0),
    };
    // As MLX: bool sums and products count in int32, every other type keeps its own.
    let dtype = match (op, a.dtype()) {
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::Bool) => Dtype::I32,
        (_, d) => d,
    };
    let a = astype(&a, dtype)?;
    let shape = a.shape().to_vec();
    Array::from_op(Primitive::Scan { op, axis, reverse, inclusive }, vec![a], shape, dtype)
}

/// Running sum along `axis` (of the flattened array when `None`); `reverse`
/// sums from the end, `inclusive = false` shifts by one (the first element
/// is 0). Bools sum as int32; integers wrap.
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[1i32, 2, 3, 4], &[4]).unwrap();
/// assert_eq!(ops::cumsum(&x, Some(0), false, true).unwrap().to_vec::<i32>().unwrap(), vec![1, 3, 6, 10]);
/// ```
pub fn cumsum(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan(ReduceOp::Sum, a, axis, reverse, inclusive)
}

/// Running product (exclusive scans start from 1).
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[1i32, 2, 3, 4], &[4]).unwrap();
/// assert_eq!(ops::cumprod(&x, Some(0), false, true).unwrap().to_vec::<i32>().unwrap(), vec![1, 2, 6, 24]);
/// ```
pub fn cumprod(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan(ReduceOp::Prod, a, axis, reverse, inclusive)
}

/// Running maximum; NaN propagates from where it appears.
pub fn cummax(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan(ReduceOp::Max, a, axis, reverse, inclusive)
}

/// Running minimum; NaN propagates from where it appears.
pub fn cummin(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan(ReduceOp::Min, a, axis, reverse, inclusive)
}

/// `log(cumsum(exp(a)))`, computed stably: shifted by each line's maximum
/// (integers compute in float32).
pub fn logcumsumexp(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    let (a, ax) = match axis {
        Some(ax) => (a.clone(), ax),
        None => (super::reshape(a, &[-1])?, 0),
    };
    let a = astype(&a, a.dtype().at_least_float())?;
    if a.size() == 0 {
        return Ok(a);
    }
    // A line whose maximum is infinite shifts by 0 instead (inf - inf is NaN).
    let m = super::max(&a, &[ax], true)?;
    let m = super::where_(&super::isfinite(&m)?, &m, &super::zeros(m.shape(), m.dtype())?)?;
    let m = crate::transforms::stop_gradient(&m);
    let s = cumsum(&super::exp(&super::subtract(&a, &m)?)?, Some(ax), reverse, inclusive)?;
    super::add(&super::log(&s)?, &m)
}
