//! Sorting: `sort`, `argsort`, `topk`.

use super::shape::{axes_to_end, from_end};
use super::{reshape, slice, SliceArg};
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::shape::normalize_axis;
use crate::{bail, Array, Result};

fn prepare(a: &Array, axis: Option<isize>) -> Result<(Array, usize)> {
    match axis {
        None => Ok((reshape(a, &[-1])?, 0)),
        Some(ax) => {
            if a.ndim() == 0 {
                bail!(Shape, "cannot sort a zero-dimensional array along an axis");
            }
            let ax = normalize_axis(ax, a.ndim())?;
            Ok((axes_to_end(a, &[ax])?, ax))
        }
    }
}

/// `a` sorted ascending along `axis` (the flattened array when `None`);
/// NaN sorts last.
pub fn sort(a: &Array, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = prepare(a, axis)?;
    let out = Array::from_op(Primitive::Sort, vec![x.clone()], x.shape().to_vec(), x.dtype())?;
    from_end(&out, &[ax])
}

/// The `uint32` indices that sort `a` along `axis` (stable; NaN last).
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[3.0f32, 1.0, 2.0], &[3]).unwrap();
/// assert_eq!(ops::argsort(&x, Some(0)).unwrap().to_vec::<u32>().unwrap(), vec![1, 2, 0]);
/// ```
pub fn argsort(a: &Array, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = prepare(a, axis)?;
    let out = Array::from_op(Primitive::ArgSort, vec![x.clone()], x.shape().to_vec(), Dtype::U32)?;
    from_end(&out, &[ax])
}

/// The `k` largest elements along `axis` (the flattened array when
/// `None`), in ascending order.
pub fn topk(a: &Array, k: usize, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = prepare(a, axis)?;
    let n = *x.shape().last().expect("prepared arrays have an axis");
    if k > n {
        bail!(InvalidArgument, "topk: k = {k} is larger than the axis ({n})");
    }
    let sorted = Array::from_op(Primitive::Sort, vec![x.clone()], x.shape().to_vec(), x.dtype())?;
    let mut args = vec![SliceArg::ALL; x.ndim()];
    *args.last_mut().expect("an axis") = SliceArg::range((n - k) as isize, n as isize);
    from_end(&slice(&sorted, &args)?, &[ax])
}
