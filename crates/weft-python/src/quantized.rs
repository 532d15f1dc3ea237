//! Quantization ops (`quantize`, `dequantize`, `quantized_matmul`,
//! `gather_qmm`), as mlx.core's. weft implements MLX's
//! `mode="affine"`; the floating point modes (`mxfp4`, `mxfp8`, `nvfp4`)
//! are refused with a ValueError naming them.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::dtype::PyDtype;
use crate::errors::OpResult;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use weft::{ops, Array};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

fn optional(ob: Option<&Any<'_>>) -> PyResult<Option<Array>> {
    match ob {
        Some(o) if !o.is_none() => Ok(Some(to_array(o, None)?)),
        _ => Ok(None),
    }
}

/// `(group_size, bits)` for `mode`, with MLX's affine defaults (64, 4).
fn params(op: &str, mode: &str, group_size: Option<usize>, bits: Option<u32>, global_scale: Option<&Any<'_>>) -> PyResult<(usize, u32)> {
    match mode {
        "affine" => {}
        "mxfp4" | "mxfp8" | "nvfp4" => {
            return Err(PyValueError::new_err(format!(
                "[{op}] mode \"{mode}\" is not supported by weft; only \"affine\" is"
            )))
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "[{op}] Invalid quantization mode \"{mode}\"; the modes are \"affine\", \"mxfp4\", \"mxfp8\" and \"nvfp4\""
            )))
        }
    }
    if global_scale.is_some_and(|g| !g.is_none()) {
        return Err(PyValueError::new_err(format!("[{op}] global_scale is only used by mode \"nvfp4\"")));
    }
    Ok((group_size.unwrap_or(64), bits.unwrap_or(4)))
}

fn required_biases(op: &str, biases: Option<&Any<'_>>) -> PyResult<Array> {
    optional(biases)?.ok_or_else(|| PyValueError::new_err(format!("[{op}] Biases must be provided for affine quantization.")))
}

/// Quantizes `w` (at least 2-D; its last axis a multiple of `group_size`):
/// `(w_q, scales, biases)`, `w_q` the `uint32`-packed codes.
#[pyfunction]
#[pyo3(signature = (w, /, group_size = None, bits = None, mode = "affine", *, global_scale = None, stream = None))]
fn quantize(
    w: &Any<'_>,
    group_size: Option<usize>,
    bits: Option<u32>,
    mode: &str,
    global_scale: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<(PyArray, PyArray, PyArray)> {
    let (gs, bits) = params("quantize", mode, group_size, bits, global_scale)?;
    on_stream(&stream, || {
        let (q, s, b) = ops::quantize(&to_array(w, None)?, gs, bits).py()?;
        Ok((q.into(), s.into(), b.into()))
    })
}

/// `scales * q + biases` for the packed `w`, in `dtype` (default: the
/// scales' type).
#[pyfunction]
#[pyo3(signature = (w, /, scales, biases = None, group_size = None, bits = None, mode = "affine", global_scale = None, dtype = None, *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn dequantize(
    w: &Any<'_>,
    scales: &Any<'_>,
    biases: Option<&Any<'_>>,
    group_size: Option<usize>,
    bits: Option<u32>,
    mode: &str,
    global_scale: Option<&Any<'_>>,
    dtype: Option<PyDtype>,
    stream: Stream,
) -> PyResult<PyArray> {
    let (gs, bits) = params("dequantize", mode, group_size, bits, global_scale)?;
    on_stream(&stream, || {
        let b = required_biases("dequantize", biases)?;
        ops::dequantize(&to_array(w, None)?, &to_array(scales, None)?, &b, gs, bits, dtype.map(|d| d.0)).py().map(PyArray::from)
    })
}

/// `x @ dequantize(w).T` (`transpose`) or `x @ dequantize(w)`, reading the
/// packed `w` directly.
#[pyfunction]
#[pyo3(signature = (x, w, /, scales, biases = None, transpose = true, group_size = None, bits = None, mode = "affine", *, stream = None))]
#[allow(clippy::too_many_arguments)]
fn quantized_matmul(
    x: &Any<'_>,
    w: &Any<'_>,
    scales: &Any<'_>,
    biases: Option<&Any<'_>>,
    transpose: bool,
    group_size: Option<usize>,
    bits: Option<u32>,
    mode: &str,
    stream: Stream,
) -> PyResult<PyArray> {
    let (gs, bits) = params("quantized_matmul", mode, group_size, bits, None)?;
    on_stream(&stream, || {
        let b = required_biases("quantized_matmul", biases)?;
        let (x, w, s) = (to_array(x, None)?, to_array(w, None)?, to_array(scales, None)?);
        ops::quantized_matmul(&x, &w, &s, &b, transpose, gs, bits).py().map(PyArray::from)
    })
}

/// `quantized_matmul` of matrices of `x` and `w` picked by `lhs_indices`
/// and `rhs_indices` (as `gather_mm`). `sorted_indices` is a hint weft
/// does not need.
#[pyfunction]
#[pyo3(signature = (x, w, /, scales, biases = None, lhs_indices = None, rhs_indices = None, transpose = true, group_size = None, bits = None, mode = "affine", global_scale = None, *, sorted_indices = false, stream = None))]
#[allow(clippy::too_many_arguments)]
fn gather_qmm(
    x: &Any<'_>,
    w: &Any<'_>,
    scales: &Any<'_>,
    biases: Option<&Any<'_>>,
    lhs_indices: Option<&Any<'_>>,
    rhs_indices: Option<&Any<'_>>,
    transpose: bool,
    group_size: Option<usize>,
    bits: Option<u32>,
    mode: &str,
    global_scale: Option<&Any<'_>>,
    sorted_indices: bool,
    stream: Stream,
) -> PyResult<PyArray> {
    let _ = sorted_indices;
    let (gs, bits) = params("gather_qmm", mode, group_size, bits, global_scale)?;
    on_stream(&stream, || {
        let b = required_biases("gather_qmm", biases)?;
        let (x, w, s) = (to_array(x, None)?, to_array(w, None)?, to_array(scales, None)?);
        let (li, ri) = (optional(lhs_indices)?, optional(rhs_indices)?);
        ops::gather_qmm(&x, &w, &s, &b, li.as_ref(), ri.as_ref(), transpose, gs, bits).py().map(PyArray::from)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(quantize, m)?)?;
    m.add_function(wrap_pyfunction!(dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(quantized_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(gather_qmm, m)?)?;
    Ok(())
}
