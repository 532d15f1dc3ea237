//! The element traits of the CPU kernels, one family: [`Arith`] (every
//! element type: wrapping for integers, IEEE for floats, `float16`/`bfloat16`
//! computed in `float32`), [`FloatElem`] (the float elements, each with the
//! [`Acc`] type it computes in: `f32` for 16- and 32-bit floats, `f64` for
//! `f64`). `CpuElement` (`buffer.rs`) is how a type sits in a buffer.

use crate::buffer::CpuElement;
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
    /// Bitwise ops: integers and bool implement them; `binary.rs` refuses
    /// float inputs before any of these could run (ops never build them).
    fn bitand(self, o: Self) -> Self {
        let _ = o;
        self
    }
    fn bitor(self, o: Self) -> Self {
        let _ = o;
        self
    }
    fn bitxor(self, o: Self) -> Self {
        let _ = o;
        self
    }
    fn shl(self, o: Self) -> Self {
        let _ = o;
        self
    }
    fn shr(self, o: Self) -> Self {
        let _ = o;
        self
    }
    /// `atan2(self, o)`, computed in float64 (ops only build it on floats).
    fn atan2(self, o: Self) -> Self {
        Self::from_f64(self.to_f64().atan2(o.to_f64()))
    }
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
                // A negative exponent gives 0, whatever the base (MLX's rule).
                if o < 0 { 0 } else { self.wrapping_pow(o as u32) }
            }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn abs(self) -> Self { let $a = self; $abs }
            #[inline(always)] fn bitand(self, o: Self) -> Self { self & o }
            #[inline(always)] fn bitor(self, o: Self) -> Self { self | o }
            #[inline(always)] fn bitxor(self, o: Self) -> Self { self ^ o }
            // The shift modulo the width (wrapping_shl masks it).
            #[inline(always)] fn shl(self, o: Self) -> Self { self.wrapping_shl(o as u32) }
            #[inline(always)] fn shr(self, o: Self) -> Self { self.wrapping_shr(o as u32) }
        }
    )*};
}
int_arith!(u8 => |x| x, u16 => |x| x, u32 => |x| x, u64 => |x| x,
           i8 => |x| x.wrapping_abs(), i16 => |x| x.wrapping_abs(), i32 => |x| x.wrapping_abs(), i64 => |x| x.wrapping_abs());

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
    fn bitand(self, o: Self) -> Self { self & o }
    fn bitor(self, o: Self) -> Self { self | o }
    fn bitxor(self, o: Self) -> Self { self ^ o }
    fn neg(self) -> Self { self }
    fn abs(self) -> Self { self }
}

/// The float type a kernel computes and accumulates in (`f32`, `f64`).
pub(crate) trait Acc:
    num_traits::Float + std::ops::AddAssign + std::ops::MulAssign + Send + Sync + 'static
{
    fn of_f64(v: f64) -> Self;
    /// The error function (libm's, a port of musl's).
    fn erf(self) -> Self;
    /// Rounds half to even, as NumPy and MLX.
    fn round_even(self) -> Self;
    /// The inverse error function, computed in f64 ([`erfinv_f64`]).
    fn erfinv(self) -> Self {
        Self::of_f64(erfinv_f64(self.to_f64().unwrap_or(f64::NAN)))
    }
}

/// The inverse error function: Giles' single-precision polynomial
/// ("Approximating the erfinv function", 2010) as the starting point, then
/// two Newton steps on libm's `erf`, which bring it to f64 accuracy.
pub(crate) fn erfinv_f64(x: f64) -> f64 {
    if x.is_nan() || x.abs() > 1.0 {
        return f64::NAN;
    }
    if x.abs() == 1.0 {
        return x * f64::INFINITY;
    }
    let w = -((1.0 - x) * (1.0 + x)).ln();
    let horner = |w: f64, cs: &[f64]| cs.iter().fold(0.0, |p, &c| p * w + c);
    let p = if w < 5.0 {
        horner(
            w - 2.5,
            &[2.810_226_36e-08, 3.432_739_39e-07, -3.523_387_7e-06, -4.391_506_54e-06, 2.185_808_7e-04, -1.253_725_03e-03, -4.177_681_64e-03, 2.466_407_27e-01, 1.501_409_41],
        )
    } else {
        horner(
            w.sqrt() - 3.0,
            &[-2.002_142_57e-04, 1.009_505_58e-04, 1.349_343_22e-03, -3.673_428_44e-03, 5.739_507_73e-03, -7.622_461_3e-03, 9.438_870_47e-03, 1.001_674_06, 2.832_976_82],
        )
    };
    let mut y = p * x;
    // d/dy erf(y) = 2/sqrt(pi) e^(-y^2).
    for _ in 0..2 {
        let d = 2.0 / std::f64::consts::PI.sqrt() * (-y * y).exp();
        if d == 0.0 {
            break;
        }
        y -= (libm::erf(y) - x) / d;
    }
    y
}
/// `Acc` for `f32` and `f64` from one text, so the two cannot drift apart.
macro_rules! acc {
    ($($t:ty => $erf:path),*) => {$(
        impl Acc for $t {
            #[inline(always)]
            #[allow(clippy::unnecessary_cast)] // f64 as f64
            fn of_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                self.round_ties_even()
            }
        }
    )*};
}
acc!(f32 => libm::erff, f64 => libm::erf);

/// A float element with its accumulator: `float16`/`bfloat16`/`float32`
/// accumulate in `float32`, `float64` in `float64`.
pub(crate) trait FloatElem: Arith {
    type A: Acc;
    fn to_acc(self) -> Self::A;
    fn from_acc(a: Self::A) -> Self;
}

/// `FloatElem` for each float element: `$t` computes in `$a`, reached by
/// `$to` and back by `$from`.
macro_rules! float_elem {
    ($($t:ty => $a:ty, |$x:ident| $to:expr, |$y:ident| $from:expr);* $(;)?) => {$(
        impl FloatElem for $t {
            type A = $a;
            #[inline(always)]
            fn to_acc(self) -> $a {
                let $x = self;
                $to
            }
            #[inline(always)]
            fn from_acc($y: $a) -> Self {
                $from
            }
        }
    )*};
}
float_elem! {
    f32 => f32, |x| x, |a| a;
    f64 => f64, |x| x, |a| a;
    f16 => f32, |x| x.to_f32(), |a| f16::from_f32(a);
    bf16 => f32, |x| x.to_f32(), |a| bf16::from_f32(a);
}

/// `complex64`: complex arithmetic. `abs` is `|z|` as a complex number
/// (`ops::abs` gives `float32`, through `backend/cpu/complex.rs`); the ops
/// with no complex meaning (floor division, remainder, max/min ordering,
/// bitwise) are refused when the graph is built (`primitive/complex.rs`),
/// so the defaults below never run.
impl Arith for crate::Complex64 {
    #[inline(always)] fn add(self, o: Self) -> Self { Self(self.0 + o.0) }
    #[inline(always)] fn sub(self, o: Self) -> Self { Self(self.0 - o.0) }
    #[inline(always)] fn mul(self, o: Self) -> Self { Self(self.0 * o.0) }
    #[inline(always)] fn div(self, o: Self) -> Self { Self(self.0 / o.0) }
    fn floor_div(self, o: Self) -> Self { Self(self.0 / o.0) }
    fn rem(self, _o: Self) -> Self { self }
    fn pow(self, o: Self) -> Self {
        if o.0.im == 0.0 && o.0.re == o.0.re.round() && o.0.re.abs() <= 64.0 {
            Self(self.0.powi(o.0.re as i32))
        } else {
            Self(self.0.powc(o.0))
        }
    }
    #[inline(always)] fn neg(self) -> Self { Self(-self.0) }
    #[inline(always)] fn abs(self) -> Self { Self::new(self.0.norm(), 0.0) }
}
