//! Fused transformer ops (MLX's `mx.fast`): each is one primitive with one
//! kernel, instead of a chain of elementwise ops and reductions.

use super::{astype, broadcast_to};
use crate::dtype::Dtype;
use crate::primitive::{Primitive, RopeParams};
use crate::{bail, Array, Result};

fn float_type(op: &str, arrays: &[&Array]) -> Result<Dtype> {
    let mut dtype = arrays[0].dtype();
    for a in &arrays[1..] {
        dtype = Dtype::promote(dtype, a.dtype());
    }
    if !dtype.is_float() {
        bail!(Dtype, "{op} needs floating point inputs, got {}", arrays.iter().map(|a| a.dtype().name()).collect::<Vec<_>>().join(", "));
    }
    Ok(dtype)
}

fn check_feature_vector(op: &str, what: &str, x: &Array, p: &Array) -> Result<()> {
    let d = x.shape().last().copied().unwrap_or(0);
    if p.shape() != [d] {
        bail!(Shape, "{op}: {what} of shape {:?} must be [{d}] for input {:?}", p.shape(), x.shape());
    }
    Ok(())
}

/// `x / sqrt(mean(x^2, -1) + eps) * weight` over the last axis.
///
/// ```
/// use weft::{ops::fast, Array};
/// let x = Array::from_slice(&[3.0f32, 4.0], &[1, 2]).unwrap();
/// let y = fast::rms_norm(&x, None, 0.0).unwrap().to_vec::<f32>().unwrap();
/// assert!((y[0] - 3.0 / 12.5f32.sqrt()).abs() < 1e-6);
/// ```
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    if x.ndim() == 0 {
        bail!(Shape, "rms_norm needs at least one dimension");
    }
    let mut all = vec![x];
    all.extend(weight);
    let dtype = float_type("rms_norm", &all)?;
    let mut inputs = vec![astype(x, dtype)?];
    if let Some(w) = weight {
        check_feature_vector("rms_norm", "weight", x, w)?;
        inputs.push(astype(w, dtype)?);
    }
    Array::from_op(Primitive::RmsNorm { eps }, inputs, x.shape().to_vec(), dtype)
}

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the last axis.
pub fn layer_norm(x: &Array, weight: Option<&Array>, bias: Option<&Array>, eps: f32) -> Result<Array> {
    if x.ndim() == 0 {
        bail!(Shape, "layer_norm needs at least one dimension");
    }
    let mut all = vec![x];
    all.extend(weight);
    all.extend(bias);
    let dtype = float_type("layer_norm", &all)?;
    let mut inputs = vec![astype(x, dtype)?];
    for (p, what) in [(weight, "weight"), (bias, "bias")] {
        if let Some(p) = p {
            check_feature_vector("layer_norm", what, x, p)?;
            inputs.push(astype(p, dtype)?);
        }
    }
    let prim = Primitive::LayerNorm { eps, has_weight: weight.is_some(), has_bias: bias.is_some() };
    Array::from_op(prim, inputs, x.shape().to_vec(), dtype)
}

/// Rotary position embedding of `x` (`[..., L, D]`): position `offset + l`
/// rotates the first `dims` features, pairwise, by
/// `(offset + l) * scale * base^(-2i / dims)`. `traditional` pairs
/// neighbours `(2i, 2i + 1)`; otherwise feature `i` pairs with
/// `i + dims / 2` (the layout of Llama checkpoints in Hugging Face format).
pub fn rope(x: &Array, dims: usize, traditional: bool, base: f32, scale: f32, offset: usize) -> Result<Array> {
    if x.ndim() < 2 {
        bail!(Shape, "rope needs an input of at least 2 dimensions [..., L, D], got {:?}", x.shape());
    }
    let d = x.shape()[x.ndim() - 1];
    if dims == 0 || dims % 2 != 0 || dims > d {
        bail!(InvalidArgument, "rope: dims must be even and in 1..={d}, got {dims}");
    }
    if !(base > 0.0 && base.is_finite() && scale.is_finite()) {
        bail!(InvalidArgument, "rope: base must be positive and finite and scale finite, got {base}, {scale}");
    }
    let dtype = float_type("rope", &[x])?;
    let prim = Primitive::Rope(RopeParams { dims, traditional, base, scale, offset });
    Array::from_op(prim, vec![astype(x, dtype)?], x.shape().to_vec(), dtype)
}

/// The frequencies of [`rope_with`]: MLX's `base` (inverse frequencies
/// `base^(-2i / dims)`), or the `dims / 2` frequencies themselves (each
/// pair `i` turns by `position / freqs[i]`).
#[derive(Clone, Debug)]
pub enum RopeFreqs {
    Base(f32),
    Freqs(Array),
}

/// The first position of [`rope_with`]: one offset (any integer), or one per
/// example of the leading axis (`[B]` integers).
#[derive(Clone, Debug)]
pub enum RopeOffset {
    One(i64),
    PerBatch(Array),
}

/// [`rope`] with custom frequencies, negative offsets or one offset per
/// batch example. Composed from elementwise ops (angles, `cos`/`sin`,
/// slices, one concatenation), so it runs and differentiates everywhere;
/// the fused [`rope`] primitive covers a positive offset with `base`.
pub fn rope_with(x: &Array, dims: usize, traditional: bool, freqs: &RopeFreqs, scale: f32, offset: &RopeOffset) -> Result<Array> {
    use super::{concatenate, cos, divide, exp, expand_dims, multiply, reshape, sin, slice, SliceArg};
    if let (RopeFreqs::Base(base), RopeOffset::One(o)) = (freqs, offset) {
        if let Ok(o) = usize::try_from(*o) {
            return rope(x, dims, traditional, *base, scale, o);
        }
    }
    if x.ndim() < 2 {
        bail!(Shape, "rope needs an input of at least 2 dimensions [..., L, D], got {:?}", x.shape());
    }
    let (nd, d, l) = (x.ndim(), x.shape()[x.ndim() - 1], x.shape()[x.ndim() - 2]);
    if dims == 0 || dims % 2 != 0 || dims > d {
        bail!(InvalidArgument, "rope: dims must be even and in 1..={d}, got {dims}");
    }
    if !scale.is_finite() {
        bail!(InvalidArgument, "rope: scale must be finite, got {scale}");
    }
    let dtype = float_type("rope", &[x])?;
    let half = dims / 2;
    let f32s = |v: f32| Array::scalar(v);
    // Positions [.., L]: `offset + l`, scaled; per batch example, [B, 1.., L].
    let mut pos = super::arange(0.0, l as f64, 1.0, Dtype::F32)?;
    match offset {
        RopeOffset::One(o) => pos = super::add(&pos, &f32s(*o as f32))?,
        RopeOffset::PerBatch(o) => {
            if o.ndim() != 1 || o.shape()[0] != x.shape()[0] || !o.dtype().is_integer() {
                bail!(Shape, "rope: an offset per example must be [{}] integers for input {:?}, got {} {:?}", x.shape()[0], x.shape(), o.dtype(), o.shape());
            }
            let mut shape = vec![x.shape()[0] as isize];
            shape.extend(std::iter::repeat(1).take(nd - 2));
            pos = super::add(&reshape(&astype(o, Dtype::F32)?, &shape)?, &pos)?;
        }
    }
    let pos = multiply(&pos, &f32s(scale))?;
    let inv = match freqs {
        RopeFreqs::Base(base) => {
            if !(*base > 0.0 && base.is_finite()) {
                bail!(InvalidArgument, "rope: base must be positive and finite, got {base}");
            }
            let i = super::arange(0.0, half as f64, 1.0, Dtype::F32)?;
            exp(&multiply(&i, &f32s(-base.ln() / half as f32))?)?
        }
        RopeFreqs::Freqs(f) => {
            if f.shape() != [half] {
                bail!(Shape, "rope: freqs must be one-dimensional with dims / 2 = {half} elements, got shape {:?}", f.shape());
            }
            divide(&f32s(1.0), &astype(f, Dtype::F32)?)?
        }
    };
    let theta = multiply(&expand_dims(&pos, -1isize)?, &inv)?;
    let (c, s) = (astype(&cos(&theta)?, dtype)?, astype(&sin(&theta)?, dtype)?);
    let x = astype(x, dtype)?;
    let last = |start: isize, stop: isize, step: isize| -> Result<Array> {
        let mut args = vec![SliceArg::ALL; nd];
        args[nd - 1] = SliceArg::new(Some(start), Some(stop), step);
        slice(&x, &args)
    };
    let (x1, x2) = if traditional { (last(0, dims as isize, 2)?, last(1, dims as isize, 2)?) } else { (last(0, half as isize, 1)?, last(half as isize, dims as isize, 1)?) };
    let r1 = super::subtract(&multiply(&x1, &c)?, &multiply(&x2, &s)?)?;
    let r2 = super::add(&multiply(&x1, &s)?, &multiply(&x2, &c)?)?;
    let mut parts = if traditional {
        // Interleave back: (r1_i, r2_i) pairs in place of (x_2i, x_2i+1).
        let pairs = concatenate(&[expand_dims(&r1, -1isize)?, expand_dims(&r2, -1isize)?], -1isize)?;
        let mut shape: Vec<isize> = pairs.shape()[..nd - 1].iter().map(|&v| v as isize).collect();
        shape.push(dims as isize);
        vec![reshape(&pairs, &shape)?]
    } else {
        vec![r1, r2]
    };
    if dims < d {
        parts.push(last(dims as isize, d as isize, 1)?);
    }
    concatenate(&parts, -1isize)
}

/// The mask of [`scaled_dot_product_attention`].
#[derive(Clone, Debug)]
pub enum Mask {
    /// Query `i` sees keys `j <= i + S - L` (the last query sees every key).
    Causal,
    /// Broadcastable to `[B, Hq, L, S]`: a bool mask keeps `true`, a float
    /// mask is added to the scores.
    Array(Array),
}

/// `softmax(scale * q @ k^T + mask) @ v` for q `[B, Hq, L, D]`, k
/// `[B, Hk, S, D]`, v `[B, Hk, S, Dv]`, with `Hq` a multiple of `Hk`
/// (grouped-query attention). The CPU kernel visits keys in blocks with an
/// online softmax and never builds the `[L, S]` score matrix.
pub fn scaled_dot_product_attention(q: &Array, k: &Array, v: &Array, scale: f32, mask: Option<&Mask>) -> Result<Array> {
    for (name, a) in [("queries", q), ("keys", k), ("values", v)] {
        if a.ndim() != 4 {
            bail!(Shape, "scaled_dot_product_attention: {name} must be [B, H, L, D], got {:?}", a.shape());
        }
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    if qs[0] != ks[0] || ks[0] != vs[0] || ks[1] != vs[1] || ks[2] != vs[2] || qs[3] != ks[3] {
        bail!(Shape, "scaled_dot_product_attention: shapes q {qs:?}, k {ks:?}, v {vs:?} do not fit together");
    }
    if ks[1] == 0 || qs[1] % ks[1] != 0 {
        bail!(Shape, "scaled_dot_product_attention: {} query heads are not a multiple of {} key heads", qs[1], ks[1]);
    }
    let dtype = float_type("scaled_dot_product_attention", &[q, k, v])?;
    let mut inputs = vec![astype(q, dtype)?, astype(k, dtype)?, astype(v, dtype)?];
    let causal = matches!(mask, Some(Mask::Causal));
    if let Some(Mask::Array(m)) = mask {
        if m.dtype() != Dtype::Bool && !m.dtype().is_float() {
            bail!(Dtype, "scaled_dot_product_attention: a mask must be bool or float, got {}", m.dtype());
        }
        inputs.push(broadcast_to(m, &[qs[0], qs[1], qs[2], ks[2]])?);
    }
    let shape = vec![qs[0], qs[1], qs[2], vs[3]];
    Array::from_op(Primitive::Sdpa { scale, causal }, inputs, shape, dtype)
}
