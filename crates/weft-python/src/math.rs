//! The rest of mlx.core's NumPy-style functions: rounding, inverse trig,
//! logs, logical ops and predicates, `all`/`any`, `var`/`std`, `clip`,
//! `isclose`, triangles, `linspace`, `split`, axis moves, and the constants
//! (`pi`, `e`, `inf`, `nan`, `newaxis`). Each is a thin binding of the op of
//! the same name in `weft::ops`, with mlx.core's signature.

use crate::args::{operands, over, Axes};
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::dtype::PyDtype;
use crate::errors::OpResult;
use crate::ops::{binary, unary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use weft::{ops, Array, Dtype};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

unary! { logical_not, isnan, isinf, isfinite, sign, reciprocal, real, imag, conjugate }

binary! { logical_and, logical_or, logaddexp }

/// Rounds to `decimals` places (halves to even); integers are unchanged.
#[pyfunction]
#[pyo3(signature = (a, /, decimals = 0, *, stream = None))]
pub fn round(a: &Any<'_>, decimals: i32, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::round(&to_array(a, None)?, decimals).py().map(PyArray::from))
}

/// Whether every element (over `axis`, or all of them) is true.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn all(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::all(&to_array(a, None)?, over(axis), keepdims).py().map(PyArray::from))
}

/// Whether any element (over `axis`, or all of them) is true.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn any(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::any(&to_array(a, None)?, over(axis), keepdims).py().map(PyArray::from))
}

fn ddof_arg(ddof: isize) -> PyResult<usize> {
    usize::try_from(ddof).map_err(|_| PyValueError::new_err(format!("ddof must be non-negative, got {ddof}")))
}

/// Variance over `axis` (all axes when None), dividing by `n - ddof`.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, ddof = 0, *, stream = None))]
pub fn var(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, ddof: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::var(&to_array(a, None)?, over(axis), keepdims, ddof_arg(ddof)?).py().map(PyArray::from))
}

/// Standard deviation over `axis` (all axes when None).
#[pyfunction(name = "std")]
#[pyo3(signature = (a, /, axis = None, keepdims = false, ddof = 0, *, stream = None))]
pub fn std_dev(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, ddof: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::std(&to_array(a, None)?, over(axis), keepdims, ddof_arg(ddof)?).py().map(PyArray::from))
}

/// `a` limited to `[a_min, a_max]`; either bound may be None, not both.
#[pyfunction]
#[pyo3(signature = (a, /, a_min, a_max, *, stream = None))]
pub fn clip(a: &Any<'_>, a_min: Option<&Any<'_>>, a_max: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let x = to_array(a, None)?;
        let bound = |b: Option<&Any<'_>>| -> PyResult<Option<Array>> {
            b.map(|b| operands(a, b).map(|(_, b)| b)).transpose()
        };
        let (lo, hi) = (bound(a_min)?, bound(a_max)?);
        if lo.is_none() && hi.is_none() {
            return Err(PyValueError::new_err("clip: at most one of a_min and a_max may be None"));
        }
        ops::clip(&x, lo.as_ref(), hi.as_ref()).py().map(PyArray::from)
    })
}

/// Elementwise `|a - b| <= atol + rtol * |b|`.
#[pyfunction]
#[pyo3(signature = (a, b, /, rtol = 1e-5, atol = 1e-8, *, equal_nan = false, stream = None))]
pub fn isclose(a: &Any<'_>, b: &Any<'_>, rtol: f64, atol: f64, equal_nan: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (a, b) = operands(a, b)?;
        ops::isclose(&a, &b, rtol, atol, equal_nan).py().map(PyArray::from)
    })
}

/// Whether every element of `a` is close to `b`: a bool scalar array.
#[pyfunction]
#[pyo3(signature = (a, b, /, rtol = 1e-5, atol = 1e-8, *, equal_nan = false, stream = None))]
pub fn allclose(a: &Any<'_>, b: &Any<'_>, rtol: f64, atol: f64, equal_nan: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (a, b) = operands(a, b)?;
        ops::allclose(&a, &b, rtol, atol, equal_nan).py().map(PyArray::from)
    })
}

/// Whether `a` and `b` have one shape and equal elements: a bool scalar array.
#[pyfunction]
#[pyo3(signature = (a, b, /, equal_nan = false, *, stream = None))]
pub fn array_equal(a: &Any<'_>, b: &Any<'_>, equal_nan: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (a, b) = operands(a, b)?;
        ops::array_equal(&a, &b, equal_nan).py().map(PyArray::from)
    })
}

#[pyfunction]
#[pyo3(signature = (a, /, axis1, axis2, *, stream = None))]
pub fn swapaxes(a: &Any<'_>, axis1: isize, axis2: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::swapaxes(&to_array(a, None)?, axis1, axis2).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, /, source, destination, *, stream = None))]
pub fn moveaxis(a: &Any<'_>, source: isize, destination: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::moveaxis(&to_array(a, None)?, source, destination).py().map(PyArray::from))
}

/// `a` reversed along `axis` (along every axis when None).
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
pub fn flip(a: &Any<'_>, axis: Option<Axes>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let mut out = to_array(a, None)?;
        let axes = match axis {
            Some(ax) => ax.to_vec(),
            None => (0..out.ndim() as isize).collect(),
        };
        for ax in axes {
            out = ops::flip(&out, ax).py()?;
        }
        Ok(PyArray::from(out))
    })
}

/// Splits `a` along `axis` into `indices_or_sections` equal pieces (an int,
/// which must divide the axis) or before each of the given indices.
#[pyfunction]
#[pyo3(signature = (a, /, indices_or_sections, axis = 0, *, stream = None))]
pub fn split(a: &Any<'_>, indices_or_sections: &Any<'_>, axis: isize, stream: Stream) -> PyResult<Vec<PyArray>> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        let ax = weft::shape::normalize_axis(axis, a.ndim()).py()?;
        let n = a.shape()[ax];
        let at: Vec<usize> = if let Ok(k) = indices_or_sections.extract::<isize>() {
            if k <= 0 || n % k as usize != 0 {
                return Err(PyValueError::new_err(format!("split: {k} sections do not divide an axis of size {n}")));
            }
            (1..k as usize).map(|i| i * n / k as usize).collect()
        } else {
            let idx: Vec<isize> = indices_or_sections.extract()?;
            idx.iter().map(|&i| if i < 0 { (i + n as isize).max(0) as usize } else { i as usize }).collect()
        };
        Ok(ops::split(&a, &at, ax as isize).py()?.into_iter().map(PyArray::from).collect())
    })
}

#[pyfunction]
#[pyo3(signature = (x, k = 0, *, stream = None))]
pub fn tril(x: &Any<'_>, k: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::tril(&to_array(x, None)?, k).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (x, k = 0, *, stream = None))]
pub fn triu(x: &Any<'_>, k: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::triu(&to_array(x, None)?, k).py().map(PyArray::from))
}

/// A vector's square matrix with it on diagonal `k`, or a matrix's diagonal `k`.
#[pyfunction]
#[pyo3(signature = (a, /, k = 0, *, stream = None))]
pub fn diag(a: &Any<'_>, k: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::diag(&to_array(a, None)?, k).py().map(PyArray::from))
}

/// The diagonal `offset` of the matrices spanned by `axis1` and `axis2` (as the last axis).
#[pyfunction]
#[pyo3(signature = (a, offset = 0, axis1 = 0, axis2 = 1, stream = None))]
pub fn diagonal(a: &Any<'_>, offset: isize, axis1: isize, axis2: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::diagonal(&to_array(a, None)?, offset, axis1, axis2).py().map(PyArray::from))
}

/// `[n, m]` ones on and below diagonal `k`, zeros above.
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = PyDtype(Dtype::F32), *, stream = None))]
pub fn tri(n: isize, m: Option<isize>, k: isize, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
    let m = m.unwrap_or(n);
    if n < 0 || m < 0 {
        return Err(PyValueError::new_err(format!("tri: negative dimensions ({n}, {m})")));
    }
    on_stream(&stream, || ops::tri(n as usize, m as usize, k, dtype.0).py().map(PyArray::from))
}

/// `num` evenly spaced values from `start` to `stop` (included when `endpoint`).
#[pyfunction]
/// `endpoint` is the fourth positional argument, before `dtype` (NumPy's order).
#[pyo3(signature = (start, stop, num = 50, endpoint = true, dtype = PyDtype(Dtype::F32), *, stream = None))]
pub fn linspace(start: f64, stop: f64, num: isize, endpoint: bool, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
    if num < 0 {
        return Err(PyValueError::new_err(format!("linspace: num must be non-negative, got {num}")));
    }
    on_stream(&stream, || ops::linspace(start, stop, num as usize, endpoint, dtype.0).py().map(PyArray::from))
}

/// Each element repeated `repeats` times along `axis` (flattened when None).
#[pyfunction]
#[pyo3(signature = (array, repeats, axis = None, *, stream = None))]
pub fn repeat(array: &Any<'_>, repeats: isize, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    let repeats = usize::try_from(repeats).map_err(|_| PyValueError::new_err(format!("repeat: repeats must be non-negative, got {repeats}")))?;
    on_stream(&stream, || ops::repeat(&to_array(array, None)?, repeats, axis).py().map(PyArray::from))
}

/// `a` repeated `reps` times along each axis.
#[pyfunction]
#[pyo3(signature = (a, reps, /, *, stream = None))]
pub fn tile(a: &Any<'_>, reps: crate::args::Shape, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::tile(&to_array(a, None)?, &reps.dims()?).py().map(PyArray::from))
}

/// `a` padded on each side of each axis: `pad_width` is an int, a
/// `(before, after)` pair for every axis, or one list of such pairs.
#[pyfunction]
#[pyo3(signature = (a, pad_width, mode = "constant", constant_values = 0.0, *, stream = None))]
pub fn pad(a: &Any<'_>, pad_width: &Any<'_>, mode: &str, constant_values: f64, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        let n = a.ndim();
        let bad = || PyValueError::new_err("pad: pad_width must be an int, a (before, after) pair or one pair per axis");
        let widths: Vec<(isize, isize)> = if let Ok(w) = pad_width.extract::<isize>() {
            vec![(w, w); n]
        } else if let Ok((lo, hi)) = pad_width.extract::<(isize, isize)>() {
            vec![(lo, hi); n]
        } else if let Ok(v) = pad_width.extract::<Vec<isize>>() {
            // `(w,)` is `w` on both sides; `[lo, hi]` one pair for every axis.
            match v[..] {
                [w] => vec![(w, w); n],
                [lo, hi] => vec![(lo, hi); n],
                _ => return Err(bad()),
            }
        } else if let Ok(v) = pad_width.extract::<Vec<(isize, isize)>>() {
            match v.len() {
                1 => vec![v[0]; n],
                l if l == n => v,
                _ => return Err(bad()),
            }
        } else if let Ok(v) = pad_width.extract::<Vec<Vec<isize>>>() {
            if v.iter().any(|p| p.len() != 2) || (v.len() != 1 && v.len() != n) {
                return Err(bad());
            }
            let pairs: Vec<(isize, isize)> = v.iter().map(|p| (p[0], p[1])).collect();
            if pairs.len() == 1 { vec![pairs[0]; n] } else { pairs }
        } else {
            return Err(bad());
        };
        if widths.iter().any(|&(lo, hi)| lo < 0 || hi < 0) {
            return Err(PyValueError::new_err("pad: widths must be non-negative"));
        }
        let widths: Vec<(usize, usize)> = widths.iter().map(|&(lo, hi)| (lo as usize, hi as usize)).collect();
        let mode = match mode {
            "constant" => ops::PadMode::Constant(constant_values),
            "edge" => ops::PadMode::Edge,
            "reflect" => ops::PadMode::Reflect,
            "symmetric" => ops::PadMode::Symmetric,
            m => return Err(PyValueError::new_err(format!("pad: mode must be 'constant', 'edge', 'reflect' or 'symmetric', got {m:?}"))),
        };
        ops::pad(&a, &widths, mode).py().map(PyArray::from)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => {$( m.add_function(wrap_pyfunction!($f, m)?)?; )*};
    }
    add!(round, logical_not, logical_and, logical_or, logaddexp, sign, reciprocal);
    add!(isnan, isinf, isfinite, isclose, allclose, array_equal, all, any, var, std_dev, clip);
    add!(swapaxes, moveaxis, flip, split, tril, triu, tri, linspace, repeat, tile, pad);
    add!(diag, diagonal, real, imag, conjugate);
    // mlx.core's other names for the same functions.
    for (alias, name) in [
        ("asin", "arcsin"),
        ("acos", "arccos"),
        ("atan", "arctan"),
        ("asinh", "arcsinh"),
        ("acosh", "arccosh"),
        ("atanh", "arctanh"),
        ("concat", "concatenate"),
        ("permute_dims", "transpose"),
        ("pow", "power"),
        ("empty_like", "zeros_like"),
        ("conj", "conjugate"),
    ] {
        m.add(alias, m.getattr(name)?)?;
    }
    m.add("pi", ::std::f64::consts::PI)?;
    m.add("e", ::std::f64::consts::E)?;
    m.add("euler_gamma", 0.577_215_664_901_532_9_f64)?;
    m.add("inf", f64::INFINITY)?;
    m.add("nan", f64::NAN)?;
    m.add("newaxis", m.py().None())?;
    Ok(())
}
