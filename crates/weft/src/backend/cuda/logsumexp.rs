//! `LogSumExp` along the last axis: one block per row, `m + log(sum(exp(x -
//! m)))` with `m` the row's maximum; NaN anywhere gives NaN, a row whose
//! maximum is infinite gives that infinity (as the CPU kernel).

use super::kernel::{store, Launcher};
use super::memory::CudaBuffer;
use super::rows::{inf, nan, row_kernel, RowSource};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn logsumexp(k: &mut Launcher<'_>, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let body = |s: &RowSource<'_>| {
        let RowSource { acc, x, .. } = *s;
        format!(
            "    {acc} m = -{inf}; {acc} bad = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; if (v != v) bad = 1; m = max_ign(m, v); }}\n\
             \x20   m = block_max(m, sh, -{inf});\n\
             \x20   bad = block_max(bad, sh, ({acc})0);\n\
             \x20   {acc} res;\n\
             \x20   if (bad != 0) res = {nan};\n\
             \x20   else if (!(m - m == ({acc})0)) res = m;\n\
             \x20   else {{\n\
             \x20     {acc} s = 0;\n\
             \x20     for (long long j = threadIdx.x; j < len; j += blockDim.x) s += exp_(({acc}){x} - m);\n\
             \x20     s = block_sum(s, sh);\n\
             \x20     res = m + log_(s);\n\
             \x20   }}\n\
             \x20   if (threadIdx.x == 0) out[row] = {y};",
            inf = inf(acc),
            nan = nan(acc),
            y = store(s.dtype, "res"),
        )
    };
    row_kernel(k, "lse", "", a, out, "", body, |_| {})
}
