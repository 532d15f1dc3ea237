//! `Conv`: a direct kernel, one thread per output element `[n, ...out,
//! co]`. The thread walks the kernel taps of its position (flipped when
//! asked); a tap that lands in padding or between input-dilated elements
//! reads nothing; otherwise the `C_in / groups` channels of the group are
//! read contiguously (channels innermost) from the input and the weight.
//! float16/bfloat16 accumulate in float, float64 in double. Strided
//! operands are copied contiguous first. The geometry (per spatial axis:
//! input, kernel and output sizes, stride, low padding, kernel and input
//! dilation) travels in the parameter struct.

use super::copy;
use super::kernel::{ctype, load, short, store, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::{acc_type, params_struct};
use super::Operand;
use crate::primitive::{ConvParams, OutSpec};
use crate::{Error, Result};

pub(crate) fn conv(k: &mut Launcher<'_>, p: &ConvParams, x: &Operand, w: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let dt = out.dtype;
    let acc = acc_type(dt, "conv")?;
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(dt, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let (xs, ws) = (&x.layout.shape, &w.layout.shape);
    let nd = xs.len();
    if nd < 3 || ws.len() != nd || out.shape.len() != nd || p.groups == 0 || p.stride.len() != nd - 2 {
        return Err(Error::Kernel(format!("conv: input {xs:?}, weight {ws:?} and output {:?} do not fit {p:?}", out.shape)));
    }
    let d = nd - 2;
    let (c_in, c_out) = (xs[nd - 1], ws[0]);
    let (cg, og) = (c_in / p.groups, c_out / p.groups);
    // Contiguous operands: copies (freed in stream order after the launch).
    let mut temps = Vec::new();
    let mut ptr = |k: &mut Launcher<'_>, o: &Operand| -> Result<u64> {
        if o.layout.is_contiguous() {
            return Ok(o.ptr);
        }
        let c = copy::copy(k, o)?;
        let at = c.ptr();
        temps.push(c);
        Ok(at)
    };
    let (px, pw) = (ptr(k, x)?, ptr(k, w)?);
    let image: usize = xs[1..].iter().product();
    let taps: usize = ws[1..nd - 1].iter().product();
    let mut params: Vec<i64> = Vec::with_capacity(7 * d);
    params.extend(xs[1..nd - 1].iter().map(|&v| v as i64));
    params.extend(ws[1..nd - 1].iter().map(|&v| v as i64));
    params.extend(out.shape[1..nd - 1].iter().map(|&v| v as i64));
    params.extend(p.stride.iter().map(|&v| v as i64));
    params.extend(p.padding_lo.iter().map(|&v| v as i64));
    params.extend(p.kernel_dilation.iter().map(|&v| v as i64));
    params.extend(p.input_dilation.iter().map(|&v| v as i64));
    let key = format!("conv|{}|{d}|{}", short(dt), p.flip);
    let f = k.function(&key, "conv", || {
        let t = ctype(dt);
        let (xv, wv) = (load(dt, "xp[c]"), load(dt, "wp[c]"));
        format!(
            "{ps}extern \"C\" __global__ void conv({t}* out, const {t}* x, const {t}* w, long long n, long long cin, long long cout, long long cg, long long og, long long taps, long long image, P p) {{\n\
             \x20 const int D = {d};\n\
             \x20 long long step = (long long)blockDim.x * gridDim.x;\n\
             \x20 for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n\
             \x20   long long co = i % cout, t = i / cout;\n\
             \x20   long long pos[D];\n\
             \x20   for (int a = D - 1; a >= 0; --a) {{ pos[a] = t % p.v[2 * D + a]; t /= p.v[2 * D + a]; }}\n\
             \x20   long long grp = co / og;\n\
             \x20   {acc} s = ({acc})0;\n\
             \x20   for (long long tap = 0; tap < taps; ++tap) {{\n\
             \x20     long long rem = tap, off = 0, stride = cin;\n\
             \x20     bool ok = true;\n\
             \x20     for (int a = D - 1; a >= 0; --a) {{\n\
             \x20       long long K = p.v[D + a], k = rem % K;\n\
             \x20       rem /= K;\n\
             \x20       long long kk = {flip} ? K - 1 - k : k;\n\
             \x20       long long dil = p.v[6 * D + a], len = (p.v[a] - 1) * dil + 1;\n\
             \x20       long long q = pos[a] * p.v[3 * D + a] - p.v[4 * D + a] + kk * p.v[5 * D + a];\n\
             \x20       if (q < 0 || q >= len || q % dil != 0) {{ ok = false; break; }}\n\
             \x20       off += (q / dil) * stride;\n\
             \x20       stride *= p.v[a];\n\
             \x20     }}\n\
             \x20     if (!ok) continue;\n\
             \x20     const {t}* xp = x + t * image + off + grp * cg;\n\
             \x20     const {t}* wp = w + (co * taps + tap) * cg;\n\
             \x20     for (long long c = 0; c < cg; ++c) s += ({acc}){xv} * ({acc}){wv};\n\
             \x20   }}\n\
             \x20   out[i] = {y};\n\
             \x20 }}\n}}\n",
            ps = params_struct(params.len()),
            flip = if p.flip { "true" } else { "false" },
            y = store(dt, "s"),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(px).ptr(pw).i64(n as i64).i64(c_in as i64).i64(c_out as i64).i64(cg as i64).i64(og.max(1) as i64);
    args.i64(taps as i64).i64(image as i64).params(&params);
    k.launch(&f, (k.grid_for(n), 1, 1), BLOCK, 0, &mut args)?;
    drop(temps);
    Ok(buf)
}
