//! Primitives: what a graph node computes. Ops (in `ops/`) build nodes that
//! hold one of these; backends (`backend/cpu`, `backend/cuda`) run them, each
//! primitive under the same name in each backend.

pub mod autodiff;
pub mod complex;
pub mod fused;
pub mod linalg;
pub mod shape;
pub mod threefry;
pub mod unary;
pub mod view;
pub mod vmap;

pub use complex::ComplexOp;
pub use fused::FusedProgram;
pub use linalg::LinalgOp;
pub use unary::UnaryOp;

use crate::dtype::Dtype;

/// An enum of ops with [`ALL`](BinaryOp::ALL), the list tests iterate.
macro_rules! op_enum {
    ($(#[$m:meta])* pub enum $E:ident { $($(#[$doc:meta])* $V:ident,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $E { $($(#[$doc])* $V,)* }
        impl $E {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$E] = &[$($E::$V),*];
        }
    };
}

op_enum! {
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
    /// `atan2(a, b)`: the angle of the point `(b, a)`, on floats.
    Atan2,
    /// Bitwise and, or, xor (integers and bool only).
    BitAnd,
    BitOr,
    BitXor,
    /// `a << b` and `a >> b` (integers only; arithmetic for signed `a`;
    /// the shift is taken modulo the width, as x86 and MLX's CPU do).
    LeftShift,
    RightShift,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}
}

impl BinaryOp {
    /// Comparisons produce `bool`; everything else the (promoted) input type.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Equal | NotEqual | Less | LessEqual | Greater | GreaterEqual)
    }

    /// Bitwise ops, defined on integers and bool only.
    pub fn is_bitwise(self) -> bool {
        use BinaryOp::*;
        matches!(self, BitAnd | BitOr | BitXor | LeftShift | RightShift)
    }
}

op_enum! {
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}
}

op_enum! {
pub enum ArgReduceOp {
    ArgMax,
    ArgMin,
}
}

/// Defines [`Primitive`] from its list of variants, and [`Primitive::name`]
/// from the same list (so a new primitive is written once).
macro_rules! primitives {
    ($($(#[$doc:meta])* $V:ident $(($($t:ty),*))? $({ $($f:ident: $ft:ty),* $(,)? })?,)*) => {
        /// One node's computation. Shapes and dtypes of the output are fixed
        /// by the op that built the node; a primitive carries only what the
        /// kernel needs beyond its inputs and the output's shape and dtype.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Primitive {
            $($(#[$doc])* $V $(($($t),*))? $({ $($f: $ft),* })?,)*
        }

        impl Primitive {
            /// The variant's name (`"Matmul"`, `"Unary"`, ...).
            pub fn name(&self) -> &'static str {
                match self {
                    $(Primitive::$V { .. } => stringify!($V),)*
                }
            }
        }
    };
}

primitives! {
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
    /// Inputs (array, flat positions, updates of the same length): the
    /// array with each update written at its flat position, or combined
    /// with the value there by `reduce` (None assigns; in update order).
    Scatter { reduce: Option<ReduceOp> },
    /// Inputs (array, update): the array with the region `start::step` (of
    /// the update's broadcast shape `region`) replaced by the update.
    SliceUpdate { start: Vec<usize>, step: Vec<isize>, region: Vec<usize> },
    /// Softmax along the last axis (float16/bfloat16 accumulate in float32).
    Softmax,
    /// `log(sum(exp(x)))` along the last axis, kept as size 1.
    LogSumExp,
    /// A running `op` (cumsum, cumprod, cummax, cummin) along `axis`;
    /// `inclusive = false` shifts by one, starting from the op's identity.
    Scan { op: ReduceOp, axis: usize, reverse: bool, inclusive: bool },
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
    Rope(RopeParams),
    /// `fast::scaled_dot_product_attention` of q `[B, Hq, L, D]`, k `[B, Hk,
    /// S, D]`, v `[B, Hk, S, Dv]` (Hq a multiple of Hk), and optionally an
    /// additive (float) or keep (bool) mask broadcast to `[B, Hq, L, S]`.
    Sdpa { scale: f32, causal: bool },
    /// A factorization, inverse or solve of the trailing matrices
    /// (`linalg`); several results are packed into one output row per
    /// matrix ([`LinalgOp::pieces`]). CPU only: GPU streams run it on the host.
    Linalg(LinalgOp),
    /// `conv_general`: inputs (x `[N, ...spatial, C_in]`, w `[C_out,
    /// ...kernel, C_in / groups]`), output `[N, ...out, C_out]`.
    Conv(ConvParams),
    /// A view of its (1-D) input's elements: element `idx` of the output is
    /// input element `offset + sum(idx[k] * strides[k])`, which the op has
    /// checked lies inside the input.
    AsStrided { strides: Vec<isize>, offset: usize },
    /// Affine quantization codes (`ops/quantized.rs`): inputs (w `[..., C]`,
    /// float32 scales and biases `[..., C / group_size]`); the output is the
    /// `uint32` bit stream of `clip(rint((w - bias) / scale), 0, 2^bits - 1)`
    /// per row, `[..., C * bits / 32]`.
    Quantize { group_size: usize, bits: u32 },
    /// `scales * q + biases` of packed codes: inputs (w `uint32 [..., R,
    /// C']`, scales, biases `[..., R, G]`); output `[..., R, G * group_size]`.
    Dequantize { group_size: usize, bits: u32 },
    /// `x @ dequantize(w).T` (`transpose`) or `x @ dequantize(w)` with the
    /// packed `w` read in place: inputs (x `[..., M, K]`, w, scales, biases),
    /// all four with the same batch axes. `int8_activations`: the rows of
    /// `x` are rounded to int8 per block of 32 first
    /// (`ops::quantized_matmul_int8`).
    QuantizedMatmul { group_size: usize, bits: u32, transpose: bool, int8_activations: bool },
    /// A part of a complex64 input, elementwise ([`ComplexOp`]).
    Complex(ComplexOp),
    /// The discrete Fourier transform over `axes` (distinct, in the order
    /// given; the op has padded or cut them to the transform sizes).
    /// `inverse` transforms are scaled by `1 / n`. `real` and not
    /// `inverse`: a float32 input, and the last axis of `axes` keeps `n / 2
    /// + 1` frequencies; `real` and `inverse`: a Hermitian complex64 input
    /// whose last axis holds `n / 2 + 1` of them, and a float32 output of
    /// `n` (the output's shape gives `n`). Otherwise complex64 in and out.
    Fft { axes: Vec<usize>, inverse: bool, real: bool },
    /// A chain of elementwise steps run in one pass (`compile`'s fusion,
    /// `primitive/fused.rs`): inputs broadcast to the output, which is the
    /// last step's.
    Fused(std::sync::Arc<FusedProgram>),
}

/// The parameters of [`Primitive::Conv`] (one entry per spatial axis),
/// with `mlx.core.conv_general`'s meaning. Output position `o` of an axis
/// reads input-dilated, padded position `o * stride + k * kernel_dilation`
/// for kernel taps `k` (`K - 1 - k` of the weight when `flip`); the
/// input-dilated axis has the input's elements at multiples of
/// `input_dilation` and zeros between, and `padding_lo`/`padding_hi` zeros
/// around it (negative padding cuts). Channels split into `groups`
/// independent convolutions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvParams {
    pub stride: Vec<usize>,
    pub padding_lo: Vec<isize>,
    pub padding_hi: Vec<isize>,
    pub kernel_dilation: Vec<usize>,
    pub input_dilation: Vec<usize>,
    pub groups: usize,
    pub flip: bool,
}

impl ConvParams {
    /// The output length of spatial axis `i` for an input of length `n` and
    /// a kernel of `k` taps: 0 when the padded input is shorter than the
    /// dilated kernel.
    pub fn out_len(&self, i: usize, n: usize, k: usize) -> usize {
        let dilated = if n == 0 { 0 } else { (n as isize - 1) * self.input_dilation[i] as isize + 1 };
        let padded = dilated + self.padding_lo[i] + self.padding_hi[i];
        let span = (k as isize - 1) * self.kernel_dilation[i] as isize + 1;
        if k == 0 || padded < span {
            0
        } else {
            ((padded - span) / self.stride[i] as isize + 1) as usize
        }
    }
}

/// The parameters of [`Primitive::Rope`], read by both backends' kernels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeParams {
    /// Leading features rotated (even); the rest pass through.
    pub dims: usize,
    /// Pairs `(2i, 2i + 1)` when true, `(i, i + dims / 2)` otherwise.
    pub traditional: bool,
    pub base: f32,
    pub scale: f32,
    /// Position of the first row along `L`.
    pub offset: usize,
}

/// What a kernel is told about the array it produces.
#[derive(Clone, Copy, Debug)]
pub struct OutSpec<'a> {
    pub shape: &'a [usize],
    pub dtype: Dtype,
}
