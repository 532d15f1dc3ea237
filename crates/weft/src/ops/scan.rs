//! Scans: `cumsum`.

use super::astype;
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::shape::normalize_axis;
use crate::{Array, Result};

/// Running sum along `axis` (of the flattened array when `None`); `reverse`
/// sums from the end, `inclusive = false` shifts by one (the first element
/// is 0). Bools sum as int32, uint8 as uint32; integers wrap.
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[1i32, 2, 3, 4], &[4]).unwrap();
/// assert_eq!(ops::cumsum(&x, Some(0), false, true).unwrap().to_vec::<i32>().unwrap(), vec![1, 3, 6, 10]);
/// ```
pub fn cumsum(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    let (a, axis) = match axis {
        Some(ax) => (a.clone(), normalize_axis(ax, a.ndim())?),
        None => (super::reshape(a, &[-1])?, 0),
    };
    // As MLX: bool counts in int32, every other type keeps its own.
    let dtype = match a.dtype() {
        Dtype::Bool => Dtype::I32,
        d => d,
    };
    let a = astype(&a, dtype)?;
    let shape = a.shape().to_vec();
    Array::from_op(Primitive::CumSum { axis, reverse, inclusive }, vec![a], shape, dtype)
}
