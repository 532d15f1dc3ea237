//! weft errors as Python exceptions, with mlx.core's choice of type:
//! invalid arguments (shapes, axes, dtypes) raise `ValueError`, failed
//! computations raise `RuntimeError`.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;

/// For errors returned while building a graph (an op's arguments).
pub fn op_error(e: weft::Error) -> PyErr {
    match e {
        weft::Error::Shape(_) | weft::Error::Dtype(_) | weft::Error::InvalidArgument(_) => {
            PyValueError::new_err(e.to_string())
        }
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// For errors returned by evaluation, synchronization or reading an array:
/// the computation failed (a kernel error, out of memory, a failed input).
pub fn eval_error(e: weft::Error) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// `weft::Result<T>` to `PyResult<T>` for graph construction.
pub trait OpResult<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> OpResult<T> for weft::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(op_error)
    }
}
