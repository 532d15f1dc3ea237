//! `DeviceType`, `Device`, `Stream`, the `stream(s)` context manager and the
//! functions that pick streams. Any thread may use any stream (docs/architecture.md
//! rule 2): nothing here is tied to the thread that made it.

use crate::errors::{eval_error, OpResult};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use weft::{Device, DeviceType, Stream, StreamGuard};

#[pyclass(name = "DeviceType", module = "weft.core", eq, eq_int, frozen, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum PyDeviceType {
    cpu,
    gpu,
}

impl From<PyDeviceType> for DeviceType {
    fn from(t: PyDeviceType) -> DeviceType {
        match t {
            PyDeviceType::cpu => DeviceType::Cpu,
            PyDeviceType::gpu => DeviceType::Gpu,
        }
    }
}

impl From<DeviceType> for PyDeviceType {
    fn from(t: DeviceType) -> PyDeviceType {
        match t {
            DeviceType::Cpu => PyDeviceType::cpu,
            DeviceType::Gpu => PyDeviceType::gpu,
        }
    }
}

/// A device: `Device(weft.core.cpu)`, `Device(weft.core.gpu, 1)`.
#[pyclass(name = "Device", module = "weft.core", frozen, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDevice(pub Device);

/// A `Device`, or a `DeviceType` meaning device 0 of that type (as MLX
/// converts `mx.gpu` to `Device(gpu, 0)`).
pub struct DeviceArg(pub Device);

impl<'a, 'py> FromPyObject<'a, 'py> for DeviceArg {
    type Error = PyErr;
    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(d) = ob.cast::<PyDevice>() {
            return Ok(DeviceArg(d.get().0));
        }
        if let Ok(t) = ob.cast::<PyDeviceType>() {
            return Ok(DeviceArg(Device { kind: (*t.get()).into(), index: 0 }));
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "expected a Device or DeviceType, got {}",
            ob.get_type().name()?
        )))
    }
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index = 0))]
    fn new(r#type: PyDeviceType, index: u32) -> PyDevice {
        PyDevice(Device { kind: r#type.into(), index })
    }

    #[getter]
    fn r#type(&self) -> PyDeviceType {
        self.0.kind.into()
    }

    #[getter]
    fn index(&self) -> u32 {
        self.0.index
    }

    fn __repr__(&self) -> String {
        self.0.to_string()
    }

    /// Equal to the same Device, or to a DeviceType meaning device 0.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<DeviceArg>().is_ok_and(|d| d.0 == self.0)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.0.hash(&mut h);
        h.finish()
    }
}

/// A stream of work on a device: a FIFO queue that any thread may feed,
/// evaluate on and synchronize.
#[pyclass(name = "Stream", module = "weft.core", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyStream(pub Stream);

#[pymethods]
impl PyStream {
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.0.device())
    }

    #[getter]
    fn index(&self) -> u32 {
        self.0.index()
    }

    fn __repr__(&self) -> String {
        let local = if self.0.is_thread_local() { "thread_local " } else { "" };
        format!("Stream({}, {local}{})", self.0.device(), self.0.index())
    }
}

/// The `stream=` argument of every op: a `Stream`, or a `Device` meaning the
/// calling thread's default stream on it.
pub enum StreamOrDevice {
    Stream(Stream),
    Device(Device),
}

impl<'a, 'py> FromPyObject<'a, 'py> for StreamOrDevice {
    type Error = PyErr;
    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.cast::<PyStream>() {
            return Ok(StreamOrDevice::Stream(s.get().0));
        }
        match ob.extract::<DeviceArg>() {
            Ok(d) => Ok(StreamOrDevice::Device(d.0)),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "stream must be a Stream or a Device, got {}",
                ob.get_type().name()?
            ))),
        }
    }
}

impl StreamOrDevice {
    pub fn stream(&self) -> PyResult<Stream> {
        match *self {
            StreamOrDevice::Stream(s) => Ok(s),
            StreamOrDevice::Device(d) => {
                weft::backend::check_available(d).py()?;
                Ok(weft::default_stream(d))
            }
        }
    }
}

/// Runs `f` with `stream` (if given) as the calling thread's current stream:
/// how every op honours its `stream=` argument.
pub fn on_stream<R>(stream: &Option<StreamOrDevice>, f: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
    let _guard = match stream {
        Some(s) => Some(StreamGuard::new(s.stream()?)),
        None => None,
    };
    f()
}

thread_local! {
    /// Guards of the `with stream(s)` blocks open on this thread, innermost
    /// last. `ManuallyDrop`: a thread that ends inside a block must not run
    /// a guard's drop during thread-local teardown.
    /// Each is tagged with its `StreamContext` object, so `__exit__` ends the
    /// block that context entered (the latest, for a context entered twice),
    /// not whatever is on top: blocks of interleaved asyncio tasks or
    /// generators may exit in any order (weft's `StreamGuard` removes its
    /// own scope). A context exited on another thread than it was entered on
    /// has no block there and changes nothing.
    static OPEN_CONTEXTS: RefCell<Vec<(usize, ManuallyDrop<StreamGuard>)>> = const { RefCell::new(Vec::new()) };
}

/// `with stream(s):` makes `s` the current stream of the calling thread.
#[pyclass(name = "StreamContext", module = "weft.core", frozen)]
pub struct StreamContext(Stream);

#[pymethods]
impl StreamContext {
    fn __enter__(&self) {
        let me = self as *const Self as usize;
        OPEN_CONTEXTS.with(|c| c.borrow_mut().push((me, ManuallyDrop::new(StreamGuard::new(self.0)))));
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        let me = self as *const Self as usize;
        let guard = OPEN_CONTEXTS.with(|c| {
            let mut c = c.borrow_mut();
            let i = c.iter().rposition(|(ctx, _)| *ctx == me)?;
            Some(c.remove(i).1)
        });
        if let Some(g) = guard {
            drop(ManuallyDrop::into_inner(g));
        }
    }
}

/// A context manager that makes `s` (a Stream, or a Device's default
/// stream) the current stream of the calling thread.
#[pyfunction]
fn stream(s: StreamOrDevice) -> PyResult<StreamContext> {
    Ok(StreamContext(s.stream()?))
}

#[pyfunction]
fn default_device() -> PyDevice {
    PyDevice(weft::default_device())
}

/// Sets the default device of every thread.
#[pyfunction]
fn set_default_device(device: DeviceArg) -> PyResult<()> {
    weft::set_default_device(device.0).py()
}

/// The calling thread's default stream on `device`.
#[pyfunction]
fn default_stream(device: DeviceArg) -> PyResult<PyStream> {
    weft::backend::check_available(device.0).py()?;
    Ok(PyStream(weft::default_stream(device.0)))
}

/// Sets the calling thread's default stream for the stream's device.
#[pyfunction]
fn set_default_stream(stream: PyStream) {
    weft::set_default_stream(stream.0)
}

/// A new stream on `device`, usable from any thread.
#[pyfunction]
fn new_stream(device: DeviceArg) -> PyResult<PyStream> {
    Stream::new(device.0).py().map(PyStream)
}

/// A stream that names a different queue in each thread that uses it.
#[pyfunction]
fn new_thread_local_stream(device: DeviceArg) -> PyResult<PyStream> {
    Stream::new_thread_local(device.0).py().map(PyStream)
}

/// `new_thread_unsafe_stream`: in weft every stream is safe to use from any
/// thread, so this is `new_stream`.
#[pyfunction(name = "new_thread_unsafe_stream")]
fn new_shared_stream(device: DeviceArg) -> PyResult<PyStream> {
    new_stream(device)
}

/// Waits until all work submitted to `stream` so far has run; by default
/// the calling thread's current stream.
#[pyfunction]
#[pyo3(signature = (stream = None))]
fn synchronize(py: Python<'_>, stream: Option<StreamOrDevice>) -> PyResult<()> {
    let s = match stream {
        Some(s) => s.stream()?,
        None => weft::current_stream(),
    };
    py.detach(|| s.synchronize()).map_err(eval_error)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeviceType>()?;
    m.add_class::<PyDevice>()?;
    m.add_class::<PyStream>()?;
    m.add_class::<StreamContext>()?;
    m.add("cpu", PyDeviceType::cpu)?;
    m.add("gpu", PyDeviceType::gpu)?;
    m.add_function(wrap_pyfunction!(stream, m)?)?;
    m.add_function(wrap_pyfunction!(default_device, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(default_stream, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_thread_local_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_shared_stream, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    Ok(())
}
