//! The unary op table: every elementwise op of one input, listed once.
//!
//! [`unary_ops!`](crate::unary_ops) holds the list. Given the name of a
//! macro, it calls that macro with every row, `$(#[doc])* Op name domain
//! scope;`, so each thing that needs "every unary op" is written once and
//! generated from the rows:
//!
//! - here: the [`UnaryOp`] enum, [`UnaryOp::ALL`], [`UnaryOp::name`],
//!   [`UnaryOp::domain`], and one type per op in [`op`] (a backend states
//!   its formula by implementing its trait on that type);
//! - `ops/elementwise.rs`: the graph-building function `ops::name`;
//! - `backend/cpu/unary.rs`: the CPU dispatch (each op's formula is an impl
//!   of `CpuUnary` on `op::Op`; a missing one is a compile error);
//! - `backend/cuda/unary.rs`: the CUDA dispatch (`CudaUnary`, a CUDA C
//!   expression per op);
//! - `weft-python`: the `weft.core` function, for rows of scope `core`.
//!
//! Adding a unary op is one row below, its CPU formula and its CUDA
//! expression; tests iterate [`UnaryOp::ALL`].
//!
//! The columns: `domain` is how dtypes map (see [`Domain`]); `scope` is
//! `core` when weft.core's function of that name is the generated one-array
//! binding, `own` when weft.core has none (activations live in `mlx.nn`) or
//! binds it by hand (`round` takes `decimals`).

/// Calls `$m!` with every row of the unary op table (see the module docs).
#[macro_export]
macro_rules! unary_ops {
    ($m:ident) => {
        $m! {
            /// `-a`.
            Neg negative Numeric core;
            /// `|a|`.
            Abs abs Numeric core;
            /// `e^a` (integers are computed in float32, as in MLX).
            Exp exp Float core;
            /// `2^a`.
            Exp2 exp2 Float core;
            /// Natural logarithm.
            Log log Float core;
            /// Square root.
            Sqrt sqrt Float core;
            /// `1 / sqrt(a)`.
            Rsqrt rsqrt Float core;
            /// Hyperbolic tangent.
            Tanh tanh Float core;
            /// `1 / (1 + e^-a)`.
            Sigmoid sigmoid Float core;
            /// Sine.
            Sin sin Float core;
            /// Cosine.
            Cos cos Float core;
            /// The error function `2/sqrt(pi) * integral_0^a e^(-t^2) dt`.
            Erf erf Float core;
            /// Exact GELU: `x * (1 + erf(x / sqrt(2))) / 2`.
            ///
            /// ```
            /// use weft::{ops, Array};
            /// let y = ops::gelu(&Array::from_slice(&[0.0f32, 1.0], &[2]).unwrap()).unwrap();
            /// let y = y.to_vec::<f32>().unwrap();
            /// assert_eq!(y[0], 0.0);
            /// assert!((y[1] - 0.841_344_7).abs() < 1e-6);
            /// ```
            Gelu gelu Float own;
            /// GELU with the tanh approximation:
            /// `x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`.
            GeluApprox gelu_approx Float own;
            /// SiLU (swish): `x * sigmoid(x)`.
            Silu silu Float own;
            /// Largest integer not above `a` (integers unchanged).
            Floor floor Rounding core;
            /// Smallest integer not below `a` (integers unchanged).
            Ceil ceil Rounding core;
            /// Nearest integer, halves to even, as NumPy's `rint` (integers unchanged);
            /// `ops::round` rounds to any number of decimals with it.
            Round rint Rounding own;
            /// Tangent.
            Tan tan Float core;
            /// Hyperbolic sine.
            Sinh sinh Float core;
            /// Hyperbolic cosine.
            Cosh cosh Float core;
            /// Inverse sine.
            Arcsin arcsin Float core;
            /// Inverse cosine.
            Arccos arccos Float core;
            /// Inverse tangent.
            Arctan arctan Float core;
            /// Inverse hyperbolic sine.
            Arcsinh arcsinh Float core;
            /// Inverse hyperbolic cosine.
            Arccosh arccosh Float core;
            /// Inverse hyperbolic tangent.
            Arctanh arctanh Float core;
            /// `log(1 + a)`, accurate near 0.
            Log1p log1p Float core;
            /// `e^a - 1`, accurate near 0.
            Expm1 expm1 Float core;
            /// Base-2 logarithm.
            Log2 log2 Float core;
            /// Base-10 logarithm.
            Log10 log10 Float core;
            /// The inverse of `erf` on `(-1, 1)` (`±inf` at `±1`, NaN outside).
            Erfinv erfinv Float core;
        }
    };
}

/// How a unary op maps input dtypes to its output dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// Any numeric dtype, kept (`negative` of bool is an error).
    Numeric,
    /// Float math: integer and bool inputs are computed in float32.
    Float,
    /// Rounding: floats are rounded, integers are already whole (unchanged).
    Rounding,
}

macro_rules! define_unary_op {
    ($($(#[$doc:meta])* $Op:ident $name:ident $domain:ident $scope:ident;)*) => {
        /// An elementwise op of one input (the table is [`unary_ops!`](crate::unary_ops)).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $($(#[$doc])* $Op,)*
        }

        impl UnaryOp {
            /// Every unary op, in table order.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$Op),*];

            /// The name of the op's `ops::` function.
            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$Op => stringify!($name),)*
                }
            }

            /// How input dtypes map to the output's.
            pub fn domain(self) -> Domain {
                match self {
                    $(UnaryOp::$Op => Domain::$domain,)*
                }
            }
        }

        /// One type per unary op, named as its [`UnaryOp`] variant. Backends
        /// implement their formula traits on these (`backend/cpu/unary.rs`,
        /// `backend/cuda/unary.rs`).
        pub mod op {
            $(
                $(#[$doc])*
                #[derive(Clone, Copy, Debug)]
                pub struct $Op;
            )*
        }
    };
}

crate::unary_ops!(define_unary_op);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_all_is_complete() {
        let mut names: Vec<_> = UnaryOp::ALL.iter().map(|o| o.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), UnaryOp::ALL.len());
        assert!(UnaryOp::ALL.contains(&UnaryOp::Exp2));
    }
}
