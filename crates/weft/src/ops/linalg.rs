//! `linalg`: norms, inverses, solves and factorizations (MLX's
//! `mlx.core.linalg`), batched over leading axes, in float32 or float64.
//!
//! Factorizations, inverses and solves build one [`Primitive::Linalg`] node
//! (CPU kernels in `backend/cpu/linalg.rs`, on the `faer` crate; a GPU
//! stream computes them on the host) and cut its packed output into the
//! arrays they return ([`LinalgOp::pieces`]). `norm`, `cross`, `pinv`,
//! `cholesky_inv`, `det` and `slogdet` are composed of other ops. `eig` and
//! `eigvals` (complex results) are not here: weft has no complex dtype.
//!
//! ```
//! use weft::{linalg, ops, Array};
//! let a = Array::from_slice(&[4.0f32, 1.0, 2.0, 3.0], &[2, 2]).unwrap();
//! let (q, r) = linalg::qr(&a).unwrap();
//! let back = ops::matmul(&q, &r).unwrap().to_vec::<f32>().unwrap();
//! assert!(back.iter().zip([4.0, 1.0, 2.0, 3.0]).all(|(x, y)| (x - y).abs() < 1e-5));
//! ```

use super::shape::axes_to_end;
use super::{
    abs, add, astype, broadcast_to, concatenate, diagonal, expand_dims, eye, greater, log, matmul, max, min, moveaxis, multiply,
    not_equal, pad, power, prod, reciprocal, remainder, reshape, sign, slice, sqrt, squeeze, subtract, sum, swapaxes, tril, triu,
    where_, zeros, PadMode, SliceArg,
};
use crate::primitive::{LinalgOp, Primitive};
use crate::shape::{broadcast_shapes, normalize_axis};
use crate::{bail, Array, Dtype, Result};

fn dims(v: &[usize]) -> Vec<isize> {
    v.iter().map(|&d| d as isize).collect()
}

/// `v` as a 0-d array of `dtype`.
fn c(v: f64, dtype: Dtype) -> Result<Array> {
    astype(&Array::scalar(v), dtype)
}

/// `dtype` when the factorizations support it (float32, float64), as MLX.
fn float_type(what: &str, dtype: Dtype) -> Result<Dtype> {
    match dtype {
        Dtype::F32 | Dtype::F64 => Ok(dtype),
        d => bail!(Dtype, "linalg::{what}: arrays must have type float32 or float64, got {d}"),
    }
}

/// `(m, n)` of the trailing matrices of `a`.
fn matrices(a: &Array, what: &str) -> Result<(usize, usize)> {
    let nd = a.ndim();
    if nd < 2 {
        bail!(Shape, "linalg::{what}: needs an array with at least two dimensions, got shape {:?}", a.shape());
    }
    Ok((a.shape()[nd - 2], a.shape()[nd - 1]))
}

fn square(a: &Array, what: &str) -> Result<usize> {
    let (m, n) = matrices(a, what)?;
    if m != n {
        bail!(Shape, "linalg::{what}: needs square matrices, got shape {:?}", a.shape());
    }
    Ok(n)
}

/// The node computing `op` of `inputs` (the first `[..., m, n]`, checked by
/// the caller), its results cut out of the packed output.
fn factor(op: LinalgOp, inputs: Vec<Array>) -> Result<Vec<Array>> {
    let a = &inputs[0];
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let k = inputs.get(1).map_or(0, |b| b.shape()[b.ndim() - 1]);
    let batch = a.shape()[..nd - 2].to_vec();
    let pieces = op.pieces(m, n, k);
    let dtype = a.dtype();
    if let [piece] = &pieces[..] {
        return Ok(vec![Array::from_op(Primitive::Linalg(op), inputs, [&batch[..], piece].concat(), dtype)?]);
    }
    let packed = Array::from_op(Primitive::Linalg(op), inputs, [&batch[..], &[op.row_len(m, n, k)]].concat(), dtype)?;
    unpack(&packed, &pieces)
}

/// The results packed along the last axis of `packed` (shapes `pieces` per
/// matrix), each in its own shape.
pub(crate) fn unpack(packed: &Array, pieces: &[Vec<usize>]) -> Result<Vec<Array>> {
    let nd = packed.ndim();
    let batch = &packed.shape()[..nd - 1];
    let mut at = 0;
    pieces
        .iter()
        .map(|p| {
            let len: usize = p.iter().product();
            let mut args = vec![SliceArg::ALL; nd];
            args[nd - 1] = SliceArg::range(at as isize, (at + len) as isize);
            at += len;
            reshape(&slice(packed, &args)?, &dims(&[batch, p].concat()))
        })
        .collect()
}

fn only(mut v: Vec<Array>) -> Result<Array> {
    v.pop().ok_or_else(|| crate::Error::Internal("linalg: a factorization produced no result".into()))
}

/// The inverse of each square matrix; evaluating a singular one fails.
pub fn inv(a: &Array) -> Result<Array> {
    square(a, "inv")?;
    float_type("inv", a.dtype())?;
    only(factor(LinalgOp::Inv, vec![a.clone()])?)
}

/// The inverse of the lower (or upper) triangle of each square matrix; the
/// other triangle of `a` is ignored and zero in the result.
pub fn tri_inv(a: &Array, upper: bool) -> Result<Array> {
    square(a, "tri_inv")?;
    float_type("tri_inv", a.dtype())?;
    only(factor(LinalgOp::TriInv { upper }, vec![a.clone()])?)
}

/// The Cholesky factor of each symmetric positive definite matrix: lower
/// `L` with `a = L L^T`, or upper `U = L^T` (reading that triangle of `a`).
/// Evaluating a matrix that is not positive definite fails.
pub fn cholesky(a: &Array, upper: bool) -> Result<Array> {
    square(a, "cholesky")?;
    float_type("cholesky", a.dtype())?;
    only(factor(LinalgOp::Cholesky { upper }, vec![a.clone()])?)
}

/// The inverse of `A = L L^T` (or `U^T U`) from its Cholesky factor.
pub fn cholesky_inv(l: &Array, upper: bool) -> Result<Array> {
    square(l, "cholesky_inv")?;
    float_type("cholesky_inv", l.dtype())?;
    let li = tri_inv(l, upper)?;
    let lt = swapaxes(&li, -1, -2)?;
    if upper {
        matmul(&li, &lt)
    } else {
        matmul(&lt, &li)
    }
}

/// `x` with `a @ x = b`: `b` is a vector `[n]` or matrices `[..., n, k]`
/// whose batch broadcasts with `a`'s.
pub fn solve(a: &Array, b: &Array) -> Result<Array> {
    solve_with(LinalgOp::Solve, a, b)
}

/// `solve` for triangular `a` (only its lower, or upper, triangle is read).
pub fn solve_triangular(a: &Array, b: &Array, upper: bool) -> Result<Array> {
    solve_with(LinalgOp::SolveTriangular { upper }, a, b)
}

fn solve_with(op: LinalgOp, a: &Array, b: &Array) -> Result<Array> {
    let what = op.name();
    let n = square(a, what)?;
    let dtype = Dtype::promote(a.dtype(), b.dtype());
    if !matches!(dtype, Dtype::F32 | Dtype::F64) {
        bail!(Dtype, "linalg::{what}: arrays must promote to float32 or float64, got {} and {}", a.dtype(), b.dtype());
    }
    if b.ndim() == 0 {
        bail!(Shape, "linalg::{what}: b must have at least one dimension");
    }
    let vector = b.ndim() == 1;
    let b2 = if vector { expand_dims(b, -1isize)? } else { b.clone() };
    let (rows, k) = (b2.shape()[b2.ndim() - 2], b2.shape()[b2.ndim() - 1]);
    if rows != n {
        bail!(Shape, "linalg::{what}: a is {n} x {n} but b has {rows} rows (shapes {:?} and {:?})", a.shape(), b.shape());
    }
    let batch = broadcast_shapes(&a.shape()[..a.ndim() - 2], &b2.shape()[..b2.ndim() - 2])?;
    let a3 = broadcast_to(&astype(a, dtype)?, &[&batch[..], &[n, n]].concat())?;
    let b3 = broadcast_to(&astype(&b2, dtype)?, &[&batch[..], &[n, k]].concat())?;
    let x = only(factor(op, vec![a3, b3])?)?;
    if vector {
        squeeze(&x, -1isize)
    } else {
        Ok(x)
    }
}

/// The reduced QR factorization: `Q [..., m, k]` with orthonormal columns
/// and upper triangular `R [..., k, n]`, `k = min(m, n)`.
pub fn qr(a: &Array) -> Result<(Array, Array)> {
    matrices(a, "qr")?;
    float_type("qr", a.dtype())?;
    let mut r = factor(LinalgOp::Qr, vec![a.clone()])?.into_iter();
    match (r.next(), r.next()) {
        (Some(q), Some(r)) => Ok((q, r)),
        _ => bail!(Internal, "linalg::qr: missing factors"),
    }
}

/// The SVD `a = U[:, :k] diag(S) Vt[:k]`: `[U [..., m, m], S [..., k],
/// Vt [..., n, n]]` (singular values descending), or `[S]` when not
/// `compute_uv`.
pub fn svd(a: &Array, compute_uv: bool) -> Result<Vec<Array>> {
    matrices(a, "svd")?;
    float_type("svd", a.dtype())?;
    factor(LinalgOp::Svd { compute_uv }, vec![a.clone()])
}

/// Eigenvalues (ascending) and eigenvectors (columns) of symmetric
/// matrices given by their lower triangle (upper when `upper`, NumPy's
/// `UPLO="U"`).
pub fn eigh(a: &Array, upper: bool) -> Result<(Array, Array)> {
    square(a, "eigh")?;
    float_type("eigh", a.dtype())?;
    let mut r = factor(LinalgOp::Eigh { upper, vectors: true }, vec![a.clone()])?.into_iter();
    match (r.next(), r.next()) {
        (Some(w), Some(v)) => Ok((w, v)),
        _ => bail!(Internal, "linalg::eigh: missing results"),
    }
}

/// The eigenvalues of [`eigh`] alone.
pub fn eigvalsh(a: &Array, upper: bool) -> Result<Array> {
    square(a, "eigvalsh")?;
    float_type("eigvalsh", a.dtype())?;
    only(factor(LinalgOp::Eigh { upper, vectors: false }, vec![a.clone()])?)
}

/// The Moore-Penrose pseudo-inverse `[..., n, m]`, from the SVD; singular
/// values up to `max(m, n) * eps * max(S)` count as zero.
pub fn pinv(a: &Array) -> Result<Array> {
    let (m, n) = matrices(a, "pinv")?;
    let dtype = float_type("pinv", a.dtype())?;
    let k = m.min(n);
    let batch = &a.shape()[..a.ndim() - 2];
    if k == 0 {
        return zeros(&[batch, &[n, m]].concat(), dtype);
    }
    let f = svd(a, true)?;
    let (u, s, vt) = (&f[0], &f[1], &f[2]);
    let nd = a.ndim();
    let mut cols = vec![SliceArg::ALL; nd];
    cols[nd - 1] = SliceArg::range(0, k as isize);
    let mut rows = vec![SliceArg::ALL; nd];
    rows[nd - 2] = SliceArg::range(0, k as isize);
    let uk = slice(u, &cols)?;
    let vk = swapaxes(&slice(vt, &rows)?, -1, -2)?;
    let eps = if dtype == Dtype::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let cutoff = multiply(&max(s, -1isize, true)?, &c(m.max(n) as f64 * eps, dtype)?)?;
    let s_inv = where_(&greater(s, &cutoff)?, &reciprocal(s)?, &c(0.0, dtype)?)?;
    matmul(&multiply(&vk, &expand_dims(&s_inv, -2isize)?)?, &swapaxes(&uk, -1, -2)?)
}

/// The packed partial-pivoting LU (`[LU, pivots, rows]`, see
/// [`LinalgOp::Lu`]).
fn lu_parts(a: &Array, what: &str) -> Result<Vec<Array>> {
    matrices(a, what)?;
    float_type(what, a.dtype())?;
    factor(LinalgOp::Lu, vec![a.clone()])
}

/// The LU factorization with partial pivoting `(P, L, U)`: `a = L[P] @ U`
/// with `P` the row indices (`uint32`), `L [..., m, k]` unit lower
/// triangular, `U [..., k, n]` upper triangular. Singular matrices factor
/// too.
pub fn lu(a: &Array) -> Result<(Array, Array, Array)> {
    let (m, n) = matrices(a, "lu")?;
    let parts = lu_parts(a, "lu")?;
    let (packed, rows) = (&parts[0], &parts[2]);
    let k = m.min(n) as isize;
    let nd = a.ndim();
    let mut cols = vec![SliceArg::ALL; nd];
    cols[nd - 1] = SliceArg::range(0, k);
    let mut top = vec![SliceArg::ALL; nd];
    top[nd - 2] = SliceArg::range(0, k);
    let l = add(&tril(&slice(packed, &cols)?, -1)?, &eye(m, k as usize, 0, a.dtype())?)?;
    let u = triu(&slice(packed, &top)?, 0)?;
    Ok((astype(rows, Dtype::U32)?, l, u))
}

/// LAPACK's compact LU `(LU, pivots)`: `L` below the diagonal (unit
/// diagonal implied), `U` on and above it; row `i` was swapped with row
/// `pivots[i]` (`uint32`), in order.
pub fn lu_factor(a: &Array) -> Result<(Array, Array)> {
    let parts = lu_parts(a, "lu_factor")?;
    Ok((parts[0].clone(), astype(&parts[1], Dtype::U32)?))
}

/// `(U's diagonal, the permutation's sign)` of the LU of square `a`
/// (integers computed as float32).
fn lu_diag_sign(a: &Array, what: &str) -> Result<(Array, Array)> {
    let n = square(a, what)?;
    let x = astype(a, a.dtype().at_least_float())?;
    let parts = lu_parts(&x, what)?;
    let d = diagonal(&parts[0], 0, -2, -1)?;
    let swaps = sum(&astype(&not_equal(&parts[1], &super::arange(0.0, n as f64, 1.0, x.dtype())?)?, x.dtype())?, -1isize, false)?;
    // (-1)^swaps = 1 - 2 (swaps mod 2).
    let parity = remainder(&swaps, &c(2.0, x.dtype())?)?;
    let sign = subtract(&c(1.0, x.dtype())?, &multiply(&parity, &c(2.0, x.dtype())?)?)?;
    Ok((d, sign))
}

/// The determinant of each square matrix (from the LU factorization).
pub fn det(a: &Array) -> Result<Array> {
    let (d, s) = lu_diag_sign(a, "det")?;
    multiply(&prod(&d, -1isize, false)?, &s)
}

/// `(sign, log|det|)` of each square matrix; a singular one gives
/// `(0, -inf)`.
pub fn slogdet(a: &Array) -> Result<(Array, Array)> {
    let (d, s) = lu_diag_sign(a, "slogdet")?;
    let sign = multiply(&prod(&sign(&d)?, -1isize, false)?, &s)?;
    Ok((sign, sum(&log(&abs(&d)?)?, -1isize, false)?))
}

/// The cross product of 3-vectors (2-vectors are padded with a zero z, as
/// MLX) along `axis`, broadcasting the other axes.
pub fn cross(a: &Array, b: &Array, axis: isize) -> Result<Array> {
    let ends = |x: &Array| -> Result<Array> {
        let ax = normalize_axis(axis, x.ndim())?;
        let d = x.shape()[ax];
        if d != 2 && d != 3 {
            bail!(Shape, "linalg::cross: the vectors along axis {axis} must have 2 or 3 components, got shape {:?}", x.shape());
        }
        let x = moveaxis(x, ax as isize, -1)?;
        if d == 2 {
            let mut widths = vec![(0, 0); x.ndim()];
            widths[x.ndim() - 1] = (0, 1);
            pad(&x, &widths, PadMode::Constant(0.0))
        } else {
            Ok(x)
        }
    };
    let (x, y) = (ends(a)?, ends(b)?);
    let comp = |v: &Array, i: isize| -> Result<Array> {
        let mut args = vec![SliceArg::ALL; v.ndim()];
        args[v.ndim() - 1] = SliceArg::range(i, i + 1);
        slice(v, &args)
    };
    let term = |i: isize, j: isize| -> Result<Array> {
        subtract(&multiply(&comp(&x, i)?, &comp(&y, j)?)?, &multiply(&comp(&x, j)?, &comp(&y, i)?)?)
    };
    let out = concatenate(&[term(1, 2)?, term(2, 0)?, term(0, 1)?], -1isize)?;
    let ax = normalize_axis(axis, out.ndim())?;
    moveaxis(&out, -1, ax as isize)
}

/// The `ord` of [`norm`]: a number (`inf`, `-inf`, `0`, `1`, `2`, ...),
/// Frobenius or nuclear.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormOrd {
    P(f64),
    Fro,
    Nuc,
}

/// Vector norms over one axis and matrix norms over two, as NumPy's (and
/// MLX's) `norm`. Without `axis`: the 2-norm of the flattened array when
/// `ord` is `None`, else the vector or matrix norm of a 1-D or 2-D array.
/// Integer inputs compute in float32. complex64 gives float32: the norms
/// of the moduli `|z|` (every norm but the singular-value ones, 2, -2 and
/// `nuc` over two axes, which are an error for complex input).
pub fn norm(a: &Array, ord: Option<NormOrd>, axis: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let mut x = astype(a, a.dtype().at_least_float())?;
    if x.dtype().is_complex() {
        let two_axes = axis.map_or(ord.is_some() && x.ndim() == 2, |ax| ax.len() == 2);
        let singular = matches!(ord, Some(NormOrd::Nuc)) || matches!(ord, Some(NormOrd::P(p)) if p.abs() == 2.0);
        if two_axes && singular {
            bail!(Dtype, "linalg::norm: the {ord:?} matrix norm of complex64 needs singular values of complex matrices, which weft does not compute");
        }
        x = abs(&x)?;
    }
    let axes: Vec<usize> = match axis {
        None if ord.is_none() => return sqrt(&sum(&multiply(&x, &x)?, crate::Axes::All, keepdims)?),
        None => match x.ndim() {
            1 => vec![0],
            2 => vec![0, 1],
            d => bail!(Shape, "linalg::norm: with ord and no axis the array must be 1-D or 2-D, got {d} dimensions"),
        },
        Some(ax) => ax.iter().map(|&i| normalize_axis(i, x.ndim())).collect::<Result<_>>()?,
    };
    match axes[..] {
        [ax] => vector_norm(&x, ord, ax, keepdims),
        [r, c] if r != c => matrix_norm(&x, ord, r, c, keepdims),
        [_, _] => bail!(InvalidArgument, "linalg::norm: the two axes must differ, got {axes:?}"),
        _ => bail!(InvalidArgument, "linalg::norm: takes one axis (vector norm) or two (matrix norm), got {}", axes.len()),
    }
}

fn vector_norm(x: &Array, ord: Option<NormOrd>, ax: usize, keepdims: bool) -> Result<Array> {
    let axis = [ax as isize];
    let dt = x.dtype();
    match ord {
        None => sqrt(&sum(&multiply(x, x)?, &axis[..], keepdims)?),
        Some(NormOrd::P(p)) if p == f64::INFINITY => max(&abs(x)?, &axis[..], keepdims),
        Some(NormOrd::P(p)) if p == f64::NEG_INFINITY => min(&abs(x)?, &axis[..], keepdims),
        Some(NormOrd::P(p)) if p == 0.0 => sum(&astype(&not_equal(x, &c(0.0, dt)?)?, dt)?, &axis[..], keepdims),
        Some(NormOrd::P(p)) if p == 1.0 => sum(&abs(x)?, &axis[..], keepdims),
        Some(NormOrd::P(p)) if p == 2.0 => sqrt(&sum(&multiply(x, x)?, &axis[..], keepdims)?),
        Some(NormOrd::P(p)) => {
            let s = sum(&power(&abs(x)?, &c(p, dt)?)?, &axis[..], keepdims)?;
            power(&s, &c(1.0 / p, dt)?)
        }
        Some(o) => bail!(InvalidArgument, "linalg::norm: {o:?} is a matrix norm; it needs two axes"),
    }
}

fn matrix_norm(x: &Array, ord: Option<NormOrd>, r: usize, c_: usize, keepdims: bool) -> Result<Array> {
    let both = [r as isize, c_ as isize];
    let done = |y: Array| -> Result<Array> { if keepdims { Ok(y) } else { squeeze(&y, &both[..]) } };
    // Max/min over `outer` of the column (row) sums over `inner`.
    let sums = |inner: usize, outer: usize, largest: bool| -> Result<Array> {
        let s = sum(&abs(x)?, &[inner as isize][..], true)?;
        done(if largest { max(&s, &[outer as isize][..], true)? } else { min(&s, &[outer as isize][..], true)? })
    };
    // A reduction of the singular values of the matrices spanned by (r, c).
    let singular = |reduce: fn(&Array) -> Result<Array>| -> Result<Array> {
        let s = only(svd(&axes_to_end(x, &[r, c_])?, false)?)?;
        let y = reduce(&s)?;
        if !keepdims {
            return Ok(y);
        }
        let (lo, hi) = (r.min(c_), r.max(c_));
        expand_dims(&expand_dims(&y, lo as isize)?, hi as isize)
    };
    match ord {
        None | Some(NormOrd::Fro) => sqrt(&sum(&multiply(x, x)?, &both[..], keepdims)?),
        Some(NormOrd::Nuc) => singular(|s| sum(s, -1isize, false)),
        Some(NormOrd::P(p)) if p == 2.0 => singular(|s| max(s, -1isize, false)),
        Some(NormOrd::P(p)) if p == -2.0 => singular(|s| min(s, -1isize, false)),
        Some(NormOrd::P(p)) if p == 1.0 => sums(r, c_, true),
        Some(NormOrd::P(p)) if p == -1.0 => sums(r, c_, false),
        Some(NormOrd::P(p)) if p == f64::INFINITY => sums(c_, r, true),
        Some(NormOrd::P(p)) if p == f64::NEG_INFINITY => sums(c_, r, false),
        Some(NormOrd::P(p)) => bail!(InvalidArgument, "linalg::norm: invalid order {p} for matrix norms"),
    }
}
