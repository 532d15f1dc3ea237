//! `softmax` and `logsumexp`: fused, numerically stable row kernels.

use super::{astype, reshape, transpose};
use crate::primitive::Primitive;
use crate::shape::normalize_axis;
use crate::{bail, Array, Result};

/// `a` with `axes` (sorted, unique) moved to the end, in order; `None` when
/// they already are there.
pub(crate) fn axes_to_end(a: &Array, axes: &[usize]) -> Result<Array> {
    let rest = (0..a.ndim()).filter(|d| !axes.contains(d));
    let perm: Vec<isize> = rest.chain(axes.iter().copied()).map(|d| d as isize).collect();
    if perm.iter().enumerate().all(|(i, &p)| i as isize == p) {
        return Ok(a.clone());
    }
    transpose(a, &perm)
}

/// Moves the last axis back to `axis` (inverse of `axes_to_end(a, [axis])`).
pub(crate) fn last_to(a: &Array, axis: usize) -> Result<Array> {
    let nd = a.ndim();
    if axis + 1 == nd {
        return Ok(a.clone());
    }
    let perm: Vec<isize> = (0..nd - 1)
        .map(|d| d as isize)
        .take(axis)
        .chain([nd as isize - 1])
        .chain((axis..nd - 1).map(|d| d as isize))
        .collect();
    transpose(a, &perm)
}

/// `exp(a) / sum(exp(a))` along `axis`, computed stably (shifted by the
/// maximum); integers are computed in float32, float16/bfloat16 accumulate
/// in float32.
///
/// ```
/// use weft::{ops, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
/// let p = ops::softmax(&x, -1).unwrap().to_vec::<f32>().unwrap();
/// assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[2] > p[1]);
/// ```
pub fn softmax(a: &Array, axis: isize) -> Result<Array> {
    if a.ndim() == 0 {
        bail!(Shape, "softmax needs at least one dimension");
    }
    let ax = normalize_axis(axis, a.ndim())?;
    let x = axes_to_end(&astype(a, a.dtype().at_least_float())?, &[ax])?;
    let out = Array::from_op(Primitive::Softmax, vec![x.clone()], x.shape().to_vec(), x.dtype());
    last_to(&out, ax)
}

/// `log(sum(exp(a)))` over `axes` (all when empty), computed stably.
pub fn logsumexp(a: &Array, axes: &[isize], keepdims: bool) -> Result<Array> {
    let mut ax: Vec<usize> = if axes.is_empty() {
        (0..a.ndim()).collect()
    } else {
        axes.iter().map(|&x| normalize_axis(x, a.ndim())).collect::<Result<_>>()?
    };
    ax.sort_unstable();
    if ax.windows(2).any(|w| w[0] == w[1]) {
        bail!(InvalidArgument, "logsumexp: duplicate axes in {axes:?}");
    }
    let x = axes_to_end(&astype(a, a.dtype().at_least_float())?, &ax)?;
    let kept: Vec<isize> = (0..a.ndim()).filter(|d| !ax.contains(d)).map(|d| a.shape()[d] as isize).collect();
    let flat = reshape(&x, &kept.iter().copied().chain([-1]).collect::<Vec<_>>())?;
    let mut shape: Vec<usize> = flat.shape().to_vec();
    *shape.last_mut().expect("at least one axis") = 1;
    let out = Array::from_op(Primitive::LogSumExp, vec![flat.clone()], shape, flat.dtype());
    let target: Vec<isize> = if keepdims {
        (0..a.ndim()).map(|d| if ax.contains(&d) { 1 } else { a.shape()[d] as isize }).collect()
    } else {
        kept
    };
    reshape(&out, &target)
}
