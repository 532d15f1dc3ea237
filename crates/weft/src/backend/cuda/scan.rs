//! `Scan` (cumsum, cumprod, cummax, cummin) along one axis: one thread per
//! line (outer x inner position), walking the axis forward or backward, in
//! the CPU kernel's order (so float results match it exactly). Neighbouring
//! threads read neighbouring elements when the axis is not the last.
//! Integer sums and products wrap (computed in the unsigned type of their
//! width), bool sums are `or` and products `and`, float16/bfloat16
//! accumulate in float, max and min propagate NaN.

use super::gather::walker;
use super::kernel::{ctype, load, short, store, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::reduce::limits;
use super::rows::params_struct;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::{OutSpec, ReduceOp};
use crate::Result;

pub(crate) fn scan(k: &mut Launcher<'_>, op: ReduceOp, axis: usize, reverse: bool, inclusive: bool, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
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
    let key = format!("scan|{op:?}|{}|{no}|{ni}|{reverse}|{inclusive}", short(d));
    let f = k.function(&key, "scan", || {
        let t = ctype(d);
        // The accumulator type, how an element enters it, one step, the
        // value stored, and the starting value (the op's identity).
        let (acc, lift, fin) = match (op, d) {
            (_, Dtype::Bool) => ("bool", "x".to_string(), "acc".to_string()),
            (ReduceOp::Sum | ReduceOp::Prod, Dtype::U8 | Dtype::U16 | Dtype::I8 | Dtype::I16 | Dtype::U32 | Dtype::I32) => {
                ("unsigned int", "(unsigned int)x".into(), format!("({t})acc"))
            }
            (ReduceOp::Sum | ReduceOp::Prod, Dtype::I64 | Dtype::U64) => ("unsigned long long", "(unsigned long long)x".into(), format!("({t})acc")),
            (_, Dtype::F64) => ("double", "x".into(), "acc".into()),
            (_, Dtype::F16 | Dtype::BF16 | Dtype::F32) => ("float", load(d, "x"), store(d, "acc")),
            _ => (t, "x".into(), "acc".into()),
        };
        let (lo, hi) = limits(d);
        let (init, add) = match (op, d) {
            (ReduceOp::Sum, Dtype::Bool) => ("false", "acc = acc | x_;".to_string()),
            (ReduceOp::Prod, Dtype::Bool) => ("true", "acc = acc & x_;".to_string()),
            (ReduceOp::Sum, _) => ("0", "acc += x_;".to_string()),
            (ReduceOp::Prod, _) => ("1", "acc *= x_;".to_string()),
            (ReduceOp::Max, _) => (lo, format!("acc = max_nan<{acc}>(acc, x_);")),
            (ReduceOp::Min, _) => (hi, format!("acc = min_nan<{acc}>(acc, x_);")),
        };
        let idx = if reverse { "n - 1 - s" } else { "s" };
        let body = if inclusive {
            format!("{add} o_[kk * inner] = {fin};")
        } else {
            format!("o_[kk * inner] = {fin}; {add}")
        };
        format!(
            "{ps}extern \"C\" __global__ void scan({t}* out, const {t}* in, long long lines, long long n, long long inner, long long astride, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < lines; line += step) {{\n\
             \x20   long long o = line / inner, j = line % inner;\n\
             \x20   {wo}\n\
             \x20   {wi}\n\
             \x20   const {t}* x0 = in + ob + ib;\n\
             \x20   {t}* o_ = out + o * n * inner + j;\n\
             \x20   {acc} acc = {init};\n\
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
