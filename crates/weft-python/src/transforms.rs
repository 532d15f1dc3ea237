//! Function transforms with mlx.core's signatures: `grad`,
//! `value_and_grad` (argnums, argnames), `vjp`, `jvp`, `vmap` (in_axes,
//! out_axes), `stop_gradient`, `checkpoint`, `custom_function`. Arguments
//! and results are trees (lists, tuples, dicts) of arrays; the transforms
//! themselves are weft's (`weft::transforms`), called on the trees' leaves.

use crate::array::PyArray;
use crate::errors::OpResult;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use weft::transforms;
use weft::Array;

/// A tree's structure; its arrays are kept apart, in order, as leaves.
enum Tree {
    Array,
    Other(Py<PyAny>),
    List(Vec<Tree>),
    Tuple(Vec<Tree>),
    /// A tuple subclass (a `NamedTuple`, ...): rebuilt as its type.
    Named(Py<PyAny>, Vec<Tree>),
    /// A dict; for a dict subclass (a `weft.nn.Module`, ...) the original,
    /// rebuilt as a shallow copy of it (its type and attributes kept) with
    /// the new items.
    Dict(Option<Py<PyAny>>, Vec<(Py<PyAny>, Tree)>),
}

fn flatten(ob: &Bound<'_, PyAny>, leaves: &mut Vec<Array>) -> PyResult<Tree> {
    if let Ok(a) = ob.cast::<PyArray>() {
        leaves.push(a.get().array());
        Ok(Tree::Array)
    } else if let Ok(l) = ob.cast::<PyList>() {
        Ok(Tree::List(l.iter().map(|x| flatten(&x, leaves)).collect::<PyResult<_>>()?))
    } else if let Ok(t) = ob.cast::<PyTuple>() {
        let items = t.iter().map(|x| flatten(&x, leaves)).collect::<PyResult<_>>()?;
        if ob.is_exact_instance_of::<PyTuple>() {
            Ok(Tree::Tuple(items))
        } else {
            Ok(Tree::Named(ob.get_type().into_any().unbind(), items))
        }
    } else if let Ok(d) = ob.cast::<PyDict>() {
        let sub = (!ob.is_exact_instance_of::<PyDict>()).then(|| ob.clone().unbind());
        Ok(Tree::Dict(sub, d.iter().map(|(k, v)| Ok((k.unbind(), flatten(&v, leaves)?))).collect::<PyResult<_>>()?))
    } else {
        Ok(Tree::Other(ob.clone().unbind()))
    }
}

fn unflatten<'py>(py: Python<'py>, t: &Tree, leaves: &mut std::slice::Iter<'_, Array>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match t {
        Tree::Array => {
            let a = leaves.next().ok_or_else(|| PyValueError::new_err("tree has fewer arrays than its structure"))?;
            Bound::new(py, PyArray::from(a.clone()))?.into_any()
        }
        Tree::Other(o) => o.bind(py).clone(),
        Tree::List(v) => PyList::new(py, v.iter().map(|x| unflatten(py, x, leaves)).collect::<PyResult<Vec<_>>>()?)?.into_any(),
        Tree::Tuple(v) => PyTuple::new(py, v.iter().map(|x| unflatten(py, x, leaves)).collect::<PyResult<Vec<_>>>()?)?.into_any(),
        Tree::Named(ty, v) => {
            let items = PyTuple::new(py, v.iter().map(|x| unflatten(py, x, leaves)).collect::<PyResult<Vec<_>>>()?)?;
            let ty = ty.bind(py);
            // A NamedTuple takes its fields as arguments, other tuple types one iterable.
            if ty.hasattr("_fields")? { ty.call1(items)? } else { ty.call1((items,))? }
        }
        Tree::Dict(sub, v) => {
            let d = match sub {
                Some(orig) => py.import("copy")?.call_method1("copy", (orig.bind(py),))?.cast_into::<PyDict>()?,
                None => PyDict::new(py),
            };
            for (k, x) in v {
                d.set_item(k.bind(py), unflatten(py, x, leaves)?)?;
            }
            d.into_any()
        }
    })
}

/// Whether a tree holds a leaf that is not an array (empty lists are fine).
fn has_other(t: &Tree) -> bool {
    match t {
        Tree::Array => false,
        Tree::Other(_) => true,
        Tree::List(v) | Tree::Tuple(v) | Tree::Named(_, v) => v.iter().any(has_other),
        Tree::Dict(_, v) => v.iter().any(|(_, x)| has_other(x)),
    }
}

fn count(t: &Tree) -> usize {
    match t {
        Tree::Array => 1,
        Tree::Other(_) => 0,
        Tree::List(v) | Tree::Tuple(v) | Tree::Named(_, v) => v.iter().map(count).sum(),
        Tree::Dict(_, v) => v.iter().map(|(_, x)| count(x)).sum(),
    }
}

/// Runs a weft transform whose function calls Python: a Python exception
/// raised inside comes out as itself (not as a weft error).
struct PyCall<'py> {
    py: Python<'py>,
    raised: RefCell<Option<PyErr>>,
}

impl<'py> PyCall<'py> {
    fn new(py: Python<'py>) -> Self {
        PyCall { py, raised: RefCell::new(None) }
    }

    fn guard<T>(&self, r: PyResult<T>) -> weft::Result<T> {
        r.map_err(|e| {
            let msg = e.to_string();
            *self.raised.borrow_mut() = Some(e);
            weft::Error::InvalidArgument(format!("the transformed function raised: {msg}"))
        })
    }

    fn finish<T>(&self, r: weft::Result<T>) -> PyResult<T> {
        if let Some(e) = self.raised.borrow_mut().take() {
            return Err(e);
        }
        r.py()
    }
}

/// A function's positional arguments, with some replaced by rebuilt trees.
struct Args {
    args: Vec<Py<PyAny>>,
    kwargs: Option<Py<PyDict>>,
    /// (positional index or keyword, structure) of each traced argument, in leaf order.
    traced: Vec<(Slot, Tree)>,
}

enum Slot {
    Pos(usize),
    Key(String),
}

impl Args {
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>, argnums: &[usize], argnames: &[String], leaves: &mut Vec<Array>) -> PyResult<Args> {
        let mut traced = Vec::new();
        for &i in argnums {
            let a = args.get_item(i).map_err(|_| {
                PyValueError::new_err(format!("can't compute the gradient of argument index {i}: the function was called with {} positional arguments", args.len()))
            })?;
            let t = flatten(&a, leaves)?;
            if has_other(&t) {
                return Err(PyValueError::new_err(format!(
                    "can't compute the gradient of argument index {i}: it must be an array or a tree of arrays, got {}",
                    a.get_type().name()?
                )));
            }
            traced.push((Slot::Pos(i), t));
        }
        for name in argnames {
            let v = kwargs.and_then(|k| k.get_item(name).ok().flatten()).ok_or_else(|| {
                PyValueError::new_err(format!("can't compute the gradient of keyword argument '{name}': it was not passed"))
            })?;
            let t = flatten(&v, leaves)?;
            if has_other(&t) {
                return Err(PyValueError::new_err(format!("can't compute the gradient of keyword argument '{name}': it must be an array or a tree of arrays")));
            }
            traced.push((Slot::Key(name.clone()), t));
        }
        Ok(Args { args: args.iter().map(Bound::unbind).collect(), kwargs: kwargs.map(|k| k.clone().unbind()), traced })
    }

    fn call<'py>(&self, py: Python<'py>, fun: &Bound<'py, PyAny>, leaves: &[Array]) -> PyResult<Bound<'py, PyAny>> {
        let mut args: Vec<Bound<'py, PyAny>> = self.args.iter().map(|a| a.bind(py).clone()).collect();
        let kwargs = match &self.kwargs {
            Some(k) => Some(k.bind(py).copy()?),
            None => None,
        };
        let mut it = leaves.iter();
        for (slot, tree) in &self.traced {
            let v = unflatten(py, tree, &mut it)?;
            match slot {
                Slot::Pos(i) => args[*i] = v,
                Slot::Key(k) => kwargs.as_ref().expect("keyword arguments were given").set_item(k, v)?,
            }
        }
        fun.call(PyTuple::new(py, args)?, kwargs.as_ref())
    }

    /// The gradients, shaped as the traced arguments: the positional ones
    /// (one tree when one argument is traced, else a tuple), then, when
    /// `argnames` were given, `(positional, {name: tree})`.
    fn grads<'py>(&self, py: Python<'py>, grads: &[Array], with_names: bool) -> PyResult<Bound<'py, PyAny>> {
        let mut it = grads.iter();
        let (mut pos, kw) = (Vec::new(), PyDict::new(py));
        for (slot, tree) in &self.traced {
            let g = unflatten(py, tree, &mut it)?;
            match slot {
                Slot::Pos(_) => pos.push(g),
                Slot::Key(k) => kw.set_item(k, g)?,
            }
        }
        // One positional argument (argnums=0 or a one-element sequence, as
        // MLX): its tree alone, not a 1-tuple.
        let pos = if pos.len() == 1 {
            pos.remove(0)
        } else if pos.is_empty() && with_names {
            py.None().into_bound(py)
        } else {
            PyTuple::new(py, pos)?.into_any()
        };
        if with_names {
            Ok(PyTuple::new(py, [pos, kw.into_any()])?.into_any())
        } else {
            Ok(pos)
        }
    }
}

/// What `grad` and `value_and_grad` return: the function, differentiated.
#[pyclass(module = "weft.core", frozen)]
struct GradFunction {
    fun: Py<PyAny>,
    argnums: Vec<usize>,
    argnames: Vec<String>,
    with_value: bool,
}

#[pymethods]
impl GradFunction {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyAny>> {
        let mut leaves = Vec::new();
        let spec = Args::new(args, kwargs, &self.argnums, &self.argnames, &mut leaves)?;
        let fun = self.fun.bind(py);
        let call = PyCall::new(py);
        let out_tree: RefCell<Option<Tree>> = RefCell::new(None);
        let all: Vec<usize> = (0..leaves.len()).collect();
        let r = transforms::value_and_grad(
            |x| {
                call.guard((|| {
                    let out = spec.call(py, fun, x)?;
                    let mut outs = Vec::new();
                    let tree = flatten(&out, &mut outs)?;
                    let scalar_first = match &tree {
                        Tree::Array => true,
                        Tree::List(v) | Tree::Tuple(v) | Tree::Named(_, v) if self.with_value => matches!(v.first(), Some(Tree::Array)),
                        _ => false,
                    };
                    if !scalar_first {
                        return Err(PyValueError::new_err(if self.with_value {
                            "value_and_grad: the function must return a scalar array, or a tuple whose first element is one"
                        } else {
                            "grad: the function must return a scalar array (use value_and_grad for auxiliary outputs)"
                        }));
                    }
                    if outs[0].ndim() != 0 {
                        return Err(PyValueError::new_err(format!(
                            "the function to differentiate must return a scalar (0-dimensional) array, got shape {:?}",
                            outs[0].shape()
                        )));
                    }
                    *out_tree.borrow_mut() = Some(tree);
                    Ok(outs)
                })())
            },
            &leaves,
            &all,
        );
        let (vals, grads) = call.finish(r)?;
        let grads = spec.grads(py, &grads, !self.argnames.is_empty())?;
        if !self.with_value {
            return Ok(grads);
        }
        let tree = out_tree.borrow_mut().take().ok_or_else(|| PyValueError::new_err("the function was not called"))?;
        let value = unflatten(py, &tree, &mut vals.iter())?;
        Ok(PyTuple::new(py, [value, grads])?.into_any())
    }
}

fn argnums_of(argnums: Option<&Bound<'_, PyAny>>, argnames: &Bound<'_, PyAny>) -> PyResult<(Vec<usize>, Vec<String>)> {
    let names: Vec<String> = if let Ok(s) = argnames.extract::<String>() { vec![s] } else { argnames.extract()? };
    let nums = match argnums {
        None if names.is_empty() => vec![0],
        None => vec![],
        Some(a) => match a.extract::<i64>() {
            Ok(i) => vec![i],
            Err(_) => a.extract::<Vec<i64>>().map_err(|_| PyTypeError::new_err("argnums must be an int or a sequence of ints"))?,
        },
    };
    let nums = nums
        .into_iter()
        .map(|i| usize::try_from(i).map_err(|_| PyValueError::new_err(format!("argnums cannot be negative, got {i}"))))
        .collect::<PyResult<Vec<_>>>()?;
    if nums.is_empty() && names.is_empty() {
        return Err(PyValueError::new_err("no argnums or argnames: there is nothing to differentiate with respect to"));
    }
    let mut sorted = nums.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Err(PyValueError::new_err("duplicate argnums"));
    }
    Ok((nums, names))
}

/// A function computing the gradient of `fun` with respect to the
/// arguments at `argnums` (default 0) and the keyword arguments `argnames`.
#[pyfunction]
#[pyo3(signature = (fun, argnums = None, argnames = None))]
fn grad(fun: Py<PyAny>, argnums: Option<&Bound<'_, PyAny>>, argnames: Option<&Bound<'_, PyAny>>, py: Python<'_>) -> PyResult<GradFunction> {
    let empty = PyList::empty(py).into_any();
    let (argnums, argnames) = argnums_of(argnums, argnames.unwrap_or(&empty))?;
    Ok(GradFunction { fun, argnums, argnames, with_value: false })
}

/// A function returning `(fun(...), grad)` (see `grad`).
#[pyfunction]
#[pyo3(signature = (fun, argnums = None, argnames = None))]
fn value_and_grad(fun: Py<PyAny>, argnums: Option<&Bound<'_, PyAny>>, argnames: Option<&Bound<'_, PyAny>>, py: Python<'_>) -> PyResult<GradFunction> {
    let empty = PyList::empty(py).into_any();
    let (argnums, argnames) = argnums_of(argnums, argnames.unwrap_or(&empty))?;
    Ok(GradFunction { fun, argnums, argnames, with_value: true })
}

/// The arrays of a function's result: one array, or a list or tuple of them.
fn outputs(out: &Bound<'_, PyAny>) -> PyResult<Vec<Array>> {
    if let Ok(a) = out.cast::<PyArray>() {
        return Ok(vec![a.get().array()]);
    }
    let mut v = Vec::new();
    if out.is_instance_of::<PyList>() || out.is_instance_of::<PyTuple>() {
        for x in out.try_iter()? {
            let x = x?;
            v.push(x.cast::<PyArray>().map_err(|_| PyValueError::new_err("the function must return an array or a list or tuple of arrays"))?.get().array());
        }
        return Ok(v);
    }
    Err(PyValueError::new_err("the function must return an array or a list or tuple of arrays"))
}

fn arrays(ob: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Array>> {
    if let Ok(a) = ob.cast::<PyArray>() {
        return Ok(vec![a.get().array()]);
    }
    ob.try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a list of arrays")))?
        .map(|x| Ok(x?.cast::<PyArray>().map_err(|_| PyTypeError::new_err(format!("{what} must be a list of arrays")))?.get().array()))
        .collect()
}

fn py_list<'py>(py: Python<'py>, v: &[Array]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, v.iter().map(|a| PyArray::from(a.clone())).collect::<Vec<_>>())
}

type Linear = fn(Box<dyn FnOnce(&[Array]) -> weft::Result<Vec<Array>> + '_>, &[Array], &[Array]) -> weft::Result<(Vec<Array>, Vec<Array>)>;

fn linearized<'py>(py: Python<'py>, fun: &Bound<'py, PyAny>, primals: &Bound<'py, PyAny>, seeds: &Bound<'py, PyAny>, what: &str, t: Linear) -> PyResult<Bound<'py, PyTuple>> {
    let (p, s) = (arrays(primals, "primals")?, arrays(seeds, what)?);
    let call = PyCall::new(py);
    let r = t(
        Box::new(|x| {
            call.guard((|| {
                let args = PyTuple::new(py, x.iter().map(|a| PyArray::from(a.clone())).collect::<Vec<_>>())?;
                outputs(&fun.call1(args)?)
            })())
        }),
        &p,
        &s,
    );
    let (outs, lin) = call.finish(r)?;
    PyTuple::new(py, [py_list(py, &outs)?, py_list(py, &lin)?])
}

/// `(outputs, vjps)`: `fun(*primals)` and the vector-Jacobian product with `cotangents`.
#[pyfunction]
fn vjp<'py>(py: Python<'py>, fun: &Bound<'py, PyAny>, primals: &Bound<'py, PyAny>, cotangents: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    linearized(py, fun, primals, cotangents, "cotangents", |f, p, s| transforms::vjp(f, p, s))
}

/// `(outputs, jvps)`: `fun(*primals)` and the Jacobian-vector product with `tangents`.
#[pyfunction]
fn jvp<'py>(py: Python<'py>, fun: &Bound<'py, PyAny>, primals: &Bound<'py, PyAny>, tangents: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    linearized(py, fun, primals, tangents, "tangents", |f, p, s| transforms::jvp(f, p, s))
}

/// Each leaf's mapped axis, from a spec that is an int or None for a whole
/// subtree, or a list, tuple or dict matching the argument's structure.
fn axes_of(arg: &Tree, spec: &Bound<'_, PyAny>, out: &mut Vec<Option<isize>>) -> PyResult<()> {
    if spec.is_none() || spec.extract::<isize>().is_ok() {
        let ax: Option<isize> = spec.extract()?;
        out.extend(std::iter::repeat_n(ax, count(arg)));
        return Ok(());
    }
    match arg {
        Tree::List(v) | Tree::Tuple(v) | Tree::Named(_, v) => {
            let specs: Vec<Bound<'_, PyAny>> = spec.try_iter().map_err(|_| PyValueError::new_err("vmap: in_axes entries must be int, None or match the argument"))?.collect::<PyResult<_>>()?;
            if specs.len() != v.len() {
                return Err(PyValueError::new_err(format!("vmap: in_axes has {} entries for a sequence of {}", specs.len(), v.len())));
            }
            v.iter().zip(&specs).try_for_each(|(t, s)| axes_of(t, s, out))
        }
        Tree::Dict(_, v) => {
            let d = spec.cast::<PyDict>().map_err(|_| PyValueError::new_err("vmap: in_axes for a dict must be a dict"))?;
            v.iter().try_for_each(|(k, t)| {
                let s = d.get_item(k.bind(spec.py()))?.ok_or_else(|| PyValueError::new_err("vmap: in_axes dict is missing a key"))?;
                axes_of(t, &s, out)
            })
        }
        _ => Err(PyValueError::new_err("vmap: in_axes entries must be int, None or match the argument")),
    }
}

/// What `vmap` returns: the function, vectorized.
#[pyclass(module = "weft.core", frozen)]
struct VmapFunction {
    fun: Py<PyAny>,
    in_axes: Py<PyAny>,
    out_axes: Py<PyAny>,
}

#[pymethods]
impl VmapFunction {
    #[pyo3(signature = (*args))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let mut leaves = Vec::new();
        let tree = flatten(args.as_any(), &mut leaves)?;
        let Tree::Tuple(per_arg) = &tree else { unreachable!("args is a tuple") };
        let in_axes = self.in_axes.bind(py);
        let mut axes = Vec::new();
        if in_axes.is_none() || in_axes.extract::<isize>().is_ok() {
            axes_of(&tree, in_axes, &mut axes)?;
        } else {
            // A dict is the spec of the one argument (a dict of arrays), as MLX.
            let specs: Vec<Bound<'_, PyAny>> =
                if in_axes.is_instance_of::<PyDict>() { vec![in_axes.clone()] } else { in_axes.try_iter()?.collect::<PyResult<_>>()? };
            if specs.len() != per_arg.len() {
                return Err(PyValueError::new_err(format!("vmap: {} in_axes for {} arguments", specs.len(), per_arg.len())));
            }
            per_arg.iter().zip(&specs).try_for_each(|(t, s)| axes_of(t, s, &mut axes))?;
        }
        let fun = self.fun.bind(py);
        let call = PyCall::new(py);
        let out_tree: RefCell<Option<Tree>> = RefCell::new(None);
        let out_axes_spec = self.out_axes.bind(py);
        let out_axes: RefCell<Vec<isize>> = RefCell::new(Vec::new());
        // Every output comes back with its batch axis in front, then moves
        // to its out_axes (known once the function has shown its outputs).
        let r = transforms::vmap(
            |x| {
                call.guard((|| {
                    let rebuilt = unflatten(py, &tree, &mut x.iter())?;
                    let out = fun.call1(rebuilt.cast::<PyTuple>()?.clone())?;
                    let mut outs = Vec::new();
                    let t = flatten(&out, &mut outs)?;
                    let mut ax = Vec::new();
                    // One output (not a tuple or list) takes a one-entry out_axes as its own, as MLX.
                    let one = !matches!(t, Tree::Tuple(_) | Tree::List(_))
                        && (out_axes_spec.is_instance_of::<PyTuple>() || out_axes_spec.is_instance_of::<PyList>())
                        && out_axes_spec.len()? == 1;
                    let spec = if one { out_axes_spec.get_item(0)? } else { out_axes_spec.clone() };
                    axes_of(&t, &spec, &mut ax).map_err(|_| PyValueError::new_err("vmap: out_axes must be an int or match the outputs"))?;
                    if ax.iter().any(Option::is_none) {
                        return Err(PyValueError::new_err("vmap: out_axes cannot be None"));
                    }
                    *out_axes.borrow_mut() = ax.into_iter().flatten().collect();
                    *out_tree.borrow_mut() = Some(t);
                    Ok(outs)
                })())
            },
            &leaves,
            &axes,
            &[0],
        );
        let outs = call.finish(r)?;
        let outs = outs
            .iter()
            .zip(out_axes.borrow().iter())
            .map(|(o, &ax)| weft::ops::moveaxis(o, 0, ax))
            .collect::<weft::Result<Vec<_>>>()
            .py()?;
        let t = out_tree.borrow_mut().take().ok_or_else(|| PyValueError::new_err("the function was not called"))?;
        unflatten(py, &t, &mut outs.iter())
    }
}

/// `fun` mapped over axis `in_axes` of its arguments (an int or None for
/// all, or one entry per argument); outputs get the batch axis at `out_axes`.
#[pyfunction]
#[pyo3(signature = (fun, in_axes = None, out_axes = None))]
fn vmap(py: Python<'_>, fun: Py<PyAny>, in_axes: Option<Py<PyAny>>, out_axes: Option<Py<PyAny>>) -> PyResult<VmapFunction> {
    let zero = || 0i64.into_pyobject(py).map(|z| z.into_any().unbind());
    Ok(VmapFunction { fun, in_axes: in_axes.map_or_else(zero, Ok)?, out_axes: out_axes.map_or_else(zero, Ok)? })
}

/// `a`'s value, with no gradient flowing through it.
#[pyfunction]
fn stop_gradient(a: &Bound<'_, PyArray>) -> PyArray {
    PyArray::from(transforms::stop_gradient(&a.get().array()))
}

/// A Python function on a tree's leaves, callable from any thread (it
/// attaches to the interpreter): what custom rules and checkpoints call.
fn leaf_function(
    fun: Py<PyAny>,
    tree: Arc<Tree>,
    out_tree: Arc<Mutex<Option<Tree>>>,
) -> impl Fn(&[Array]) -> weft::Result<Vec<Array>> + Send + Sync + 'static {
    move |x| {
        Python::attach(|py| -> PyResult<Vec<Array>> {
            let rebuilt = unflatten(py, &tree, &mut x.iter())?;
            let out = fun.bind(py).call1(rebuilt.cast::<PyTuple>()?.clone())?;
            let mut outs = Vec::new();
            *out_tree.lock().unwrap_or_else(|e| e.into_inner()) = Some(flatten(&out, &mut outs)?);
            Ok(outs)
        })
        .map_err(|e| weft::Error::InvalidArgument(format!("the function raised: {e}")))
    }
}

/// What `checkpoint` returns.
#[pyclass(module = "weft.core", frozen)]
struct CheckpointFunction {
    fun: Py<PyAny>,
}

#[pymethods]
impl CheckpointFunction {
    #[pyo3(signature = (*args))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let mut leaves = Vec::new();
        let tree = Arc::new(flatten(args.as_any(), &mut leaves)?);
        let out_tree: Arc<Mutex<Option<Tree>>> = Arc::new(Mutex::new(None));
        let f = Arc::new(leaf_function(self.fun.clone_ref(py), tree, out_tree.clone()));
        let outs = transforms::checkpoint(f, &leaves).py()?;
        let guard = out_tree.lock().unwrap_or_else(|e| e.into_inner());
        unflatten(py, guard.as_ref().expect("the function ran"), &mut outs.iter())
    }
}

/// `fun`, computed again in the backward pass instead of keeping its
/// intermediates (gradient checkpointing).
#[pyfunction]
fn checkpoint(fun: Py<PyAny>) -> CheckpointFunction {
    CheckpointFunction { fun }
}

/// A function with custom derivative rules: `@f.vjp` sets the rule
/// `vjp(primals, cotangents, outputs)`; `@f.jvp` and `@f.vmap` are accepted
/// and recorded, but weft derives forward mode from the vjp and batches the
/// function itself.
#[pyclass(module = "weft.core", frozen)]
struct CustomFunction {
    fun: Py<PyAny>,
    vjp: Mutex<Option<Py<PyAny>>>,
    jvp: Mutex<Option<Py<PyAny>>>,
    vmap: Mutex<Option<Py<PyAny>>>,
}

#[pymethods]
impl CustomFunction {
    fn vjp(slf: &Bound<'_, Self>, rule: Py<PyAny>) -> Py<CustomFunction> {
        *slf.get().vjp.lock().unwrap_or_else(|e| e.into_inner()) = Some(rule);
        slf.clone().unbind()
    }

    fn jvp(slf: &Bound<'_, Self>, rule: Py<PyAny>) -> Py<CustomFunction> {
        *slf.get().jvp.lock().unwrap_or_else(|e| e.into_inner()) = Some(rule);
        slf.clone().unbind()
    }

    fn vmap(slf: &Bound<'_, Self>, rule: Py<PyAny>) -> Py<CustomFunction> {
        *slf.get().vmap.lock().unwrap_or_else(|e| e.into_inner()) = Some(rule);
        slf.clone().unbind()
    }

    #[pyo3(signature = (*args))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let rule = self.vjp.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|r| r.clone_ref(py));
        let Some(rule) = rule else {
            return self.fun.bind(py).call1(args.clone());
        };
        let mut leaves = Vec::new();
        let tree = Arc::new(flatten(args.as_any(), &mut leaves)?);
        let out_tree: Arc<Mutex<Option<Tree>>> = Arc::new(Mutex::new(None));
        let call = PyCall::new(py);
        let fun = self.fun.bind(py);
        let (t2, ot) = (tree.clone(), out_tree.clone());
        let vjp_rule: Arc<transforms::VjpRule> = Arc::new(move |primals, cots, outs| {
            Python::attach(|py| -> PyResult<Vec<Array>> {
                let ot = ot.lock().unwrap_or_else(|e| e.into_inner());
                let out_t = ot.as_ref().ok_or_else(|| PyValueError::new_err("custom function: no outputs recorded"))?;
                let p = unflatten(py, &t2, &mut primals.iter())?;
                let c = unflatten(py, out_t, &mut cots.iter())?;
                let o = unflatten(py, out_t, &mut outs.iter())?;
                let r = rule.bind(py).call1((p, c, o))?;
                let mut grads = Vec::new();
                let rt = flatten(&r, &mut grads)?;
                if grads.len() != primals.len() {
                    // One array for a function of one argument is fine too.
                    let _ = rt;
                    return Err(PyValueError::new_err(format!("custom vjp returned {} arrays for {} primals", grads.len(), primals.len())));
                }
                Ok(grads)
            })
            .map_err(|e| weft::Error::InvalidArgument(format!("the custom vjp raised: {e}")))
        });
        let r = transforms::custom_vjp(
            |x| {
                call.guard((|| {
                    let out = fun.call1(unflatten(py, &tree, &mut x.iter())?.cast::<PyTuple>()?.clone())?;
                    let mut outs = Vec::new();
                    *out_tree.lock().unwrap_or_else(|e| e.into_inner()) = Some(flatten(&out, &mut outs)?);
                    Ok(outs)
                })())
            },
            vjp_rule,
            &leaves,
        );
        let outs = call.finish(r)?;
        let guard = out_tree.lock().unwrap_or_else(|e| e.into_inner());
        unflatten(py, guard.as_ref().expect("the function ran"), &mut outs.iter())
    }
}

/// Wraps `fun` so that `@f.vjp` can give it a custom derivative.
#[pyfunction]
fn custom_function(fun: Py<PyAny>) -> CustomFunction {
    CustomFunction { fun, vjp: Mutex::new(None), jvp: Mutex::new(None), vmap: Mutex::new(None) }
}

/// The cache key of a call: the arguments' structure, their non-array
/// leaves (by repr) and each array's shape and dtype (`shapeless`: its
/// number of dimensions and dtype).
fn signature(py: Python<'_>, t: &Tree, leaves: &mut std::slice::Iter<'_, Array>, shapeless: bool, out: &mut String) -> PyResult<()> {
    use std::fmt::Write;
    match t {
        Tree::Array => {
            let a = leaves.next().ok_or_else(|| PyValueError::new_err("tree has fewer arrays than its structure"))?;
            let _ = match shapeless {
                true => write!(out, "A{}d{};", a.ndim(), a.dtype()),
                false => write!(out, "A{:?}{};", a.shape(), a.dtype()),
            };
        }
        Tree::Other(o) => {
            // As MLX: constants are None, bools, ints, floats and strings
            // (keyed by value); any other object is refused rather than
            // keyed by a repr that may not tell its state.
            let o = o.bind(py);
            let constant = o.is_none()
                || o.is_instance_of::<pyo3::types::PyBool>()
                || o.is_instance_of::<pyo3::types::PyInt>()
                || o.is_instance_of::<pyo3::types::PyFloat>()
                || o.is_instance_of::<pyo3::types::PyString>();
            if !constant {
                return Err(PyValueError::new_err(format!(
                    "[compile] Function arguments must be trees of arrays or constants (None, bools, ints, floats or strings), but received type {}",
                    o.get_type().name()?
                )));
            }
            let _ = write!(out, "O{}:{};", o.get_type().name()?, o.repr()?);
        }
        Tree::List(v) | Tree::Tuple(v) | Tree::Named(_, v) => {
            if let Tree::Named(ty, _) = t {
                let _ = write!(out, "{}", ty.bind(py).repr()?);
            }
            out.push(if matches!(t, Tree::List(_)) { '[' } else { '(' });
            for x in v {
                signature(py, x, leaves, shapeless, out)?;
            }
            out.push(']');
        }
        Tree::Dict(_, v) => {
            out.push('{');
            for (k, x) in v {
                let _ = write!(out, "{}:", k.bind(py).repr()?);
                signature(py, x, leaves, shapeless, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

static COMPILE_ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

// What `compile` returns: the function, traced once per signature of its
// arguments (shapes, dtypes, structure, other values) and replayed. No `///`
// docstring on purpose: a class docstring would shadow the `__doc__` getter
// below, which gives the compiled function's own docstring (as MLX).
#[pyclass(module = "weft.core", frozen)]
struct CompiledFunction {
    fun: Py<PyAny>,
    /// `inputs=`/`outputs=` (implicit state) were given: weft then calls
    /// the function every time (correct, not cached).
    implicit: bool,
    /// Keyed without shapes: one trace per number of dimensions and dtype
    /// of each array, replayed on any shapes (`Compiled::trace_shapeless`).
    shapeless: bool,
    cache: Mutex<std::collections::HashMap<String, Arc<(transforms::Compiled, Tree)>>>,
}

#[pymethods]
impl CompiledFunction {
    /// The compiled function (so `inspect.signature` sees its parameters).
    #[getter]
    fn __wrapped__(&self, py: Python<'_>) -> Py<PyAny> {
        self.fun.clone_ref(py)
    }

    /// The function's docstring.
    #[getter]
    fn __doc__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.fun.bind(py).getattr("__doc__")?.unbind())
    }

    /// Other attributes (`__name__`, `__qualname__`, ...) are the function's.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.fun.bind(py).getattr(name)
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyAny>> {
        if self.implicit || !COMPILE_ENABLED.load(std::sync::atomic::Ordering::Relaxed) {
            return self.fun.bind(py).call(args.clone(), kwargs);
        }
        let t = self.traced(py, args, kwargs)?;
        if let Some(first) = t.first {
            return Ok(first);
        }
        let outs = t.entry.0.call(&t.leaves).py()?;
        unflatten(py, &t.entry.1, &mut outs.iter())
    }

    /// weft's addition to MLX's `compile`: records the trace for these
    /// arguments as one CUDA graph on the default stream's GPU and returns
    /// it as a function of arguments of the same structure, shapes and
    /// dtypes (and equal non-array values), whose call is one graph launch
    /// (docs/gpu.md, "CUDA graphs"). Raises `ValueError` on a CPU stream,
    /// for a function compiled with `inputs=`/`outputs=`, and when a
    /// primitive of the trace has no CUDA kernel.
    #[pyo3(signature = (*args, **kwargs))]
    fn capture<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<CapturedFunction> {
        if self.implicit {
            return Err(PyValueError::new_err(
                "capture: a function compiled with inputs=/outputs= (implicit state) reads that state when called; it cannot be captured",
            ));
        }
        let t = self.traced(py, args, kwargs)?;
        let compiled = &t.entry.0;
        let leaves = &t.leaves;
        let graph = py.detach(|| compiled.capture(leaves)).py()?;
        Ok(CapturedFunction { graph, key: t.key, shapeless: self.shapeless, entry: t.entry })
    }
}

/// A trace of a compiled function for one call's arguments.
struct Traced<'py> {
    /// The trace and its output tree.
    entry: Arc<(transforms::Compiled, Tree)>,
    /// The call's arrays, flattened.
    leaves: Vec<Array>,
    /// The call's signature (the cache key).
    key: String,
    /// The call's result, when this call traced the function (the trace
    /// ran the function, so these are its outputs).
    first: Option<Bound<'py, PyAny>>,
}

impl CompiledFunction {
    /// The cached trace for `args`/`kwargs`, or a new one (cached).
    fn traced<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Traced<'py>> {
        let fun = self.fun.bind(py);
        let (tree, leaves, key) = call_signature(py, args, kwargs, self.shapeless)?;
        let hit = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(entry) = hit {
            return Ok(Traced { entry, leaves, key, first: None });
        }
        let call = PyCall::new(py);
        let out_tree: RefCell<Option<Tree>> = RefCell::new(None);
        let body = |x: &[Array]| {
            call.guard((|| {
                let rebuilt = unflatten(py, &tree, &mut x.iter())?;
                let (a, k) = (rebuilt.get_item(0)?, rebuilt.get_item(1)?);
                let out = fun.call(a.cast::<PyTuple>()?, Some(k.cast::<PyDict>()?))?;
                let mut outs = Vec::new();
                *out_tree.borrow_mut() = Some(flatten(&out, &mut outs)?);
                Ok(outs)
            })())
        };
        let r = match self.shapeless {
            true => transforms::Compiled::trace_shapeless(body, &leaves),
            false => transforms::Compiled::trace(body, &leaves),
        };
        let (compiled, outs) = call.finish(r)?;
        let t = out_tree.borrow_mut().take().ok_or_else(|| PyValueError::new_err("the function was not called"))?;
        let first = unflatten(py, &t, &mut outs.iter())?;
        let entry = Arc::new((compiled, t));
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), entry.clone());
        Ok(Traced { entry, leaves, key, first: Some(first) })
    }
}

/// A call's arguments as one tree `(args, kwargs)`, its arrays and its
/// signature (`signature`).
fn call_signature<'py>(py: Python<'py>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>, shapeless: bool) -> PyResult<(Tree, Vec<Array>, String)> {
    let all = PyTuple::new(py, [args.clone().into_any(), kwargs.map_or_else(|| PyDict::new(py).into_any(), |k| k.clone().into_any())])?;
    let mut leaves = Vec::new();
    let tree = flatten(all.as_any(), &mut leaves)?;
    let mut key = String::new();
    signature(py, &tree, &mut leaves.iter(), shapeless, &mut key)?;
    Ok((tree, leaves, key))
}

/// What `CompiledFunction.capture` returns: a compiled function's trace
/// recorded as a CUDA graph (`weft::transforms::Captured`). Calls from any
/// thread; they are enqueued one at a time and run in that order.
#[pyclass(module = "weft.core", frozen)]
struct CapturedFunction {
    graph: transforms::Captured,
    /// The signature of the arguments it was captured for.
    key: String,
    shapeless: bool,
    /// The trace and its output tree (rebuilds the outputs' structure).
    entry: Arc<(transforms::Compiled, Tree)>,
}

#[pymethods]
impl CapturedFunction {
    /// The function's outputs for arguments like the captured ones: one
    /// graph launch (inputs copied into the graph's slots, outputs copied
    /// out to new arrays).
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyAny>> {
        let (_, leaves, key) = call_signature(py, args, kwargs, self.shapeless)?;
        if key != self.key {
            return Err(PyValueError::new_err(format!(
                "captured function: called with arguments {key}, but it was captured for {} (capture again for new arguments)",
                self.key
            )));
        }
        let graph = &self.graph;
        let outs = py.detach(|| graph.call(&leaves)).py()?;
        unflatten(py, &self.entry.1, &mut outs.iter())
    }

    /// How many device buffers the graph holds for its life.
    #[getter]
    fn buffers(&self) -> usize {
        self.graph.buffers()
    }
}

/// `fun`, traced once per signature of its arguments and replayed after
/// (MLX's `compile`; on CPU streams chains of elementwise ops run as one
/// fused kernel, docs/transforms.md). With `inputs` or
/// `outputs` (implicit state), the function is called every time.
/// `shapeless=True` traces once per number of dimensions and dtype of each
/// array argument and replays that trace on new shapes, every node's shape
/// recomputed from its inputs'; a call on new shapes raises `ValueError`
/// where an op fixed a shape when traced (a `reshape` to given sizes, a
/// slice with given bounds, a Python `x.shape[0]` used as a number:
/// docs/transforms.md).
#[pyfunction]
#[pyo3(signature = (fun, inputs = None, outputs = None, shapeless = false))]
fn compile(fun: Py<PyAny>, inputs: Option<Py<PyAny>>, outputs: Option<Py<PyAny>>, shapeless: bool) -> CompiledFunction {
    CompiledFunction { fun, implicit: inputs.is_some() || outputs.is_some(), shapeless, cache: Mutex::new(Default::default()) }
}

/// Makes `compile`d functions call the function directly (process-wide).
#[pyfunction]
fn disable_compile() {
    COMPILE_ENABLED.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// Undoes `disable_compile`.
#[pyfunction]
fn enable_compile() {
    COMPILE_ENABLED.store(true, std::sync::atomic::Ordering::Relaxed);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CompiledFunction>()?;
    m.add_class::<CapturedFunction>()?;
    m.add_class::<GradFunction>()?;
    m.add_class::<VmapFunction>()?;
    m.add_class::<CheckpointFunction>()?;
    m.add_class::<CustomFunction>()?;
    for f in [
        wrap_pyfunction!(grad, m)?,
        wrap_pyfunction!(value_and_grad, m)?,
        wrap_pyfunction!(vjp, m)?,
        wrap_pyfunction!(jvp, m)?,
        wrap_pyfunction!(vmap, m)?,
        wrap_pyfunction!(stop_gradient, m)?,
        wrap_pyfunction!(checkpoint, m)?,
        wrap_pyfunction!(custom_function, m)?,
        wrap_pyfunction!(compile, m)?,
        wrap_pyfunction!(disable_compile, m)?,
        wrap_pyfunction!(enable_compile, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
