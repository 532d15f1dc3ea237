//! `weft.core.array`: a lazy array, usable (built on, evaluated, read) from
//! any Python thread.

use crate::args::{operands, over, varargs_ints, Axes};
use crate::convert::{item, to_array, to_numpy, tolist};
use crate::device::{on_stream, StreamOrDevice};
use crate::dtype::PyDtype;
use crate::errors::{eval_error, OpResult};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::sync::RwLock;
use weft::{ops, Array, Dtype};

type Stream = Option<StreamOrDevice>;

/// The class is `frozen` (shared freely between threads); what it refers
/// to is behind a lock because `a[key] = value` (and the in-place operators)
/// make the same Python object refer to a new graph node, as in MLX.
#[pyclass(name = "array", module = "weft.core", frozen, weakref)]
pub struct PyArray {
    inner: RwLock<Array>,
}

impl From<Array> for PyArray {
    fn from(inner: Array) -> PyArray {
        PyArray { inner: RwLock::new(inner) }
    }
}

impl PyArray {
    /// The array this object refers to now (a cheap handle clone).
    pub fn array(&self) -> Array {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Makes this object refer to `f(current array)`, atomically: two
    /// threads updating one object each see the other's update.
    pub fn update(&self, f: impl FnOnce(&Array) -> PyResult<Array>) -> PyResult<()> {
        let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let new = f(&guard)?;
        *guard = new;
        Ok(())
    }
}

/// `f(self, other)` for a binary operator; `NotImplemented` when `other`
/// cannot be an operand, so Python can try the reflected operator.
fn binop(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    f: fn(&Array, &Array) -> weft::Result<Array>,
) -> PyResult<Py<PyAny>> {
    let py = a.py();
    reject_sequences(a, b)?;
    let (x, y) = match operands(a, b) {
        Ok(xy) => xy,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => return Ok(py.NotImplemented()),
        Err(e) => return Err(e),
    };
    Ok(PyArray::from(f(&x, &y).py()?).into_pyobject(py)?.into_any().unbind())
}

/// As in MLX, arithmetic with a list, tuple or str is a `ValueError`
/// (build an array from the list first).
fn reject_sequences(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<()> {
    for x in [a, b] {
        if x.is_instance_of::<PyList>() || x.is_instance_of::<PyTuple>() || x.is_instance_of::<PyString>() {
            return Err(PyValueError::new_err(format!(
                "cannot combine an array with an object of type {} (make an array of it first)",
                x.get_type().name()?
            )));
        }
    }
    Ok(())
}

/// `a op= b`: `a` now refers to `f(a, b)`. `b` is converted before the
/// update (converting may read other arrays, this one included).
fn inplace(a: &Bound<'_, PyArray>, b: &Bound<'_, PyAny>, f: fn(&Array, &Array) -> weft::Result<Array>) -> PyResult<()> {
    reject_sequences(a.as_any(), b)?;
    let (_, y) = operands(a.as_any(), b)?;
    a.get().update(|cur| f(cur, &y).py())
}

#[pymethods]
impl PyArray {
    fn __add__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::add)
    }
    fn __radd__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::add)
    }
    fn __sub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::subtract)
    }
    fn __rsub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::subtract)
    }
    fn __mul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::multiply)
    }
    fn __rmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::multiply)
    }
    fn __truediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::divide)
    }
    fn __rtruediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::divide)
    }
    fn __pow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, _modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::power)
    }
    fn __rpow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, _modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::power)
    }
    fn __matmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::matmul)
    }
    fn __rmatmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::matmul)
    }

    // In-place operators, as in MLX: the object (and every name bound to
    // it) now refers to the result; arrays built from it before keep the
    // old values. The result's dtype is that of `a op b`.
    fn __iadd__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::add)
    }
    fn __isub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::subtract)
    }
    fn __imul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::multiply)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        // True division of integers makes floats: in place, that would change
        // the array's type (MLX refuses it too).
        if !slf.get().array().dtype().is_inexact() {
            return Err(pyo3::exceptions::PyValueError::new_err("in-place division of an integer array: its result is float (use a / b)"));
        }
        inplace(slf, other, ops::divide)
    }
    fn __ipow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, _modulo: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::power)
    }
    fn __imatmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::matmul)
    }
    fn __floordiv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::floor_divide)
    }
    fn __rfloordiv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::floor_divide)
    }
    fn __mod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::remainder)
    }
    fn __rmod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::remainder)
    }
    fn __ifloordiv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::floor_divide)
    }
    fn __imod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::remainder)
    }
    // `&`, `|`, `^`, `~`, `<<`, `>>`: bitwise on integers, logical on bool.
    fn __and__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::bitwise_and)
    }
    fn __rand__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::bitwise_and)
    }
    fn __iand__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::bitwise_and)
    }
    fn __or__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::bitwise_or)
    }
    fn __ror__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::bitwise_or)
    }
    fn __ior__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::bitwise_or)
    }
    fn __xor__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::bitwise_xor)
    }
    fn __rxor__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::bitwise_xor)
    }
    fn __ixor__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::bitwise_xor)
    }
    fn __lshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::left_shift)
    }
    fn __rlshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::left_shift)
    }
    fn __ilshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::left_shift)
    }
    fn __rshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, ops::right_shift)
    }
    fn __rrshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), ops::right_shift)
    }
    fn __irshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, other, ops::right_shift)
    }
    fn __invert__(&self) -> PyResult<PyArray> {
        ops::bitwise_invert(&self.array()).py().map(PyArray::from)
    }
    fn __pos__(&self) -> PyArray {
        PyArray::from(self.array())
    }
    fn __copy__(&self) -> PyArray {
        PyArray::from(self.array())
    }
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyArray {
        // Arrays are values: a new handle to the same (immutable) data is a
        // deep copy; assigning into either leaves the other alone.
        PyArray::from(self.array())
    }

    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn all(slf: &Bound<'_, Self>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        crate::math::all(slf.as_any(), axis, keepdims, stream)
    }
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn any(slf: &Bound<'_, Self>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        crate::math::any(slf.as_any(), axis, keepdims, stream)
    }
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0, *, stream = None))]
    fn var(slf: &Bound<'_, Self>, axis: Option<Axes>, keepdims: bool, ddof: isize, stream: Stream) -> PyResult<PyArray> {
        crate::math::var(slf.as_any(), axis, keepdims, ddof, stream)
    }
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0, *, stream = None))]
    fn std(slf: &Bound<'_, Self>, axis: Option<Axes>, keepdims: bool, ddof: isize, stream: Stream) -> PyResult<PyArray> {
        crate::math::std_dev(slf.as_any(), axis, keepdims, ddof, stream)
    }
    #[pyo3(signature = (decimals = 0, *, stream = None))]
    fn round(slf: &Bound<'_, Self>, decimals: i32, stream: Stream) -> PyResult<PyArray> {
        crate::math::round(slf.as_any(), decimals, stream)
    }
    #[pyo3(signature = (*, stream = None))]
    fn log1p(slf: &Bound<'_, Self>, stream: Stream) -> PyResult<PyArray> {
        crate::ops::log1p(slf.as_any(), stream)
    }
    #[pyo3(signature = (*, stream = None))]
    fn log2(slf: &Bound<'_, Self>, stream: Stream) -> PyResult<PyArray> {
        crate::ops::log2(slf.as_any(), stream)
    }
    #[pyo3(signature = (*, stream = None))]
    fn log10(slf: &Bound<'_, Self>, stream: Stream) -> PyResult<PyArray> {
        crate::ops::log10(slf.as_any(), stream)
    }
    #[pyo3(signature = (*, stream = None))]
    fn reciprocal(slf: &Bound<'_, Self>, stream: Stream) -> PyResult<PyArray> {
        crate::math::reciprocal(slf.as_any(), stream)
    }
    #[pyo3(signature = (source, destination, *, stream = None))]
    fn moveaxis(slf: &Bound<'_, Self>, source: isize, destination: isize, stream: Stream) -> PyResult<PyArray> {
        crate::math::moveaxis(slf.as_any(), source, destination, stream)
    }
    #[pyo3(signature = (indices_or_sections, axis = 0, *, stream = None))]
    fn split(slf: &Bound<'_, Self>, indices_or_sections: &Bound<'_, PyAny>, axis: isize, stream: Stream) -> PyResult<Vec<PyArray>> {
        crate::math::split(slf.as_any(), indices_or_sections, axis, stream)
    }
    /// The array with its last two axes swapped.
    #[getter(mT)]
    fn m_t(&self) -> PyResult<PyArray> {
        let a = self.array();
        if a.ndim() < 2 {
            return Err(PyValueError::new_err(format!("mT needs at least 2 dimensions, got shape {:?}", a.shape())));
        }
        ops::swapaxes(&a, -2, -1).py().map(PyArray::from)
    }

    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn sum(&self, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::sum(&self.array(), over(axis), keepdims).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn prod(&self, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::prod(&self.array(), over(axis), keepdims).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn mean(&self, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::mean(&self.array(), over(axis), keepdims).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn max(&self, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::max(&self.array(), over(axis), keepdims).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn min(&self, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::min(&self.array(), over(axis), keepdims).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn logsumexp(&self, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::logsumexp(&self.array(), over(axis), keepdims).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
    fn cumsum(&self, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::cumsum(&self.array(), axis, reverse, inclusive).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
    fn cumprod(&self, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::cumprod(&self.array(), axis, reverse, inclusive).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
    fn cummax(&self, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::cummax(&self.array(), axis, reverse, inclusive).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
    fn cummin(&self, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::cummin(&self.array(), axis, reverse, inclusive).py().map(PyArray::from))
    }
    #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
    fn logcumsumexp(&self, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::logcumsumexp(&self.array(), axis, reverse, inclusive).py().map(PyArray::from))
    }
    #[pyo3(signature = (k = 0, *, stream = None))]
    fn diag(&self, k: isize, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::diag(&self.array(), k).py().map(PyArray::from))
    }
    #[pyo3(signature = (offset = 0, axis1 = 0, axis2 = 1, stream = None))]
    fn diagonal(&self, offset: isize, axis1: isize, axis2: isize, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::diagonal(&self.array(), offset, axis1, axis2).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn abs(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::abs(&self.array()).py().map(PyArray::from))
    }
    /// The complex conjugate (a real array is its own).
    #[pyo3(signature = (*, stream = None))]
    fn conj(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::conjugate(&self.array()).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn exp(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::exp(&self.array()).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn log(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::log(&self.array()).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn sqrt(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::sqrt(&self.array()).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn rsqrt(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::rsqrt(&self.array()).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn sin(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::sin(&self.array()).py().map(PyArray::from))
    }
    #[pyo3(signature = (*, stream = None))]
    fn cos(&self, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::cos(&self.array()).py().map(PyArray::from))
    }

    /// `array(val, dtype=None)`: from a Python scalar, a nested list or
    /// tuple, a NumPy array or another array.
    #[new]
    #[pyo3(signature = (val, dtype = None))]
    fn new(val: &Bound<'_, PyAny>, dtype: Option<PyDtype>) -> PyResult<PyArray> {
        to_array(val, dtype.map(|d| d.0)).map(PyArray::from)
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.array().shape())
    }

    #[getter]
    fn dtype(&self) -> PyDtype {
        PyDtype(self.array().dtype())
    }

    /// The real part (float32 for complex64; a real array itself).
    #[getter]
    fn real(&self) -> PyResult<PyArray> {
        ops::real(&self.array()).py().map(PyArray::from)
    }

    /// The imaginary part (float32 for complex64; zeros for a real array).
    #[getter]
    fn imag(&self) -> PyResult<PyArray> {
        ops::imag(&self.array()).py().map(PyArray::from)
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.array().ndim()
    }

    #[getter]
    fn size(&self) -> usize {
        self.array().size()
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.array().dtype().size()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.array().nbytes()
    }

    /// The transpose (axes reversed).
    #[getter(T)]
    fn t(&self) -> PyResult<PyArray> {
        ops::transpose(&self.array(), &[]).py().map(PyArray::from)
    }

    /// The one element as a Python scalar (evaluates).
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        item(py, &self.array())
    }

    /// Nested lists of Python scalars (evaluates).
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        tolist(py, &self.array())
    }

    #[pyo3(signature = (dtype, stream = None))]
    fn astype(&self, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::astype(&self.array(), dtype.0).py().map(PyArray::from))
    }

    /// `a.reshape(2, 3)` or `a.reshape((2, 3))`.
    #[pyo3(signature = (*shape, stream = None))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>, stream: Stream) -> PyResult<PyArray> {
        let shape = varargs_ints(shape)?;
        on_stream(&stream, || ops::reshape(&self.array(), &shape).py().map(PyArray::from))
    }

    /// `a.transpose()`, `a.transpose(1, 0)` or `a.transpose((1, 0))`.
    #[pyo3(signature = (*axes, stream = None))]
    fn transpose(&self, axes: &Bound<'_, PyTuple>, stream: Stream) -> PyResult<PyArray> {
        let axes = varargs_ints(axes)?;
        on_stream(&stream, || ops::transpose(&self.array(), &axes).py().map(PyArray::from))
    }

    #[pyo3(signature = (axis1, axis2, *, stream = None))]
    fn swapaxes(&self, axis1: isize, axis2: isize, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::swapaxes(&self.array(), axis1, axis2).py().map(PyArray::from))
    }

    #[pyo3(signature = (axis = None, *, stream = None))]
    fn squeeze(&self, axis: Option<Axes>, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::squeeze(&self.array(), over(axis)).py().map(PyArray::from))
    }

    #[pyo3(signature = (start_axis = 0, end_axis = -1, *, stream = None))]
    fn flatten(&self, start_axis: isize, end_axis: isize, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::flatten(&self.array(), start_axis, end_axis).py().map(PyArray::from))
    }

    #[pyo3(signature = (axis, *, stream = None))]
    fn expand_dims(&self, axis: Axes, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::expand_dims(&self.array(), axis.to_vec()).py().map(PyArray::from))
    }

    #[pyo3(signature = (*, stream = None))]
    fn square(&self, stream: Stream) -> PyResult<PyArray> {
        let a = self.array();
        on_stream(&stream, || ops::multiply(&a, &a).py().map(PyArray::from))
    }

    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn argmax(&self, axis: Option<isize>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::argmax(&self.array(), axis, keepdims).py().map(PyArray::from))
    }

    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn argmin(&self, axis: Option<isize>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
        on_stream(&stream, || ops::argmin(&self.array(), axis, keepdims).py().map(PyArray::from))
    }

    fn __neg__(&self) -> PyResult<PyArray> {
        ops::negative(&self.array()).py().map(PyArray::from)
    }

    fn __abs__(&self) -> PyResult<PyArray> {
        ops::abs(&self.array()).py().map(PyArray::from)
    }

    /// Elementwise comparison with an array, a scalar or a NumPy array. As
    /// in MLX, `==` with anything else (a list, a tuple, a str) is `False`
    /// and `!=` is `True`; ordering against them is a `ValueError`.
    fn __richcmp__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let comparable = other.is_instance_of::<PyArray>()
            || crate::convert::Scalar::extract(other)?.is_some()
            || other.hasattr("__array_interface__")?;
        if !comparable {
            return match op {
                CompareOp::Eq => Ok(false.into_pyobject(py)?.to_owned().into_any().unbind()),
                CompareOp::Ne => Ok(true.into_pyobject(py)?.to_owned().into_any().unbind()),
                _ => Err(PyValueError::new_err(format!(
                    "cannot order an array and an object of type {}",
                    other.get_type().name()?
                ))),
            };
        }
        let f = match op {
            CompareOp::Eq => ops::equal,
            CompareOp::Ne => ops::not_equal,
            CompareOp::Lt => ops::less,
            CompareOp::Le => ops::less_equal,
            CompareOp::Gt => ops::greater,
            CompareOp::Ge => ops::greater_equal,
        };
        binop(slf.as_any(), other, f)
    }

    /// Arrays hash by identity, as in MLX (`==` builds an array).
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __len__(&self) -> PyResult<usize> {
        match self.array().shape().first() {
            Some(&n) => Ok(n),
            None => Err(PyTypeError::new_err("len() 0-dimensional array.")),
        }
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<ArrayIterator> {
        let a = slf.get();
        let len = a.__len__()?;
        Ok(ArrayIterator { array: a.array(), next: 0, len })
    }

    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        crate::indexing::get_item(&self.array(), key).map(PyArray::from)
    }

    /// `a[key] = value`: `a` (this object, and every name bound to it) now
    /// refers to a new array with the region replaced; arrays computed from
    /// `a` before keep the old values.
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::indexing::set_item(self, key, value)
    }

    /// `a.at[key].add(v)` (`subtract`, `multiply`, `divide`, `maximum`,
    /// `minimum`, `set`): indexed updates where repeated indices combine.
    #[getter]
    fn at(&self) -> crate::indexing::ArrayAt {
        crate::indexing::ArrayAt { array: self.array() }
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        if self.array().size() != 1 {
            return Err(PyValueError::new_err(
                "The truth value of an array with more than one element is ambiguous.",
            ));
        }
        let b = ops::astype(&self.array(), Dtype::Bool).py()?;
        py.detach(|| b.item::<bool>()).map_err(eval_error)
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        item(py, &self.array())?.extract()
    }

    /// `complex(a)` of a one-element array (complex64 keeps its imaginary part).
    fn __complex__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let v = item(py, &self.array())?;
        Ok(py.get_type::<pyo3::types::PyComplex>().call1((v,))?.unbind())
    }

    fn __int__(&self, py: Python<'_>) -> PyResult<i64> {
        let v = item(py, &self.array())?;
        v.call_method0("__int__")?.extract()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        crate::repr::repr(py, &self.array())
    }

    /// `numpy.array(a)` and `numpy.asarray(a)`: a NumPy copy.
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy; // The result is always a new array.
        let out = to_numpy(py, &self.array())?;
        match dtype {
            Some(d) => out.call_method1("astype", (d,)),
            None => Ok(out),
        }
    }

    /// The buffer protocol: `memoryview(a)`, `numpy.array(a, copy=False)`.
    /// The evaluated buffer itself, with its strides, writable as in MLX
    /// (see `interop.rs`).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut pyo3::ffi::Py_buffer, flags: std::ffi::c_int) -> PyResult<()> {
        // SAFETY: CPython passes its `Py_buffer` to `bf_getbuffer`.
        unsafe { crate::interop::get_buffer(&slf, view, flags) }
    }

    unsafe fn __releasebuffer__(_slf: Bound<'_, Self>, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: `view` was filled by `__getbuffer__` and is released once.
        unsafe { crate::interop::release_buffer(view) }
    }

    /// A DLPack capsule viewing the evaluated buffer (on the CPU).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = (stream, max_version); // CPU data: nothing to order; the unversioned ABI.
        crate::interop::dlpack(py, &self.array(), dl_device, copy)
    }

    /// `(1, 0)`: DLPack's CPU device (exports are host memory).
    fn __dlpack_device__(&self) -> (i32, i32) {
        (1, 0)
    }

    /// The array API namespace: `weft.core`.
    #[pyo3(signature = (*, api_version = None))]
    fn __array_namespace__<'py>(&self, py: Python<'py>, api_version: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyModule>> {
        let _ = api_version;
        py.import("weft.core")
    }

    /// Pickling: the class, a placeholder value, and the state (the bytes,
    /// shape and dtype name) that `__setstate__` restores.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let a = slf.get().array();
        let bytes = crate::convert::native_bytes(py, &a)?;
        let state = (pyo3::types::PyBytes::new(py, &bytes), PyTuple::new(py, a.shape())?, a.dtype().name());
        (slf.get_type(), (0,), state).into_pyobject(py)
    }

    fn __setstate__(&self, state: (Vec<u8>, Vec<usize>, String)) -> PyResult<()> {
        let (bytes, shape, dtype) = state;
        let dtype = Dtype::from_name(&dtype).ok_or_else(|| PyValueError::new_err(format!("unknown dtype {dtype:?} in a pickled array")))?;
        let a = Array::from_bytes(&bytes, dtype, &shape).py()?;
        self.update(|_| Ok(a))
    }

    /// `format(a, spec)`: a 0-d array formats as its element; an empty
    /// spec gives `str(a)`; other arrays refuse a spec, as in MLX.
    fn __format__(&self, py: Python<'_>, spec: &str) -> PyResult<String> {
        let a = self.array();
        if spec.is_empty() {
            return crate::repr::repr(py, &a);
        }
        if a.ndim() != 0 {
            return Err(PyTypeError::new_err("unsupported format string passed to weft.core.array.__format__"));
        }
        let builtins = py.import("builtins")?;
        builtins.call_method1("format", (item(py, &a)?, spec))?.extract()
    }

    /// The stream this array is computed on.
    #[getter]
    fn stream(&self) -> crate::device::PyStream {
        crate::device::PyStream(self.array().stream())
    }
}

/// Iterates over the first axis: `a[0]`, `a[1]`, ...
#[pyclass(module = "weft.core")]
pub struct ArrayIterator {
    array: Array,
    next: usize,
    len: usize,
}

#[pymethods]
impl ArrayIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> PyResult<Option<PyArray>> {
        if self.next >= self.len {
            return Ok(None);
        }
        let i = self.next as isize;
        self.next += 1;
        let row = ops::slice(&self.array, &[ops::SliceArg::range(i, i + 1)]).py()?;
        let shape: Vec<isize> = row.shape()[1..].iter().map(|&d| d as isize).collect();
        ops::reshape(&row, &shape).py().map(|a| Some(PyArray::from(a)))
    }
}
