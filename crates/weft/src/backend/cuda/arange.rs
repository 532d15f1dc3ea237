//! `Arange`: `start + i * step`, computed in double as on the CPU.

use super::kernel::{ctype, from_double, short, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use crate::primitive::OutSpec;
use crate::Result;

pub(crate) fn arange(k: &mut Launcher<'_>, start: f64, step: f64, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let d = out.dtype;
    let f = k.function(&format!("arange|{}", short(d)), "arange", || {
        format!(
            "extern \"C\" __global__ void arange({t}* out, long long n, double start, double step) {{\n\
             \x20 long long s = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s)\n\
             \x20   out[i] = {v};\n}}\n",
            t = ctype(d),
            v = from_double(d, "start + (double)i * step"),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).i64(n as i64).f64(start).f64(step);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    Ok(buf)
}
