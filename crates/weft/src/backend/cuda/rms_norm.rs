//! `RmsNorm`: `x / sqrt(mean(x^2) + eps) * weight` over the last axis, one
//! block per row, in float (double for float64) as the CPU kernel.

use super::kernel::{load, store, Launcher};
use super::memory::CudaBuffer;
use super::rows::{row_kernel, RowSource};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn rms_norm(k: &mut Launcher<'_>, eps: f32, o: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let w = o.get(1);
    let body = |s: &RowSource<'_>| {
        let RowSource { t, acc, x, dtype: d } = *s;
        let y = match w {
            Some(_) => store(d, &format!("v * inv * ({acc}){}", load(d, "w[j * ws]"))),
            None => store(d, "v * inv"),
        };
        format!(
            "    {acc} ss = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; ss += v * v; }}\n\
             \x20   ss = block_sum(ss, sh);\n\
             \x20   {acc} inv = ({acc})1 / sqrt_(ss / ({acc})len + ({acc})eps);\n\
             \x20   {t}* o = out + row * len;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; o[j] = {y}; }}"
        )
    };
    let (wp, ws) = w.map_or((0, 0), |w| (w.ptr, *w.layout.strides.last().unwrap_or(&0)));
    let t = super::kernel::ctype(o[0].dtype);
    let extra = format!(", const {t}* w, long long ws, double eps");
    row_kernel(k, "rms", if w.is_some() { "w" } else { "" }, &o[0], out, &extra, body, |args| {
        args.ptr(wp).i64(ws as i64).f64(eps as f64);
    })
}
