//! `Array`: a cheap handle to a lazy graph node.

use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::scheduler::node::{NodeState, DONE};
use crate::shape::{check_shape, numel};
use crate::stream::{current_stream, Stream};
use crate::transforms::trace::{self, Tape, TapeOp};
use crate::{Error, Result};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// An n-dimensional array: a node of a lazy graph, computed on demand.
///
/// Cloning is cheap (a reference count). `Array` is `Send + Sync`: an array
/// built on one thread can be evaluated, read or used in new ops on any other.
///
/// ```
/// use weft::{ops, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
/// let b = (&a * &a).unwrap();
/// assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 4.0, 9.0]);
/// assert_eq!(ops::sum(&b, &[0], false).unwrap().item::<f32>().unwrap(), 14.0);
/// ```
#[derive(Clone)]
pub struct Array(pub(crate) Arc<Node>);

pub(crate) struct Node {
    /// Global construction order: every input is older than its users.
    id: u64,
    shape: Vec<usize>,
    dtype: Dtype,
    /// The concrete stream the node runs on.
    stream: Stream,
    /// Primitive and inputs while the node is PENDING or CLAIMED; moved into
    /// its task when queued.
    pub(crate) graph: Mutex<Option<Graph>>,
    pub(crate) state: NodeState<Result<Data>>,
    /// Position of the node's task in its queue's execution order, once run.
    pub(crate) exec_position: AtomicU64,
    /// What a function transform replays: kept only for nodes that depend on
    /// a transform's traced inputs (`transforms/trace.rs`), and never taken
    /// by scheduling, so evaluating inside a traced function loses nothing.
    pub(crate) tape: Option<Box<Tape>>,
}

pub(crate) struct Graph {
    pub prim: Primitive,
    pub inputs: Vec<Array>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl Array {
    fn with_state(shape: Vec<usize>, dtype: Dtype, stream: Stream, graph: Option<Graph>, state: NodeState<Result<Data>>) -> Array {
        Array::with_tape(shape, dtype, stream, graph, state, None)
    }

    fn with_tape(
        shape: Vec<usize>,
        dtype: Dtype,
        stream: Stream,
        graph: Option<Graph>,
        state: NodeState<Result<Data>>,
        tape: Option<Box<Tape>>,
    ) -> Array {
        Array(Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape,
            dtype,
            stream,
            graph: Mutex::new(graph),
            state,
            exec_position: AtomicU64::new(u64::MAX),
            tape,
        }))
    }

    /// A lazy node on the calling thread's current stream. Used by `ops`,
    /// which have checked dtypes and how shapes fit; the shape itself passes
    /// `shape::check_shape` here, the one place every node is made, so no
    /// array's element count, strides or byte size can overflow.
    pub(crate) fn from_op(prim: Primitive, inputs: Vec<Array>, shape: Vec<usize>, dtype: Dtype) -> Result<Array> {
        Array::from_op_noted(prim, inputs, shape, dtype, || None)
    }

    /// [`Array::from_op`], with what a shapeless replay needs to know of the
    /// node's shape beyond its primitive's rule (`note` is called only when
    /// the node is traced).
    pub(crate) fn from_op_noted(
        prim: Primitive,
        inputs: Vec<Array>,
        shape: Vec<usize>,
        dtype: Dtype,
        note: impl FnOnce() -> Option<trace::ShapeNote>,
    ) -> Result<Array> {
        check_shape(&shape, dtype.size())?;
        crate::primitive::complex::check(&prim, &inputs, dtype)?;
        let stream = current_stream();
        let traces = trace::union(&inputs);
        let tape = (!traces.is_empty())
            .then(|| Box::new(Tape { traces, op: TapeOp::Prim(prim.clone()), inputs: inputs.clone(), note: note() }));
        Ok(Array::with_tape(shape, dtype, stream, Some(Graph { prim, inputs }), NodeState::pending(), tape))
    }

    /// The same value as `a` in a new node that carries `tape` instead of
    /// what `a` carries (an identity `Reshape` for scheduling): how
    /// transforms mark traced inputs, remove a finished trace from their
    /// results, stop gradients and hide a custom function's inside.
    pub(crate) fn retaped(a: &Array, tape: Option<Box<Tape>>) -> Array {
        let graph = Graph { prim: Primitive::Reshape, inputs: vec![a.clone()] };
        Array::with_tape(a.shape().to_vec(), a.dtype(), current_stream(), Some(graph), NodeState::pending(), tape)
    }

    /// The transforms' record of this node, if it depends on a traced input.
    pub(crate) fn tape(&self) -> Option<&Tape> {
        self.0.tape.as_deref()
    }

    /// An evaluated array holding `data` (a host or device buffer), on the current stream.
    pub(crate) fn from_data(data: Data, dtype: Dtype) -> Array {
        let shape = data.layout.shape.clone();
        Array::with_state(shape, dtype, current_stream(), None, NodeState::done(Ok(data)))
    }

    /// An array of `shape` holding `data` (row-major).
    pub fn from_slice<T: CpuElement>(data: &[T], shape: &[usize]) -> Result<Array> {
        Array::from_vec(data.to_vec(), shape)
    }

    /// An array of `shape` owning `data` (row-major), without copying.
    pub fn from_vec<T: CpuElement>(data: Vec<T>, shape: &[usize]) -> Result<Array> {
        if data.len() != check_shape(shape, T::DTYPE.size())? {
            return Err(Error::Shape(format!(
                "{} elements cannot fill shape {shape:?} ({} elements)",
                data.len(),
                numel(shape)
            )));
        }
        Ok(Array::from_data(Data::cpu(CpuBuffer::from_vec(data)?, shape), T::DTYPE))
    }

    /// An array of `shape` and `dtype` copied from native-endian `bytes`
    /// (a NumPy array's memory), reserving memory before allocating; bool
    /// bytes other than 0 read as true (`CpuBuffer::from_ne_bytes`).
    pub fn from_bytes(bytes: &[u8], dtype: Dtype, shape: &[usize]) -> Result<Array> {
        let n = check_shape(shape, dtype.size())?;
        if bytes.len() != n * dtype.size() {
            return Err(Error::Shape(format!(
                "{} bytes cannot fill shape {shape:?} of {dtype} ({} bytes)",
                bytes.len(),
                n * dtype.size()
            )));
        }
        let buffer = CpuBuffer::from_ne_bytes(dtype, bytes)?;
        Ok(Array::from_data(Data::cpu(buffer, shape), dtype))
    }

    /// An array whose evaluation fails with `error` (as does every array
    /// computed from it): how a reader reports, at evaluation as MLX does,
    /// data that a file's header promised and the file lacks.
    pub(crate) fn failed(shape: &[usize], dtype: Dtype, error: Error) -> Array {
        Array::with_state(shape.to_vec(), dtype, current_stream(), None, NodeState::done(Err(error)))
    }

    /// An evaluated array viewing `buffer` through `layout` (strides in
    /// elements, possibly 0 or negative, and an offset), as a DLPack or
    /// buffer-protocol import keeps the producer's strides. Every element
    /// the layout reaches must lie in the buffer, and the dtype is the
    /// buffer's.
    pub fn from_strided(buffer: CpuBuffer, layout: crate::shape::Layout) -> Result<Array> {
        let dtype = buffer.dtype();
        check_shape(&layout.shape, dtype.size())?;
        if layout.strides.len() != layout.shape.len() {
            return Err(Error::Shape(format!("{} strides for shape {:?}", layout.strides.len(), layout.shape)));
        }
        if layout.numel() > 0 {
            let (mut lo, mut hi) = (layout.offset as i128, layout.offset as i128);
            for (&d, &s) in layout.shape.iter().zip(&layout.strides) {
                let reach = (d as i128 - 1) * s as i128;
                if reach < 0 { lo += reach } else { hi += reach }
            }
            if lo < 0 || hi >= buffer.data.len() as i128 {
                return Err(Error::Shape(format!(
                    "layout {layout:?} reaches elements {lo}..={hi} of a buffer of {}",
                    buffer.data.len()
                )));
            }
        }
        let data = Data { buffer: Arc::new(crate::buffer::Buffer::Cpu(buffer)), layout };
        Ok(Array::from_data(data, dtype))
    }

    /// A zero-dimensional array.
    pub fn scalar<T: CpuElement>(v: T) -> Array {
        Array::from_vec(vec![v], &[]).expect("one element fills a scalar")
    }

    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    pub fn dtype(&self) -> Dtype {
        self.0.dtype
    }

    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        numel(&self.0.shape)
    }

    /// Bytes the elements take.
    pub fn nbytes(&self) -> usize {
        self.size() * self.0.dtype.size()
    }

    /// The concrete stream this array is computed on.
    pub fn stream(&self) -> Stream {
        self.0.stream
    }

    pub fn device(&self) -> crate::Device {
        self.0.stream.device()
    }

    /// Construction order, unique per array.
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Whether the value is computed (or its computation failed).
    pub fn is_evaluated(&self) -> bool {
        self.0.state.get() == DONE
    }

    /// Where this array's task ran in its stream's execution order (0 for the
    /// stream's first task), once it has run; `None` for constants and
    /// arrays not run yet. For tests and debugging of stream ordering.
    pub fn exec_position(&self) -> Option<u64> {
        match self.0.exec_position.load(Ordering::Acquire) {
            u64::MAX => None,
            p => Some(p),
        }
    }

    /// Evaluates this array (see [`crate::eval`]).
    pub fn eval(&self) -> Result<()> {
        crate::eval(std::slice::from_ref(self))
    }

    /// The evaluated data, evaluating first if needed.
    pub fn data(&self) -> Result<Data> {
        if self.0.state.get() != DONE {
            self.eval()?;
        }
        self.0.state.wait_result()
    }

    /// The elements in row-major order. `T` must be the array's dtype.
    pub fn to_vec<T: CpuElement>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::Dtype(format!(
                "cannot read a {} array as {}",
                self.dtype(),
                T::DTYPE
            )));
        }
        self.data()?.to_vec::<T>()
    }

    /// The single element of a one-element array.
    pub fn item<T: CpuElement>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::Shape(format!(
                "item() needs an array of one element, this one has shape {:?}",
                self.shape()
            )));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// The elements converted to `f64`, in row-major order (any dtype).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        crate::ops::astype(self, Dtype::F64)?.to_vec::<f64>()
    }
}

impl Drop for Node {
    /// Drops a long chain of unevaluated nodes iteratively: the default,
    /// recursive drop would overflow the stack on deep graphs.
    fn drop(&mut self) {
        let mut stack = Vec::new();
        take_inputs(self, &mut stack);
        while let Some(a) = stack.pop() {
            if let Ok(mut node) = Arc::try_unwrap(a.0) {
                take_inputs(&mut node, &mut stack);
            }
        }
    }
}

/// Moves the inputs a node holds (its pending graph and its tape) to `stack`.
fn take_inputs(node: &mut Node, stack: &mut Vec<Array>) {
    if let Some(g) = node.graph.get_mut().map(Option::take).unwrap_or(None) {
        stack.extend(g.inputs);
    }
    if let Some(t) = node.tape.take() {
        stack.extend(t.inputs);
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array(shape={:?}, dtype={}, {})", self.shape(), self.dtype(), self.stream())
    }
}
