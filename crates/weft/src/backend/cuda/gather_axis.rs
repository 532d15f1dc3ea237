//! `GatherAxis` (`take_along_axis`): one thread per output element; the
//! output index is decomposed once and addresses both the indices and `a`
//! (which broadcasts to the output except along `axis`). Out-of-range
//! indices give zeros, as in `gather.rs`.

use super::kernel::{ctype, short, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::params_struct;
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn gather_axis(k: &mut Launcher<'_>, axis: usize, a: &Operand, idx: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let nd = out.shape.len();
    let la = &a.layout;
    let li = idx.layout.broadcast_to(out.shape);
    // p.v: output sizes, a's strides (0 along broadcast dims and the axis),
    // the indices' strides.
    let mut p: Vec<i64> = out.shape.iter().map(|&x| x as i64).collect();
    p.extend((0..nd).map(|d| if d == axis || la.shape[d] == 1 { 0 } else { la.strides[d] as i64 }));
    p.extend(li.strides.iter().map(|&x| x as i64));
    let key = format!("gather_axis|{}|{}|{nd}", short(a.dtype), short(idx.dtype));
    let f = k.function(&key, "gather_axis", || {
        let (t, it) = (ctype(a.dtype), ctype(idx.dtype));
        format!(
            "{ps}extern \"C\" __global__ void gather_axis({t}* out, const {t}* a, const {it}* idx, long long n, long long size, long long astride, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n\
             \x20   long long r = i, ao = 0, io = 0;\n\
             \x20   for (int d = {nd} - 1; d >= 0; --d) {{ long long c = r % p.v[d]; r /= p.v[d]; ao += c * p.v[{nd} + d]; io += c * p.v[{nd2} + d]; }}\n\
             \x20   long long v = (long long)idx[io];\n\
             \x20   if (v < 0) v += size;\n\
             \x20   out[i] = (v < 0 || v >= size) ? ({t})0 : a[ao + v * astride];\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            nd2 = 2 * nd,
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).ptr(idx.ptr).i64(n as i64).i64(la.shape[axis] as i64).i64(la.strides[axis] as i64).params(&p);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
