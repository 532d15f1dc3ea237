//! Each primitive's derivative: its vector-Jacobian product (reverse mode).
//! Forward mode is its transpose (`transforms/vjp.rs`), so this one rule per
//! primitive serves `vjp`, `grad` and `jvp`. Every rule builds its result
//! from ops that have rules themselves, so derivatives of any order work.
//!
//! Unary ops state theirs per op type ([`UnaryVjp`], one impl per row of
//! the op table: a missing one is a compile error); everything else is one
//! arm of the exhaustive match in [`Primitive::vjp`].

use super::unary::op;
use super::{BinaryOp, ComplexOp, ConvParams, LinalgOp, Primitive, ReduceOp, UnaryOp};
use crate::ops::fast as fast_ops;
use crate::ops::quantized;
use crate::ops::{self as o, SliceArg};
use crate::shape::numel;
use crate::{bail, Array, Dtype, Error, Result};

/// The derivative of a unary op: the input's cotangent from the input `x`,
/// the output `y` and the output's cotangent `g`.
pub trait UnaryVjp {
    fn vjp(x: &Array, y: &Array, g: &Array) -> Result<Array>;
}

/// `v` as a 0-d array of `like`'s dtype.
fn c(v: f64, like: &Array) -> Result<Array> {
    o::astype(&Array::scalar(v), like.dtype())
}

fn sq(x: &Array) -> Result<Array> {
    o::multiply(x, x)
}

macro_rules! unary_vjp {
    ($($Op:ident |$x:ident, $y:ident, $g:ident| $body:expr;)*) => {$(
        impl UnaryVjp for op::$Op {
            #[allow(unused_variables)]
            fn vjp($x: &Array, $y: &Array, $g: &Array) -> Result<Array> {
                $body
            }
        }
    )*};
}

use std::f64::consts::{LN_10, LN_2, PI};

unary_vjp! {
    Neg |x, y, g| o::negative(g);
    Abs |x, y, g| o::multiply(g, &o::sign(x)?);
    Exp |x, y, g| o::multiply(g, y);
    Exp2 |x, y, g| o::multiply(g, &o::multiply(y, &c(LN_2, g)?)?);
    Log |x, y, g| o::divide(g, x);
    Sqrt |x, y, g| o::divide(g, &o::multiply(y, &c(2.0, g)?)?);
    // d/dx x^(-1/2) = -x^(-3/2) / 2 = -y / (2x).
    Rsqrt |x, y, g| o::multiply(g, &o::divide(y, &o::multiply(x, &c(-2.0, g)?)?)?);
    Tanh |x, y, g| o::multiply(g, &o::subtract(&c(1.0, g)?, &sq(y)?)?);
    Sigmoid |x, y, g| o::multiply(g, &o::multiply(y, &o::subtract(&c(1.0, g)?, y)?)?);
    Sin |x, y, g| o::multiply(g, &o::cos(x)?);
    Cos |x, y, g| o::negative(&o::multiply(g, &o::sin(x)?)?);
    Erf |x, y, g| o::multiply(g, &o::multiply(&c(2.0 / PI.sqrt(), g)?, &o::exp(&o::negative(&sq(x)?)?)?)?);
    // erfinv'(x) = sqrt(pi) / 2 * e^(erfinv(x)^2).
    Erfinv |x, y, g| o::multiply(g, &o::multiply(&c(PI.sqrt() / 2.0, g)?, &o::exp(&sq(y)?)?)?);
    // d/dx x Phi(x) = Phi(x) + x phi(x).
    Gelu |x, y, g| {
        let cdf = o::multiply(&c(0.5, g)?, &o::add(&c(1.0, g)?, &o::erf(&o::multiply(x, &c(std::f64::consts::FRAC_1_SQRT_2, g)?)?)?)?)?;
        let pdf = o::multiply(&c(1.0 / (2.0 * PI).sqrt(), g)?, &o::exp(&o::multiply(&sq(x)?, &c(-0.5, g)?)?)?)?;
        o::multiply(g, &o::add(&cdf, &o::multiply(x, &pdf)?)?)
    };
    // y = x (1 + tanh u) / 2 with u = k (x + 0.044715 x^3), k = sqrt(2 / pi).
    GeluApprox |x, y, g| {
        let k = (2.0 / PI).sqrt();
        let x2 = sq(x)?;
        let u = o::multiply(&c(k, g)?, &o::multiply(x, &o::add(&c(1.0, g)?, &o::multiply(&x2, &c(0.044715, g)?)?)?)?)?;
        let t = o::tanh(&u)?;
        let du = o::multiply(&c(k, g)?, &o::add(&c(1.0, g)?, &o::multiply(&x2, &c(3.0 * 0.044715, g)?)?)?)?;
        let sech2 = o::subtract(&c(1.0, g)?, &sq(&t)?)?;
        let d = o::multiply(&c(0.5, g)?, &o::add(&o::add(&c(1.0, g)?, &t)?, &o::multiply(x, &o::multiply(&sech2, &du)?)?)?)?;
        o::multiply(g, &d)
    };
    // d/dx x s(x) = s (1 + x (1 - s)).
    Silu |x, y, g| {
        let s = o::sigmoid(x)?;
        let d = o::multiply(&s, &o::add(&c(1.0, g)?, &o::multiply(x, &o::subtract(&c(1.0, g)?, &s)?)?)?)?;
        o::multiply(g, &d)
    };
    Floor |x, y, g| o::zeros(g.shape(), g.dtype());
    Ceil |x, y, g| o::zeros(g.shape(), g.dtype());
    Round |x, y, g| o::zeros(g.shape(), g.dtype());
    Tan |x, y, g| o::multiply(g, &o::add(&c(1.0, g)?, &sq(y)?)?);
    Sinh |x, y, g| o::multiply(g, &o::cosh(x)?);
    Cosh |x, y, g| o::multiply(g, &o::sinh(x)?);
    Arcsin |x, y, g| o::multiply(g, &o::rsqrt(&o::subtract(&c(1.0, g)?, &sq(x)?)?)?);
    Arccos |x, y, g| o::negative(&o::multiply(g, &o::rsqrt(&o::subtract(&c(1.0, g)?, &sq(x)?)?)?)?);
    Arctan |x, y, g| o::divide(g, &o::add(&c(1.0, g)?, &sq(x)?)?);
    Arcsinh |x, y, g| o::multiply(g, &o::rsqrt(&o::add(&sq(x)?, &c(1.0, g)?)?)?);
    Arccosh |x, y, g| o::multiply(g, &o::rsqrt(&o::subtract(&sq(x)?, &c(1.0, g)?)?)?);
    Arctanh |x, y, g| o::divide(g, &o::subtract(&c(1.0, g)?, &sq(x)?)?);
    Log1p |x, y, g| o::divide(g, &o::add(&c(1.0, g)?, x)?);
    Expm1 |x, y, g| o::multiply(g, &o::add(y, &c(1.0, g)?)?);
    Log2 |x, y, g| o::divide(g, &o::multiply(x, &c(LN_2, g)?)?);
    Log10 |x, y, g| o::divide(g, &o::multiply(x, &c(LN_10, g)?)?);
}

macro_rules! unary_vjp_dispatch {
    ($($(#[$doc:meta])* $Op:ident $name:ident $domain:ident $scope:ident;)*) => {
        /// The rule of `op` (every row of the table needs an impl of [`UnaryVjp`]).
        pub(crate) fn unary_vjp(op: UnaryOp, x: &Array, y: &Array, g: &Array) -> Result<Array> {
            match op {
                $(UnaryOp::$Op => <op::$Op as UnaryVjp>::vjp(x, y, g),)*
            }
        }
    };
}

crate::unary_ops!(unary_vjp_dispatch);

/// `g` summed down to `shape` (undoes broadcasting).
pub(crate) fn unbroadcast(g: &Array, shape: &[usize]) -> Result<Array> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let extra = g.ndim() - shape.len();
    let axes: Vec<isize> = (0..g.ndim())
        .filter(|&i| i < extra || (shape[i - extra] == 1 && g.shape()[i] != 1))
        .map(|i| i as isize)
        .collect();
    let s = if axes.is_empty() { g.clone() } else { o::sum(g, axes, true)? };
    o::reshape(&s, &shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
}

/// `onehot[..., j] = (idx[...] == j)` for `j < n` (negative indices count
/// from the end), in `dtype`: shape `idx.shape ++ [n]`.
fn onehot(idx: &Array, n: usize, dtype: Dtype) -> Result<Array> {
    let idx = if idx.dtype().is_signed() {
        let wrapped = o::add(idx, &o::astype(&Array::scalar(n as i64), idx.dtype())?)?;
        o::where_(&o::less(idx, &o::astype(&Array::scalar(0i64), idx.dtype())?)?, &wrapped, idx)?
    } else {
        idx.clone()
    };
    let range = o::arange(0.0, n as f64, 1.0, idx.dtype())?;
    o::astype(&o::equal(&o::expand_dims(&idx, -1)?, &range)?, dtype)
}

/// The cotangent of `a` (shape `a_shape`) for `take_along_axis(a, idx, axis)`
/// (`idx` and `g` of the output's shape): a scatter-add, as a one-hot sum.
fn gather_axis_vjp(a_shape: &[usize], idx: &Array, g: &Array, axis: usize) -> Result<Array> {
    let n = a_shape[axis];
    let hot = o::moveaxis(&onehot(idx, n, g.dtype())?, -1, axis as isize + 1)?;
    let spread = o::multiply(&hot, &o::expand_dims(g, axis as isize + 1)?)?;
    unbroadcast(&o::sum(&spread, &[axis as isize], false)?, a_shape)
}

/// The cotangent of `a` for `take(a, idx, axis)`: a scatter-add, as a matmul
/// of `g` with the indices' one-hot matrix.
fn gather_vjp(a: &Array, idx: &Array, g: &Array, axis: usize) -> Result<Array> {
    let sa = a.shape();
    let (p, n) = (idx.size(), sa[axis]);
    let (pre, post) = (&sa[..axis], &sa[axis + 1..]);
    let m = numel(pre) * numel(post);
    if p == 0 || m == 0 || n == 0 {
        return o::zeros(sa, g.dtype());
    }
    let dims = |v: &[usize]| -> Vec<isize> { v.iter().map(|&d| d as isize).collect() };
    let g2 = o::reshape(g, &dims(&[pre, &[p], post].concat()))?;
    let gm = o::reshape(&o::moveaxis(&g2, axis as isize, -1)?, &[m as isize, p as isize])?;
    let hot = onehot(&o::reshape(idx, &[p as isize])?, n, g.dtype())?;
    let r = o::reshape(&o::matmul(&gm, &hot)?, &dims(&[pre, post, &[n]].concat()))?;
    o::moveaxis(&r, -1, axis as isize)
}

/// The cotangent of `x` for a running max or min `out` along `axis`: each
/// inclusive `out_i` is the `x_k` where the running extreme was last set (at
/// or before `i` in scan order); its cotangent goes to that `k`. An
/// exclusive scan is the inclusive one shifted by a step in scan order (its
/// first element, the identity, comes from no `x`), so its cotangent is `g`
/// shifted back through the inclusive rule.
fn running_extreme_vjp(op: ReduceOp, x: &Array, out: &Array, g: &Array, axis: usize, reverse: bool, inclusive: bool) -> Result<Vec<Option<Array>>> {
    if !inclusive {
        let n = x.shape()[axis] as isize;
        let ax = Some(axis as isize);
        let incl = if op == ReduceOp::Max { o::cummax(x, ax, reverse, true)? } else { o::cummin(x, ax, reverse, true)? };
        // Forward: exclusive y_{i+1} = inclusive y_i, so g_incl[i] = g[i+1]
        // and the last g_incl is 0; reversed: g_incl[i] = g[i-1], the first 0.
        let mut args = vec![SliceArg::ALL; axis + 1];
        args[axis] = if reverse { SliceArg::range(0, n - 1) } else { SliceArg::range(1, n) };
        let mut widths = vec![(0, 0); x.ndim()];
        widths[axis] = if reverse { (1, 0) } else { (0, 1) };
        let shifted = o::pad(&o::slice(g, &args)?, &widths, o::PadMode::Constant(0.0))?;
        return running_extreme_vjp(op, x, &incl, &shifted, axis, reverse, true);
    }
    let n = x.shape()[axis];
    let mut line = vec![1isize; x.ndim() - axis];
    line[0] = n as isize;
    let pos = o::broadcast_to(&o::reshape(&o::arange(0.0, n as f64, 1.0, Dtype::I32)?, &line)?, x.shape())?;
    let set = o::equal(x, out)?;
    let int = |v: i32| o::astype(&Array::scalar(v), Dtype::I32);
    let at = if reverse {
        o::minimum(&o::cummin(&o::where_(&set, &pos, &int(n as i32 - 1)?)?, Some(axis as isize), true, true)?, &int(n as i32 - 1)?)?
    } else {
        o::maximum(&o::cummax(&o::where_(&set, &pos, &int(0)?)?, Some(axis as isize), false, true)?, &int(0)?)?
    };
    Ok(vec![Some(gather_axis_vjp(x.shape(), &at, g, axis)?)])
}

/// The cotangents of a fused primitive's inputs, by differentiating the
/// composition `f` it fuses.
fn via(f: impl FnOnce(&[Array]) -> Result<Array>, inputs: &[Array], g: &Array, needs: &[bool]) -> Result<Vec<Option<Array>>> {
    let (_, grads) = crate::transforms::vjp(|x| Ok(vec![f(x)?]), inputs, std::slice::from_ref(g))?;
    Ok(grads.into_iter().zip(needs).map(|(g, &n)| n.then_some(g)).collect())
}

/// `fast::scaled_dot_product_attention` as ops (grouped heads, masks).
fn sdpa_composed(x: &[Array], scale: f32, causal: bool) -> Result<Array> {
    let (q, k, v) = (&x[0], &x[1], &x[2]);
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let (b, hq, l, d, hk, s) = (qs[0] as isize, qs[1] as isize, qs[2] as isize, qs[3] as isize, ks[1] as isize, ks[2] as isize);
    let grp = hq / hk;
    let q5 = o::reshape(q, &[b, hk, grp, l, d])?;
    let k5 = o::expand_dims(k, 2)?;
    let v5 = o::expand_dims(v, 2)?;
    let mut scores = o::multiply(&o::matmul(&q5, &o::swapaxes(&k5, -1, -2)?)?, &c(scale as f64, q)?)?;
    let neg_inf = c(f64::NEG_INFINITY, q)?;
    if causal {
        let i = o::reshape(&o::arange(0.0, l as f64, 1.0, Dtype::I64)?, &[l, 1])?;
        let j = o::arange(0.0, s as f64, 1.0, Dtype::I64)?;
        let keep = o::less_equal(&j, &o::add(&i, &Array::scalar(s as i64 - l as i64))?)?;
        scores = o::where_(&keep, &scores, &neg_inf)?;
    }
    if let Some(m) = x.get(3) {
        let m5 = o::reshape(m, &[b, hk, grp, l, s])?;
        scores = if m.dtype() == Dtype::Bool { o::where_(&m5, &scores, &neg_inf)? } else { o::add(&scores, &m5)? };
    }
    let out = o::matmul(&o::softmax(&scores, -1)?, &v5)?;
    o::reshape(&out, &[b, hq, l, vs[3] as isize])
}

/// `v` as isize dimensions.
fn idims(v: &[usize]) -> Vec<isize> {
    v.iter().map(|&d| d as isize).collect()
}

/// The cotangents of a convolution's input `x` and weight `w` from the
/// output's cotangent `g`.
///
/// Input: output `o` read dilated-input position `q = o * s - lo + k *
/// kd`, so position `q` collects `g[o] w[k]` over `o * s = q + lo - k *
/// kd`: a convolution of `g` dilated by `s` with the kernel flipped (and
/// its channel axes swapped within each group), low padding `span - 1 -
/// lo`, taking every `input_dilation`-th position (its stride).
/// Weight: tap `k` collects `g[o] x[o * s - lo + k * kd]` over the batch
/// and `o`: a convolution of `x` (batch and channels swapped) with `g` as
/// the kernel, stride `kd` and kernel dilation `s`; flipped back when the
/// forward kernel was flipped.
fn conv_vjp(p: &ConvParams, x: &Array, w: &Array, g: &Array, needs: &[bool]) -> Result<Vec<Option<Array>>> {
    let nd = x.ndim();
    let d = nd - 2;
    let (xs, ws, gs) = (x.shape(), w.shape(), g.shape());
    let groups = p.groups;
    let (cg, og) = (ws[nd - 1], ws[0] / groups);
    let empty = g.size() == 0;
    let spatial = 1..=d;
    let dx = needs[0]
        .then(|| -> Result<Array> {
            if empty {
                return o::zeros(xs, g.dtype());
            }
            // [G, og, K.., cg] -> [G, cg, K.., og] -> [G * cg, K.., og].
            let w5 = o::reshape(w, &idims(&[&[groups, og], &ws[1..nd]].concat()))?;
            let perm: Vec<isize> = [vec![0, d as isize + 2], spatial.clone().map(|a| a as isize + 1).collect(), vec![1]].concat();
            let wt = o::reshape(&o::transpose(&w5, &perm)?, &idims(&[&[groups * cg], &ws[1..nd - 1], &[og]].concat()))?;
            let mut q = ConvParams {
                stride: p.input_dilation.clone(),
                padding_lo: vec![0; d],
                padding_hi: vec![0; d],
                kernel_dilation: p.kernel_dilation.clone(),
                input_dilation: p.stride.clone(),
                groups,
                flip: !p.flip,
            };
            for i in 0..d {
                let span = (ws[i + 1] as isize - 1) * p.kernel_dilation[i] as isize + 1;
                let in_len = (xs[i + 1] as isize - 1) * p.input_dilation[i] as isize + 1;
                let g_len = (gs[i + 1] as isize - 1) * p.stride[i] as isize + 1;
                q.padding_lo[i] = span - 1 - p.padding_lo[i];
                q.padding_hi[i] = in_len - g_len + p.padding_lo[i];
            }
            o::conv_node(g, &wt, q, xs.to_vec())
        })
        .transpose()?;
    let dw = needs[1]
        .then(|| -> Result<Array> {
            if empty || x.size() == 0 {
                return o::zeros(ws, g.dtype());
            }
            let n = xs[0];
            // x: [N, S.., G, cg] -> [cg, S.., G, N] -> [cg, S.., G * N].
            let x5 = o::reshape(x, &idims(&[&xs[..nd - 1], &[groups, cg]].concat()))?;
            let perm: Vec<isize> = [vec![d as isize + 2], spatial.clone().map(|a| a as isize).collect(), vec![d as isize + 1, 0]].concat();
            let xt = o::reshape(&o::transpose(&x5, &perm)?, &idims(&[&[cg], &xs[1..nd - 1], &[groups * n]].concat()))?;
            // g: [N, O.., G, og] -> [G, og, O.., N] -> [G * og, O.., N].
            let g5 = o::reshape(g, &idims(&[&gs[..nd - 1], &[groups, og]].concat()))?;
            let perm: Vec<isize> = [vec![d as isize + 1, d as isize + 2], spatial.clone().map(|a| a as isize).collect(), vec![0]].concat();
            let gt = o::reshape(&o::transpose(&g5, &perm)?, &idims(&[&[groups * og], &gs[1..nd - 1], &[n]].concat()))?;
            let mut q = ConvParams {
                stride: p.kernel_dilation.clone(),
                padding_lo: p.padding_lo.clone(),
                padding_hi: vec![0; d],
                kernel_dilation: p.stride.clone(),
                input_dilation: p.input_dilation.clone(),
                groups,
                flip: false,
            };
            for i in 0..d {
                let in_len = (xs[i + 1] as isize - 1) * p.input_dilation[i] as isize + 1;
                let reach = (ws[i + 1] as isize - 1) * p.kernel_dilation[i] as isize + (gs[i + 1] as isize - 1) * p.stride[i] as isize + 1;
                q.padding_hi[i] = reach - in_len - p.padding_lo[i];
            }
            let r = o::conv_node(&xt, &gt, q, [&[cg], &ws[1..nd - 1], &[ws[0]]].concat())?;
            // [cg, K.., C_out] -> [C_out, K.., cg].
            let perm: Vec<isize> = [vec![d as isize + 1], spatial.clone().map(|a| a as isize).collect(), vec![0]].concat();
            let mut r = o::transpose(&r, &perm)?;
            if p.flip {
                for a in spatial.clone() {
                    r = o::flip(&r, a as isize)?;
                }
            }
            Ok(r)
        })
        .transpose()?;
    Ok(vec![dx, dw])
}

/// The cotangent of the flat input of `as_strided`: each output element's
/// cotangent added to the input element it reads.
fn as_strided_vjp(x: &Array, g: &Array, strides: &[isize], offset: usize) -> Result<Array> {
    let nd = g.ndim();
    let mut idx = Array::scalar(offset as i64);
    for (k, (&n, &s)) in g.shape().iter().zip(strides).enumerate() {
        let mut line = vec![1isize; nd];
        line[k] = n as isize;
        let steps = o::multiply(&o::arange(0.0, n as f64, 1.0, Dtype::I64)?, &Array::scalar(s as i64))?;
        idx = o::add(&idx, &o::reshape(&steps, &line)?)?;
    }
    gather_vjp(x, &o::broadcast_to(&idx, g.shape())?, g, 0)
}

fn binary_vjp(op: BinaryOp, a: &Array, b: &Array, y: &Array, g: &Array, needs: &[bool]) -> Result<Vec<Option<Array>>> {
    use BinaryOp::*;
    let mask = |m: Result<Array>| -> Result<Array> { o::multiply(g, &o::astype(&m?, g.dtype())?) };
    let (ga, gb): (Option<Array>, Option<Array>) = match op {
        Add => (Some(g.clone()), Some(g.clone())),
        Sub => (Some(g.clone()), Some(o::negative(g)?)),
        Mul => (Some(o::multiply(g, b)?), Some(o::multiply(g, a)?)),
        Div => (Some(o::divide(g, b)?), Some(o::negative(&o::divide(&o::multiply(g, y)?, b)?)?)),
        // d/da a^b = b a^(b-1); d/db a^b = a^b log a, taken as its limit 0
        // where a = 0 (not 0 * -inf = NaN), as MLX.
        Pow => (
            needs[0].then(|| o::multiply(g, &o::multiply(b, &o::power(a, &o::subtract(b, &c(1.0, b)?)?)?)?)).transpose()?,
            needs[1]
                .then(|| {
                    let zero = o::equal(a, &c(0.0, a)?)?;
                    let log_a = o::log(&o::where_(&zero, &c(1.0, a)?, a)?)?;
                    o::multiply(g, &o::multiply(y, &log_a)?)
                })
                .transpose()?,
        ),
        Maximum => (Some(mask(o::greater_equal(a, b))?), Some(mask(o::less(a, b))?)),
        Minimum => (Some(mask(o::less_equal(a, b))?), Some(mask(o::greater(a, b))?)),
        Rem => (Some(g.clone()), Some(o::negative(&o::multiply(g, &o::floor_divide(a, b)?)?)?)),
        // d/da atan2(a, b) = b / (a^2 + b^2); d/db = -a / (a^2 + b^2).
        Atan2 => {
            let r = o::add(&o::multiply(a, a)?, &o::multiply(b, b)?)?;
            (Some(o::multiply(g, &o::divide(b, &r)?)?), Some(o::negative(&o::multiply(g, &o::divide(a, &r)?)?)?))
        }
        FloorDiv | Equal | NotEqual | Less | LessEqual | Greater | GreaterEqual | BitAnd | BitOr | BitXor | LeftShift | RightShift => {
            (None, None)
        }
    };
    Ok(vec![
        ga.filter(|_| needs[0]).map(|x| unbroadcast(&x, a.shape())).transpose()?,
        gb.filter(|_| needs[1]).map(|x| unbroadcast(&x, b.shape())).transpose()?,
    ])
}

/// The last two axes swapped.
fn mt(a: &Array) -> Result<Array> {
    o::swapaxes(a, -1, -2)
}

/// `(x + x^T) / 2`.
fn sym(x: &Array) -> Result<Array> {
    o::multiply(&o::add(x, &mt(x)?)?, &c(0.5, x)?)
}

/// `[..., p]` as diagonal matrices `[..., p, p]`.
fn diag_embed(v: &Array) -> Result<Array> {
    let p = v.shape()[v.ndim() - 1];
    o::multiply(&o::expand_dims(v, -1isize)?, &o::eye(p, p, 0, v.dtype())?)
}

/// The first `p` columns (`rows`: rows) of matrices.
fn leading(x: &Array, p: usize, rows: bool) -> Result<Array> {
    let nd = x.ndim();
    let mut args = vec![SliceArg::ALL; nd];
    args[if rows { nd - 2 } else { nd - 1 }] = SliceArg::range(0, p as isize);
    o::slice(x, &args)
}

/// `F[i, j] = 1 / (v[j] - v[i])` off the diagonal, 0 on it (the spectral
/// gaps of eigh and svd rules).
fn gaps(v: &Array) -> Result<Array> {
    let p = v.shape()[v.ndim() - 1];
    let d = o::subtract(&o::expand_dims(v, -2isize)?, &o::expand_dims(v, -1isize)?)?;
    o::where_(&o::eye(p, p, 0, Dtype::Bool)?, &c(0.0, v)?, &o::reciprocal(&d)?)
}

/// The cotangents of a `Linalg` node's inputs; `out` and `g` are packed as
/// the node's output ([`LinalgOp::pieces`]). Symmetric inputs (cholesky,
/// eigh) get symmetric cotangents; triangular ones (tri_inv,
/// solve_triangular) cotangents in the triangle read.
fn linalg_vjp(op: LinalgOp, inputs: &[Array], out: &Array, g: &Array) -> Result<Vec<Option<Array>>> {
    use crate::ops::linalg as la;
    let a = &inputs[0];
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let k = inputs.get(1).map_or(0, |b| b.shape()[b.ndim() - 1]);
    let pieces = op.pieces(m, n, k);
    let split = |x: &Array| -> Result<Vec<Array>> { if pieces.len() == 1 { Ok(vec![x.clone()]) } else { la::unpack(x, &pieces) } };
    let (outs, gs) = (split(out)?, split(g)?);
    let tri = |x: Array, upper: bool| if upper { o::triu(&x, 0) } else { o::tril(&x, 0) };
    let one = |x: Array| -> Result<Vec<Option<Array>>> { Ok(vec![Some(x)]) };
    match op {
        // d(A^-1) = -A^-1 dA A^-1.
        LinalgOp::Inv | LinalgOp::TriInv { .. } => {
            let xt = mt(&outs[0])?;
            let ga = o::negative(&o::matmul(&o::matmul(&xt, &gs[0])?, &xt)?)?;
            one(match op {
                LinalgOp::TriInv { upper } => tri(ga, upper)?,
                _ => ga,
            })
        }
        // x = A^-1 b: gb = A^-T g, gA = -gb x^T.
        LinalgOp::Solve | LinalgOp::SolveTriangular { .. } => {
            let transposed = match op {
                LinalgOp::SolveTriangular { upper } => LinalgOp::SolveTriangular { upper: !upper },
                other => other,
            };
            let gb = Array::from_op(Primitive::Linalg(transposed), vec![mt(a)?, gs[0].clone()], g.shape().to_vec(), g.dtype())?;
            let ga = o::negative(&o::matmul(&gb, &mt(&outs[0])?)?)?;
            let ga = match op {
                LinalgOp::SolveTriangular { upper } => tri(ga, upper)?,
                _ => ga,
            };
            Ok(vec![Some(ga), Some(gb)])
        }
        // A = L L^T: gA = sym(L^-T Phi(L^T gL) L^-1), Phi the lower
        // triangle with its diagonal halved.
        LinalgOp::Cholesky { upper } => {
            let (l, gl) = if upper { (mt(&outs[0])?, mt(&gs[0])?) } else { (outs[0].clone(), gs[0].clone()) };
            let x = o::matmul(&mt(&l)?, &gl)?;
            let half_diag = o::multiply(&o::multiply(&x, &o::eye(n, n, 0, x.dtype())?)?, &c(0.5, &x)?)?;
            let phi = o::add(&o::tril(&x, -1)?, &half_diag)?;
            let li = la::tri_inv(&l, false)?;
            one(sym(&o::matmul(&o::matmul(&mt(&li)?, &phi)?, &li)?)?)
        }
        // A = QR (m >= n): gA = (gQ + Q copyltu(M)) R^-T with
        // M = R gR^T - gQ^T Q, copyltu(M) = tril(M) + tril(M, -1)^T.
        LinalgOp::Qr => {
            if m < n {
                bail!(InvalidArgument, "the derivative of linalg::qr needs at least as many rows as columns, got {m} x {n}");
            }
            let (q, r, gq, gr) = (&outs[0], &outs[1], &gs[0], &gs[1]);
            let mm = o::subtract(&o::matmul(r, &mt(gr)?)?, &o::matmul(&mt(gq)?, q)?)?;
            let copyltu = o::add(&o::tril(&mm, 0)?, &mt(&o::tril(&mm, -1)?)?)?;
            let b = o::add(gq, &o::matmul(q, &copyltu)?)?;
            one(mt(&la::solve_triangular(r, &mt(&b)?, true)?)?)
        }
        // Townsend's rule on the thin factors U_k, S, V_k (k = min(m, n)):
        // gA = U_k [diag(gS) + (F o (U^T gU - gU^T U)) S + S (F o (V^T gV
        // - gV^T V))] V_k^T + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V
        // V^T), F[i, j] = 1 / (s_j^2 - s_i^2). Columns of the full U and V
        // past k get no cotangent.
        LinalgOp::Svd { compute_uv } => {
            let p = m.min(n);
            let (u, s, vt) = if compute_uv {
                (outs[0].clone(), outs[1].clone(), outs[2].clone())
            } else {
                let f = la::svd(a, true)?;
                (f[0].clone(), f[1].clone(), f[2].clone())
            };
            let gsv = if compute_uv { &gs[1] } else { &gs[0] };
            let (uk, vk) = (leading(&u, p, false)?, mt(&leading(&vt, p, true)?)?);
            let mut inner = diag_embed(gsv)?;
            let mut ga_extra: Option<Array> = None;
            if compute_uv {
                let (gu, gv) = (leading(&gs[0], p, false)?, mt(&leading(&gs[2], p, true)?)?);
                let f = gaps(&o::multiply(&s, &s)?)?;
                let j = o::multiply(&f, &o::subtract(&o::matmul(&mt(&uk)?, &gu)?, &o::matmul(&mt(&gu)?, &uk)?)?)?;
                let kk = o::multiply(&f, &o::subtract(&o::matmul(&mt(&vk)?, &gv)?, &o::matmul(&mt(&gv)?, &vk)?)?)?;
                inner = o::add(&inner, &o::multiply(&j, &o::expand_dims(&s, -2isize)?)?)?;
                inner = o::add(&inner, &o::multiply(&o::expand_dims(&s, -1isize)?, &kk)?)?;
                let s_inv = o::reciprocal(&s)?;
                if m > p {
                    let perp = o::subtract(&gu, &o::matmul(&uk, &o::matmul(&mt(&uk)?, &gu)?)?)?;
                    let t = o::matmul(&o::multiply(&perp, &o::expand_dims(&s_inv, -2isize)?)?, &mt(&vk)?)?;
                    ga_extra = Some(t);
                }
                if n > p {
                    let perp = o::subtract(&mt(&gv)?, &o::matmul(&o::matmul(&mt(&gv)?, &vk)?, &mt(&vk)?)?)?;
                    let t = o::matmul(&uk, &o::multiply(&o::expand_dims(&s_inv, -1isize)?, &perp)?)?;
                    ga_extra = Some(match ga_extra {
                        Some(e) => o::add(&e, &t)?,
                        None => t,
                    });
                }
            }
            let ga = o::matmul(&o::matmul(&uk, &inner)?, &mt(&vk)?)?;
            one(match ga_extra {
                Some(e) => o::add(&ga, &e)?,
                None => ga,
            })
        }
        // A = V diag(w) V^T: gA = sym(V (diag(gw) + F o (V^T gV)) V^T),
        // F[i, j] = 1 / (w_j - w_i).
        LinalgOp::Eigh { upper, vectors } => {
            let (w, v) = if vectors { (outs[0].clone(), outs[1].clone()) } else { la::eigh(a, upper)? };
            let mut inner = diag_embed(&gs[0])?;
            if vectors {
                inner = o::add(&inner, &o::multiply(&gaps(&w)?, &o::matmul(&mt(&v)?, &gs[1])?)?)?;
            }
            one(sym(&o::matmul(&o::matmul(&v, &inner)?, &mt(&v)?)?)?)
        }
        LinalgOp::Lu => bail!(InvalidArgument, "the derivative of linalg::lu and lu_factor is not implemented (MLX has none)"),
    }
}

fn complex_vjp(op: ComplexOp, z: &Array, g: &Array) -> Result<Array> {
    match op {
        ComplexOp::Real => o::astype(g, Dtype::C64),
        ComplexOp::Imag => o::multiply(&o::astype(g, Dtype::C64)?, &Array::scalar(crate::Complex64::new(0.0, 1.0))),
        // g * z / |z|.
        ComplexOp::Abs => o::multiply(&o::astype(g, Dtype::C64)?, &o::divide(z, &o::abs(z)?)?),
        ComplexOp::Conj => o::conjugate(g),
    }
}

/// The derivative of `Fft`: the adjoint transform (the inverse, rescaled).
/// A real transform's Hermitian half counts its frequencies other than 0
/// and `n / 2` twice, which `mask` weighs.
fn fft_vjp(axes: &[usize], inverse: bool, real: bool, x: &Array, g: &Array) -> Result<Array> {
    let last = *axes.last().ok_or_else(|| Error::Internal("fft with no axes".into()))?;
    let node = |inverse: bool, shape: Vec<usize>, dtype: Dtype| {
        Array::from_op(Primitive::Fft { axes: axes.to_vec(), inverse, real }, vec![g.clone()], shape, dtype)
    };
    // Along `last`: `inner` on the `m` frequencies but 0 and (for even `n`) `n / 2`.
    let mask = |m: usize, n: usize, inner: f32| -> Result<Array> {
        let v: Vec<f32> = (0..m).map(|k| if k == 0 || (n % 2 == 0 && k == n / 2) { 1.0 } else { inner }).collect();
        let mut shape = vec![1; x.ndim()];
        shape[last] = m;
        Array::from_vec(v, &shape)
    };
    let scalar = |v: f64| Array::scalar(v as f32);
    match (real, inverse) {
        (false, _) => {
            let n: f64 = axes.iter().map(|&a| x.shape()[a] as f64).product();
            let y = node(!inverse, x.shape().to_vec(), Dtype::C64)?;
            o::multiply(&y, &scalar(if inverse { 1.0 / n } else { n }))
        }
        (true, false) => {
            // x real [.., n, ..], g complex [.., n / 2 + 1, ..].
            let n: f64 = axes.iter().map(|&a| x.shape()[a] as f64).product();
            let gm = o::multiply(g, &mask(g.shape()[last], x.shape()[last], 0.5)?)?;
            let y = Array::from_op(Primitive::Fft { axes: axes.to_vec(), inverse: true, real: true }, vec![gm], x.shape().to_vec(), Dtype::F32)?;
            o::multiply(&y, &scalar(n))
        }
        (true, true) => {
            // x complex [.., m, ..], g real [.., n, ..].
            let n: f64 = axes.iter().map(|&a| g.shape()[a] as f64).product();
            let y = node(false, x.shape().to_vec(), Dtype::C64)?;
            o::multiply(&o::multiply(&y, &mask(x.shape()[last], g.shape()[last], 2.0)?)?, &scalar(1.0 / n))
        }
    }
}

impl Primitive {
    /// The cotangents of `inputs` given the cotangent `g` of this
    /// primitive's output `out` (the node itself), computed only where
    /// `needs[i]`; `None` where an input gets none (integer indices, keys).
    ///
    /// Complex64 follows one convention throughout: the cotangent of `z` is
    /// `dL/dRe(z) + i dL/dIm(z)` (a real input gets the real part of what
    /// reaches it). For a holomorphic `f` that is `g * conj(f'(z))`, while
    /// the rules below are written as `g * f'(z)`; every primitive that can
    /// touch complex64 (`primitive/complex.rs`) is holomorphic or linear
    /// with real coefficients, so its complex cotangent is the rule applied
    /// to `conj(g)`, conjugated. `Complex` (real, imag, abs, conj: not
    /// holomorphic) and `Fft` state their rules directly.
    pub(crate) fn vjp(&self, inputs: &[Array], out: &Array, g: &Array, needs: &[bool]) -> Result<Vec<Option<Array>>> {
        let complex = out.dtype().is_complex() || inputs.iter().any(|a| a.dtype().is_complex());
        if !complex || matches!(self, Primitive::Complex(_) | Primitive::Fft { .. } | Primitive::Fused(_)) {
            return self.vjp_rule(inputs, out, g, needs);
        }
        if !super::complex::supports_complex(self) {
            // The complex gate refuses such nodes when they are built.
            bail!(Dtype, "{}: no derivative for complex64 inputs", self.name());
        }
        let conj_g = o::conjugate(g)?;
        self.vjp_rule(inputs, out, &conj_g, needs)?
            .into_iter()
            .map(|c| c.map(|c| o::conjugate(&c)).transpose())
            .collect()
    }

    /// The rules, written for real inputs (see `vjp`).
    fn vjp_rule(&self, inputs: &[Array], out: &Array, g: &Array, needs: &[bool]) -> Result<Vec<Option<Array>>> {
        let x = &inputs[0];
        let one = |a: Result<Array>| -> Result<Vec<Option<Array>>> { Ok(vec![Some(a?)]) };
        let none = || Ok(vec![None; inputs.len()]);
        let dims = |v: &[usize]| -> Vec<isize> { v.iter().map(|&d| d as isize).collect() };
        match self {
            Primitive::Unary(op) => one(unary_vjp(*op, x, out, g)),
            Primitive::Binary(op) => binary_vjp(*op, &inputs[0], &inputs[1], out, g, needs),
            Primitive::Select => {
                let zero = o::zeros(&[], g.dtype())?;
                let pick = |i: usize, on_true: bool| -> Result<Option<Array>> {
                    if !needs[i] {
                        return Ok(None);
                    }
                    let r = if on_true { o::where_(x, g, &zero)? } else { o::where_(x, &zero, g)? };
                    Ok(Some(unbroadcast(&r, inputs[i].shape())?))
                };
                Ok(vec![None, pick(1, true)?, pick(2, false)?])
            }
            Primitive::AsType => one(o::astype(g, x.dtype())),
            // MLX's convention for complex inputs: the cotangent of `z` is
            // dL/dRe(z) + i dL/dIm(z).
            Primitive::Complex(op) => one(complex_vjp(*op, x, g)),
            Primitive::Fft { axes, inverse, real } => one(fft_vjp(axes, *inverse, *real, x, g)),
            Primitive::Reduce { op: ReduceOp::Sum, .. } => one(o::broadcast_to(g, x.shape())),
            // d prod / dx_k = the product of the other elements: with the
            // reduced axes moved last and flattened, an exclusive cumprod
            // from each side, multiplied. No division, so zeros are exact.
            Primitive::Reduce { op: ReduceOp::Prod, axes } => {
                let nd = x.ndim();
                let perm: Vec<usize> = (0..nd).filter(|a| !axes.contains(a)).chain(axes.iter().copied()).collect();
                let mut inverse = vec![0isize; nd];
                for (i, &p) in perm.iter().enumerate() {
                    inverse[p] = i as isize;
                }
                let xt = o::transpose(x, &perm.iter().map(|&p| p as isize).collect::<Vec<_>>())?;
                let kept = nd - axes.len();
                let mut flat = dims(&xt.shape()[..kept]);
                flat.push(-1);
                let f = o::reshape(&xt, &flat)?;
                let before = o::cumprod(&f, Some(-1), false, false)?;
                let after = o::cumprod(&f, Some(-1), true, false)?;
                let others = o::reshape(&o::multiply(&before, &after)?, &dims(xt.shape()))?;
                one(o::multiply(g, &o::transpose(&others, &inverse)?))
            }
            Primitive::Reduce { op: ReduceOp::Max | ReduceOp::Min, axes } => {
                // Split evenly between the elements equal to the extreme.
                let hit = o::astype(&o::equal(x, out)?, g.dtype())?;
                let count = o::sum(&hit, axes.iter().map(|&a| a as isize).collect::<Vec<_>>(), true)?;
                one(o::multiply(&hit, &o::divide(g, &count)?))
            }
            Primitive::ArgReduce { .. } | Primitive::ArgSort | Primitive::RandomBits | Primitive::Arange { .. } => none(),
            Primitive::Matmul => Ok(vec![
                needs[0].then(|| o::matmul(g, &o::swapaxes(&inputs[1], -1, -2)?)).transpose()?,
                needs[1].then(|| o::matmul(&o::swapaxes(x, -1, -2)?, g)).transpose()?,
            ]),
            Primitive::Reshape | Primitive::Copy => one(o::reshape(g, &dims(x.shape()))),
            Primitive::Transpose { perm } => {
                let mut inv = vec![0isize; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inv[p] = i as isize;
                }
                one(o::transpose(g, &inv))
            }
            Primitive::BroadcastTo => one(unbroadcast(g, x.shape())),
            Primitive::Slice { start, step } => {
                let prim = Primitive::SliceUpdate { start: start.clone(), step: step.clone(), region: g.shape().to_vec() };
                one(Array::from_op(prim, vec![o::zeros(x.shape(), g.dtype())?, g.clone()], x.shape().to_vec(), g.dtype()))
            }
            Primitive::Concatenate { axis } => {
                let mut at = 0isize;
                let mut r = Vec::with_capacity(inputs.len());
                for (a, &need) in inputs.iter().zip(needs) {
                    let n = a.shape()[*axis] as isize;
                    let mut args = vec![SliceArg::ALL; axis + 1];
                    args[*axis] = SliceArg::range(at, at + n);
                    r.push(need.then(|| o::slice(g, &args)).transpose()?);
                    at += n;
                }
                Ok(r)
            }
            Primitive::Gather { axis } => Ok(vec![Some(gather_vjp(x, &inputs[1], g, *axis)?), None]),
            Primitive::GatherAxis { axis } => Ok(vec![Some(gather_axis_vjp(x.shape(), &inputs[1], g, *axis)?), None]),
            Primitive::SliceUpdate { start, step, region } => {
                let keep = needs[0]
                    .then(|| {
                        let zero = o::zeros(&[], g.dtype())?;
                        Array::from_op(self.clone(), vec![g.clone(), zero], x.shape().to_vec(), g.dtype())
                    })
                    .transpose()?;
                let upd = needs[1]
                    .then(|| {
                        let cut = Array::from_op(Primitive::Slice { start: start.clone(), step: step.clone() }, vec![g.clone()], region.clone(), g.dtype())?;
                        unbroadcast(&cut, inputs[1].shape())
                    })
                    .transpose()?;
                Ok(vec![keep, upd])
            }
            // Assigning: the overwritten elements get no cotangent, each update
            // the cotangent of where it went; adding passes g through to both.
            Primitive::Scatter { reduce: reduce @ (None | Some(ReduceOp::Sum)) } => {
                let keep = needs[0]
                    .then(|| match reduce {
                        None => o::scatter(g, &inputs[1], &o::zeros(&[], g.dtype())?, None),
                        _ => Ok(g.clone()),
                    })
                    .transpose()?;
                let upd = needs[2].then(|| o::take(g, &inputs[1], None)).transpose()?;
                Ok(vec![keep, None, upd])
            }
            // Max/min: the cotangent goes to whichever of the input and the
            // updates equals the result (to each of them on a tie).
            Primitive::Scatter { reduce: Some(ReduceOp::Max | ReduceOp::Min) } => {
                let (idx, upd) = (&inputs[1], &inputs[2]);
                let zero = o::zeros(&[], g.dtype())?;
                let keep = needs[0].then(|| o::where_(&o::equal(out, x)?, g, &zero)).transpose()?;
                let upd_g = needs[2]
                    .then(|| o::where_(&o::equal(&o::take(out, idx, None)?, upd)?, &o::take(g, idx, None)?, &zero))
                    .transpose()?;
                Ok(vec![keep, None, upd_g])
            }
            // Product: the input's cotangent is g times the product of the
            // updates that landed on it; an update's is g * out / update
            // (infinite or NaN where the update is 0, as for `prod`).
            Primitive::Scatter { reduce: Some(ReduceOp::Prod) } => {
                let (idx, upd) = (&inputs[1], &inputs[2]);
                let keep = needs[0]
                    .then(|| o::multiply(g, &o::scatter(&o::ones(x.shape(), g.dtype())?, idx, upd, Some(ReduceOp::Prod))?))
                    .transpose()?;
                let upd_g = needs[2].then(|| o::divide(&o::take(&o::multiply(g, out)?, idx, None)?, upd)).transpose()?;
                Ok(vec![keep, None, upd_g])
            }
            Primitive::Softmax => {
                let inner = o::sum(&o::multiply(g, out)?, &[-1], true)?;
                one(o::multiply(out, &o::subtract(g, &inner)?))
            }
            Primitive::LogSumExp => one(o::multiply(g, &o::exp(&o::subtract(x, out)?)?)),
            Primitive::Scan { op: ReduceOp::Sum, axis, reverse, inclusive } => one(o::cumsum(g, Some(*axis as isize), !reverse, *inclusive)),
            // y_i = prod of the x_j it covers, so dL/dx_k = sum over the y_i
            // covering x_k of g_i y_i / x_k: the opposite scan of g * y,
            // over x, wherever no zero comes at or before k in scan order.
            // At the first zero z, the product without x_z: the same scan
            // of g * cumprod(x with x_z := 1). After it every covering
            // product holds x_z = 0, so the derivative is 0. No division
            // by zero anywhere.
            Primitive::Scan { op: ReduceOp::Prod, axis, reverse, inclusive } => {
                let ax = Some(*axis as isize);
                let c = |v: f64| o::astype(&Array::scalar(v), x.dtype());
                let is_zero = o::equal(x, &c(0.0)?)?;
                let seen = o::cumsum(&o::astype(&is_zero, Dtype::I32)?, ax, *reverse, true)?;
                let none_yet = o::equal(&seen, &Array::scalar(0i32))?;
                let first = o::logical_and(&is_zero, &o::equal(&seen, &Array::scalar(1i32))?)?;
                let covered = o::cumsum(&o::multiply(g, out)?, ax, !reverse, *inclusive)?;
                let before = o::divide(&covered, &o::where_(&is_zero, &c(1.0)?, x)?)?;
                let without_first = o::cumprod(&o::where_(&first, &c(1.0)?, x)?, ax, *reverse, *inclusive)?;
                let at_first = o::cumsum(&o::multiply(g, &without_first)?, ax, !reverse, *inclusive)?;
                one(o::where_(&none_yet, &before, &o::where_(&first, &at_first, &c(0.0)?)?))
            }
            Primitive::Scan { op: op @ (ReduceOp::Max | ReduceOp::Min), axis, reverse, inclusive } => {
                // Each y_i is the x_k where the running extreme was last
                // set; its cotangent goes there. `set` marks those k, `at`
                // the index each y_i came from; the cotangents gathered per
                // k are the sum over i with at_i = k, a reversed cumsum of
                // g over each run of equal `at`.
                running_extreme_vjp(*op, x, out, g, *axis, *reverse, *inclusive)
            }
            Primitive::Sort => {
                let idx = o::argsort(x, Some(-1))?;
                one(gather_axis_vjp(x.shape(), &idx, g, x.ndim() - 1))
            }
            Primitive::RmsNorm { eps } => via(
                |v| {
                    let ms = o::mean(&sq(&v[0])?, &[-1], true)?;
                    let n = o::multiply(&v[0], &o::rsqrt(&o::add(&ms, &c(*eps as f64, &v[0])?)?)?)?;
                    v.get(1).map_or(Ok(n.clone()), |w| o::multiply(&n, w))
                },
                inputs,
                g,
                needs,
            ),
            Primitive::LayerNorm { eps, has_weight, has_bias } => via(
                |v| {
                    let mu = o::mean(&v[0], &[-1], true)?;
                    let xc = o::subtract(&v[0], &mu)?;
                    let var = o::mean(&sq(&xc)?, &[-1], true)?;
                    let mut n = o::multiply(&xc, &o::rsqrt(&o::add(&var, &c(*eps as f64, &v[0])?)?)?)?;
                    if *has_weight {
                        n = o::multiply(&n, &v[1])?;
                    }
                    if *has_bias {
                        n = o::add(&n, &v[1 + usize::from(*has_weight)])?;
                    }
                    Ok(n)
                },
                inputs,
                g,
                needs,
            ),
            // A rotation: its transpose rotates by the opposite angle.
            Primitive::Rope(p) => one(fast_ops::rope(g, p.dims, p.traditional, p.base, -p.scale, p.offset)),
            Primitive::Conv(p) => conv_vjp(p, x, &inputs[1], g, needs),
            Primitive::AsStrided { strides, offset } => one(as_strided_vjp(x, g, strides, *offset)),
            Primitive::Sdpa { scale, causal } => {
                let mut needs = needs.to_vec();
                if let Some(m) = needs.get_mut(3) {
                    *m = *m && inputs[3].dtype().is_float();
                }
                via(|v| sdpa_composed(v, *scale, *causal), inputs, g, &needs)
            }
            Primitive::Linalg(op) => linalg_vjp(*op, inputs, out, g),
            // `compile`'s fused chain: the derivative of its steps as
            // ordinary nodes (each step's own rule, complex64 included).
            Primitive::Fused(p) => via(|v| p.expand(v, &vec![false; v.len()], 0, out.shape()), inputs, g, needs),
            Primitive::Quantize { .. } => none(),
            Primitive::Dequantize { group_size, bits } => {
                // Linear in the scales and biases; the codes get none.
                let (s, dt) = (&inputs[1], inputs[1].dtype());
                let ds = if needs[1] {
                    let (ones, zeros) = (o::ones(s.shape(), dt)?, o::zeros(s.shape(), dt)?);
                    let q = o::dequantize(x, &ones, &zeros, *group_size, *bits, Some(g.dtype()))?;
                    Some(o::astype(&quantized::group_sum(&o::multiply(g, &q)?, *group_size)?, dt)?)
                } else {
                    None
                };
                let db = needs[2].then(|| o::astype(&quantized::group_sum(g, *group_size)?, dt)).transpose()?;
                Ok(vec![None, ds, db])
            }
            // With int8 activations the rounding is treated as the identity
            // (a straight-through derivative).
            Primitive::QuantizedMatmul { group_size, bits, transpose, .. } => {
                if needs[1] {
                    bail!(InvalidArgument, "[QuantizedMatmul::vjp] no gradient wrt the quantized weights.");
                }
                let (w, s, b) = (&inputs[1], &inputs[2], &inputs[3]);
                let dx = needs[0]
                    .then(|| o::astype(&o::quantized_matmul(g, w, s, b, !transpose, *group_size, *bits)?, x.dtype()))
                    .transpose()?;
                let (ds, db) = if needs[2] || needs[3] {
                    let (ds, db) = quantized::quantized_matmul_scale_grads(x, w, s, g, *transpose, *group_size, *bits)?;
                    (needs[2].then_some(ds), needs[3].then(|| o::astype(&db, b.dtype())).transpose()?)
                } else {
                    (None, None)
                };
                Ok(vec![dx, None, ds, db])
            }
        }
    }
}
