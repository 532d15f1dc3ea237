//! `LogSumExp` along the last axis: one block per row, `m + log(sum(exp(x -
//! m)))` with `m` the row's maximum; NaN anywhere gives NaN, a row whose
//! maximum is infinite gives that infinity (as the CPU kernel).

use super::kernel::{ctype, load, short, store, Args, Launcher};
use super::memory::CudaBuffer;
use super::rows::{acc_type, grid_rows, inf, nan, params_struct, threads_for, Rows};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn logsumexp(k: &mut Launcher<'_>, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let d = a.dtype;
    let acc = acc_type(d, "logsumexp")?;
    let r = Rows::new(&a.layout);
    let buf = k.alloc(out.dtype, crate::shape::numel(out.shape))?;
    if r.rows == 0 {
        return Ok(buf);
    }
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let key = format!("logsumexp|{}|{}", short(d), r.key());
    let f = k.function(&key, "lse", || {
        let (t, x) = (ctype(d), load(d, "x[j * inner]"));
        format!(
            "{ps}extern \"C\" __global__ void lse({t}* out, const {t}* in, long long rows, long long len, long long inner, P p) {{\n\
             \x20 __shared__ {acc} sh[32];\n\
             \x20 for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             \x20   {acc} m = -{inf}; {acc} bad = 0;\n\
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
             \x20   if (threadIdx.x == 0) out[row] = {y};\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            inf = inf(acc),
            nan = nan(acc),
            y = store(d, "res"),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).i64(r.rows as i64).i64(r.len as i64).i64(r.inner as i64).params(&p);
    k.launch(&f, (grid_rows(r.rows), 1, 1), threads_for(r.len), 0, &mut args)?;
    Ok(buf)
}
