//! `Dtype` and the dtype constants (`float32`, `int32`, ...).

use pyo3::prelude::*;
use weft::Dtype;

/// An array's element type (`weft.core.float32`, ...).
#[pyclass(name = "Dtype", module = "weft.core", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtype(pub Dtype);

#[pymethods]
impl PyDtype {
    /// Bytes per element.
    #[getter]
    fn size(&self) -> usize {
        self.0.size()
    }

    fn __repr__(&self) -> String {
        format!("weft.core.{}", self.0.name())
    }

    fn __str__(&self) -> String {
        self.__repr__()
    }
}

/// The module attributes: MLX's names, `bool_` for bool.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDtype>()?;
    for d in Dtype::ALL {
        let name = if d == Dtype::Bool { "bool_" } else { d.name() };
        m.add(name, PyDtype(d))?;
    }
    Ok(())
}
