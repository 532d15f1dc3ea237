//! `matmul`: batched, broadcasting matrix product.

use super::{astype, broadcast_to, expand_dims, reshape};
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
    if !dtype.is_float() {
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
    let a3 = broadcast_to(&astype(&a2, dtype)?, &with([m, k]))?;
    let b3 = broadcast_to(&astype(&b2, dtype)?, &with([k, n]))?;
    let out = Array::from_op(Primitive::Matmul, vec![a3, b3], with([m, n]), dtype)?;
    let mut shape: Vec<isize> = batch.iter().map(|&d| d as isize).collect();
    if a.ndim() > 1 {
        shape.push(m as isize);
    }
    if b.ndim() > 1 {
        shape.push(n as isize);
    }
    if shape.len() == out.ndim() {
        Ok(out)
    } else {
        reshape(&out, &shape)
    }
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
    let a2 = reshape(a, &[-1, ka as isize])?;
    let b2 = reshape(b, &[-1, kb as isize])?;
    let p = if Dtype::promote(a.dtype(), b.dtype()).is_float() {
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
