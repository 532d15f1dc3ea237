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
    if x.dtype().is_complex() {
        let out = super::take_along_axis(&x, &complex_argsort_last(&x)?, Some(-1))?;
        return from_end(&out, &[ax]);
    }
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
    if x.dtype().is_complex() {
        return from_end(&complex_argsort_last(&x)?, &[ax]);
    }
    let out = Array::from_op(Primitive::ArgSort, vec![x.clone()], x.shape().to_vec(), Dtype::U32)?;
    from_end(&out, &[ax])
}

/// The stable argsort of complex64 `x` along its last axis in MLX's order
/// (real part, then imaginary part) with NaN parts last as NumPy puts them
/// (`R+Rj`, then `R+nanj`, `nan+Rj`, `nan+nanj`): three stable passes, by
/// the imaginary part, by the real part, then by that NaN class.
fn complex_argsort_last(x: &Array) -> Result<Array> {
    let (re, im) = (super::real(x)?, super::imag(x)?);
    let by_imag = argsort_last(&im)?;
    let re_by_imag = super::take_along_axis(&re, &by_imag, Some(-1))?;
    let by_real = super::take_along_axis(&by_imag, &argsort_last(&re_by_imag)?, Some(-1))?;
    let nan = |p: &Array| super::astype(&super::isnan(p)?, Dtype::U32);
    let class = super::add(&super::multiply(&nan(&re)?, &Array::scalar(2u32))?, &nan(&im)?)?;
    let class_by_real = super::take_along_axis(&class, &by_real, Some(-1))?;
    super::take_along_axis(&by_real, &argsort_last(&class_by_real)?, Some(-1))
}

fn argsort_last(x: &Array) -> Result<Array> {
    Array::from_op(Primitive::ArgSort, vec![x.clone()], x.shape().to_vec(), Dtype::U32)
}

/// The `k` largest elements along `axis` (the flattened array when
/// `None`), in ascending order.
pub fn topk(a: &Array, k: usize, axis: Option<isize>) -> Result<Array> {
    let (x, ax) = prepare(a, axis)?;
    let n = *x.shape().last().expect("prepared arrays have an axis");
    if k > n {
        bail!(InvalidArgument, "topk: k = {k} is larger than the axis ({n})");
    }
    let sorted = sort(&x, Some(-1))?;
    let mut args = vec![SliceArg::ALL; x.ndim()];
    *args.last_mut().expect("an axis") = SliceArg::range((n - k) as isize, n as isize);
    from_end(&slice(&sorted, &args)?, &[ax])
}

/// `a` with the element of sorted rank `kth` at index `kth` along `axis`,
/// smaller ones before it and larger after (NumPy's `partition`). weft
/// sorts the whole axis, which is one valid partition.
pub fn partition(a: &Array, kth: isize, axis: Option<isize>) -> Result<Array> {
    check_kth(a, kth, axis)?;
    sort(a, axis)
}

/// The `uint32` indices that [`partition`] `a` (a full argsort).
pub fn argpartition(a: &Array, kth: isize, axis: Option<isize>) -> Result<Array> {
    check_kth(a, kth, axis)?;
    argsort(a, axis)
}

fn check_kth(a: &Array, kth: isize, axis: Option<isize>) -> Result<()> {
    let n = match axis {
        None => a.size(),
        Some(ax) if a.ndim() > 0 => a.shape()[normalize_axis(ax, a.ndim())?],
        Some(_) => bail!(Shape, "cannot partition a zero-dimensional array along an axis"),
    } as isize;
    if kth >= n || kth < -n {
        bail!(InvalidArgument, "partition: kth = {kth} is out of range for an axis of size {n}");
    }
    Ok(())
}

/// The median over `axes` (all when empty): the middle of the sorted
/// values, the mean of the two middle ones for an even count; NaN when a
/// NaN is among them (as MLX and NumPy). Integers give float32.
pub fn median(a: &Array, axes: impl Into<crate::shape::Axes>, keepdims: bool) -> Result<Array> {
    let axes = axes.into().normalize(a.ndim())?;
    let x = super::astype(a, a.dtype().at_least_float())?;
    // The reduced axes, flattened into one last axis.
    let moved = axes_to_end(&x, &axes)?;
    let keep = moved.ndim() - axes.len();
    let n: usize = moved.shape()[keep..].iter().product();
    if n == 0 {
        bail!(Shape, "median of an empty array");
    }
    let mut flat: Vec<isize> = moved.shape()[..keep].iter().map(|&d| d as isize).collect();
    flat.push(n as isize);
    let sorted = sort(&reshape(&moved, &flat)?, Some(-1))?;
    let at = |i: usize| -> Result<Array> {
        let mut args = vec![SliceArg::ALL; keep + 1];
        args[keep] = SliceArg::range(i as isize, i as isize + 1);
        slice(&sorted, &args)
    };
    let mid = if n % 2 == 1 {
        at(n / 2)?
    } else {
        super::multiply(&super::add(&at(n / 2 - 1)?, &at(n / 2)?)?, &super::astype(&Array::scalar(0.5f64), x.dtype())?)?
    };
    // NaN sorts last: the last sorted value is NaN when any is.
    let has_nan = super::isnan(&at(n - 1)?)?;
    let nan = super::astype(&Array::scalar(f64::NAN), x.dtype())?;
    let out = super::where_(&has_nan, &nan, &mid)?;
    // `out` is the kept axes then one size-1 axis.
    let mut shape: Vec<isize> = moved.shape()[..keep].iter().map(|&d| d as isize).collect();
    if keepdims {
        shape = (0..a.ndim()).map(|i| if axes.contains(&i) { 1 } else { a.shape()[i] as isize }).collect();
    }
    reshape(&out, &shape)
}

/// For each of `values`, the index in the 1-D ascending `sorted` where it
/// would be inserted to keep the order: before equal elements (`right =
/// false`, NumPy's `side="left"`) or after them. `uint32`, `values`' shape.
/// The order is [`sort`]'s: NaN after every number (and equal to NaN).
pub fn searchsorted(sorted: &Array, values: &Array, right: bool) -> Result<Array> {
    if sorted.ndim() != 1 {
        bail!(Shape, "searchsorted: the sorted sequence must be 1-D, got shape {:?}", sorted.shape());
    }
    let dtype = Dtype::promote(sorted.dtype(), values.dtype());
    let s = super::astype(sorted, dtype)?;
    let v = super::expand_dims(&super::astype(values, dtype)?, vec![-1])?;
    // The count of elements before the insertion point.
    let v_nan = super::isnan(&v)?;
    let before = if right {
        super::logical_or(&super::less_equal(&s, &v)?, &v_nan)?
    } else {
        super::logical_or(&super::less(&s, &v)?, &super::logical_and(&v_nan, &super::logical_not(&super::isnan(&s)?)?)?)?
    };
    super::astype(&super::sum(&before, -1isize, false)?, Dtype::U32)
}
