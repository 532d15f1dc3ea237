//! `Scan`: running sums, products, maxima or minima along one axis, forward
//! or reversed, inclusive or exclusive (the first output is the op's
//! identity). The ops are `reduce.rs`'s monoids, so a scan's last element
//! equals the reduction: integers wrap, float16/bfloat16 accumulate in
//! float32, max and min propagate NaN.

use super::dispatch;
use super::reduce::{Max, Min, Monoid, Prod, Reducible, Sum};
use super::rows::contiguous;
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::{OutSpec, ReduceOp};
use crate::Result;

pub(crate) fn scan(op: ReduceOp, axis: usize, reverse: bool, inclusive: bool, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let s = out.shape;
    let dims = (s[..axis].iter().product(), s[axis], s[axis + 1..].iter().product());
    let flags = (reverse, inclusive);
    dispatch!(out.dtype, T => match op {
        ReduceOp::Sum => scan_typed::<T, Sum>(a, dims, flags),
        ReduceOp::Prod => scan_typed::<T, Prod>(a, dims, flags),
        ReduceOp::Max => scan_typed::<T, Max>(a, dims, flags),
        ReduceOp::Min => scan_typed::<T, Min>(a, dims, flags),
    })
}

/// The scan of a `[outer, n, inner]` array along its middle axis; one
/// accumulator per inner position, so each step reads a contiguous run.
fn scan_typed<T: Reducible, M: Monoid<T::Acc>>(
    a: &Data,
    (outer, n, inner): (usize, usize, usize),
    (reverse, inclusive): (bool, bool),
) -> Result<CpuBuffer> {
    let src = contiguous::<T>(a)?;
    let total = outer * n * inner;
    let (mut acc, _scratch) = crate::buffer::host_vec::<T::Acc>(inner)?;
    acc.resize(inner, M::identity());
    CpuBuffer::build::<T>(total, |v| {
        v.resize(total, T::from_acc(M::identity()));
        for o in 0..outer {
            acc.iter_mut().for_each(|x| *x = M::identity());
            for step in 0..n {
                let k = if reverse { n - 1 - step } else { step };
                let base = (o * n + k) * inner;
                for j in 0..inner {
                    let x = src[base + j].to_acc();
                    if inclusive {
                        acc[j] = M::combine(acc[j], x);
                        v[base + j] = T::from_acc(acc[j]);
                    } else {
                        v[base + j] = T::from_acc(acc[j]);
                        acc[j] = M::combine(acc[j], x);
                    }
                }
            }
        }
    })
}
