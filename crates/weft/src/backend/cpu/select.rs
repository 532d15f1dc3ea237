//! `Select`: `where(cond, x, y)`.

use super::{dispatch, map3};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn select(cond: &Data, x: &Data, y: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    dispatch!(out.dtype, T => map3::<bool, T, T, T>(cond, x, y, out.shape, |c, x, y| if c { x } else { y }))
}
