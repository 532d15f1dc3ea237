//! Elementwise ops: unary math, binary arithmetic and comparisons, `where`,
//! `astype`.

use crate::dtype::Dtype;
use crate::primitive::unary::Domain;
use crate::primitive::{BinaryOp, Primitive, UnaryOp};
use crate::shape::broadcast_shapes;
use crate::{Array, Error, Result};

/// Converts `a` to `dtype` (the same array if it already is).
pub fn astype(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    Array::from_op(Primitive::AsType, vec![a.clone()], a.shape().to_vec(), dtype)
}

/// A node of `op` on `a`, with the dtype rule of the op's [`Domain`].
pub fn unary(op: UnaryOp, a: &Array) -> Result<Array> {
    if a.dtype().is_complex() {
        // The modulus is real; other ops keep complex64 (or are refused by
        // `primitive/complex.rs`, rounding included).
        if op == UnaryOp::Abs {
            return super::complex::complex_abs(a);
        }
        return Array::from_op(Primitive::Unary(op), vec![a.clone()], a.shape().to_vec(), Dtype::C64);
    }
    let dtype = match op.domain() {
        Domain::Numeric if op == UnaryOp::Neg && a.dtype() == Dtype::Bool => {
            return Err(Error::Dtype("cannot negate a bool array; use logical not".into()))
        }
        Domain::Numeric => a.dtype(),
        // Integers are already whole.
        Domain::Rounding if !a.dtype().is_float() => return Ok(a.clone()),
        Domain::Rounding => a.dtype(),
        Domain::Float => a.dtype().at_least_float(),
    };
    let a = astype(a, dtype)?;
    Array::from_op(Primitive::Unary(op), vec![a.clone()], a.shape().to_vec(), dtype)
}

/// `ops::name` for every row of the unary op table (`primitive/unary.rs`).
macro_rules! unary_fns {
    ($($(#[$doc:meta])* $Op:ident $name:ident $domain:ident $scope:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array) -> Result<Array> {
            unary(UnaryOp::$Op, a)
        }
    )*};
}

crate::unary_ops!(unary_fns);

/// Rounds to `decimals` places (halves to even, as NumPy); integers are
/// unchanged. `decimals` may be negative (tens, hundreds, ...).
pub fn round(a: &Array, decimals: i32) -> Result<Array> {
    if a.dtype().is_complex() {
        // Each part on its own, as NumPy and MLX.
        return super::complex(&round(&super::real(a)?, decimals)?, &round(&super::imag(a)?, decimals)?);
    }
    if decimals == 0 || !a.dtype().is_float() {
        return rint(a);
    }
    let s = astype(&Array::scalar(10f64.powi(decimals)), a.dtype())?;
    divide(&rint(&multiply(a, &s)?)?, &s)
}

fn binary(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let mut dtype = Dtype::promote(a.dtype(), b.dtype());
    if matches!(op, BinaryOp::Div | BinaryOp::Atan2) {
        // True division, as MLX's `divide`, and atan2: integers compute in float32.
        dtype = dtype.at_least_float();
    }
    if matches!(op, BinaryOp::FloorDiv | BinaryOp::Rem) && dtype == Dtype::Bool {
        dtype = Dtype::I32;
    }
    if op.is_bitwise() {
        if dtype.is_float() {
            return Err(Error::Dtype(format!(
                "{op:?}: bitwise ops take integers or bool, got {} and {}",
                a.dtype(),
                b.dtype()
            )));
        }
        if matches!(op, BinaryOp::LeftShift | BinaryOp::RightShift) && dtype == Dtype::Bool {
            dtype = Dtype::U8;
        }
    }
    let (a, b) = (astype(a, dtype)?, astype(b, dtype)?);
    let out = if op.is_comparison() { Dtype::Bool } else { dtype };
    Array::from_op(Primitive::Binary(op), vec![a, b], shape, out)
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, b: &Array) -> Result<Array> {
            binary(BinaryOp::$op, a, b)
        }
    )*};
}

binary_ops! {
    add => Add,
    subtract => Sub,
    multiply => Mul,
    /// True division: integer inputs give float32.
    divide => Div,
    /// `a // b`: division rounded toward -inf (integers stay integers; an
    /// integer division by zero gives 0).
    floor_divide => FloorDiv,
    /// `a % b`: the remainder with the sign of `b`, as Python and NumPy.
    remainder => Rem,
    /// `a ** b`.
    power => Pow,
    maximum => Maximum,
    minimum => Minimum,
    /// Bitwise and (integers and bool).
    bitwise_and => BitAnd,
    /// Bitwise or (integers and bool).
    bitwise_or => BitOr,
    /// Bitwise xor (integers and bool).
    bitwise_xor => BitXor,
    /// `a << b` (integers; bool computes in uint8).
    left_shift => LeftShift,
    /// `a >> b`, arithmetic for signed integers.
    right_shift => RightShift,
    equal => Equal,
    not_equal => NotEqual,
    less => Less,
    less_equal => LessEqual,
    greater => Greater,
    greater_equal => GreaterEqual,
}

/// `cond ? x : y`, elementwise, with all three broadcast together.
pub fn where_(cond: &Array, x: &Array, y: &Array) -> Result<Array> {
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), x.shape())?, y.shape())?;
    let dtype = Dtype::promote(x.dtype(), y.dtype());
    let inputs = vec![astype(cond, Dtype::Bool)?, astype(x, dtype)?, astype(y, dtype)?];
    Array::from_op(Primitive::Select, inputs, shape, dtype)
}

/// `inputs`, unchanged in value, as new arrays that are evaluated only after
/// every array of `dependencies` (MLX's `depends`): each output is a
/// `where_` of its input with itself under a `true` that reads one element
/// of each dependency, so evaluating an output evaluates the dependencies.
pub fn depends(inputs: &[Array], dependencies: &[Array]) -> Result<Vec<Array>> {
    let mut firsts = Vec::with_capacity(dependencies.len());
    for d in dependencies {
        let flat = super::reshape(d, &[-1])?;
        let first = super::slice(&flat, &[super::SliceArg::range(0, d.size().min(1) as isize)])?;
        firsts.push(astype(&first, Dtype::Bool)?);
    }
    let yes = Array::scalar(true);
    let cond = if firsts.is_empty() {
        yes
    } else {
        let any = super::any(&super::concatenate(&firsts, 0isize)?, crate::shape::Axes::All, false)?;
        where_(&any, &yes, &yes)?
    };
    inputs.iter().map(|x| where_(&cond, x, x)).collect()
}

/// `a` limited to `[min, max]` (either bound may be absent, not both).
pub fn clip(a: &Array, min: Option<&Array>, max: Option<&Array>) -> Result<Array> {
    let low = match min {
        Some(m) => maximum(a, m)?,
        None if max.is_none() => return Err(Error::InvalidArgument("clip: give min, max or both".into())),
        None => a.clone(),
    };
    match max {
        Some(m) => minimum(&low, m),
        None => Ok(low),
    }
}

/// -1, 0 or 1 by the sign of each element (NaN stays NaN), in `a`'s dtype.
/// A complex number's sign is `z / |z|` (0 at 0), as NumPy 2 and MLX.
pub fn sign(a: &Array) -> Result<Array> {
    let d = a.dtype();
    if d == Dtype::Bool {
        return Ok(a.clone());
    }
    if d.is_complex() {
        let m = super::abs(a)?;
        let zero = super::creation::scalar(0.0, Dtype::F32)?;
        let safe = where_(&equal(&m, &zero)?, &super::creation::scalar(1.0, Dtype::F32)?, &m)?;
        return where_(&equal(&m, &zero)?, &super::creation::scalar(0.0, d)?, &divide(a, &safe)?);
    }
    let zero = super::creation::scalar(0.0, d)?;
    let neg = if d.is_float() || matches!(d, Dtype::I32 | Dtype::I64) {
        where_(&less(a, &zero)?, &super::creation::scalar(-1.0, d)?, &multiply(a, &zero)?)?
    } else {
        // Unsigned: nothing is negative.
        multiply(a, &zero)?
    };
    where_(&greater(a, &zero)?, &super::creation::scalar(1.0, d)?, &neg)
}

/// `1 / a` (integers give float32).
pub fn reciprocal(a: &Array) -> Result<Array> {
    divide(&Array::scalar(1.0f32), a).and_then(|r| astype(&r, a.dtype().at_least_float()))
}

/// `log(e^a + e^b)` without overflow: `max + log1p(e^-|a - b|)`.
pub fn logaddexp(a: &Array, b: &Array) -> Result<Array> {
    let dtype = Dtype::promote(a.dtype(), b.dtype()).at_least_float();
    let (a, b) = (astype(a, dtype)?, astype(b, dtype)?);
    let m = maximum(&a, &b)?;
    let spread = log1p(&exp(&negative(&abs(&subtract(&a, &b)?)?)?)?)?;
    // Equal operands (both -inf or both +inf included, where `a - b` is NaN)
    // give `a + log 2`.
    let same = add(&a, &super::creation::scalar(std::f64::consts::LN_2, dtype)?)?;
    where_(&equal(&a, &b)?, &same, &add(&m, &spread)?)
}

/// `atan2(a, b)`: the angle of the point `(b, a)` in `(-pi, pi]`; integers
/// compute in float32.
pub fn arctan2(a: &Array, b: &Array) -> Result<Array> {
    binary(BinaryOp::Atan2, a, b)
}

/// `(a // b, a % b)`.
pub fn divmod(a: &Array, b: &Array) -> Result<(Array, Array)> {
    Ok((floor_divide(a, b)?, remainder(a, b)?))
}

/// Degrees to radians; integers compute in float32.
pub fn radians(a: &Array) -> Result<Array> {
    let dtype = a.dtype().at_least_float();
    multiply(&astype(a, dtype)?, &astype(&Array::scalar(std::f64::consts::PI / 180.0), dtype)?)
}

/// Radians to degrees; integers compute in float32.
pub fn degrees(a: &Array) -> Result<Array> {
    let dtype = a.dtype().at_least_float();
    multiply(&astype(a, dtype)?, &astype(&Array::scalar(180.0 / std::f64::consts::PI), dtype)?)
}

/// Rounds toward zero (integers unchanged).
pub fn trunc(a: &Array) -> Result<Array> {
    if !a.dtype().is_float() {
        return Ok(a.clone());
    }
    let zero = astype(&Array::scalar(0.0f64), a.dtype())?;
    where_(&less(a, &zero)?, &ceil(a)?, &floor(a)?)
}

/// The largest finite value of a float dtype.
pub fn float_max(d: Dtype) -> Result<f64> {
    Ok(match d {
        Dtype::F16 => half::f16::MAX.to_f64(),
        Dtype::BF16 => half::bf16::MAX.to_f64(),
        Dtype::F32 => f32::MAX as f64,
        Dtype::F64 => f64::MAX,
        d => return Err(Error::Dtype(format!("{d} is not a float type"))),
    })
}

/// `a` with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf`
/// (by default the dtype's largest and smallest finite values); other
/// dtypes are unchanged.
pub fn nan_to_num(a: &Array, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Array> {
    let d = a.dtype();
    if !d.is_float() {
        return Ok(a.clone());
    }
    let big = float_max(d)?;
    let c = |v: f64| astype(&Array::scalar(v), d);
    let zero = c(0.0)?;
    let inf = super::isinf(a)?;
    let x = where_(&super::isnan(a)?, &c(nan)?, a)?;
    let x = where_(&super::logical_and(&inf, &greater(a, &zero)?)?, &c(posinf.unwrap_or(big))?, &x)?;
    where_(&super::logical_and(&inf, &less(a, &zero)?)?, &c(neginf.unwrap_or(-big))?, &x)
}

/// The `n`-th forward difference along `axis`: `a[1:] - a[:-1]`, `n` times.
pub fn diff(a: &Array, n: usize, axis: isize) -> Result<Array> {
    use super::{slice, SliceArg};
    if a.ndim() == 0 {
        crate::bail!(Shape, "diff needs at least one dimension");
    }
    let ax = crate::shape::normalize_axis(axis, a.ndim())?;
    let mut out = a.clone();
    for _ in 0..n {
        let len = out.shape()[ax] as isize;
        if len == 0 {
            break;
        }
        let mut hi = vec![SliceArg::ALL; ax + 1];
        let mut lo = hi.clone();
        hi[ax] = SliceArg::range(1, len);
        lo[ax] = SliceArg::range(0, len - 1);
        out = if out.dtype() == Dtype::Bool {
            not_equal(&slice(&out, &hi)?, &slice(&out, &lo)?)?
        } else {
            subtract(&slice(&out, &hi)?, &slice(&out, &lo)?)?
        };
    }
    Ok(out)
}

/// `~a`: every bit flipped (integers), logical not (bool).
pub fn bitwise_invert(a: &Array) -> Result<Array> {
    match a.dtype() {
        Dtype::Bool => super::logical_not(a),
        d if d.is_integer() => bitwise_xor(a, &astype(&Array::scalar(-1i64), d)?),
        d => Err(Error::Dtype(format!("bitwise_invert takes integers or bool, got {d}"))),
    }
}
