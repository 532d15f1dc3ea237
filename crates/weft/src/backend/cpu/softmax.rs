//! `Softmax` along the last axis: max-shifted, so large inputs do not
//! overflow; float16/bfloat16 accumulate in float32.

use super::rows::{build_rows, contiguous, float_dispatch, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;
use num_traits::{Float, Zero};

pub(crate) fn softmax(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let d = *out.shape.last().unwrap_or(&1);
    let rows = if d == 0 { 0 } else { a.layout.numel() / d };
    float_dispatch!(out.dtype, "softmax", T => {
        let src = contiguous::<T>(a)?;
        build_rows::<T>(rows, d, |r, y| softmax_row(&src[r * d..(r + 1) * d], y))
    })
}

fn softmax_row<T: FloatElem>(x: &[T], y: &mut [T]) {
    let m = x.iter().fold(T::A::neg_infinity(), |m, &v| m.max(v.to_acc()));
    // A row of -inf (everything masked) has no finite maximum; shifting by 0
    // then gives 0/0 = NaN, as the unshifted formula would.
    let shift = if m.is_finite() { m } else { T::A::zero() };
    let mut sum = T::A::zero();
    let mut e = Vec::with_capacity(x.len());
    for &v in x {
        let t = (v.to_acc() - shift).exp();
        sum += t;
        e.push(t);
    }
    let inv = sum.recip();
    for (o, t) in y.iter_mut().zip(e) {
        *o = T::from_acc(t * inv);
    }
}
