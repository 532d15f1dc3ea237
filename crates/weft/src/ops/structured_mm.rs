//! Matrix products over picked, masked or segmented operands (MLX's
//! `gather_mm`, `block_masked_mm`, `segmented_mm`), composed from `take`,
//! elementwise ops and `matmul`, so they run on every device and
//! differentiate through those ops' rules.

use super::{arange, astype, broadcast_to, expand_dims, matmul, multiply, reshape, slice, take, SliceArg};
use crate::dtype::Dtype;
use crate::shape::broadcast_shapes;
use crate::{bail, Array, Result};

fn dims(s: &[usize]) -> Vec<isize> {
    s.iter().map(|&d| d as isize).collect()
}

/// `a`'s matrices (`[..., R, C]`) flattened to `[B, R, C]` and picked by
/// `indices`; `a` as it is without indices.
pub(crate) fn pick_matrices(op: &str, a: &Array, indices: Option<&Array>) -> Result<Array> {
    if a.ndim() < 2 {
        bail!(Shape, "[{op}] operands must have at least 2 dimensions, got {:?}", a.shape());
    }
    let Some(idx) = indices else { return Ok(a.clone()) };
    if !idx.dtype().is_integer() {
        bail!(Dtype, "[{op}] indices must be integers, got {}", idx.dtype());
    }
    let (r, c) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    take(&reshape(a, &[-1, r as isize, c as isize])?, idx, Some(0))
}

/// Matrix products of gathered operands: `a` `[..., M, K]` and `b`
/// `[..., K, N]`, their matrices flattened over the batch axes and picked
/// by `lhs_indices` and `rhs_indices` (absent: the batch axes as they are);
/// the result is `broadcast(batch shapes) ++ [M, N]`.
pub fn gather_mm(a: &Array, b: &Array, lhs_indices: Option<&Array>, rhs_indices: Option<&Array>) -> Result<Array> {
    matmul(&pick_matrices("gather_mm", a, lhs_indices)?, &pick_matrices("gather_mm", b, rhs_indices)?)
}

/// A block mask `[..., Y/bs, X/bs]` expanded to `[..., Y, X]` (every entry
/// covers a `bs x bs` block; the last blocks are cut to `Y`, `X`), in `dtype`.
fn expand_block_mask(mask: &Array, bs: usize, y: usize, x: usize, dtype: Dtype) -> Result<Array> {
    let (by, bx) = (y.div_ceil(bs), x.div_ceil(bs));
    if mask.ndim() < 2 || mask.shape()[mask.ndim() - 2..] != [by, bx] {
        bail!(
            Shape,
            "[block_masked_mm] a mask for a [{y}, {x}] operand with block size {bs} must end in [{by}, {bx}], got {:?}",
            mask.shape()
        );
    }
    let lead = &mask.shape()[..mask.ndim() - 2];
    let m = expand_dims(&astype(mask, dtype)?, &[-3isize, -1][..])?;
    let mut full: Vec<usize> = lead.to_vec();
    full.extend([by, bs, bx, bs]);
    let m = broadcast_to(&m, &full)?;
    let mut flat = dims(lead);
    flat.extend([(by * bs) as isize, (bx * bs) as isize]);
    let m = reshape(&m, &flat)?;
    let mut cut = vec![SliceArg::ALL; lead.len()];
    cut.extend([SliceArg::range(0, y as isize), SliceArg::range(0, x as isize)]);
    slice(&m, &cut)
}

/// `a @ b` with block masks: `lhs_mask` (`[..., M/bs, K/bs]`) and
/// `rhs_mask` (`[..., K/bs, N/bs]`) scale (bool: keep or zero) blocks of the
/// operands, `out_mask` (`[..., M/bs, N/bs]`) blocks of the product.
/// `block_size` is 32 or 64, as in MLX.
pub fn block_masked_mm(
    a: &Array,
    b: &Array,
    block_size: usize,
    out_mask: Option<&Array>,
    lhs_mask: Option<&Array>,
    rhs_mask: Option<&Array>,
) -> Result<Array> {
    if block_size != 32 && block_size != 64 {
        bail!(InvalidArgument, "[block_masked_mm] block size must be 32 or 64, got {block_size}");
    }
    if a.ndim() < 2 || b.ndim() < 2 {
        bail!(Shape, "[block_masked_mm] operands must have at least 2 dimensions, got {:?} and {:?}", a.shape(), b.shape());
    }
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    if !dtype.is_float() {
        bail!(Dtype, "[block_masked_mm] operands must be floating point, got {} and {}", a.dtype(), b.dtype());
    }
    let (m, k, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1], b.shape()[b.ndim() - 1]);
    let masked = |x: &Array, mask: Option<&Array>, y: usize, w: usize| -> Result<Array> {
        match mask {
            Some(mk) => multiply(&expand_block_mask(mk, block_size, y, w, dtype)?, x),
            None => Ok(x.clone()),
        }
    };
    let out = matmul(&masked(a, lhs_mask, m, k)?, &masked(b, rhs_mask, k, n)?)?;
    match out_mask {
        Some(mk) => {
            let r = multiply(&out, &expand_block_mask(mk, block_size, m, n, out.dtype())?)?;
            if r.shape() != out.shape() {
                bail!(Shape, "[block_masked_mm] out_mask {:?} does not broadcast to the product {:?}", mk.shape(), out.shape());
            }
            Ok(r)
        }
        None => Ok(out),
    }
}

/// `a[:, s0:s1] @ b[s0:s1, :]` for each segment `(s0, s1)` of `segments`
/// (integers, `[..., 2]`): the result is `segments.shape[:-1] ++ [M, N]`
/// for 2-D `a` (`[M, K]`) and `b` (`[K, N]`).
pub fn segmented_mm(a: &Array, b: &Array, segments: &Array) -> Result<Array> {
    if a.ndim() != 2 || b.ndim() != 2 {
        bail!(Shape, "[segmented_mm] operands must be matrices, got {:?} and {:?}", a.shape(), b.shape());
    }
    if segments.ndim() == 0 || segments.shape()[segments.ndim() - 1] != 2 || !segments.dtype().is_integer() {
        bail!(Shape, "[segmented_mm] segments must be integer pairs [..., 2], got {:?} {}", segments.shape(), segments.dtype());
    }
    let k = a.shape()[1];
    if b.shape()[0] != k {
        bail!(Shape, "[segmented_mm] inner dimensions differ: {:?} and {:?}", a.shape(), b.shape());
    }
    let seg_shape = &segments.shape()[..segments.ndim() - 1];
    let s = astype(segments, Dtype::I64)?;
    let bound = |i: isize| -> Result<Array> {
        let mut at = vec![SliceArg::ALL; segments.ndim() - 1];
        at.push(SliceArg::range(i, i + 1));
        slice(&s, &at)
    };
    // mask[..., k] = s0 <= k < s1, over the contracted axis.
    let ks = arange(0.0, k as f64, 1.0, Dtype::I64)?;
    let mask = super::logical_and(&super::greater_equal(&ks, &bound(0)?)?, &super::less(&ks, &bound(1)?)?)?;
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    let mask = expand_dims(&astype(&mask, dtype)?, -2isize)?; // [..., 1, K]
    let out = matmul(&multiply(a, &mask)?, b)?;
    let mut shape = dims(seg_shape);
    shape.extend([a.shape()[0] as isize, b.shape()[1] as isize]);
    let want: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    broadcast_shapes(out.shape(), &want)?;
    reshape(&out, &shape)
}
