//! `Sort` and `ArgSort` along the last axis: one block per row, a bitonic
//! sort of (value, position) pairs in shared memory, ordered by value with
//! NaN last and ties by position (so `ArgSort` is stable, as on the CPU).
//!
//! Rows are padded to a power of two `N`; the pairs take about `N * (size + 4)`
//! bytes of shared memory, which must fit the 48 KiB every CUDA device
//! gives a block: rows up to [`MAX_ROW`] elements. Longer rows run on the
//! host (`fits` says no, and `backend::run` falls back; docs/gpu.md).

use super::kernel::{ctype, load, short, Args, Launcher};
use super::memory::CudaBuffer;
use super::rows::{grid_rows, params_struct, Rows};
use super::Operand;
use crate::primitive::OutSpec;
use crate::Result;

/// The longest row sorted on the GPU (4096 pairs of 8-byte values and
/// 4-byte positions are 48 KiB).
pub(crate) const MAX_ROW: usize = 4096;

/// Whether rows of `len` elements sort on the GPU.
pub(crate) fn fits(len: usize) -> bool {
    len <= MAX_ROW
}

pub(crate) fn sort(k: &mut Launcher<'_>, a: &Operand, out: OutSpec<'_>, indices: bool) -> Result<CudaBuffer> {
    let d = a.dtype;
    let buf = k.alloc(out.dtype, crate::shape::numel(out.shape))?;
    let r = Rows::new(&a.layout);
    if r.rows == 0 || r.len == 0 {
        return Ok(buf);
    }
    if !fits(r.len) {
        return Err(crate::Error::Kernel(format!("sort: rows of {} elements exceed the GPU limit {MAX_ROW}", r.len)));
    }
    let n = r.len.next_power_of_two();
    let threads = (n / 2).clamp(32, 1024) as u32;
    // Positions first, then the values at the next 8-byte boundary.
    let smem = (n * 4).div_ceil(8) * 8 + n * d.size();
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let key = format!("sort|{}|{}|{indices}", short(d), r.key());
    let f = k.function(&key, "sort", || {
        let t = ctype(d);
        let (va, vb) = (load(d, "a"), load(d, "b"));
        // NaN compares unequal to itself only for floats.
        let nan_check = if d.is_float() {
            format!("bool an = {va} != {va}, bn = {vb} != {vb}; if (an || bn) {{ if (an && bn) return ia < ib; return bn; }}")
        } else {
            String::new()
        };
        let (ot, res) = if indices { ("unsigned int", "ix[t]") } else { (t, "kv[t]") };
        format!(
            "{ps}__device__ __forceinline__ bool lt({t} a, unsigned int ia, {t} b, unsigned int ib, unsigned int len) {{\n\
             \x20 if (ia >= len) return false;\n\
             \x20 if (ib >= len) return true;\n\
             \x20 {nan_check}\n\
             \x20 if ({va} < {vb}) return true;\n\
             \x20 if ({vb} < {va}) return false;\n\
             \x20 return ia < ib;\n\
             }}\n\
             extern \"C\" __global__ void sort({ot}* out, const {t}* in, long long rows, long long len, long long inner, long long Nl, P p) {{\n\
             \x20 unsigned int N = (unsigned int)Nl;\n\
             \x20 extern __shared__ unsigned long long smem_[];\n\
             \x20 unsigned int* ix = (unsigned int*)smem_;\n\
             \x20 {t}* kv = ({t}*)(((char*)smem_) + (((size_t)N * 4 + 7) / 8) * 8);\n\
             \x20 unsigned int ulen = (unsigned int)len;\n\
             \x20 for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             \x20   __syncthreads();\n\
             \x20   for (unsigned int t = threadIdx.x; t < N; t += blockDim.x) {{ kv[t] = t < ulen ? x[t * inner] : ({t})0; ix[t] = t; }}\n\
             \x20   __syncthreads();\n\
             \x20   for (unsigned int kk = 2; kk <= N; kk <<= 1) {{\n\
             \x20     for (unsigned int j = kk >> 1; j > 0; j >>= 1) {{\n\
             \x20       for (unsigned int t = threadIdx.x; t < N / 2; t += blockDim.x) {{\n\
             \x20         unsigned int i = (t / j) * 2 * j + (t % j), l = i + j;\n\
             \x20         bool up = (i & kk) == 0;\n\
             \x20         bool sw = up ? lt(kv[l], ix[l], kv[i], ix[i], ulen) : lt(kv[i], ix[i], kv[l], ix[l], ulen);\n\
             \x20         if (sw) {{ {t} tv = kv[i]; kv[i] = kv[l]; kv[l] = tv; unsigned int ti = ix[i]; ix[i] = ix[l]; ix[l] = ti; }}\n\
             \x20       }}\n\
             \x20       __syncthreads();\n\
             \x20     }}\n\
             \x20   }}\n\
             \x20   {ot}* o = out + row * len;\n\
             \x20   for (unsigned int t = threadIdx.x; t < ulen; t += blockDim.x) o[t] = {res};\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).i64(r.rows as i64).i64(r.len as i64).i64(r.inner as i64);
    args.i64(n as i64).params(&p);
    k.launch(&f, (grid_rows(r.rows), 1, 1), threads, smem as u32, &mut args)?;
    Ok(buf)
}
