//! `Copy` (and `Reshape` of strided data): a contiguous copy.

use super::{copy_to_buffer, dispatch};
use crate::buffer::{CpuBuffer, Data};
use crate::Result;

pub(crate) fn copy(a: &Data) -> Result<CpuBuffer> {
    dispatch!(a.buffer.dtype(), T => copy_to_buffer::<T>(a))
}
