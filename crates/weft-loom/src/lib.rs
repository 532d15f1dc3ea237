//! The scheduler's node state machine (`weft/src/scheduler/node.rs`) and its
//! sync facade, compiled on their own so the loom model checks build in
//! seconds instead of compiling all of weft under `--cfg loom`:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p weft-loom --release`
#![allow(dead_code)]

#[path = "../../weft/src/sync.rs"]
mod sync;

#[path = "../../weft/src/scheduler/node.rs"]
pub mod node;
