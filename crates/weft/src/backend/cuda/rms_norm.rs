//! `RmsNorm`: `x / sqrt(mean(x^2) + eps) * weight` over the last axis, one
//! block per row, in float (double for float64) as the CPU kernel.

use super::kernel::{ctype, load, short, store, Args, Launcher};
use super::memory::CudaBuffer;
use super::rows::{acc_type, grid_rows, params_struct, threads_for, Rows};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn rms_norm(k: &mut Launcher<'_>, eps: f32, o: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let a = &o[0];
    let d = a.dtype;
    let acc = acc_type(d, "rms_norm")?;
    let r = Rows::new(&a.layout);
    let buf = k.alloc(out.dtype, crate::shape::numel(out.shape))?;
    if r.rows == 0 || r.len == 0 {
        return Ok(buf);
    }
    let w = o.get(1);
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let key = format!("rms_norm|{}|{}|{}", short(d), r.key(), w.is_some());
    let f = k.function(&key, "rms", || {
        let (t, x) = (ctype(d), load(d, "x[j * inner]"));
        let y = match w {
            Some(_) => store(d, &format!("v * inv * ({acc}){}", load(d, "w[j * ws]"))),
            None => store(d, "v * inv"),
        };
        format!(
            "{ps}extern \"C\" __global__ void rms({t}* out, const {t}* in, const {t}* w, long long rows, long long len, long long inner, long long ws, double eps_d, P p) {{\n\
             \x20 __shared__ {acc} sh[32];\n\
             \x20 {acc} eps = ({acc})eps_d;\n\
             \x20 for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             \x20   {acc} ss = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; ss += v * v; }}\n\
             \x20   ss = block_sum(ss, sh);\n\
             \x20   {acc} inv = ({acc})1 / sqrt_(ss / ({acc})len + eps);\n\
             \x20   {t}* o = out + row * len;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; o[j] = {y}; }}\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
        )
    })?;
    let (wp, ws) = w.map_or((0, 0), |w| (w.ptr, *w.layout.strides.last().unwrap_or(&0)));
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).ptr(wp).i64(r.rows as i64).i64(r.len as i64).i64(r.inner as i64).i64(ws as i64);
    args.f64(eps as f64).params(&p);
    k.launch(&f, (grid_rows(r.rows), 1, 1), threads_for(r.len), 0, &mut args)?;
    Ok(buf)
}
