//! The layers a Llama block needs, written with weft's basic ops: embedding
//! lookup, RMSNorm, rotary embeddings (adjacent pairs), softmax, SiLU, the
//! causal mask.

use weft::ops::{self, SliceArg};
use weft::{Array, Result};

/// Rows `ids` of `table` `[vocab, H]`, as `[ids.len(), H]`.
pub fn embed(table: &Array, ids: &[u32]) -> Result<Array> {
    let rows = ids
        .iter()
        .map(|&i| ops::slice(table, &[SliceArg::range(i as isize, i as isize + 1)]))
        .collect::<Result<Vec<_>>>()?;
    ops::concatenate(&rows, 0)
}

/// `x / sqrt(mean(x^2, last axis) + eps) * weight`.
pub fn rms_norm(x: &Array, weight: &Array, eps: f32) -> Result<Array> {
    let ms = ops::mean(&ops::multiply(x, x)?, &[-1], true)?;
    let inv = ops::rsqrt(&ops::add(&ms, &Array::scalar(eps))?)?;
    ops::multiply(&ops::multiply(x, &inv)?, weight)
}

/// `cos` and `sin` of the rotation angles for positions
/// `offset..offset + n`, `[n, head_dim / 2, 1]`: pair `i` turns by
/// `pos * base^(-2i / head_dim)`.
pub fn rope_tables(offset: usize, n: usize, head_dim: usize, base: f32) -> Result<(Array, Array)> {
    let half = head_dim / 2;
    let mut cos = Vec::with_capacity(n * half);
    let mut sin = Vec::with_capacity(n * half);
    for p in offset..offset + n {
        for i in 0..half {
            let freq = (base as f64).powf(-2.0 * i as f64 / head_dim as f64);
            let angle = p as f64 * freq;
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
    Ok((Array::from_vec(cos, &[n, half, 1])?, Array::from_vec(sin, &[n, half, 1])?))
}

/// Rotates adjacent pairs `(x[2i], x[2i+1])` of the last axis of
/// `x` `[heads, T, head_dim]` by the angles in `cos`/`sin` ([`rope_tables`]).
pub fn rope(x: &Array, cos: &Array, sin: &Array) -> Result<Array> {
    let (h, t, d) = (x.shape()[0] as isize, x.shape()[1] as isize, x.shape()[2] as isize);
    let pairs = ops::reshape(x, &[h, t, d / 2, 2])?;
    let all = SliceArg::ALL;
    let x0 = ops::slice(&pairs, &[all, all, all, SliceArg::range(0, 1)])?;
    let x1 = ops::slice(&pairs, &[all, all, all, SliceArg::range(1, 2)])?;
    let y0 = ops::subtract(&ops::multiply(&x0, cos)?, &ops::multiply(&x1, sin)?)?;
    let y1 = ops::add(&ops::multiply(&x0, sin)?, &ops::multiply(&x1, cos)?)?;
    ops::reshape(&ops::concatenate(&[y0, y1], -1)?, &[h, t, d])
}

/// Softmax over the last axis: `exp(x - max) / sum`.
pub fn softmax_last(x: &Array) -> Result<Array> {
    let e = ops::exp(&ops::subtract(x, &ops::max(x, &[-1], true)?)?)?;
    ops::divide(&e, &ops::sum(&e, &[-1], true)?)
}

/// `x * sigmoid(x)`.
pub fn silu(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::sigmoid(x)?)
}

/// Additive mask `[T, offset + T]` (float32): query `i` (at position
/// `offset + i`) sees keys at positions up to its own.
pub fn causal_mask(t: usize, offset: usize) -> Result<Array> {
    let s = offset + t;
    let mut m = vec![0.0f32; t * s];
    for i in 0..t {
        for j in offset + i + 1..s {
            m[i * s + j] = f32::NEG_INFINITY;
        }
    }
    Array::from_vec(m, &[t, s])
}
