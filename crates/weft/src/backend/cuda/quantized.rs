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

/// The batch walks of the operands `o[first..]`, named `names` in the
/// generated C (each declares `long long {name}` from flat batch index `b`),
/// with each operand's row and column strides appended to `p`.
struct Walks<const N: usize> {
    /// The C code of each walk.
    code: [String; N],
    /// The kernel-cache key part of all of them (dtype and walk shape).
    key: String,
    /// Where each operand's row stride sits in `p` (its column stride follows).
    at: [usize; N],
}

impl<const N: usize> Walks<N> {
    fn new(names: [&str; N], o: &[Operand], batch: &[usize], p: &mut Vec<i64>) -> Walks<N> {
        let mut key = String::new();
        let mut at = [0; N];
        let code = std::array::from_fn(|i| {
            let o = &o[i];
            let nd = o.layout.shape.len();
            let (code, n) = walker(names[i], "b", batch, &o.layout.strides[..nd - 2], p);
            at[i] = p.len();
            p.push(o.layout.strides[nd - 2] as i64);
            p.push(o.layout.strides[nd - 1] as i64);
            key.push_str(&format!("|{}{n}", short(o.dtype)));
            code
        });
        Walks { code, key, at }
    }
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
    let walks = Walks::new(["wo", "so", "bo"], o, batch, &mut p);
    let ([ww, ws, wb], [w_at, s_at, b_at]) = (&walks.code, walks.at);
    let key = format!("quantize{}", walks.key);
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
    let walks = Walks::new(["wo", "so", "bo"], o, batch, &mut p);
    let ([ww, ws, wb], [w_at, s_at, b_at]) = (&walks.code, walks.at);
    let key = format!("dequantize{}|{}", walks.key, short(out.dtype));
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
    if let Some(plan) = QmvPlan::new(group_size, bits, transpose, o, out) {
        qmv(k, &plan, bits, o, out, &buf)?;
        return Ok(buf);
    }
    let nd = out.shape.len();
    let (m, n) = (out.shape[nd - 2], out.shape[nd - 1]);
    let kdim = o[0].layout.shape[nd - 1];
    let batch = &out.shape[..nd - 2];
    let mut p = Vec::new();
    let walks = Walks::new(["xo", "wo", "so", "bo"], o, batch, &mut p);
    let ([wx, ww, ws, wb], [x_at, w_at, s_at, b_at]) = (&walks.code, walks.at);
    let key = format!("qmm|{transpose}{}|{}", walks.key, short(out.dtype));
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

/// Shared memory one block of the matrix-vector kernel uses at most (the
/// default per-block limit: no opt-in attribute needed).
const QMV_SMEM: usize = 48 * 1024;
/// Rows of x one block multiplies at once: their accumulators are
/// registers, so the weight codes are read once per this many rows.
const QMV_ROWS: usize = 8;
/// Warps per block; each warp reduces one output column at a time.
const QMV_WARPS: usize = 8;
/// About this many blocks along the output columns, before columns are
/// grouped (more than one column per warp) to stay near it.
const QMV_BLOCKS: usize = 512;

/// How the warp-per-output matrix-vector kernel covers a
/// `QuantizedMatmul`, or `None` where the general kernel runs instead.
struct QmvPlan {
    m: usize,
    n: usize,
    kdim: usize,
    group_size: usize,
    /// Rows of x per block (at most `QMV_ROWS`, fewer where x's rows do not
    /// fit in `QMV_SMEM`).
    rows: usize,
    /// Output columns per block (`QMV_WARPS` times the columns per warp).
    cols_per_block: usize,
    /// Dynamic shared memory in bytes: the block's rows of x as float, each
    /// padded by 4 floats after every 32, then a sum per 16 elements.
    smem: usize,
    /// Product of the batch axes.
    batch: usize,
}

impl QmvPlan {
    /// The fast path takes `x @ w.T` (the layout of a linear layer) with 4-
    /// or 8-bit codes, groups a multiple of 32 that divide the contracted
    /// axis, float16/bfloat16/float32 operands, and each row of codes in
    /// place, contiguous and 16-byte aligned (read as 16-byte words). Any
    /// number of rows of x: more than `rows` run as row blocks, each
    /// re-reading the codes (from L2 for a model's layer).
    fn new(group_size: usize, bits: u32, transpose: bool, o: &[Operand], out: OutSpec<'_>) -> Option<QmvPlan> {
        use crate::Dtype;
        let float = |d: Dtype| matches!(d, Dtype::F32 | Dtype::F16 | Dtype::BF16);
        if !transpose || !(bits == 4 || bits == 8) || group_size == 0 || group_size % 32 != 0 || o.len() != 4 {
            return None;
        }
        if !float(o[0].dtype) || !float(o[2].dtype) || o[3].dtype != o[2].dtype || !float(out.dtype) {
            return None;
        }
        let nd = out.shape.len();
        if nd < 2 || o.iter().any(|op| op.layout.shape.len() != nd) {
            return None;
        }
        let (m, n) = (out.shape[nd - 2], out.shape[nd - 1]);
        let kdim = o[0].layout.shape[nd - 1];
        if kdim == 0 || kdim % group_size != 0 {
            return None;
        }
        let w = &o[1].layout;
        let words = kdim.checked_mul(bits as usize)? / 32;
        if w.shape[nd - 1] != words || w.shape[nd - 2] != n || w.strides[nd - 1] != 1 || o[1].ptr % 16 != 0 {
            return None;
        }
        // Every row start (batch and row strides) stays 16-byte aligned.
        if w.strides[..nd - 1].iter().zip(&w.shape[..nd - 1]).any(|(&s, &d)| d > 1 && s.rem_euclid(4) != 0) {
            return None;
        }
        // kdim is a multiple of 32: 4 floats of padding per 32, one sum per 16.
        let per_row = (kdim + kdim / 8 + kdim / 16).checked_mul(4)?;
        let rows = m.min(QMV_ROWS).min(QMV_SMEM / per_row);
        if rows == 0 {
            return None;
        }
        let per_warp = n.div_ceil(QMV_WARPS * QMV_BLOCKS).clamp(1, 16);
        let batch = out.shape[..nd - 2].iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        Some(QmvPlan { m, n, kdim, group_size, rows, cols_per_block: QMV_WARPS * per_warp, smem: rows * per_row, batch })
    }
}

/// The decode-shaped `x @ w.T` (docs/gpu.md, "Quantized kernels"): a block
/// stages `plan.rows` rows of x in shared memory as float (with the sum of
/// every 16 elements); each warp takes one output column at a time, its
/// lanes read consecutive 16-byte words of the column's codes (one
/// coalesced 512-byte load per warp), decode them in registers, dot them
/// with every staged row and apply the group's scale and bias once per word
/// (`scale * sum(q x) + bias * sum(x)`); a warp-shuffle sum gives the
/// output. The codes of a word never straddle a group (groups are multiples
/// of 32 elements, a word holds 32 or 16 codes).
fn qmv(k: &mut Launcher<'_>, plan: &QmvPlan, bits: u32, o: &[Operand], out: OutSpec<'_>, buf: &CudaBuffer) -> Result<()> {
    let nd = out.shape.len();
    let batch = &out.shape[..nd - 2];
    let mut p = Vec::new();
    let walks = Walks::new(["xo", "wo", "so", "bo"], o, batch, &mut p);
    let key = format!("qmv|{bits}{}|{}", walks.key, short(out.dtype));
    let src = QmvSource { bits, x: o[0].dtype, scales: o[2].dtype, out: out.dtype, walks: &walks, params: p.len() };
    let f = k.function(&key, "qmv", || src.source())?;
    let ys = plan.batch.checked_mul(plan.m.div_ceil(plan.rows)).ok_or_else(|| crate::Error::InvalidArgument("quantized_matmul: too many row blocks".into()))?;
    let grid = (plan.n.div_ceil(plan.cols_per_block).clamp(1, 1 << 30) as u32, ys.clamp(1, 65535) as u32, 1);
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(o[0].ptr).ptr(o[1].ptr).ptr(o[2].ptr).ptr(o[3].ptr);
    args.i64(plan.batch as i64).i64(plan.m as i64).i64(plan.n as i64).i64(plan.kdim as i64);
    args.i64(plan.group_size as i64).i64(plan.rows as i64).i64(plan.cols_per_block as i64).params(&p);
    k.launch(&f, grid, (QMV_WARPS * 32) as u32, plan.smem as u32, &mut args)
}

/// The CUDA C of `qmv` for one combination of bits, dtypes and batch walks.
struct QmvSource<'a> {
    bits: u32,
    x: crate::Dtype,
    scales: crate::Dtype,
    out: crate::Dtype,
    /// The batch walks of x, w, scales and biases, and where their strides sit in `P`.
    walks: &'a Walks<4>,
    params: usize,
}

impl QmvSource<'_> {
    fn source(&self) -> String {
        let bits = self.bits;
        let [x_at, w_at, s_at, b_at] = self.walks.at;
        // Codes per 16-byte word, per 32-bit word; 16-element sums per word.
        let (codes, per_u32, segs) = (128 / bits, 32 / bits, 128 / bits / 16);
        let ts = ctype(self.scales);
    format!(
        "{ps}extern \"C\" __global__ void __launch_bounds__({threads}) qmv({to}* __restrict__ out, const {tx}* __restrict__ x, const unsigned int* __restrict__ w, const {ts}* __restrict__ s, const {ts}* __restrict__ bs, long long nbatch, long long m, long long n, long long kdim, long long gs, long long rows, long long cpb, P p) {{\n\
         \x20 extern __shared__ Vec<float> smem[];\n\
         \x20 float* xs = (float*)smem;\n\
         \x20 const long long kpad = kdim + kdim / 8, nseg = kdim / 16;\n\
         \x20 float* xsum = xs + rows * kpad;\n\
         \x20 const long long mblocks = (m + rows - 1) / rows, ys = nbatch * mblocks, xblocks = (n + cpb - 1) / cpb;\n\
         \x20 const long long chunks = kdim / {codes};\n\
         \x20 const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;\n\
         \x20 for (long long y = blockIdx.y; y < ys; y += gridDim.y) {{\n\
         \x20   long long b = y / mblocks, m0 = (y % mblocks) * rows;\n\
         \x20   int nr = (int)(m - m0 < rows ? m - m0 : rows);\n\
         \x20   {wx}\n\
         \x20   {ww}\n\
         \x20   {ws}\n\
         \x20   {wb}\n\
         \x20   __syncthreads();\n\
         \x20   for (long long i = threadIdx.x; i < nr * kdim; i += blockDim.x) {{\n\
         \x20     long long r = i / kdim, kk = i % kdim;\n\
         \x20     xs[r * kpad + kk + (kk >> 5) * 4] = {xv};\n\
         \x20   }}\n\
         \x20   __syncthreads();\n\
         \x20   for (long long i = threadIdx.x; i < nr * nseg; i += blockDim.x) {{\n\
         \x20     long long r = i / nseg, sg = i % nseg;\n\
         \x20     const float* v = xs + r * kpad + sg * 16 + (sg >> 1) * 4;\n\
         \x20     float t = 0.0f;\n\
         \x20     #pragma unroll\n\
         \x20     for (int j = 0; j < 16; ++j) t += v[j];\n\
         \x20     xsum[r * nseg + sg] = t;\n\
         \x20   }}\n\
         \x20   __syncthreads();\n\
         \x20   for (long long xb = blockIdx.x; xb < xblocks; xb += gridDim.x) {{\n\
         \x20     long long cend = (xb + 1) * cpb < n ? (xb + 1) * cpb : n;\n\
         \x20     for (long long col = xb * cpb + warp; col < cend; col += nwarps) {{\n\
         \x20       const Vec<unsigned int>* wr = (const Vec<unsigned int>*)(w + wo + col * p.v[{w_row}]);\n\
         \x20       const {ts}* sr = s + so + col * p.v[{s_row}];\n\
         \x20       const {ts}* br = bs + bo + col * p.v[{b_row}];\n\
         \x20       float acc[{maxr}];\n\
         \x20       #pragma unroll\n\
         \x20       for (int r = 0; r < {maxr}; ++r) acc[r] = 0.0f;\n\
         \x20       for (long long c = lane; c < chunks; c += 32) {{\n\
         \x20         Vec<unsigned int> qw = wr[c];\n\
         \x20         long long k0 = c * {codes}, g = k0 / gs;\n\
         \x20         float sc = {scale}, bi = {bias};\n\
         \x20         float q[{codes}];\n\
         \x20         #pragma unroll\n\
         \x20         for (int j = 0; j < 4; ++j) {{\n\
         \x20           #pragma unroll\n\
         \x20           for (int t = 0; t < {per_u32}; ++t) q[j * {per_u32} + t] = (float)((qw.v[j] >> ({bits} * t)) & {mask}u);\n\
         \x20         }}\n\
         \x20         const float* xr = xs + k0 + (k0 >> 5) * 4;\n\
         \x20         const float* sumr = xsum + k0 / 16;\n\
         \x20         #pragma unroll\n\
         \x20         for (int r = 0; r < {maxr}; ++r) {{\n\
         \x20           if (r < nr) {{\n\
         \x20             const Vec<float>* xv4 = (const Vec<float>*)(xr + r * kpad);\n\
         \x20             float d = 0.0f;\n\
         \x20             #pragma unroll\n\
         \x20             for (int j = 0; j < {codes} / 4; ++j) {{\n\
         \x20               Vec<float> a = xv4[j];\n\
         \x20               d = fmaf(a.v[0], q[4 * j], d); d = fmaf(a.v[1], q[4 * j + 1], d);\n\
         \x20               d = fmaf(a.v[2], q[4 * j + 2], d); d = fmaf(a.v[3], q[4 * j + 3], d);\n\
         \x20             }}\n\
         \x20             float sx = 0.0f;\n\
         \x20             #pragma unroll\n\
         \x20             for (int j = 0; j < {segs}; ++j) sx += sumr[r * nseg + j];\n\
         \x20             acc[r] = fmaf(sc, d, fmaf(bi, sx, acc[r]));\n\
         \x20           }}\n\
         \x20         }}\n\
         \x20       }}\n\
         \x20       #pragma unroll\n\
         \x20       for (int r = 0; r < {maxr}; ++r) {{\n\
         \x20         if (r < nr) {{\n\
         \x20           float v = warp_sum(acc[r]);\n\
         \x20           if (lane == 0) out[(b * m + m0 + r) * n + col] = {y};\n\
         \x20         }}\n\
         \x20       }}\n\
         \x20     }}\n\
         \x20   }}\n\
         \x20 }}\n}}\n",
        ps = params_struct(self.params),
        threads = QMV_WARPS * 32,
        maxr = QMV_ROWS,
        mask = (1u32 << bits) - 1,
        to = ctype(self.out),
        tx = ctype(self.x),
        xv = load(self.x, &format!("x[xo + (m0 + r) * p.v[{x_at}] + kk * p.v[{}]]", x_at + 1)),
        w_row = w_at,
        wx = self.walks.code[0],
        ww = self.walks.code[1],
        ws = self.walks.code[2],
        wb = self.walks.code[3],
        s_row = s_at,
        b_row = b_at,
        scale = load(self.scales, &format!("sr[g * p.v[{}]]", s_at + 1)),
        bias = load(self.scales, &format!("br[g * p.v[{}]]", b_at + 1)),
        y = store(self.out, "v"),
    )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Layout;
    use crate::Dtype;

    fn op(shape: &[usize], dtype: Dtype, ptr: u64) -> Operand {
        Operand { ptr, layout: Layout::contiguous(shape), dtype }
    }

    /// x [m, k] @ w.T for an `n` x `k` matrix of `bits`-bit codes in groups of `gs`.
    fn plan(m: usize, n: usize, k: usize, gs: usize, bits: u32, transpose: bool, w_ptr: u64) -> Option<QmvPlan> {
        let o = [
            op(&[m, k], Dtype::BF16, 0x1000),
            op(&[n, k * bits as usize / 32], Dtype::U32, w_ptr),
            op(&[n, k / gs], Dtype::BF16, 0x2000),
            op(&[n, k / gs], Dtype::BF16, 0x3000),
        ];
        QmvPlan::new(gs, bits, transpose, &o, OutSpec { shape: &[m, n], dtype: Dtype::BF16 })
    }

    #[test]
    fn the_decode_shapes_take_the_matrix_vector_kernel() {
        // SmolLM2's projections and head (groups of 32, 4 bits), and 8 bits.
        for (n, k) in [(576, 576), (192, 576), (1536, 576), (576, 1536), (49152, 576)] {
            let p = plan(1, n, k, 32, 4, true, 0x10000).expect("taken");
            assert_eq!((p.rows, p.m, p.n, p.kdim), (1, 1, n, k));
            assert!(p.cols_per_block % QMV_WARPS == 0 && p.smem <= QMV_SMEM);
            assert!(plan(8, n, k, 64, 8, true, 0x10000).is_some());
        }
        // Prefill: row blocks of 8.
        assert_eq!(plan(512, 576, 576, 32, 4, true, 0x10000).map(|p| p.rows), Some(8));
        // A long contracted axis fits fewer rows in shared memory.
        let p = plan(8, 64, 4096, 128, 4, true, 0x10000).expect("taken");
        assert_eq!(p.rows, QMV_SMEM / ((4096 + 512 + 256) * 4));
        assert!(p.smem <= QMV_SMEM);
    }

    #[test]
    fn other_cases_keep_the_general_kernel() {
        assert!(plan(1, 64, 256, 32, 3, true, 0x10000).is_none(), "3 bits");
        assert!(plan(1, 64, 256, 32, 4, false, 0x10000).is_none(), "x @ w");
        assert!(plan(1, 64, 256, 32, 4, true, 0x10004).is_none(), "codes not 16-byte aligned");
        assert!(plan(1, 64, 256, 16, 4, true, 0x10000).is_none(), "groups of 16");
        // Too long a row for one row of x in shared memory.
        assert!(plan(1, 64, 1 << 14, 128, 4, true, 0x10000).is_none());
    }

    /// With WEFT_QMV_SOURCE=dir set, writes the kernel's source (without
    /// the shared prelude) for each bit width and dtype there, to check it
    /// with a C++ compiler where no NVRTC is at hand.
    #[test]
    fn the_kernel_source_is_written_for_review() {
        let Ok(dir) = std::env::var("WEFT_QMV_SOURCE") else { return };
        for bits in [4, 8] {
            for d in [Dtype::F32, Dtype::F16, Dtype::BF16] {
                let walk = |v: &str| crate::backend::cuda::rows::walk(v, "b", 0, 1, 1);
                let walks = Walks { code: ["xo", "wo", "so", "bo"].map(walk), key: String::new(), at: [2, 4, 6, 8] };
                let src = QmvSource { bits, x: d, scales: d, out: d, walks: &walks, params: 10 };
                std::fs::write(format!("{dir}/qmv_{bits}_{d}.cu"), src.source()).unwrap();
            }
        }
    }
}
