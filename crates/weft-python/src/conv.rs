//! Convolutions (`conv1d/2d/3d`, `conv_general`, `conv_transpose1d/2d/3d`,
//! `convolve`) and `as_strided`, with mlx.core's signatures. Each converts
//! its arguments and calls the op of the same name in `weft::ops`, which
//! owns the checks.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::errors::OpResult;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use weft::ops::{self, ConvPadding};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

/// An int or a sequence of ints (`stride=2` or `stride=(2, 1)`).
pub struct Ints(pub Vec<isize>);

impl<'a, 'py> FromPyObject<'a, 'py> for Ints {
    type Error = PyErr;
    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(i) = ob.extract::<isize>() {
            return Ok(Ints(vec![i]));
        }
        if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
            return Ok(Ints(ob.extract()?));
        }
        Err(PyTypeError::new_err("expected an int or a sequence of ints"))
    }
}

impl Ints {
    /// Exactly `N` values: one int repeats.
    fn fixed<const N: usize>(&self, what: &str) -> PyResult<[isize; N]> {
        match self.0.len() {
            1 => Ok([self.0[0]; N]),
            n if n == N => Ok(std::array::from_fn(|i| self.0[i])),
            _ => Err(PyValueError::new_err(format!("{what} must be an int or a tuple of {N} ints, got {:?}", self.0))),
        }
    }
}

/// `padding=` of `conv_general`: an int, a sequence of ints, or a pair of
/// sequences (low, high).
fn padding_arg(ob: &Any<'_>) -> PyResult<ConvPadding> {
    if let Ok(i) = ob.extract::<isize>() {
        return Ok(ConvPadding::Symmetric(vec![i]));
    }
    if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = ob.extract()?;
        let nested = items.len() == 2 && items.iter().all(|i| i.is_instance_of::<PyList>() || i.is_instance_of::<PyTuple>());
        if nested {
            return Ok(ConvPadding::LoHi(items[0].extract()?, items[1].extract()?));
        }
        return Ok(ConvPadding::Symmetric(ob.extract()?));
    }
    Err(PyTypeError::new_err("padding must be an int, a sequence of ints, or a pair of sequences (low, high)"))
}

/// 1-D convolution of `[N, L, C_in]` with `[C_out, K, C_in / groups]`.
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = 1, padding = 0, dilation = 1, groups = 1, *, stream = None))]
pub fn conv1d(input: &Any<'_>, weight: &Any<'_>, stride: isize, padding: isize, dilation: isize, groups: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        ops::conv1d(&x, &w, stride, padding, dilation, groups).py().map(PyArray::from)
    })
}

/// 2-D convolution of `[N, H, W, C_in]` with `[C_out, KH, KW, C_in / groups]`.
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Ints(vec![1]), padding = Ints(vec![0]), dilation = Ints(vec![1]), groups = 1, *, stream = None))]
pub fn conv2d(input: &Any<'_>, weight: &Any<'_>, stride: Ints, padding: Ints, dilation: Ints, groups: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        let (s, p, d) = (stride.fixed::<2>("stride")?, padding.fixed::<2>("padding")?, dilation.fixed::<2>("dilation")?);
        ops::conv2d(&x, &w, s, p, d, groups).py().map(PyArray::from)
    })
}

/// 3-D convolution of `[N, D, H, W, C_in]` with `[C_out, KD, KH, KW, C_in / groups]`.
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Ints(vec![1]), padding = Ints(vec![0]), dilation = Ints(vec![1]), groups = 1, *, stream = None))]
pub fn conv3d(input: &Any<'_>, weight: &Any<'_>, stride: Ints, padding: Ints, dilation: Ints, groups: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        let (s, p, d) = (stride.fixed::<3>("stride")?, padding.fixed::<3>("padding")?, dilation.fixed::<3>("dilation")?);
        ops::conv3d(&x, &w, s, p, d, groups).py().map(PyArray::from)
    })
}

/// The general convolution: per-axis strides, (low, high) padding, kernel
/// and input dilation, groups, and `flip` (convolution rather than
/// correlation).
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Ints(vec![1]), padding = None, kernel_dilation = Ints(vec![1]), input_dilation = Ints(vec![1]), groups = 1, flip = false, *, stream = None))]
#[allow(clippy::too_many_arguments)]
pub fn conv_general(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: Ints,
    padding: Option<&Any<'_>>,
    kernel_dilation: Ints,
    input_dilation: Ints,
    groups: isize,
    flip: bool,
    stream: Stream,
) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        let pad = padding.map(padding_arg).transpose()?.unwrap_or(ConvPadding::Symmetric(vec![0]));
        ops::conv_general(&x, &w, &stride.0, &pad, &kernel_dilation.0, &input_dilation.0, groups, flip).py().map(PyArray::from)
    })
}

/// 1-D transposed convolution.
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = 1, padding = 0, dilation = 1, output_padding = 0, groups = 1, *, stream = None))]
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose1d(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: isize,
    padding: isize,
    dilation: isize,
    output_padding: isize,
    groups: isize,
    stream: Stream,
) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        ops::conv_transpose1d(&x, &w, stride, padding, dilation, output_padding, groups).py().map(PyArray::from)
    })
}

/// 2-D transposed convolution.
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Ints(vec![1]), padding = Ints(vec![0]), dilation = Ints(vec![1]), output_padding = Ints(vec![0]), groups = 1, *, stream = None))]
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    output_padding: Ints,
    groups: isize,
    stream: Stream,
) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        let (s, p, d) = (stride.fixed::<2>("stride")?, padding.fixed::<2>("padding")?, dilation.fixed::<2>("dilation")?);
        let op = output_padding.fixed::<2>("output_padding")?;
        ops::conv_transpose2d(&x, &w, s, p, d, op, groups).py().map(PyArray::from)
    })
}

/// 3-D transposed convolution.
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Ints(vec![1]), padding = Ints(vec![0]), dilation = Ints(vec![1]), output_padding = Ints(vec![0]), groups = 1, *, stream = None))]
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose3d(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    output_padding: Ints,
    groups: isize,
    stream: Stream,
) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, w) = (to_array(input, None)?, to_array(weight, None)?);
        let (s, p, d) = (stride.fixed::<3>("stride")?, padding.fixed::<3>("padding")?, dilation.fixed::<3>("dilation")?);
        let op = output_padding.fixed::<3>("output_padding")?;
        ops::conv_transpose3d(&x, &w, s, p, d, op, groups).py().map(PyArray::from)
    })
}

/// NumPy's `convolve` of two 1-D arrays (`mode`: "full", "same", "valid").
#[pyfunction]
#[pyo3(signature = (a, v, /, mode = "full", *, stream = None))]
pub fn convolve(a: &Any<'_>, v: &Any<'_>, mode: &str, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::convolve(&to_array(a, None)?, &to_array(v, None)?, mode).py().map(PyArray::from))
}

/// A view of `a`'s elements (row-major) with the given shape, element
/// strides and offset; it may not reach outside `a` (ValueError).
#[pyfunction]
#[pyo3(signature = (a, /, shape = None, strides = None, offset = 0, *, stream = None))]
pub fn as_strided(a: &Any<'_>, shape: Option<Vec<isize>>, strides: Option<Vec<isize>>, offset: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let x = to_array(a, None)?;
        let shape: Vec<usize> = match shape {
            None => x.shape().to_vec(),
            Some(s) => s
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| PyValueError::new_err(format!("as_strided: negative dimension in shape {s:?}"))))
                .collect::<PyResult<_>>()?,
        };
        let strides = match strides {
            Some(s) => s,
            None => weft::shape::contiguous_strides(&shape),
        };
        let offset = usize::try_from(offset).map_err(|_| PyValueError::new_err(format!("as_strided: negative offset {offset}")))?;
        ops::as_strided(&x, &shape, &strides, offset).py().map(PyArray::from)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conv1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv3d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_general, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose3d, m)?)?;
    m.add_function(wrap_pyfunction!(convolve, m)?)?;
    m.add_function(wrap_pyfunction!(as_strided, m)?)?;
    Ok(())
}
