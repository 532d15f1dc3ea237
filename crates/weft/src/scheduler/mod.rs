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
//! 5. Returns only once every output is at least ENQUEUED, also outputs
//!    claimed by a concurrent eval: after `async_eval([a])`, `a` sits in its
//!    stream's queue, so `synchronize(a.stream())` waits for it and later
//!    work on that stream runs after it (rule 1).
//!
//! `eval` = `async_eval` + waiting for each output; an output's error (or an
//! input's, rule 9) is returned.
//!
//! Panics: the claimed-but-unpushed nodes sit in an `Unpushed` guard; if
//! anything panics before they are pushed, the guard completes each with
//! `Error::Internal`, so no later eval of them waits forever.

pub(crate) mod node;
pub(crate) mod lane;
pub(crate) mod queue;
pub(crate) mod slots;
pub(crate) mod warm;

use crate::array::Array;
use crate::sync::lock_std as lock;
use crate::Result;
use node::{CLAIMED, ENQUEUED, PENDING};
use queue::Task;

pub use queue::{kernels_run, set_max_in_flight};

/// Runs `f` on weft's worker pool (inline when already on it), so rayon
/// work started from a user thread (a host read, a file's dequantization)
/// shares weft's threads instead of starting rayon's global pool.
/// Whether the calling thread is one of weft's pool workers.
pub(crate) fn on_pool() -> bool {
    queue::pool().current_thread_index().is_some()
}

pub(crate) fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    queue::pool().install(f)
}

/// Schedules `outputs` and everything they need; returns without waiting.
pub fn async_eval(outputs: &[Array]) -> Result<()> {
    let mut unpushed = Unpushed(Vec::new());
    let claimed = &mut unpushed.0;
    let mut stack: Vec<Array> =
        outputs.iter().filter(|a| a.0.state.get() == PENDING).cloned().collect();
    while let Some(a) = stack.pop() {
        if !a.0.state.try_claim() {
            continue;
        }
        // Into the guard as soon as it is ours.
        claimed.push(a.clone());
        let g = lock(&a.0.graph);
        let graph = g.as_ref().expect("a claimed node still has its graph");
        stack.extend(graph.inputs.iter().filter(|i| i.0.state.get() == PENDING).cloned());
    }
    // Pushed from the back: sort newest first.
    claimed.sort_unstable_by_key(|a| std::cmp::Reverse(a.id()));
    while let Some(a) = unpushed.0.last().cloned() {
        let graph = lock(&a.0.graph).take().expect("only the owner takes the graph");
        for i in &graph.inputs {
            i.0.state.wait_for(ENQUEUED);
        }
        let task = Task { node: a.clone(), prim: graph.prim, inputs: graph.inputs };
        // Once `push` marks the node ENQUEUED it is the queue's; until then
        // (a panic in `queue()` or `push`) the guard still owns it.
        match a.stream().queue() {
            Ok(q) => q.push(task),
            // The stream's device failed to start: the node fails, and
            // everything built on it fails with it.
            Err(e) => {
                a.0.state.mark_enqueued();
                a.0.state.complete(Err(e));
            }
        }
        unpushed.0.pop();
    }
    // Outputs claimed by another eval are queued by it, in its order: wait
    // for that, so this call promises what it would for its own nodes.
    for a in outputs {
        a.0.state.wait_for(ENQUEUED);
    }
    Ok(())
}

/// Nodes this eval claimed and has not pushed yet, newest first (the next to
/// push is last). Dropped with nodes left only by a panic.
struct Unpushed(Vec<Array>);

impl Drop for Unpushed {
    fn drop(&mut self) {
        for a in self.0.drain(..) {
            // A node whose push panicked after marking it ENQUEUED is in its
            // queue and will complete there.
            if a.0.state.get() == CLAIMED {
                a.0.state.mark_enqueued();
                a.0.state.complete(Err(crate::Error::Internal(format!(
                    "scheduling node {} panicked before it was queued",
                    a.id()
                ))));
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ops, Device, Stream};

    /// A panic between claiming nodes and pushing them leaves no node
    /// claimed: each one fails, and a later eval returns that error instead
    /// of waiting forever (issue 10 item 7).
    #[test]
    fn a_panic_before_push_fails_the_claimed_nodes() {
        let s = Stream::new(Device::cpu()).unwrap();
        let x = crate::with_stream(s, || ops::full(&[3], 1.0f32)).unwrap();
        let y = crate::with_stream(s, || ops::exp(&x)).unwrap();
        let r = crate::error::catch_silently(|| {
            let mut g = Unpushed(Vec::new());
            assert!(y.0.state.try_claim());
            g.0.push(y.clone());
            panic!("injected between claim and push");
        });
        assert!(r.is_err());
        assert!(matches!(y.eval(), Err(crate::Error::Internal(_))));
        let z = crate::with_stream(s, || ops::add(&y, &y)).unwrap();
        assert!(matches!(z.eval().unwrap_err().root(), crate::Error::Internal(_)));
    }

    /// `async_eval([a])` while another eval holds `a`'s claim returns only
    /// once `a` is queued (issue 10 item 8): on b2ef225 it returned at once,
    /// so `synchronize(a.stream())` could return with `a` unevaluated.
    #[test]
    fn async_eval_of_a_foreign_claim_returns_once_it_is_queued() {
        let s = Stream::new(Device::cpu()).unwrap();
        let prev = set_max_in_flight(1);
        // A gate: a node this test claims and enqueues by hand, completing
        // it when it chooses. `x` on `s` waits for it, filling `s` (limit 1).
        let gate = ops::full(&[1], 0.0f32).unwrap();
        let gate = ops::exp(&gate).unwrap();
        assert!(gate.0.state.try_claim());
        gate.0.state.mark_enqueued();
        let x = crate::with_stream(s, || ops::add(&gate, &gate)).unwrap();
        async_eval(&[x.clone()]).unwrap();
        let c = crate::with_stream(s, || ops::full(&[1], 2.0f32)).unwrap();
        let a = crate::with_stream(s, || ops::exp(&c)).unwrap();
        // T1 claims `a` and blocks in `push` until `x` completes.
        let t1 = {
            let a = a.clone();
            std::thread::spawn(move || async_eval(&[a]).unwrap())
        };
        while a.0.state.get() == PENDING {
            std::thread::yield_now();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let t2 = {
            let a = a.clone();
            std::thread::spawn(move || {
                async_eval(&[a.clone()]).unwrap();
                let queued = a.0.state.get() >= ENQUEUED;
                tx.send(()).unwrap();
                s.synchronize().unwrap();
                (queued, a.0.state.get() == node::DONE)
            })
        };
        // Give T2 time to return early (the old behaviour); the fixed code
        // waits for the gate either way.
        let _ = rx.recv_timeout(std::time::Duration::from_millis(300));
        let data = crate::buffer::Data::cpu(crate::buffer::CpuBuffer::from_vec(vec![0.0f32]).unwrap(), &[1]);
        gate.0.state.complete(Ok(data));
        t1.join().unwrap();
        let (queued, done_after_sync) = t2.join().unwrap();
        set_max_in_flight(prev);
        assert!(queued, "async_eval returned before a was queued");
        assert!(done_after_sync, "synchronize returned before a ran");
        assert!((a.item::<f32>().unwrap() - 2.0f32.exp()).abs() < 1e-5);
    }
}
