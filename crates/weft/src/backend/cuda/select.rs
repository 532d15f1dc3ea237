//! `Select`: `where(cond, x, y)`.

use super::kernel::{elementwise, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn select(k: &mut Launcher<'_>, c: &Operand, x: &Operand, y: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    elementwise(k, "select", &[c, x, y], out.dtype, out.shape, "(x0 ? x1 : x2)")
}
