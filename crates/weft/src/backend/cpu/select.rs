//! `Select`: `where(cond, x, y)`.

use super::dispatch;
use super::strided::{Apply3, Whole3};
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn select(cond: &Data, x: &Data, y: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    select_with(out.dtype, Whole3(cond, x, y, out.shape))
}

/// `where` on a bool condition and two operands of `dtype`, applied by `m`.
pub(crate) fn select_with<M: Apply3>(dtype: Dtype, m: M) -> Result<M::Out> {
    dispatch!(dtype, T => m.apply::<bool, T, T, T>(|c, x, y| if c { x } else { y }))
}
