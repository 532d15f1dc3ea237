//! Helpers shared by the row-wise kernels (softmax, norms, rope, sort,
//! attention, gathers): strided addressing of rows in generated code, block
//! sizes, and the float type a row accumulates in.
//!
//! Inputs are read in place through their strides (a transpose or a
//! broadcast costs no copy): the dimensions before the last are collapsed
//! and walked once per row, the last is a single stride.

use super::kernel::{collapse, ctype, load, short, Args, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::shape::Layout;
use crate::{Error, Result};
use std::fmt::Write;

/// C code declaring `long long {var}`, the offset of flat index `{idx}` over
/// dimensions whose sizes are `p.v[shape_at..shape_at + n]` and strides
/// `p.v[stride_at..stride_at + n]`.
pub(crate) fn walk(var: &str, idx: &str, shape_at: usize, stride_at: usize, n: usize) -> String {
    let mut w = format!("long long {var} = 0; {{ long long r_ = {idx};");
    for d in (0..n).rev() {
        let _ = write!(
            w,
            " {{ long long c_ = r_ % p.v[{}]; r_ /= p.v[{}]; {var} += c_ * p.v[{}]; }}",
            shape_at + d,
            shape_at + d,
            stride_at + d
        );
    }
    w.push_str(" }");
    w
}

/// An operand seen as rows along its last axis.
pub(crate) struct Rows {
    /// Rows (the product of the leading dimensions).
    pub rows: usize,
    /// Elements per row.
    pub len: usize,
    /// The stride between neighbours in a row.
    pub inner: isize,
    outer_shape: Vec<usize>,
    outer_strides: Vec<isize>,
}

impl Rows {
    pub(crate) fn new(l: &Layout) -> Rows {
        let nd = l.shape.len();
        if nd == 0 {
            return Rows { rows: 1, len: 1, inner: 0, outer_shape: vec![], outer_strides: vec![] };
        }
        let len = l.shape[nd - 1];
        let (os, ost) = collapse(&l.shape[..nd - 1], &[l.strides[..nd - 1].to_vec()]);
        Rows {
            rows: l.shape[..nd - 1].iter().product(),
            len,
            inner: if len == 1 { 0 } else { l.strides[nd - 1] },
            outer_strides: ost.into_iter().next().unwrap_or_default(),
            outer_shape: os,
        }
    }

    /// Collapsed leading dimensions.
    pub(crate) fn nd(&self) -> usize {
        self.outer_shape.len()
    }

    /// Appends this operand's parameters (sizes, then strides) to `p` and
    /// returns the C code declaring `long long {var}`, the offset of row
    /// `{row}` (the parameters are read from `p.v[at..]`, `at = p.len()`
    /// before the call).
    pub(crate) fn base(&self, var: &str, row: &str, p: &mut Vec<i64>) -> String {
        let at = p.len();
        p.extend(self.outer_shape.iter().map(|&x| x as i64));
        p.extend(self.outer_strides.iter().map(|&x| x as i64));
        walk(var, row, at, at + self.nd(), self.nd())
    }

    /// A cache key part naming the layout class (the collapsed rank).
    pub(crate) fn key(&self) -> String {
        format!("r{}", self.nd())
    }
}

/// What the body of a [`row_kernel`] is written with.
pub(crate) struct RowSource<'a> {
    /// The element's C type.
    pub t: &'static str,
    /// The accumulator's C type (see [`acc_type`]).
    pub acc: &'static str,
    /// The element's dtype, for `load`/`store` of further operands.
    pub dtype: Dtype,
    /// Element `j` of this row (`x[j * inner]`, converted to `t`'s load).
    pub x: &'a str,
}

/// A kernel with one block per row of `a` along its last axis, as
/// softmax, logsumexp and the norms are written. The generated kernel is
///
/// ```c
/// void NAME(T* out, const T* in, long long rows, long long len,
///           long long inner EXTRA, P p) {
///   __shared__ ACC sh[32];                       // for block_sum/block_max
///   for (row = blockIdx.x; row < rows; row += gridDim.x) {
///     long long base = ...;                      // the row's offset
///     const T* x = in + base;
///     BODY
///   }
/// }
/// ```
///
/// `key` names the kernel beyond its dtype and layout class; `extra` are
/// the C parameters after `inner` (each starting with `, `) and `extra_args`
/// pushes their values. Nothing is launched when the output is empty.
pub(crate) fn row_kernel(
    k: &mut Launcher<'_>,
    name: &'static str,
    key: &str,
    a: &Operand,
    out: OutSpec<'_>,
    extra: &str,
    body: impl FnOnce(&RowSource<'_>) -> String,
    extra_args: impl FnOnce(&mut Args),
) -> Result<CudaBuffer> {
    let d = a.dtype;
    let acc = acc_type(d, name)?;
    let r = Rows::new(&a.layout);
    let n = crate::shape::numel(out.shape);
    let buf = k.alloc(out.dtype, n)?;
    if n == 0 {
        return Ok(buf);
    }
    let mut p = Vec::new();
    let base = r.base("base", "row", &mut p);
    let f = k.function(&format!("{name}|{key}|{}|{}", short(d), r.key()), name, || {
        let t = ctype(d);
        let x = load(d, "x[j * inner]");
        let body = body(&RowSource { t, acc, dtype: d, x: &x });
        format!(
            "{ps}extern \"C\" __global__ void {name}({t}* out, const {t}* in, long long rows, long long len, long long inner{extra}, P p) {{\n\
             \x20 __shared__ {acc} sh[32];\n\
             \x20 for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
             \x20   {base}\n\
             \x20   const {t}* x = in + base;\n\
             {body}\n\
             \x20 }}\n}}\n",
            ps = params_struct(p.len()),
        )
    })?;
    let mut args = Args::default();
    args.ptr(buf.ptr()).ptr(a.ptr).i64(r.rows as i64).i64(r.len as i64).i64(r.inner as i64);
    extra_args(&mut args);
    args.params(&p);
    k.launch(&f, (grid_rows(r.rows), 1, 1), threads_for(r.len), 0, &mut args)?;
    Ok(buf)
}

/// `struct P { long long v[n]; }` for `n` parameters.
pub(crate) fn params_struct(n: usize) -> String {
    format!("struct P {{ long long v[{}]; }};\n", n.max(1))
}

/// Threads for one block per row of `len` elements: a multiple of 32, up
/// to 1024 for long rows.
pub(crate) fn threads_for(len: usize) -> u32 {
    if len >= 8192 {
        1024
    } else if len >= 256 {
        256
    } else {
        (len.max(1).div_ceil(32) * 32) as u32
    }
}

/// Blocks for one block per row (a grid-stride loop covers the rest).
pub(crate) fn grid_rows(rows: usize) -> u32 {
    rows.clamp(1, 1 << 30) as u32
}

/// The float type a row of `d` accumulates in, as the CPU's `FloatElem::A`
/// (`float` for half types and float32, `double` for float64), or a dtype
/// error naming `what`.
pub(crate) fn acc_type(d: Dtype, what: &str) -> Result<&'static str> {
    match d {
        Dtype::F16 | Dtype::BF16 | Dtype::F32 => Ok("float"),
        Dtype::F64 => Ok("double"),
        d => Err(Error::Dtype(format!("{what} needs a float input, got {d}"))),
    }
}

/// `+inf`, `-inf` and NaN in the accumulator type `acc`.
pub(crate) fn inf(acc: &str) -> &'static str {
    if acc == "double" { "inf_d()" } else { "inf_f()" }
}

pub(crate) fn nan(acc: &str) -> &'static str {
    if acc == "double" { "nan_d()" } else { "nan_f()" }
}

/// `n` elements times `size` bytes, or an error instead of wrapping.
pub(crate) fn checked_bytes(n: usize, size: usize) -> Result<usize> {
    n.checked_mul(size).ok_or_else(|| Error::InvalidArgument(format!("{n} elements of {size} bytes overflow usize")))
}

/// `a * b` for element counts, or an error instead of wrapping.
pub(crate) fn checked_mul(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| Error::InvalidArgument(format!("{a} x {b} elements overflow usize")))
}
