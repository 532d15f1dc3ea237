//! Tracing: how a transform sees the graph its function built.
//!
//! A transform makes a fresh trace id and marks its inputs with it
//! ([`mark`]). Every node built from a marked node keeps a [`Tape`] (its
//! primitive and inputs, and the traces it depends on) beside its scheduling
//! graph; scheduling never takes the tape, so the function may evaluate
//! along the way. The transform then walks the tapes that carry its id
//! ([`collect`]) and, when done, removes its id from what it returns
//! ([`unmark`]) so nothing downstream keeps the traced graph alive.
//!
//! All tracing state is in the arrays themselves: there is no global or
//! thread-local "current trace", so transforms run from any number of
//! threads at once, and nest (grad of grad, vmap of grad) by carrying
//! several ids. Ids come from one atomic counter; the low bit says the kind.

use crate::primitive::Primitive;
use crate::transforms::custom::CustomCall;
use crate::Array;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a traced node records for the transforms.
pub(crate) struct Tape {
    /// Trace ids this node depends on (sorted, unique, never empty).
    pub traces: Vec<u64>,
    pub op: TapeOp,
    pub inputs: Vec<Array>,
    /// How a shapeless replay finds this node's shape when its primitive's
    /// rule cannot (`compile.rs`); stated by the op that built the node.
    pub note: Option<ShapeNote>,
}

/// What an op knows about a node's shape beyond its primitive's rule
/// (`Primitive::output_shape`), for shapeless replays (`compile.rs`). Kept
/// on the node's tape, so only traced nodes carry one.
pub(crate) enum ShapeNote {
    /// A `Reshape` that only drops size-1 axes `remove` (of its input) and
    /// then inserts size-1 axes at `insert` (of its output, ascending):
    /// `squeeze` and `expand_dims`.
    Units { remove: Vec<usize>, insert: Vec<usize> },
    /// A `BroadcastTo` of its input to the broadcast of the leading (batch)
    /// axes of the input and of `with`, the input's last `tail` axes kept:
    /// `matmul` broadcasting one operand's batch axes to the other's.
    BatchOf { with: Array, tail: usize },
    /// Input `operand` of this node is the constant `1 / (n - ddof)`, `n`
    /// the product of the sizes of axes `axes` of `of`: `mean` and `var`.
    InvCount { operand: usize, of: Array, axes: Vec<usize>, ddof: usize },
}

pub(crate) enum TapeOp {
    /// An ordinary node: its rules are the primitive's (`primitive/autodiff.rs`,
    /// `primitive/vmap.rs`).
    Prim(Primitive),
    /// Output `i` of a function with a custom derivative (`custom.rs`).
    Custom(Arc<CustomCall>, usize),
}

/// What a trace is for: a reverse-mode trace (vjp, and so grad and jvp)
/// or a batching trace (vmap). `stop_gradient` removes only the first kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Grad,
    Batch,
}

static NEXT_TRACE: AtomicU64 = AtomicU64::new(1);

/// A trace id no other call has (even for [`Kind::Grad`], odd for [`Kind::Batch`]).
pub(crate) fn new_trace(kind: Kind) -> u64 {
    let n = NEXT_TRACE.fetch_add(1, Ordering::Relaxed) << 1;
    match kind {
        Kind::Grad => n,
        Kind::Batch => n | 1,
    }
}

pub(crate) fn kind(t: u64) -> Kind {
    if t & 1 == 0 {
        Kind::Grad
    } else {
        Kind::Batch
    }
}

/// The trace ids `a` depends on.
pub(crate) fn traces(a: &Array) -> &[u64] {
    a.tape().map_or(&[], |t| &t.traces)
}

pub(crate) fn has(a: &Array, t: u64) -> bool {
    traces(a).binary_search(&t).is_ok()
}

/// The sorted union of the inputs' trace ids (empty, without allocating,
/// when no input is traced: the common case of every op).
pub(crate) fn union(inputs: &[Array]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for a in inputs {
        for &t in traces(a) {
            if let Err(i) = out.binary_search(&t) {
                out.insert(i, t);
            }
        }
    }
    out
}

/// `a` as an input of trace `t`: a new node carrying `t` (and what `a` carries).
pub(crate) fn mark(a: &Array, t: u64) -> Array {
    let mut ids = traces(a).to_vec();
    if let Err(i) = ids.binary_search(&t) {
        ids.insert(i, t);
    }
    Array::retaped(a, Some(Box::new(Tape { traces: ids, op: TapeOp::Prim(Primitive::Reshape), inputs: vec![a.clone()], note: None })))
}

/// `a` with the trace ids for which `drop` is true removed (`a` itself when
/// it carries none of them).
pub(crate) fn unmark_where(a: &Array, drop: impl Fn(u64) -> bool) -> Array {
    let ids = traces(a);
    if !ids.iter().any(|&t| drop(t)) {
        return a.clone();
    }
    let keep: Vec<u64> = ids.iter().copied().filter(|&t| !drop(t)).collect();
    let tape = (!keep.is_empty())
        .then(|| Box::new(Tape { traces: keep, op: TapeOp::Prim(Primitive::Reshape), inputs: vec![a.clone()], note: None }));
    Array::retaped(a, tape)
}

/// `a` without trace `t`: what a finished transform returns.
pub(crate) fn unmark(a: &Array, t: u64) -> Array {
    unmark_where(a, |x| x == t)
}

/// The nodes of trace `t` that `outputs` depend on, oldest first (node ids
/// follow construction, so this is a topological order), not looking past
/// `stop` (the trace's inputs). `deps` names a node's inputs for the walk.
pub(crate) fn collect(
    t: u64,
    outputs: &[Array],
    stop: &HashSet<u64>,
    deps: impl Fn(&Tape) -> Vec<Array>,
) -> Vec<Array> {
    let mut seen: HashMap<u64, Array> = HashMap::new();
    let mut stack: Vec<Array> = outputs.iter().filter(|a| has(a, t)).cloned().collect();
    while let Some(a) = stack.pop() {
        if seen.contains_key(&a.id()) {
            continue;
        }
        if !stop.contains(&a.id()) {
            if let Some(tape) = a.tape() {
                stack.extend(deps(tape).into_iter().filter(|x| has(x, t) && !seen.contains_key(&x.id())));
            }
        }
        seen.insert(a.id(), a);
    }
    let mut nodes: Vec<Array> = seen.into_values().collect();
    nodes.sort_by_key(Array::id);
    nodes
}
