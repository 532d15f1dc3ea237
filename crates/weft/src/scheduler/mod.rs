//! Evaluation: claiming a graph's pending nodes and queueing them on their
//! streams. The one place where scheduling happens.
//!
//! `async_eval(outputs)`:
//! 1. Walks the graph from `outputs` through PENDING nodes, claiming each
//!    with one CAS (docs/architecture.md rule 5). Nodes claimed by another eval, or
//!    already queued or done, are not entered: their owner handles them.
//! 2. Pushes its claimed nodes in increasing node id. Ids come from a global
//!    counter at construction and inputs are always older than their users,
//!    so id order is a topological order shared by every thread.
//! 3. Before pushing a node, waits until each input is ENQUEUED (inputs
//!    claimed by a concurrent eval). Every eval pushes in the same global
//!    order and waits only on older nodes, so the oldest claimed-but-unpushed
//!    node can always be pushed: evals never deadlock each other.
//! 4. Moves the node's primitive and inputs into the task: the graph is
//!    detached as it is scheduled (rule 7).
//!
//! `eval` = `async_eval` + waiting for each output; an output's error (or an
//! input's, rule 9) is returned.

pub(crate) mod node;
pub(crate) mod queue;

use crate::array::Array;
use crate::sync::lock_std as lock;
use crate::Result;
use node::{ENQUEUED, PENDING};
use queue::Task;

pub use queue::{kernels_run, set_max_in_flight};

/// Schedules `outputs` and everything they need; returns without waiting.
pub fn async_eval(outputs: &[Array]) -> Result<()> {
    let mut claimed = Vec::new();
    let mut stack: Vec<Array> =
        outputs.iter().filter(|a| a.0.state.get() == PENDING).cloned().collect();
    while let Some(a) = stack.pop() {
        if !a.0.state.try_claim() {
            continue;
        }
        {
            let g = lock(&a.0.graph);
            let graph = g.as_ref().expect("a claimed node still has its graph");
            stack.extend(graph.inputs.iter().filter(|i| i.0.state.get() == PENDING).cloned());
        }
        claimed.push(a);
    }
    claimed.sort_unstable_by_key(|a| a.id());
    for a in claimed {
        let graph = lock(&a.0.graph).take().expect("only the owner takes the graph");
        for i in &graph.inputs {
            i.0.state.wait_for(ENQUEUED);
        }
        let task = Task { node: a.clone(), prim: graph.prim, inputs: graph.inputs };
        match a.stream().queue() {
            Ok(q) => q.push(task),
            // The stream's device failed to start: the node fails, and
            // everything built on it fails with it.
            Err(e) => {
                a.0.state.mark_enqueued();
                a.0.state.complete(Err(e));
            }
        }
    }
    Ok(())
}

/// Evaluates `outputs` and waits for them. Callable from any thread, on
/// graphs spanning any streams; returns the first output's error, if any.
pub fn eval(outputs: &[Array]) -> Result<()> {
    async_eval(outputs)?;
    for a in outputs {
        a.0.state.wait_result()?;
    }
    Ok(())
}
