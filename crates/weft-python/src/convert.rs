//! Python values to arrays (scalars, nested lists, NumPy arrays) and back
//! (`item`, `tolist`, `__array__`). Waiting for and copying array data
//! happens with the GIL released.

use crate::array::PyArray;
use crate::errors::{eval_error, no_panic, OpResult};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyComplex, PyFloat, PyInt, PyList, PySequence, PyTuple};
use weft::buffer::CpuElement;
use weft::dtype::Element;
use weft::shape::MAX_NDIM;
use weft::{ops, Array, Dtype};

pub(crate) use weft::with_dtype;

/// A Python scalar: `bool`, `int`, `float` or `complex`.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    /// (real, imaginary).
    Complex(f64, f64),
}

impl Scalar {
    /// `ob` as a scalar, if it is a Python bool, int, float or complex
    /// (NumPy's `float64`, `complex128` and `bool_`-free integer subclasses
    /// included).
    pub fn extract(ob: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
        if ob.is_instance_of::<PyBool>() {
            return Ok(Some(Scalar::Bool(ob.extract()?)));
        }
        if ob.is_instance_of::<PyInt>() {
            return Ok(Some(Scalar::Int(ob.extract()?)));
        }
        if ob.is_instance_of::<PyFloat>() {
            return Ok(Some(Scalar::Float(ob.extract()?)));
        }
        if let Ok(z) = ob.cast::<PyComplex>() {
            return Ok(Some(Scalar::Complex(z.real(), z.imag())));
        }
        Ok(None)
    }

    /// The dtype MLX gives a Python scalar standing alone.
    pub fn default_dtype(self) -> Dtype {
        match self {
            Scalar::Bool(_) => Dtype::Bool,
            Scalar::Int(i) if i32::try_from(i).is_err() => Dtype::I64,
            Scalar::Int(_) => Dtype::I32,
            Scalar::Float(_) => Dtype::F32,
            Scalar::Complex(..) => Dtype::C64,
        }
    }

    /// The dtype a Python scalar takes next to an array of dtype `other`
    /// (MLX's weak scalar typing): an int keeps an integer or float array's
    /// type, a float keeps a float or complex array's type, a bool keeps
    /// any type, a complex gives complex64.
    pub fn weak_dtype(self, other: Dtype) -> Dtype {
        match self {
            Scalar::Bool(_) => Dtype::Bool,
            Scalar::Int(_) if other == Dtype::Bool => self.default_dtype(),
            Scalar::Int(_) => other,
            Scalar::Float(_) if other.is_inexact() => other,
            Scalar::Float(_) => Dtype::F32,
            Scalar::Complex(..) => Dtype::C64,
        }
    }

    fn cast<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_i64(b as i64),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::Float(f) => T::from_f64(f),
            // The real part for a real dtype (as `astype` from complex64).
            Scalar::Complex(re, im) => {
                let mut v = T::from_f64(re);
                if let Some(z) = (&mut v as &mut dyn std::any::Any).downcast_mut::<weft::Complex64>() {
                    *z = weft::Complex64::new(re as f32, im as f32);
                }
                v
            }
        }
    }

    /// This value as the weak operand of an array of `dtype` (see
    /// [`Scalar::weak_dtype`]): a Python int that does not fit an integer
    /// type narrower than 64 bits is a `ValueError` (as MLX), not a wrap.
    pub fn to_weak_array(self, other: Dtype) -> PyResult<Array> {
        let dtype = self.weak_dtype(other);
        if let Scalar::Int(i) = self {
            let range = match dtype {
                Dtype::I8 => Some((i8::MIN as i64, i8::MAX as i64)),
                Dtype::I16 => Some((i16::MIN as i64, i16::MAX as i64)),
                Dtype::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
                Dtype::U8 => Some((0, u8::MAX as i64)),
                Dtype::U16 => Some((0, u16::MAX as i64)),
                Dtype::U32 => Some((0, u32::MAX as i64)),
                _ => None,
            };
            if range.is_some_and(|(lo, hi)| i < lo || i > hi) {
                return Err(pyo3::exceptions::PyValueError::new_err(format!("Converting {i} to {dtype} would result in overflow.")));
            }
        }
        Ok(self.to_array(dtype))
    }

    /// A 0-d array holding this value as `dtype`.
    pub fn to_array(self, dtype: Dtype) -> Array {
        with_dtype!(dtype, T => Array::scalar(self.cast::<T>()))
    }
}

/// `ob` as an array: an `array` (cast to `dtype` if given), a Python scalar,
/// a nested list or tuple, or anything NumPy can convert.
///
/// Nested sequences deeper than `weft::shape::MAX_NDIM` (a list that
/// contains itself, a list nested 200,000 deep) raise `ValueError`: every
/// walk here is bounded by that depth, so none can overflow the stack.
pub fn to_array(ob: &Bound<'_, PyAny>, dtype: Option<Dtype>) -> PyResult<Array> {
    no_panic(|| to_array_at(ob, dtype, 0))
}

/// `to_array` of an element found `depth` levels down a nested sequence.
fn to_array_at(ob: &Bound<'_, PyAny>, dtype: Option<Dtype>, depth: usize) -> PyResult<Array> {
    let py = ob.py();
    if let Ok(a) = ob.cast::<PyArray>() {
        let a = a.get().array();
        return match dtype {
            Some(d) => ops::astype(&a, d).py(),
            None => Ok(a),
        };
    }
    if let Some(s) = Scalar::extract(ob)? {
        return Ok(s.to_array(dtype.unwrap_or_else(|| s.default_dtype())));
    }
    if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
        return from_sequence(ob, dtype, depth);
    }
    if ob.is_instance_of::<PyBytes>() || ob.is_instance_of::<PyByteArray>() {
        // A bytes-like object is its bytes, as uint8 (MLX's reading of
        // the buffer protocol).
        let v: Vec<u8> = ob.extract()?;
        let n = v.len();
        let a = Array::from_vec(v, &[n]).py()?;
        return match dtype {
            Some(d) => ops::astype(&a, d).py(),
            None => Ok(a),
        };
    }
    if ob.hasattr("__array_interface__")? || ob.hasattr("__array__")? || ob.is_instance_of::<pyo3::types::PyMemoryView>() {
        let a = from_numpy(ob)?;
        return match dtype {
            Some(d) if d != a.dtype() => {
                let a = ops::astype(&a, d).py()?;
                py.detach(|| a.eval()).map_err(eval_error)?;
                Ok(a)
            }
            _ => Ok(a),
        };
    }
    Err(PyTypeError::new_err(format!(
        "cannot make an array from an object of type {}",
        ob.get_type().name()?
    )))
}

/// A nested list of scalars was found to hold arrays: stack them instead.
struct HoldsArrays;

/// Walks a nested sequence: its shape, and its scalars in row-major order.
fn walk(
    ob: &Bound<'_, PyAny>,
    depth: usize,
    shape: &mut Vec<usize>,
    leaf_depth: &mut Option<usize>,
    leaves: &mut Vec<Scalar>,
) -> PyResult<Result<(), HoldsArrays>> {
    let ragged = || PyValueError::new_err("Initialization encountered non-uniform length.");
    if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
        if depth >= MAX_NDIM {
            return Err(too_deep());
        }
        let seq = ob.cast::<PySequence>()?;
        let n = seq.len()?;
        if shape.len() == depth {
            if leaf_depth.is_some_and(|d| d <= depth) {
                return Err(ragged());
            }
            shape.push(n);
        } else if shape[depth] != n {
            return Err(ragged());
        }
        for item in seq.try_iter()? {
            if walk(&item?, depth + 1, shape, leaf_depth, leaves)?.is_err() {
                return Ok(Err(HoldsArrays));
            }
        }
        return Ok(Ok(()));
    }
    let Some(s) = Scalar::extract(ob)? else {
        if ob.is_instance_of::<PyArray>() || ob.hasattr("__array_interface__")? {
            return Ok(Err(HoldsArrays));
        }
        // MLX: a list holding something that is not a number is a ValueError.
        return Err(PyValueError::new_err(format!(
            "cannot make an array element from an object of type {}",
            ob.get_type().name()?
        )));
    };
    match *leaf_depth {
        None if shape.len() > depth => return Err(ragged()),
        None => *leaf_depth = Some(depth),
        Some(d) if d != depth => return Err(ragged()),
        Some(_) => {}
    }
    leaves.push(s);
    Ok(Ok(()))
}

/// A sequence nested deeper than an array may have dimensions (or one that
/// contains itself).
fn too_deep() -> PyErr {
    PyValueError::new_err(format!(
        "a nested sequence deeper than {MAX_NDIM} levels (or one that contains itself) cannot be an array"
    ))
}

fn from_sequence(ob: &Bound<'_, PyAny>, dtype: Option<Dtype>, depth: usize) -> PyResult<Array> {
    let mut leaves = Vec::new();
    // `depth` levels are used above `ob` (arrays stacked in outer lists).
    let mut outer = vec![0; depth];
    if walk(ob, depth, &mut outer, &mut None, &mut leaves)?.is_err() {
        return stack_sequence(ob, dtype, depth);
    }
    let shape = outer.split_off(depth);
    let dtype = dtype.unwrap_or_else(|| {
        let any = |f: fn(&Scalar) -> bool| leaves.iter().any(f);
        if any(|s| matches!(s, Scalar::Complex(..))) {
            Dtype::C64
        } else if leaves.is_empty() || any(|s| matches!(s, Scalar::Float(_))) {
            Dtype::F32
        } else if any(|s| matches!(s, Scalar::Int(_))) {
            if any(|s| s.default_dtype() == Dtype::I64) { Dtype::I64 } else { Dtype::I32 }
        } else {
            Dtype::Bool
        }
    });
    with_dtype!(dtype, T => Array::from_vec(leaves.iter().map(|s| s.cast::<T>()).collect::<Vec<T>>(), &shape).py())
}

/// A list whose elements are arrays (or hold them): the elements stacked
/// along a new first axis.
fn stack_sequence(ob: &Bound<'_, PyAny>, dtype: Option<Dtype>, depth: usize) -> PyResult<Array> {
    let parts = ob
        .cast::<PySequence>()?
        .try_iter()?
        .map(|item| to_array_at(&item?, dtype, depth + 1))
        .collect::<PyResult<Vec<_>>>()?;
    if parts.iter().any(|p| p.shape() != parts[0].shape()) {
        return Err(PyValueError::new_err("Initialization encountered non-uniform length."));
    }
    ops::stack(&parts, 0).py()
}

/// A NumPy array (or anything `numpy.asarray` accepts) as an array, with
/// MLX's dtype rules: float64 becomes float32, complex128 complex64.
fn from_numpy(ob: &Bound<'_, PyAny>) -> PyResult<Array> {
    let py = ob.py();
    let np = py.import("numpy")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("order", "C")?;
    let mut arr = np.call_method("asarray", (ob,), Some(&kwargs))?;
    let mut name: String = arr.getattr("dtype")?.getattr("name")?.extract()?;
    if name == "complex128" {
        // weft has no complex128: NumPy rounds each part to float32.
        arr = arr.call_method1("astype", ("complex64",))?;
        name = "complex64".into();
    }
    let Some(dtype) = Dtype::from_name(&name) else {
        return Err(PyValueError::new_err(format!("cannot convert a NumPy array of dtype {name} to a weft array")));
    };
    let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
    if let Some(&d) = shape.iter().find(|&&d| d > i32::MAX as usize) {
        // MLX's limit (and message): shapes are 32-bit there.
        return Err(pyo3::exceptions::PyOverflowError::new_err(format!(
            "Shape dimension {d} is outside the supported range [-2147483648, 2147483647]. \
             MLX currently uses 32-bit integers for shape dimensions."
        )));
    }
    let bytes = arr.call_method0("tobytes")?;
    let bytes = bytes.cast::<PyBytes>()?.as_bytes();
    // Reserved before it is allocated (MemoryError past the limit); bool
    // bytes that are not 0/1 read as True, as in NumPy, never as an
    // invalid Rust bool.
    let a = copy_detached(py, bytes, |b| Array::from_bytes(b, dtype, &shape)).py()?;
    if dtype == Dtype::F64 {
        let a = ops::astype(&a, Dtype::F32).py()?;
        py.detach(|| a.eval()).map_err(eval_error)?;
        return Ok(a);
    }
    Ok(a)
}

/// `f(bytes)` with the GIL released.
fn copy_detached<R: Send>(py: Python<'_>, bytes: &[u8], f: impl FnOnce(&[u8]) -> R + Send) -> R {
    let (ptr, len) = (bytes.as_ptr() as usize, bytes.len());
    py.detach(move || {
        // SAFETY: `bytes` is the buffer of a Python `bytes` object the caller
        // holds a reference to for the whole call, and `bytes` objects are
        // immutable: the memory stays valid and unchanged without the GIL.
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        f(bytes)
    })
}

/// The bytes of `v`'s elements.
fn as_bytes<T: CpuElement>(v: &[T]) -> &[u8] {
    // SAFETY: element types are plain data without padding; the slice
    // covers exactly the memory of `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The elements of `a` (evaluating it first), with the GIL released.
pub fn read<T: CpuElement>(py: Python<'_>, a: &Array) -> PyResult<Vec<T>> {
    py.detach(|| weft::catch_panic(|| a.to_vec::<T>())).map_err(eval_error)
}

/// One element as a Python `bool`, `int` or `float`, by dtype.
fn py_scalar<'py, T: Element>(py: Python<'py>, v: T, dtype: Dtype) -> PyResult<Bound<'py, PyAny>> {
    if let Some(z) = (&v as &dyn std::any::Any).downcast_ref::<weft::Complex64>() {
        return Ok(pyo3::types::PyComplex::from_doubles(py, z.re() as f64, z.im() as f64).into_any());
    }
    Ok(if dtype == Dtype::Bool {
        PyBool::new(py, v.to_i64() != 0).to_owned().into_any()
    } else if dtype.is_float() {
        PyFloat::new(py, v.to_f64()).into_any()
    } else if dtype == Dtype::U64 {
        // `to_i64` keeps a u64's bits; read them back unsigned.
        (v.to_i64() as u64).into_pyobject(py)?.into_any()
    } else {
        v.to_i64().into_pyobject(py)?.into_any()
    })
}

/// `a.item()`: the one element as a Python scalar.
pub fn item<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    if a.size() != 1 {
        return Err(PyValueError::new_err("item can only be called on arrays of size 1."));
    }
    with_dtype!(a.dtype(), T => py_scalar(py, read::<T>(py, a)?[0], a.dtype()))
}

/// `a.tolist()`: nested lists of Python scalars (a scalar for a 0-d array).
pub fn tolist<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    fn nest<'py, T: Element>(py: Python<'py>, v: &[T], shape: &[usize], dtype: Dtype) -> PyResult<Bound<'py, PyAny>> {
        match shape {
            [] => py_scalar(py, v[0], dtype),
            [_] => Ok(PyList::new(py, v.iter().map(|&x| py_scalar(py, x, dtype)).collect::<PyResult<Vec<_>>>()?)?.into_any()),
            [n, rest @ ..] => {
                let step: usize = rest.iter().product();
                let items = (0..*n)
                    .map(|i| nest(py, &v[i * step..(i + 1) * step], rest, dtype))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyList::new(py, items)?.into_any())
            }
        }
    }
    with_dtype!(a.dtype(), T => nest(py, &read::<T>(py, a)?, a.shape(), a.dtype()))
}

/// The elements of `a` in row-major order as native-endian bytes
/// (evaluating it; the GIL is released meanwhile).
pub fn native_bytes(py: Python<'_>, a: &Array) -> PyResult<Vec<u8>> {
    with_dtype!(a.dtype(), T => Ok(as_bytes(&read::<T>(py, a)?).to_vec()))
}

/// `numpy.array(a)`: a new, writable NumPy array with `a`'s dtype.
pub fn to_numpy<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    if a.dtype() == Dtype::BF16 {
        return Err(PyValueError::new_err(
            "NumPy has no bfloat16: convert the array to float32 or float16 first",
        ));
    }
    let np = py.import("numpy")?;
    let bytes = with_dtype!(a.dtype(), T => {
        let v = read::<T>(py, a)?;
        let src = as_bytes(&v);
        let out = PyByteArray::new_with(py, src.len(), |_| Ok(()))?;
        let (dst, src, n) = (out.data() as usize, src.as_ptr() as usize, src.len());
        // SAFETY: `out` was just made here and no Python code has seen it, so
        // nothing can resize or read it while the GIL is released; it holds
        // `n` bytes, as `v` (alive until the end of this block) does.
        py.detach(move || unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) });
        out
    });
    let flat = np.call_method1("frombuffer", (bytes, a.dtype().name()))?;
    flat.call_method1("reshape", (PyTuple::new(py, a.shape())?,))
}
