//! `Concatenate`: inputs joined along one axis.

use super::{dispatch, for_each};
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::Element;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn concatenate(axis: usize, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    // Seen as [outer, axis * inner]: each input fills a band of every row.
    let outer: usize = out.shape[..axis].iter().product();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let row = out.shape[axis] * inner;
    let n = outer * row;
    dispatch!(out.dtype, T => {
        CpuBuffer::build::<T>(n, |v| {
        v.resize(n, T::from_f64(0.0));
        let mut col = 0;
        for d in inputs {
            let band = d.layout.shape[axis] * inner;
            if band == 0 {
                continue;
            }
            let mut i = 0;
            for_each::<T>(d, |x| {
                v[(i / band) * row + col + i % band] = x;
                i += 1;
            });
            col += band;
        }
        })
    })
}
