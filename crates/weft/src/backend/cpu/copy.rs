//! `Copy` (and `Reshape` of strided data): a contiguous copy.

use super::{dispatch, to_vec};
use crate::buffer::{CpuBuffer, Data};
use crate::Result;

pub(crate) fn copy(a: &Data) -> Result<CpuBuffer> {
    dispatch!(a.buffer.dtype(), T => CpuBuffer::from_vec(to_vec::<T>(a)))
}
