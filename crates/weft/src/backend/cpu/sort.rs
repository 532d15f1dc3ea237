//! `Sort` along the last axis, NaN last (as NumPy).

use super::dispatch;
use super::rows::{build_rows, contiguous};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::Result;
use std::cmp::Ordering;

/// A total order on elements: the partial order, with NaN after everything.
#[inline]
pub(crate) fn nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    #[allow(clippy::eq_op)]
    match a.partial_cmp(b) {
        Some(o) => o,
        None => match (a != a, b != b) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            _ => Ordering::Less,
        },
    }
}

pub(crate) fn sort(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let d = *out.shape.last().unwrap_or(&1);
    let rows = if d == 0 { 0 } else { a.layout.numel() / d };
    dispatch!(out.dtype, T => {
        let src = contiguous::<T>(a)?;
        build_rows::<T>(rows, d, |r, y| {
            y.copy_from_slice(&src[r * d..(r + 1) * d]);
            y.sort_by(nan_last);
        })
    })
}
