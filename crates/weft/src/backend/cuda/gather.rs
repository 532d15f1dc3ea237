//! `Gather` (`take` along one axis): one thread per output element. The
//! output index splits into (outer, index position, inner); each part is
//! walked through its own operand's strides, so strided tables and indices
//! are read in place. Negative indices count from the end. An index out of
//! range cannot fail the kernel: its slice comes out as zeros (the CPU
//! kernel reports an error; docs/gpu.md).

use super::kernel::{collapse, ctype, short, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::{params_struct, walk};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

/// Collapsed sizes and strides of `shape`/`strides`, appended to `p`; the
/// C code for `long long {var}` at flat index `{idx}`.
pub(crate) fn walker(var: &str, idx: &str, shape: &[usize], strides: &[isize], p: &mut Vec<i64>) -> (String, usize) {
    let (sh, st) = collapse(shape, &[strides.to_vec()]);
    let st = st.into_iter().next().unwrap_or_default();
    let at = p.len();
    p.extend(sh.iter().map(|&x| x as i64));
    p.extend(st.iter().map(|&x| x as i64));
    (walk(var, idx, at, at + sh.len(), sh.len()), sh.len())
}

pub(crate) fn gather(k: &mut Launcher<'_>, axis: usize, a: &Operand, idx: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let la = &a.layout;
    let size = la.shape[axis];
    let inner: usize = la.shape[axis + 1..].iter().product();
    let nidx = idx.layout.numel();
    let mut p = Vec::new();
    let (wo, no) = walker("oa", "o", &la.shape[..axis], &la.strides[..axis], &mut p);
    let (wi, ni) = walker("ia", "j", &la.shape[axis + 1..], &la.strides[axis + 1..], &mut p);
    let (wx, nx) = walker("xo", "r", &idx.layout.shape, &idx.layout.strides, &mut p);
    let key = format!("gather|{}|{}|{no}|{ni}|{nx}", short(a.dtype), short(idx.dtype));
    let f = k.function(&key, "gather", || {
        let (t, it) = (ctype(a.dtype), ctype(idx.dtype));
        format!(
            "{ps}extern \"C\" __global__ void gather({t}* out, const {t}* a, const {it}* idx, long long n, long long nidx, long long inner, long long size, long long astride, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n\
             \x20   long long j = i % inner, t = i / inner, r = t % nidx, o = t / nidx;\n\
             \x20   {wx}\n\
             \x20   long long v = (long long)idx[xo];\n\
             \x20   if (v < 0) v += size;\n\
             \x20   if (v < 0 || v >= size) {{ out[i] = ({t})0; continue; }}\n\
             \x20   {wo}\n\
             \x20   {wi}\n\
             \x20   out[i] = a[oa + v * astride + ia];\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).ptr(idx.ptr).i64(n as i64).i64(nidx as i64).i64(inner.max(1) as i64);
    args.i64(size as i64).i64(la.strides[axis] as i64).params(&p);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
