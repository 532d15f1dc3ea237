//! `Binary`: elementwise arithmetic and comparisons of two broadcast inputs.

use super::num::Arith;
use super::{dispatch, map2};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::{BinaryOp, OutSpec};
use crate::Result;

pub(crate) fn binary(op: BinaryOp, a: &Data, b: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let s = out.shape;
    if op.is_bitwise() && a.buffer.dtype().is_float() {
        return Err(crate::Error::Kernel(format!("{op:?} on {}: bitwise ops take integers or bool", a.buffer.dtype())));
    }
    dispatch!(a.buffer.dtype(), T => match op {
        BinaryOp::Add => map2::<T, T, T>(a, b, s, Arith::add),
        BinaryOp::Sub => map2::<T, T, T>(a, b, s, Arith::sub),
        BinaryOp::Mul => map2::<T, T, T>(a, b, s, Arith::mul),
        BinaryOp::Div => map2::<T, T, T>(a, b, s, Arith::div),
        BinaryOp::FloorDiv => map2::<T, T, T>(a, b, s, Arith::floor_div),
        BinaryOp::Rem => map2::<T, T, T>(a, b, s, Arith::rem),
        BinaryOp::Pow => map2::<T, T, T>(a, b, s, Arith::pow),
        BinaryOp::Maximum => map2::<T, T, T>(a, b, s, Arith::max),
        BinaryOp::Minimum => map2::<T, T, T>(a, b, s, Arith::min),
        BinaryOp::Atan2 => map2::<T, T, T>(a, b, s, Arith::atan2),
        BinaryOp::BitAnd => map2::<T, T, T>(a, b, s, Arith::bitand),
        BinaryOp::BitOr => map2::<T, T, T>(a, b, s, Arith::bitor),
        BinaryOp::BitXor => map2::<T, T, T>(a, b, s, Arith::bitxor),
        BinaryOp::LeftShift => map2::<T, T, T>(a, b, s, Arith::shl),
        BinaryOp::RightShift => map2::<T, T, T>(a, b, s, Arith::shr),
        BinaryOp::Equal => map2::<T, T, bool>(a, b, s, |x, y| x == y),
        BinaryOp::NotEqual => map2::<T, T, bool>(a, b, s, |x, y| x != y),
        BinaryOp::Less => map2::<T, T, bool>(a, b, s, |x, y| x < y),
        BinaryOp::LessEqual => map2::<T, T, bool>(a, b, s, |x, y| x <= y),
        BinaryOp::Greater => map2::<T, T, bool>(a, b, s, |x, y| x > y),
        BinaryOp::GreaterEqual => map2::<T, T, bool>(a, b, s, |x, y| x >= y),
    })
}
