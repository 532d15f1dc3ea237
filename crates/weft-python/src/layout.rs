//! mlx.core's functions that rearrange arrays or compose other ops:
//! `atleast_1d/2d/3d`, `unflatten`, `unstack`, `broadcast_arrays`,
//! `broadcast_shapes`, `roll`, `meshgrid`, `trace`,
//! `kron`, `diff`, `tensordot`, `inner`, `outer`, `vecdot`, `addmm`,
//! `partition`, `argpartition`, `median`, `searchsorted`,
//! `put_along_axis`, `divmod`, `nan_to_num`, `count_nonzero`, the window
//! functions, and the one- and two-array math the table does not generate
//! (`arctan2`, `logical_xor`, `radians`, `degrees`, `trunc`, `isposinf`,
//! `isneginf`). Each is a thin binding of the `weft::ops` function of that
//! name, with mlx.core's signature.

use crate::args::{operands, over, Axes};
use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::dtype::PyDtype;
use crate::errors::OpResult;
use crate::ops::{binary, unary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use weft::{ops, Array};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

unary! { radians, degrees, trunc, isposinf, isneginf, bitwise_invert }

binary! { arctan2, logical_xor, bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift }

fn arrays(args: &Bound<'_, PyTuple>) -> PyResult<Vec<Array>> {
    args.iter().map(|a| to_array(&a, None)).collect()
}

/// One array for one argument, a list for several (as mlx.core).
fn one_or_list(py: Python<'_>, mut out: Vec<Array>) -> PyResult<Py<PyAny>> {
    if out.len() == 1 {
        return Ok(Py::new(py, PyArray::from(out.remove(0)))?.into_any());
    }
    let items = out.into_iter().map(PyArray::from).collect::<Vec<_>>();
    Ok(PyList::new(py, items)?.into_any().unbind())
}

macro_rules! atleast {
    ($($name:ident $n:literal),*) => {$(
        #[pyfunction]
        #[pyo3(signature = (*arys, stream = None))]
        pub fn $name(py: Python<'_>, arys: &Bound<'_, PyTuple>, stream: Stream) -> PyResult<Py<PyAny>> {
            let out = on_stream(&stream, || arrays(arys)?.iter().map(|a| ops::atleast_nd(a, $n).py()).collect::<PyResult<Vec<_>>>())?;
            one_or_list(py, out)
        }
    )*};
}
atleast! { atleast_1d 1, atleast_2d 2, atleast_3d 3 }

/// `a` with `axis` split into `shape` (one entry may be -1).
#[pyfunction]
#[pyo3(signature = (a, /, axis, shape, *, stream = None))]
pub fn unflatten(a: &Any<'_>, axis: isize, shape: Vec<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::unflatten(&to_array(a, None)?, axis, &shape).py().map(PyArray::from))
}

/// The slices of `x` along `axis`, each without that axis.
#[pyfunction]
#[pyo3(signature = (x, /, *, axis = 0, stream = None))]
pub fn unstack<'py>(py: Python<'py>, x: &Any<'_>, axis: isize, stream: Stream) -> PyResult<Bound<'py, PyTuple>> {
    let parts = on_stream(&stream, || ops::unstack(&to_array(x, None)?, axis).py())?;
    PyTuple::new(py, parts.into_iter().map(PyArray::from))
}

/// An array, or a list/tuple of arrays: the arrays, and whether it was one.
fn array_or_seq(ob: &Bound<'_, PyAny>) -> PyResult<(Vec<Array>, bool)> {
    if let Ok(a) = ob.cast::<PyArray>() {
        return Ok((vec![a.get().array()], true));
    }
    if ob.is_instance_of::<pyo3::types::PyList>() || ob.is_instance_of::<PyTuple>() {
        return Ok((ob.try_iter()?.map(|a| to_array(&a?, None)).collect::<PyResult<_>>()?, false));
    }
    Ok((vec![to_array(ob, None)?], true))
}

/// `inputs` (an array or a list of arrays), unchanged, as arrays whose
/// evaluation first evaluates `dependencies` (an array or a list); one array
/// for one array, else a list.
#[pyfunction]
pub fn depends(py: Python<'_>, inputs: &Bound<'_, PyAny>, dependencies: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (inputs, single) = array_or_seq(inputs)?;
    let (deps, _) = array_or_seq(dependencies)?;
    let mut out = ops::depends(&inputs, &deps).py()?;
    if single {
        return Ok(Py::new(py, PyArray::from(out.remove(0)))?.into_any());
    }
    Ok(pyo3::types::PyList::new(py, out.into_iter().map(PyArray::from))?.into_any().unbind())
}

/// The arrays broadcast to their common shape.
#[pyfunction]
#[pyo3(signature = (*arrays, stream = None))]
pub fn broadcast_arrays(arrays: &Bound<'_, PyTuple>, stream: Stream) -> PyResult<Vec<PyArray>> {
    on_stream(&stream, || Ok(ops::broadcast_arrays(&self::arrays(arrays)?).py()?.into_iter().map(PyArray::from).collect()))
}

/// The shape that arrays of these shapes broadcast to.
#[pyfunction]
#[pyo3(signature = (*shapes))]
pub fn broadcast_shapes(py: Python<'_>, shapes: &Bound<'_, PyTuple>) -> PyResult<Py<PyTuple>> {
    if shapes.is_empty() {
        return Err(PyValueError::new_err("broadcast_shapes: needs at least one shape"));
    }
    let mut out: Vec<usize> = vec![];
    for s in shapes.iter() {
        let s: crate::args::Shape = s.extract()?;
        out = weft::shape::broadcast_shapes(&out, &s.dims()?).py()?;
    }
    Ok(PyTuple::new(py, out)?.unbind())
}

/// An int or a tuple of ints, as `roll` takes its shift and axes.
fn ints(ob: &Any<'_>) -> PyResult<Vec<isize>> {
    if let Ok(i) = ob.extract::<isize>() {
        return Ok(vec![i]);
    }
    ob.extract::<Vec<isize>>()
}

/// `a` shifted by `shift` along `axis` (the flattened array when None),
/// elements pushed off one end coming back at the other.
#[pyfunction]
#[pyo3(signature = (a, shift, axis = None, /, *, stream = None))]
pub fn roll(a: &Any<'_>, shift: &Any<'_>, axis: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    let shift = ints(shift)?;
    let axes = axis.map(ints).transpose()?;
    on_stream(&stream, || ops::roll(&to_array(a, None)?, &shift, axes.as_deref()).py().map(PyArray::from))
}

/// Coordinate arrays from 1-D arrays (`indexing` "xy" or "ij").
#[pyfunction]
#[pyo3(signature = (*arrays, sparse = false, indexing = "xy", stream = None))]
pub fn meshgrid<'py>(arrays: &Bound<'py, PyTuple>, sparse: bool, indexing: &str, stream: Stream) -> PyResult<Bound<'py, PyTuple>> {
    let xy = match indexing {
        "xy" => true,
        "ij" => false,
        other => return Err(PyValueError::new_err(format!("meshgrid: indexing must be 'xy' or 'ij', got {other:?}"))),
    };
    let grids = on_stream(&stream, || ops::meshgrid(&self::arrays(arrays)?, sparse, xy).py())?;
    PyTuple::new(arrays.py(), grids.into_iter().map(PyArray::from))
}

/// The sum of a diagonal, in `dtype` when given.
#[pyfunction]
#[pyo3(signature = (a, /, offset = 0, axis1 = 0, axis2 = 1, dtype = None, *, stream = None))]
pub fn trace(a: &Any<'_>, offset: isize, axis1: isize, axis2: isize, dtype: Option<PyDtype>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let mut a = to_array(a, None)?;
        if let Some(d) = dtype {
            a = ops::astype(&a, d.0).py()?;
        }
        ops::trace(&a, offset, axis1, axis2).py().map(PyArray::from)
    })
}

#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
pub fn kron(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::kron(&to_array(a, None)?, &to_array(b, None)?).py().map(PyArray::from))
}

/// The `n`-th forward difference along `axis`.
#[pyfunction]
#[pyo3(signature = (a, /, n = 1, axis = -1, *, stream = None))]
pub fn diff(a: &Any<'_>, n: isize, axis: isize, stream: Stream) -> PyResult<PyArray> {
    let n = usize::try_from(n).map_err(|_| PyValueError::new_err(format!("diff: n must be non-negative, got {n}")))?;
    on_stream(&stream, || ops::diff(&to_array(a, None)?, n, axis).py().map(PyArray::from))
}

/// Sums products over the last `axes` axes of `a` and the first of `b`
/// (an int), or over the two given lists of axes.
#[pyfunction]
#[pyo3(signature = (a, b, /, axes = None, *, stream = None))]
pub fn tensordot(a: &Any<'_>, b: &Any<'_>, axes: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (a, b) = (to_array(a, None)?, to_array(b, None)?);
        let (ia, ib): (Vec<isize>, Vec<isize>) = match axes {
            None => tail_head(&a, 2)?,
            Some(ax) => match ax.extract::<isize>() {
                Ok(k) => tail_head(&a, k)?,
                Err(_) => {
                    let (x, y): (Any<'_>, Any<'_>) = ax.extract()?;
                    (ints(&x)?, ints(&y)?)
                }
            },
        };
        ops::tensordot(&a, &b, &ia, &ib).py().map(PyArray::from)
    })
}

/// `a`'s last `k` axes paired with `b`'s first `k`.
fn tail_head(a: &Array, k: isize) -> PyResult<(Vec<isize>, Vec<isize>)> {
    if k < 0 || k as usize > a.ndim() {
        return Err(PyValueError::new_err(format!("tensordot: cannot contract {k} axes of a {}-D array", a.ndim())));
    }
    let n = a.ndim() as isize;
    Ok(((n - k..n).collect(), (0..k).collect()))
}

#[pyfunction]
#[pyo3(signature = (a, b, /, *, stream = None))]
pub fn inner(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::inner(&to_array(a, None)?, &to_array(b, None)?).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, b, /, *, stream = None))]
pub fn outer(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::outer(&to_array(a, None)?, &to_array(b, None)?).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, b, /, *, axis = -1, stream = None))]
pub fn vecdot(a: &Any<'_>, b: &Any<'_>, axis: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::vecdot(&to_array(a, None)?, &to_array(b, None)?, axis).py().map(PyArray::from))
}

/// `alpha * (a @ b) + beta * c`.
#[pyfunction]
#[pyo3(signature = (c, a, b, /, alpha = 1.0, beta = 1.0, *, stream = None))]
pub fn addmm(c: &Any<'_>, a: &Any<'_>, b: &Any<'_>, alpha: f64, beta: f64, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (c, a, b) = (to_array(c, None)?, to_array(a, None)?, to_array(b, None)?);
        ops::addmm(&c, &a, &b, alpha, beta).py().map(PyArray::from)
    })
}

#[pyfunction]
#[pyo3(signature = (a, /, kth, axis = Some(-1), *, stream = None))]
pub fn partition(a: &Any<'_>, kth: isize, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::partition(&to_array(a, None)?, kth, axis).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, /, kth, axis = Some(-1), *, stream = None))]
pub fn argpartition(a: &Any<'_>, kth: isize, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::argpartition(&to_array(a, None)?, kth, axis).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn median(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::median(&to_array(a, None)?, over(axis), keepdims).py().map(PyArray::from))
}

/// Where each of `values` would go in the 1-D ascending `sorted_sequence`.
#[pyfunction]
#[pyo3(signature = (sorted_sequence, values, /, side = "left", *, stream = None))]
pub fn searchsorted(sorted_sequence: &Any<'_>, values: &Any<'_>, side: &str, stream: Stream) -> PyResult<PyArray> {
    let right = match side {
        "left" => false,
        "right" => true,
        other => return Err(PyValueError::new_err(format!("searchsorted: side must be 'left' or 'right', got {other:?}"))),
    };
    on_stream(&stream, || ops::searchsorted(&to_array(sorted_sequence, None)?, &to_array(values, None)?, right).py().map(PyArray::from))
}

/// `a` with `values` written where `take_along_axis(a, indices, axis)` reads.
#[pyfunction]
#[pyo3(signature = (a, /, indices, values, axis = None, *, stream = None))]
pub fn put_along_axis(a: &Any<'_>, indices: &Any<'_>, values: &Any<'_>, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        let v = operands(&Bound::new(values.py(), PyArray::from(a.clone()))?.into_any(), values)?.1;
        ops::put_along_axis(&a, &to_array(indices, None)?, &v, axis).py().map(PyArray::from)
    })
}

/// `[a // b, a % b]` (a list, as mlx.core).
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
pub fn divmod(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<Vec<PyArray>> {
    on_stream(&stream, || {
        let (a, b) = operands(a, b)?;
        let (q, r) = ops::divmod(&a, &b).py()?;
        Ok(vec![PyArray::from(q), PyArray::from(r)])
    })
}

#[pyfunction]
#[pyo3(signature = (a, nan = 0.0, posinf = None, neginf = None, *, stream = None))]
pub fn nan_to_num(a: &Any<'_>, nan: f64, posinf: Option<f64>, neginf: Option<f64>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::nan_to_num(&to_array(a, None)?, nan, posinf, neginf).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, /, *, axis = None, keepdims = false, stream = None))]
pub fn count_nonzero(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::count_nonzero(&to_array(a, None)?, over(axis), keepdims).py().map(PyArray::from))
}

/// The Walsh-Hadamard transform along the last axis, times `scale`
/// (default `1/sqrt(n)`).
#[pyfunction]
#[pyo3(signature = (a, scale = None, stream = None))]
pub fn hadamard_transform(a: &Any<'_>, scale: Option<f64>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::hadamard_transform(&to_array(a, None)?, scale).py().map(PyArray::from))
}

/// `a[start:start + size]` along each of `axes` (whole on the others):
/// mlx.core's `slice` with its start indices (ints or an array, read when
/// the call is made) and sizes.
#[pyfunction(name = "slice")]
#[pyo3(signature = (a, start_indices, axes, slice_size, *, stream = None))]
pub fn slice_dynamic(a: &Any<'_>, start_indices: &Any<'_>, axes: Axes, slice_size: Vec<isize>, stream: Stream) -> PyResult<PyArray> {
    let starts = crate::ops::host_ints(start_indices, "slice: start_indices")?;
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        let axes = axes.to_vec();
        if starts.len() != axes.len() || slice_size.len() != axes.len() {
            return Err(PyValueError::new_err(format!(
                "slice: {} start indices and {} sizes for {} axes",
                starts.len(),
                slice_size.len(),
                axes.len()
            )));
        }
        let n = a.ndim();
        let mut args = vec![ops::SliceArg::ALL; n];
        for ((&ax, &s), &len) in axes.iter().zip(&starts).zip(&slice_size) {
            let d = weft::shape::normalize_axis(ax, n).py()?;
            let dim = a.shape()[d] as i64;
            let s = if s < 0 { s + dim } else { s };
            if s < 0 || len < 0 || s + len as i64 > dim {
                return Err(PyValueError::new_err(format!("slice: a slice of {len} at {s} does not fit axis {ax} of size {dim}")));
            }
            args[d] = ops::SliceArg::range(s as isize, s as isize + len);
        }
        ops::slice(&a, &args).py().map(PyArray::from)
    })
}

macro_rules! window {
    ($($name:ident),*) => {$(
        #[pyfunction]
        #[pyo3(signature = (M, *, stream = None))]
        #[allow(non_snake_case)]
        pub fn $name(M: isize, stream: Stream) -> PyResult<PyArray> {
            let m = usize::try_from(M).map_err(|_| PyValueError::new_err(format!("{}: M must be non-negative, got {M}", stringify!($name))))?;
            on_stream(&stream, || ops::$name(m).py().map(PyArray::from))
        }
    )*};
}
window! { hanning, hamming, blackman, bartlett }

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => {$( m.add_function(wrap_pyfunction!($f, m)?)?; )*};
    }
    add!(radians, degrees, trunc, isposinf, isneginf, arctan2, logical_xor);
    add!(bitwise_invert, bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift);
    add!(atleast_1d, atleast_2d, atleast_3d, unflatten, unstack, broadcast_arrays, broadcast_shapes, roll, meshgrid);
    add!(trace, kron, diff, tensordot, inner, outer, vecdot, addmm);
    add!(partition, argpartition, median, searchsorted, put_along_axis, divmod, nan_to_num, count_nonzero);
    add!(hanning, hamming, blackman, bartlett, hadamard_transform, slice_dynamic, depends);
    Ok(())
}
