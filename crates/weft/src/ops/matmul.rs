//! `matmul`: batched, broadcasting matrix product.

use super::{astype, expand_dims, reshape};
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::shape::broadcast_shapes;
use crate::{bail, Array, Result};

/// `a @ b` with NumPy's rules: 1-D operands are promoted to matrices (and
/// the added axis removed), leading batch axes broadcast.
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        bail!(Shape, "matmul needs at least 1-D operands, got shapes {:?} and {:?}", a.shape(), b.shape());
    }
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    if !dtype.is_inexact() {
        bail!(Dtype, "matmul supports floating point types only, got {} and {}", a.dtype(), b.dtype());
    }
    let a2 = if a.ndim() == 1 { expand_dims(a, 0)? } else { a.clone() };
    let b2 = if b.ndim() == 1 { expand_dims(b, 1)? } else { b.clone() };
    let (m, k) = (a2.shape()[a2.ndim() - 2], a2.shape()[a2.ndim() - 1]);
    let (k2, n) = (b2.shape()[b2.ndim() - 2], b2.shape()[b2.ndim() - 1]);
    if k != k2 {
        bail!(
            Shape,
            "matmul: inner dimensions differ: {:?} @ {:?} (contracting {k} with {k2})",
            a.shape(),
            b.shape()
        );
    }
    let batch = broadcast_shapes(&a2.shape()[..a2.ndim() - 2], &b2.shape()[..b2.ndim() - 2])?;
    let with = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
    let a3 = broadcast_batch(&astype(&a2, dtype)?, &b2, &with([m, k]))?;
    let b3 = broadcast_batch(&astype(&b2, dtype)?, &a2, &with([k, n]))?;
    let out = Array::from_op(Primitive::Matmul, vec![a3, b3], with([m, n]), dtype)?;
    let nd = out.ndim();
    let mut drop = Vec::new();
    if a.ndim() == 1 {
        drop.push(nd - 2);
    }
    if b.ndim() == 1 {
        drop.push(nd - 1);
    }
    super::shape::reshape_units(&out, &drop, &[])
}

/// `x` broadcast to `shape`, whose batch axes (all but the last two) are
/// the broadcast of `x`'s and `other`'s: noted so that a shapeless replay
/// broadcasts to the new batch (`ShapeNote::BatchOf`).
fn broadcast_batch(x: &Array, other: &Array, shape: &[usize]) -> Result<Array> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    if broadcast_shapes(x.shape(), shape)? != shape {
        bail!(Shape, "cannot broadcast shape {:?} to {shape:?}", x.shape());
    }
    let note = || Some(crate::transforms::trace::ShapeNote::BatchOf { with: other.clone(), tail: 2 });
    Array::from_op_noted(Primitive::BroadcastTo, vec![x.clone()], shape.to_vec(), x.dtype(), note)
}

/// The inner product over the last axes: `a[..., k] * b[..., k]` summed
/// over `k`, shape `a.shape[:-1] ++ b.shape[:-1]`; a scalar operand
/// multiplies.
pub fn inner(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return super::multiply(a, b);
    }
    let (ka, kb) = (a.shape()[a.ndim() - 1], b.shape()[b.ndim() - 1]);
    if ka != kb {
        bail!(Shape, "inner: last dimensions differ: {:?} and {:?}", a.shape(), b.shape());
    }
    let dims = |s: &[usize]| -> Vec<isize> { s.iter().map(|&d| d as isize).collect() };
    let out: Vec<isize> = dims(&[&a.shape()[..a.ndim() - 1], &b.shape()[..b.ndim() - 1]].concat());
    // `-1` cannot be inferred beside a zero-length axis: give the rows.
    let rows = |s: &[usize]| s[..s.len() - 1].iter().product::<usize>() as isize;
    let a2 = reshape(a, &[rows(a.shape()), ka as isize])?;
    let b2 = reshape(b, &[rows(b.shape()), kb as isize])?;
    let p = if Dtype::promote(a.dtype(), b.dtype()).is_inexact() {
        matmul(&a2, &super::transpose(&b2, &[1, 0])?)?
    } else {
        // Integers: the broadcast product, summed (matmul is float-only).
        super::sum(&super::multiply(&expand_dims(&a2, 1)?, &expand_dims(&b2, 0)?)?, &[-1], false)?
    };
    reshape(&p, &out)
}

/// The outer product of the flattened `a` and `b`: `[a.size, b.size]`.
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    super::multiply(&reshape(a, &[-1, 1])?, &reshape(b, &[1, -1])?)
}

/// `alpha * (a @ b) + beta * c`, `c` broadcasting to the product.
pub fn addmm(c: &Array, a: &Array, b: &Array, alpha: f64, beta: f64) -> Result<Array> {
    let p = matmul(a, b)?;
    let dtype = Dtype::promote(p.dtype(), c.dtype());
    let scaled = |x: &Array, s: f64| -> Result<Array> {
        let x = astype(x, dtype)?;
        if s == 1.0 { Ok(x) } else { super::multiply(&x, &astype(&Array::scalar(s), dtype)?) }
    };
    let out = super::add(&scaled(&p, alpha)?, &scaled(c, beta)?)?;
    if out.shape() != p.shape() {
        bail!(Shape, "addmm: c of shape {:?} does not broadcast to the product's shape {:?}", c.shape(), p.shape());
    }
    Ok(out)
}

/// `sum(a * b, axis)` (the vectors along `axis`, broadcast): the array
/// API's `vecdot`.
pub fn vecdot(a: &Array, b: &Array, axis: isize) -> Result<Array> {
    // complex64: the first operand is conjugated (NumPy's and the array API's `vecdot`).
    let a = if a.dtype().is_complex() { super::conjugate(a)? } else { a.clone() };
    super::sum(&super::multiply(&a, b)?, axis, false)
}

/// Sums products over `a`'s axes `axes_a` and `b`'s `axes_b` (paired in
/// order); the result has `a`'s other axes then `b`'s.
pub fn tensordot(a: &Array, b: &Array, axes_a: &[isize], axes_b: &[isize]) -> Result<Array> {
    use crate::shape::normalize_axis;
    if axes_a.len() != axes_b.len() {
        bail!(InvalidArgument, "tensordot: {} axes of a paired with {} axes of b", axes_a.len(), axes_b.len());
    }
    let ia = axes_a.iter().map(|&x| normalize_axis(x, a.ndim())).collect::<Result<Vec<_>>>()?;
    let ib = axes_b.iter().map(|&x| normalize_axis(x, b.ndim())).collect::<Result<Vec<_>>>()?;
    for (&i, &j) in ia.iter().zip(&ib) {
        if a.shape()[i] != b.shape()[j] {
            bail!(Shape, "tensordot: axis {i} of a ({}) and axis {j} of b ({}) differ", a.shape()[i], b.shape()[j]);
        }
    }
    let free_a: Vec<usize> = (0..a.ndim()).filter(|x| !ia.contains(x)).collect();
    let free_b: Vec<usize> = (0..b.ndim()).filter(|x| !ib.contains(x)).collect();
    let k: usize = ia.iter().map(|&i| a.shape()[i]).product();
    let m: usize = free_a.iter().map(|&i| a.shape()[i]).product();
    let n: usize = free_b.iter().map(|&i| b.shape()[i]).product();
    let pa: Vec<isize> = free_a.iter().chain(&ia).map(|&i| i as isize).collect();
    let pb: Vec<isize> = ib.iter().chain(&free_b).map(|&i| i as isize).collect();
    let a2 = reshape(&super::transpose(a, &pa)?, &[m as isize, k as isize])?;
    let b2 = reshape(&super::transpose(b, &pb)?, &[k as isize, n as isize])?;
    let out: Vec<isize> = free_a.iter().map(|&i| a.shape()[i] as isize).chain(free_b.iter().map(|&i| b.shape()[i] as isize)).collect();
    reshape(&matmul(&a2, &b2)?, &out)
}

/// The Walsh-Hadamard transform along the last axis (its length a power of
/// two), times `scale` (default `1/sqrt(n)`, which makes it orthonormal):
/// `log2(n)` butterfly stages of `(a + b, a - b)` on pairs `h` apart.
/// Integers compute in float32.
pub fn hadamard_transform(a: &Array, scale: Option<f64>) -> Result<Array> {
    if a.ndim() == 0 {
        // A scalar is a length-1 transform: `a * scale`.
        return reshape(&hadamard_transform(&reshape(a, &[1])?, scale)?, &[]);
    }
    let n = *a.shape().last().unwrap_or(&1);
    if !n.is_power_of_two() {
        bail!(Shape, "hadamard_transform: the last axis must have a power-of-two length, got shape {:?}", a.shape());
    }
    let dtype = a.dtype().at_least_float();
    let lead: Vec<isize> = a.shape()[..a.ndim() - 1].iter().map(|&d| d as isize).collect();
    let mut x = astype(a, dtype)?;
    let mut h = 1usize;
    while h < n {
        // [..., n / 2h, 2, h]: the pairs (a, b) of this stage.
        let mut s = lead.clone();
        s.extend([(n / (2 * h)) as isize, 2, h as isize]);
        let y = reshape(&x, &s)?;
        let half = |i: isize| -> Result<Array> {
            let mut args = vec![super::SliceArg::ALL; y.ndim()];
            args[y.ndim() - 2] = super::SliceArg::range(i, i + 1);
            super::slice(&y, &args)
        };
        let (p, q) = (half(0)?, half(1)?);
        let z = super::concatenate(&[super::add(&p, &q)?, super::subtract(&p, &q)?], -2isize)?;
        let mut back = lead.clone();
        back.push(n as isize);
        x = reshape(&z, &back)?;
        h *= 2;
    }
    let scale = scale.unwrap_or(1.0 / (n as f64).sqrt());
    super::multiply(&x, &astype(&Array::scalar(scale), dtype)?)
}
