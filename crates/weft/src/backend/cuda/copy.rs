//! `Copy` (and `Reshape` of strided data): a contiguous copy.

use super::kernel::{elementwise, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::Result;

pub(crate) fn copy(k: &mut Launcher<'_>, a: &Operand) -> Result<CudaBuffer> {
    let shape = a.layout.shape.clone();
    elementwise(k, "copy", &[a], a.dtype, &shape, "x0")
}
