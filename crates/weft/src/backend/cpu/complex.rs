//! `Complex`: the real part, imaginary part, modulus or conjugate of each
//! complex64 element (`primitive/complex.rs`).

use super::map1;
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::ComplexOp;
use crate::{Complex64, Result};

pub(crate) fn complex(op: ComplexOp, a: &Data) -> Result<CpuBuffer> {
    match op {
        ComplexOp::Real => map1::<Complex64, f32>(a, |z| z.re()),
        ComplexOp::Imag => map1::<Complex64, f32>(a, |z| z.im()),
        ComplexOp::Abs => map1::<Complex64, f32>(a, |z| z.abs()),
        ComplexOp::Conj => map1::<Complex64, Complex64>(a, |z| Complex64(z.0.conj())),
    }
}
