//! `Softmax` along the last axis: one block per row; the row's maximum
//! (NaN ignored, as the CPU kernel), then the sum of `exp(x - max)`, then
//! the output. A row of `-inf` shifts by 0 and gives NaN, as on the CPU.

use super::kernel::{ctype, load, short, store, Args, Launcher};
use super::memory::CudaBuffer;
use super::rows::{acc_type, grid_rows, inf, params_struct, threads_for, Rows};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn softmax(k: &mut Launcher<'_>, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let d = a.dtype;
    let acc = acc_type(d, "softmax")?;
    let r = Rows::new(&a.layout);
    let buf = k.alloc(out.dtype, crate::shape::numel(out.shape))?;
    if r.rows == 0 || r.len == 0 {
        return Ok(buf);
    }
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let key = format!("softmax|{}|{}", short(d), r.key());
    let f = k.function(&key, "softmax", || {
        let (t, x) = (ctype(d), load(d, "x[j * inner]"));
        let y = store(d, "exp_(v - shift) * inv");
        format!(
            "{ps}extern \"C\" __global__ void softmax({t}* out, const {t}* in, long long rows, long long len, long long inner, P p) {{\n\
             \x20 __shared__ {acc} sh[32];\n\
             \x20 for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             \x20   {acc} m = -{inf};\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) m = max_ign(m, ({acc}){x});\n\
             \x20   m = block_max(m, sh, -{inf});\n\
             \x20   {acc} shift = (m - m == ({acc})0) ? m : ({acc})0;\n\
             \x20   {acc} s = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) s += exp_(({acc}){x} - shift);\n\
             \x20   s = block_sum(s, sh);\n\
             \x20   {acc} inv = ({acc})1 / s;\n\
             \x20   {t}* o = out + row * len;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; o[j] = {y}; }}\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            inf = inf(acc),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).i64(r.rows as i64).i64(r.len as i64).i64(r.inner as i64).params(&p);
    k.launch(&f, (grid_rows(r.rows), 1, 1), threads_for(r.len), 0, &mut args)?;
    Ok(buf)
}
