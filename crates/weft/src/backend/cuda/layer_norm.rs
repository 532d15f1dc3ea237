//! `LayerNorm`: `(x - mean) / sqrt(var + eps) * weight + bias` over the
//! last axis, one block per row, two passes (mean, then variance) in float
//! (double for float64) as the CPU kernel.

use super::kernel::{ctype, load, short, store, Args, Launcher};
use super::memory::CudaBuffer;
use super::rows::{acc_type, grid_rows, params_struct, threads_for, Rows};
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
    let a = &o[0];
    let d = a.dtype;
    let acc = acc_type(d, "layer_norm")?;
    let r = Rows::new(&a.layout);
    let buf = k.alloc(out.dtype, crate::shape::numel(out.shape))?;
    if r.rows == 0 || r.len == 0 {
        return Ok(buf);
    }
    let w = has_weight.then(|| &o[1]);
    let b = has_bias.then(|| &o[1 + has_weight as usize]);
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let key = format!("layer_norm|{}|{}|{has_weight}|{has_bias}", short(d), r.key());
    let f = k.function(&key, "ln", || {
        let (t, x) = (ctype(d), load(d, "x[j * inner]"));
        let mut e = "(v - mean) * inv".to_string();
        if has_weight {
            e = format!("{e} * ({acc}){}", load(d, "w[j * ws]"));
        }
        if has_bias {
            e = format!("{e} + ({acc}){}", load(d, "b[j * bs]"));
        }
        let y = store(d, &e);
        format!(
            "{ps}extern \"C\" __global__ void ln({t}* out, const {t}* in, const {t}* w, const {t}* b, long long rows, long long len, long long inner, long long ws, long long bs, double eps_d, P p) {{\n\
             \x20 __shared__ {acc} sh[32];\n\
             \x20 {acc} eps = ({acc})eps_d;\n\
             \x20 for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             \x20   {acc} s = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) s += ({acc}){x};\n\
             \x20   {acc} mean = block_sum(s, sh) / ({acc})len;\n\
             \x20   {acc} q = 0;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} c = ({acc}){x} - mean; q += c * c; }}\n\
             \x20   {acc} var = block_sum(q, sh) / ({acc})len;\n\
             \x20   {acc} inv = ({acc})1 / sqrt_(var + eps);\n\
             \x20   {t}* o = out + row * len;\n\
             \x20   for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {acc} v = ({acc}){x}; o[j] = {y}; }}\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
        )
    })?;
    let last = |o: Option<&Operand>| o.map_or((0, 0), |o| (o.ptr, *o.layout.strides.last().unwrap_or(&0)));
    let ((wp, ws), (bp, bs)) = (last(w), last(b));
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).ptr(wp).ptr(bp).i64(r.rows as i64).i64(r.len as i64).i64(r.inner as i64);
    args.i64(ws as i64).i64(bs as i64).f64(eps as f64).params(&p);
    k.launch(&f, (grid_rows(r.rows), 1, 1), threads_for(r.len), 0, &mut args)?;
    Ok(buf)
}
