//! `Linalg`: factorizations, inverses and solves of the trailing matrices,
//! each matrix on the `faer` crate (partial-pivoting LU, Householder QR,
//! SVD, Cholesky, the symmetric eigensolver, triangular solves); a batch of
//! matrices is spread over the worker pool. Results are written in the
//! layout of [`LinalgOp::pieces`] (row-major, one packed row per matrix).
//!
//! Singular inputs: `inv` and `solve` fail on an exactly zero pivot,
//! `tri_inv` and `solve_triangular` on a zero diagonal entry, as MLX (whose
//! LAPACK calls report them); `cholesky` fails on a matrix that is not
//! positive definite (MLX returns a partial factor instead); `lu` factors
//! any matrix, as LAPACK's `getrf`.

use super::rows::contiguous;
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::dtype::Element;
use crate::primitive::{LinalgOp, OutSpec};
use crate::{Dtype, Error, Result};
use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, MatRef, Side};
use rayon::prelude::*;
use std::sync::Mutex;

/// The element types the kernels run in (faer's real fields that weft
/// stores).
trait Real: faer::traits::RealField + CpuElement {}
impl Real for f32 {}
impl Real for f64 {}

pub(crate) fn linalg(op: LinalgOp, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    match out.dtype {
        Dtype::F32 => run::<f32>(op, inputs, out),
        Dtype::F64 => run::<f64>(op, inputs, out),
        d => Err(Error::Dtype(format!("linalg::{}: arrays must have type float32 or float64, got {d}", op.name()))),
    }
}

fn run<T: Real>(op: LinalgOp, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    let shape = &inputs[0].layout.shape;
    let nd = shape.len();
    if nd < 2 {
        return Err(Error::Shape(format!("linalg::{}: needs matrices, got shape {shape:?}", op.name())));
    }
    let (m, n) = (shape[nd - 2], shape[nd - 1]);
    let batch: usize = shape[..nd - 2].iter().product();
    let a = contiguous::<T>(&inputs[0])?;
    let (b, k) = match inputs.get(1) {
        Some(b) => (Some(contiguous::<T>(b)?), *b.layout.shape.last().unwrap_or(&0)),
        None => (None, 0),
    };
    let row = op.row_len(m, n, k);
    let total = batch * row;
    if total != out.shape.iter().product::<usize>() {
        return Err(Error::Kernel(format!("linalg::{}: output shape {:?} does not fit the input {shape:?}", op.name(), out.shape)));
    }
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let one = |(i, y): (usize, &mut [T])| {
        let x = &a[i * m * n..(i + 1) * m * n];
        let rhs = b.as_ref().map(|b| &b[i * n * k..(i + 1) * n * k]);
        if let Err(e) = matrix(op, x, rhs, m, n, k, y) {
            failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        }
    };
    let buffer = CpuBuffer::build(total, |v: &mut Vec<T>| {
        v.resize(total, zero());
        if row == 0 {
            return;
        }
        if batch > 1 {
            v.par_chunks_mut(row).enumerate().for_each(one);
        } else {
            v.chunks_mut(row).enumerate().for_each(one);
        }
    })?;
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(buffer),
    }
}

fn zero<T: Real>() -> T {
    <T as Element>::from_f64(0.0)
}

/// One `m x n` matrix `x` (row-major; `rhs` is `n x k` for the solves)
/// into its packed results `y`.
fn matrix<T: Real>(op: LinalgOp, x: &[T], rhs: Option<&[T]>, m: usize, n: usize, k: usize, y: &mut [T]) -> Result<()> {
    let a = MatRef::from_row_major_slice(x, m, n);
    let p = m.min(n);
    let rhs = || -> Result<MatRef<'_, T>> {
        let r = rhs.ok_or_else(|| Error::Kernel(format!("linalg::{} got no right-hand side", op.name())))?;
        Ok(MatRef::from_row_major_slice(r, n, k))
    };
    match op {
        _ if m == 0 && n == 0 && !matches!(op, LinalgOp::Svd { .. } | LinalgOp::Lu) => {}
        LinalgOp::Inv => {
            let lu = a.partial_piv_lu();
            nonsingular(lu.U(), op)?;
            write(y, lu.inverse().as_ref());
        }
        LinalgOp::Solve => {
            let lu = a.partial_piv_lu();
            nonsingular(lu.U(), op)?;
            write(y, lu.solve(rhs()?).as_ref());
        }
        LinalgOp::TriInv { upper } => {
            let t = triangle(a, upper);
            nonsingular(t.as_ref(), op)?;
            let mut inv = Mat::<T>::identity(n, n);
            if upper {
                t.solve_upper_triangular_in_place(inv.as_mut());
            } else {
                t.solve_lower_triangular_in_place(inv.as_mut());
            }
            write(y, triangle(inv.as_ref(), upper).as_ref());
        }
        LinalgOp::SolveTriangular { upper } => {
            let t = triangle(a, upper);
            nonsingular(t.as_ref(), op)?;
            let mut sol = rhs()?.to_owned();
            if upper {
                t.solve_upper_triangular_in_place(sol.as_mut());
            } else {
                t.solve_lower_triangular_in_place(sol.as_mut());
            }
            write(y, sol.as_ref());
        }
        LinalgOp::Cholesky { upper } => {
            let side = if upper { Side::Upper } else { Side::Lower };
            let llt = a.llt(side).map_err(|_| {
                Error::InvalidArgument("linalg::cholesky: the matrix is not positive definite".into())
            })?;
            let l = triangle(llt.L(), false);
            write(y, if upper { l.as_ref().transpose() } else { l.as_ref() });
        }
        LinalgOp::Qr => {
            if p > 0 {
                let qr = a.qr();
                let (q, r) = y.split_at_mut(m * p);
                write(q, qr.compute_thin_Q().as_ref());
                write(r, triangle(qr.thin_R(), true).as_ref());
            }
        }
        LinalgOp::Svd { compute_uv } => svd(a, compute_uv, y)?,
        LinalgOp::Eigh { upper, vectors } => {
            let side = if upper { Side::Upper } else { Side::Lower };
            let no = |_| Error::InvalidArgument("linalg::eigh: the eigensolver did not converge".into());
            if vectors {
                let e = a.self_adjoint_eigen(side).map_err(no)?;
                let (w, v) = y.split_at_mut(n);
                for (i, wi) in w.iter_mut().enumerate() {
                    *wi = e.S().column_vector()[i];
                }
                write(v, e.U());
            } else {
                y.copy_from_slice(&a.self_adjoint_eigenvalues(side).map_err(no)?);
            }
        }
        LinalgOp::Lu => lu(x, m, n, y),
    }
    Ok(())
}

/// `U [m, m]`, `S`, `Vt [n, n]` (or `S` alone). A matrix with no rows or
/// no columns has no singular values and identity factors, as NumPy.
fn svd<T: Real>(a: MatRef<'_, T>, compute_uv: bool, y: &mut [T]) -> Result<()> {
    let (m, n) = (a.nrows(), a.ncols());
    let p = m.min(n);
    let no = |_| Error::InvalidArgument("linalg::svd: the SVD did not converge (NaN or infinite input?)".into());
    if !compute_uv {
        if p > 0 {
            y.copy_from_slice(&a.singular_values().map_err(no)?);
        }
        return Ok(());
    }
    let (u, rest) = y.split_at_mut(m * m);
    let (s, vt) = rest.split_at_mut(p);
    if p == 0 {
        write(u, Mat::<T>::identity(m, m).as_ref());
        write(vt, Mat::<T>::identity(n, n).as_ref());
        return Ok(());
    }
    let f = a.svd().map_err(no)?;
    write(u, f.U());
    for (i, si) in s.iter_mut().enumerate() {
        *si = f.S().column_vector()[i];
    }
    write(vt, f.V().transpose());
    Ok(())
}

/// Partial-pivoting LU of the row-major `x` into `LU [m, n]`, pivots `[k]`,
/// rows `[m]` (see [`LinalgOp::Lu`]).
fn lu<T: Real>(x: &[T], m: usize, n: usize, y: &mut [T]) {
    let p = m.min(n);
    let (packed, rest) = y.split_at_mut(m * n);
    let (pivots, rows) = rest.split_at_mut(p);
    // fwd[i]: the row of `x` that is row i of `L U`.
    let mut fwd: Vec<usize> = (0..m).collect();
    if p > 0 {
        let f = MatRef::from_row_major_slice(x, m, n).partial_piv_lu();
        let (l, u) = (f.L(), f.U());
        for i in 0..m {
            for j in 0..n {
                packed[i * n + j] = if i > j { l[(i, j)] } else { u[(i, j)] };
            }
        }
        fwd.copy_from_slice(f.P().arrays().0);
        // faer divides by an exactly zero pivot; LAPACK (so MLX) leaves
        // that column unscaled. Redo such matrices the LAPACK way.
        let finite = |v: &[T]| v.iter().all(|&e| Element::to_f64(e).is_finite());
        if finite(x) && !finite(packed) {
            fwd = getf2(x, m, n, packed);
        }
    }
    // The same permutation as successive row swaps (LAPACK's ipiv).
    let mut at: Vec<usize> = (0..m).collect(); // at[r]: where row r is now
    let mut holds: Vec<usize> = (0..m).collect(); // holds[i]: the row at i
    for i in 0..p {
        let (r, q) = (fwd[i], at[fwd[i]]);
        pivots[i] = <T as Element>::from_f64(q as f64);
        let moved = holds[i];
        holds.swap(i, q);
        at[moved] = q;
        at[r] = i;
    }
    for (i, &r) in fwd.iter().enumerate() {
        rows[r] = <T as Element>::from_f64(i as f64);
    }
}

/// LAPACK's unblocked `getf2`: `packed` gets the factors of `x`; returns
/// `fwd` (row i of `L U` is row `fwd[i]` of `x`). A zero pivot column is
/// left as it is.
fn getf2<T: Real>(x: &[T], m: usize, n: usize, packed: &mut [T]) -> Vec<usize> {
    packed.copy_from_slice(x);
    let abs = |v: T| if v < zero() { zero::<T>() - v } else { v };
    let mut fwd: Vec<usize> = (0..m).collect();
    for j in 0..m.min(n) {
        let mut piv = j;
        for i in j + 1..m {
            if abs(packed[i * n + j]) > abs(packed[piv * n + j]) {
                piv = i;
            }
        }
        if piv != j {
            for c in 0..n {
                packed.swap(j * n + c, piv * n + c);
            }
            fwd.swap(j, piv);
        }
        let d = packed[j * n + j];
        if d == zero() {
            continue;
        }
        for i in j + 1..m {
            let l = packed[i * n + j] / d;
            packed[i * n + j] = l;
            for c in j + 1..n {
                let v = packed[i * n + c] - l * packed[j * n + c];
                packed[i * n + c] = v;
            }
        }
    }
    fwd
}

/// An error if the (triangular) `u` has an exact zero on its diagonal.
fn nonsingular<T: Real>(u: MatRef<'_, T>, op: LinalgOp) -> Result<()> {
    if (0..u.nrows().min(u.ncols())).any(|i| u[(i, i)] == zero()) {
        return Err(Error::InvalidArgument(format!("linalg::{}: the matrix is singular", op.name())));
    }
    Ok(())
}

/// The lower (upper) triangle of `a`, zeros elsewhere.
fn triangle<T: Real>(a: MatRef<'_, T>, upper: bool) -> Mat<T> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| if (upper && j >= i) || (!upper && j <= i) { a[(i, j)] } else { zero() })
}

/// `y` = `a`, row-major.
fn write<T: Real>(y: &mut [T], a: MatRef<'_, T>) {
    let cols = a.ncols();
    for i in 0..a.nrows() {
        for j in 0..cols {
            y[i * cols + j] = a[(i, j)];
        }
    }
}
