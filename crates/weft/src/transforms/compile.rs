//! `compile`: a function traced once and replayed on new inputs of the
//! same shapes and dtypes, without calling it again.
//!
//! The trace is the graph the function built on marked inputs (`trace.rs`);
//! a call rebuilds that graph's nodes, oldest first, with the same
//! primitives on the new inputs. Arrays the function captured (not derived
//! from its inputs) are constants of the trace.
//!
//! The replay fuses: each chain of elementwise nodes whose intermediates
//! nothing else reads (`fuse.rs`) is one `Primitive::Fused` node, run in one
//! chunked pass on the CPU (`backend/cpu/fused.rs`) and as one generated
//! kernel on CUDA (`backend/cuda/fused.rs`).
//! A `Compiled` is immutable (its programs are shared `Arc`s), so any
//! number of threads may call it at once.

use super::fuse::{self, Group};
use super::trace::{self, new_trace, Kind, TapeOp};
use crate::{bail, ops, Array, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// A trace node's part in a fused replay.
enum Fusion {
    /// The result of a group: built as one fused node.
    Root(Arc<Group>),
    /// Read only inside its group: not built.
    Inner,
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
                fusion.insert(id, Fusion::Inner);
            }
            fusion.insert(g.root.id(), Fusion::Root(g));
        }
        let returned = outs.iter().map(|o| trace::unmark(o, t)).collect();
        Ok((Compiled { inputs: marked, nodes, outputs: outs, fusion }, returned))
    }

    /// The traced function's outputs for `inputs`, which must have the
    /// traced inputs' shapes and dtypes.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        if inputs.len() != self.inputs.len() {
            bail!(InvalidArgument, "compiled function: {} inputs for a trace of {}", inputs.len(), self.inputs.len());
        }
        let mut now: HashMap<u64, Array> = HashMap::with_capacity(self.nodes.len());
        for (m, x) in self.inputs.iter().zip(inputs) {
            if m.shape() != x.shape() || m.dtype() != x.dtype() {
                bail!(
                    Shape,
                    "compiled function: input of shape {:?} ({}) for a trace of shape {:?} ({})",
                    x.shape(),
                    x.dtype(),
                    m.shape(),
                    m.dtype()
                );
            }
            now.insert(m.id(), x.clone());
        }
        for node in &self.nodes {
            if now.contains_key(&node.id()) {
                continue;
            }
            match self.fusion.get(&node.id()) {
                Some(Fusion::Inner) => continue,
                Some(Fusion::Root(g)) => {
                    let ins: Vec<Array> = g.inputs.iter().map(|x| now.get(&x.id()).cloned().unwrap_or_else(|| x.clone())).collect();
                    now.insert(node.id(), ops::fused(&g.program, &ins, node.shape())?);
                    continue;
                }
                _ => {}
            }
            let Some(tape) = node.tape() else { continue };
            let replayed = match &tape.op {
                TapeOp::Prim(p) => {
                    let ins = tape.inputs.iter().map(|x| now.get(&x.id()).cloned().unwrap_or_else(|| x.clone())).collect();
                    Array::from_op(p.clone(), ins, node.shape().to_vec(), node.dtype())?
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
                (Some(Fusion::Inner), _) => continue,
                (Some(Fusion::Root(_)), _) => "Fused".to_string(),
                (None, Some(TapeOp::Prim(p))) => p.name().to_string(),
                (None, Some(TapeOp::Custom(..))) => "Custom".to_string(),
                (None, None) => continue,
            };
            *counts.entry(name).or_insert(0) += 1;
        }
        counts
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
