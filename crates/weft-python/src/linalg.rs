//! `weft.core.linalg`: mlx.core.linalg's functions (without `eig` and
//! `eigvals`, whose results are complex). They compute on the CPU; on a
//! GPU stream they run on the host.

use crate::args::Axes;
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::errors::OpResult;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use weft::linalg::{self, NormOrd};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

fn arr(a: &Any<'_>) -> PyResult<weft::Array> {
    to_array(a, None)
}

/// `ord=`: None, a number, `"fro"` or `"nuc"`.
fn norm_ord(ord: Option<&Any<'_>>) -> PyResult<Option<NormOrd>> {
    let Some(o) = ord.filter(|o| !o.is_none()) else { return Ok(None) };
    if let Ok(s) = o.extract::<String>() {
        return match s.as_str() {
            "fro" => Ok(Some(NormOrd::Fro)),
            "nuc" => Ok(Some(NormOrd::Nuc)),
            _ => Err(PyValueError::new_err(format!("[linalg::norm] invalid ord {s:?}: use a number, 'fro' or 'nuc'"))),
        };
    }
    match o.extract::<f64>() {
        Ok(p) => Ok(Some(NormOrd::P(p))),
        Err(_) => Err(PyTypeError::new_err("[linalg::norm] ord must be None, a number, 'fro' or 'nuc'")),
    }
}

/// `UPLO=`: "L" (the lower triangle) or "U".
fn upper(uplo: &str, what: &str) -> PyResult<bool> {
    match uplo {
        "L" => Ok(false),
        "U" => Ok(true),
        _ => Err(PyValueError::new_err(format!("[linalg::{what}] UPLO must be 'L' or 'U', got {uplo:?}"))),
    }
}

/// Vector norms (one axis) and matrix norms (two axes), as numpy.linalg.norm.
#[pyfunction]
#[pyo3(signature = (a, /, ord = None, axis = None, keepdims = false, *, stream = None))]
fn norm(a: &Any<'_>, ord: Option<&Any<'_>>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    let ord = norm_ord(ord)?;
    let axis = axis.map(|a| a.to_vec());
    on_stream(&stream, || linalg::norm(&arr(a)?, ord, axis.as_deref(), keepdims).py().map(PyArray::from))
}

/// The inverse of each square matrix.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn inv(a: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::inv(&arr(a)?).py().map(PyArray::from))
}

/// The inverse of the lower (or upper) triangle of each square matrix.
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn tri_inv(a: &Any<'_>, upper: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::tri_inv(&arr(a)?, upper).py().map(PyArray::from))
}

/// The Cholesky factor (lower, or upper when `upper`).
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn cholesky(a: &Any<'_>, upper: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::cholesky(&arr(a)?, upper).py().map(PyArray::from))
}

/// The inverse of a positive definite matrix from its Cholesky factor.
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn cholesky_inv(a: &Any<'_>, upper: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::cholesky_inv(&arr(a)?, upper).py().map(PyArray::from))
}

/// `x` with `a @ x = b`.
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
fn solve(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::solve(&arr(a)?, &arr(b)?).py().map(PyArray::from))
}

/// `solve` for a triangular `a`.
#[pyfunction]
#[pyo3(signature = (a, b, *, upper = false, stream = None))]
fn solve_triangular(a: &Any<'_>, b: &Any<'_>, upper: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::solve_triangular(&arr(a)?, &arr(b)?, upper).py().map(PyArray::from))
}

/// The reduced QR factorization `(Q, R)`.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn qr(a: &Any<'_>, stream: Stream) -> PyResult<(PyArray, PyArray)> {
    on_stream(&stream, || linalg::qr(&arr(a)?).py().map(|(q, r)| (q.into(), r.into())))
}

/// `(U, S, Vt)`, or `S` when not `compute_uv`.
#[pyfunction]
#[pyo3(signature = (a, compute_uv = true, *, stream = None))]
fn svd(py: Python<'_>, a: &Any<'_>, compute_uv: bool, stream: Stream) -> PyResult<Py<PyAny>> {
    let r: Vec<PyArray> = on_stream(&stream, || linalg::svd(&arr(a)?, compute_uv).py())?.into_iter().map(PyArray::from).collect();
    let unexpected = |_| pyo3::exceptions::PyRuntimeError::new_err("[linalg::svd] unexpected number of results");
    if compute_uv {
        let [u, s, vt]: [PyArray; 3] = r.try_into().map_err(unexpected)?;
        (u, s, vt).into_py_any(py)
    } else {
        let [s]: [PyArray; 1] = r.try_into().map_err(unexpected)?;
        s.into_py_any(py)
    }
}

/// Eigenvalues and eigenvectors of symmetric matrices.
#[pyfunction]
#[pyo3(signature = (a, UPLO = "L", *, stream = None))]
#[allow(non_snake_case)]
fn eigh(a: &Any<'_>, UPLO: &str, stream: Stream) -> PyResult<(PyArray, PyArray)> {
    let up = upper(UPLO, "eigh")?;
    on_stream(&stream, || linalg::eigh(&arr(a)?, up).py().map(|(w, v)| (w.into(), v.into())))
}

/// Eigenvalues of symmetric matrices.
#[pyfunction]
#[pyo3(signature = (a, UPLO = "L", *, stream = None))]
#[allow(non_snake_case)]
fn eigvalsh(a: &Any<'_>, UPLO: &str, stream: Stream) -> PyResult<PyArray> {
    let up = upper(UPLO, "eigvalsh")?;
    on_stream(&stream, || linalg::eigvalsh(&arr(a)?, up).py().map(PyArray::from))
}

/// The Moore-Penrose pseudo-inverse.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn pinv(a: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::pinv(&arr(a)?).py().map(PyArray::from))
}

/// `(P, L, U)` with `a = L[P] @ U`.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn lu(a: &Any<'_>, stream: Stream) -> PyResult<(PyArray, PyArray, PyArray)> {
    on_stream(&stream, || linalg::lu(&arr(a)?).py().map(|(p, l, u)| (p.into(), l.into(), u.into())))
}

/// LAPACK's compact LU `(LU, pivots)`.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn lu_factor(a: &Any<'_>, stream: Stream) -> PyResult<(PyArray, PyArray)> {
    on_stream(&stream, || linalg::lu_factor(&arr(a)?).py().map(|(lu, p)| (lu.into(), p.into())))
}

/// The determinant of each square matrix.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn det(a: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::det(&arr(a)?).py().map(PyArray::from))
}

/// `(sign, log|det|)` of each square matrix.
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn slogdet(a: &Any<'_>, stream: Stream) -> PyResult<(PyArray, PyArray)> {
    on_stream(&stream, || linalg::slogdet(&arr(a)?).py().map(|(s, l)| (s.into(), l.into())))
}

/// The cross product of 3-vectors (or 2-vectors) along `axis`.
#[pyfunction]
#[pyo3(signature = (a, b, axis = -1, *, stream = None))]
fn cross(a: &Any<'_>, b: &Any<'_>, axis: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || linalg::cross(&arr(a)?, &arr(b)?, axis).py().map(PyArray::from))
}

/// Registers `weft.core.linalg` (importable as `weft.core.linalg` too).
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "linalg")?;
    m.add("__doc__", "Norms, inverses, solves and factorizations, as mlx.core.linalg (no eig/eigvals yet: no general eigensolver).")?;
    m.add_function(wrap_pyfunction!(norm, &m)?)?;
    m.add_function(wrap_pyfunction!(inv, &m)?)?;
    m.add_function(wrap_pyfunction!(tri_inv, &m)?)?;
    m.add_function(wrap_pyfunction!(cholesky, &m)?)?;
    m.add_function(wrap_pyfunction!(cholesky_inv, &m)?)?;
    m.add_function(wrap_pyfunction!(solve, &m)?)?;
    m.add_function(wrap_pyfunction!(solve_triangular, &m)?)?;
    m.add_function(wrap_pyfunction!(qr, &m)?)?;
    m.add_function(wrap_pyfunction!(svd, &m)?)?;
    m.add_function(wrap_pyfunction!(eigh, &m)?)?;
    m.add_function(wrap_pyfunction!(eigvalsh, &m)?)?;
    m.add_function(wrap_pyfunction!(pinv, &m)?)?;
    m.add_function(wrap_pyfunction!(lu, &m)?)?;
    m.add_function(wrap_pyfunction!(lu_factor, &m)?)?;
    m.add_function(wrap_pyfunction!(det, &m)?)?;
    m.add_function(wrap_pyfunction!(slogdet, &m)?)?;
    m.add_function(wrap_pyfunction!(cross, &m)?)?;
    crate::add_submodule(parent, &m, "linalg")
}
