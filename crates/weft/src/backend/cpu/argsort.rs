//! `ArgSort` along the last axis: `uint32` positions, stable, NaN last.

use super::dispatch;
use super::rows::{build_rows, contiguous};
use super::sort::nan_last;
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn argsort(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let d = *out.shape.last().unwrap_or(&1);
    let rows = if d == 0 { 0 } else { a.layout.numel() / d };
    dispatch!(a.buffer.dtype(), T => {
        let src = contiguous::<T>(a)?;
        build_rows::<u32>(rows, d, |r, y| {
            let x = &src[r * d..(r + 1) * d];
            for (i, o) in y.iter_mut().enumerate() {
                *o = i as u32;
            }
            y.sort_by(|&i, &j| nan_last(&x[i as usize], &x[j as usize]));
        })
    })
}
