//! `a[...]` and `a[...] = v`.
//!
//! Reading takes ints, slices (any step), `None`, `...` and integer arrays
//! (weft arrays, NumPy arrays, lists), alone or in a tuple, with NumPy's
//! rules: integer arrays (and the ints next to them) are broadcast together
//! and gather; their axes go where the first of them was when they are
//! adjacent in the key, first otherwise. Boolean masks raise, as in MLX.
//!
//! Writing (`__setitem__`) takes the same keys and boolean masks: the object
//! then refers to a new array. Ints, slices, `None` and `...` alone give a
//! `slice_update`; index arrays a `scatter` at the flat positions that the
//! same key reads from `positions(a)` (so reads and writes agree on every
//! key); a mask over leading axes a `where` (or, for a value with one entry
//! per selected element, NumPy's masked assignment in order).
//! `a.at[key].add(v)` (and `subtract`, `multiply`, `divide`, `maximum`,
//! `minimum`, assignment with `set`) combine with a scatter the same way.

use crate::array::PyArray;
use crate::convert::{read, to_array, with_dtype, Scalar};
use crate::errors::OpResult;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyList, PyNone, PySlice, PyTuple};
use weft::dtype::Element;
use weft::ops::{self, SliceArg};
use weft::shape::broadcast_shapes;
use weft::primitive::ReduceOp;
use weft::{Array, Dtype};

enum Index {
    Int(isize),
    Slice(SliceArg),
    NewAxis,
    Ellipsis,
    /// An integer index array; `host` when it came from Python data (a list
    /// or a NumPy array), whose values can be checked at once.
    Array { index: Array, host: bool },
}

impl Index {
    /// Whether the item indexes one axis of the array (`None` and `...` do not).
    fn consumes(&self) -> bool {
        matches!(self, Index::Int(_) | Index::Slice(_) | Index::Array { .. })
    }
}

fn parse(ob: &Bound<'_, PyAny>) -> PyResult<Index> {
    if ob.is_instance_of::<PyNone>() {
        return Ok(Index::NewAxis);
    }
    if ob.is_instance_of::<PyEllipsis>() {
        return Ok(Index::Ellipsis);
    }
    if let Ok(s) = ob.cast::<PySlice>() {
        let get = |name: &str| -> PyResult<Option<isize>> { s.getattr(name)?.extract() };
        return Ok(Index::Slice(SliceArg::new(get("start")?, get("stop")?, get("step")?.unwrap_or(1))));
    }
    let is_array = ob.is_instance_of::<PyArray>();
    // Python and NumPy integers (anything with `__index__`), not bools.
    if !ob.is_instance_of::<PyBool>() && !is_array {
        if let Ok(i) = ob.extract::<isize>() {
            return Ok(Index::Int(i));
        }
    }
    let sequence = ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>();
    if is_array || sequence || ob.hasattr("__array_interface__")? {
        let mut index = to_array(ob, None)?;
        if index.dtype() == Dtype::Bool {
            return Err(PyValueError::new_err(
                "boolean mask indexing is not supported (as in MLX): use weft.core.where(mask, a, b), \
                 or an integer index array",
            ));
        }
        if index.size() == 0 && !index.dtype().is_integer() {
            // `a[[]]`: an empty list makes a float32 array.
            index = ops::astype(&index, Dtype::I32).py()?;
        }
        if !index.dtype().is_integer() {
            return Err(PyIndexError::new_err(format!(
                "arrays used as indices must be of integer type, got {}",
                index.dtype()
            )));
        }
        return Ok(Index::Array { index, host: !is_array });
    }
    Err(PyTypeError::new_err(format!(
        "indices must be ints, slices, None, Ellipsis or integer arrays, not {}",
        ob.get_type().name()?
    )))
}

/// The items of `key` (a tuple is several items, anything else one).
fn parse_key(key: &Bound<'_, PyAny>) -> PyResult<Vec<Index>> {
    match key.cast::<PyTuple>() {
        Ok(t) => t.iter().map(|k| parse(&k)).collect(),
        Err(_) => Ok(vec![parse(key)?]),
    }
}

/// The key with its ellipsis replaced by whole slices and whole slices
/// appended, so that each axis of an `ndim`-dimensional array is indexed by
/// exactly one item.
fn expand(items: Vec<Index>, ndim: usize) -> PyResult<Vec<Index>> {
    let consumed = items.iter().filter(|i| i.consumes()).count();
    if consumed > ndim {
        return Err(PyIndexError::new_err(format!(
            "too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed"
        )));
    }
    if items.iter().filter(|i| matches!(i, Index::Ellipsis)).count() > 1 {
        return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
    }
    let mut out = Vec::with_capacity(items.len() + ndim - consumed);
    for item in items {
        match item {
            Index::Ellipsis => out.extend((0..ndim - consumed).map(|_| Index::Slice(SliceArg::ALL))),
            item => out.push(item),
        }
    }
    while out.iter().filter(|i| i.consumes()).count() < ndim {
        out.push(Index::Slice(SliceArg::ALL));
    }
    Ok(out)
}

/// `i` as an index into an axis of size `n`, negative counting from the end.
fn wrap_int(i: isize, n: usize, axis: usize) -> PyResult<isize> {
    let n = n as isize;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(PyIndexError::new_err(format!("index {i} is out of bounds for axis {axis} with size {n}")));
    }
    Ok(j)
}

/// Checks the values of an index array made from Python data against an
/// axis of size `n` (weft arrays are checked when the gather runs).
fn check_host_index(py: Python<'_>, index: &Array, n: usize, axis: usize) -> PyResult<()> {
    let values: Vec<i64> = with_dtype!(index.dtype(), T => read::<T>(py, index)?.into_iter().map(Element::to_i64).collect());
    let n = n as i64;
    if let Some(&bad) = values.iter().find(|&&i| i < -n || i >= n) {
        return Err(PyIndexError::new_err(format!("index {bad} is out of bounds for axis {axis} with size {n}")));
    }
    Ok(())
}

/// Where each axis of an intermediate result comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    /// Axis `ax` of the indexed array (sliced).
    Axis(usize),
    /// Axis `j` of the broadcast shape of the index arrays.
    Gathered(usize),
}

/// `a[key]` (a panic inside is a RuntimeError, never PanicException).
pub fn get_item(a: &Array, key: &Bound<'_, PyAny>) -> PyResult<Array> {
    crate::errors::no_panic(|| get_item_unguarded(a, key))
}

fn get_item_unguarded(a: &Array, key: &Bound<'_, PyAny>) -> PyResult<Array> {
    let py = key.py();
    let items = parse_key(key)?;
    let has_array = items.iter().any(|i| matches!(i, Index::Array { .. }));
    // NumPy: with index arrays, ints are index arrays too, and the gathered
    // axes stay in place only if all of these are next to each other.
    let advanced = |i: &Index| has_array && matches!(i, Index::Int(_) | Index::Array { .. });
    let adjacent = {
        let pos: Vec<usize> = items.iter().enumerate().filter(|(_, i)| advanced(i)).map(|(p, _)| p).collect();
        pos.windows(2).all(|w| w[1] == w[0] + 1)
    };
    let items = expand(items, a.ndim())?;

    // 1. Slices and ints (ints keep a size-1 axis for now).
    let mut slices = Vec::with_capacity(a.ndim());
    let mut gathers: Vec<(usize, Array)> = Vec::new();
    for item in &items {
        let ax = slices.len();
        match item {
            Index::Int(i) => {
                let j = wrap_int(*i, a.shape()[ax], ax)?;
                slices.push(SliceArg::range(j, j + 1));
            }
            Index::Slice(s) => slices.push(*s),
            Index::Array { index, host } => {
                if *host {
                    check_host_index(py, index, a.shape()[ax], ax)?;
                }
                gathers.push((ax, index.clone()));
                slices.push(SliceArg::ALL);
            }
            Index::NewAxis | Index::Ellipsis => {}
        }
    }
    let sliced = ops::slice(a, &slices).py()?;

    // 2. The gather, if any: `labels` names the axes of `out`.
    let (out, labels, gathered_shape, sizes) = if gathers.is_empty() {
        let labels: Vec<Label> = items
            .iter()
            .scan(0, |ax, item| {
                let l = match item {
                    Index::Slice(_) => Some(Label::Axis(*ax)),
                    _ => None,
                };
                if item.consumes() {
                    *ax += 1;
                }
                Some(l)
            })
            .flatten()
            .collect();
        // `sliced` still has the size-1 axes of ints: the final reshape drops them.
        let sizes = labels
            .iter()
            .map(|l| match *l {
                Label::Axis(ax) => (*l, sliced.shape()[ax]),
                Label::Gathered(_) => unreachable!("no index arrays"),
            })
            .collect::<Vec<_>>();
        (sliced, labels, Vec::new(), sizes)
    } else {
        let (out, labels, bshape) = gather(&sliced, &items, &gathers)?;
        let sizes = labels.iter().copied().zip(out.shape().iter().copied()).collect::<Vec<_>>();
        (out, labels, bshape, sizes)
    };

    // 3. The result's axes in order: sliced axes, new axes, gathered axes.
    enum Out {
        L(Label),
        One,
    }
    let gathered: Vec<Out> = (0..gathered_shape.len()).map(|j| Out::L(Label::Gathered(j))).collect();
    let mut target: Vec<Out> = Vec::new();
    let mut pending = Some(gathered);
    if !adjacent {
        target.extend(pending.take().unwrap_or_default());
    }
    let mut ax = 0;
    for item in &items {
        match item {
            Index::Slice(_) => target.push(Out::L(Label::Axis(ax))),
            Index::NewAxis => target.push(Out::One),
            Index::Int(_) | Index::Array { .. } if has_array => target.extend(pending.take().unwrap_or_default()),
            _ => {}
        }
        if item.consumes() {
            ax += 1;
        }
    }
    let order: Vec<Label> = target
        .iter()
        .filter_map(|o| match o {
            Out::L(l) => Some(*l),
            Out::One => None,
        })
        .collect();
    let out = if order != labels {
        let perm: Vec<isize> = order
            .iter()
            .map(|l| labels.iter().position(|m| m == l).expect("every label is in the gathered array") as isize)
            .collect();
        ops::transpose(&out, &perm).py()?
    } else {
        out
    };
    let size_of = |l: &Label| -> usize { sizes.iter().find(|(m, _)| m == l).expect("every label has a size").1 };
    let shape: Vec<isize> = target
        .iter()
        .map(|o| match o {
            Out::L(l) => size_of(l) as isize,
            Out::One => 1,
        })
        .collect();
    if shape.iter().map(|&d| d as usize).collect::<Vec<_>>() == out.shape() {
        return Ok(out);
    }
    ops::reshape(&out, &shape).py()
}

/// Gathers `sliced` (one axis per consuming item of `items`) at the index
/// arrays `gathers` (axis, indices): the result, the labels of its axes,
/// and the broadcast shape of the indices.
fn gather(sliced: &Array, items: &[Index], gathers: &[(usize, Array)]) -> PyResult<(Array, Vec<Label>, Vec<usize>)> {
    // Drop the size-1 axes that ints left.
    let mut kept = Vec::new();
    for (ax, item) in items.iter().filter(|i| i.consumes()).enumerate() {
        if !matches!(item, Index::Int(_)) {
            kept.push(ax);
        }
    }
    let x = if kept.len() != sliced.ndim() {
        let shape: Vec<isize> = kept.iter().map(|&ax| sliced.shape()[ax] as isize).collect();
        ops::reshape(sliced, &shape).py()?
    } else {
        sliced.clone()
    };
    // Axis `ax` of `sliced` is axis `pos(ax)` of `x`.
    let pos = |ax: usize| kept.iter().position(|&k| k == ax).expect("array-indexed axes are kept");

    let mut bshape: Vec<usize> = Vec::new();
    for (_, idx) in gathers {
        bshape = broadcast_shapes(&bshape, idx.shape()).map_err(|_| {
            PyIndexError::new_err(format!(
                "shape mismatch: indexing arrays could not be broadcast together with shapes {}",
                gathers.iter().map(|(_, i)| format!("{:?}", i.shape())).collect::<Vec<_>>().join(", ")
            ))
        })?;
    }

    if let [(ax, idx)] = gathers {
        // One index array: a plain `take` (it wraps negative indices).
        let p = pos(*ax);
        let out = ops::take(&x, idx, Some(p as isize)).py()?;
        let mut labels: Vec<Label> = kept[..p].iter().map(|&k| Label::Axis(k)).collect();
        labels.extend((0..bshape.len()).map(Label::Gathered));
        labels.extend(kept[p + 1..].iter().map(|&k| Label::Axis(k)));
        return Ok((out, labels, bshape));
    }

    // Several: move the indexed axes to the front, merge them into one,
    // and take at the row-major linear index.
    let front: Vec<usize> = gathers.iter().map(|(ax, _)| pos(*ax)).collect();
    let rest: Vec<usize> = (0..x.ndim()).filter(|d| !front.contains(d)).collect();
    let perm: Vec<isize> = front.iter().chain(&rest).map(|&d| d as isize).collect();
    let moved = ops::transpose(&x, &perm).py()?;
    let total: usize = front.iter().map(|&d| x.shape()[d]).product();
    let merged_shape: Vec<isize> = std::iter::once(total as isize).chain(rest.iter().map(|&d| x.shape()[d] as isize)).collect();
    let merged = ops::reshape(&moved, &merged_shape).py()?;

    let scalar = |v: i64| Array::scalar(v);
    let zero = scalar(0);
    // An out-of-range component becomes `total`, itself out of range: the
    // gather then fails instead of reading a neighbouring element.
    let invalid = scalar(total as i64);
    let mut linear = ops::broadcast_to(&zero, &bshape).py()?;
    let mut stride = 1i64;
    for (&d, (_, idx)) in front.iter().zip(gathers).rev() {
        let n = x.shape()[d] as i64;
        let idx = ops::astype(idx, Dtype::I64).py()?;
        let wrapped = ops::where_(&ops::less(&idx, &zero).py()?, &ops::add(&idx, &scalar(n)).py()?, &idx).py()?;
        let term = ops::multiply(&wrapped, &scalar(stride)).py()?;
        let sum = ops::add(&linear, &term).py()?;
        let ok_low = ops::greater_equal(&wrapped, &zero).py()?;
        let ok_high = ops::less(&wrapped, &scalar(n)).py()?;
        linear = ops::where_(&ok_low, &ops::where_(&ok_high, &sum, &invalid).py()?, &invalid).py()?;
        stride *= n;
    }
    let out = ops::take(&merged, &linear, Some(0)).py()?;
    let mut labels: Vec<Label> = (0..bshape.len()).map(Label::Gathered).collect();
    labels.extend(rest.iter().map(|&d| Label::Axis(kept[d])));
    Ok((out, labels, bshape))
}

/// `target[key] = value`: `target` then refers to `slice_update` of the
/// array it referred to; arrays built from it before keep the old values.
pub fn set_item(target: &PyArray, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    crate::errors::no_panic(|| set_item_unguarded(target, key, value))
}

fn set_item_unguarded(target: &PyArray, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let a = target.array();
    if let Some(mask) = bool_mask(key)? {
        return target.update(|cur| masked_assign(cur, &mask, value));
    }
    let items = parse_key(key)?;
    if items.iter().any(|i| matches!(i, Index::Array { .. })) {
        return target.update(|cur| scatter_at(cur, key, value, None));
    }
    let items = expand(items, a.ndim())?;
    // Each axis's slice, and the shape `a[key]` would have.
    let mut slices = Vec::with_capacity(a.ndim());
    enum Out {
        Axis(usize),
        One,
    }
    let mut out = Vec::new();
    for item in &items {
        let ax = slices.len();
        match item {
            Index::Int(i) => {
                let j = wrap_int(*i, a.shape()[ax], ax)?;
                slices.push(SliceArg::range(j, j + 1));
            }
            Index::Slice(s) => {
                out.push(Out::Axis(ax));
                slices.push(*s);
            }
            Index::NewAxis => out.push(Out::One),
            Index::Ellipsis | Index::Array { .. } => unreachable!("expanded and rejected above"),
        }
    }
    let region = ops::slice(&a, &slices).py()?.shape().to_vec();
    let out_shape: Vec<usize> = out
        .iter()
        .map(|o| match *o {
            Out::Axis(ax) => region[ax],
            Out::One => 1,
        })
        .collect();

    let v = match Scalar::extract(value)? {
        Some(s) => s.to_array(s.weak_dtype(a.dtype())),
        None => to_array(value, None)?,
    };
    // NumPy drops leading size-1 axes of a value with too many.
    let mut vshape = v.shape().to_vec();
    while vshape.len() > out_shape.len() && vshape[0] == 1 {
        vshape.remove(0);
    }
    let fits = vshape.len() <= out_shape.len() && broadcast_shapes(&vshape, &out_shape).is_ok_and(|s| s == out_shape);
    if !fits {
        return Err(PyValueError::new_err(format!(
            "cannot broadcast a value of shape {:?} to the indexed shape {out_shape:?}",
            v.shape()
        )));
    }
    // The value's axes laid out over the region's (ints give size 1).
    let padded: Vec<usize> = std::iter::repeat_n(1, out_shape.len() - vshape.len()).chain(vshape).collect();
    let mut update_shape: Vec<isize> = vec![1; a.ndim()];
    for (o, kind) in out.iter().enumerate() {
        if let Out::Axis(ax) = *kind {
            update_shape[ax] = padded[o] as isize;
        }
    }
    let update = ops::reshape(&v, &update_shape).py()?;
    target.update(|cur| ops::slice_update(cur, &update, &slices).py())
}

/// `value` as an array for writing into `a` (a Python scalar takes `a`'s
/// dtype, as MLX's weak scalars), with the leading size-1 axes NumPy drops
/// when it has more axes than `shape`, checked to broadcast to `shape`.
fn value_for(a: &Array, value: &Bound<'_, PyAny>, shape: &[usize]) -> PyResult<Array> {
    let v = match Scalar::extract(value)? {
        Some(s) => s.to_array(s.weak_dtype(a.dtype())),
        None => to_array(value, None)?,
    };
    let mut vshape = v.shape().to_vec();
    while vshape.len() > shape.len() && vshape[0] == 1 {
        vshape.remove(0);
    }
    if vshape.len() > shape.len() || broadcast_shapes(&vshape, shape).map_or(true, |s| s != shape) {
        return Err(PyValueError::new_err(format!(
            "cannot broadcast a value of shape {:?} to the indexed shape {shape:?}",
            v.shape()
        )));
    }
    let dims: Vec<isize> = vshape.iter().map(|&d| d as isize).collect();
    ops::reshape(&v, &dims).py()
}

/// `a` with the elements `a[key]` reads replaced by `value` (`reduce` None)
/// or combined with it: a scatter at `positions(a)[key]`.
pub fn scatter_at(a: &Array, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, reduce: Option<ReduceOp>) -> PyResult<Array> {
    let at = get_item_unguarded(&ops::positions(a).py()?, key)?;
    let v = value_for(a, value, at.shape())?;
    ops::scatter(a, &at, &v, reduce).py()
}

/// The key as a boolean mask: a Python bool, or a bool array (weft, NumPy,
/// or a list of bools); None for every other key.
fn bool_mask(key: &Bound<'_, PyAny>) -> PyResult<Option<Array>> {
    if key.is_instance_of::<PyBool>() {
        return Ok(Some(Array::scalar(key.extract::<bool>()?)));
    }
    let candidate = key.is_instance_of::<PyArray>() || key.is_instance_of::<PyList>() || key.hasattr("__array_interface__")?;
    if !candidate {
        return Ok(None);
    }
    let m = to_array(key, None)?;
    Ok((m.dtype() == Dtype::Bool).then_some(m))
}

/// `a[mask] = value`: the mask covers `a`'s leading axes (its shape is a
/// prefix of `a`'s). A value that broadcasts to one selected element (or
/// row of trailing axes) is written at every selected place; otherwise the
/// value's elements fill the selected places in order, as NumPy's.
fn masked_assign(a: &Array, mask: &Array, value: &Bound<'_, PyAny>) -> PyResult<Array> {
    let k = mask.ndim();
    if k > a.ndim() || mask.shape() != &a.shape()[..k] {
        return Err(PyValueError::new_err(format!(
            "boolean mask of shape {:?} does not match the leading axes of an array of shape {:?}",
            mask.shape(),
            a.shape()
        )));
    }
    let mut full: Vec<isize> = mask.shape().iter().map(|&d| d as isize).collect();
    full.extend(std::iter::repeat_n(1, a.ndim() - k));
    let m = ops::broadcast_to(&ops::reshape(mask, &full).py()?, a.shape()).py()?;
    let row = &a.shape()[k..];
    if let Ok(v) = value_for(a, value, row) {
        return ops::where_(&m, &v, a).py();
    }
    let v = match Scalar::extract(value)? {
        Some(s) => s.to_array(s.weak_dtype(a.dtype())),
        None => ops::astype(&to_array(value, None)?, a.dtype()).py()?,
    };
    // Selected place i (in order) takes the value's element i.
    let flat_m = ops::reshape(&m, &[-1]).py()?;
    let rank = ops::cumsum(&ops::astype(&flat_m, Dtype::I64).py()?, Some(0), false, true).py()?;
    let rank = ops::maximum(&ops::subtract(&rank, &Array::scalar(1i64)).py()?, &Array::scalar(0i64)).py()?;
    let vals = if v.size() == 0 {
        ops::zeros(&[a.size()], a.dtype()).py()?
    } else {
        let last = Array::scalar((v.size() - 1) as i64);
        ops::take(&ops::reshape(&v, &[-1]).py()?, &ops::minimum(&rank, &last).py()?, Some(0)).py()?
    };
    let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    ops::where_(&m, &ops::reshape(&vals, &shape).py()?, a).py()
}

/// `a.at`: `a.at[key].add(v)` and the other combining updates.
#[pyclass(name = "ArrayAt", module = "weft.core", frozen)]
pub struct ArrayAt {
    pub(crate) array: Array,
}

#[pymethods]
impl ArrayAt {
    fn __getitem__(&self, key: Bound<'_, PyAny>) -> ArrayAtItem {
        ArrayAtItem { array: self.array.clone(), key: key.unbind() }
    }

    /// `a.at.add(v)` without a key is a `ValueError` (as MLX): the update
    /// methods belong to `a.at[key]`.
    fn __getattr__(&self, name: &str) -> PyResult<Py<PyAny>> {
        if matches!(name, "add" | "subtract" | "multiply" | "divide" | "maximum" | "minimum") {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("a.at.{name}: index first, as in a.at[key].{name}(value)")));
        }
        Err(pyo3::exceptions::PyAttributeError::new_err(format!("'ArrayAt' object has no attribute '{name}'")))
    }
}

/// `a.at[key]`: each method returns a new array with the elements `a[key]`
/// reads combined with `value` (repeated indices combine every update,
/// unlike `a[key] += v`).
#[pyclass(name = "ArrayAtItem", module = "weft.core", frozen)]
pub struct ArrayAtItem {
    array: Array,
    key: Py<PyAny>,
}

impl ArrayAtItem {
    fn apply(&self, py: Python<'_>, value: &Bound<'_, PyAny>, reduce: Option<ReduceOp>) -> PyResult<PyArray> {
        crate::errors::no_panic(|| scatter_at(&self.array, self.key.bind(py), value, reduce).map(PyArray::from))
    }

    /// The value as an array of the updated array's dtype (`-v`, `1/v`).
    fn value(&self, value: &Bound<'_, PyAny>) -> PyResult<Array> {
        let v = match Scalar::extract(value)? {
            Some(s) => s.to_array(s.weak_dtype(self.array.dtype())),
            None => to_array(value, None)?,
        };
        ops::astype(&v, self.array.dtype()).py()
    }
}

#[pymethods]
impl ArrayAtItem {
    /// Assigns `value` (as `a[key] = value`, but returning the new array).
    fn set(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.apply(py, value, None)
    }
    fn add(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.apply(py, value, Some(ReduceOp::Sum))
    }
    fn subtract(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        let neg = PyArray::from(ops::negative(&self.value(value)?).py()?);
        self.apply(py, &Bound::new(py, neg)?.into_any(), Some(ReduceOp::Sum))
    }
    fn multiply(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.apply(py, value, Some(ReduceOp::Prod))
    }
    fn divide(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        let v = self.value(value)?;
        let inv = PyArray::from(ops::divide(&ops::astype(&Array::scalar(1.0f64), v.dtype()).py()?, &v).py()?);
        self.apply(py, &Bound::new(py, inv)?.into_any(), Some(ReduceOp::Prod))
    }
    fn maximum(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.apply(py, value, Some(ReduceOp::Max))
    }
    fn minimum(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        self.apply(py, value, Some(ReduceOp::Min))
    }
}
