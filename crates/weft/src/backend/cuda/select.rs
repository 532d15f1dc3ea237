//! `Select`: `where(cond, x, y)`.

use super::kernel::{elementwise, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn select(k: &mut Launcher<'_>, c: &Operand, x: &Operand, y: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    elementwise(k, "select", &[c, x, y], out.dtype, out.shape, &select_expr("x0", "x1", "x2"))
}

/// `where(c, x, y)` of stored values (also a step of a fused chain: `fused.rs`).
pub(crate) fn select_expr(c: &str, x: &str, y: &str) -> String {
    format!("({c} ? {x} : {y})")
}
