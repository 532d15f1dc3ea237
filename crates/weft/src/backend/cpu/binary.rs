//! `Binary`: elementwise arithmetic and comparisons of two broadcast inputs.

use super::dispatch;
use super::num::Arith;
use super::strided::{Apply2, Whole2};
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::Dtype;
use crate::primitive::{BinaryOp, OutSpec};
use crate::Result;

pub(crate) fn binary(op: BinaryOp, a: &Data, b: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    binary_with(op, a.buffer.dtype(), Whole2(a, b, out.shape))
}

/// `op` on two inputs of `dtype`, applied by `m`.
pub(crate) fn binary_with<M: Apply2>(op: BinaryOp, dtype: Dtype, m: M) -> Result<M::Out> {
    if op.is_bitwise() && dtype.is_float() {
        return Err(crate::Error::Kernel(format!("{op:?} on {dtype}: bitwise ops take integers or bool")));
    }
    dispatch!(dtype, T => match op {
        BinaryOp::Add => m.apply::<T, T, T>(Arith::add),
        BinaryOp::Sub => m.apply::<T, T, T>(Arith::sub),
        BinaryOp::Mul => m.apply::<T, T, T>(Arith::mul),
        BinaryOp::Div => m.apply::<T, T, T>(Arith::div),
        BinaryOp::FloorDiv => m.apply::<T, T, T>(Arith::floor_div),
        BinaryOp::Rem => m.apply::<T, T, T>(Arith::rem),
        BinaryOp::Pow => m.apply::<T, T, T>(Arith::pow),
        BinaryOp::Maximum => m.apply::<T, T, T>(Arith::max),
        BinaryOp::Minimum => m.apply::<T, T, T>(Arith::min),
        BinaryOp::Atan2 => m.apply::<T, T, T>(Arith::atan2),
        BinaryOp::BitAnd => m.apply::<T, T, T>(Arith::bitand),
        BinaryOp::BitOr => m.apply::<T, T, T>(Arith::bitor),
        BinaryOp::BitXor => m.apply::<T, T, T>(Arith::bitxor),
        BinaryOp::LeftShift => m.apply::<T, T, T>(Arith::shl),
        BinaryOp::RightShift => m.apply::<T, T, T>(Arith::shr),
        BinaryOp::Equal => m.apply::<T, T, bool>(|x, y| x == y),
        BinaryOp::NotEqual => m.apply::<T, T, bool>(|x, y| x != y),
        BinaryOp::Less => m.apply::<T, T, bool>(|x, y| x < y),
        BinaryOp::LessEqual => m.apply::<T, T, bool>(|x, y| x <= y),
        BinaryOp::Greater => m.apply::<T, T, bool>(|x, y| x > y),
        BinaryOp::GreaterEqual => m.apply::<T, T, bool>(|x, y| x >= y),
    })
}
