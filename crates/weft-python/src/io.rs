//! `load` and `save_safetensors`: the safetensors format (mlx.core's `load`
//! also reads npy, npz and gguf; weft reads safetensors only).

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use pyo3::exceptions::{PyFileNotFoundError, PyNotImplementedError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

type Any<'py> = Bound<'py, PyAny>;

/// A path argument: a `str` or an `os.PathLike`.
fn path_of(file: &Any<'_>) -> PyResult<Option<String>> {
    let py = file.py();
    if file.is_instance_of::<PyString>() || file.hasattr("__fspath__")? {
        let p = py.import("os")?.call_method1("fspath", (file,))?;
        return Ok(Some(p.extract()?));
    }
    Ok(None)
}

fn extension(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase())
}

/// The arrays of a `.safetensors` file, by name: `file` is a path or an
/// open binary file. Other formats raise ValueError.
#[pyfunction]
#[pyo3(signature = (file, /, format = None, return_metadata = false, *, stream = None))]
fn load<'py>(
    file: &Bound<'py, PyAny>,
    format: Option<String>,
    return_metadata: bool,
    stream: Option<StreamOrDevice>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = file.py();
    if return_metadata {
        return Err(PyNotImplementedError::new_err("load: weft does not read safetensors metadata (return_metadata=True)"));
    }
    let path = path_of(file)?;
    let name = match &path {
        Some(p) => Some(p.clone()),
        None => file.getattr("name").ok().and_then(|n| n.extract::<String>().ok()),
    };
    let format = match format {
        Some(f) => f.to_ascii_lowercase(),
        None => match name.as_deref().and_then(extension) {
            Some(ext) => ext,
            None => {
                return Err(PyValueError::new_err(
                    "load: cannot tell the format without a file extension; pass format=\"safetensors\"",
                ))
            }
        },
    };
    if format != "safetensors" {
        return Err(PyValueError::new_err(format!(
            "load: weft reads only safetensors files, not {format:?} (mlx.core also reads npy, npz and gguf)"
        )));
    }
    let loaded = on_stream(&stream, || {
        let result = match &path {
            Some(p) => {
                if !std::path::Path::new(p).exists() {
                    return Err(PyFileNotFoundError::new_err(format!("load: no such file: {p:?}")));
                }
                py.detach(|| weft::io::load_safetensors(p))
            }
            None => {
                if !file.hasattr("read")? {
                    return Err(PyTypeError::new_err("load: file must be a path or a binary file object"));
                }
                let data = file.call_method0("read")?;
                let bytes = data.cast::<PyBytes>().map_err(|_| PyTypeError::new_err("load: the file must be opened in binary mode"))?;
                weft::io::load_safetensors_bytes(bytes.as_bytes())
            }
        };
        // Missing files were caught above: what is left is a corrupt file
        // (or one that could not be read).
        result.map_err(|e| match e {
            weft::Error::Io(m) if m.contains("not a valid safetensors file") => PyValueError::new_err(m),
            weft::Error::Io(m) => PyOSError::new_err(m),
            e => PyValueError::new_err(e.to_string()),
        })
    })?;
    let out = PyDict::new(py);
    let mut names: Vec<_> = loaded.into_iter().collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in names {
        out.set_item(k, PyArray::from(v))?;
    }
    Ok(out)
}

/// Writes `arrays` (a dict of name to array) to a safetensors file; the
/// `.safetensors` extension is added when `file` has none.
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_safetensors(file: &Any<'_>, arrays: &Bound<'_, PyDict>, metadata: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let py = file.py();
    if metadata.is_some_and(|m| !m.is_empty()) {
        return Err(PyNotImplementedError::new_err("save_safetensors: weft does not write metadata yet"));
    }
    let Some(mut path) = path_of(file)? else {
        return Err(PyTypeError::new_err("save_safetensors: file must be a str or os.PathLike"));
    };
    if !path.ends_with(".safetensors") {
        path.push_str(".safetensors");
    }
    let mut tensors = Vec::with_capacity(arrays.len());
    for (k, v) in arrays.iter() {
        let name: String = k.extract().map_err(|_| PyTypeError::new_err("save_safetensors: array names must be str"))?;
        tensors.push((name, to_array(&v, None)?));
    }
    py.detach(|| weft::io::save_safetensors(&path, tensors.iter().map(|(n, a)| (n.as_str(), a)))).map_err(|e| match e {
        weft::Error::Io(m) => PyOSError::new_err(m),
        e => crate::errors::eval_error(e),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(save_safetensors, m)?)?;
    Ok(())
}
