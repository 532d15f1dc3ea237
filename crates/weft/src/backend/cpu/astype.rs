//! `AsType`: conversion between element types, as NumPy's `astype` does it:
//! floats to integers truncate toward zero, integers wrap, anything nonzero
//! is `true`.

use super::{dispatch, map1};
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::Element;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn astype(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let from = a.buffer.dtype();
    let exact_int = !from.is_float() && !out.dtype.is_float();
    dispatch!(from, S => dispatch!(out.dtype, D => {
        if exact_int {
            map1::<S, D>(a, |x| D::from_i64(x.to_i64()))
        } else if D::DTYPE == crate::dtype::Dtype::Bool {
            map1::<S, D>(a, |x| D::from_f64((x.to_f64() != 0.0) as u8 as f64))
        } else {
            map1::<S, D>(a, |x| D::from_f64(x.to_f64()))
        }
    }))
}
