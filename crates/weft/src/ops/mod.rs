//! Ops: graph construction only. Each checks shapes and dtypes (errors name
//! them), applies NumPy broadcasting and MLX's type promotion, and returns a
//! lazy [`Array`] on the calling thread's current stream. No op computes.

mod complex;
mod conv;
mod creation;
mod einsum;
mod elementwise;
pub mod fast;
pub mod fft;
mod fused;
mod indexing;
pub mod linalg;
mod logical;
mod matmul;
mod overload;
pub(crate) mod quantized;
pub mod random;
mod reduce;
mod scan;
mod shape;
mod softmax;
mod sort;
mod structured_mm;

pub use complex::{complex, conjugate, imag, real};
pub use conv::{conv1d, conv2d, conv3d, conv_general, conv_transpose1d, conv_transpose2d, conv_transpose3d, convolve, ConvPadding};
pub(crate) use conv::conv_node;
pub use creation::{arange, bartlett, blackman, eye, full, hamming, hanning, linspace, ones, tri, tril, triu, zeros};
pub use einsum::{einsum, einsum_path};
pub use fused::fused;
pub use elementwise::*;
pub use matmul::{addmm, hadamard_transform, inner, matmul, outer, tensordot, vecdot};
pub use quantized::{dequantize, gather_qmm, quantize, quantized_matmul, quantized_matmul_int8, QuantizedMatrix};
pub use structured_mm::{block_masked_mm, gather_mm, segmented_mm};
pub use reduce::{argmax, argmin, count_nonzero, max, mean, min, prod, std, sum, var};
pub use logical::{
    all, allclose, any, array_equal, isclose, isfinite, isinf, isnan, isneginf, isposinf, logical_and, logical_not, logical_or, logical_xor,
};
pub use indexing::{positions, put_along_axis, scatter, slice_update, take, take_along_axis};
pub use softmax::{logsumexp, softmax};
pub use scan::{cummax, cummin, cumprod, cumsum, logcumsumexp};
pub use sort::{argpartition, argsort, median, partition, searchsorted, sort, topk};
pub use shape::{
    as_strided, atleast_nd, broadcast_arrays, broadcast_to, concatenate, copy_as, diag, diagonal, expand_dims, flatten, flip, kron, meshgrid, moveaxis, pad, repeat,
    reshape, roll, slice, split, squeeze, stack, swapaxes, tile, trace, transpose, unflatten, unstack, PadMode, SliceArg,
};

#[allow(unused_imports)]
use crate::Array;
