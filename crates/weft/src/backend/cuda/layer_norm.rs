//! `LayerNorm`: `(x - mean) / sqrt(var + eps) * weight + bias` over the
//! last axis, one block per row, two passes (mean, then variance) in float
//! (double for float64) as the CPU kernel.

use super::kernel::{ctype, load, store, Launcher};
use super::memory::CudaBuffer;
use super::rows::{row_kernel, RowSource};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn layer_norm(
    k: &mut Launcher<'_>,
    eps: f32,
    has_weight: bool,
    has_bias: bool,
    o: &[Operand],
    out: OutSpec<'_>,
) -> Result<CudaBuffer> {
    let w = has_weight.then(|| &o[1]);
    let b = has_bias.then(|| &o[1 + has_weight as usize]);
    let body = |s: &RowSource<'_>| {
        let RowSource { t, acc, x, dtype: d } = *s;
        let mut e = "(v - mean) * inv".to_string();
        if has_weight {
            e = format!("{e} * ({acc}){}", load(d, "w[j * ws]"));
        }
        if has_bias {
            e = format!("{e} + ({acc}){}", load(d, "b[j * bs]"));
        }
        let y = store(d, &e);
        format!(
            "    {acc} s = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) s += ({acc}){x};\n\
             \x20   {acc} mean = block_sum(s, sh) / ({acc})len;\n\
             \x20   {acc} q = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} c = ({acc}){x} - mean; q += c * c; }}\n\
             \x20   {acc} var = block_sum(q, sh) / ({acc})len;\n\
             \x20   {acc} inv = ({acc})1 / sqrt_(var + ({acc})eps);\n\
             \x20   {t}* o = out + row * len;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; o[j] = {y}; }}"
        )
    };
    let last = |o: Option<&Operand>| o.map_or((0, 0), |o| (o.ptr, *o.layout.strides.last().unwrap_or(&0)));
    let ((wp, ws), (bp, bs)) = (last(w), last(b));
    let t = ctype(o[0].dtype);
    let extra = format!(", const {t}* w, long long ws, const {t}* b, long long bs, double eps");
    let key = format!("{has_weight}|{has_bias}");
    row_kernel(k, "ln", &key, &o[0], out, &extra, body, |args| {
        args.ptr(wp).i64(ws as i64).ptr(bp).i64(bs as i64).f64(eps as f64);
    })
}
