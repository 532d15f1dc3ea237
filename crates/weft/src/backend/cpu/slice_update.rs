//! `SliceUpdate`: a copy of the input with one strided region replaced.
//!
//! The kernel always copies: the input's buffer may be shared with other
//! arrays (views, other consumers), and kernels only see it through a shared
//! reference.

use super::{dispatch, to_vec};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::shape::{contiguous_strides, for_each_row};
use crate::Result;

pub(crate) fn slice_update(
    start: &[usize],
    step: &[isize],
    region: &[usize],
    a: &Data,
    update: &Data,
    out: OutSpec<'_>,
) -> Result<CpuBuffer> {
    let cs = contiguous_strides(out.shape);
    let offset: usize = start.iter().zip(&cs).map(|(&s, &c)| s * c as usize).sum();
    let rs: Vec<isize> = cs.iter().zip(step).map(|(&c, &s)| c * s).collect();
    let lu = update.layout.broadcast_to(region);
    let (ri, ui) = (*rs.last().unwrap_or(&0), *lu.strides.last().unwrap_or(&0));
    dispatch!(out.dtype, T => {
        let mut v = to_vec::<T>(a);
        let u = update.cpu_buffer().as_slice::<T>();
        for_each_row(region, [&rs, &lu.strides], [offset, lu.offset], |[ro, uo], m| {
            for i in 0..m as isize {
                v[(ro + i * ri) as usize] = u[(uo + i * ui) as usize];
            }
        });
        CpuBuffer::from_vec(v)
    })
}
