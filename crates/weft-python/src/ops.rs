//! The module-level ops (`weft.core.add`, `weft.core.sum`, ...), with
//! mlx.core's names, signatures and defaults. Each takes `stream=` (a Stream
//! or a Device) and builds its graph on that stream. Binding a new weft op is
//! one function here and one line in `register`; unary ops of weft's op
//! table are bound from the table.

use crate::args::{operands, over, Axes, Shape};
use crate::array::PyArray;
use crate::convert::{to_array, Scalar};
use crate::device::{on_stream, StreamOrDevice};
use crate::dtype::PyDtype;
use crate::errors::OpResult;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use weft::{ops, Array, Dtype};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, /, *, stream = None))]
        pub fn $name(a: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
            on_stream(&stream, || ops::$name(&to_array(a, None)?).py().map(PyArray::from))
        }
    )*};
}

/// The weft.core function of every row of scope `core` in weft's unary op
/// table (`weft/src/primitive/unary.rs`), and `add_table_unary` to register
/// them: a new unary op needs nothing here.
macro_rules! table_unary {
    ($($(#[$doc:meta])* $Op:ident $name:ident $domain:ident $scope:ident;)*) => {
        $(table_unary_fn!($scope $name $(#[$doc])*);)*

        fn add_table_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(table_unary_add!($scope m $name);)*
            Ok(())
        }
    };
}

macro_rules! table_unary_fn {
    (core $name:ident $(#[$doc:meta])*) => {
        unary! { $(#[$doc])* $name }
    };
    (own $($rest:tt)*) => {};
}

macro_rules! table_unary_add {
    (core $m:ident $name:ident) => {
        $m.add_function(wrap_pyfunction!($name, $m)?)?;
    };
    (own $($rest:tt)*) => {};
}

weft::unary_ops!(table_unary);

macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, b, /, *, stream = None))]
        pub fn $name(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
            on_stream(&stream, || {
                let (a, b) = operands(a, b)?;
                ops::$name(&a, &b).py().map(PyArray::from)
            })
        }
    )*};
}

// `math.rs` binds its ops with the same two macros.
pub(crate) use {binary, unary};

binary! {
    add,
    subtract,
    multiply,
    /// True division: integers divide in float32.
    divide,
    /// `a // b`, rounded toward -inf.
    floor_divide,
    /// `a % b`, with the sign of `b`.
    remainder,
    /// `a ** b`.
    power,
    maximum,
    minimum,
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
}

/// `a @ b`.
#[pyfunction]
#[pyo3(signature = (a, b, /, *, stream = None))]
pub fn matmul(a: &Any<'_>, b: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::matmul(&to_array(a, None)?, &to_array(b, None)?).py().map(PyArray::from))
}

/// Elements of `x` where `condition` is true, of `y` elsewhere.
#[pyfunction(name = "where")]
#[pyo3(signature = (condition, x, y, /, *, stream = None))]
pub fn where_(condition: &Any<'_>, x: &Any<'_>, y: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (x, y) = operands(x, y)?;
        ops::where_(&to_array(condition, None)?, &x, &y).py().map(PyArray::from)
    })
}

macro_rules! reduction {
    ($($name:ident),* $(,)?) => {$(
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
        pub fn $name(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
            on_stream(&stream, || ops::$name(&to_array(a, None)?, over(axis), keepdims).py().map(PyArray::from))
        }
    )*};
}

reduction! { sum, prod, mean, max, min }

/// Index of the largest element along `axis` (of the flattened array when `None`).
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn argmax(a: &Any<'_>, axis: Option<isize>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::argmax(&to_array(a, None)?, axis, keepdims).py().map(PyArray::from))
}

/// Index of the smallest element along `axis` (of the flattened array when `None`).
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn argmin(a: &Any<'_>, axis: Option<isize>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::argmin(&to_array(a, None)?, axis, keepdims).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
pub fn reshape(a: &Any<'_>, shape: Shape, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::reshape(&to_array(a, None)?, &shape.0).py().map(PyArray::from))
}

/// Permutes the axes (reverses them when `axes` is None).
#[pyfunction]
#[pyo3(signature = (a, /, axes = None, *, stream = None))]
pub fn transpose(a: &Any<'_>, axes: Option<Vec<isize>>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        if axes.as_ref().is_some_and(|p| p.is_empty() && a.ndim() > 0) {
            return Err(pyo3::exceptions::PyValueError::new_err("transpose: axes do not match the array's dimensions"));
        }
        ops::transpose(&a, axes.as_deref().unwrap_or(&[])).py().map(PyArray::from)
    })
}

#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
pub fn broadcast_to(a: &Any<'_>, shape: Shape, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::broadcast_to(&to_array(a, None)?, &shape.dims()?).py().map(PyArray::from))
}

fn arrays_of(arrays: &Any<'_>) -> PyResult<Vec<Array>> {
    arrays.try_iter()?.map(|a| to_array(&a?, None)).collect()
}

/// Joins arrays along `axis` (flattened first when `axis` is None).
#[pyfunction]
#[pyo3(signature = (arrays, axis = Some(0), *, stream = None))]
pub fn concatenate(arrays: &Any<'_>, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::concatenate(&arrays_of(arrays)?, axis).py().map(PyArray::from))
}

/// Joins arrays of one shape along a new axis.
#[pyfunction]
#[pyo3(signature = (arrays, axis = 0, *, stream = None))]
pub fn stack(arrays: &Any<'_>, axis: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::stack(&arrays_of(arrays)?, axis).py().map(PyArray::from))
}

/// `a` with size-1 axes inserted at `axis` (positions in the result).
#[pyfunction]
#[pyo3(signature = (a, /, axis, *, stream = None))]
pub fn expand_dims(a: &Any<'_>, axis: Axes, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::expand_dims(&to_array(a, None)?, axis.to_vec()).py().map(PyArray::from))
}

/// Removes size-1 axes: those in `axis`, or all of them.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
pub fn squeeze(a: &Any<'_>, axis: Option<Axes>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::squeeze(&to_array(a, None)?, over(axis)).py().map(PyArray::from))
}

/// Axes `start_axis..=end_axis` merged into one.
#[pyfunction]
#[pyo3(signature = (a, /, start_axis = 0, end_axis = -1, *, stream = None))]
pub fn flatten(a: &Any<'_>, start_axis: isize, end_axis: isize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::flatten(&to_array(a, None)?, start_axis, end_axis).py().map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (a, /, dtype, *, stream = None))]
pub fn astype(a: &Any<'_>, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::astype(&to_array(a, None)?, dtype.0).py().map(PyArray::from))
}

/// `a * a`.
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
pub fn square(a: &Any<'_>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        ops::multiply(&a, &a).py().map(PyArray::from)
    })
}

fn filled(shape: &[usize], value: Scalar, dtype: Dtype) -> PyResult<Array> {
    ops::broadcast_to(&value.to_array(dtype), shape).py()
}

/// `value` in `dtype`, shaped like `a` through a node that reads `a`
/// (`where(a == a, v, v)`: `v` either way, NaN included), so that a
/// shapeless `compile` replays it at `a`'s new shape instead of keeping the
/// traced one (docs/transforms.md, "shapeless").
fn filled_like(a: &Array, value: Scalar, dtype: Dtype) -> PyResult<Array> {
    let v = value.to_array(dtype);
    ops::where_(&ops::equal(a, a).py()?, &v, &v).py()
}

#[pyfunction]
#[pyo3(signature = (shape, dtype = PyDtype(Dtype::F32), *, stream = None))]
pub fn zeros(shape: Shape, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || filled(&shape.dims()?, Scalar::Int(0), dtype.0).map(PyArray::from))
}

#[pyfunction]
#[pyo3(signature = (shape, dtype = PyDtype(Dtype::F32), *, stream = None))]
pub fn ones(shape: Shape, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || filled(&shape.dims()?, Scalar::Int(1), dtype.0).map(PyArray::from))
}

/// An array of `shape` filled with `vals` (a scalar, or an array broadcast to `shape`).
#[pyfunction]
#[pyo3(signature = (shape, vals, dtype = None, *, stream = None))]
pub fn full(shape: Shape, vals: &Any<'_>, dtype: Option<PyDtype>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let v = to_array(vals, dtype.map(|d| d.0))?;
        ops::broadcast_to(&v, &shape.dims()?).py().map(PyArray::from)
    })
}

/// An array of `a`'s shape (and dtype, unless `dtype` is given) filled with 0.
#[pyfunction]
#[pyo3(signature = (a, /, dtype = None, *, stream = None))]
pub fn zeros_like(a: &Any<'_>, dtype: Option<PyDtype>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        filled_like(&a, Scalar::Int(0), dtype.map_or(a.dtype(), |d| d.0)).map(PyArray::from)
    })
}

/// An array of `a`'s shape (and dtype, unless `dtype` is given) filled with 1.
#[pyfunction]
#[pyo3(signature = (a, /, dtype = None, *, stream = None))]
pub fn ones_like(a: &Any<'_>, dtype: Option<PyDtype>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        filled_like(&a, Scalar::Int(1), dtype.map_or(a.dtype(), |d| d.0)).map(PyArray::from)
    })
}

fn number(ob: &Any<'_>, what: &str) -> PyResult<Scalar> {
    match Scalar::extract(ob)? {
        Some(Scalar::Bool(_) | Scalar::Complex(..)) | None => Err(PyTypeError::new_err(format!("arange: {what} must be an int or a float"))),
        Some(s) => Ok(s),
    }
}

fn as_f64(s: Scalar) -> f64 {
    match s {
        Scalar::Bool(b) => b as u8 as f64,
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
        // `number` refuses complex values.
        Scalar::Complex(re, _) => re,
    }
}

/// `start, start + step, ...` below `stop`; `arange(stop)` starts at 0.
/// Ints give int32, any float gives float32, unless `dtype` is given.
#[pyfunction]
/// Given one bound (positionally or as `stop=`), it is the stop.
#[pyo3(signature = (start = None, stop = None, step = None, dtype = None, *, stream = None))]
pub fn arange(
    start: Option<&Any<'_>>,
    stop: Option<&Any<'_>>,
    step: Option<&Any<'_>>,
    dtype: Option<PyDtype>,
    stream: Stream,
) -> PyResult<PyArray> {
    on_stream(&stream, || {
        let (start, stop) = match (start, stop) {
            (Some(start), Some(stop)) => (number(start, "start")?, number(stop, "stop")?),
            (Some(only), None) | (None, Some(only)) => (Scalar::Int(0), number(only, "stop")?),
            (None, None) => return Err(pyo3::exceptions::PyTypeError::new_err("arange() needs a stop")),
        };
        let step = match step {
            Some(s) => number(s, "step")?,
            None => Scalar::Int(1),
        };
        let any_float = [start, stop, step].iter().any(|s| matches!(s, Scalar::Float(_)));
        // Ints outside int32 widen the inferred dtype to int64 (as mx.array's scalars).
        let wide = [start, stop, step].iter().any(|s| matches!(s, Scalar::Int(i) if i32::try_from(*i).is_err()));
        let inferred = if any_float { Dtype::F32 } else if wide { Dtype::I64 } else { Dtype::I32 };
        let dtype = dtype.map(|d| d.0).unwrap_or(inferred);
        ops::arange(as_f64(start), as_f64(stop), as_f64(step), dtype).py().map(PyArray::from)
    })
}

/// An `n x m` matrix with ones on diagonal `k`.
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = PyDtype(Dtype::F32), *, stream = None))]
pub fn eye(n: isize, m: Option<isize>, k: isize, dtype: PyDtype, stream: Stream) -> PyResult<PyArray> {
    let m = m.unwrap_or(n);
    if n < 0 || m < 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("eye: negative dimensions ({n}, {m})")));
    }
    on_stream(&stream, || ops::eye(n as usize, m as usize, k, dtype.0).py().map(PyArray::from))
}

/// `exp(a) / sum(exp(a))` over `axis` (every axis when None), computed
/// stably. `precise` is accepted for mlx.core compatibility: weft always
/// accumulates float16/bfloat16 in float32.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, precise = false, stream = None))]
pub fn softmax(a: &Any<'_>, axis: Option<Axes>, precise: bool, stream: Stream) -> PyResult<PyArray> {
    let _ = precise;
    on_stream(&stream, || ops::softmax(&to_array(a, None)?, over(axis)).py().map(PyArray::from))
}

/// `log(sum(exp(a), axis))`, computed stably.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn logsumexp(a: &Any<'_>, axis: Option<Axes>, keepdims: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::logsumexp(&to_array(a, None)?, over(axis), keepdims).py().map(PyArray::from))
}

/// Running sum along `axis` (of the flattened array when None); `reverse`
/// sums from the end, `inclusive=False` starts from 0.
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, reverse = false, inclusive = true, stream = None))]
pub fn cumsum(a: &Any<'_>, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::cumsum(&to_array(a, None)?, axis, reverse, inclusive).py().map(PyArray::from))
}

/// The other scans, with `cumsum`'s signature: running product, maximum,
/// minimum, and `log(cumsum(exp(a)))`.
macro_rules! scans {
    ($($name:ident),*) => {$(
        #[pyfunction]
        #[pyo3(signature = (a, /, axis = None, *, reverse = false, inclusive = true, stream = None))]
        pub fn $name(a: &Any<'_>, axis: Option<isize>, reverse: bool, inclusive: bool, stream: Stream) -> PyResult<PyArray> {
            on_stream(&stream, || ops::$name(&to_array(a, None)?, axis, reverse, inclusive).py().map(PyArray::from))
        }
    )*};
}
scans! { cumprod, cummax, cummin, logcumsumexp }

/// `a` sorted ascending along `axis` (the flattened array when None).
#[pyfunction]
#[pyo3(signature = (a, /, axis = Some(-1), *, stream = None))]
pub fn sort(a: &Any<'_>, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::sort(&to_array(a, None)?, axis).py().map(PyArray::from))
}

/// The (uint32) indices that sort `a` along `axis` (stable).
#[pyfunction]
#[pyo3(signature = (a, /, axis = Some(-1), *, stream = None))]
pub fn argsort(a: &Any<'_>, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::argsort(&to_array(a, None)?, axis).py().map(PyArray::from))
}

/// The `k` largest elements along `axis` (weft returns them in ascending
/// order; mlx.core does not promise an order).
#[pyfunction]
#[pyo3(signature = (a, /, k, axis = Some(-1), *, stream = None))]
pub fn topk(a: &Any<'_>, k: isize, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    let k = usize::try_from(k).map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("topk: k must be non-negative, got {k}")))?;
    on_stream(&stream, || ops::topk(&to_array(a, None)?, k, axis).py().map(PyArray::from))
}

/// Slices of `a` along `axis` (of the flattened array when None) at
/// `indices`; negative indices count from the end.
#[pyfunction]
#[pyo3(signature = (a, /, indices, axis = None, *, stream = None))]
pub fn take(a: &Any<'_>, indices: &Any<'_>, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::take(&to_array(a, None)?, &to_array(indices, None)?, axis).py().map(PyArray::from))
}

/// `a` at `indices` along `axis`, with `indices` broadcast against `a`
/// except along `axis` (both flattened when `axis` is None).
#[pyfunction]
#[pyo3(signature = (a, /, indices, axis = None, *, stream = None))]
pub fn take_along_axis(a: &Any<'_>, indices: &Any<'_>, axis: Option<isize>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || {
        ops::take_along_axis(&to_array(a, None)?, &to_array(indices, None)?, axis).py().map(PyArray::from)
    })
}

/// Integers read from a Python int, a sequence or an array (evaluated).
pub fn host_ints(ob: &Any<'_>, what: &str) -> PyResult<Vec<i64>> {
    if let Ok(i) = ob.extract::<i64>() {
        if !ob.is_instance_of::<PyArray>() {
            return Ok(vec![i]);
        }
    }
    let a = to_array(ob, None)?;
    if !a.dtype().is_integer() {
        return Err(PyTypeError::new_err(format!("{what} must be integers, got {}", a.dtype())));
    }
    let a = ops::astype(&a, Dtype::I64).py()?;
    crate::convert::read::<i64>(ob.py(), &a)
}

/// `a` with the block of `update`'s shape starting at `start_indices` (one
/// per axis in `axes`; 0 on other axes) replaced by `update`.
#[pyfunction]
#[pyo3(signature = (a, update, start_indices, axes, *, stream = None))]
pub fn slice_update(a: &Any<'_>, update: &Any<'_>, start_indices: &Any<'_>, axes: Axes, stream: Stream) -> PyResult<PyArray> {
    use pyo3::exceptions::PyValueError;
    let starts = host_ints(start_indices, "slice_update: start_indices")?;
    on_stream(&stream, || {
        let a = to_array(a, None)?;
        let update = to_array(update, None)?;
        let axes = axes.to_vec();
        if starts.len() != axes.len() {
            return Err(PyValueError::new_err(format!(
                "slice_update: {} start indices for {} axes",
                starts.len(),
                axes.len()
            )));
        }
        if update.ndim() > a.ndim() {
            return Err(PyValueError::new_err(format!(
                "slice_update: update of shape {:?} has more dimensions than the array {:?}",
                update.shape(),
                a.shape()
            )));
        }
        let n = a.ndim();
        let ushape: Vec<usize> = std::iter::repeat_n(1, n - update.ndim()).chain(update.shape().iter().copied()).collect();
        let mut start = vec![0i64; n];
        let mut seen = vec![false; n];
        for (&ax, &s) in axes.iter().zip(&starts) {
            let d = if ax < 0 { ax + n as isize } else { ax };
            if d < 0 || d >= n as isize || seen[d as usize] {
                return Err(PyValueError::new_err(format!("slice_update: invalid or repeated axis {ax} for {n} dimensions")));
            }
            seen[d as usize] = true;
            let len = a.shape()[d as usize] as i64;
            start[d as usize] = if s < 0 { s + len } else { s };
        }
        let mut args = Vec::with_capacity(n);
        for d in 0..n {
            let (s, len, dim) = (start[d], ushape[d] as i64, a.shape()[d] as i64);
            if s < 0 || s + len > dim {
                return Err(PyValueError::new_err(format!(
                    "slice_update: an update of shape {:?} at {start:?} does not fit in the array {:?}",
                    update.shape(),
                    a.shape()
                )));
            }
            args.push(weft::ops::SliceArg::range(s as isize, (s + len) as isize));
        }
        let shape: Vec<isize> = ushape.iter().map(|&d| d as isize).collect();
        let update = ops::reshape(&update, &shape).py()?;
        ops::slice_update(&a, &update, &args).py().map(PyArray::from)
    })
}

/// The operands of `einsum` as arrays.
fn einsum_operands(operands: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<Vec<Array>> {
    operands.iter().map(|o| to_array(&o, None)).collect()
}

/// Einstein summation over `operands` (NumPy's subscripts: letters, `...`,
/// `,` between operands, an optional `->` output).
#[pyfunction]
#[pyo3(signature = (subscripts, *operands, stream = None))]
pub fn einsum(subscripts: &str, operands: &Bound<'_, pyo3::types::PyTuple>, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || ops::einsum(subscripts, &einsum_operands(operands)?).py().map(PyArray::from))
}

/// The contraction order `einsum` follows (a list of index tuples) and a
/// summary of its cost.
#[pyfunction]
#[pyo3(signature = (subscripts, *operands))]
pub fn einsum_path<'py>(
    py: Python<'py>,
    subscripts: &str,
    operands: &Bound<'py, pyo3::types::PyTuple>,
) -> PyResult<(Vec<Bound<'py, pyo3::types::PyTuple>>, String)> {
    let (path, info) = ops::einsum_path(subscripts, &einsum_operands(operands)?).py()?;
    let steps = path.into_iter().map(|p| pyo3::types::PyTuple::new(py, p)).collect::<PyResult<Vec<_>>>()?;
    Ok((steps, info))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => {$( m.add_function(wrap_pyfunction!($f, m)?)?; )*};
    }
    add_table_unary(m)?;
    add!(square);
    add!(add, subtract, multiply, divide, floor_divide, remainder, power, maximum, minimum);
    add!(equal, not_equal, less, less_equal, greater, greater_equal, where_, matmul);
    add!(sum, prod, mean, max, min, argmax, argmin);
    add!(reshape, transpose, broadcast_to, concatenate, stack, expand_dims, squeeze, flatten, astype);
    add!(zeros, ones, full, zeros_like, ones_like, arange, eye);
    add!(softmax, logsumexp, cumsum, cumprod, cummax, cummin, logcumsumexp, sort, argsort, topk, take, take_along_axis, slice_update);
    add!(einsum, einsum_path);
    Ok(())
}
