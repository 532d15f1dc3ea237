//! Arithmetic of each element type, as the kernels need it: wrapping for
//! integers, IEEE for floats, `float16`/`bfloat16` computed in `float32`.

use crate::buffer::CpuElement;
use crate::primitive::UnaryOp;
use half::{bf16, f16};

pub(crate) trait Arith: CpuElement {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    /// `self / o` rounded toward -inf.
    fn floor_div(self, o: Self) -> Self;
    /// `self - o * floor_div(self, o)`: the sign of `o` (0 for integer `o == 0`).
    fn rem(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    #[allow(clippy::eq_op)] // `x != x` is the NaN test for every element type
    fn max(self, o: Self) -> Self {
        // NaN propagates, as in NumPy and MLX.
        if self.partial_cmp(&o).is_none() {
            if self != self { self } else { o }
        } else if o > self {
            o
        } else {
            self
        }
    }
    #[allow(clippy::eq_op)]
    fn min(self, o: Self) -> Self {
        if self.partial_cmp(&o).is_none() {
            if self != self { self } else { o }
        } else if o < self {
            o
        } else {
            self
        }
    }
}

macro_rules! int_arith {
    ($($t:ty => |$a:ident| $abs:expr),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            // Integer division by zero gives 0 rather than trapping.
            #[inline(always)] fn div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            #[allow(unused_comparisons)]
            #[inline(always)] fn floor_div(self, o: Self) -> Self {
                if o == 0 { return 0; }
                let q = self.wrapping_div(o);
                // Truncation rounded up when the signs differ and it was inexact.
                if self.wrapping_rem(o) != 0 && ((self < 0) != (o < 0)) { q.wrapping_sub(1) } else { q }
            }
            #[allow(unused_comparisons)]
            #[inline(always)] fn rem(self, o: Self) -> Self {
                if o == 0 { return 0; }
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) { r.wrapping_add(o) } else { r }
            }
            #[inline(always)] fn pow(self, o: Self) -> Self {
                #[allow(unused_comparisons)]
                if o < 0 { if self == 1 { 1 } else { 0 } } else { self.wrapping_pow(o as u32) }
            }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn abs(self) -> Self { let $a = self; $abs }
        }
    )*};
}
int_arith!(u8 => |x| x, u32 => |x| x, i32 => |x| x.wrapping_abs(), i64 => |x| x.wrapping_abs());

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn div(self, o: Self) -> Self { self / o }
            #[inline(always)] fn floor_div(self, o: Self) -> Self { (self / o).floor() }
            #[inline(always)] fn rem(self, o: Self) -> Self {
                // fmod, moved to the divisor's sign (NumPy's remainder).
                let r = self % o;
                if r != 0.0 && ((r < 0.0) != (o < 0.0)) { r + o } else { r }
            }
            #[inline(always)] fn pow(self, o: Self) -> Self { self.powf(o) }
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn abs(self) -> Self { self.abs() }
        }
    )*};
}
float_arith!(f32, f64);

macro_rules! half_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() + o.to_f32()) }
            #[inline(always)] fn sub(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() - o.to_f32()) }
            #[inline(always)] fn mul(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() * o.to_f32()) }
            #[inline(always)] fn div(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() / o.to_f32()) }
            #[inline(always)] fn floor_div(self, o: Self) -> Self { <$t>::from_f32(self.to_f32().floor_div(o.to_f32())) }
            #[inline(always)] fn rem(self, o: Self) -> Self { <$t>::from_f32(Arith::rem(self.to_f32(), o.to_f32())) }
            #[inline(always)] fn pow(self, o: Self) -> Self { <$t>::from_f32(self.to_f32().powf(o.to_f32())) }
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn abs(self) -> Self { <$t>::from_f32(self.to_f32().abs()) }
        }
    )*};
}
half_arith!(f16, bf16);

/// Booleans: `+` is or, `*` is and, `-` is xor (what the integer result
/// would be, cast back to bool).
impl Arith for bool {
    fn add(self, o: Self) -> Self { self | o }
    fn sub(self, o: Self) -> Self { self ^ o }
    fn mul(self, o: Self) -> Self { self & o }
    fn div(self, o: Self) -> Self { o && self }
    fn floor_div(self, o: Self) -> Self { o && self }
    fn rem(self, _o: Self) -> Self { false }
    fn pow(self, o: Self) -> Self { self || !o }
    fn neg(self) -> Self { self }
    fn abs(self) -> Self { self }
}

/// `sqrt(2 / pi)`, of the tanh approximation of GELU.
const GELU_C: f64 = 0.797_884_560_802_865_4;

/// Transcendental functions, for the float types.
pub(crate) trait Float: Arith {
    fn unary(self, op: UnaryOp) -> Self;
}

/// `$name(op, x)`: the op on one `$t`, `$erf` its error function. One
/// macro writes the `f32` and `f64` versions, so the two cannot drift apart.
macro_rules! float_unary {
    ($name:ident, $t:ty, $erf:path, $frac_1_sqrt_2:expr) => {
        #[inline(always)]
        #[allow(clippy::unnecessary_cast)]
        fn $name(op: UnaryOp, x: $t) -> $t {
            match op {
                UnaryOp::Neg => -x,
                UnaryOp::Abs => x.abs(),
                UnaryOp::Exp => x.exp(),
                UnaryOp::Log => x.ln(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Rsqrt => 1.0 / x.sqrt(),
                UnaryOp::Tanh => x.tanh(),
                UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
                UnaryOp::Sin => x.sin(),
                UnaryOp::Cos => x.cos(),
                UnaryOp::Erf => $erf(x),
                UnaryOp::Gelu => 0.5 * x * (1.0 + $erf(x * $frac_1_sqrt_2)),
                UnaryOp::GeluApprox => 0.5 * x * (1.0 + (GELU_C as $t * (x + 0.044715 * x * x * x)).tanh()),
                UnaryOp::Silu => x / (1.0 + (-x).exp()),
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Round => x.round_ties_even(),
                UnaryOp::Tan => x.tan(),
                UnaryOp::Sinh => x.sinh(),
                UnaryOp::Cosh => x.cosh(),
                UnaryOp::Arcsin => x.asin(),
                UnaryOp::Arccos => x.acos(),
                UnaryOp::Arctan => x.atan(),
                UnaryOp::Arcsinh => x.asinh(),
                UnaryOp::Arccosh => x.acosh(),
                UnaryOp::Arctanh => x.atanh(),
                UnaryOp::Log1p => x.ln_1p(),
                UnaryOp::Expm1 => x.exp_m1(),
                UnaryOp::Log2 => x.log2(),
                UnaryOp::Log10 => x.log10(),
            }
        }
    };
}
float_unary!(f32_unary, f32, libm::erff, std::f32::consts::FRAC_1_SQRT_2);
float_unary!(f64_unary, f64, libm::erf, std::f64::consts::FRAC_1_SQRT_2);

impl Float for f32 {
    #[inline(always)]
    fn unary(self, op: UnaryOp) -> Self { f32_unary(op, self) }
}
impl Float for f64 {
    #[inline(always)]
    fn unary(self, op: UnaryOp) -> Self { f64_unary(op, self) }
}
impl Float for f16 {
    #[inline(always)]
    fn unary(self, op: UnaryOp) -> Self { f16::from_f32(f32_unary(op, self.to_f32())) }
}
impl Float for bf16 {
    #[inline(always)]
    fn unary(self, op: UnaryOp) -> Self { bf16::from_f32(f32_unary(op, self.to_f32())) }
}

