//! `weft.core.random`: mlx.core.random's functions. Keys are `uint32[2]`
//! arrays; a call without `key=` splits the calling thread's default key,
//! which `seed` restarts (for every thread).

use crate::args::Shape;
use crate::array::PyArray;
use crate::convert::{to_array, Scalar};
use crate::device::{on_stream, StreamOrDevice};
use crate::dtype::PyDtype;
use crate::errors::OpResult;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use weft::shape::broadcast_shapes;
use weft::{ops, random, Array, Dtype};

type Any<'py> = Bound<'py, PyAny>;
type Stream = Option<StreamOrDevice>;

fn key_of(key: Option<&Any<'_>>) -> PyResult<Option<Array>> {
    key.map(|k| to_array(k, None)).transpose()
}

/// A bound (`low`, `high`, `loc`, `scale`, `p`): a Python number, or an array.
enum Param {
    Number(f64),
    Array(Array),
}

fn param(ob: &Any<'_>, what: &str) -> PyResult<Param> {
    match Scalar::extract(ob)? {
        Some(Scalar::Bool(_)) => Err(PyTypeError::new_err(format!("{what} must be a number or an array, not a bool"))),
        Some(Scalar::Int(i)) => Ok(Param::Number(i as f64)),
        Some(Scalar::Float(f)) => Ok(Param::Number(f)),
        Some(Scalar::Complex(..)) => Err(PyTypeError::new_err(format!("{what} must be a real number or an array, not a complex"))),
        None => Ok(Param::Array(to_array(ob, None)?)),
    }
}

impl Param {
    fn array(&self, dtype: Dtype) -> PyResult<Array> {
        match self {
            Param::Number(v) => Ok(Scalar::Float(*v).to_array(dtype)),
            Param::Array(a) => ops::astype(a, dtype).py(),
        }
    }
    fn shape(&self) -> &[usize] {
        match self {
            Param::Number(_) => &[],
            Param::Array(a) => a.shape(),
        }
    }
}

/// Checks that parameters of these shapes broadcast to `shape` (mlx.core's
/// rule: the output has exactly `shape`).
fn check_fits(op: &str, shape: &[usize], params: &[&[usize]]) -> PyResult<()> {
    for p in params {
        if !broadcast_shapes(p, shape).is_ok_and(|s| s == shape) {
            return Err(PyValueError::new_err(format!(
                "{op}: a parameter of shape {p:?} does not broadcast to the shape {shape:?}"
            )));
        }
    }
    Ok(())
}

/// Restarts the default key of every thread from `seed`.
#[pyfunction]
fn seed(seed: u64) {
    random::seed(seed)
}

/// A key (`uint32[2]`) from a seed.
#[pyfunction]
fn key(seed: u64) -> PyArray {
    random::key(seed).into()
}

/// `num` new keys (`uint32[num, 2]`) from `key`.
#[pyfunction]
#[pyo3(signature = (key, num = 2, *, stream = None))]
fn split(key: &Any<'_>, num: usize, stream: Stream) -> PyResult<PyArray> {
    on_stream(&stream, || random::split(&to_array(key, None)?, num).py().map(PyArray::from))
}

/// Uniformly random bits: `uint32` words (`width=4`, the only width weft has).
#[pyfunction]
#[pyo3(signature = (shape = Shape(vec![]), width = 4, key = None, *, stream = None))]
fn bits(shape: Shape, width: usize, key: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    if width != 4 {
        return Err(PyValueError::new_err(format!("bits: weft only makes 4-byte (uint32) words, got width={width}")));
    }
    let key = key_of(key)?;
    on_stream(&stream, || random::bits(&shape.dims()?, key.as_ref()).py().map(PyArray::from))
}

/// Uniform samples in `[low, high)`; `low` and `high` may be arrays that
/// broadcast to `shape`.
#[pyfunction]
#[pyo3(signature = (low = None, high = None, shape = Shape(vec![]), dtype = Some(PyDtype(Dtype::F32)), key = None, *, stream = None))]
fn uniform(
    low: Option<&Any<'_>>,
    high: Option<&Any<'_>>,
    shape: Shape,
    dtype: Option<PyDtype>,
    key: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    let low = low.map(|l| param(l, "uniform: low")).transpose()?.unwrap_or(Param::Number(0.0));
    let high = high.map(|h| param(h, "uniform: high")).transpose()?.unwrap_or(Param::Number(1.0));
    let key = key_of(key)?;
    let (shape, dtype) = (shape.dims()?, float_or_default(dtype));
    on_stream(&stream, || {
        if let (Param::Number(l), Param::Number(h)) = (&low, &high) {
            // MLX gives `low` for an empty range.
            if l == h && l.is_finite() {
                return ops::broadcast_to(&Scalar::Float(*l).to_array(dtype), &shape).py().map(PyArray::from);
            }
            return random::uniform(*l, *h, &shape, dtype, key.as_ref()).py().map(PyArray::from);
        }
        if !dtype.is_float() {
            return Err(PyValueError::new_err(format!("uniform needs a float dtype, got {dtype}")));
        }
        check_fits("uniform", &shape, &[low.shape(), high.shape()])?;
        // low + (high - low) * u, computed in float32 at least.
        let wide = Dtype::promote(dtype, Dtype::F32);
        let u = random::uniform(0.0, 1.0, &shape, wide, key.as_ref()).py()?;
        let (l, h) = (low.array(wide)?, high.array(wide)?);
        let x = ops::add(&l, &ops::multiply(&ops::subtract(&h, &l).py()?, &u).py()?).py()?;
        ops::astype(&ops::broadcast_to(&x, &shape).py()?, dtype).py().map(PyArray::from)
    })
}

/// Normal samples with mean `loc` and standard deviation `scale` (numbers,
/// or arrays that broadcast to `shape`).
#[pyfunction]
#[pyo3(signature = (shape = Shape(vec![]), dtype = Some(PyDtype(Dtype::F32)), loc = None, scale = None, key = None, *, stream = None))]
fn normal(
    shape: Shape,
    dtype: Option<PyDtype>,
    loc: Option<&Any<'_>>,
    scale: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    if dtype.as_ref().is_some_and(|d| d.0.is_complex()) {
        return complex_normal(shape, loc, scale, key, stream);
    }
    let loc = loc.map(|l| param(l, "normal: loc")).transpose()?.unwrap_or(Param::Number(0.0));
    let scale = scale.map(|s| param(s, "normal: scale")).transpose()?.unwrap_or(Param::Number(1.0));
    let key = key_of(key)?;
    let (shape, dtype) = (shape.dims()?, float_or_default(dtype));
    on_stream(&stream, || {
        if let (Param::Number(l), Param::Number(s)) = (&loc, &scale) {
            return random::normal(&shape, dtype, *l, *s, key.as_ref()).py().map(PyArray::from);
        }
        if !dtype.is_float() {
            return Err(PyValueError::new_err(format!("normal needs a float dtype, got {dtype}")));
        }
        check_fits("normal", &shape, &[loc.shape(), scale.shape()])?;
        let wide = Dtype::promote(dtype, Dtype::F32);
        let z = random::normal(&shape, wide, 0.0, 1.0, key.as_ref()).py()?;
        let x = ops::add(&loc.array(wide)?, &ops::multiply(&scale.array(wide)?, &z).py()?).py()?;
        ops::astype(&ops::broadcast_to(&x, &shape).py()?, dtype).py().map(PyArray::from)
    })
}

/// `normal` with `dtype=complex64`: `loc + scale * z` for standard complex
/// normal `z` (`loc` and `scale` may be complex numbers or arrays that
/// broadcast to `shape`).
fn complex_normal(shape: Shape, loc: Option<&Any<'_>>, scale: Option<&Any<'_>>, key: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    let loc = loc.map(|l| to_array(l, None)).transpose()?;
    let scale = scale.map(|s| to_array(s, None)).transpose()?;
    let key = key_of(key)?;
    let shape = shape.dims()?;
    let fits: Vec<&[usize]> = loc.iter().chain(scale.iter()).map(|a| a.shape()).collect();
    check_fits("normal", &shape, &fits)?;
    on_stream(&stream, || {
        let mut z = random::complex_normal(&shape, key.as_ref()).py()?;
        if let Some(s) = &scale {
            z = ops::multiply(&z, s).py()?;
        }
        if let Some(l) = &loc {
            z = ops::add(&z, l).py()?;
        }
        ops::astype(&z, Dtype::C64).py().map(PyArray::from)
    })
}

/// `mx.random.state`: the random state compiled functions name as implicit
/// state (`compile(f, inputs=mx.random.state, outputs=mx.random.state)`).
/// One object shared by all threads; as a sequence it holds one item, the
/// calling thread's default key (each thread has its own: see
/// `weft::ops::random`). Setting item 0 replaces this thread's key.
#[pyclass(module = "weft.core.random", frozen, sequence)]
struct RandomState;

#[pymethods]
impl RandomState {
    fn __len__(&self) -> usize {
        1
    }

    fn __getitem__(&self, i: isize) -> PyResult<PyArray> {
        match i {
            0 | -1 => Ok(random::current_key().into()),
            _ => Err(pyo3::exceptions::PyIndexError::new_err(format!("random.state has one item (the key), got index {i}"))),
        }
    }

    fn __setitem__(&self, i: isize, key: &Any<'_>) -> PyResult<()> {
        if i != 0 && i != -1 {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!("random.state has one item (the key), got index {i}")));
        }
        random::set_current_key(&to_array(key, None)?).py()
    }

    fn __repr__(&self) -> String {
        "weft.core.random.state".to_string()
    }
}

/// A bound of `randint`: a Python int, or an integer array of one element
/// (read, which waits for it). Bounds that vary per element are refused.
fn int_bound(ob: &Any<'_>, what: &str) -> PyResult<i64> {
    if let Some(Scalar::Int(i)) = Scalar::extract(ob)? {
        return Ok(i);
    }
    if let Ok(a) = ob.cast::<PyArray>() {
        let a = a.get().array();
        if a.size() == 1 && !a.dtype().is_float() && a.dtype() != Dtype::Bool {
            let v = ops::astype(&ops::reshape(&a, &[]).py()?, Dtype::I64).py()?.to_vec::<i64>().map_err(crate::errors::eval_error)?;
            return Ok(v[0]);
        }
    }
    Err(PyTypeError::new_err(format!(
        "randint: {what} must be a Python int or a one-element integer array (weft does not take per-element bounds), got {}",
        ob.get_type().name()?
    )))
}

/// Uniform integers in `[low, high)`.
#[pyfunction]
#[pyo3(signature = (low, high, shape = Shape(vec![]), dtype = PyDtype(Dtype::I32), key = None, *, stream = None))]
fn randint(
    low: &Any<'_>,
    high: &Any<'_>,
    shape: Shape,
    dtype: PyDtype,
    key: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    let (low, high) = (int_bound(low, "low")?, int_bound(high, "high")?);
    let key = key_of(key)?;
    on_stream(&stream, || random::randint(low, high, &shape.dims()?, dtype.0, key.as_ref()).py().map(PyArray::from))
}

/// `True` with probability `p` (a number or an array that broadcasts to
/// `shape`; the output has `p`'s shape when `shape` is None).
#[pyfunction]
#[pyo3(signature = (p = None, shape = None, key = None, *, stream = None))]
fn bernoulli(p: Option<&Any<'_>>, shape: Option<Shape>, key: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    let p_obj = p;
    let p = p.map(|p| param(p, "bernoulli: p")).transpose()?.unwrap_or(Param::Number(0.5));
    // As MLX: a probability is a float (a Python int or an integer array is refused).
    let integral = match (&p, p_obj) {
        (Param::Number(_), Some(ob)) => matches!(Scalar::extract(ob)?, Some(Scalar::Int(_))),
        (Param::Array(a), _) => !a.dtype().is_float(),
        _ => false,
    };
    if integral {
        return Err(PyValueError::new_err("bernoulli: the probability p must be a float (or a float array)"));
    }
    let key = key_of(key)?;
    let shape = shape.map(|s| s.dims()).transpose()?;
    on_stream(&stream, || {
        let p = p.array(Dtype::F32)?;
        if let Some(s) = &shape {
            check_fits("bernoulli", s, &[p.shape()])?;
        }
        random::bernoulli(&p, shape.as_deref(), key.as_ref()).py().map(PyArray::from)
    })
}

/// Samples (`uint32` indices) from the categorical distributions whose
/// unnormalized log-probabilities lie along `axis` of `logits`. `shape`
/// gives the output shape (the other axes of `logits` broadcast to it);
/// `num_samples` draws that many from each distribution, in a last axis.
#[pyfunction]
#[pyo3(signature = (logits, axis = -1, shape = None, num_samples = None, key = None, *, stream = None))]
fn categorical(
    logits: &Any<'_>,
    axis: isize,
    shape: Option<Shape>,
    num_samples: Option<usize>,
    key: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    if shape.is_some() && num_samples.is_some() {
        return Err(PyValueError::new_err("categorical: at most one of shape or num_samples can be given"));
    }
    let key = key_of(key)?;
    let shape = shape.map(|s| s.dims()).transpose()?;
    on_stream(&stream, || {
        let logits = to_array(logits, None)?;
        let n = logits.ndim() as isize;
        let ax = if axis < 0 { axis + n } else { axis };
        if ax < 0 || ax >= n {
            return Err(PyValueError::new_err(format!("categorical: axis {axis} is out of range for {n} dimensions")));
        }
        if shape.is_none() && num_samples.is_none() {
            return random::categorical(&logits, ax, key.as_ref()).py().map(PyArray::from);
        }
        // The distributions along a last axis, broadcast to the batch shape.
        let last = ops::transpose(&logits, &move_to_end(n as usize, ax as usize)).py()?;
        let batch: Vec<usize> = last.shape()[..last.ndim() - 1].to_vec();
        let classes = last.shape()[last.ndim() - 1];
        let (target, src) = match (&shape, num_samples) {
            (Some(s), _) => {
                check_fits("categorical", s, &[batch.as_slice()])?;
                (s.clone(), last)
            }
            (None, Some(k)) => {
                let mut t = batch.clone();
                t.push(k);
                (t, ops::expand_dims(&last, -2).py()?)
            }
            (None, None) => unreachable!("handled above"),
        };
        let full: Vec<usize> = target.iter().copied().chain([classes]).collect();
        let src = ops::broadcast_to(&src, &full).py()?;
        random::categorical(&src, -1, key.as_ref()).py().map(PyArray::from)
    })
}

/// The permutation of `ndim` axes that moves axis `ax` to the end.
/// `dtype=None` means float32, as in mlx.core.random.
fn float_or_default(dtype: Option<PyDtype>) -> Dtype {
    dtype.map_or(Dtype::F32, |d| d.0)
}

/// Uniform samples in the open interval `(0, 1)` in float32 (at least), so
/// that logs of them and of `1 - u` are finite.
fn open_unit(shape: &[usize], dtype: Dtype, key: Option<&Array>) -> PyResult<Array> {
    let wide = Dtype::promote(dtype, Dtype::F32);
    let tiny = f64::from(f32::MIN_POSITIVE);
    random::uniform(tiny, 1.0, shape, wide, key).py()
}

/// Gumbel samples: `-log(-log(u))`.
#[pyfunction]
#[pyo3(signature = (shape = Shape(vec![]), dtype = Some(PyDtype(Dtype::F32)), key = None, stream = None))]
fn gumbel(shape: Shape, dtype: Option<PyDtype>, key: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    let key = key_of(key)?;
    let (shape, dtype) = (shape.dims()?, float_or_default(dtype));
    if !dtype.is_float() {
        return Err(PyValueError::new_err(format!("gumbel needs a float dtype, got {dtype}")));
    }
    on_stream(&stream, || {
        let u = open_unit(&shape, dtype, key.as_ref())?;
        let g = ops::negative(&ops::log(&ops::negative(&ops::log(&u).py()?).py()?).py()?).py()?;
        ops::astype(&g, dtype).py().map(PyArray::from)
    })
}

/// Laplace samples with location `loc` and scale `scale`: the inverse CDF
/// `loc - scale * sign(v) * log(1 - |v|)` of `v` uniform in `(-1, 1)`.
#[pyfunction]
#[pyo3(signature = (shape = Shape(vec![]), dtype = Some(PyDtype(Dtype::F32)), loc = 0.0, scale = 1.0, key = None, stream = None))]
fn laplace(shape: Shape, dtype: Option<PyDtype>, loc: f64, scale: f64, key: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    let key = key_of(key)?;
    let (shape, dtype) = (shape.dims()?, float_or_default(dtype));
    if !dtype.is_float() {
        return Err(PyValueError::new_err(format!("laplace needs a float dtype, got {dtype}")));
    }
    on_stream(&stream, || {
        let u = open_unit(&shape, dtype, key.as_ref())?;
        let wide = u.dtype();
        let c = |v: f64| Scalar::Float(v).to_array(wide);
        let v = ops::subtract(&ops::multiply(&u, &c(2.0)).py()?, &c(1.0)).py()?;
        let tail = ops::log1p(&ops::negative(&ops::abs(&v).py()?).py()?).py()?;
        // The standard sample in `dtype`, then scaled and shifted in `dtype`
        // (as MLX), so `laplace(loc, scale)` is `loc + scale * laplace()` exactly.
        let z = ops::astype(&ops::negative(&ops::multiply(&ops::sign(&v).py()?, &tail).py()?).py()?, dtype).py()?;
        let d = |v: f64| Scalar::Float(v).to_array(dtype);
        ops::add(&ops::multiply(&z, &d(scale)).py()?, &d(loc)).py().map(PyArray::from)
    })
}

/// Normal samples restricted to `[lower, upper]` (numbers or arrays that
/// broadcast together, and to `shape` when given): the inverse normal CDF
/// of a uniform draw between the CDF at the bounds.
#[pyfunction]
#[pyo3(signature = (lower, upper, shape = None, dtype = Some(PyDtype(Dtype::F32)), key = None, stream = None))]
fn truncated_normal(
    lower: &Any<'_>,
    upper: &Any<'_>,
    shape: Option<Shape>,
    dtype: Option<PyDtype>,
    key: Option<&Any<'_>>,
    stream: Stream,
) -> PyResult<PyArray> {
    let dtype = float_or_default(dtype);
    if !dtype.is_float() {
        return Err(PyValueError::new_err(format!("truncated_normal needs a float dtype, got {dtype}")));
    }
    let wide = Dtype::promote(dtype, Dtype::F32);
    let lo = param(lower, "truncated_normal: lower")?.array(wide)?;
    let hi = param(upper, "truncated_normal: upper")?.array(wide)?;
    let key = key_of(key)?;
    let shape = match shape {
        Some(s) => {
            let s = s.dims()?;
            check_fits("truncated_normal", &s, &[lo.shape(), hi.shape()])?;
            s
        }
        None => broadcast_shapes(lo.shape(), hi.shape()).py()?,
    };
    on_stream(&stream, || {
        let c = |v: f64| Scalar::Float(v).to_array(wide);
        // Phi(x) = (1 + erf(x / sqrt 2)) / 2, in erf's terms: draw erf(z / sqrt 2) between the bounds'.
        let e = |b: &Array| ops::erf(&ops::multiply(b, &c(std::f64::consts::FRAC_1_SQRT_2)).py()?).py();
        let (el, eh) = (e(&lo)?, e(&hi)?);
        let u = random::uniform(0.0, 1.0, &shape, wide, key.as_ref()).py()?;
        let t = ops::add(&el, &ops::multiply(&ops::subtract(&eh, &el).py()?, &u).py()?).py()?;
        // Keep erfinv's argument inside (-1, 1).
        let lim = c(1.0 - f64::from(f32::EPSILON));
        let t = ops::clip(&t, Some(&ops::negative(&lim).py()?), Some(&lim)).py()?;
        let z = ops::multiply(&ops::erfinv(&t).py()?, &c(std::f64::consts::SQRT_2)).py()?;
        // As MLX: bounds in the wrong order give `lower` everywhere.
        let z = ops::maximum(&ops::minimum(&z, &hi).py()?, &lo).py()?;
        ops::astype(&ops::broadcast_to(&z, &shape).py()?, dtype).py().map(PyArray::from)
    })
}

/// A random permutation of `arange(x)` (an int), or of `x` along `axis`.
#[pyfunction]
#[pyo3(signature = (x, axis = 0, key = None, stream = None))]
fn permutation(x: &Any<'_>, axis: isize, key: Option<&Any<'_>>, stream: Stream) -> PyResult<PyArray> {
    let key = key_of(key)?;
    on_stream(&stream, || {
        let a = match x.extract::<i64>() {
            Ok(n) if !x.is_instance_of::<PyArray>() => {
                if n < 0 {
                    return Err(PyValueError::new_err(format!("permutation: n must be non-negative, got {n}")));
                }
                ops::arange(0.0, n as f64, 1.0, Dtype::I32).py()?
            }
            _ => to_array(x, None)?,
        };
        let ax = weft::shape::normalize_axis(axis, a.ndim()).py()?;
        // Sorting random keys gives a uniformly random order.
        let keys = random::bits(&[a.shape()[ax]], key.as_ref()).py()?;
        let order = ops::argsort(&keys, Some(0)).py()?;
        ops::take(&a, &order, Some(ax as isize)).py().map(PyArray::from)
    })
}

fn move_to_end(ndim: usize, ax: usize) -> Vec<isize> {
    (0..ndim).filter(|&d| d != ax).chain([ax]).map(|d| d as isize).collect()
}

/// Registers `weft.core.random` (importable as `weft.core.random` too).
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = parent.py();
    // As in MLX, the default keys start from the time: a fresh process
    // draws new numbers unless it calls `seed`.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    random::seed(now);
    let m = PyModule::new(py, "random")?;
    m.add("__doc__", "Random numbers with explicit keys, as mlx.core.random.")?;
    m.add_function(wrap_pyfunction!(seed, &m)?)?;
    m.add_function(wrap_pyfunction!(key, &m)?)?;
    m.add_function(wrap_pyfunction!(split, &m)?)?;
    m.add_function(wrap_pyfunction!(bits, &m)?)?;
    m.add_function(wrap_pyfunction!(uniform, &m)?)?;
    m.add_function(wrap_pyfunction!(normal, &m)?)?;
    m.add_function(wrap_pyfunction!(randint, &m)?)?;
    m.add_function(wrap_pyfunction!(bernoulli, &m)?)?;
    m.add_function(wrap_pyfunction!(categorical, &m)?)?;
    m.add_function(wrap_pyfunction!(gumbel, &m)?)?;
    m.add_function(wrap_pyfunction!(laplace, &m)?)?;
    m.add_function(wrap_pyfunction!(truncated_normal, &m)?)?;
    m.add_function(wrap_pyfunction!(permutation, &m)?)?;
    m.add_class::<RandomState>()?;
    m.add("state", Py::new(py, RandomState)?)?;
    crate::add_submodule(parent, &m, "random")
}
