//! Generated CUDA C kernels: source per (kernel, dtypes, layout class),
//! compiled once with NVRTC, cached per device and per stream, launched with
//! raw arguments on a stream.
//!
//! `float16` and `bfloat16` are stored as 16-bit integers and converted with
//! PTX `cvt` instructions (and bit shifts for bfloat16), computing in
//! `float` as the CPU backend does; the generated code needs no header, so
//! NVRTC needs no include path.

use super::device::Gpu;
use super::memory::{CudaBuffer, StreamHandle};
use super::{driver_err, Operand};
use crate::dtype::Dtype;
use crate::shape::Layout;
use crate::{Error, Result};
use cudarc::driver::safe::{CudaFunction, CudaModule};
use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Threads per block of the elementwise and reduction kernels.
pub(crate) const BLOCK: u32 = 256;

/// Elements per thread in the vectorized elementwise path.
const VEC: usize = 4;

pub(crate) struct CompiledModule {
    module: Arc<CudaModule>,
}

/// A kernel ready to launch.
#[derive(Clone)]
pub(crate) struct Function(CudaFunction);

impl CompiledModule {
    pub(crate) fn compile(gpu: &Gpu, source: &str) -> Result<CompiledModule> {
        use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
        // SAFETY: `is_culib_present` only tries `dlopen` on candidate names.
        let present = catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false);
        if !present {
            return Err(Error::DeviceUnavailable(
                "NVRTC (libnvrtc.so) could not be loaded: add the CUDA libraries to LD_LIBRARY_PATH".into(),
            ));
        }
        let src = format!("{PRELUDE}\n{source}");
        // `fmad: false`: NVRTC must not contract a multiply and a following
        // add into one FMA. Within a fused chain it would otherwise contract
        // across steps (even through a select: `min(x * x, u) + c` became
        // `x * x < u ? fma(x, x, c) : u + c` on an H100), and a compiled
        // function would differ from the uncompiled one in the last bit
        // (docs/gpu.md, "compile fuses on GPU streams": fused == unfused,
        // bit for bit). Each op then rounds as the CPU kernels do; kernels
        // that want an FMA call `fmaf` explicitly.
        let opts = CompileOptions { arch: Some(gpu.arch), fmad: Some(false), ..Default::default() };
        let ptx = catch_unwind(AssertUnwindSafe(|| compile_ptx_with_opts(&src, opts)))
            .map_err(|_| Error::Kernel("NVRTC panicked".into()))?
            .map_err(|e| Error::Kernel(format!("NVRTC failed: {e:?}\n--- source ---\n{src}")))?;
        let module = gpu.ctx.load_module(ptx).map_err(|e| driver_err("loading a module", e))?;
        Ok(CompiledModule { module })
    }

    pub(crate) fn function(&self, name: &str) -> Result<Function> {
        self.module.load_function(name).map(Function).map_err(|e| driver_err("loading a kernel", e))
    }
}

/// Kernel arguments, each stored as 8-byte words (pointers, 64-bit
/// integers, doubles and structs of 64-bit integers are all kernels take).
#[derive(Default)]
pub(crate) struct Args(Vec<Vec<u64>>);

impl Args {
    pub fn ptr(&mut self, p: u64) -> &mut Self {
        self.0.push(vec![p]);
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.0.push(vec![v as u64]);
        self
    }
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.0.push(vec![v.to_bits()]);
        self
    }
    /// A `struct P { long long v[N]; }` by value.
    pub fn params(&mut self, v: &[i64]) -> &mut Self {
        let mut w: Vec<u64> = v.iter().map(|&x| x as u64).collect();
        if w.is_empty() {
            w.push(0);
        }
        self.0.push(w);
        self
    }
}

/// What a primitive's kernel file uses to get and launch kernels on one
/// stream.
pub(crate) struct Launcher<'a> {
    pub gpu: &'a Arc<Gpu>,
    pub stream: &'a Arc<StreamHandle>,
    pub cache: &'a mut HashMap<String, Function>,
}

impl Launcher<'_> {
    /// Kernel `name` of the source for `key` (compiled on first use).
    pub fn function(&mut self, key: &str, name: &str, source: impl FnOnce() -> String) -> Result<Function> {
        if let Some(f) = self.cache.get(key) {
            return Ok(f.clone());
        }
        let f = self.gpu.function(key, name, source)?;
        self.cache.insert(key.to_string(), f.clone());
        Ok(f)
    }

    pub fn launch(&self, f: &Function, grid: (u32, u32, u32), block: u32, smem: u32, args: &mut Args) -> Result<()> {
        let mut ptrs: Vec<*mut c_void> = args.0.iter_mut().map(|w| w.as_mut_ptr() as *mut c_void).collect();
        // SAFETY: the function comes from a loaded module of this context
        // (kept alive by the `Function`); `ptrs` points at one value per
        // kernel parameter, laid out as the generated signature declares,
        // and the driver copies them before returning. Device pointers in
        // them point into buffers the caller keeps alive until the kernel
        // has run in stream order (see `memory`).
        unsafe {
            cudarc::driver::result::launch_kernel(
                f.0.cu_function(),
                grid,
                (block, 1, 1),
                smem,
                self.stream.raw(),
                &mut ptrs,
            )
        }
        .map_err(|e| driver_err("launching a kernel", e))
    }

    /// A fresh buffer of `n` elements of `dtype` on this stream.
    pub fn alloc(&self, dtype: Dtype, n: usize) -> Result<CudaBuffer> {
        CudaBuffer::alloc(self.stream, dtype, n)
    }

    /// Blocks for a grid-stride loop over `n` elements.
    pub fn grid_for(&self, n: usize) -> u32 {
        (n.div_ceil(BLOCK as usize)).clamp(1, 1 << 30) as u32
    }
}

// ---------------------------------------------------------------------------
// Types and conversions in the generated code.

pub(crate) fn ctype(d: Dtype) -> &'static str {
    match d {
        Dtype::Bool => "bool",
        Dtype::U8 => "unsigned char",
        Dtype::U16 => "unsigned short",
        Dtype::U32 => "unsigned int",
        Dtype::U64 => "unsigned long long",
        Dtype::I8 => "signed char",
        Dtype::I16 => "short",
        Dtype::I32 => "int",
        Dtype::I64 => "long long",
        Dtype::F16 | Dtype::BF16 => "unsigned short",
        Dtype::F32 => "float",
        Dtype::F64 => "double",
        // Never generated: `kernel_for` sends complex64 work to the host.
        Dtype::C64 => "float2",
    }
}

/// The type arithmetic on `d` happens in.
pub(crate) fn compute_type(d: Dtype) -> &'static str {
    match d {
        Dtype::F16 | Dtype::BF16 => "float",
        d => ctype(d),
    }
}

/// `x` (a stored value of `d`) in the compute type.
pub(crate) fn load(d: Dtype, x: &str) -> String {
    match d {
        Dtype::F16 => format!("h2f({x})"),
        Dtype::BF16 => format!("bf2f({x})"),
        _ => x.to_string(),
    }
}

/// `x` (a compute-type value of `d`) as stored.
pub(crate) fn store(d: Dtype, x: &str) -> String {
    match d {
        Dtype::F16 => format!("f2h({x})"),
        Dtype::BF16 => format!("f2bf({x})"),
        d => format!("(({})({x}))", ctype(d)),
    }
}

/// `x` (a stored value of `d`) as a double, as the CPU's `to_f64`.
pub(crate) fn to_double(d: Dtype, x: &str) -> String {
    match d {
        Dtype::F16 => format!("(double)h2f({x})"),
        Dtype::BF16 => format!("(double)bf2f({x})"),
        _ => format!("(double)({x})"),
    }
}

/// The double `x` as a stored value of `d`, as the CPU's `from_f64`
/// (Rust's `as`: saturating, NaN to 0; `x != 0` for bool).
pub(crate) fn from_double(d: Dtype, x: &str) -> String {
    match d {
        Dtype::Bool => format!("(({x}) != 0.0)"),
        Dtype::U8 => format!("sat_u8({x})"),
        Dtype::U16 => format!("sat_u16({x})"),
        Dtype::U32 => format!("sat_u32({x})"),
        Dtype::U64 => format!("sat_u64({x})"),
        Dtype::I8 => format!("sat_i8({x})"),
        Dtype::I16 => format!("sat_i16({x})"),
        Dtype::I32 => format!("sat_i32({x})"),
        Dtype::I64 => format!("sat_i64({x})"),
        Dtype::F16 => format!("d2h({x})"),
        Dtype::BF16 => format!("d2bf({x})"),
        Dtype::F32 => format!("((float)({x}))"),
        Dtype::F64 => format!("({x})"),
        Dtype::C64 => format!("make_float2((float)({x}), 0.0f)"),
    }
}

pub(crate) fn short(d: Dtype) -> &'static str {
    match d {
        Dtype::Bool => "b",
        Dtype::U8 => "u8",
        Dtype::U16 => "u16",
        Dtype::U32 => "u32",
        Dtype::U64 => "u64",
        Dtype::I8 => "i8",
        Dtype::I16 => "i16",
        Dtype::I32 => "i32",
        Dtype::I64 => "i64",
        Dtype::F16 => "f16",
        Dtype::BF16 => "bf16",
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
        Dtype::C64 => "c64",
    }
}

const PRELUDE: &str = r#"
__device__ __forceinline__ float h2f(unsigned short x) { float r; asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x)); return r; }
__device__ __forceinline__ unsigned short f2h(float x) { unsigned short r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r; }
__device__ __forceinline__ unsigned short d2h(double x) { unsigned short r; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(r) : "d"(x)); return r; }
__device__ __forceinline__ float bf2f(unsigned short x) { return __uint_as_float(((unsigned int)x) << 16); }
__device__ __forceinline__ unsigned short f2bf(float x) {
  unsigned int u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
// double -> bfloat16 in one rounding: to float rounding toward zero with a
// sticky low bit (round to odd), then to nearest even.
__device__ __forceinline__ unsigned short d2bf(double x) {
  float f = __double2float_rz(x);
  if (f == f && (double)f != x) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f2bf(f);
}
__device__ __forceinline__ unsigned char sat_u8(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 255.0 ? 255 : (unsigned char)x; }
__device__ __forceinline__ unsigned short sat_u16(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 65535.0 ? 65535 : (unsigned short)x; }
__device__ __forceinline__ unsigned long long sat_u64(double x) { return x != x ? 0ull : x <= 0.0 ? 0ull : x >= 18446744073709551615.0 ? 18446744073709551615ull : (unsigned long long)x; }
__device__ __forceinline__ signed char sat_i8(double x) { return x != x ? 0 : x <= -128.0 ? -128 : x >= 127.0 ? 127 : (signed char)x; }
__device__ __forceinline__ short sat_i16(double x) { return x != x ? 0 : x <= -32768.0 ? -32768 : x >= 32767.0 ? 32767 : (short)x; }
__device__ __forceinline__ unsigned int sat_u32(double x) { return x != x ? 0u : x <= 0.0 ? 0u : x >= 4294967295.0 ? 4294967295u : (unsigned int)x; }
__device__ __forceinline__ int sat_i32(double x) { return x != x ? 0 : x <= -2147483648.0 ? (-2147483647 - 1) : x >= 2147483647.0 ? 2147483647 : (int)x; }
__device__ __forceinline__ long long sat_i64(double x) { return x != x ? 0ll : x <= -9223372036854775808.0 ? (-9223372036854775807ll - 1) : x >= 9223372036854775807.0 ? 9223372036854775807ll : (long long)x; }
template <typename T> __device__ __forceinline__ T max_nan(T a, T b) { return (a != a) ? a : ((b != b) ? b : ((b > a) ? b : a)); }
template <typename T> __device__ __forceinline__ T min_nan(T a, T b) { return (a != a) ? a : ((b != b) ? b : ((b < a) ? b : a)); }
template <typename T> __device__ __forceinline__ T fdiv_int(T a, T b) { if (b == 0) return 0; T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
template <typename T> __device__ __forceinline__ T rem_int(T a, T b) { if (b == 0) return 0; T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
__device__ __forceinline__ float rem_f(float a, float b) { float r = fmodf(a, b); return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r; }
__device__ __forceinline__ double rem_d(double a, double b) { double r = fmod(a, b); return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r; }
template <typename U> __device__ __forceinline__ U ipow(U b, unsigned int e) { U r = 1; while (e) { if (e & 1u) r *= b; b *= b; e >>= 1; } return r; }
template <typename T> struct alignas(4 * sizeof(T)) Vec { T v[4]; };
__device__ __forceinline__ float inf_f() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double inf_d() { return __longlong_as_double(0x7ff0000000000000ll); }
__device__ __forceinline__ float nan_f() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double nan_d() { return __longlong_as_double(0x7ff8000000000000ll); }
__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float log_(float x) { return logf(x); }
__device__ __forceinline__ double log_(double x) { return log(x); }
__device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
// The larger of two values ignoring NaN (Rust's f32::max).
template <typename T> __device__ __forceinline__ T max_ign(T a, T b) { return (a != a) ? b : ((b != b) ? a : ((b > a) ? b : a)); }
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> __device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max_ign(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide sum / max (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. `sh` holds 32 values of shared memory.
template <typename T> __device__ __forceinline__ T block_sum(T v, T* sh) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < (blockDim.x >> 5) ? sh[threadIdx.x & 31] : (T)0;
  return warp_sum(v);
}
template <typename T> __device__ __forceinline__ T block_max(T v, T* sh, T lowest) {
  v = warp_max(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < (blockDim.x >> 5) ? sh[threadIdx.x & 31] : lowest;
  return warp_max(v);
}
"#;

// ---------------------------------------------------------------------------
// Elementwise kernels over a broadcast shape.

/// How one operand is indexed by the flat index `i` of the iteration.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Element `i`.
    Contiguous,
    /// Element 0 (a broadcast scalar).
    Scalar,
    /// Through the strides.
    Strided,
}

fn mode(l: &Layout) -> Mode {
    if l.is_contiguous() {
        Mode::Contiguous
    } else if l.is_scalar_broadcast() {
        Mode::Scalar
    } else {
        Mode::Strided
    }
}

/// Drops size-1 dimensions and merges neighbours that are contiguous with
/// each other in every operand: fewer dimensions, cheaper index arithmetic.
pub(crate) fn collapse(shape: &[usize], strides: &[Vec<isize>]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let mut sh: Vec<usize> = Vec::new();
    let mut st: Vec<Vec<isize>> = vec![Vec::new(); strides.len()];
    for d in keep {
        let merge = !sh.is_empty()
            && strides.iter().enumerate().all(|(k, s)| *st[k].last().unwrap() == s[d] * shape[d] as isize);
        if merge {
            *sh.last_mut().unwrap() *= shape[d];
            for (k, s) in strides.iter().enumerate() {
                *st[k].last_mut().unwrap() = s[d];
            }
        } else {
            sh.push(shape[d]);
            for (k, s) in strides.iter().enumerate() {
                st[k].push(s[d]);
            }
        }
    }
    (sh, st)
}

/// A destination for an elementwise kernel: a device pointer (offset
/// applied) and the layout of the iteration shape in it.
pub(crate) struct Dest {
    pub ptr: u64,
    pub layout: Layout,
    pub dtype: Dtype,
}

/// Launches `out[i] = expr(x0, x1, ...)` over `shape`, where `xk` is input
/// `k`'s stored value at `i` (inputs broadcast to `shape`) and `expr` gives
/// the stored value of `dest.dtype`. `tag` names the expression in the
/// kernel cache (same tag, same expression).
pub(crate) fn elementwise_into(
    k: &mut Launcher<'_>,
    tag: &str,
    inputs: &[&Operand],
    dest: &Dest,
    shape: &[usize],
    expr: &str,
) -> Result<()> {
    elementwise_src(k, tag, inputs, dest, shape, "", expr)
}

/// `elementwise_into` with `helpers`, device functions `expr` may call,
/// placed before the kernel; `tag` must name both.
fn elementwise_src(
    k: &mut Launcher<'_>,
    tag: &str,
    inputs: &[&Operand],
    dest: &Dest,
    shape: &[usize],
    helpers: &str,
    expr: &str,
) -> Result<()> {
    let n = crate::shape::numel(shape);
    if n == 0 {
        return Ok(());
    }
    let layouts: Vec<Layout> = inputs.iter().map(|o| o.layout.broadcast_to(shape)).collect();
    let out_mode = if dest.layout.is_contiguous() { Mode::Contiguous } else { Mode::Strided };
    let modes: Vec<Mode> = layouts.iter().map(mode).collect();
    let any_strided = out_mode == Mode::Strided || modes.contains(&Mode::Strided);
    let (dims, strides) = if any_strided {
        let mut all = vec![dest.layout.strides.clone()];
        all.extend(layouts.iter().map(|l| l.strides.clone()));
        collapse(shape, &all)
    } else {
        (Vec::new(), Vec::new())
    };
    let nd = dims.len();
    // Contiguous operands aligned for whole groups of VEC elements: each
    // thread moves VEC elements with wide loads and stores.
    let aligned = |ptr: u64, d: Dtype| ptr % (VEC * d.size()) as u64 == 0;
    let vector = !any_strided
        && n >= VEC
        && aligned(dest.ptr, dest.dtype)
        && inputs.iter().zip(&modes).all(|(o, m)| *m == Mode::Scalar || aligned(o.ptr, o.dtype));
    let mut key = format!("ew|{tag}|{}|{}", short(dest.dtype), if out_mode == Mode::Strided { 's' } else { 'c' });
    if vector {
        key.push_str("|v");
    }
    for (o, m) in inputs.iter().zip(&modes) {
        let _ = write!(key, "|{}{}", short(o.dtype), match m {
            Mode::Contiguous => 'c',
            Mode::Scalar => '0',
            Mode::Strided => 's',
        });
    }
    let _ = write!(key, "|{nd}");
    let f = k.function(&key, "ew", || {
        let mut s = helpers.to_string();
        let nv = (nd * (inputs.len() + 2)).max(1);
        let _ = writeln!(s, "struct P {{ long long v[{nv}]; }};");
        let _ = write!(s, "extern \"C\" __global__ void ew({}* __restrict__ out", ctype(dest.dtype));
        for (i, o) in inputs.iter().enumerate() {
            let _ = write!(s, ", const {}* __restrict__ in{i}", ctype(o.dtype));
        }
        let _ = writeln!(s, ", long long n, P p) {{");
        s.push_str("  long long step = (long long)blockDim.x * gridDim.x;\n");
        s.push_str("  long long first = 0;\n");
        if vector {
            let _ = writeln!(s, "  long long nv = n / {VEC};");
            s.push_str("  for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < nv; q += step) {\n");
            for (i, (o, m)) in inputs.iter().zip(&modes).enumerate() {
                let t = ctype(o.dtype);
                match m {
                    Mode::Scalar => { let _ = writeln!(s, "    {t} x{i} = in{i}[0];"); }
                    _ => { let _ = writeln!(s, "    Vec<{t}> v{i} = ((const Vec<{t}>*)in{i})[q];"); }
                }
            }
            let _ = writeln!(s, "    Vec<{}> r;", ctype(dest.dtype));
            let _ = writeln!(s, "    #pragma unroll\n    for (int e = 0; e < {VEC}; ++e) {{");
            for (i, (o, m)) in inputs.iter().zip(&modes).enumerate() {
                if *m != Mode::Scalar {
                    let _ = writeln!(s, "      {} x{i} = v{i}.v[e];", ctype(o.dtype));
                }
            }
            let _ = writeln!(s, "      r.v[e] = {expr};\n    }}");
            let _ = writeln!(s, "    ((Vec<{}>*)out)[q] = r;\n  }}", ctype(dest.dtype));
            let _ = writeln!(s, "  first = nv * {VEC};");
        }
        s.push_str("  for (long long i = first + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n");
        if any_strided {
            // Operand k's strides are p.v[nd * (k + 1) ..]; operand 0 is the output.
            s.push_str("    long long r = i;\n");
            for kk in 0..=inputs.len() {
                let _ = writeln!(s, "    long long o{kk} = 0;");
            }
            for d in (0..nd).rev() {
                let _ = write!(s, "    {{ long long c = r % p.v[{d}]; r /= p.v[{d}];");
                for kk in 0..=inputs.len() {
                    let _ = write!(s, " o{kk} += c * p.v[{}];", nd * (kk + 1) + d);
                }
                s.push_str(" }\n");
            }
        }
        for (i, (o, m)) in inputs.iter().zip(&modes).enumerate() {
            let idx = match m {
                Mode::Contiguous => "i".to_string(),
                Mode::Scalar => "0".to_string(),
                Mode::Strided => format!("o{}", i + 1),
            };
            let _ = writeln!(s, "    {} x{i} = in{i}[{idx}];", ctype(o.dtype));
        }
        let oidx = if out_mode == Mode::Strided { "o0" } else { "i" };
        let _ = writeln!(s, "    out[{oidx}] = {expr};");
        s.push_str("  }\n}\n");
        s
    })?;
    let mut args = Args::default();
    args.ptr(dest.ptr);
    for o in inputs {
        args.ptr(o.ptr);
    }
    args.i64(n as i64);
    let mut p: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    for s in &strides {
        p.extend(s.iter().map(|&x| x as i64));
    }
    args.params(&p);
    let grid = k.grid_for(if vector { n / VEC } else { n });
    k.launch(&f, (grid, 1, 1), BLOCK, 0, &mut args)
}

/// `elementwise_into` a fresh contiguous buffer of `dtype` and `shape`.
pub(crate) fn elementwise(
    k: &mut Launcher<'_>,
    tag: &str,
    inputs: &[&Operand],
    dtype: Dtype,
    shape: &[usize],
    expr: &str,
) -> Result<CudaBuffer> {
    elementwise_with(k, tag, inputs, dtype, shape, "", expr)
}

/// `elementwise` with `helpers`, device functions `expr` may call (a fused
/// chain's function: `fused.rs`); `tag` must name both.
pub(crate) fn elementwise_with(
    k: &mut Launcher<'_>,
    tag: &str,
    inputs: &[&Operand],
    dtype: Dtype,
    shape: &[usize],
    helpers: &str,
    expr: &str,
) -> Result<CudaBuffer> {
    let out = k.alloc(dtype, crate::shape::numel(shape))?;
    let dest = Dest { ptr: out.ptr(), layout: Layout::contiguous(shape), dtype };
    elementwise_src(k, tag, inputs, &dest, shape, helpers, expr)?;
    Ok(out)
}
