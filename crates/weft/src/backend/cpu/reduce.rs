//! `Reduce` and `ArgReduce`.

use crate::buffer::{CpuBuffer, Data};
use crate::primitive::{ArgReduceOp, OutSpec, ReduceOp};
use crate::{Error, Result};

pub(crate) fn reduce(op: ReduceOp, axes: &[usize], a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let _ = (op, axes, a, out);
    Err(Error::Kernel("reduce: not yet implemented".into()))
}

pub(crate) fn arg_reduce(op: ArgReduceOp, axis: usize, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let _ = (op, axis, a, out);
    Err(Error::Kernel("arg_reduce: not yet implemented".into()))
}
