//! Matrix products over picked, masked or segmented operands
//! (`gather_mm`, `block_masked_mm`, `segmented_mm`), as mlx.core's.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::errors::OpResult;
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

/// Matrix products of `a` and `b` with their matrices picked by
/// `lhs_indices` and `rhs_indices` (over the flattened batch axes).
/// `sorted_indices` is a hint weft does not need.
#[pyfunction]
#[pyo3(signature = (a, b, /, lhs_indices = None, rhs_indices = None, *, sorted_indices = false, stream = None))]
fn gather_mm(
    a: &Any<'_>,
    b: &Any<'_>,
    lhs_indices: Option<&Any<'_>>,
    rhs_indices: Option<&Any<'_>>,
    sorted_indices: bool,
    stream: Stream,
) -> PyResult<PyArray> {
    let _ = sorted_indices;
    on_stream(&stream, || {
        let (li, ri) = (optional(lhs_indices)?, optional(rhs_indices)?);
        ops::gather_mm(&to_array(a, None)?, &to_array(b, None)?, li.as_ref(), ri.as_ref()).py().map(PyArray::from)
    })
}

/// `a @ b` with block masks (`block_size` 32 or 64): `mask_lhs` and
/// `mask_rhs` scale blocks of the operands, `mask_out` blocks of the
/// product; bool masks keep or zero.
#[pyfunction]
#[pyo3(signature = (a, b, /, block_size = 64, mask_out = None, mask_lhs = None, mask_rhs = None, *, stream = None))]
fn block_masked_mm(
    a: &Any<'_>,
    b: &Any<'_>,
    block_size: usize,
    mask_out: Option<&Any<'_>>,
    mask_lhs: Option<&Any<'_>>,
    mask_rhs: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (mo, ml, mr) = (optional(mask_out)?, optional(mask_lhs)?, optional(mask_rhs)?);
        let (a, b) = (to_array(a, None)?, to_array(b, None)?);
        ops::block_masked_mm(&a, &b, block_size, mo.as_ref(), ml.as_ref(), mr.as_ref()).py().map(PyArray::from)
    })
}

/// `a[:, s0:s1] @ b[s0:s1, :]` for each pair `(s0, s1)` of `segments`.
#[pyfunction]
#[pyo3(signature = (a, b, /, segments, *, stream = None))]
fn segmented_mm(a: &Any<'_>, b: &Any<'_>, segments: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        ops::segmented_mm(&to_array(a, None)?, &to_array(b, None)?, &to_array(segments, None)?).py().map(PyArray::from)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gather_mm, m)?)?;
    m.add_function(wrap_pyfunction!(block_masked_mm, m)?)?;
    m.add_function(wrap_pyfunction!(segmented_mm, m)?)?;
    Ok(())
}
