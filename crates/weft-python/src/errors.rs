//! weft errors as Python exceptions, with mlx.core's choice of type:
//! invalid arguments (shapes, axes, dtypes) raise `ValueError`, failed
//! computations raise `RuntimeError`.

//! Out of memory is `MemoryError` wherever it surfaces (also as the root of
//! a failed input).

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::{PyErr, PyResult};

/// For errors returned while building a graph (an op's arguments).
pub fn op_error(e: weft::Error) -> PyErr {
    match e.root() {
        weft::Error::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        // Naming a device this machine lacks (`set_default_device(gpu)`,
        // `default_stream(gpu)`) is a bad argument: `ValueError`, as MLX.
        weft::Error::Shape(_) | weft::Error::Dtype(_) | weft::Error::InvalidArgument(_) | weft::Error::DeviceUnavailable(_) => {
            PyValueError::new_err(e.to_string())
        }
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// For errors returned by evaluation, synchronization or reading an array:
/// the computation failed (a kernel error, out of memory, a failed input).
pub fn eval_error(e: weft::Error) -> PyErr {
    match e.root() {
        weft::Error::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Runs a binding's body; a Rust panic inside (a weft bug) becomes a
/// `RuntimeError`, never pyo3's `PanicException`, which derives from
/// `BaseException` and escapes `except Exception`. The entry points that run
/// weft code on user input (array construction, reads, indexing, eval) go
/// through it.
pub fn no_panic<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    let mut out = None;
    let caught = weft::catch_panic(|| {
        out = Some(f());
        Ok(())
    });
    match (caught, out) {
        (Ok(()), Some(r)) => r,
        (Err(e), _) => Err(PyRuntimeError::new_err(e.to_string())),
        (Ok(()), None) => Err(PyRuntimeError::new_err("internal error (a weft bug): no result")),
    }
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
