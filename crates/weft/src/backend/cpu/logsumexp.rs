//! `LogSumExp` along the last axis: `m + log(sum(exp(x - m)))` with `m` the
//! row's maximum, so it neither overflows nor underflows.

use super::rows::{build_rows, contiguous, float_dispatch, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;
use num_traits::{Float, Zero};

pub(crate) fn logsumexp(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let d = *a.layout.shape.last().unwrap_or(&1);
    let rows = crate::shape::numel(out.shape);
    float_dispatch!(out.dtype, "logsumexp", T => {
        let src = contiguous::<T>(a)?;
        build_rows::<T>(rows, 1, |r, y| y[0] = T::from_acc(lse_row::<T>(&src[r * d..(r + 1) * d])))
    })
}

fn lse_row<T: FloatElem>(x: &[T]) -> T::A {
    let m = x.iter().fold(T::A::neg_infinity(), |m, &v| m.max(v.to_acc()));
    if x.iter().any(|v| v.to_acc().is_nan()) {
        return T::A::nan();
    }
    if !m.is_finite() {
        // All -inf gives -inf (log 0); any +inf gives +inf.
        return m;
    }
    let s = x.iter().fold(T::A::zero(), |s, &v| s + (v.to_acc() - m).exp());
    m + s.ln()
}
