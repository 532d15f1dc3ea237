//! Evaluation, memory and backend queries: `eval`, `async_eval`,
//! `set_memory_limit`, `get_active_memory`, `cuda.is_available`, ...

use crate::array::PyArray;
use crate::errors::eval_error;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use weft::Array;

/// How deep a tree of containers `eval` walks before it gives up (Python's
/// own recursion limit is 1000; weft's walk must stay far from the native
/// stack's end on any thread).
const MAX_TREE_DEPTH: usize = 256;

/// The arrays in a tree of lists, tuples and dicts; other leaves are skipped.
/// A container that contains itself, or a tree deeper than
/// `MAX_TREE_DEPTH`, raises `ValueError` instead of overflowing the stack.
fn collect(ob: &Bound<'_, PyAny>, out: &mut Vec<Array>) -> PyResult<()> {
    collect_in(ob, out, &mut Vec::new())
}

/// `collect`, with `path` the containers from the root down to `ob`.
fn collect_in(ob: &Bound<'_, PyAny>, out: &mut Vec<Array>, path: &mut Vec<usize>) -> PyResult<()> {
    if let Ok(a) = ob.cast::<PyArray>() {
        out.push(a.get().array());
        return Ok(());
    }
    let is_seq = ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>();
    let dict = ob.cast::<PyDict>().ok();
    if !is_seq && dict.is_none() {
        return Ok(());
    }
    let id = ob.as_ptr() as usize;
    if path.contains(&id) {
        return Err(PyValueError::new_err("eval: a container in the arguments contains itself"));
    }
    if path.len() >= MAX_TREE_DEPTH {
        return Err(PyValueError::new_err(format!(
            "eval: containers nested more than {MAX_TREE_DEPTH} deep"
        )));
    }
    path.push(id);
    if let Some(d) = dict {
        for v in d.values() {
            collect_in(&v, out, path)?;
        }
    } else {
        for item in ob.try_iter()? {
            collect_in(&item?, out, path)?;
        }
    }
    path.pop();
    Ok(())
}

/// Evaluates the arrays in `args` (arrays, or lists, tuples and dicts of
/// them) and waits for them. Raises RuntimeError if a computation failed.
#[pyfunction]
#[pyo3(signature = (*args))]
fn eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let mut arrays = Vec::new();
    collect(args.as_any(), &mut arrays)?;
    py.detach(|| weft::catch_panic(|| weft::eval(&arrays))).map_err(eval_error)
}

/// Starts evaluating the arrays in `args` and returns without waiting.
#[pyfunction]
#[pyo3(signature = (*args))]
fn async_eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let mut arrays = Vec::new();
    collect(args.as_any(), &mut arrays)?;
    py.detach(|| weft::catch_panic(|| weft::async_eval(&arrays))).map_err(eval_error)
}

/// Caps the bytes weft's buffers may hold; returns the previous limit.
#[pyfunction]
fn set_memory_limit(limit: usize) -> usize {
    weft::set_memory_limit(limit)
}

#[pyfunction]
fn get_active_memory() -> usize {
    weft::active_memory()
}

#[pyfunction]
fn get_peak_memory() -> usize {
    weft::peak_memory()
}

#[pyfunction]
fn reset_peak_memory() {
    weft::reset_peak_memory()
}

/// weft keeps no buffer cache: always 0.
#[pyfunction]
fn get_cache_memory() -> usize {
    0
}

/// weft keeps no buffer cache: nothing to clear.
#[pyfunction]
fn clear_cache() {}

/// Whether weft's CUDA backend is built in and a GPU can be used.
#[pyfunction]
fn is_available() -> bool {
    weft::backend::check_available(weft::Device::gpu(0)).is_ok()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(eval, m)?)?;
    m.add_function(wrap_pyfunction!(async_eval, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(get_active_memory, m)?)?;
    m.add_function(wrap_pyfunction!(get_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(get_cache_memory, m)?)?;
    m.add_function(wrap_pyfunction!(clear_cache, m)?)?;

    let cuda = PyModule::new(m.py(), "cuda")?;
    cuda.add_function(wrap_pyfunction!(is_available, &cuda)?)?;
    m.add_submodule(&cuda)?;
    // `import weft.core.cuda` finds the submodule too.
    m.py().import("sys")?.getattr("modules")?.set_item("weft.core.cuda", &cuda)?;
    Ok(())
}
