//! `SliceUpdate`: the input with one strided region replaced.
//!
//! When this task holds the only reference to the input's buffer (no array,
//! view or pending consumer can still read it; see `scheduler/queue.rs`,
//! which drops a task's input arrays before running it), the region is
//! written into that buffer in place: appending to a preallocated KV cache
//! then costs the size of the update, not of the cache. Otherwise the kernel
//! copies, so no other array ever sees the write.

use super::{copy_to_buffer, dispatch};
use crate::buffer::{Buffer, CpuBuffer, CpuElement, Data};
use crate::primitive::OutSpec;
use crate::shape::{contiguous_strides, for_each_row};
use crate::Result;
use std::sync::Arc;

pub(crate) fn slice_update(
    start: &[usize],
    step: &[isize],
    region: &[usize],
    a: Data,
    update: &Data,
    out: OutSpec<'_>,
) -> Result<Data> {
    let cs = contiguous_strides(out.shape);
    let offset: usize = start.iter().zip(&cs).map(|(&s, &c)| s * c as usize).sum();
    let rs: Vec<isize> = cs.iter().zip(step).map(|(&c, &s)| c * s).collect();
    let lu = update.layout.broadcast_to(region);
    let (ri, ui) = (*rs.last().unwrap_or(&0), *lu.strides.last().unwrap_or(&0));
    let mut buffer = donated(a, out)?;
    dispatch!(out.dtype, T => {
        let v = T::slice_mut(&mut buffer.data).expect("slice_update output has the output dtype");
        let u = update.cpu_buffer().as_slice::<T>();
        for_each_row(region, [&rs, &lu.strides], [offset, lu.offset], |[ro, uo], m| {
            for i in 0..m as isize {
                v[(ro + i * ri) as usize] = u[(uo + i * ui) as usize];
            }
        });
    });
    Ok(Data::cpu(buffer, out.shape))
}

/// `a`'s own buffer when it is contiguous, laid out exactly as the output,
/// and referenced by nothing else; otherwise a contiguous copy of `a`.
fn donated(a: Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let whole = a.layout.is_contiguous() && a.layout.offset == 0;
    if whole {
        // `try_unwrap` succeeds only for the last strong reference (weft
        // keeps no weak ones), so no other reader exists or can appear.
        match Arc::try_unwrap(a.buffer) {
            Ok(Buffer::Cpu(mut b)) if b.data.len() == out.shape.iter().product::<usize>() => {
                // A GPU copy of the old contents would go stale.
                b.device_copy = Default::default();
                return Ok(b);
            }
            Ok(other) => return copy_of(&Data { buffer: Arc::new(other), layout: a.layout }, out),
            Err(shared) => return copy_of(&Data { buffer: shared, layout: a.layout }, out),
        }
    }
    copy_of(&a, out)
}

fn copy_of(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    dispatch!(out.dtype, T => copy_to_buffer::<T>(a))
}
