//! `load`, `save`, `savez`, `savez_compressed`, `save_safetensors` and
//! `save_gguf`: NumPy's `.npy` and `.npz`, safetensors and GGUF files, with
//! mlx.core's signatures. A file is a path (`str` or `os.PathLike`) or an
//! open binary file object. The formats themselves are `weft::io`'s.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::{on_stream, StreamOrDevice};
use crate::errors::eval_error;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::collections::HashMap;
use weft::io::gguf::{Gguf, Value};
use weft::{Array, Dtype};

type Any<'py> = Bound<'py, PyAny>;

/// Where a file is: a path, or a Python file object.
enum Target<'py> {
    Path(String),
    File(Any<'py>),
}

fn target<'py>(file: &Any<'py>, what: &str) -> PyResult<Target<'py>> {
    let py = file.py();
    if file.is_instance_of::<PyString>() || file.hasattr("__fspath__")? {
        let p = py.import("os")?.call_method1("fspath", (file,))?;
        return Ok(Target::Path(p.extract().map_err(|_| PyTypeError::new_err(format!("{what}: the path must be a str")))?));
    }
    let method = if what == "load" { "read" } else { "write" };
    if file.hasattr(method)? {
        return Ok(Target::File(file.clone()));
    }
    Err(PyTypeError::new_err(format!("{what}: file must be a str, an os.PathLike or a binary file object")))
}

fn extension(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase())
}

/// A weft error from reading or writing a file as a Python exception:
/// corrupt files and unsupported types are `ValueError`, failing reads
/// and writes `OSError`.
fn io_error(e: weft::Error) -> PyErr {
    match e {
        weft::Error::Io(m) if m.contains("not a valid") => PyValueError::new_err(m),
        weft::Error::Io(m) => PyOSError::new_err(m),
        weft::Error::Dtype(m) | weft::Error::Shape(m) | weft::Error::InvalidArgument(m) => PyValueError::new_err(m),
        e => eval_error(e),
    }
}

/// The bytes of a file: read with the GIL released for paths.
fn read_bytes(py: Python<'_>, t: &Target<'_>) -> PyResult<Vec<u8>> {
    match t {
        Target::Path(p) => {
            if !std::path::Path::new(p).exists() {
                return Err(PyFileNotFoundError::new_err(format!("load: no such file: {p:?}")));
            }
            py.detach(|| std::fs::read(p)).map_err(|e| PyOSError::new_err(format!("{p}: {e}")))
        }
        Target::File(f) => {
            let data = f.call_method0("read")?;
            let bytes = data.cast::<PyBytes>().map_err(|_| PyTypeError::new_err("load: the file must be opened in binary mode"))?;
            Ok(bytes.as_bytes().to_vec())
        }
    }
}

/// Writes `bytes` to a path (adding `.ext` when the name lacks it) or a file object.
fn write_bytes(py: Python<'_>, t: Target<'_>, ext: &str, bytes: Vec<u8>) -> PyResult<()> {
    match t {
        Target::Path(mut p) => {
            if !p.ends_with(&format!(".{ext}")) {
                p.push('.');
                p.push_str(ext);
            }
            py.detach(|| std::fs::write(&p, bytes)).map_err(|e| PyOSError::new_err(format!("{p}: {e}")))
        }
        Target::File(f) => {
            f.call_method1("write", (PyBytes::new(py, &bytes),))?;
            Ok(())
        }
    }
}

/// Runs `f` (which evaluates arrays and encodes them) without the GIL.
fn encode<R: Send>(py: Python<'_>, f: impl FnOnce() -> weft::Result<R> + Send) -> PyResult<R> {
    py.detach(|| weft::catch_panic(f)).map_err(io_error)
}

fn sorted_dict<'py>(py: Python<'py>, arrays: impl IntoIterator<Item = (String, Array)>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let mut v: Vec<_> = arrays.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, a) in v {
        out.set_item(k, PyArray::from(a))?;
    }
    Ok(out)
}

/// A GGUF metadata value as Python: strings as `str`, arrays of strings as
/// lists, numbers and arrays of numbers as arrays of their type (MLX's
/// convention).
fn gguf_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Any<'py>> {
    fn scalar(v: &Value) -> Option<Array> {
        Some(match *v {
            Value::U8(x) => Array::scalar(x),
            Value::I8(x) => Array::scalar(x),
            Value::U16(x) => Array::scalar(x),
            Value::I16(x) => Array::scalar(x),
            Value::U32(x) => Array::scalar(x),
            Value::I32(x) => Array::scalar(x),
            Value::U64(x) => Array::scalar(x),
            Value::I64(x) => Array::scalar(x),
            Value::F32(x) => Array::scalar(x),
            Value::F64(x) => Array::scalar(x),
            Value::Bool(x) => Array::scalar(x),
            _ => return None,
        })
    }
    if let Some(a) = scalar(v) {
        return Ok(PyArray::from(a).into_pyobject(py)?.into_any());
    }
    match v {
        Value::String(s) => Ok(PyString::new(py, s).into_any()),
        Value::Array(_, items) => {
            let parts: Option<Vec<Array>> = items.iter().map(scalar).collect();
            match parts {
                Some(parts) if !parts.is_empty() => {
                    let a = weft::ops::stack(&parts, 0).map_err(eval_error)?;
                    Ok(PyArray::from(a).into_pyobject(py)?.into_any())
                }
                _ => {
                    let items = items.iter().map(|i| gguf_value(py, i)).collect::<PyResult<Vec<_>>>()?;
                    Ok(PyList::new(py, items)?.into_any())
                }
            }
        }
        _ => unreachable!("every scalar value is handled above"),
    }
}

/// Loads arrays from a file: `.npy` gives one array; `.npz`, `.safetensors`
/// and `.gguf` a dict of them (with `return_metadata=True`, also the
/// safetensors or GGUF metadata). The format is the extension unless given.
#[pyfunction]
#[pyo3(signature = (file, /, format = None, return_metadata = false, *, stream = None))]
fn load<'py>(
    file: &Any<'py>,
    format: Option<String>,
    return_metadata: bool,
    stream: Option<StreamOrDevice>,
) -> PyResult<Any<'py>> {
    let py = file.py();
    let t = target(file, "load")?;
    let name = match &t {
        Target::Path(p) => Some(p.clone()),
        Target::File(f) => f.getattr("name").ok().and_then(|n| n.extract::<String>().ok()),
    };
    let format = match format {
        Some(f) => f.trim_start_matches('.').to_ascii_lowercase(),
        None => name.as_deref().and_then(extension).ok_or_else(|| {
            PyValueError::new_err("load: cannot tell the format without a file extension; pass format= (npy, npz, safetensors or gguf)")
        })?,
    };
    let origin = name.unwrap_or_else(|| "<file>".into());
    if return_metadata && !matches!(format.as_str(), "safetensors" | "gguf") {
        return Err(PyValueError::new_err(format!("load: the {format} format has no metadata (return_metadata=True)")));
    }
    on_stream(&stream, || match format.as_str() {
        "npy" => {
            let bytes = read_bytes(py, &t)?;
            let a = py.detach(|| weft::io::npy::from_bytes(&bytes, &origin)).map_err(io_error)?;
            Ok(PyArray::from(a).into_pyobject(py)?.into_any())
        }
        "npz" => {
            let bytes = read_bytes(py, &t)?;
            let arrays = py.detach(|| weft::io::npz::from_bytes(&bytes, &origin)).map_err(io_error)?;
            Ok(sorted_dict(py, arrays)?.into_any())
        }
        "safetensors" => {
            let (arrays, meta) = match &t {
                Target::Path(p) => {
                    if !std::path::Path::new(p).exists() {
                        return Err(PyFileNotFoundError::new_err(format!("load: no such file: {p:?}")));
                    }
                    py.detach(|| weft::io::load_safetensors_with_metadata(p))
                }
                Target::File(_) => {
                    let bytes = read_bytes(py, &t)?;
                    py.detach(|| weft::io::load_safetensors_bytes_with_metadata(&bytes, &origin))
                }
            }
            .map_err(io_error)?;
            let arrays = sorted_dict(py, arrays)?;
            if !return_metadata {
                return Ok(arrays.into_any());
            }
            let m = PyDict::new(py);
            let mut meta: Vec<_> = meta.into_iter().collect();
            meta.sort();
            for (k, v) in meta {
                m.set_item(k, v)?;
            }
            Ok(PyTuple::new(py, [arrays.into_any(), m.into_any()])?.into_any())
        }
        "gguf" => {
            let bytes = read_bytes(py, &t)?;
            let (arrays, meta) = py
                .detach(|| {
                    let g = Gguf::parse(bytes, &origin)?;
                    let arrays = g
                        .tensors()
                        .iter()
                        .map(|t| Ok((t.name.clone(), g.array(&t.name)?)))
                        .collect::<weft::Result<Vec<_>>>()?;
                    Ok::<_, weft::Error>((arrays, g.metadata().to_vec()))
                })
                .map_err(io_error)?;
            let arrays = sorted_dict(py, arrays)?;
            if !return_metadata {
                return Ok(arrays.into_any());
            }
            let m = PyDict::new(py);
            for (k, v) in &meta {
                m.set_item(k, gguf_value(py, v)?)?;
            }
            Ok(PyTuple::new(py, [arrays.into_any(), m.into_any()])?.into_any())
        }
        f => Err(PyValueError::new_err(format!("load: unknown format {f:?} (weft reads npy, npz, safetensors and gguf)"))),
    })
}

/// Saves `arr` to a `.npy` file (the extension is added to a path without it).
#[pyfunction]
#[pyo3(signature = (file, arr))]
fn save(file: &Any<'_>, arr: &Any<'_>) -> PyResult<()> {
    let py = file.py();
    let t = target(file, "save")?;
    let a = to_array(arr, None)?;
    let bytes = encode(py, || weft::io::npy::to_bytes(&a))?;
    write_bytes(py, t, "npy", bytes)
}

fn savez_impl(file: &Any<'_>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>, compressed: bool) -> PyResult<()> {
    let py = file.py();
    let what = if compressed { "savez_compressed" } else { "savez" };
    let t = target(file, what)?;
    let mut named: Vec<(String, Array)> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        named.push((format!("arr_{i}"), to_array(&a, None)?));
    }
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            if named.iter().any(|(n, _)| *n == k) {
                return Err(PyValueError::new_err(format!("{what}: cannot use un-named variables and keyword {k}")));
            }
            named.push((k, to_array(&v, None)?));
        }
    }
    let bytes = encode(py, || weft::io::npz::to_bytes(named.iter().map(|(n, a)| (n.as_str(), a)), compressed))?;
    write_bytes(py, t, "npz", bytes)
}

/// Saves arrays to an uncompressed `.npz` file: positional arrays as
/// `arr_0`, `arr_1`, ..., keyword arrays under their keyword.
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn savez(file: &Any<'_>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    savez_impl(file, args, kwargs, false)
}

/// `savez`, deflated.
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn savez_compressed(file: &Any<'_>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    savez_impl(file, args, kwargs, true)
}

fn named_arrays(arrays: &Bound<'_, PyDict>, what: &str) -> PyResult<Vec<(String, Array)>> {
    let mut out = Vec::with_capacity(arrays.len());
    for (k, v) in arrays.iter() {
        let name: String = k.extract().map_err(|_| PyTypeError::new_err(format!("{what}: array names must be str")))?;
        out.push((name, to_array(&v, None)?));
    }
    Ok(out)
}

/// Writes `arrays` (a dict of name to array) and `metadata` (str to str)
/// to a safetensors file; the `.safetensors` extension is added to a path
/// without it.
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_safetensors(file: &Any<'_>, arrays: &Bound<'_, PyDict>, metadata: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let py = file.py();
    let t = target(file, "save_safetensors")?;
    let meta = match metadata {
        None => None,
        Some(m) => {
            let mut out = HashMap::new();
            for (k, v) in m.iter() {
                let (Ok(k), Ok(v)) = (k.extract::<String>(), v.extract::<String>()) else {
                    return Err(PyValueError::new_err("save_safetensors: metadata keys and values must be str"));
                };
                out.insert(k, v);
            }
            Some(out)
        }
    };
    let tensors = named_arrays(arrays, "save_safetensors")?;
    let bytes = encode(py, || weft::io::save_safetensors_with_metadata(tensors.iter().map(|(n, a)| (n.as_str(), a)), meta))?;
    write_bytes(py, t, "safetensors", bytes)
}

/// A GGUF metadata value from Python: a `str`, a list of `str`, or a 0-d
/// or 1-d array of an integer type, bool or float32 (GGUF has no float16).
fn to_gguf_value(py: Python<'_>, key: &str, v: &Any<'_>) -> PyResult<Value> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_string()));
    }
    if let Ok(list) = v.cast::<PyList>() {
        let items = list
            .iter()
            .map(|i| i.extract::<String>().map(Value::String))
            .collect::<PyResult<Vec<_>>>()
            .map_err(|_| PyValueError::new_err(format!("save_gguf: metadata {key:?}: a list must hold only str")))?;
        return Ok(Value::Array(8, items));
    }
    let Ok(a) = v.cast::<PyArray>() else {
        return Err(PyValueError::new_err(format!("save_gguf: metadata {key:?} must be an array, a str or a list of str")));
    };
    let a = a.get().array();
    if a.ndim() > 1 {
        return Err(PyValueError::new_err(format!("save_gguf: metadata {key:?} must be a scalar or 1-D array, got shape {:?}", a.shape())));
    }
    fn values<T: weft::buffer::CpuElement>(py: Python<'_>, a: &Array, f: impl Fn(T) -> Value) -> PyResult<Vec<Value>> {
        Ok(crate::convert::read::<T>(py, a)?.into_iter().map(f).collect())
    }
    let items = match a.dtype() {
        Dtype::U8 => values(py, &a, Value::U8)?,
        Dtype::I8 => values(py, &a, Value::I8)?,
        Dtype::U16 => values(py, &a, Value::U16)?,
        Dtype::I16 => values(py, &a, Value::I16)?,
        Dtype::U32 => values(py, &a, Value::U32)?,
        Dtype::I32 => values(py, &a, Value::I32)?,
        Dtype::U64 => values(py, &a, Value::U64)?,
        Dtype::I64 => values(py, &a, Value::I64)?,
        Dtype::F32 => values(py, &a, Value::F32)?,
        Dtype::F64 => values(py, &a, Value::F64)?,
        Dtype::Bool => values(py, &a, Value::Bool)?,
        d => return Err(PyValueError::new_err(format!("save_gguf: metadata {key:?} has dtype {d}, which GGUF cannot hold"))),
    };
    Ok(if a.ndim() == 0 {
        items.into_iter().next().expect("a 0-d array has one element")
    } else {
        let ty = match items.first() {
            Some(Value::U8(_)) => 0,
            Some(Value::I8(_)) => 1,
            Some(Value::U16(_)) => 2,
            Some(Value::I16(_)) => 3,
            Some(Value::U32(_)) => 4,
            Some(Value::I32(_)) => 5,
            Some(Value::F32(_)) => 6,
            Some(Value::Bool(_)) => 7,
            Some(Value::U64(_)) => 10,
            Some(Value::I64(_)) => 11,
            _ => 12,
        };
        Value::Array(ty, items)
    })
}

/// Writes `arrays` and `metadata` to a GGUF file; the `.gguf` extension is
/// added to a path without it.
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_gguf(file: &Any<'_>, arrays: &Bound<'_, PyDict>, metadata: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let py = file.py();
    let t = target(file, "save_gguf")?;
    let mut meta = Vec::new();
    if let Some(m) = metadata {
        for (k, v) in m.iter() {
            let k: String = k.extract().map_err(|_| PyValueError::new_err("save_gguf: metadata keys must be str"))?;
            let v = to_gguf_value(py, &k, &v)?;
            meta.push((k, v));
        }
    }
    let tensors = named_arrays(arrays, "save_gguf")?;
    let bytes = encode(py, || weft::io::gguf::save_gguf_bytes(tensors.iter().map(|(n, a)| (n.as_str(), a)), &meta))?;
    write_bytes(py, t, "gguf", bytes)
}

/// The arrays of `ob` (an array, or a list/tuple/dict of them, nested).
fn collect_arrays(ob: &Bound<'_, PyAny>, name: Option<String>, out: &mut Vec<(Option<String>, Array)>) -> PyResult<()> {
    if let Ok(a) = ob.cast::<PyArray>() {
        out.push((name, a.get().array()));
    } else if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
        for x in ob.try_iter()? {
            collect_arrays(&x?, None, out)?;
        }
    } else if let Ok(d) = ob.cast::<PyDict>() {
        for (k, v) in d.iter() {
            collect_arrays(&v, Some(k.str()?.to_string()), out)?;
        }
    } else {
        return Err(PyTypeError::new_err(format!("export_to_dot: expected arrays, got {}", ob.get_type().name()?)));
    }
    Ok(())
}

/// Writes the graph behind the arrays (positional, or named by keyword) as
/// Graphviz DOT text to `file`: a path, or an object with `write`.
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn export_to_dot(file: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let mut outputs = Vec::new();
    collect_arrays(args.as_any(), None, &mut outputs)?;
    if let Some(k) = kwargs {
        collect_arrays(k.as_any(), None, &mut outputs)?;
    }
    let text = weft::dot::to_dot(&outputs);
    if let Ok(path) = file.extract::<std::path::PathBuf>() {
        return std::fs::write(&path, text).map_err(|e| PyOSError::new_err(format!("export_to_dot: {}: {e}", path.display())));
    }
    if file.hasattr("write")? {
        file.call_method1("write", (text,))?;
        return Ok(());
    }
    Err(PyTypeError::new_err("export_to_dot: file must be a path or have a write method"))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(export_to_dot, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(savez, m)?)?;
    m.add_function(wrap_pyfunction!(savez_compressed, m)?)?;
    m.add_function(wrap_pyfunction!(save_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(save_gguf, m)?)?;
    Ok(())
}
