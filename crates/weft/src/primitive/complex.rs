//! What weft computes on `complex64`: [`ComplexOp`] (the parts of a complex
//! number, one primitive) and [`check`], the one gate every node passes
//! (`Array::from_op`), which refuses a primitive that reads or makes
//! complex64 unless it is listed in [`supports_complex`]. So an op with no
//! complex meaning (ordering, max/min, sorting, bitwise, rounding, most
//! activations) is `Error::Dtype` when the graph is built, and no kernel
//! ever runs a real-number formula on complex elements.

use super::{BinaryOp, Primitive, ReduceOp, UnaryOp};
use crate::{Array, Dtype, Error, Result};

/// A map out of (or within) `complex64`, elementwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ComplexOp {
    /// The real part (`float32`).
    Real,
    /// The imaginary part (`float32`).
    Imag,
    /// The modulus `|z|` (`float32`).
    Abs,
    /// The complex conjugate (`complex64`).
    Conj,
}

impl ComplexOp {
    /// The output dtype.
    pub fn out_dtype(self) -> Dtype {
        match self {
            ComplexOp::Conj => Dtype::C64,
            _ => Dtype::F32,
        }
    }
}

/// The unary ops with a complex formula (`backend/cpu/unary.rs`, `complex`).
pub fn unary_supports_complex(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Neg | Exp | Log | Sqrt | Rsqrt | Sin | Cos | Tan | Tanh | Sinh | Cosh | Sigmoid | Log2 | Log10 | Log1p | Expm1
            | Arcsin | Arccos | Arctan | Arcsinh | Arccosh | Arctanh | Exp2
    )
}

/// Whether `prim` has a complex64 meaning and kernel.
pub fn supports_complex(prim: &Primitive) -> bool {
    match prim {
        Primitive::Unary(op) => unary_supports_complex(*op),
        Primitive::Binary(op) => {
            use BinaryOp::*;
            matches!(op, Add | Sub | Mul | Div | Pow | Equal | NotEqual)
        }
        Primitive::Reduce { op, .. } | Primitive::Scan { op, .. } => matches!(op, ReduceOp::Sum | ReduceOp::Prod),
        Primitive::Fused(p) => p.supports_complex(),
        Primitive::Scatter { reduce } => matches!(reduce, None | Some(ReduceOp::Sum) | Some(ReduceOp::Prod)),
        // Element moves, conversions, products and the complex primitives.
        Primitive::Select
        | Primitive::AsType
        | Primitive::Matmul
        | Primitive::Reshape
        | Primitive::Transpose { .. }
        | Primitive::BroadcastTo
        | Primitive::Slice { .. }
        | Primitive::Concatenate { .. }
        | Primitive::Copy
        | Primitive::Gather { .. }
        | Primitive::GatherAxis { .. }
        | Primitive::SliceUpdate { .. }
        | Primitive::AsStrided { .. }
        | Primitive::Complex(_)
        | Primitive::Fft { .. } => true,
        _ => false,
    }
}

/// `Error::Dtype` when `prim` would read or make complex64 and has no
/// complex meaning (see the module docs).
pub(crate) fn check(prim: &Primitive, inputs: &[Array], out: Dtype) -> Result<()> {
    let complex = out.is_complex() || inputs.iter().any(|a| a.dtype().is_complex());
    if !complex || supports_complex(prim) {
        return Ok(());
    }
    let what = match prim {
        Primitive::Unary(op) => op.name().to_string(),
        Primitive::Binary(op) => format!("{op:?}"),
        Primitive::Reduce { op, .. } | Primitive::Scan { op, .. } => format!("{} {op:?}", prim.name()),
        p => p.name().to_string(),
    };
    Err(Error::Dtype(format!("{what} does not support complex64 inputs")))
}
