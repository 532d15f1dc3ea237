//! `compile`: a function traced once and replayed on new inputs of the
//! same shapes and dtypes, without calling it again.
//!
//! The trace is the graph the function built on marked inputs (`trace.rs`);
//! a call rebuilds that graph's nodes, oldest first, with the same
//! primitives on the new inputs. Arrays the function captured (not derived
//! from its inputs) are constants of the trace. weft does not fuse the
//! replayed graph: each node still runs its own kernel (docs/transforms.md).
//! A `Compiled` is immutable, so any number of threads may call it at once.

use super::trace::{self, new_trace, Kind, TapeOp};
use crate::{bail, Array, Result};
use std::collections::{HashMap, HashSet};

/// A traced function, ready to replay.
pub struct Compiled {
    /// The marked inputs of the trace (their ids are the replay's slots).
    inputs: Vec<Array>,
    /// The trace's nodes, oldest first.
    nodes: Vec<Array>,
    outputs: Vec<Array>,
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
        let nodes = trace::collect(t, &outs, &stop, |tape| match &tape.op {
            TapeOp::Prim(_) => tape.inputs.clone(),
            TapeOp::Custom(call, i) => vec![call.outs[*i].clone()],
        });
        let returned = outs.iter().map(|o| trace::unmark(o, t)).collect();
        Ok((Compiled { inputs: marked, nodes, outputs: outs }, returned))
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
}
