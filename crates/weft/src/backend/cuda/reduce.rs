//! `Reduce` and `ArgReduce`.
//!
//! Kept and reduced dimensions are collapsed separately; then either one
//! thread per output walks its reduced elements (few elements each, or many
//! outputs read side by side), or one block per output splits them among
//! its threads and combines in shared memory. A large reduction into few
//! outputs runs in two passes: blocks over chunks, then over the partials.
//! Sums of `float16`/`bfloat16` accumulate in float, integer sums wrap.

use super::kernel::{collapse, compute_type, ctype, load, short, store, Args, Launcher, BLOCK};
use super::memory::CudaBuffer;
use super::rows::{params_struct, walk};
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::{ArgReduceOp, OutSpec, ReduceOp};
use crate::Result;
use std::fmt::Write;

/// What the generated reduction computes, as C snippets.
struct Spec {
    /// A name for the kernel cache (same name, same snippets).
    tag: String,
    /// Declarations the snippets need (the accumulator struct).
    decl: String,
    in_t: String,
    /// `{x}` -> the stored input value in the accumulator's terms.
    load: String,
    acc_t: String,
    init: String,
    /// Body of `merge(acc_t a, acc_t b)`.
    merge: String,
    /// `{j}`: the element's index along the reduction (for arg reductions).
    lift: String,
    out_t: String,
    /// `{a}` -> the stored output.
    fin: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    ThreadPerOutput,
    BlockPerOutput,
}

struct Geometry {
    keep_shape: Vec<usize>,
    keep_strides: Vec<isize>,
    red_shape: Vec<usize>,
    red_strides: Vec<isize>,
}

impl Geometry {
    fn new(l: &crate::shape::Layout, axes: &[usize]) -> Geometry {
        let (mut ks, mut kst, mut rs, mut rst) = (vec![], vec![], vec![], vec![]);
        for d in 0..l.shape.len() {
            if axes.contains(&d) {
                rs.push(l.shape[d]);
                rst.push(l.strides[d]);
            } else {
                ks.push(l.shape[d]);
                kst.push(l.strides[d]);
            }
        }
        let (ks, kst) = collapse(&ks, &[kst]);
        let (rs, rst) = collapse(&rs, &[rst]);
        Geometry {
            keep_shape: ks,
            keep_strides: kst.into_iter().next().unwrap_or_default(),
            red_shape: rs,
            red_strides: rst.into_iter().next().unwrap_or_default(),
        }
    }

    fn params(&self) -> Vec<i64> {
        let mut p: Vec<i64> = self.keep_shape.iter().map(|&x| x as i64).collect();
        p.extend(self.keep_strides.iter().map(|&x| x as i64));
        p.extend(self.red_shape.iter().map(|&x| x as i64));
        p.extend(self.red_strides.iter().map(|&x| x as i64));
        p
    }
}

fn source(s: &Spec, g: &Geometry, v: Variant) -> String {
    let (nk, nr) = (g.keep_shape.len(), g.red_shape.len());
    let nv = (2 * nk + 2 * nr).max(1);
    let mut c = String::new();
    c.push_str(&params_struct(nv));
    let _ = writeln!(c, "{}", s.decl);
    let _ = writeln!(
        c,
        "__device__ __forceinline__ {a} merge({a} a, {a} b) {{ {m} }}",
        a = s.acc_t,
        m = s.merge
    );
    // Offsets: keep dims at p.v[0..nk] (shape) and p.v[nk..2nk] (strides),
    // reduced dims at p.v[2nk..2nk+nr] and p.v[2nk+nr..].
    let base = walk("base", "o", 0, nk, nk);
    let off = walk("off", "j", 2 * nk, 2 * nk + nr, nr);
    let lift = s.lift.replace("{x}", &s.load.replace("{x}", "in[base + off]"));
    let fin = s.fin.replace("{a}", "acc");
    let _ = writeln!(
        c,
        "extern \"C\" __global__ void red({o}* out, const {i}* in, long long nout, long long R, long long chunk, P p) {{",
        o = s.out_t,
        i = s.in_t
    );
    match v {
        Variant::ThreadPerOutput => {
            let _ = writeln!(
                c,
                "  long long step = (long long)blockDim.x * gridDim.x;\n\
                 \x20 for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < nout; o += step) {{\n\
                 \x20   {base}\n\
                 \x20   {a} acc = {init};\n\
                 \x20   for (long long j = 0; j < R; ++j) {{ {off} acc = merge(acc, {lift}); }}\n\
                 \x20   out[o] = {fin};\n  }}\n}}",
                a = s.acc_t,
                init = s.init,
            );
        }
        Variant::BlockPerOutput => {
            let _ = writeln!(
                c,
                "  __shared__ {a} sh[{BLOCK}];\n\
                 \x20 long long o = blockIdx.x;\n\
                 \x20 long long part = blockIdx.y;\n\
                 \x20 {base}\n\
                 \x20 long long lo = part * chunk;\n\
                 \x20 long long hi = lo + chunk < R ? lo + chunk : R;\n\
                 \x20 {a} acc = {init};\n\
                 \x20 for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x) {{ {off} acc = merge(acc, {lift}); }}\n\
                 \x20 sh[threadIdx.x] = acc;\n\
                 \x20 __syncthreads();\n\
                 \x20 for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {{\n\
                 \x20   if (threadIdx.x < s) sh[threadIdx.x] = merge(sh[threadIdx.x], sh[threadIdx.x + s]);\n\
                 \x20   __syncthreads();\n\
                 \x20 }}\n\
                 \x20 if (threadIdx.x == 0) {{ {a} acc = sh[0]; out[o * gridDim.y + part] = {fin}; }}\n}}",
                a = s.acc_t,
                init = s.init,
            );
        }
    }
    c
}

/// Runs `spec` over `a` reduced along `axes`; `nout` outputs.
fn run(k: &mut Launcher<'_>, s: &Spec, a: &Operand, axes: &[usize], two_pass: Option<&Spec>, out_dtype: Dtype) -> Result<CudaBuffer> {
    let g = Geometry::new(&a.layout, axes);
    let nout: usize = g.keep_shape.iter().product();
    let r: usize = g.red_shape.iter().product();
    let out = k.alloc(out_dtype, nout)?;
    if nout == 0 {
        return Ok(out);
    }
    let contiguous_reduce = g.red_strides.last().is_none_or(|&s| s == 1);
    let v = if r < 64 || (!contiguous_reduce && nout >= 1024) {
        Variant::ThreadPerOutput
    } else {
        Variant::BlockPerOutput
    };
    let sms = k.gpu.sm_count as usize;
    let parts = match (v, two_pass) {
        // Chunks of at least 2048 elements, about 8 blocks per SM in all.
        (Variant::BlockPerOutput, Some(_)) if nout < 2 * sms && r >= 1 << 14 => {
            ((8 * sms) / nout).clamp(1, (r / 2048).max(1)).min(65535)
        }
        _ => 1,
    };
    let key = |s: &Spec| {
        format!("red|{}|{}|{}|{}", s.tag, g.keep_shape.len(), g.red_shape.len(), v as u8)
    };
    let launch = |k: &mut Launcher<'_>, s: &Spec, dst: u64, parts: usize| -> Result<()> {
        let f = k.function(&key(s), "red", || source(s, &g, v))?;
        let mut args = Args::default();
        args.ptr(dst).ptr(a.ptr).i64(nout as i64).i64(r as i64).i64(r.div_ceil(parts) as i64).params(&g.params());
        let grid = match v {
            Variant::ThreadPerOutput => (k.grid_for(nout), 1, 1),
            Variant::BlockPerOutput => (nout as u32, parts as u32, 1),
        };
        k.launch(&f, grid, BLOCK, 0, &mut args)
    };
    if parts == 1 {
        launch(k, s, out.ptr(), 1)?;
        return Ok(out);
    }
    // Pass 1 into [nout, parts] partials of the accumulator's type, then
    // reduce those (a contiguous last axis) into the output.
    let (pass1, pass2) = (&partial_spec(s), two_pass.expect("checked above"));
    let (acc_dtype, words) = acc_dtype(&s.acc_t);
    let tmp = k.alloc(acc_dtype, nout * parts * words)?;
    launch(k, pass1, tmp.ptr(), parts)?;
    let t = Operand { ptr: tmp.ptr(), layout: crate::shape::Layout::contiguous(&[nout, parts]), dtype: acc_dtype };
    let g2 = Geometry::new(&t.layout, &[1]);
    let f = k.function(&format!("red|{}|{}|{}|{}", pass2.tag, g2.keep_shape.len(), g2.red_shape.len(), 1), "red", || {
        source(pass2, &g2, Variant::BlockPerOutput)
    })?;
    let mut args = Args::default();
    args.ptr(out.ptr()).ptr(t.ptr).i64(nout as i64).i64(parts as i64).i64(parts as i64).params(&g2.params());
    k.launch(&f, (nout as u32, 1, 1), BLOCK, 0, &mut args)?;
    Ok(out)
}

/// The spec of pass 1 of a two-pass reduction: the accumulator out as is.
fn partial_spec(s: &Spec) -> Spec {
    Spec {
        tag: format!("{}|partial", s.tag),
        decl: s.decl.clone(),
        in_t: s.in_t.clone(),
        load: s.load.clone(),
        acc_t: s.acc_t.clone(),
        init: s.init.clone(),
        merge: s.merge.clone(),
        lift: s.lift.clone(),
        out_t: s.acc_t.clone(),
        fin: "{a}".into(),
    }
}

/// A dtype of the accumulator's size and alignment, and how many of it
/// one accumulator takes.
fn acc_dtype(acc_t: &str) -> (Dtype, usize) {
    match acc_t {
        "float" => (Dtype::F32, 1),
        "double" => (Dtype::F64, 1),
        "unsigned int" => (Dtype::U32, 1),
        "unsigned long long" | "long long" => (Dtype::I64, 1),
        "int" => (Dtype::I32, 1),
        "bool" => (Dtype::Bool, 1),
        // `struct Arg { <value type of at most 8 bytes> v; long long i; }`:
        // 16 bytes, 8-aligned.
        "Arg" => (Dtype::U64, 2),
        _ => (Dtype::U8, 1),
    }
}

/// The accumulator type, identity and combination of `op` on `d`.
fn op_parts(op: ReduceOp, d: Dtype) -> (String, String, String) {
    let ct = compute_type(d);
    let acc = match (op, d) {
        // Integer sums and products wrap in the unsigned type of their width.
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::U16 | Dtype::U32 | Dtype::U8) => {
            "unsigned int"
        }
        (ReduceOp::Sum | ReduceOp::Prod, Dtype::I64 | Dtype::U64) => "unsigned long long",
        _ => ct,
    };
    let (lo, hi) = limits(d);
    let float = d.is_float();
    let (init, merge) = match op {
        ReduceOp::Sum if d == Dtype::Bool => ("false".to_string(), "return a | b;".to_string()),
        ReduceOp::Sum => ("0".to_string(), "return a + b;".to_string()),
        ReduceOp::Prod if d == Dtype::Bool => ("true".to_string(), "return a & b;".to_string()),
        ReduceOp::Prod => ("1".to_string(), "return a * b;".to_string()),
        ReduceOp::Max if float => (lo.to_string(), format!("return max_nan<{acc}>(a, b);")),
        ReduceOp::Min if float => (hi.to_string(), format!("return min_nan<{acc}>(a, b);")),
        ReduceOp::Max => (lo.to_string(), "return b > a ? b : a;".to_string()),
        ReduceOp::Min => (hi.to_string(), "return b < a ? b : a;".to_string()),
    };
    (acc.to_string(), init, merge)
}

pub(crate) fn reduce(k: &mut Launcher<'_>, op: ReduceOp, axes: &[usize], a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let d = a.dtype;
    let (acc, init, merge) = op_parts(op, d);
    let s = Spec {
        tag: format!("{op:?}|{}|{}", short(d), short(out.dtype)),
        decl: String::new(),
        in_t: ctype(d).into(),
        load: format!("(({acc}){})", load(d, "{x}")),
        acc_t: acc.clone(),
        init: init.clone(),
        merge: merge.clone(),
        lift: "{x}".into(),
        out_t: ctype(out.dtype).into(),
        fin: store(out.dtype, "{a}"),
    };
    let pass2 = Spec {
        tag: format!("{op:?}|{}|{}|final", short(d), short(out.dtype)),
        decl: String::new(),
        in_t: acc.clone(),
        load: "{x}".into(),
        acc_t: acc,
        init,
        merge,
        lift: "{x}".into(),
        out_t: ctype(out.dtype).into(),
        fin: store(out.dtype, "{a}"),
    };
    run(k, &s, a, axes, Some(&pass2), out.dtype)
}

pub(crate) fn arg_reduce(k: &mut Launcher<'_>, op: ArgReduceOp, axis: usize, a: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let d = a.dtype;
    let ct = compute_type(d);
    let better = if op == ArgReduceOp::ArgMax { ">" } else { "<" };
    // Ties and NaN as NumPy: the first maximum (minimum) wins; NaN beats
    // every number.
    let merge = format!(
        "if (a.i < 0) return b; if (b.i < 0) return a; \
         bool an = a.v != a.v, bn = b.v != b.v; \
         if (an || bn) {{ if (an && bn) return a.i < b.i ? a : b; return an ? a : b; }} \
         if (b.v {better} a.v) return b; if (a.v {better} b.v) return a; return a.i < b.i ? a : b;"
    );
    let acc_t = "Arg".to_string();
    let s = Spec {
        tag: format!("{op:?}|{}", short(d)),
        decl: format!("struct Arg {{ {ct} v; long long i; }};"),
        in_t: ctype(d).into(),
        load: load(d, "{x}"),
        init: format!("{acc_t}{{({ct})0, -1ll}}"),
        acc_t: acc_t.clone(),
        merge: merge.clone(),
        lift: "Arg{{x}, j}".into(),
        out_t: "unsigned int".into(),
        fin: "((unsigned int)({a}).i)".into(),
    };
    // Pass 2 of a long reduction merges the partial (value, index) pairs,
    // each of which keeps the index of its element.
    let pass2 = Spec {
        tag: format!("{op:?}|{}|final", short(d)),
        decl: s.decl.clone(),
        in_t: acc_t.clone(),
        load: "{x}".into(),
        init: s.init.clone(),
        acc_t,
        merge,
        lift: "{x}".into(),
        out_t: s.out_t.clone(),
        fin: s.fin.clone(),
    };
    run(k, &s, a, &[axis], Some(&pass2), out.dtype)
}

/// The lowest and highest value of `d`, as CUDA C literals (infinities for
/// floats): the identities of max and min.
pub(super) fn limits(d: Dtype) -> (&'static str, &'static str) {
    match d {
        // Never generated: `kernel_for` sends complex64 to the host.
        Dtype::F16 | Dtype::BF16 | Dtype::F32 | Dtype::C64 => ("(-inf_f())", "inf_f()"),
        Dtype::F64 => ("(-inf_d())", "inf_d()"),
        Dtype::Bool => ("false", "true"),
        Dtype::U8 => ("0", "255"),
        Dtype::U16 => ("0", "65535"),
        Dtype::U32 => ("0u", "4294967295u"),
        Dtype::U64 => ("0ull", "18446744073709551615ull"),
        Dtype::I8 => ("(-128)", "127"),
        Dtype::I16 => ("(-32768)", "32767"),
        Dtype::I32 => ("(-2147483647 - 1)", "2147483647"),
        Dtype::I64 => ("(-9223372036854775807ll - 1)", "9223372036854775807ll"),
    }
}
