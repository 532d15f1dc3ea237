//! `a[...]`: ints, slices (any step), `None` and `...`, alone or in a tuple.

use crate::array::PyArray;
use crate::errors::OpResult;
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyNone, PySlice, PyTuple};
use weft::ops::{self, SliceArg};
use weft::Array;

enum Index {
    Int(isize),
    Slice(SliceArg),
    NewAxis,
    Ellipsis,
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
    // Python and NumPy integers (anything with `__index__`), not bools.
    if !ob.is_instance_of::<PyBool>() && !ob.is_instance_of::<PyArray>() {
        if let Ok(i) = ob.extract::<isize>() {
            return Ok(Index::Int(i));
        }
    }
    if ob.is_instance_of::<PyArray>() || ob.is_instance_of::<pyo3::types::PyList>() || ob.hasattr("__array_interface__")? {
        return Err(PyNotImplementedError::new_err("indexing with arrays is not implemented in weft yet"));
    }
    Err(PyTypeError::new_err(format!(
        "indices must be ints, slices, None or Ellipsis, not {}",
        ob.get_type().name()?
    )))
}

/// `a[key]`, a view of `a`.
pub fn get_item(a: &Array, key: &Bound<'_, PyAny>) -> PyResult<Array> {
    let items = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().map(|k| parse(&k)).collect::<PyResult<Vec<_>>>()?,
        Err(_) => vec![parse(key)?],
    };
    let consumed = items.iter().filter(|i| matches!(i, Index::Int(_) | Index::Slice(_))).count();
    if consumed > a.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices for array: array is {}-dimensional, but {consumed} were indexed",
            a.ndim()
        )));
    }
    if items.iter().filter(|i| matches!(i, Index::Ellipsis)).count() > 1 {
        return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
    }
    // One slice per axis of `a`, and the result's shape in terms of them.
    enum Out {
        Axis(usize),
        One,
    }
    let mut slices = Vec::with_capacity(a.ndim());
    let mut out = Vec::new();
    let whole = |slices: &mut Vec<SliceArg>, out: &mut Vec<Out>| {
        out.push(Out::Axis(slices.len()));
        slices.push(SliceArg::ALL);
    };
    for item in &items {
        match *item {
            Index::Int(i) => {
                let n = a.shape()[slices.len()] as isize;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(PyIndexError::new_err(format!(
                        "index {i} is out of bounds for axis {} with size {n}",
                        slices.len()
                    )));
                }
                slices.push(SliceArg::range(j, j + 1));
            }
            Index::Slice(s) => {
                out.push(Out::Axis(slices.len()));
                slices.push(s);
            }
            Index::NewAxis => out.push(Out::One),
            Index::Ellipsis => {
                for _ in 0..a.ndim() - consumed {
                    whole(&mut slices, &mut out);
                }
            }
        }
    }
    while slices.len() < a.ndim() {
        whole(&mut slices, &mut out);
    }
    let sliced = ops::slice(a, &slices).py()?;
    let shape: Vec<isize> = out
        .iter()
        .map(|o| match *o {
            Out::Axis(ax) => sliced.shape()[ax] as isize,
            Out::One => 1,
        })
        .collect();
    ops::reshape(&sliced, &shape).py()
}
