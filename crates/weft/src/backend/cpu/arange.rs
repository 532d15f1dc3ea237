//! `Arange`: `start + i * step`.

use super::dispatch;
use crate::buffer::CpuBuffer;
use crate::dtype::Element;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn arange(start: f64, step: f64, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let n = crate::shape::numel(out.shape);
    dispatch!(out.dtype, T => CpuBuffer::build::<T>(n, |v| {
        v.extend((0..n).map(|i| T::from_f64(start + i as f64 * step)))
    }))
}
