//! `SliceUpdate`: the input with one strided region replaced.
//!
//! When the task holds the only reference to the input's buffer, the
//! buffer was made on this stream and is laid out exactly as the output,
//! the region is written in place (`CudaEncoder::slice_update` checks this
//! and first orders the write after every pending read of the old contents
//! by other streams): appending to a preallocated KV cache costs the size of
//! the update. Otherwise the input is copied first.

use super::kernel::{elementwise_into, Dest, Launcher};
use super::Operand;
use crate::primitive::OutSpec;
use crate::shape::{contiguous_strides, Layout};
use crate::Result;

/// Copies `a` into the contiguous buffer at `dst` (of `out`'s shape).
pub(crate) fn copy_into(k: &mut Launcher<'_>, a: &Operand, dst: u64, out: OutSpec<'_>) -> Result<()> {
    let dest = Dest { ptr: dst, layout: Layout::contiguous(out.shape), dtype: out.dtype };
    elementwise_into(k, "copy", &[a], &dest, out.shape, "x0")
}

/// Writes `update` (broadcast to `region`) into the region `start::step` of
/// the contiguous buffer at `dst` (of `out`'s shape).
pub(crate) fn write_region(
    k: &mut Launcher<'_>,
    start: &[usize],
    step: &[isize],
    region: &[usize],
    dst: u64,
    update: &Operand,
    out: OutSpec<'_>,
) -> Result<()> {
    if crate::shape::numel(region) == 0 {
        return Ok(());
    }
    let cs = contiguous_strides(out.shape);
    let offset: usize = start.iter().zip(&cs).map(|(&s, &c)| s * c as usize).sum();
    let strides: Vec<isize> = cs.iter().zip(step).map(|(&c, &s)| c * s).collect();
    let size = out.dtype.size() as u64;
    let dest = Dest {
        ptr: dst + offset as u64 * size,
        layout: Layout { shape: region.to_vec(), strides, offset: 0 },
        dtype: out.dtype,
    };
    elementwise_into(k, "copy", &[update], &dest, region, "x0")
}
