//! `Softmax` along the last axis: one block per row; the row's maximum
//! (NaN ignored, as the CPU kernel), then the sum of `exp(x - max)`, then
//! the output. A row of `-inf` shifts by 0 and gives NaN, as on the CPU.

use super::kernel::{store, Launcher};
use super::memory::CudaBuffer;
use super::rows::{inf, row_kernel, RowSource};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn softmax(k: &mut Launcher<'_>, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let body = |s: &RowSource<'_>| {
        let RowSource { t, acc, x, .. } = *s;
        let y = store(s.dtype, "exp_(v - shift) * inv");
        let inf = inf(acc);
        format!(
            "    {acc} m = -{inf};\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) m = max_ign(m, ({acc}){x});\n\
             \x20   m = block_max(m, sh, -{inf});\n\
             \x20   {acc} shift = (m - m == ({acc})0) ? m : ({acc})0;\n\
             \x20   {acc} s = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) s += exp_(({acc}){x} - shift);\n\
             \x20   s = block_sum(s, sh);\n\
             \x20   {acc} inv = ({acc})1 / s;\n\
             \x20   {t}* o = out + row * len;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; o[j] = {y}; }}"
        )
    };
    row_kernel(k, "softmax", "", a, out, "", body, |_| {})
}
