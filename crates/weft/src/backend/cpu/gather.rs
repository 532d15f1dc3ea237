//! `Gather`: `take(a, indices, axis)`, whole slices of `a` picked along one
//! axis (an embedding lookup is a gather along axis 0).

use super::dispatch;
use super::rows::{contiguous, indices_i64, resolve_index};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn gather(axis: usize, a: &Data, idx: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let shape = &a.layout.shape;
    let outer: usize = shape[..axis].iter().product();
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let rows = indices_i64(idx)?
        .into_iter()
        .map(|i| resolve_index(i, n, "take"))
        .collect::<Result<Vec<usize>>>()?;
    dispatch!(out.dtype, T => {
        let src = contiguous::<T>(a)?;
        CpuBuffer::build(outer * rows.len() * inner, |v: &mut Vec<T>| {
            for o in 0..outer {
                for &r in &rows {
                    let start = (o * n + r) * inner;
                    v.extend_from_slice(&src[start..start + inner]);
                }
            }
        })
    })
}
