//! `CumSum` along one axis: one thread per line (outer x inner position),
//! walking the axis forward or backward, in the CPU kernel's order (so
//! float results match it exactly). Neighbouring threads read neighbouring
//! elements when the axis is not the last. Integers wrap (computed in the
//! unsigned type of their width), bool sums are `or`, float16/bfloat16
//! accumulate in float.

use super::gather::walker;
use super::kernel::{ctype, load, short, store, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::params_struct;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn cumsum(k: &mut Launcher<'_>, axis: usize, reverse: bool, inclusive: bool, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let total = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, total)?;
    if total == 0 {
        return Ok(buf);
    }
    let s = out.shape;
    let (n, inner) = (s[axis], s[axis + 1..].iter().product::<usize>());
    let lines = total / n;
    let la = &a.layout;
    let mut p = Vec::new();
    let (wo, no) = walker("ob", "o", &la.shape[..axis], &la.strides[..axis], &mut p);
    let (wi, ni) = walker("ib", "j", &la.shape[axis + 1..], &la.strides[axis + 1..], &mut p);
    let d = a.dtype;
    let key = format!("cumsum|{}|{no}|{ni}|{reverse}|{inclusive}", short(d));
    let f = k.function(&key, "cumsum", || {
        let t = ctype(d);
        let (acc, lift, add, fin) = match d {
            Dtype::Bool => ("bool", "x".to_string(), "acc = acc | x_;", "acc".to_string()),
            Dtype::U8 => ("unsigned char", "x".into(), "acc = (unsigned char)(acc + x_);", "acc".into()),
            Dtype::U16 | Dtype::I8 | Dtype::I16 | Dtype::U32 | Dtype::I32 => ("unsigned int", "(unsigned int)x".into(), "acc += x_;", format!("({t})acc")),
            Dtype::I64 | Dtype::U64 => ("unsigned long long", "(unsigned long long)x".into(), "acc += x_;", format!("({t})acc")),
            _ => (if d == Dtype::F64 { "double" } else { "float" }, load(d, "x"), "acc += x_;", store(d, "acc")),
        };
        let idx = if reverse { "n - 1 - s" } else { "s" };
        let body = if inclusive {
            format!("{add} o_[kk * inner] = {fin};")
        } else {
            format!("o_[kk * inner] = {fin}; {add}")
        };
        format!(
            "{ps}extern \"C\" __global__ void cumsum({t}* out, const {t}* in, long long lines, long long n, long long inner, long long astride, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < lines; line += step) {{\n\
             \x20   long long o = line / inner, j = line % inner;\n\
             \x20   {wo}\n\
             \x20   {wi}\n\
             \x20   const {t}* x0 = in + ob + ib;\n\
             \x20   {t}* o_ = out + o * n * inner + j;\n\
             \x20   {acc} acc = 0;\n\
             \x20   for (long long s = 0; s < n; ++s) {{\n\
             \x20     long long kk = {idx};\n\
             \x20     {t} x = x0[kk * astride];\n\
             \x20     {acc} x_ = {lift};\n\
             \x20     {body}\n\
             \x20   }}\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).i64(lines as i64).i64(n as i64).i64(inner.max(1) as i64).i64(la.strides[axis] as i64).params(&p);
    k.launch(&f, (k.grid_for(lines), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
