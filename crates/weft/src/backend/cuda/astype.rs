//! `AsType`: conversion between element types with the CPU backend's rules:
//! integers convert exactly (wrapping), anything else goes through a double
//! (floats to integers truncate and saturate, NaN gives 0; nonzero is `true`).

use super::kernel::{ctype, elementwise, from_double, short, to_double, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn astype(k: &mut Launcher<'_>, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let (from, to) = (a.dtype, out.dtype);
    let expr = if !from.is_float() && !to.is_float() {
        if to == Dtype::Bool {
            "(x0 != 0)".to_string()
        } else {
            format!("(({})(long long)x0)", ctype(to))
        }
    } else if to == Dtype::Bool {
        format!("({} != 0.0)", to_double(from, "x0"))
    } else {
        from_double(to, &to_double(from, "x0"))
    };
    elementwise(k, &format!("astype{}", short(from)), &[a], to, out.shape, &expr)
}
