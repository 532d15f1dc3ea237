//! Evaluation, memory and backend queries: `eval`, `async_eval`,
//! `set_memory_limit`, `get_active_memory`, the device queries
//! (`is_available`, `device_count`, `device_info`, `cuda`, `metal`), ...

use crate::array::PyArray;
use crate::device::{DeviceArg, PyDeviceType};
use crate::errors::{eval_error, OpResult};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use weft::{Array, Device, DeviceType};

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

/// weft keeps no buffer cache; this hands the host memory freed buffers left
/// with the allocator back to the operating system.
#[pyfunction]
fn clear_cache() {
    weft::release_free_memory()
}

/// The cache limit last set (MLX's default: no limit). weft keeps no buffer
/// cache, so its cache (always 0 bytes) is within any limit.
static CACHE_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(usize::MAX);

/// Sets the buffer cache limit in bytes and returns the previous one.
#[pyfunction]
fn set_cache_limit(limit: usize) -> usize {
    CACHE_LIMIT.swap(limit, std::sync::atomic::Ordering::Relaxed)
}

/// Whether weft's CUDA backend is built in and a GPU can be used.
#[pyfunction]
fn is_available() -> bool {
    weft::backend::check_available(weft::Device::gpu(0)).is_ok()
}

/// `mx.metal.is_available()`: weft has no Metal backend.
#[pyfunction(name = "is_available")]
fn metal_is_available() -> bool {
    false
}

/// Whether `device` (a Device, or a DeviceType meaning its device 0) can
/// be used: the CPU always, a GPU when CUDA finds it.
#[pyfunction(name = "is_available")]
fn device_is_available(device: DeviceArg) -> bool {
    weft::backend::check_available(device.0).is_ok()
}

/// How many devices of `device_type` this process can use.
#[pyfunction]
fn device_count(device_type: PyDeviceType) -> usize {
    match DeviceType::from(device_type) {
        DeviceType::Cpu => 1,
        // GPUs are numbered from 0 without gaps; 64 bounds the search.
        DeviceType::Gpu => (0..64).take_while(|&i| weft::backend::check_available(Device::gpu(i)).is_ok()).count(),
    }
}

/// `device_info(d)`: what MLX reports for the CPU (`architecture`,
/// `device_name`); for a GPU, its index and whether it can be used.
#[pyfunction]
#[pyo3(signature = (d = None))]
fn device_info<'py>(py: Python<'py>, d: Option<DeviceArg>) -> PyResult<Bound<'py, PyDict>> {
    let device = d.map_or_else(weft::default_device, |d| d.0);
    let info = PyDict::new(py);
    match device.kind {
        DeviceType::Cpu => {
            info.set_item("architecture", std::env::consts::ARCH)?;
            let name = std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|t| t.lines().find_map(|l| l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())))
                .unwrap_or_else(|| std::env::consts::ARCH.to_string());
            info.set_item("device_name", name)?;
        }
        DeviceType::Gpu => {
            weft::backend::check_available(device).py()?;
            info.set_item("device_name", format!("CUDA device {}", device.index))?;
            info.set_item("architecture", "cuda")?;
        }
    }
    Ok(info)
}

/// `clear_streams()`: MLX destroys the calling thread's streams. A weft
/// stream belongs to no thread and is freed with its last reference, so
/// there is nothing to destroy.
#[pyfunction]
fn clear_streams() {}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(eval, m)?)?;
    m.add_function(wrap_pyfunction!(async_eval, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(get_active_memory, m)?)?;
    m.add_function(wrap_pyfunction!(get_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(get_cache_memory, m)?)?;
    m.add_function(wrap_pyfunction!(clear_cache, m)?)?;
    m.add_function(wrap_pyfunction!(set_cache_limit, m)?)?;

    m.add_function(wrap_pyfunction!(device_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(clear_streams, m)?)?;

    let cuda = PyModule::new(m.py(), "cuda")?;
    cuda.add_function(wrap_pyfunction!(is_available, &cuda)?)?;
    crate::add_submodule(m, &cuda, "cuda")?;
    // `mx.metal`: the queries MLX code makes before it picks a path.
    let metal = PyModule::new(m.py(), "metal")?;
    metal.add_function(wrap_pyfunction!(metal_is_available, &metal)?)?;
    for name in ["get_active_memory", "get_peak_memory", "reset_peak_memory", "get_cache_memory", "clear_cache", "set_memory_limit", "set_cache_limit"] {
        metal.add(name, m.getattr(name)?)?;
    }
    crate::add_submodule(m, &metal, "metal")?;
    Ok(())
}
