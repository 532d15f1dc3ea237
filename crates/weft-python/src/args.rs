//! Argument types shared by ops and array methods: operands with MLX's weak
//! scalar typing, axes, shapes.

use crate::array::PyArray;
use crate::convert::{to_array, Scalar};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use weft::Array;

/// One operand of a binary op: an array, or a Python scalar whose dtype
/// depends on the other operand.
enum Operand {
    Array(Array),
    Scalar(Scalar),
}

fn operand(ob: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(a) = ob.cast::<PyArray>() {
        return Ok(Operand::Array(a.get().array()));
    }
    if let Some(s) = Scalar::extract(ob)? {
        return Ok(Operand::Scalar(s));
    }
    to_array(ob, None).map(Operand::Array)
}

/// Two operands as arrays. A Python scalar next to an array takes the
/// array's kind of type (a float next to float16 stays float16; an int next
/// to int8.. int64 keeps that type; a float next to ints gives float32).
pub fn operands(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(Array, Array)> {
    Ok(match (operand(a)?, operand(b)?) {
        (Operand::Array(x), Operand::Array(y)) => (x, y),
        (Operand::Array(x), Operand::Scalar(s)) => {
            let y = s.to_weak_array(x.dtype())?;
            (x, y)
        }
        (Operand::Scalar(s), Operand::Array(y)) => (s.to_weak_array(y.dtype())?, y),
        (Operand::Scalar(s), Operand::Scalar(t)) => {
            (s.to_array(s.default_dtype()), t.to_array(t.default_dtype()))
        }
    })
}

/// `axis=`: one axis or a sequence of them.
pub enum Axes {
    One(isize),
    Many(Vec<isize>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Axes {
    type Error = PyErr;
    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(i) = ob.extract::<isize>() {
            return Ok(Axes::One(i));
        }
        if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
            return Ok(Axes::Many(ob.extract()?));
        }
        Err(PyTypeError::new_err("axis must be an int or a sequence of ints"))
    }
}

/// `axis=` of a reduction, softmax or logsumexp as weft's axes: `None` is
/// every axis, `[]` none.
pub fn over(axis: Option<Axes>) -> weft::shape::Axes {
    axis.map(|a| a.to_vec()).into()
}

impl Axes {
    pub fn to_vec(&self) -> Vec<isize> {
        match self {
            Axes::One(i) => vec![*i],
            Axes::Many(v) => v.clone(),
        }
    }
}

/// A shape argument: an int or a sequence of ints.
pub struct Shape(pub Vec<isize>);

impl<'a, 'py> FromPyObject<'a, 'py> for Shape {
    type Error = PyErr;
    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(i) = ob.extract::<isize>() {
            return Ok(Shape(vec![i]));
        }
        if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
            return Ok(Shape(ob.extract()?));
        }
        Err(PyTypeError::new_err("shape must be an int or a sequence of ints"))
    }
}

impl Shape {
    /// The dimensions, which must not be negative.
    pub fn dims(&self) -> PyResult<Vec<usize>> {
        self.0
            .iter()
            .map(|&d| {
                usize::try_from(d).map_err(|_| {
                    pyo3::exceptions::PyValueError::new_err(format!("negative dimension {d} in shape {:?}", self.0))
                })
            })
            .collect()
    }
}

/// `*args` that may also be given as one sequence: `a.reshape(2, 3)` or
/// `a.reshape((2, 3))`.
pub fn varargs_ints(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if !first.is_instance_of::<pyo3::types::PyInt>() {
            return first.extract::<Shape>().map(|s| s.0);
        }
    }
    args.extract()
}
