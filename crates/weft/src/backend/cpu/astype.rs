//! `AsType`: conversion between element types, as NumPy's `astype` does it:
//! floats to integers truncate toward zero, integers wrap, anything nonzero
//! is `true`.

use super::dispatch;
use super::strided::{Apply1, Whole1};
use crate::buffer::{CpuBuffer, Data};
use crate::dtype::{Dtype, Element};
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn astype(a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    astype_with(a.buffer.dtype(), out.dtype, Whole1(a))
}

/// Conversion from `from` to `to`, applied by `m`.
pub(crate) fn astype_with<M: Apply1>(from: Dtype, to: Dtype, m: M) -> Result<M::Out> {
    let exact_int = !from.is_float() && !to.is_float();
    dispatch!(from, S => dispatch!(to, D => {
        if exact_int {
            m.apply::<S, D>(|x| D::from_i64(x.to_i64()))
        } else if D::DTYPE == Dtype::Bool {
            m.apply::<S, D>(|x| D::from_f64((x.to_f64() != 0.0) as u8 as f64))
        } else {
            m.apply::<S, D>(|x| D::from_f64(x.to_f64()))
        }
    }))
}
