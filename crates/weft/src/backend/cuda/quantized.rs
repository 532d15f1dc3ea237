//! `Quantize`, `Dequantize`, `QuantizedMatmul` (affine codes, one
//! little-endian bit stream per row in `uint32` words, as the CPU kernels):
//! one thread per output element (per output word for `Quantize`). Every
//! operand is read in place through its strides: the batch axes are walked
//! per operand, the last two are a row and a column stride. Codes are
//! decoded where they are used; the float weight matrix never exists.
//! Simple rather than fast: no shared-memory tiling yet (docs/gpu.md).

use super::gather::walker;
use super::kernel::{ctype, load, short, store, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::params_struct;
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

/// `qcode(w, ws, c, bits)`: code `c` of the row whose words are `w[0]`,
/// `w[ws]`, ... (a code may straddle two words).
const QCODE: &str = "__device__ __forceinline__ unsigned int qcode(const unsigned int* w, long long ws, long long c, int bits) {\n\
\x20 long long p = c * bits, i = p >> 5; int off = (int)(p & 31);\n\
\x20 unsigned long long v = (unsigned long long)w[i * ws];\n\
\x20 if (off + bits > 32) v |= ((unsigned long long)w[(i + 1) * ws]) << 32;\n\
\x20 return (unsigned int)((v >> off) & ((1ull << bits) - 1ull));\n}\n";

/// The batch walk of `o` (its axes before the last two, sized as `batch`)
/// as C code declaring `long long {var}` from flat batch index `b`, and its
/// row and column strides; all appended to `p`. Returns (code, key part).
fn matrix(var: &str, o: &Operand, batch: &[usize], p: &mut Vec<i64>) -> (String, String, usize) {
    let nd = o.layout.shape.len();
    let (code, n) = walker(var, "b", batch, &o.layout.strides[..nd - 2], p);
    let at = p.len();
    p.push(o.layout.strides[nd - 2] as i64);
    p.push(o.layout.strides[nd - 1] as i64);
    (code, format!("{}{n}", short(o.dtype)), at)
}

pub(crate) fn quantize(k: &mut Launcher<'_>, group_size: usize, bits: u32, o: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let nd = out.shape.len();
    let (rows, words) = (out.shape[nd - 2], out.shape[nd - 1]);
    let c = o[0].layout.shape[nd - 1];
    let batch = &out.shape[..nd - 2];
    let mut p = Vec::new();
    let (ww, kw, w_at) = matrix("wo", &o[0], batch, &mut p);
    let (ws, ks, s_at) = matrix("so", &o[1], batch, &mut p);
    let (wb, kb, b_at) = matrix("bo", &o[2], batch, &mut p);
    let key = format!("quantize|{kw}|{ks}|{kb}");
    let f = k.function(&key, "quantize", || {
        format!(
            "{ps}extern \"C\" __global__ void quantize(unsigned int* out, const {tw}* w, const {ts}* s, const {ts}* bs, long long n, long long rows, long long words, long long c, long long gs, long long bits, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 float n_bins = (float)((1u << bits) - 1u);\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n\
             \x20   long long j = i % words, t = i / words, r = t % rows, b = t / rows;\n\
             \x20   {ww}\n\
             \x20   {ws}\n\
             \x20   {wb}\n\
             \x20   long long first = (32 * j) / bits, last = (32 * j + 31) / bits;\n\
             \x20   unsigned long long acc = 0;\n\
             \x20   for (long long e = first; e <= last && e < c; ++e) {{\n\
             \x20     long long g = e / gs;\n\
             \x20     float scale = {scale}, bias = {bias};\n\
             \x20     float v = {x};\n\
             \x20     float q = fminf(fmaxf(rintf((v - bias) / scale), 0.0f), n_bins);\n\
             \x20     unsigned long long code = (unsigned long long)q;\n\
             \x20     long long shift = e * bits - 32 * j;\n\
             \x20     acc |= shift >= 0 ? (code << shift) : (code >> -shift);\n\
             \x20   }}\n\
             \x20   out[i] = (unsigned int)(acc & 0xffffffffull);\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            tw = ctype(o[0].dtype),
            x = load(o[0].dtype, &format!("w[wo + r * p.v[{w_at}] + e * p.v[{}]]", w_at + 1)),
            ts = ctype(o[1].dtype),
            scale = load(o[1].dtype, &format!("s[so + r * p.v[{s_at}] + g * p.v[{}]]", s_at + 1)),
            bias = load(o[2].dtype, &format!("bs[bo + r * p.v[{b_at}] + g * p.v[{}]]", b_at + 1)),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(o[0].ptr).ptr(o[1].ptr).ptr(o[2].ptr).i64(n as i64).i64(rows as i64).i64(words as i64);
    args.i64(c as i64).i64(group_size as i64).i64(bits as i64).params(&p);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}

pub(crate) fn dequantize(k: &mut Launcher<'_>, group_size: usize, bits: u32, o: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let nd = out.shape.len();
    let (rows, cols) = (out.shape[nd - 2], out.shape[nd - 1]);
    let batch = &out.shape[..nd - 2];
    let mut p = Vec::new();
    let (ww, kw, w_at) = matrix("wo", &o[0], batch, &mut p);
    let (ws, ks, s_at) = matrix("so", &o[1], batch, &mut p);
    let (wb, kb, b_at) = matrix("bo", &o[2], batch, &mut p);
    let key = format!("dequantize|{kw}|{ks}|{kb}|{}", short(out.dtype));
    let f = k.function(&key, "dequantize", || {
        let ts = ctype(o[1].dtype);
        format!(
            "{QCODE}{ps}extern \"C\" __global__ void dequantize({to}* out, const unsigned int* w, const {ts}* s, const {ts}* bs, long long n, long long rows, long long cols, long long gs, long long bits, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n\
             \x20   long long c = i % cols, t = i / cols, r = t % rows, b = t / rows, g = c / gs;\n\
             \x20   {ww}\n\
             \x20   {ws}\n\
             \x20   {wb}\n\
             \x20   float q = (float)qcode(w + wo + r * p.v[{w_at}], p.v[{w1}], c, (int)bits);\n\
             \x20   float v = {scale} * q + {bias};\n\
             \x20   out[i] = {y};\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            to = ctype(out.dtype),
            w1 = w_at + 1,
            scale = load(o[1].dtype, &format!("s[so + r * p.v[{s_at}] + g * p.v[{}]]", s_at + 1)),
            bias = load(o[2].dtype, &format!("bs[bo + r * p.v[{b_at}] + g * p.v[{}]]", b_at + 1)),
            y = store(out.dtype, "v"),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(o[0].ptr).ptr(o[1].ptr).ptr(o[2].ptr).i64(n as i64).i64(rows as i64).i64(cols as i64);
    args.i64(group_size as i64).i64(bits as i64).params(&p);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}

pub(crate) fn quantized_matmul(
    k: &mut Launcher<'_>,
    group_size: usize,
    bits: u32,
    transpose: bool,
    o: &[Operand],
    out: OutSpec<'_>,
) -> Result<CudaBuffer> {
    let n_out = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n_out)?;
    if n_out == 0 {
        return Ok(buf);
    }
    let nd = out.shape.len();
    let (m, n) = (out.shape[nd - 2], out.shape[nd - 1]);
    let kdim = o[0].layout.shape[nd - 1];
    let batch = &out.shape[..nd - 2];
    let mut p = Vec::new();
    let (wx, kx, x_at) = matrix("xo", &o[0], batch, &mut p);
    let (ww, kw, w_at) = matrix("wo", &o[1], batch, &mut p);
    let (ws, ks, s_at) = matrix("so", &o[2], batch, &mut p);
    let (wb, kb, b_at) = matrix("bo", &o[3], batch, &mut p);
    let key = format!("qmm|{transpose}|{kx}|{kw}|{ks}|{kb}|{}", short(out.dtype));
    let f = k.function(&key, "qmm", || {
        // The logical weight element (kk, col): row and column of the
        // packed matrix.
        let (row, col) = if transpose { ("col", "kk") } else { ("kk", "col") };
        let ts = ctype(o[2].dtype);
        format!(
            "{QCODE}{ps}extern \"C\" __global__ void qmm({to}* out, const {tx}* x, const unsigned int* w, const {ts}* s, const {ts}* bs, long long n_out, long long m, long long n, long long kdim, long long gs, long long bits, P p) {{\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_out; i += step) {{\n\
             \x20   long long col = i % n, t = i / n, mi = t % m, b = t / m;\n\
             \x20   {wx}\n\
             \x20   {ww}\n\
             \x20   {ws}\n\
             \x20   {wb}\n\
             \x20   float acc = 0.0f;\n\
             \x20   for (long long kk = 0; kk < kdim; ++kk) {{\n\
             \x20     long long wr = {row}, wc = {col}, g = wc / gs;\n\
             \x20     float q = (float)qcode(w + wo + wr * p.v[{w_at}], p.v[{w1}], wc, (int)bits);\n\
             \x20     float xv = {xv};\n\
             \x20     acc += xv * ({scale} * q + {bias});\n\
             \x20   }}\n\
             \x20   out[i] = {y};\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
            to = ctype(out.dtype),
            tx = ctype(o[0].dtype),
            w1 = w_at + 1,
            xv = load(o[0].dtype, &format!("x[xo + mi * p.v[{x_at}] + kk * p.v[{}]]", x_at + 1)),
            scale = load(o[2].dtype, &format!("s[so + wr * p.v[{s_at}] + g * p.v[{}]]", s_at + 1)),
            bias = load(o[3].dtype, &format!("bs[bo + wr * p.v[{b_at}] + g * p.v[{}]]", b_at + 1)),
            y = store(out.dtype, "acc"),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(o[0].ptr).ptr(o[1].ptr).ptr(o[2].ptr).ptr(o[3].ptr);
    args.i64(n_out as i64).i64(m as i64).i64(n as i64).i64(kdim as i64).i64(group_size as i64).i64(bits as i64).params(&p);
    k.launch(&f, (k.grid_for(n_out), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
