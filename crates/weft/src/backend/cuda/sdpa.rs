//! `Sdpa`: fused scaled dot-product attention, `softmax(scale * q k^T +
//! mask) v`, never materializing the `[L, S]` scores.
//!
//! One block (4 warps) per query row and key split. Warp `w` takes key
//! tiles `w, w + 4, ...` of 32 keys; lane `t` scores key `t` of a tile (the
//! query is in shared memory), the warp keeps an online softmax (running
//! maximum, normalizer, and the unnormalized output with each lane holding
//! features `lane + 32c`), and the warps are merged through shared memory
//! at the end. When there are few query rows (decode: one query against a
//! long KV cache) the keys are split over `grid.y` blocks (split-K), each
//! writing its (maximum, normalizer, output) partial, and a second kernel
//! merges the splits. Inputs are read through their strides (q/k/v
//! transposed views and broadcast masks cost no copy). Grouped-query heads:
//! query head `h` reads key/value head `h / (Hq / Hk)`. Causal: query `i`
//! sees keys `j <= i + S - L`, as the CPU kernel. A row with no visible key
//! gives NaN, as the CPU kernel.

use super::kernel::{ctype, load, short, store, Args, Launcher};
use super::memory::CudaBuffer;
use super::rows::{acc_type, checked_mul, inf, nan, params_struct};
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::{Error, Result};

/// Warps per block.
const NW: usize = 4;
/// The largest head dimensions the kernel is built for (shared memory).
pub(crate) const MAX_D: usize = 1024;
pub(crate) const MAX_DV: usize = 512;

/// Whether query/key head size `d` and value head size `dv` fit the kernel.
pub(crate) fn fits(d: usize, dv: usize) -> bool {
    d <= MAX_D && dv <= MAX_DV
}

fn dims4(l: &crate::shape::Layout, what: &str) -> Result<([usize; 4], [i64; 4])> {
    let s: [usize; 4] = l.shape.as_slice().try_into().map_err(|_| Error::Shape(format!("attention {what} must be 4-D, got {:?}", l.shape)))?;
    let st: Vec<i64> = l.strides.iter().map(|&x| x as i64).collect();
    Ok((s, [st[0], st[1], st[2], st[3]]))
}

pub(crate) fn sdpa(k: &mut Launcher<'_>, scale: f32, causal: bool, o: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let (q, kk, v) = (&o[0], &o[1], &o[2]);
    let mask = o.get(3);
    let d = q.dtype;
    let acc = acc_type(d, "scaled_dot_product_attention")?;
    let ([b, hq, l, dq], qst) = dims4(&q.layout, "queries")?;
    let ([_, hk, s, _], kst) = dims4(&kk.layout, "keys")?;
    let ([_, _, _, dv], vst) = dims4(&v.layout, "values")?;
    let mst = match mask {
        Some(m) => dims4(&m.layout, "mask")?.1,
        None => [0; 4],
    };
    if !fits(dq, dv) {
        return Err(Error::Kernel(format!("attention head sizes {dq}/{dv} exceed the GPU kernel's {MAX_D}/{MAX_DV}")));
    }
    let rows = checked_mul(checked_mul(b, hq)?, l)?;
    let buf = k.alloc(out.dtype, checked_mul(rows, dv)?)?;
    if rows == 0 || dv == 0 {
        return Ok(buf);
    }
    let sms = k.gpu.sm_count as usize;
    let splits = if rows >= 2 * sms || s <= 128 { 1 } else { s.div_ceil(128).min((4 * sms).div_ceil(rows)).clamp(1, 1024) };
    let split_len = s.div_ceil(splits).max(1);
    let mt = mask.map(|m| m.dtype);
    let key = format!(
        "sdpa|{}|{dq}|{dv}|{causal}|{}",
        short(d),
        mt.map_or("none".to_string(), |t| short(t).to_string())
    );
    let f = k.function(&key, "attn", || source(d, acc, dq, dv, causal, mt))?;
    let mut p: Vec<i64> = qst.to_vec();
    p.extend(kst);
    p.extend(vst);
    p.extend(mst);
    let group = hq / hk.max(1);
    let acc_dtype = if acc == "double" { Dtype::F64 } else { Dtype::F32 };
    let part = if splits > 1 { Some(k.alloc(acc_dtype, checked_mul(checked_mul(rows, splits)?, dv + 2)?)?) } else { None };
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(part.as_ref().map_or(0, |p| p.ptr())).ptr(q.ptr).ptr(kk.ptr).ptr(v.ptr);
    args.ptr(mask.map_or(0, |m| m.ptr)).i64(hq as i64).i64(group as i64).i64(l as i64).i64(s as i64);
    args.i64(split_len as i64).i64(splits as i64).f64(scale as f64).params(&p);
    let grid_x = u32::try_from(rows).map_err(|_| Error::Kernel(format!("attention over {rows} query rows exceeds the grid")))?;
    k.launch(&f, (grid_x, splits as u32, 1), (NW * 32) as u32, 0, &mut args)?;
    if let Some(part) = part {
        let g = k.function(&format!("{key}|merge"), "attn_merge", || source(d, acc, dq, dv, causal, mt))?;
        let mut args = Args::default();
        args.ptr(buf.ptr()).ptr(part.ptr()).i64(splits as i64);
        k.launch(&g, (grid_x, 1, 1), (dv.div_ceil(32) * 32).min(1024) as u32, 0, &mut args)?;
    }
    Ok(buf)
}

fn source(d: Dtype, acc: &str, dq: usize, dv: usize, causal: bool, mt: Option<Dtype>) -> String {
    let t = ctype(d);
    let (inf, nan) = (inf(acc), nan(acc));
    let vpl = dv.div_ceil(32).max(1);
    let mask_t = mt.map_or("unsigned char", ctype);
    let mask_add = match mt {
        None => String::new(),
        // A dropped key scores the lowest finite value (as MLX and the CPU
        // kernel), so a row with every key dropped averages the values
        // instead of dividing 0 by 0.
        Some(Dtype::Bool) => format!(
            "if (!mask[b * p.v[12] + h * p.v[13] + i * p.v[14] + j * p.v[15]]) sc = ({acc}){};",
            if acc == "double" { "-1.7976931348623157e308" } else { "-3.40282347e38f" }
        ),
        Some(m) => format!(
            "sc = sc + ({acc}){};",
            load(m, "mask[b * p.v[12] + h * p.v[13] + i * p.v[14] + j * p.v[15]]")
        ),
    };
    let visible = if causal {
        "long long lim = i + S + 1 - L; long long visible = lim < 0 ? 0 : (lim < S ? lim : S);"
    } else {
        "long long visible = S;"
    };
    let (lq, lk, lv) = (load(d, "qr[e * p.v[3]]"), load(d, "kr[e * p.v[7]]"), load(d, "vr[e * p.v[11]]"));
    let fin = store(d, &format!("(tot == ({acc})0 ? {nan} : a * (({acc})1 / tot))"));
    format!(
        "{ps}#define D_ {dq}\n#define DV_ {dv}\n#define VPL {vpl}\n#define NW {NW}\n\
         extern \"C\" __global__ void attn({t}* out, {acc}* part, const {t}* q, const {t}* k, const {t}* v, const {mask_t}* mask,\n\
         \x20   long long Hq, long long group, long long L, long long S, long long split_len, long long splits, double scale_d, P p) {{\n\
         \x20 __shared__ {acc} qs[D_ > 0 ? D_ : 1];\n\
         \x20 __shared__ {acc} wm[NW], wsum[NW];\n\
         \x20 __shared__ {acc} wacc[NW][DV_];\n\
         \x20 {acc} scale = ({acc})scale_d;\n\
         \x20 long long row = blockIdx.x;\n\
         \x20 long long i = row % L, bh = row / L, h = bh % Hq, b = bh / Hq, hk = h / group;\n\
         \x20 const {t}* qr = q + b * p.v[0] + h * p.v[1] + i * p.v[2];\n\
         \x20 for (int e = threadIdx.x; e < D_; e += blockDim.x) qs[e] = ({acc}){lq};\n\
         \x20 __syncthreads();\n\
         \x20 {visible}\n\
         \x20 long long lo = (long long)blockIdx.y * split_len;\n\
         \x20 long long hi = lo + split_len < visible ? lo + split_len : visible;\n\
         \x20 int w = threadIdx.x >> 5, lane = threadIdx.x & 31;\n\
         \x20 const {t}* kb = k + b * p.v[4] + hk * p.v[5];\n\
         \x20 const {t}* vb = v + b * p.v[8] + hk * p.v[9];\n\
         \x20 {acc} m = -{inf}, s = 0;\n\
         \x20 {acc} acc[VPL];\n\
         \x20 #pragma unroll\n\
         \x20 for (int c = 0; c < VPL; ++c) acc[c] = 0;\n\
         \x20 for (long long t0 = lo + w * 32; t0 < hi; t0 += NW * 32) {{\n\
         \x20   long long j = t0 + lane;\n\
         \x20   {acc} sc = -{inf};\n\
         \x20   if (j < hi) {{\n\
         \x20     const {t}* kr = kb + j * p.v[6];\n\
         \x20     {acc} dd = 0;\n\
         \x20     #pragma unroll 8\n\
         \x20     for (int e = 0; e < D_; ++e) dd += qs[e] * ({acc}){lk};\n\
         \x20     sc = dd * scale;\n\
         \x20     {mask_add}\n\
         \x20   }}\n\
         \x20   {acc} bm = warp_max(sc);\n\
         \x20   if (bm == -{inf}) continue;\n\
         \x20   {acc} mn = max_ign(m, bm);\n\
         \x20   {acc} corr = exp_(m - mn);\n\
         \x20   s *= corr;\n\
         \x20   #pragma unroll\n\
         \x20   for (int c = 0; c < VPL; ++c) acc[c] *= corr;\n\
         \x20   {acc} pj = (j < hi) ? exp_(sc - mn) : ({acc})0;\n\
         \x20   s += warp_sum(pj);\n\
         \x20   int cnt = hi - t0 < 32 ? (int)(hi - t0) : 32;\n\
         \x20   for (int tt = 0; tt < cnt; ++tt) {{\n\
         \x20     {acc} pt = __shfl_sync(0xffffffffu, pj, tt);\n\
         \x20     const {t}* vr = vb + (t0 + tt) * p.v[10];\n\
         \x20     #pragma unroll\n\
         \x20     for (int c = 0; c < VPL; ++c) {{ int e = lane + 32 * c; if (e < DV_) acc[c] += pt * ({acc}){lv}; }}\n\
         \x20   }}\n\
         \x20   m = mn;\n\
         \x20 }}\n\
         \x20 if (lane == 0) {{ wm[w] = m; wsum[w] = s; }}\n\
         \x20 #pragma unroll\n\
         \x20 for (int c = 0; c < VPL; ++c) {{ int e = lane + 32 * c; if (e < DV_) wacc[w][e] = acc[c]; }}\n\
         \x20 __syncthreads();\n\
         \x20 {acc} M = -{inf};\n\
         \x20 for (int ww = 0; ww < NW; ++ww) M = max_ign(M, wm[ww]);\n\
         \x20 {acc} fw[NW]; {acc} tot = 0;\n\
         \x20 for (int ww = 0; ww < NW; ++ww) {{ fw[ww] = wm[ww] == -{inf} ? ({acc})0 : exp_(wm[ww] - M); tot += wsum[ww] * fw[ww]; }}\n\
         \x20 long long pbase = (row * splits + blockIdx.y) * (DV_ + 2);\n\
         \x20 for (int e = threadIdx.x; e < DV_; e += blockDim.x) {{\n\
         \x20   {acc} a = 0;\n\
         \x20   for (int ww = 0; ww < NW; ++ww) a += wacc[ww][e] * fw[ww];\n\
         \x20   if (splits == 1) out[row * DV_ + e] = {fin};\n\
         \x20   else part[pbase + 2 + e] = a;\n\
         \x20 }}\n\
         \x20 if (splits > 1 && threadIdx.x == 0) {{ part[pbase] = M; part[pbase + 1] = tot; }}\n\
         }}\n\
         extern \"C\" __global__ void attn_merge({t}* out, const {acc}* part, long long splits) {{\n\
         \x20 long long row = blockIdx.x;\n\
         \x20 const {acc}* pr = part + row * splits * (DV_ + 2);\n\
         \x20 {acc} M = -{inf};\n\
         \x20 for (long long sp = 0; sp < splits; ++sp) M = max_ign(M, pr[sp * (DV_ + 2)]);\n\
         \x20 {acc} tot = 0;\n\
         \x20 for (long long sp = 0; sp < splits; ++sp) {{ {acc} mm = pr[sp * (DV_ + 2)]; if (mm != -{inf}) tot += pr[sp * (DV_ + 2) + 1] * exp_(mm - M); }}\n\
         \x20 for (int e = threadIdx.x; e < DV_; e += blockDim.x) {{\n\
         \x20   {acc} a = 0;\n\
         \x20   for (long long sp = 0; sp < splits; ++sp) {{ {acc} mm = pr[sp * (DV_ + 2)]; if (mm != -{inf}) a += pr[sp * (DV_ + 2) + 2 + e] * exp_(mm - M); }}\n\
         \x20   out[row * DV_ + e] = {fin};\n\
         \x20 }}\n\
         }}\n",
        ps = params_struct(16),
    )
}
