//! `weft.core.fast`: fused transformer ops, as mlx.core.fast.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::errors::OpResult;
use crate::ops::host_ints;
use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use weft::fast::{self, Mask};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

fn optional(ob: Option<&Any<'_>>) -> PyResult<Option<weft::Array>> {
    match ob {
        Some(o) if !o.is_none() => Ok(Some(to_array(o, None)?)),
        _ => Ok(None),
    }
}

/// `x / sqrt(mean(x**2, -1) + eps) * weight` over the last axis (`weight`
/// may be None).
#[pyfunction]
#[pyo3(signature = (x, /, weight, eps, *, stream = None))]
fn rms_norm(x: &Any<'_>, weight: Option<&Any<'_>>, eps: f32, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let w = optional(weight)?;
        fast::rms_norm(&to_array(x, None)?, w.as_ref(), eps).py().map(PyArray::from)
    })
}

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the last axis
/// (`weight` and `bias` may be None).
#[pyfunction]
#[pyo3(signature = (x, /, weight, bias, eps, *, stream = None))]
fn layer_norm(x: &Any<'_>, weight: Option<&Any<'_>>, bias: Option<&Any<'_>>, eps: f32, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (w, b) = (optional(weight)?, optional(bias)?);
        fast::layer_norm(&to_array(x, None)?, w.as_ref(), b.as_ref(), eps).py().map(PyArray::from)
    })
}

/// Rotary position embedding of the first `dims` features of `a`
/// (`[..., L, D]`), positions starting at `offset`.
#[pyfunction]
#[pyo3(signature = (a, /, dims, *, traditional, base, scale, offset, freqs = None, stream = None))]
#[allow(clippy::too_many_arguments)]
fn rope(
    a: &Any<'_>,
    dims: i64,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: &Any<'_>,
    freqs: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    let dims = usize::try_from(dims).map_err(|_| PyValueError::new_err(format!("rope: dims must be positive and even, got {dims}")))?;
    let freqs = match (base, freqs.filter(|f| !f.is_none())) {
        (Some(_), Some(_)) => return Err(PyValueError::new_err("rope: give base or freqs, not both")),
        (Some(b), None) => fast::RopeFreqs::Base(b),
        (None, Some(f)) => fast::RopeFreqs::Freqs(to_array(f, None)?),
        (None, None) => return Err(PyValueError::new_err("rope: base or freqs is required")),
    };
    // One offset (a Python int or a one-element integer array), or one per
    // example of the leading axis.
    let offset = match offset.cast::<PyArray>() {
        Ok(o) if o.get().array().size() != 1 => fast::RopeOffset::PerBatch(o.get().array()),
        _ => match host_ints(offset, "rope: offset")?[..] {
            [o] => fast::RopeOffset::One(o),
            _ => return Err(PyValueError::new_err("rope: offset must be an integer or an array of integers")),
        },
    };
    on_stream(&stream, || fast::rope_with(&to_array(a, None)?, dims, traditional, &freqs, scale, &offset).py().map(PyArray::from))
}

/// `softmax(scale * q @ k.T + mask) @ v` for q `[B, Hq, L, D]`, k and v
/// `[B, Hk, S, D]` (`Hq` a multiple of `Hk`). `mask`: None, `"causal"`, or
/// an array broadcastable to `[B, Hq, L, S]` (bool keeps `True`, float is
/// added to the scores).
#[pyfunction]
#[pyo3(signature = (q, k, v, *, scale, mask = None, sinks = None, stream = None))]
#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    q: &Any<'_>,
    k: &Any<'_>,
    v: &Any<'_>,
    scale: f32,
    mask: Option<&Any<'_>>,
    sinks: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    if sinks.is_some_and(|s| !s.is_none()) {
        return Err(PyNotImplementedError::new_err("scaled_dot_product_attention: sinks are not supported by weft"));
    }
    on_stream(&stream, || {
        let mask = match mask {
            None => None,
            Some(m) if m.is_none() => None,
            Some(m) if m.is_instance_of::<PyString>() => {
                let s: String = m.extract()?;
                if s != "causal" {
                    return Err(PyValueError::new_err(format!(
                        "scaled_dot_product_attention: the only mask string is \"causal\", got {s:?}"
                    )));
                }
                Some(Mask::Causal)
            }
            Some(m) => Some(Mask::Array(to_array(m, None).map_err(|e| {
                if e.is_instance_of::<PyTypeError>(m.py()) {
                    PyTypeError::new_err("scaled_dot_product_attention: mask must be None, \"causal\" or an array")
                } else {
                    e
                }
            })?)),
        };
        let (q, k, v) = (to_array(q, None)?, to_array(k, None)?, to_array(v, None)?);
        fast::scaled_dot_product_attention(&q, &k, &v, scale, mask.as_ref()).py().map(PyArray::from)
    })
}

/// Registers `weft.core.fast` (importable as `weft.core.fast` too).
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "fast")?;
    m.add("__doc__", "Fused transformer ops, as mlx.core.fast.")?;
    m.add_function(wrap_pyfunction!(rms_norm, &m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, &m)?)?;
    m.add_function(wrap_pyfunction!(rope, &m)?)?;
    m.add_function(wrap_pyfunction!(scaled_dot_product_attention, &m)?)?;
    crate::add_submodule(parent, &m, "fast")
}
