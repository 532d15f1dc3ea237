//! Indexing with arrays: `take`, `take_along_axis`, and `slice_update`.

use super::{astype, broadcast_to, reshape, SliceArg};
use crate::primitive::Primitive;
use crate::shape::{broadcast_shapes, normalize_axis};
use crate::dtype::Dtype;
use crate::{bail, Array, Result};

fn check_indices(op: &str, indices: &Array) -> Result<()> {
    if !indices.dtype().is_integer() {
        bail!(Dtype, "{op}: indices must be integers, got {}", indices.dtype());
    }
    Ok(())
}

/// Picks whole slices of `a` along `axis` (of the flattened array when
/// `None`): the result has shape `a.shape[..axis] ++ indices.shape ++
/// a.shape[axis + 1..]`. Negative indices count from the end; an index out
/// of range fails the evaluation with an error.
///
/// ```
/// use weft::{ops, Array};
/// let table = Array::from_slice(&[0.0f32, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2]).unwrap();
/// let ids = Array::from_slice(&[2u32, 0], &[2]).unwrap();
/// let rows = ops::take(&table, &ids, Some(0)).unwrap();
/// assert_eq!(rows.to_vec::<f32>().unwrap(), vec![20.0, 21.0, 0.0, 1.0]);
/// ```
pub fn take(a: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    check_indices("take", indices)?;
    let (a, axis) = match axis {
        Some(ax) => (a.clone(), normalize_axis(ax, a.ndim())?),
        None => (reshape(a, &[-1])?, 0),
    };
    if a.shape()[axis] == 0 && indices.size() > 0 {
        bail!(Shape, "take: cannot index an empty axis (shape {:?})", a.shape());
    }
    let shape: Vec<usize> = a.shape()[..axis]
        .iter()
        .chain(indices.shape())
        .chain(&a.shape()[axis + 1..])
        .copied()
        .collect();
    let dtype = a.dtype();
    Array::from_op(Primitive::Gather { axis }, vec![a, indices.clone()], shape, dtype)
}

/// `out[..., i, ...] = a[..., indices[..., i, ...], ...]` along `axis`:
/// `indices` and `a` broadcast together except along `axis`, whose length
/// comes from `indices`. With `axis = None` both are flattened.
pub fn take_along_axis(a: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    check_indices("take_along_axis", indices)?;
    let (a, indices, axis) = match axis {
        Some(ax) => (a.clone(), indices.clone(), normalize_axis(ax, a.ndim())?),
        None => (reshape(a, &[-1])?, reshape(indices, &[-1])?, 0),
    };
    if indices.ndim() != a.ndim() {
        bail!(
            Shape,
            "take_along_axis: indices of shape {:?} need as many dimensions as the array {:?}",
            indices.shape(),
            a.shape()
        );
    }
    let mut a_shape = a.shape().to_vec();
    a_shape[axis] = indices.shape()[axis];
    let shape = broadcast_shapes(&a_shape, indices.shape())?;
    let mut a_target = shape.clone();
    a_target[axis] = a.shape()[axis];
    let a = broadcast_to(&a, &a_target)?;
    if a.shape()[axis] == 0 && crate::shape::numel(&shape) > 0 {
        bail!(Shape, "take_along_axis: cannot index an empty axis (shape {:?})", a.shape());
    }
    let indices = broadcast_to(&indices, &shape)?;
    let dtype = a.dtype();
    Array::from_op(Primitive::GatherAxis { axis }, vec![a, indices], shape, dtype)
}

/// A new array equal to `a` with the region `a[args...]` (as in
/// [`super::slice`]) replaced by `update`, which must broadcast to the
/// region's shape; `update` is converted to `a`'s dtype.
///
/// ```
/// use weft::{ops, ops::SliceArg, Array};
/// let a = Array::from_slice(&[0i32; 6], &[2, 3]).unwrap();
/// let u = Array::from_slice(&[7i32, 8], &[2, 1]).unwrap();
/// let b = ops::slice_update(&a, &u, &[SliceArg::ALL, SliceArg::range(1, 2)]).unwrap();
/// assert_eq!(b.to_vec::<i32>().unwrap(), vec![0, 7, 0, 0, 8, 0]);
/// ```
pub fn slice_update(a: &Array, update: &Array, args: &[SliceArg]) -> Result<Array> {
    if args.len() > a.ndim() {
        bail!(Shape, "slice_update: too many indices ({}) for shape {:?}", args.len(), a.shape());
    }
    let mut start = vec![0; a.ndim()];
    let mut step = vec![1; a.ndim()];
    let mut region = a.shape().to_vec();
    for (ax, arg) in args.iter().enumerate() {
        let (s, len) = arg.resolve(a.shape()[ax])?;
        start[ax] = s;
        step[ax] = arg.step;
        region[ax] = len;
    }
    if broadcast_shapes(update.shape(), &region)? != region {
        bail!(
            Shape,
            "slice_update: update of shape {:?} does not broadcast to the region {region:?}",
            update.shape()
        );
    }
    let update = astype(update, a.dtype())?;
    let (shape, dtype) = (a.shape().to_vec(), a.dtype());
    Array::from_op(Primitive::SliceUpdate { start, step, region }, vec![a.clone(), update], shape, dtype)
}


/// `a` with `updates` written at the flat positions `positions` (any
/// integer shape; negative positions count from the end), or combined
/// with what is there when `reduce` is given (`Sum` adds, `Prod`
/// multiplies, `Max`/`Min` keep the larger/smaller). `updates` broadcast
/// to `positions`' shape and are converted to `a`'s dtype. Repeated
/// positions: every update combines; assigning, the last one wins. A
/// position out of range fails the evaluation with an error.
///
/// Every indexed update (`a.at[idx].add(v)`, `a[idx] = v` with index
/// arrays, [`put_along_axis`]) is this op on the positions that indexing
/// `arange(a.size).reshape(a.shape)` the same way gives.
///
/// ```
/// use weft::{ops, primitive::ReduceOp, Array};
/// let a = Array::from_slice(&[1.0f32, 1.0, 1.0], &[3]).unwrap();
/// let at = Array::from_slice(&[0i32, 2, 0], &[3]).unwrap();
/// let b = ops::scatter(&a, &at, &Array::scalar(5.0f32), Some(ReduceOp::Sum)).unwrap();
/// assert_eq!(b.to_vec::<f32>().unwrap(), vec![11.0, 1.0, 6.0]);
/// ```
pub fn scatter(a: &Array, positions: &Array, updates: &Array, reduce: Option<crate::primitive::ReduceOp>) -> Result<Array> {
    check_indices("scatter", positions)?;
    if a.size() == 0 && positions.size() > 0 {
        bail!(Shape, "scatter: cannot update an empty array (shape {:?})", a.shape());
    }
    let u = broadcast_to(&astype(updates, a.dtype())?, positions.shape())?;
    let flat_u = reshape(&u, &[-1])?;
    let flat_p = reshape(positions, &[-1])?;
    Array::from_op(Primitive::Scatter { reduce }, vec![a.clone(), flat_p, flat_u], a.shape().to_vec(), a.dtype())
}

/// The flat position of every element of `a`: `arange(a.size)` in `a`'s
/// shape (`int64` when `a` has more elements than `int32` holds).
pub fn positions(a: &Array) -> Result<Array> {
    let dtype = if a.size() > i32::MAX as usize { crate::Dtype::I64 } else { crate::Dtype::I32 };
    let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    reshape(&super::arange(0.0, a.size() as f64, 1.0, dtype)?, &shape)
}

/// The inverse of [`take_along_axis`]: `a` with `values` written where
/// `take_along_axis(a, indices, axis)` reads (flattened when `axis` is
/// `None`).
///
/// An empty `indices` of any dtype (`array([])` is float32) writes nothing,
/// as MLX.
pub fn put_along_axis(a: &Array, indices: &Array, values: &Array, axis: Option<isize>) -> Result<Array> {
    let indices = if indices.size() == 0 && !indices.dtype().is_integer() { astype(indices, Dtype::I32)? } else { indices.clone() };
    check_indices("put_along_axis", &indices)?;
    let at = take_along_axis(&positions(a)?, &indices, axis)?;
    scatter(a, &at, values, None)
}
