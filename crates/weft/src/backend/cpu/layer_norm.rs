//! `LayerNorm`: `(x - mean) / sqrt(var + eps) * weight + bias` over the
//! last axis, two-pass in float32 (float64 for float64 inputs).

use super::rows::{build_rows, contiguous, float_dispatch, Acc, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;
use num_traits::Zero;

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
        let x = contiguous::<T>(&inputs[0]);
        let w = has_weight.then(|| contiguous::<T>(&inputs[1]));
        let b = has_bias.then(|| contiguous::<T>(&inputs[1 + has_weight as usize]));
        let eps = A::of_f64(eps as f64);
        let n = A::of_f64(d as f64);
        build_rows::<T>(rows, d, |r, y| {
            let x = &x[r * d..(r + 1) * d];
            let mean = x.iter().fold(A::zero(), |s, &v| s + v.to_acc()) / n;
            let var = x.iter().fold(A::zero(), |s, &v| {
                let c = v.to_acc() - mean;
                s + c * c
            }) / n;
            let inv = (var + eps).sqrt().recip();
            for (i, o) in y.iter_mut().enumerate() {
                let mut v = (x[i].to_acc() - mean) * inv;
                if let Some(w) = &w {
                    v = v * w[i].to_acc();
                }
                if let Some(b) = &b {
                    v = v + b[i].to_acc();
                }
                *o = T::from_acc(v);
            }
        })
    })
}
