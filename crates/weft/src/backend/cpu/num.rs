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
    fn pow(self, o: Self) -> Self { self || !o }
    fn neg(self) -> Self { self }
    fn abs(self) -> Self { self }
}

/// Transcendental functions, for the float types.
pub(crate) trait Float: Arith {
    fn unary(self, op: UnaryOp) -> Self;
}

#[inline(always)]
fn f32_unary(op: UnaryOp, x: f32) -> f32 {
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
        UnaryOp::Erf => erf_f32(x),
    }
}

#[inline(always)]
fn f64_unary(op: UnaryOp, x: f64) -> f64 {
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
        UnaryOp::Erf => erf_f64(x),
    }
}

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

/// `erf` to float32 accuracy: a Taylor series near 0 (where `1 - erfc`
/// would lose relative precision), else the Chebyshev-fitted `erfc` of
/// Numerical Recipes (fractional error below 1.2e-7), both in float64.
pub(crate) fn erf_f32(x: f32) -> f32 {
    let x = x as f64;
    if x.abs() < 0.5 {
        return erf_series(x, 1e-9) as f32;
    }
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let erfc = t * (-z * z + poly).exp();
    (if x >= 0.0 { 1.0 - erfc } else { erfc - 1.0 }) as f32
}

/// `erf` to float64 accuracy: the all-positive series
/// `2/sqrt(pi) e^(-x^2) sum (2x^2)^n x / (1 3 5 ... (2n+1))` below 3, and
/// the continued fraction of `erfc` above (erf is 1 in float64 past 6).
pub(crate) fn erf_f64(x: f64) -> f64 {
    let z = x.abs();
    if z.is_nan() {
        return x;
    }
    if z < 3.0 {
        return erf_series(x, 1e-17);
    }
    if z >= 6.0 {
        return x.signum();
    }
    // erfc(z) = e^(-z^2)/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + ...)))),
    // evaluated from the tail.
    let mut f = z;
    for k in (1..=60).rev() {
        f = z + (k as f64 / 2.0) / f;
    }
    let erfc = (-z * z).exp() / (std::f64::consts::PI.sqrt() * f);
    x.signum() * (1.0 - erfc)
}

fn erf_series(x: f64, tol: f64) -> f64 {
    let x2 = x * x;
    let (mut term, mut sum) = (x, x);
    let mut n = 0.0;
    while term.abs() > tol * sum.abs() {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
    }
    std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() * sum
}
