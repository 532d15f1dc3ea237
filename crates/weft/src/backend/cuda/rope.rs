//! `Rope` on `[..., L, D]`: one thread per output element. The element's
//! pair partner is read from the same row (through the input's strides);
//! the angle `(offset + l) * scale * base^(-2i / dims)` and its cosine and
//! sine are computed in double, as the CPU kernel's table, then the
//! rotation in float (double for float64).

use super::kernel::{ctype, load, short, store, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::{acc_type, params_struct, Rows};
use super::Operand;
use crate::primitive::{OutSpec, RopeParams};
use crate::Result;

pub(crate) fn rope(k: &mut Launcher<'_>, rp: &RopeParams, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let d = a.dtype;
    let acc = acc_type(d, "rope")?;
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let nd = out.shape.len();
    let l = out.shape[nd - 2];
    let r = Rows::new(&a.layout);
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let key = format!("rope|{}|{}|{}", short(d), r.key(), rp.traditional);
    let f = k.function(&key, "rope", || {
        let t = ctype(d);
        let pair = if rp.traditional {
            "long long pi = f / 2; long long i0 = 2 * pi, i1 = 2 * pi + 1;"
        } else {
            "long long half = dims / 2; long long pi = f % half; long long i0 = pi, i1 = pi + half;"
        };
        let (xa, xb) = (load(d, "x[i0 * inner]"), load(d, "x[i1 * inner]"));
        format!(
            "{ps}extern \"C\" __global__ void rope({t}* out, const {t}* in, long long n, long long len, long long inner, long long L, long long dims, double base_f, double scale, long long offset, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n\
             \x20   long long row = i / len, f = i % len;\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             \x20   if (f >= dims) {{ out[i] = x[f * inner]; continue; }}\n\
             \x20   {pair}\n\
             \x20   double pos = (double)(offset + row % L) * scale;\n\
             \x20   double theta = pos * pow(base_f, -2.0 * (double)pi / (double)dims);\n\
             \x20   {acc} c = ({acc})cos(theta), s = ({acc})sin(theta);\n\
             \x20   {acc} a = ({acc}){xa}, b = ({acc}){xb};\n\
             \x20   {acc} v = (f == i0) ? a * c - b * s : a * s + b * c;\n\
             \x20   out[i] = {y};\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            y = store(d, "v"),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).i64(n as i64).i64(r.len as i64).i64(r.inner as i64).i64(l as i64);
    args.i64(rp.dims as i64).f64(rp.base as f64).f64(rp.scale as f64).i64(rp.offset as i64).params(&p);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
