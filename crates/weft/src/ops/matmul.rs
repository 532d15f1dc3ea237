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
