//! `LayerNorm`: `(x - mean) / sqrt(var + eps) * weight + bias` over the
//! last axis, two-pass in float32 (float64 for float64 inputs).

use super::rows::{build_rows, contiguous, float_dispatch, sum_by, Acc, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn layer_norm(
    eps: f32,
    has_weight: bool,
    has_bias: bool,
    inputs: &[Data],
    out: OutSpec<'_>,
) -> Result<CpuBuffer> {
    let d = *out.shape.last().unwrap_or(&1);
    let rows = if d == 0 { 0 } else { inputs[0].layout.numel() / d };
    float_dispatch!(out.dtype, "layer_norm", T => {
        type A = <T as FloatElem>::A;
        let x = contiguous::<T>(&inputs[0])?;
        let w = has_weight.then(|| contiguous::<T>(&inputs[1])).transpose()?;
        let b = has_bias.then(|| contiguous::<T>(&inputs[1 + has_weight as usize])).transpose()?;
        let eps = A::of_f64(eps as f64);
        let n = A::of_f64(d as f64);
        build_rows::<T>(rows, d, |r, y| {
            let x = &x[r * d..(r + 1) * d];
            let mean = sum_by(x, |v| v.to_acc()) / n;
            let var = sum_by(x, |v| {
                let c = v.to_acc() - mean;
                c * c
            }) / n;
            let inv = (var + eps).sqrt().recip();
            let norm = |v: T| (v.to_acc() - mean) * inv;
            // One loop per affine variant keeps the per-element body branch-free.
            match (w.as_deref(), b.as_deref()) {
                (Some(w), Some(b)) => {
                    for ((o, &v), (&w, &b)) in y.iter_mut().zip(x).zip(w.iter().zip(b)) {
                        *o = T::from_acc(norm(v) * w.to_acc() + b.to_acc());
                    }
                }
                (Some(w), None) => {
                    for ((o, &v), &w) in y.iter_mut().zip(x).zip(w) {
                        *o = T::from_acc(norm(v) * w.to_acc());
                    }
                }
                (None, Some(b)) => {
                    for ((o, &v), &b) in y.iter_mut().zip(x).zip(b) {
                        *o = T::from_acc(norm(v) + b.to_acc());
                    }
                }
                (None, None) => {
                    for (o, &v) in y.iter_mut().zip(x) {
                        *o = T::from_acc(norm(v));
                    }
                }
            }
        })
    })
}
