//! Which nodes of a compiled trace become one `Primitive::Fused` node.
//!
//! A *group* is a maximal set of elementwise nodes (`FusedProgram::fusible`:
//! unary, binary, `where`, `astype`, broadcasts of what the group reads) of
//! one shape with one result, its *root*: every other member is read only by
//! members (never by a node outside the group, a custom function, or as an
//! output of the traced function), so nothing but the root needs to exist as
//! an array. Groups of fewer than two computing steps are left alone.
//!
//! Groups are grown from the newest node back. A candidate is taken in
//! decreasing id order (construction order, so a node is considered only
//! after every node that reads it): when it is taken, all its readers that
//! are members are known, and it joins when they are all its readers.

use super::trace::Tape;
use crate::primitive::fused::{FusedArg, FusedStep};
use crate::primitive::{FusedProgram, Primitive};
use crate::Array;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

/// One fused node of a replay: the trace's node `root` computed by
/// `program` from the trace's arrays `inputs`.
pub(crate) struct Group {
    pub root: Array,
    pub program: Arc<FusedProgram>,
    pub inputs: Vec<Array>,
    /// Ids of the members other than the root (not built by a fused replay).
    pub inner: Vec<u64>,
}

/// The primitive of `node` when it may join a group.
fn fusible<'a>(node: &'a Array, stop: &HashSet<u64>) -> Option<&'a Primitive> {
    if stop.contains(&node.id()) {
        return None;
    }
    match &node.tape()?.op {
        super::trace::TapeOp::Prim(p) if FusedProgram::fusible(p) => Some(p),
        _ => None,
    }
}

/// The groups of the trace `nodes` (oldest first) whose results are
/// `outputs`, not looking into `stop` (the trace's inputs); `deps` names
/// what a node reads, as the trace walk does.
pub(crate) fn groups(nodes: &[Array], outputs: &[Array], stop: &HashSet<u64>, deps: impl Fn(&Tape) -> Vec<Array>) -> Vec<Group> {
    let by_id: HashMap<u64, &Array> = nodes.iter().map(|a| (a.id(), a)).collect();
    let mut uses: HashMap<u64, usize> = HashMap::new();
    for n in nodes {
        if stop.contains(&n.id()) {
            continue;
        }
        if let Some(t) = n.tape() {
            for x in deps(t) {
                *uses.entry(x.id()).or_default() += 1;
            }
        }
    }
    let outs: HashSet<u64> = outputs.iter().map(Array::id).collect();
    let mut taken: HashSet<u64> = HashSet::new();
    let mut groups = Vec::new();
    for root in nodes.iter().rev() {
        if taken.contains(&root.id()) {
            continue;
        }
        match fusible(root, stop) {
            Some(Primitive::BroadcastTo) | None => continue,
            Some(_) => {}
        }
        let mut members: Vec<&Array> = vec![root];
        let mut member_ids: HashSet<u64> = HashSet::from([root.id()]);
        let mut member_reads: HashMap<u64, usize> = HashMap::new();
        let mut heap: BinaryHeap<u64> = BinaryHeap::new();
        let mut seen: HashSet<u64> = HashSet::new();
        let read = |m: &Array, reads: &mut HashMap<u64, usize>, heap: &mut BinaryHeap<u64>| {
            if let Some(t) = m.tape() {
                if matches!(&t.op, super::trace::TapeOp::Prim(Primitive::BroadcastTo)) {
                    // A broadcast's operand stays an input of the group.
                    return;
                }
                for x in &t.inputs {
                    *reads.entry(x.id()).or_default() += 1;
                    heap.push(x.id());
                }
            }
        };
        read(root, &mut member_reads, &mut heap);
        while let Some(c) = heap.pop() {
            if !seen.insert(c) {
                continue;
            }
            let Some(&node) = by_id.get(&c) else { continue };
            let joins = fusible(node, stop).is_some()
                && !taken.contains(&c)
                && !outs.contains(&c)
                && node.shape() == root.shape()
                && member_reads.get(&c) == uses.get(&c);
            if joins {
                members.push(node);
                member_ids.insert(c);
                read(node, &mut member_reads, &mut heap);
            }
        }
        if let Some(g) = group(root, members, &member_ids) {
            taken.extend(g.inner.iter().copied());
            taken.insert(root.id());
            groups.push(g);
        }
    }
    groups
}

/// The program of `members` (the root first), or `None` when it would
/// compute fewer than two steps.
fn group(root: &Array, mut members: Vec<&Array>, member_ids: &HashSet<u64>) -> Option<Group> {
    members.sort_by_key(|a| a.id());
    let step_of: HashMap<u64, usize> = members.iter().enumerate().map(|(k, a)| (a.id(), k)).collect();
    let mut inputs: Vec<Array> = Vec::new();
    let mut input_of: HashMap<u64, usize> = HashMap::new();
    let mut steps = Vec::with_capacity(members.len());
    for m in &members {
        let tape = m.tape()?;
        let super::trace::TapeOp::Prim(prim) = &tape.op else { return None };
        let args = tape
            .inputs
            .iter()
            .map(|x| match step_of.get(&x.id()) {
                Some(&k) if member_ids.contains(&x.id()) && !matches!(prim, Primitive::BroadcastTo) => FusedArg::Step(k),
                _ => FusedArg::Input(*input_of.entry(x.id()).or_insert_with(|| {
                    inputs.push(x.clone());
                    inputs.len() - 1
                })),
            })
            .collect();
        steps.push(FusedStep { prim: prim.clone(), args, dtype: m.dtype() });
    }
    let program = FusedProgram::new(inputs.iter().map(Array::dtype).collect(), steps).ok()?;
    if program.compute_steps() < 2 {
        return None;
    }
    let inner = members.iter().map(|a| a.id()).filter(|&id| id != root.id()).collect();
    Some(Group { root: root.clone(), program: Arc::new(program), inputs, inner })
}
