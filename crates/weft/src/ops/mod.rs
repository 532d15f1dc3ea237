//! Ops: graph construction only. Each checks shapes and dtypes (errors name
//! them), applies NumPy broadcasting and MLX's type promotion, and returns a
//! lazy [`Array`] on the calling thread's current stream. No op computes.

mod creation;
mod elementwise;
pub mod fast;
mod indexing;
mod logical;
mod matmul;
mod overload;
pub mod random;
mod reduce;
mod scan;
mod shape;
mod softmax;
mod sort;

pub use creation::{arange, eye, full, linspace, ones, tri, tril, triu, zeros};
pub use elementwise::*;
pub use matmul::matmul;
pub use reduce::{argmax, argmin, max, mean, min, std, sum, var};
pub use logical::{all, allclose, any, array_equal, isclose, isfinite, isinf, isnan, logical_and, logical_not, logical_or};
pub use indexing::{slice_update, take, take_along_axis};
pub use softmax::{logsumexp, softmax};
pub use scan::cumsum;
pub use sort::{argsort, sort, topk};
pub use shape::{
    broadcast_to, concatenate, expand_dims, flatten, flip, moveaxis, pad, repeat, reshape, slice, split, squeeze, stack, swapaxes, tile,
    transpose, PadMode, SliceArg,
};

#[allow(unused_imports)]
use crate::Array;
