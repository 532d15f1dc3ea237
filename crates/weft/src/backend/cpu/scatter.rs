//! `Scatter`: writes (or combines) updates into a copy of an array at flat
//! positions, in update order, so repeated positions with `Sum`/`Prod`/
//! `Max`/`Min` combine every update and, assigning, the last one wins.
//! Positions out of range fail the computation (rule 9 of
//! docs/architecture.md: the error reaches whoever reads the array).

use super::dispatch;
use super::num::Arith;
use super::reduce::{Max, Min, Monoid, Prod, Reducible, Sum};
use super::rows::{contiguous, indices_i64, resolve_index};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::{OutSpec, ReduceOp};
use crate::Result;

pub(crate) fn scatter(reduce: Option<ReduceOp>, a: &Data, idx: &Data, upd: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let n = crate::shape::numel(out.shape);
    let pos = indices_i64(idx)?
        .into_iter()
        .map(|i| resolve_index(i, n, "scatter"))
        .collect::<Result<Vec<usize>>>()?;
    dispatch!(out.dtype, T => match reduce {
        None => scatter_typed::<T, Assign>(a, &pos, upd, n),
        Some(ReduceOp::Sum) => scatter_typed::<T, Sum>(a, &pos, upd, n),
        Some(ReduceOp::Prod) => scatter_typed::<T, Prod>(a, &pos, upd, n),
        Some(ReduceOp::Max) => scatter_typed::<T, Max>(a, &pos, upd, n),
        Some(ReduceOp::Min) => scatter_typed::<T, Min>(a, &pos, upd, n),
    })
}

/// Assignment as a "monoid" whose combine keeps the update (its identity is
/// never used: scatter starts from the array's own values).
#[derive(Clone, Copy)]
struct Assign;

impl<A: Arith> Monoid<A> for Assign {
    fn identity() -> A {
        A::from_f64(0.0)
    }
    fn combine(_old: A, new: A) -> A {
        new
    }
}

fn scatter_typed<T: Reducible, M: Monoid<T::Acc>>(a: &Data, pos: &[usize], upd: &Data, n: usize) -> Result<CpuBuffer> {
    let src = contiguous::<T>(a)?;
    let u = contiguous::<T>(upd)?;
    CpuBuffer::build::<T>(n, |v| {
        v.extend_from_slice(&src[..n]);
        for (k, &p) in pos.iter().enumerate() {
            v[p] = T::from_acc(M::combine(v[p].to_acc(), u[k].to_acc()));
        }
    })
}
