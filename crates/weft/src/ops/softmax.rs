//! `softmax` and `logsumexp`: fused, numerically stable row kernels, over
//! any set of axes (moved to the end and merged into one row).

use super::shape::{axes_to_end, from_end};
use super::{astype, exp, reshape, subtract};
use crate::primitive::Primitive;
use crate::shape::Axes;
use crate::{Array, Result};

/// `a` (cast to at least float32) with `axes` moved to the end and merged
/// into one: the rows the kernels reduce. Returns the rows and the shape of
/// `a` with `axes` moved to the end.
fn rows_over(a: &Array, axes: &[usize]) -> Result<(Array, Vec<usize>)> {
    let x = axes_to_end(&astype(a, a.dtype().at_least_float())?, axes)?;
    let moved = x.shape().to_vec();
    let (kept, merged) = moved.split_at(moved.len() - axes.len());
    let row_len: usize = merged.iter().product();
    let rows = reshape(&x, &kept.iter().chain([&row_len]).map(|&d| d as isize).collect::<Vec<_>>())?;
    Ok((rows, moved))
}

/// `exp(a) / sum(exp(a))` over `axes` (`Axes::All`: every axis), computed
/// stably (shifted by the maximum); integers are computed in float32,
/// float16/bfloat16 accumulate in float32. Over no axis each element is its
/// own row (`exp(x - x)`).
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
/// let p = ops::softmax(&x, -1).unwrap().to_vec::<f32>().unwrap();
/// assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[2] > p[1]);
/// ```
pub fn softmax(a: &Array, axes: impl Into<Axes>) -> Result<Array> {
    let axes = axes.into().normalize(a.ndim())?;
    if axes.is_empty() {
        let x = astype(a, a.dtype().at_least_float())?;
        return exp(&subtract(&x, &x)?);
    }
    let (rows, moved) = rows_over(a, &axes)?;
    let out = Array::from_op(Primitive::Softmax, vec![rows.clone()], rows.shape().to_vec(), rows.dtype())?;
    from_end(&reshape(&out, &moved.iter().map(|&d| d as isize).collect::<Vec<_>>())?, &axes)
}

/// `log(sum(exp(a)))` over `axes` (`Axes::All`: every axis), computed
/// stably; over no axis it is `a` (as at least float32).
pub fn logsumexp(a: &Array, axes: impl Into<Axes>, keepdims: bool) -> Result<Array> {
    let axes = axes.into().normalize(a.ndim())?;
    if axes.is_empty() {
        return astype(a, a.dtype().at_least_float());
    }
    let (rows, _) = rows_over(a, &axes)?;
    let mut shape = rows.shape().to_vec();
    *shape.last_mut().expect("rows have a last axis") = 1;
    let out = Array::from_op(Primitive::LogSumExp, vec![rows.clone()], shape, rows.dtype())?;
    if axes == [a.ndim() - 1] {
        // The rows are `a` itself: drop the kept axis so that a shapeless
        // replay can follow new sizes.
        let last = [a.ndim() - 1];
        return super::shape::reshape_units(&out, if keepdims { &[] } else { &last }, &[]);
    }
    let target: Vec<isize> = (0..a.ndim())
        .filter_map(|d| match axes.contains(&d) {
            true => keepdims.then_some(1),
            false => Some(a.shape()[d] as isize),
        })
        .collect();
    reshape(&out, &target)
}
