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
    let expr = astype_expr(a.dtype, out.dtype, "x0");
    elementwise(k, &format!("astype{}", short(a.dtype)), &[a], out.dtype, out.shape, &expr)
}

/// `x`, a stored value of `from`, as a stored value of `to` (also a step of
/// a fused chain: `fused.rs`).
pub(crate) fn astype_expr(from: Dtype, to: Dtype, x: &str) -> String {
    if !from.is_float() && !to.is_float() {
        if to == Dtype::Bool {
            format!("({x} != 0)")
        } else {
            format!("(({})(long long){x})", ctype(to))
        }
    } else if to == Dtype::Bool {
        format!("({} != 0.0)", to_double(from, x))
    } else {
        from_double(to, &to_double(from, x))
    }
}
