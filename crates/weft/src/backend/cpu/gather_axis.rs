//! `GatherAxis`: `take_along_axis(a, indices, axis)`, one element of `a`
//! along `axis` per output position.

use super::dispatch;
use super::rows::{indices_i64, resolve_index};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::shape::for_each_row;
use crate::Result;

pub(crate) fn gather_axis(axis: usize, a: &Data, idx: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let la = &a.layout;
    let n = la.shape[axis];
    let axis_stride = la.strides[axis];
    // `a` seen with the output's shape: broadcast dimensions read stride 0,
    // and the axis itself is addressed by the index.
    let strides: Vec<isize> = (0..out.shape.len())
        .map(|d| if d == axis || la.shape[d] == 1 { 0 } else { la.strides[d] })
        .collect();
    let rows = indices_i64(idx)?
        .into_iter()
        .map(|i| resolve_index(i, n, "take_along_axis"))
        .collect::<Result<Vec<usize>>>()?;
    let inner = *strides.last().unwrap_or(&0);
    dispatch!(out.dtype, T => {
        let src = a.cpu_buffer().as_slice::<T>();
        CpuBuffer::build(rows.len(), |v: &mut Vec<T>| {
            let mut k = 0;
            for_each_row(out.shape, [&strides], [la.offset], |[o], m| {
                for i in 0..m as isize {
                    v.push(src[(o + i * inner + rows[k] as isize * axis_stride) as usize]);
                    k += 1;
                }
            });
        })
    })
}
