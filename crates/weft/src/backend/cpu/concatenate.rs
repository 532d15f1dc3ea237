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
        let mut v: Vec<T> = Vec::new();
        v.try_reserve_exact(n).map_err(|_| crate::Error::Kernel("concatenate: allocation failed".into()))?;
        let fill = T::from_f64(0.0);
        v.resize(n, fill);
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
        CpuBuffer::from_vec(v)
    })
}
