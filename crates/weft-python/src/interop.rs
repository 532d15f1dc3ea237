//! Sharing array memory with other Python libraries: the buffer protocol
//! (`memoryview(a)`, `numpy.array(a, copy=False)`), DLPack export
//! (`a.__dlpack__()`) and import (`weft.core.from_dlpack`).
//!
//! Exports hand out the evaluated buffer of the array itself, with its
//! strides (a transpose or a broadcast is not copied), kept alive by the
//! export until the consumer releases it. As in MLX the memory is
//! writable: a write through `memoryview(a)` or `np.array(a, copy=False)`
//! changes `a` and every array viewing the same buffer. Such writes must
//! not race with weft reading the array (a kernel computing from it on
//! another thread), exactly as in MLX; weft itself never writes to an
//! evaluated buffer. Arrays on a GPU stream are exported as a host copy.
//!
//! Imports copy: weft buffers own their memory, so an import cannot adopt
//! the producer's. The copy keeps the producer's strides (the span of
//! memory they reach is copied), so `memoryview(from_dlpack(x.T))` has
//! `x.T`'s strides, as MLX's zero-copy import does.

use crate::array::PyArray;
use crate::errors::eval_error;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_char, c_int, c_void, CStr};
use weft::buffer::{Buffer, CpuBuffer, CpuData, Data};
use weft::shape::Layout;
use weft::{Array, Dtype};

/// The first element of a CPU buffer, as a byte pointer. Taken with
/// `Vec::as_ptr`, which materializes no reference to the elements.
fn base_ptr(d: &CpuData) -> *const u8 {
    match d {
        CpuData::Bool(v) => v.as_ptr().cast(),
        CpuData::U8(v) => v.as_ptr(),
        CpuData::U16(v) => v.as_ptr().cast(),
        CpuData::U32(v) => v.as_ptr().cast(),
        CpuData::U64(v) => v.as_ptr().cast(),
        CpuData::I8(v) => v.as_ptr().cast(),
        CpuData::I16(v) => v.as_ptr().cast(),
        CpuData::I32(v) => v.as_ptr().cast(),
        CpuData::I64(v) => v.as_ptr().cast(),
        CpuData::F16(v) => v.as_ptr().cast(),
        CpuData::BF16(v) => v.as_ptr().cast(),
        CpuData::F32(v) => v.as_ptr().cast(),
        CpuData::F64(v) => v.as_ptr().cast(),
        CpuData::C64(v) => v.as_ptr().cast(),
    }
}

/// The evaluated data of `a`, in host memory.
fn host_data(py: Python<'_>, a: &Array) -> PyResult<Data> {
    py.detach(|| weft::catch_panic(|| a.data()?.to_host())).map_err(eval_error)
}

/// The address of the array's first element in `data`'s buffer.
fn first_element(data: &Data, dtype: Dtype) -> *const u8 {
    let Buffer::Cpu(cpu) = &*data.buffer else { unreachable!("host_data returns CPU data") };
    // `wrapping_add`: an empty array's offset may point at the buffer's end.
    base_ptr(&cpu.data).wrapping_add(data.layout.offset * dtype.size())
}

/// The struct-module format of a dtype (`bfloat16` has none: MLX's name is
/// used, which NumPy refuses with an error naming it).
fn format(dtype: Dtype) -> &'static CStr {
    match dtype {
        Dtype::Bool => c"?",
        Dtype::U8 => c"B",
        Dtype::U16 => c"H",
        Dtype::U32 => c"I",
        Dtype::U64 => c"Q",
        Dtype::I8 => c"b",
        Dtype::I16 => c"h",
        Dtype::I32 => c"i",
        Dtype::I64 => c"q",
        Dtype::F16 => c"e",
        Dtype::BF16 => c"bfloat16",
        Dtype::F32 => c"f",
        Dtype::F64 => c"d",
        Dtype::C64 => c"Zf",
    }
}

/// What a buffer export owns, behind `Py_buffer::internal`.
struct BufferExport {
    _data: Data,
    shape: Vec<ffi::Py_ssize_t>,
    strides: Vec<ffi::Py_ssize_t>,
}

/// Fills `view` for `__getbuffer__`.
///
/// # Safety
/// `view` must be the valid `Py_buffer` CPython passes to `bf_getbuffer`.
pub unsafe fn get_buffer(slf: &Bound<'_, PyArray>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("a NULL Py_buffer"));
    }
    let py = slf.py();
    let a = slf.get().array();
    let data = host_data(py, &a)?;
    let dtype = a.dtype();
    let item = dtype.size() as ffi::Py_ssize_t;
    let layout = &data.layout;
    if flags & ffi::PyBUF_STRIDES != ffi::PyBUF_STRIDES && !layout.is_contiguous() {
        return Err(PyBufferError::new_err("the array is not contiguous: ask for a strided buffer"));
    }
    let export = Box::new(BufferExport {
        shape: layout.shape.iter().map(|&d| d as ffi::Py_ssize_t).collect(),
        strides: layout.strides.iter().map(|&s| s as ffi::Py_ssize_t * item).collect(),
        _data: data.clone(),
    });
    let buf = first_element(&data, dtype);
    // SAFETY: `view` is CPython's (caller's contract). `buf` points into
    // the buffer that `export._data` keeps alive until `release_buffer`
    // frees the export, and the shape and strides describe only elements
    // of that buffer (every layout weft makes does). The memory is handed
    // out writable, as MLX does: see the module's note on writes.
    unsafe {
        (*view).buf = buf as *mut c_void;
        (*view).obj = slf.clone().into_any().into_ptr();
        (*view).len = a.size() as ffi::Py_ssize_t * item;
        (*view).readonly = 0;
        (*view).itemsize = item;
        (*view).format = if flags & ffi::PyBUF_FORMAT != 0 { format(dtype).as_ptr() as *mut c_char } else { std::ptr::null_mut() };
        (*view).ndim = export.shape.len() as c_int;
        (*view).shape = if flags & ffi::PyBUF_ND != 0 { export.shape.as_ptr() as *mut _ } else { std::ptr::null_mut() };
        (*view).strides =
            if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES { export.strides.as_ptr() as *mut _ } else { std::ptr::null_mut() };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = Box::into_raw(export).cast();
    }
    Ok(())
}

/// Frees what `get_buffer` stored in `view`.
///
/// # Safety
/// `view` must be a buffer filled by `get_buffer`, released once.
pub unsafe fn release_buffer(view: *mut ffi::Py_buffer) {
    // SAFETY: `internal` is the `BufferExport` box `get_buffer` leaked;
    // CPython calls `bf_releasebuffer` once per successful export.
    unsafe {
        let internal = (*view).internal;
        if !internal.is_null() {
            drop(Box::from_raw(internal.cast::<BufferExport>()));
            (*view).internal = std::ptr::null_mut();
        }
    }
}

// ---------------------------------------------------------------------------
// DLPack (the unversioned ABI, `dltensor` capsules, which every consumer
// reads).

const KDL_CPU: i32 = 1;
const KDL_CUDA_HOST: i32 = 3;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// DLPack 1.x's tensor: a version and flags (read-only, copied) first.
#[repr(C)]
struct DLManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const DLTENSOR: &CStr = c"dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_DLTENSOR: &CStr = c"used_dltensor";

fn dl_dtype(d: Dtype) -> DLDataType {
    let (code, bits) = match d {
        Dtype::Bool => (6, 8),
        Dtype::U8 => (1, 8),
        Dtype::U16 => (1, 16),
        Dtype::U32 => (1, 32),
        Dtype::U64 => (1, 64),
        Dtype::I8 => (0, 8),
        Dtype::I16 => (0, 16),
        Dtype::I32 => (0, 32),
        Dtype::I64 => (0, 64),
        Dtype::F16 => (2, 16),
        Dtype::F32 => (2, 32),
        Dtype::F64 => (2, 64),
        Dtype::BF16 => (4, 16),
        Dtype::C64 => (5, 64),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn from_dl_dtype(t: DLDataType) -> PyResult<Dtype> {
    if t.lanes != 1 {
        return Err(PyValueError::new_err(format!("DLPack tensors with {} lanes are not supported", t.lanes)));
    }
    Ok(match (t.code, t.bits) {
        (6, 8) => Dtype::Bool,
        (1, 8) => Dtype::U8,
        (1, 16) => Dtype::U16,
        (1, 32) => Dtype::U32,
        (1, 64) => Dtype::U64,
        (0, 8) => Dtype::I8,
        (0, 16) => Dtype::I16,
        (0, 32) => Dtype::I32,
        (0, 64) => Dtype::I64,
        (2, 16) => Dtype::F16,
        (2, 32) => Dtype::F32,
        (2, 64) => Dtype::F64,
        (4, 16) => Dtype::BF16,
        (5, 64) => Dtype::C64,
        (5, b) => return Err(PyValueError::new_err(format!("complex DLPack tensors of {b} bits are not supported: weft has complex64 only"))),
        (c, b) => return Err(PyValueError::new_err(format!("DLPack dtype code {c} with {b} bits has no weft dtype"))),
    })
}

/// What an exported `DLManagedTensor` owns.
struct DlExport {
    _data: Data,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// Frees an exported tensor; called by the consumer (any thread, with or
/// without the GIL) or by the capsule when it was never consumed.
unsafe extern "C" fn dl_deleter(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: `t` and its `manager_ctx` are the boxes `dlpack` leaked, and
    // DLPack calls the deleter once. Dropping `Data` (an `Arc`) is
    // thread-safe.
    unsafe {
        let t = Box::from_raw(t);
        drop(Box::from_raw(t.manager_ctx.cast::<DlExport>()));
    }
}

/// The capsule's destructor: frees the tensor unless a consumer took it
/// (and renamed the capsule `used_dltensor`).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the capsule, holding the GIL.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let t = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
            dl_deleter(t);
        } else {
            ffi::PyErr_Clear();
        }
    }
}

/// `a.__dlpack__()`: a `dltensor` capsule viewing `a`'s evaluated buffer.
pub fn dlpack(py: Python<'_>, a: &Array, dl_device: Option<(i32, i32)>, copy: Option<bool>) -> PyResult<Py<PyAny>> {
    if let Some((ty, id)) = dl_device {
        if ty != KDL_CPU || id != 0 {
            return Err(PyBufferError::new_err(format!("weft exports DLPack tensors on the CPU (1, 0), not ({ty}, {id})")));
        }
    }
    let a = if copy == Some(true) {
        // A new buffer: the consumer may write to it freely.
        let bytes = crate::convert::native_bytes(py, a)?;
        Array::from_bytes(&bytes, a.dtype(), a.shape()).map_err(eval_error)?
    } else {
        a.clone()
    };
    let data = host_data(py, &a)?;
    let ctx = Box::new(DlExport {
        shape: data.layout.shape.iter().map(|&d| d as i64).collect(),
        strides: data.layout.strides.iter().map(|&s| s as i64).collect(),
        _data: data.clone(),
    });
    let tensor = Box::new(DLManagedTensor {
        dl_tensor: DLTensor {
            data: first_element(&data, a.dtype()) as *mut c_void,
            device: DLDevice { device_type: KDL_CPU, device_id: 0 },
            ndim: ctx.shape.len() as i32,
            dtype: dl_dtype(a.dtype()),
            shape: ctx.shape.as_ptr() as *mut i64,
            strides: ctx.strides.as_ptr() as *mut i64,
            byte_offset: 0,
        },
        manager_ctx: Box::into_raw(ctx).cast(),
        deleter: Some(dl_deleter),
    });
    let raw = Box::into_raw(tensor);
    // SAFETY: `raw` is a valid, leaked `DLManagedTensor`; the capsule owns
    // it from here (its destructor, or the consumer, calls the deleter).
    let capsule = unsafe { ffi::PyCapsule_New(raw.cast(), DLTENSOR.as_ptr(), Some(capsule_destructor)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made; `raw` is still ours to free.
        unsafe { dl_deleter(raw) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `capsule` is a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
}

/// `weft.core.from_dlpack(x)`: a copy of a CPU DLPack tensor, with its
/// strides (see the module note); float64 becomes float32, as in MLX.
pub fn from_dlpack(x: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<Array> {
    let py = x.py();
    if copy == Some(false) {
        return Err(PyValueError::new_err(
            "from_dlpack: weft cannot share a DLPack producer's memory (copy=False); its arrays own their buffers",
        ));
    }
    if let Ok(a) = x.cast::<PyArray>() {
        return Ok(a.get().array());
    }
    if x.hasattr("__dlpack_device__")? {
        let (ty, id): (i32, i32) = x.call_method0("__dlpack_device__")?.extract()?;
        if ty != KDL_CPU && ty != KDL_CUDA_HOST {
            return Err(PyValueError::new_err(format!("from_dlpack: weft imports CPU tensors only, not device ({ty}, {id})")));
        }
    }
    // Ask for a 1.x tensor (it can say "read-only", so NumPy exports
    // read-only arrays that way); producers predating 1.0 refuse the
    // keyword and give an unversioned one.
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match x.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => x.call_method0("__dlpack__")?,
        Err(e) => return Err(e),
    };
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object (held by `capsule`); the capsule API
    // checks its type and name (returning 0 or NULL otherwise).
    let versioned = unsafe { ffi::PyCapsule_IsValid(cap, DLTENSOR_VERSIONED.as_ptr()) } == 1;
    let a = if versioned {
        // SAFETY: as above.
        let t = unsafe { ffi::PyCapsule_GetPointer(cap, DLTENSOR_VERSIONED.as_ptr()) }.cast::<DLManagedTensorVersioned>();
        if t.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| PyValueError::new_err("from_dlpack: an empty dltensor_versioned capsule")));
        }
        // SAFETY: renaming a valid capsule marks it consumed (ours to delete).
        unsafe { ffi::PyCapsule_SetName(cap, USED_DLTENSOR_VERSIONED.as_ptr()) };
        struct Owned(*mut DLManagedTensorVersioned);
        impl Drop for Owned {
            fn drop(&mut self) {
                // SAFETY: the producer's tensor, consumed once, here.
                unsafe {
                    if let Some(d) = (*self.0).deleter {
                        d(self.0)
                    }
                }
            }
        }
        let owned = Owned(t);
        // SAFETY: the producer keeps the tensor valid until its deleter
        // runs (when `owned` drops); see `copy_tensor`.
        unsafe {
            if (*owned.0).version[0] != 1 {
                return Err(PyValueError::new_err(format!("from_dlpack: DLPack version {} is not supported", (*owned.0).version[0])));
            }
            copy_tensor(&(*owned.0).dl_tensor)
        }?
    } else {
        // SAFETY: as above.
        let t = unsafe { ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()) }.cast::<DLManagedTensor>();
        if t.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| PyValueError::new_err("from_dlpack: __dlpack__ did not return a dltensor capsule")));
        }
        // SAFETY: as above.
        unsafe { ffi::PyCapsule_SetName(cap, USED_DLTENSOR.as_ptr()) };
        struct Owned(*mut DLManagedTensor);
        impl Drop for Owned {
            fn drop(&mut self) {
                // SAFETY: the producer's tensor, consumed once, here.
                unsafe {
                    if let Some(d) = (*self.0).deleter {
                        d(self.0)
                    }
                }
            }
        }
        let owned = Owned(t);
        // SAFETY: the producer keeps the tensor valid until its deleter
        // runs (when `owned` drops); `ndim` entries of `shape` (and of
        // `strides` when not NULL) are readable, and the elements the
        // shape and strides reach from `data + byte_offset` lie in its
        // allocation.
        unsafe { copy_tensor(&(*owned.0).dl_tensor) }?
    };
    if a.dtype() == Dtype::F64 {
        return weft::ops::astype(&a, Dtype::F32).map_err(eval_error);
    }
    Ok(a)
}

/// # Safety
/// `t` must be a valid DLTensor (see `from_dlpack`).
unsafe fn copy_tensor(t: &DLTensor) -> PyResult<Array> {
    if t.device.device_type != KDL_CPU && t.device.device_type != KDL_CUDA_HOST {
        return Err(PyValueError::new_err(format!("from_dlpack: weft imports CPU tensors only, not device type {}", t.device.device_type)));
    }
    let dtype = from_dl_dtype(t.dtype)?;
    let ndim = usize::try_from(t.ndim).ok().filter(|&n| n <= weft::shape::MAX_NDIM).ok_or_else(|| {
        PyValueError::new_err(format!("from_dlpack: {} dimensions", t.ndim))
    })?;
    // SAFETY: the caller's contract: `ndim` entries each.
    let shape_i: &[i64] = if ndim == 0 { &[] } else { unsafe { std::slice::from_raw_parts(t.shape, ndim) } };
    let shape = shape_i
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| PyValueError::new_err(format!("from_dlpack: dimension {d}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let strides: Vec<isize> = if t.strides.is_null() || ndim == 0 {
        weft::shape::contiguous_strides(&shape)
    } else {
        // SAFETY: as for the shape.
        unsafe { std::slice::from_raw_parts(t.strides, ndim) }.iter().map(|&s| s as isize).collect()
    };
    if strides.iter().zip(&shape).any(|(&s, &d)| s < 0 && d > 1) {
        return Err(PyValueError::new_err("from_dlpack: negative strides are not supported"));
    }
    let empty = shape.contains(&0);
    // Elements the layout reaches: 0 ..= span - 1.
    let span = if empty {
        0
    } else {
        1 + shape.iter().zip(&strides).map(|(&d, &s)| (d - 1) * s.max(0) as usize).sum::<usize>()
    };
    let nbytes = span.checked_mul(dtype.size()).ok_or_else(|| PyValueError::new_err("from_dlpack: the tensor is too large"))?;
    let start = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    // SAFETY: the caller's contract: the `span` elements from `start` are
    // the producer's, readable until its deleter runs (after this copy).
    let bytes: &[u8] = if nbytes == 0 { &[] } else { unsafe { std::slice::from_raw_parts(start, nbytes) } };
    let buffer = CpuBuffer::from_ne_bytes(dtype, bytes).map_err(eval_error)?;
    let layout = Layout { shape, strides: strides.iter().map(|&s| s.max(0)).collect(), offset: 0 };
    Array::from_strided(buffer, layout).map_err(eval_error)
}

/// `weft.core.from_dlpack(x, /, *, copy=None)`.
#[pyfunction(name = "from_dlpack")]
#[pyo3(signature = (x, /, *, copy = None))]
fn py_from_dlpack(x: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<PyArray> {
    crate::errors::no_panic(|| from_dlpack(x, copy)).map(PyArray::from)
}

/// `weft.core.asarray(a, dtype=None, *, copy=None)`: `a` as an array. weft
/// never shares memory with its input (its arrays own their buffers), so
/// `copy=False` raises `ValueError`, as MLX does whenever it must copy.
#[pyfunction]
#[pyo3(signature = (a, dtype = None, *, copy = None))]
fn asarray(a: &Bound<'_, PyAny>, dtype: Option<crate::dtype::PyDtype>, copy: Option<bool>) -> PyResult<PyArray> {
    if copy == Some(false) {
        return Err(PyValueError::new_err(
            "asarray: copy=False, but making a weft array from this input needs a copy (weft arrays own their memory)",
        ));
    }
    let dtype = dtype.map(|d| d.0);
    let is_numpy = a.hasattr("__array_interface__")? || a.hasattr("__array__")?;
    if !is_numpy && !a.is_instance_of::<PyArray>() && a.hasattr("__dlpack__")? {
        let x = crate::errors::no_panic(|| from_dlpack(a, copy))?;
        return match dtype {
            Some(d) => weft::ops::astype(&x, d).map_err(crate::errors::op_error).map(PyArray::from),
            None => Ok(PyArray::from(x)),
        };
    }
    crate::convert::to_array(a, dtype).map(PyArray::from)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(asarray, m)?)?;
    Ok(())
}
