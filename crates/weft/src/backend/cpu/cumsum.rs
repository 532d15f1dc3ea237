//! `CumSum`: running sums along one axis, forward or reversed, inclusive
//! or exclusive. Integers wrap; float16/bfloat16 accumulate in float32.

use super::num::Arith;
use super::rows::contiguous;
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::Result;
use half::{bf16, f16};

pub(crate) fn cumsum(axis: usize, reverse: bool, inclusive: bool, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let s = out.shape;
    let dims = (s[..axis].iter().product(), s[axis], s[axis + 1..].iter().product());
    let flags = (reverse, inclusive);
    match out.dtype {
        Dtype::F16 => scan(a, dims, flags, |x: f16| x.to_f32(), |x, y| x + y, f16::from_f32),
        Dtype::BF16 => scan(a, dims, flags, |x: bf16| x.to_f32(), |x, y| x + y, bf16::from_f32),
        Dtype::F32 => scan(a, dims, flags, |x: f32| x, |x, y| x + y, |x| x),
        Dtype::F64 => scan(a, dims, flags, |x: f64| x, |x, y| x + y, |x| x),
        Dtype::Bool => scan(a, dims, flags, |x: bool| x, Arith::add, |x| x),
        Dtype::U8 => scan(a, dims, flags, |x: u8| x, Arith::add, |x| x),
        Dtype::U16 => scan(a, dims, flags, |x: u16| x, Arith::add, |x| x),
        Dtype::U32 => scan(a, dims, flags, |x: u32| x, Arith::add, |x| x),
        Dtype::U64 => scan(a, dims, flags, |x: u64| x, Arith::add, |x| x),
        Dtype::I8 => scan(a, dims, flags, |x: i8| x, Arith::add, |x| x),
        Dtype::I16 => scan(a, dims, flags, |x: i16| x, Arith::add, |x| x),
        Dtype::I32 => scan(a, dims, flags, |x: i32| x, Arith::add, |x| x),
        Dtype::I64 => scan(a, dims, flags, |x: i64| x, Arith::add, |x| x),
    }
}

fn scan<T: CpuElement, A: Copy>(
    a: &Data,
    (outer, n, inner): (usize, usize, usize),
    (reverse, inclusive): (bool, bool),
    to: impl Fn(T) -> A,
    add: impl Fn(A, A) -> A,
    from: impl Fn(A) -> T,
) -> Result<CpuBuffer> {
    let src = contiguous::<T>(a)?;
    let zero = T::from_f64(0.0);
    let total = outer * n * inner;
    let (mut acc, _scratch) = crate::buffer::host_vec::<A>(inner)?;
    acc.resize(inner, to(zero));
    CpuBuffer::build::<T>(total, |v| {
    v.resize(total, zero);
    for o in 0..outer {
        acc.iter_mut().for_each(|x| *x = to(zero));
        for step in 0..n {
            let k = if reverse { n - 1 - step } else { step };
            let base = (o * n + k) * inner;
            for j in 0..inner {
                let x = to(src[base + j]);
                if inclusive {
                    acc[j] = add(acc[j], x);
                    v[base + j] = from(acc[j]);
                } else {
                    v[base + j] = from(acc[j]);
                    acc[j] = add(acc[j], x);
                }
            }
        }
    }
    })
}
