//! The CPU backend: one file per primitive, named as in `primitive/`.
//!
//! Kernels read strided inputs (views are free) and write fresh contiguous
//! outputs. Contiguous inputs take a fast path; large ones are split across
//! the worker pool with rayon. Stream tasks already run on that same bounded
//! pool, so a kernel's parallel parts and other streams' tasks share the
//! cores instead of oversubscribing them.

mod arange;
mod argsort;
mod astype;
mod binary;
mod complex;
mod concatenate;
mod conv;
mod copy;
mod fft;
mod fused;
mod scan;
mod scatter;
mod gather;
mod gather_axis;
mod layer_norm;
mod linalg;
mod logsumexp;
mod matmul;
mod num;
mod quantized;
mod random_bits;
mod reduce;
mod rms_norm;
mod rope;
mod rows;
mod sdpa;
mod select;
mod slice_update;
mod softmax;
mod sort;
mod strided;
mod unary;

use super::{Encoder, Ran};
use crate::buffer::Data;
use crate::primitive::{OutSpec, Primitive};
use crate::Result;

/// Element counts from which a kernel splits its work across threads.
pub(crate) const PARALLEL_MIN: usize = 1 << 15;

/// `weft::with_dtype!`, under the name the kernels use.
pub(crate) use crate::with_dtype as dispatch;
pub(crate) use strided::{contiguous_slice, copy_to_buffer, for_each, map1, to_vec};

pub(crate) struct CpuEncoder;

impl Encoder for CpuEncoder {
    fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Ran> {
        // Inputs computed on a GPU stream are copied to the host first.
        let mut inputs = if inputs.iter().all(|d| d.buffer.as_cpu().is_some()) {
            inputs
        } else {
            inputs.iter().map(Data::to_host).collect::<Result<_>>()?
        };
        let i = &inputs[..];
        let buffer = match prim {
            Primitive::Unary(op) => unary::unary(*op, &i[0], out)?,
            Primitive::Binary(op) => binary::binary(*op, &i[0], &i[1], out)?,
            Primitive::Select => select::select(&i[0], &i[1], &i[2], out)?,
            Primitive::AsType => astype::astype(&i[0], out)?,
            Primitive::Reduce { op, axes } => reduce::reduce(*op, axes, &i[0], out)?,
            Primitive::ArgReduce { op, axis } => reduce::arg_reduce(*op, *axis, &i[0], out)?,
            Primitive::Matmul => matmul::matmul(&i[0], &i[1], out)?,
            // Views that could not view (reshape of strided data) copy.
            Primitive::Reshape | Primitive::Copy => copy::copy(&i[0])?,
            Primitive::Concatenate { axis } => concatenate::concatenate(*axis, i, out)?,
            Primitive::Arange { start, step } => arange::arange(*start, *step, out)?,
            Primitive::Gather { axis } => gather::gather(*axis, &i[0], &i[1], out)?,
            Primitive::GatherAxis { axis } => gather_axis::gather_axis(*axis, &i[0], &i[1], out)?,
            Primitive::SliceUpdate { start, step, region } => {
                // Takes its array by value: it may write into that buffer.
                let update = inputs.pop().ok_or_else(|| arity(prim))?;
                let a = inputs.pop().ok_or_else(|| arity(prim))?;
                return Ok(Ran::Done(slice_update::slice_update(start, step, region, a, &update, out)?));
            }
            Primitive::Softmax => softmax::softmax(&i[0], out)?,
            Primitive::LogSumExp => logsumexp::logsumexp(&i[0], out)?,
            Primitive::Scan { op, axis, reverse, inclusive } => scan::scan(*op, *axis, *reverse, *inclusive, &i[0], out)?,
            Primitive::Scatter { reduce } => scatter::scatter(*reduce, &i[0], &i[1], &i[2], out)?,
            Primitive::Sort => sort::sort(&i[0], out)?,
            Primitive::ArgSort => argsort::argsort(&i[0], out)?,
            Primitive::RandomBits => random_bits::random_bits(&i[0], out)?,
            Primitive::RmsNorm { eps } => rms_norm::rms_norm(*eps, i, out)?,
            Primitive::LayerNorm { eps, has_weight, has_bias } => {
                layer_norm::layer_norm(*eps, *has_weight, *has_bias, i, out)?
            }
            Primitive::Rope(p) => rope::rope(p, &i[0], out)?,
            Primitive::Sdpa { scale, causal } => sdpa::sdpa(*scale, *causal, i, out)?,
            Primitive::Linalg(op) => linalg::linalg(*op, i, out)?,
            Primitive::Conv(p) => conv::conv(p, &i[0], &i[1], out)?,
            Primitive::Complex(op) => complex::complex(*op, &i[0])?,
            Primitive::Fft { axes, inverse, real } => fft::fft(axes, *inverse, *real, &i[0], out)?,
            Primitive::Fused(p) => fused::fused(p, i, out)?,
            Primitive::Quantize { group_size, bits } => quantized::quantize(*group_size, *bits, i, out)?,
            Primitive::Dequantize { group_size, bits } => quantized::dequantize(*group_size, *bits, i, out)?,
            Primitive::QuantizedMatmul { group_size, bits, transpose, int8_activations } => {
                quantized::quantized_matmul(*group_size, *bits, *transpose, *int8_activations, i, out)?
            }
            // Views: answered by `backend::run` before any encoder sees them.
            Primitive::Transpose { .. } | Primitive::BroadcastTo | Primitive::Slice { .. } | Primitive::AsStrided { .. } => {
                return Ok(Ran::NoKernel(inputs))
            }
        };
        Ok(Ran::Done(Data::cpu(buffer, out.shape)))
    }
}

fn arity(prim: &Primitive) -> crate::Error {
    crate::Error::Kernel(format!("{} got too few inputs", prim.name()))
}

