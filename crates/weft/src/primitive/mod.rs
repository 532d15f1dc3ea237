//! Primitives: what a graph node computes. Ops (in `ops/`) build nodes that
//! hold one of these; backends (`backend/cpu`, `backend/cuda`) run them, each
//! primitive under the same name in each backend.

pub mod view;

use crate::dtype::Dtype;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    /// The error function.
    Erf,
    /// `x * (1 + erf(x / sqrt 2)) / 2`.
    Gelu,
    /// `x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2`.
    GeluApprox,
    /// `x * sigmoid(x)`.
    Silu,
    Floor,
    Ceil,
    /// Rounds half to even, as MLX and NumPy.
    Round,
    Tan,
    Sinh,
    Cosh,
    Arcsin,
    Arccos,
    Arctan,
    Arcsinh,
    Arccosh,
    Arctanh,
    /// `log(1 + a)`, accurate for small `a`.
    Log1p,
    /// `e^a - 1`, accurate for small `a`.
    Expm1,
    Log2,
    Log10,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// Division rounded toward -inf (Python's `//`).
    FloorDiv,
    /// The remainder of `FloorDiv`, with the divisor's sign (Python's `%`).
    Rem,
    Pow,
    Maximum,
    Minimum,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

impl BinaryOp {
    /// Comparisons produce `bool`; everything else the (promoted) input type.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Equal | NotEqual | Less | LessEqual | Greater | GreaterEqual)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgReduceOp {
    ArgMax,
    ArgMin,
}

/// One node's computation. Shapes and dtypes of the output are fixed by the
/// op that built the node; a primitive carries only what the kernel needs
/// beyond its inputs and the output's shape and dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Primitive {
    /// Elementwise on one input of the output's dtype.
    Unary(UnaryOp),
    /// Elementwise on two inputs of one dtype, broadcast to the output shape.
    Binary(BinaryOp),
    /// `where(cond, x, y)`: three inputs (bool, T, T) broadcast to the output.
    Select,
    /// Converts the input to the output's dtype.
    AsType,
    /// Reduces `axes` (sorted, unique) of the input; the output keeps them as size 1.
    Reduce { op: ReduceOp, axes: Vec<usize> },
    /// Index (`uint32`) of the max/min along `axis`; the output keeps it as size 1.
    ArgReduce { op: ArgReduceOp, axis: usize },
    /// Batched matrix product of two inputs already broadcast to matching
    /// batch dimensions: `[..., M, K] @ [..., K, N]`.
    Matmul,
    /// Same elements, new shape (a view when the input is contiguous).
    Reshape,
    /// Axes permuted (a view).
    Transpose { perm: Vec<usize> },
    /// Input broadcast to the output shape (a view).
    BroadcastTo,
    /// `input[start::step]` per axis, cut to the output's shape; steps may be
    /// negative (a view).
    Slice { start: Vec<usize>, step: Vec<isize> },
    /// Inputs joined along `axis`.
    Concatenate { axis: usize },
    /// `start + i * step` for `i` in `0..n`, in the output's dtype (no inputs).
    Arange { start: f64, step: f64 },
    /// A contiguous copy of the input.
    Copy,
    /// `take`: inputs (array, integer indices); the output is
    /// `a.shape[..axis] ++ indices.shape ++ a.shape[axis + 1..]`.
    Gather { axis: usize },
    /// `take_along_axis`: inputs (array, integer indices broadcast to the
    /// output shape); `a` broadcasts to the output except along `axis`.
    GatherAxis { axis: usize },
    /// Inputs (array, update): the array with the region `start::step` (of
    /// the update's broadcast shape `region`) replaced by the update.
    SliceUpdate { start: Vec<usize>, step: Vec<isize>, region: Vec<usize> },
    /// Softmax along the last axis (float16/bfloat16 accumulate in float32).
    Softmax,
    /// `log(sum(exp(x)))` along the last axis, kept as size 1.
    LogSumExp,
    /// Cumulative sum along `axis`.
    CumSum { axis: usize, reverse: bool, inclusive: bool },
    /// Values sorted along the last axis (NaN last).
    Sort,
    /// `uint32` indices that sort the last axis (stable, NaN last).
    ArgSort,
    /// Counter-based random bits (`uint32`) from a key (input, `uint32[2]`):
    /// threefry-2x32 (20 rounds) of the key on the counters `0..`.
    RandomBits,
    /// `fast::rms_norm` over the last axis; inputs (x[, weight]).
    RmsNorm { eps: f32 },
    /// `fast::layer_norm` over the last axis; inputs (x[, weight][, bias]).
    LayerNorm { eps: f32, has_weight: bool, has_bias: bool },
    /// `fast::rope` on `[..., L, D]`: rotates the first `dims` features of
    /// each position `offset + l`.
    Rope { dims: usize, traditional: bool, base: f32, scale: f32, offset: usize },
    /// `fast::scaled_dot_product_attention` of q `[B, Hq, L, D]`, k `[B, Hk,
    /// S, D]`, v `[B, Hk, S, Dv]` (Hq a multiple of Hk), and optionally an
    /// additive (float) or keep (bool) mask broadcast to `[B, Hq, L, S]`.
    Sdpa { scale: f32, causal: bool },
}

impl Primitive {
    pub fn name(&self) -> &'static str {
        match self {
            Primitive::Unary(_) => "Unary",
            Primitive::Binary(_) => "Binary",
            Primitive::Select => "Select",
            Primitive::AsType => "AsType",
            Primitive::Reduce { .. } => "Reduce",
            Primitive::ArgReduce { .. } => "ArgReduce",
            Primitive::Matmul => "Matmul",
            Primitive::Reshape => "Reshape",
            Primitive::Transpose { .. } => "Transpose",
            Primitive::BroadcastTo => "BroadcastTo",
            Primitive::Slice { .. } => "Slice",
            Primitive::Concatenate { .. } => "Concatenate",
            Primitive::Arange { .. } => "Arange",
            Primitive::Copy => "Copy",
            Primitive::Gather { .. } => "Gather",
            Primitive::GatherAxis { .. } => "GatherAxis",
            Primitive::SliceUpdate { .. } => "SliceUpdate",
            Primitive::Softmax => "Softmax",
            Primitive::LogSumExp => "LogSumExp",
            Primitive::CumSum { .. } => "CumSum",
            Primitive::Sort => "Sort",
            Primitive::ArgSort => "ArgSort",
            Primitive::RandomBits => "RandomBits",
            Primitive::RmsNorm { .. } => "RmsNorm",
            Primitive::LayerNorm { .. } => "LayerNorm",
            Primitive::Rope { .. } => "Rope",
            Primitive::Sdpa { .. } => "Sdpa",
        }
    }
}

/// What a kernel is told about the array it produces.
#[derive(Clone, Copy, Debug)]
pub struct OutSpec<'a> {
    pub shape: &'a [usize],
    pub dtype: Dtype,
}
