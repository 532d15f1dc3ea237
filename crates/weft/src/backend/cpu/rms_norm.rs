//! `RmsNorm`: `x / sqrt(mean(x^2) + eps) * weight` over the last axis, in
//! float32 (float64 for float64 inputs).

use super::rows::{build_rows, contiguous, float_dispatch, sum_by, Acc, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn rms_norm(eps: f32, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    let d = *out.shape.last().unwrap_or(&1);
    let rows = if d == 0 { 0 } else { inputs[0].layout.numel() / d };
    float_dispatch!(out.dtype, "rms_norm", T => {
        let x = contiguous::<T>(&inputs[0])?;
        let w = inputs.get(1).map(|w| contiguous::<T>(w)).transpose()?;
        let eps = <T as FloatElem>::A::of_f64(eps as f64);
        build_rows::<T>(rows, d, |r, y| {
            let x = &x[r * d..(r + 1) * d];
            let ss = sum_by(x, |v| v.to_acc() * v.to_acc());
            let inv = (ss / <T as FloatElem>::A::of_f64(d as f64) + eps).sqrt().recip();
            for (i, o) in y.iter_mut().enumerate() {
                let v = x[i].to_acc() * inv;
                *o = T::from_acc(match &w { Some(w) => v * w[i].to_acc(), None => v });
            }
        })
    })
}
