//! `export_to_dot`: the lazy graph behind some arrays, as Graphviz DOT text
//! (MLX's `export_to_dot`). A node still to run shows its primitive and an
//! edge from each input; an evaluated array, or an input array made from
//! data, is a leaf (its graph was detached when it was scheduled,
//! docs/architecture.md rule 7, so there is nothing behind it to show).

use crate::primitive::Primitive;
use crate::Array;
use std::collections::HashSet;
use std::fmt::Write;

impl Array {
    /// The primitive's name and the inputs of this node while it is still
    /// to be scheduled; `None` once scheduled (rule 7: the graph moved into
    /// its task) or for an array made from data. Takes the node's own graph
    /// lock for the clone only: no global lock (rule 6), and the clone keeps
    /// the inputs alive no longer than the caller holds it.
    pub fn pending_inputs(&self) -> Option<(String, Vec<Array>)> {
        let g = crate::sync::lock_std(&self.0.graph);
        g.as_ref().map(|g| {
            let name = match &g.prim {
                Primitive::Unary(op) => op.name().to_string(),
                Primitive::Binary(op) => format!("{op:?}"),
                Primitive::Fused(p) => p.label(),
                p => p.name().to_string(),
            };
            (name, g.inputs.clone())
        })
    }
}

/// The graph of `outputs` (each with an optional name) as DOT text: one
/// box per primitive node, one ellipse per array, edges from each input
/// array to the primitive that reads it and from it to its output.
///
/// ```
/// use weft::{ops, Array};
/// let a = Array::from_slice(&[1.0f32], &[1]).unwrap();
/// let dot = weft::dot::to_dot(&[(Some("out".into()), ops::exp(&a).unwrap())]);
/// assert!(dot.starts_with("digraph {") && dot.contains("exp") && dot.contains("out"));
/// ```
pub fn to_dot(outputs: &[(Option<String>, Array)]) -> String {
    let mut out = String::from("digraph {\n");
    let mut seen = HashSet::new();
    let mut stack: Vec<Array> = outputs.iter().map(|(_, a)| a.clone()).collect();
    let names: std::collections::HashMap<u64, &str> =
        outputs.iter().filter_map(|(n, a)| n.as_deref().map(|n| (a.id(), n))).collect();
    while let Some(a) = stack.pop() {
        if !seen.insert(a.id()) {
            continue;
        }
        let label = match names.get(&a.id()) {
            Some(n) => format!("{n}\\n{} {:?}", a.dtype(), a.shape()),
            None => format!("{} {:?}", a.dtype(), a.shape()),
        };
        let _ = writeln!(out, "  a{} [label=\"{label}\", shape=ellipse];", a.id());
        if let Some((prim, inputs)) = a.pending_inputs() {
            let _ = writeln!(out, "  p{} [label=\"{prim}\", shape=box];", a.id());
            let _ = writeln!(out, "  p{} -> a{};", a.id(), a.id());
            for x in inputs {
                let _ = writeln!(out, "  a{} -> p{};", x.id(), a.id());
                stack.push(x);
            }
        }
    }
    out.push_str("}\n");
    out
}
