//! `compile`: a function traced once and replayed on new inputs of the
//! same shapes and dtypes, without calling it again.
//!
//! The trace is the graph the function built on marked inputs (`trace.rs`);
//! a call rebuilds that graph's nodes, oldest first, with the same
//! primitives on the new inputs. Arrays the function captured (not derived
//! from its inputs) are constants of the trace.
//!
//! A *shapeless* trace ([`Compiled::trace_shapeless`]) also replays on
//! inputs of new shapes (the same number of dimensions and dtypes): a first
//! pass gives every node its new shape, from the note its op left on it
//! (`trace::ShapeNote`: squeezes, matmul's batch broadcasts, the counts of
//! `mean` and `var`) or else from its primitive's rule
//! (`Primitive::output_shape`, `primitive/shape.rs`). A node whose inputs
//! kept their traced shapes keeps its traced shape; one whose inputs changed
//! and whose primitive has no rule (a reshape to a given shape, a slice, ...)
//! fails the call with `Error::Shape` naming the primitive.
//!
//! The replay fuses: each chain of elementwise nodes whose intermediates
//! nothing else reads (`fuse.rs`) is one `Primitive::Fused` node, run in one
//! chunked pass on the CPU (`backend/cpu/fused.rs`) and as one generated
//! kernel on CUDA (`backend/cuda/fused.rs`). A shapeless replay fuses a
//! group only where its members still share one shape. A `Compiled` is
//! immutable (its programs are shared `Arc`s), so any number of threads may
//! call it at once.
//!
//! On a GPU, [`Compiled::capture`] records one replay as a CUDA graph
//! ([`Captured`], `backend/cuda/graph.rs`): a call then copies its inputs in,
//! launches the whole graph at once and copies the outputs out, with no
//! per-node host work (no node, task, allocation or launch per primitive).

use super::fuse::{self, Group};
use super::trace::{self, new_trace, Kind, ShapeNote, TapeOp};
use crate::backend::cuda::graph::{CudaGraph, Recorder};
use crate::buffer::Data;
use crate::device::DeviceType;
use crate::dtype::Dtype;
use crate::primitive::{OutSpec, Primitive};
use crate::shape::broadcast_shapes;
use crate::{bail, ops, Array, Device, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// A trace node's part in a fused replay.
enum Fusion {
    /// The result of a group: built as one fused node.
    Root(Arc<Group>),
    /// Read only inside the group of this root: not built.
    Inner(u64),
}

/// A traced function, ready to replay.
pub struct Compiled {
    /// The marked inputs of the trace (their ids are the replay's slots).
    inputs: Vec<Array>,
    /// The trace's nodes, oldest first.
    nodes: Vec<Array>,
    outputs: Vec<Array>,
    /// The fused groups, by node id.
    fusion: HashMap<u64, Fusion>,
    /// Whether calls may give inputs of other shapes (same ndim and dtype).
    shapeless: bool,
}

/// What a shapeless call changes before building: each node's new shape,
/// and the constants recomputed for it (by the constant's id).
struct Plan {
    shapes: HashMap<u64, Vec<usize>>,
    constants: HashMap<u64, Array>,
}

impl Compiled {
    /// Traces `f` on `inputs` (and returns its outputs there).
    ///
    /// ```
    /// use weft::{ops, transforms::Compiled, Array};
    /// let f = |x: &[Array]| Ok(vec![ops::exp(&ops::negative(&x[0])?)?]);
    /// let (c, _) = Compiled::trace(f, &[Array::from_slice(&[0.0f32], &[1]).unwrap()]).unwrap();
    /// let y = c.call(&[Array::from_slice(&[2.0f32.ln()], &[1]).unwrap()]).unwrap();
    /// assert!((y[0].to_vec::<f32>().unwrap()[0] - 0.5).abs() < 1e-6);
    /// ```
    pub fn trace(f: impl FnOnce(&[Array]) -> Result<Vec<Array>>, inputs: &[Array]) -> Result<(Compiled, Vec<Array>)> {
        Compiled::trace_with(f, inputs, false)
    }

    /// Traces `f` on `inputs` for replays on inputs of any shapes with the
    /// traced inputs' numbers of dimensions and dtypes (MLX's
    /// `shapeless=True`): `f` runs once, and a call on new shapes replays
    /// the trace with every node's shape recomputed (module docs).
    ///
    /// ```
    /// use weft::{ops, transforms::Compiled, Array};
    /// let f = |x: &[Array]| Ok(vec![ops::sum(&ops::exp(&x[0])?, &[-1], false)?]);
    /// let (c, _) = Compiled::trace_shapeless(f, &[Array::from_slice(&[0.0f32; 6], &[2, 3]).unwrap()]).unwrap();
    /// let y = c.call(&[Array::from_slice(&[0.0f32; 20], &[5, 4]).unwrap()]).unwrap();
    /// assert_eq!(y[0].shape(), &[5]);
    /// assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![4.0; 5]);
    /// ```
    pub fn trace_shapeless(f: impl FnOnce(&[Array]) -> Result<Vec<Array>>, inputs: &[Array]) -> Result<(Compiled, Vec<Array>)> {
        Compiled::trace_with(f, inputs, true)
    }

    /// Whether calls may give inputs of new shapes ([`Compiled::trace_shapeless`]).
    pub fn is_shapeless(&self) -> bool {
        self.shapeless
    }

    fn trace_with(f: impl FnOnce(&[Array]) -> Result<Vec<Array>>, inputs: &[Array], shapeless: bool) -> Result<(Compiled, Vec<Array>)> {
        let t = new_trace(Kind::Batch);
        let marked: Vec<Array> = inputs.iter().map(|x| trace::mark(x, t)).collect();
        let outs = f(&marked)?;
        let stop: HashSet<u64> = marked.iter().map(Array::id).collect();
        let deps = |tape: &trace::Tape| match &tape.op {
            TapeOp::Prim(_) => tape.inputs.clone(),
            TapeOp::Custom(call, i) => vec![call.outs[*i].clone()],
        };
        let nodes = trace::collect(t, &outs, &stop, deps);
        let mut fusion = HashMap::new();
        for g in fuse::groups(&nodes, &outs, &stop, deps) {
            let g = Arc::new(g);
            for &id in &g.inner {
                fusion.insert(id, Fusion::Inner(g.root.id()));
            }
            fusion.insert(g.root.id(), Fusion::Root(g));
        }
        let returned = outs.iter().map(|o| trace::unmark(o, t)).collect();
        Ok((Compiled { inputs: marked, nodes, outputs: outs, fusion, shapeless }, returned))
    }

    /// The traced function's outputs for `inputs`, which must have the
    /// traced inputs' shapes and dtypes (a shapeless trace: their numbers
    /// of dimensions and dtypes).
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        if inputs.len() != self.inputs.len() {
            bail!(InvalidArgument, "compiled function: {} inputs for a trace of {}", inputs.len(), self.inputs.len());
        }
        let mut now: HashMap<u64, Array> = HashMap::with_capacity(self.nodes.len());
        let mut reshaped = false;
        for (m, x) in self.inputs.iter().zip(inputs) {
            let fits = if self.shapeless { m.ndim() == x.ndim() } else { m.shape() == x.shape() };
            if !fits || m.dtype() != x.dtype() {
                bail!(
                    Shape,
                    "compiled function: input of shape {:?} ({}) for a {}trace of shape {:?} ({})",
                    x.shape(),
                    x.dtype(),
                    if self.shapeless { "shapeless " } else { "" },
                    m.shape(),
                    m.dtype()
                );
            }
            reshaped |= m.shape() != x.shape();
            now.insert(m.id(), x.clone());
        }
        let plan = if reshaped { Some(self.plan(inputs)?) } else { None };
        if let Some(p) = &plan {
            now.extend(p.constants.iter().map(|(&id, c)| (id, c.clone())));
        }
        let shape_of = |node: &Array| -> Vec<usize> {
            plan.as_ref().and_then(|p| p.shapes.get(&node.id())).cloned().unwrap_or_else(|| node.shape().to_vec())
        };
        // A shapeless replay fuses a group only where its members still
        // have one shape (a fused node has one shape for every step).
        let fused_root = |root: u64| -> bool {
            let (Some(p), Some(Fusion::Root(g))) = (&plan, self.fusion.get(&root)) else { return true };
            let shape = p.shapes.get(&root);
            g.inner.iter().all(|id| p.shapes.get(id) == shape)
        };
        for node in &self.nodes {
            if now.contains_key(&node.id()) {
                continue;
            }
            match self.fusion.get(&node.id()) {
                Some(Fusion::Inner(root)) if fused_root(*root) => continue,
                Some(Fusion::Root(g)) if fused_root(node.id()) => {
                    let ins: Vec<Array> = g.inputs.iter().map(|x| now.get(&x.id()).cloned().unwrap_or_else(|| x.clone())).collect();
                    now.insert(node.id(), ops::fused(&g.program, &ins, &shape_of(node))?);
                    continue;
                }
                _ => {}
            }
            let Some(tape) = node.tape() else { continue };
            let replayed = match &tape.op {
                TapeOp::Prim(p) => {
                    let mut ins: Vec<Array> = tape.inputs.iter().map(|x| now.get(&x.id()).cloned().unwrap_or_else(|| x.clone())).collect();
                    let shape = shape_of(node);
                    if plan.is_some() && matches!(p, Primitive::Matmul) {
                        // The op broadcast the batch axes before the node;
                        // broadcast the new operands to the new batch.
                        let nd = shape.len();
                        for x in ins.iter_mut() {
                            let want = [&shape[..nd - 2], &x.shape()[nd - 2..]].concat();
                            *x = ops::broadcast_to(x, &want)?;
                        }
                    }
                    Array::from_op(p.clone(), ins, shape, node.dtype())?
                }
                TapeOp::Custom(call, i) => match now.get(&call.outs[*i].id()) {
                    Some(a) => a.clone(),
                    None => continue,
                },
            };
            now.insert(node.id(), replayed);
        }
        Ok(self.outputs.iter().map(|o| now.get(&o.id()).cloned().unwrap_or_else(|| o.clone())).collect())
    }

    /// The new shape of every node for `inputs` of new shapes (a shapeless
    /// trace), and the shape-dependent constants recomputed.
    fn plan(&self, inputs: &[Array]) -> Result<Plan> {
        let mut shapes: HashMap<u64, Vec<usize>> = HashMap::with_capacity(self.nodes.len());
        let mut constants = HashMap::new();
        for (m, x) in self.inputs.iter().zip(inputs) {
            shapes.insert(m.id(), x.shape().to_vec());
        }
        for node in &self.nodes {
            if shapes.contains_key(&node.id()) {
                continue;
            }
            let Some(tape) = node.tape() else { continue };
            let new = |a: &Array, shapes: &HashMap<u64, Vec<usize>>| shapes.get(&a.id()).cloned().unwrap_or_else(|| a.shape().to_vec());
            let shape = match &tape.op {
                TapeOp::Custom(call, i) => new(&call.outs[*i], &shapes),
                TapeOp::Prim(p) => {
                    let ins: Vec<Vec<usize>> = tape.inputs.iter().map(|x| new(x, &shapes)).collect();
                    let unchanged = ins.iter().zip(&tape.inputs).all(|(s, x)| s == x.shape());
                    let fail = |e: crate::Error| {
                        crate::Error::Shape(format!(
                            "shapeless compile: cannot replay {} (traced on inputs of shapes {:?}, giving {:?}) on inputs of shapes {ins:?}: {e}",
                            p.name(),
                            tape.inputs.iter().map(|x| x.shape().to_vec()).collect::<Vec<_>>(),
                            node.shape(),
                        ))
                    };
                    match &tape.note {
                        Some(ShapeNote::Units { remove, insert }) => {
                            crate::primitive::shape::units_shape(&ins[0], remove, insert).map_err(fail)?
                        }
                        Some(ShapeNote::BatchOf { with, tail }) => {
                            let (x, w) = (&ins[0], new(with, &shapes));
                            let (nx, nw) = (x.len().saturating_sub(*tail), w.len().saturating_sub(*tail));
                            let mut out = broadcast_shapes(&x[..nx], &w[..nw]).map_err(fail)?;
                            out.extend_from_slice(&x[nx..]);
                            out
                        }
                        Some(ShapeNote::InvCount { operand, of, axes, ddof }) => {
                            let of = new(of, &shapes);
                            let n: usize = axes.iter().map(|&a| of.get(a).copied().unwrap_or(1)).product();
                            let denom = n as f64 - *ddof as f64;
                            let inv = if denom > 0.0 { 1.0 / denom } else { f64::INFINITY };
                            let c = &tape.inputs[*operand];
                            constants.insert(c.id(), ops::astype(&Array::scalar(inv), c.dtype())?);
                            p.output_shape(&ins.iter().map(Vec::as_slice).collect::<Vec<_>>()).map_err(fail)?
                        }
                        None if unchanged => node.shape().to_vec(),
                        None => p.output_shape(&ins.iter().map(Vec::as_slice).collect::<Vec<_>>()).map_err(fail)?,
                    }
                }
            };
            if shape.len() != node.ndim() {
                bail!(Internal, "shapeless compile: {:?} replayed as {shape:?}", node.shape());
            }
            shapes.insert(node.id(), shape);
        }
        Ok(Plan { shapes, constants })
    }

    /// How many nodes of each primitive a call builds
    /// (`"Fused"` for each fused chain): what the replay runs.
    ///
    /// ```
    /// use weft::{ops, transforms::Compiled, Array};
    /// let f = |x: &[Array]| Ok(vec![ops::exp(&ops::negative(&x[0])?)?]);
    /// let (c, _) = Compiled::trace(f, &[Array::from_slice(&[0.0f32], &[1]).unwrap()]).unwrap();
    /// assert_eq!(c.primitive_counts().get("Fused"), Some(&1));
    /// assert_eq!(c.primitive_counts().get("Unary"), None);
    /// ```
    pub fn primitive_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        let inputs: HashSet<u64> = self.inputs.iter().map(Array::id).collect();
        for node in &self.nodes {
            if inputs.contains(&node.id()) {
                continue;
            }
            let name = match (self.fusion.get(&node.id()), node.tape().map(|t| &t.op)) {
                (Some(Fusion::Inner(_)), _) => continue,
                (Some(Fusion::Root(_)), _) => "Fused".to_string(),
                (None, Some(TapeOp::Prim(p))) => p.name().to_string(),
                (None, Some(TapeOp::Custom(..))) => "Custom".to_string(),
                (None, None) => continue,
            };
            *counts.entry(name).or_insert(0) += 1;
        }
        counts
    }

    /// Records a replay on `inputs` (the traced shapes and dtypes) as a CUDA
    /// graph on the current stream's GPU ([`Captured`]). The trace must be
    /// one every node of which has a CUDA kernel (docs/gpu.md lists the
    /// host fallbacks, which are refused with an error naming the
    /// primitive), and without custom-derivative functions.
    ///
    /// Memory: the graph keeps one buffer per node of the replay for its
    /// whole life (no reuse between nodes), plus its input slots.
    pub fn capture(&self, inputs: &[Array]) -> Result<Captured> {
        let stream = crate::stream::current_stream();
        if stream.device().kind != DeviceType::Gpu {
            bail!(
                InvalidArgument,
                "compiled function: capturing a CUDA graph needs a GPU stream (the current stream is {stream})"
            );
        }
        let examples = self.graph_inputs(inputs)?;
        let mut program = |rec: &Recorder<'_>, slots: &[Data], keep: &mut Vec<Data>| self.record(rec, slots, keep);
        let graph = CudaGraph::capture(stream, &examples, &mut program)?;
        let inputs = self.inputs.iter().map(|m| (m.shape().to_vec(), m.dtype())).collect();
        Ok(Captured { graph, inputs, device: stream.device() })
    }

    /// `inputs` checked against the trace (same shapes and dtypes),
    /// evaluated and contiguous.
    fn graph_inputs(&self, inputs: &[Array]) -> Result<Vec<Data>> {
        check_inputs(&self.inputs.iter().map(|m| (m.shape().to_vec(), m.dtype())).collect::<Vec<_>>(), inputs)?;
        inputs.iter().map(contiguous_data).collect()
    }

    /// The replay as a CUDA graph's program: every node of the trace run by
    /// `rec` on the input slots, oldest first (fused chains as one node).
    fn record(&self, rec: &Recorder<'_>, slots: &[Data], keep: &mut Vec<Data>) -> Result<Vec<Data>> {
        let mut now: HashMap<u64, Data> = HashMap::with_capacity(self.nodes.len());
        for (m, d) in self.inputs.iter().zip(slots) {
            now.insert(m.id(), d.clone());
        }
        // A value of the trace, or a constant's (evaluated on first use,
        // which is the uncaptured first run).
        let value = |x: &Array, now: &HashMap<u64, Data>, keep: &mut Vec<Data>| -> Result<Data> {
            match now.get(&x.id()) {
                Some(d) => Ok(d.clone()),
                None => {
                    let d = x.data()?;
                    keep.push(d.clone());
                    Ok(d)
                }
            }
        };
        for node in &self.nodes {
            if now.contains_key(&node.id()) {
                continue;
            }
            let (prim, ins) = match (self.fusion.get(&node.id()), node.tape().map(|t| &t.op)) {
                (Some(Fusion::Inner(_)), _) | (_, None) => continue,
                (Some(Fusion::Root(g)), _) => (Primitive::Fused(g.program.clone()), &g.inputs),
                (None, Some(TapeOp::Prim(p))) => (p.clone(), &node.tape().expect("taped").inputs),
                (None, Some(TapeOp::Custom(..))) => {
                    bail!(InvalidArgument, "compiled function: a function with a custom derivative cannot be captured in a CUDA graph")
                }
            };
            let data = ins.iter().map(|x| value(x, &now, keep)).collect::<Result<Vec<_>>>()?;
            let out = rec.run(&prim, data, OutSpec { shape: node.shape(), dtype: node.dtype() })?;
            keep.push(out.clone());
            now.insert(node.id(), out);
        }
        self.outputs.iter().map(|o| value(o, &now, keep)).collect()
    }

    /// The fused programs a call runs, oldest first.
    pub fn fused_programs(&self) -> Vec<Arc<crate::primitive::FusedProgram>> {
        self.nodes
            .iter()
            .filter_map(|n| match self.fusion.get(&n.id()) {
                Some(Fusion::Root(g)) => Some(g.program.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Fails unless `inputs` have exactly the shapes and dtypes of `specs`.
fn check_inputs(specs: &[(Vec<usize>, Dtype)], inputs: &[Array]) -> Result<()> {
    if inputs.len() != specs.len() {
        bail!(InvalidArgument, "captured function: {} inputs for a graph of {}", inputs.len(), specs.len());
    }
    for ((shape, dtype), x) in specs.iter().zip(inputs) {
        if x.shape() != shape.as_slice() || x.dtype() != *dtype {
            bail!(
                Shape,
                "captured function: input of shape {:?} ({}) for a graph captured on shape {shape:?} ({dtype})",
                x.shape(),
                x.dtype()
            );
        }
    }
    Ok(())
}

/// `x` evaluated, as contiguous data (copied when it is a strided view).
fn contiguous_data(x: &Array) -> Result<Data> {
    let d = x.data()?;
    if d.layout.is_contiguous() {
        return Ok(d);
    }
    ops::copy_as(x, x.dtype())?.data()
}

/// A compiled function recorded as a CUDA graph ([`Compiled::capture`]).
///
/// A call copies its inputs into the graph's input slots, launches the graph
/// (every kernel of the replay in one `cuGraphLaunch`) and copies the
/// outputs into fresh arrays, all in order on the graph's own stream; it
/// returns once that is enqueued, and the outputs are evaluated arrays
/// (reading them waits for the graph). Any thread may call it; calls are
/// enqueued one at a time (they share the slots) and run in that order.
///
/// ```no_run
/// use weft::{ops, transforms::Compiled, Array, Device};
/// weft::set_default_device(Device::gpu(0));
/// let w = ops::full(&[64, 64], 0.01f32).unwrap();
/// let f = move |x: &[Array]| Ok(vec![ops::tanh(&ops::matmul(&x[0], &w)?)?]);
/// let x = ops::full(&[1, 64], 1.0f32).unwrap();
/// let (c, _) = Compiled::trace(f, &[x.clone()]).unwrap();
/// let g = c.capture(&[x.clone()]).unwrap();
/// let y = g.call(&[x]).unwrap();
/// assert_eq!(y[0].shape(), &[1, 64]);
/// ```
pub struct Captured {
    graph: CudaGraph,
    inputs: Vec<(Vec<usize>, Dtype)>,
    device: Device,
}

impl Captured {
    /// The function's outputs for `inputs` (the captured shapes and dtypes).
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        check_inputs(&self.inputs, inputs)?;
        let data = inputs.iter().map(contiguous_data).collect::<Result<Vec<_>>>()?;
        let outs = self.graph.launch(&data)?;
        let stream = crate::stream::default_stream(self.device);
        Ok(crate::stream::with_stream(stream, || {
            outs.into_iter()
                .map(|d| {
                    let dtype = d.buffer.dtype();
                    Array::from_data(d, dtype)
                })
                .collect()
        }))
    }

    /// The outputs' shapes and dtypes.
    pub fn output_specs(&self) -> Vec<(Vec<usize>, Dtype)> {
        self.graph.output_specs()
    }

    /// How many device buffers the graph holds for its life (input slots,
    /// one per node of the replay, the outputs and the constants it reads).
    pub fn buffers(&self) -> usize {
        self.graph.buffers()
    }
}
