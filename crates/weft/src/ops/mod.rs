//! Ops: graph construction only. Each checks shapes and dtypes (errors name
//! them), applies NumPy broadcasting and MLX's type promotion, and returns a
//! lazy [`Array`] on the calling thread's current stream. No op computes.

mod creation;
mod elementwise;
mod matmul;
mod overload;
mod reduce;
mod shape;

pub use creation::{arange, eye, full, ones, zeros};
pub use elementwise::*;
pub use matmul::matmul;
pub use reduce::{argmax, argmin, max, mean, min, sum};
pub use shape::{broadcast_to, concatenate, expand_dims, reshape, slice, squeeze, transpose, SliceArg};

#[allow(unused_imports)]
use crate::Array;
