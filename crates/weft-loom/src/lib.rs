//! The scheduler's state machines, the node's (`weft/src/scheduler/node.rs`),
//! the queue's (`weft/src/scheduler/lane.rs`) and the pool warmers' slots
//! (`weft/src/scheduler/slots.rs`), with their sync facade,
//! compiled on their own so the loom model checks build in seconds instead
//! of compiling all of weft under `--cfg loom`:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p weft-loom --release`
#![allow(dead_code)]

#[path = "../../weft/src/sync.rs"]
mod sync;

/// The same module tree as in weft, so the files' `super::` paths resolve
/// (the attribute makes weft's scheduler folder this module's folder).
#[path = "../../weft/src/scheduler"]
pub mod scheduler {
    pub mod lane;
    pub mod node;
    pub mod slots;
}
