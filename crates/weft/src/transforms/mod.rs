//! Function transforms: `vjp`, `jvp`, `grad`, `value_and_grad`, `vmap`,
//! `stop_gradient`, `checkpoint`, `custom_vjp`, and `Compiled` (trace once, replay).
//!
//! A transform takes a function of arrays and its inputs. It traces the
//! function (the graph it builds is the trace: `trace.rs`) and applies the
//! rules each primitive states next to its definition: its derivative in
//! `primitive/autodiff.rs`, its batching rule in `primitive/vmap.rs`.
//! Transforms nest and run from any thread: their state is in the arrays.

mod compile;
mod fuse;
mod custom;
pub(crate) mod trace;
mod vjp;
mod vmap;

pub use compile::{Captured, Compiled};
pub use custom::{checkpoint, custom_vjp, stop_gradient, VjpRule};
pub use vjp::{grad, jvp, value_and_grad, vjp};
pub use vmap::vmap;
