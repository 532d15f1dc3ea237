//! `Quantize`, `Dequantize`, `QuantizedMatmul`: affine codes packed as one
//! little-endian bit stream per row in `uint32` words (`ops/quantized.rs`).
//!
//! `QuantizedMatmul` never expands the weight matrix: each task decodes a
//! small block of it (at most [`DECODE_BLOCK`] floats) into a scratch buffer
//! and multiplies that block with `gemm`, accumulating over the contracted
//! axis block by block. Tasks own disjoint output columns of one batch
//! matrix and run on the worker pool. Activations are read as float32 and
//! accumulated in float32 (float16, bfloat16, float32 and float64 in and
//! out).
//!
//! With `int8_activations` the rows of `x` are first rounded to int8 per
//! block of 32 (`int8.rs` says how); up to [`QMV_MAX_ROWS`] rows against a
//! transposed 4- or 8-bit matrix then run as integer dot products
//! ([`int8::qmv`]), and every other case multiplies the rounded rows in
//! float, so both compute the same product up to float rounding.

use super::matmul::batch_offset;
use super::rows::build_rows;
use super::{to_vec, PARALLEL_MIN};
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::dtype::{Dtype, Element};
use crate::primitive::OutSpec;
use crate::{Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::borrow::Cow;

/// Multiply-adds (`M * N * K` over the batch) from which tasks run in parallel.
const PARALLEL_FLOPS: usize = 1 << 18;
/// Floats a task decodes at a time (per `gemm` call).
const DECODE_BLOCK: usize = 1 << 15;

/// Decodes one group: `out[j] = scale * q_j + bias` for the codes in `words`
/// (`out.len() * B / 32` words). `FMA`: whether `mul_add` compiles to an
/// instruction where this is inlined (it is a library call otherwise, so the
/// baseline build multiplies and adds).
#[inline(always)]
fn decode_group<const B: u32, const FMA: bool>(words: &[u32], scale: f32, bias: f32, out: &mut [f32]) {
    let mask = (1u64 << B) - 1;
    if 32 % B == 0 {
        // A word holds `32 / B` whole codes, unrolled into lanes.
        let per = (32 / B) as usize;
        for (w, o) in words.iter().zip(out.chunks_mut(per)) {
            for (j, v) in o.iter_mut().enumerate() {
                *v = fma::<FMA>(((*w as u64 >> (j as u32 * B)) & mask) as f32, scale, bias);
            }
        }
    } else {
        // Codes straddle words: a 64-bit window refilled 32 bits at a time.
        let (mut acc, mut have, mut next) = (0u64, 0u32, words.iter());
        for v in out.iter_mut() {
            if have < B {
                acc |= (next.next().copied().unwrap_or(0) as u64) << have;
                have += 32;
            }
            *v = fma::<FMA>((acc & mask) as f32, scale, bias);
            acc >>= B;
            have -= B;
        }
    }
}

type Decoder = fn(&[u32], f32, f32, &mut [f32]);

fn decoder(bits: u32) -> Result<Decoder> {
    Ok(match bits {
        1 => decode_group::<1, false>,
        2 => decode_group::<2, false>,
        3 => decode_group::<3, false>,
        4 => decode_group::<4, false>,
        5 => decode_group::<5, false>,
        6 => decode_group::<6, false>,
        8 => decode_group::<8, false>,
        b => return Err(Error::Kernel(format!("quantized: unsupported bits {b}"))),
    })
}

/// A quantized row segment: groups `g0..g0 + out.len() / gs` of a row whose
/// codes are `words` and whose scales and biases are `s`, `b`.
struct Row<'a, S> {
    words: &'a [u32],
    s: &'a [S],
    b: &'a [S],
}

impl<S: Element> Row<'_, S> {
    /// Decodes groups `g0..` into `out` with `dec`: a [`Decoder`] chosen
    /// at run time, or a `decode_group::<B, FMA>` inlined into its caller.
    #[inline(always)]
    fn decode(&self, dec: impl Fn(&[u32], f32, f32, &mut [f32]), gs: usize, bits: u32, g0: usize, out: &mut [f32]) {
        let wpg = gs * bits as usize / 32;
        for (i, o) in out.chunks_mut(gs).enumerate() {
            let g = g0 + i;
            dec(&self.words[g * wpg..(g + 1) * wpg], self.s[g].to_f64() as f32, self.b[g].to_f64() as f32, o);
        }
    }
}

/// The batch matrices (`[..., R, C]`) of `d`: a slice and each matrix's
/// offset into it, each matrix row-major. Borrowed when every matrix already
/// is (batch axes may broadcast); copied otherwise.
struct Matrices<'a, T: Clone + 'static> {
    data: Cow<'a, [T]>,
    offsets: Vec<usize>,
    cols: usize,
}

impl<'a, T: CpuElement> Matrices<'a, T> {
    fn new(d: &'a Data, batch: usize) -> Result<Self> {
        let l = &d.layout;
        let nd = l.shape.len();
        if nd < 2 {
            return Err(Error::Kernel(format!("quantized: operand of shape {:?} is not a matrix", l.shape)));
        }
        let (rows, cols) = (l.shape[nd - 2], l.shape[nd - 1]);
        let row_major = (l.strides[nd - 1] == 1 || cols <= 1) && (l.strides[nd - 2] == cols as isize || rows <= 1);
        if row_major && (0..nd - 2).all(|i| l.strides[i] >= 0) && l.numel() > 0 {
            let offsets = (0..batch).map(|i| batch_offset(l, i)).collect();
            Ok(Matrices { data: Cow::Borrowed(d.cpu_buffer().as_slice::<T>()), offsets, cols })
        } else {
            let offsets = (0..batch).map(|i| i * rows * cols).collect();
            Ok(Matrices { data: Cow::Owned(to_vec::<T>(d)?), offsets, cols })
        }
    }

    /// Rows `r..r + count` of matrix `b` (consecutive: matrices are row-major).
    #[inline]
    fn rows(&self, b: usize, r: usize, count: usize) -> &[T] {
        let at = self.offsets[b] + r * self.cols;
        &self.data[at..at + count * self.cols]
    }
}

/// `d`'s elements as float32, row-major.
fn to_f32(d: &Data) -> Result<Vec<f32>> {
    super::dispatch!(d.buffer.dtype(), T => Ok(to_vec::<T>(d)?.into_iter().map(|x| x.to_f64() as f32).collect()))
}

/// `v` (float32) as a buffer of `dtype`.
fn from_f32(v: Vec<f32>, dtype: Dtype) -> Result<CpuBuffer> {
    let n = v.len();
    match dtype {
        Dtype::F32 => CpuBuffer::build::<f32>(n, |o| o.extend(v)),
        Dtype::F16 => CpuBuffer::build::<f16>(n, |o| o.extend(v.iter().map(|&x| f16::from_f32(x)))),
        Dtype::BF16 => CpuBuffer::build::<bf16>(n, |o| o.extend(v.iter().map(|&x| bf16::from_f32(x)))),
        Dtype::F64 => CpuBuffer::build::<f64>(n, |o| o.extend(v.iter().map(|&x| x as f64))),
        d => Err(Error::Dtype(format!("quantized: output must be floating point, got {d}"))),
    }
}

/// Runs `$body` with `$S` the float type of `$dtype` (scales and biases).
macro_rules! scale_dispatch {
    ($dtype:expr, $S:ident => $body:expr) => {
        match $dtype {
            Dtype::F32 => { type $S = f32; $body }
            Dtype::F16 => { type $S = f16; $body }
            Dtype::BF16 => { type $S = bf16; $body }
            Dtype::F64 => { type $S = f64; $body }
            d => Err(Error::Dtype(format!("quantized: scales must be floating point, got {d}"))),
        }
    };
}

/// `Quantize`: the codes of `w` given float32 scales and biases.
pub(crate) fn quantize(group_size: usize, bits: u32, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    let (w, s, b) = (to_f32(&inputs[0])?, to_f32(&inputs[1])?, to_f32(&inputs[2])?);
    let words = *out.shape.last().unwrap_or(&0);
    let c = *inputs[0].layout.shape.last().unwrap_or(&0);
    let rows = if c == 0 { 0 } else { w.len() / c };
    let groups = c / group_size;
    let n_bins = ((1u32 << bits) - 1) as f32;
    build_rows::<u32>(rows, words, |r, o| {
        let (w, s, b) = (&w[r * c..(r + 1) * c], &s[r * groups..(r + 1) * groups], &b[r * groups..(r + 1) * groups]);
        let (mut acc, mut have, mut at) = (0u64, 0u32, 0usize);
        for (j, &x) in w.iter().enumerate() {
            let g = j / group_size;
            let q = ((x - b[g]) / s[g]).round_ties_even().clamp(0.0, n_bins);
            // NaN codes as 0 (`as` saturates).
            acc |= (q as u64) << have;
            have += bits;
            if have >= 32 {
                o[at] = acc as u32;
                at += 1;
                acc >>= 32;
                have -= 32;
            }
        }
    })
}

/// `Dequantize`: `scale * q + bias`, row by row.
pub(crate) fn dequantize(group_size: usize, bits: u32, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    let dec = decoder(bits)?;
    let width = *out.shape.last().unwrap_or(&0);
    let n = crate::shape::numel(out.shape);
    let rows = if width == 0 { 0 } else { n / width };
    let w = to_vec::<u32>(&inputs[0])?;
    let (s, b) = (to_f32(&inputs[1])?, to_f32(&inputs[2])?);
    let (words, groups) = (w.len() / rows.max(1), width / group_size);
    let mut v = vec![0f32; n];
    let fill = |r: usize, o: &mut [f32]| {
        let row = Row { words: &w[r * words..(r + 1) * words], s: &s[r * groups..(r + 1) * groups], b: &b[r * groups..(r + 1) * groups] };
        row.decode(dec, group_size, bits, 0, o);
    };
    if width > 0 {
        if n >= PARALLEL_MIN {
            v.par_chunks_mut(width).enumerate().for_each(|(r, o)| fill(r, o));
        } else {
            v.chunks_mut(width).enumerate().for_each(|(r, o)| fill(r, o));
        }
    }
    from_f32(v, out.dtype)
}

/// `QuantizedMatmul`: inputs (x `[..., M, K]`, w, scales, biases) with the
/// same batch axes; output `[..., M, N]`.
pub(crate) fn quantized_matmul(
    group_size: usize,
    bits: u32,
    transpose: bool,
    int8_activations: bool,
    inputs: &[Data],
    out: OutSpec<'_>,
) -> Result<CpuBuffer> {
    scale_dispatch!(inputs[2].buffer.dtype(), S => qmm::<S>(group_size, bits, transpose, int8_activations, inputs, out))
}

/// One task's share of the output: batch matrix `b`, columns `n0..n0 + nb`.
#[derive(Clone, Copy)]
struct Task {
    b: usize,
    n0: usize,
    nb: usize,
}

fn qmm<S: CpuElement>(gs: usize, bits: u32, transpose: bool, int8: bool, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    let nd = out.shape.len();
    let (m, n) = (out.shape[nd - 2], out.shape[nd - 1]);
    let k = inputs[0].layout.shape[nd - 1];
    let batch: usize = out.shape[..nd - 2].iter().product();
    let total = batch * m * n;
    if total == 0 || k == 0 {
        return from_f32(vec![0.0; total], out.dtype);
    }
    if inputs[2].buffer.dtype() != inputs[3].buffer.dtype() {
        return Err(Error::Kernel("quantized_matmul: scales and biases differ in dtype".into()));
    }
    let dec = decoder(bits)?;
    let mut x = to_f32(&inputs[0])?;
    let w = Matrices::<u32>::new(&inputs[1], batch)?;
    let s = Matrices::<S>::new(&inputs[2], batch)?;
    let bias = Matrices::<S>::new(&inputs[3], batch)?;
    let run = |b: usize, r: usize, count: usize| Row { words: w.rows(b, r, count), s: s.rows(b, r, count), b: bias.rows(b, r, count) };
    let row = |b: usize, r: usize| run(b, r, 1);
    if int8 {
        if transpose && m <= QMV_MAX_ROWS && int8::applies(bits, gs) {
            let level = int8::Level::best();
            let mut y = vec![0f32; total];
            for b in 0..batch {
                let xb = &x[b * m * k..(b + 1) * m * k];
                let p = int8::Prepared::new(bits, gs, xb, m, k).ok_or_else(|| Error::Kernel("quantized_matmul: int8 rows do not fit the weights".into()))?;
                int8::qmv(level, &p, n, |r, count| run(b, r, count), &mut y[b * m * n..(b + 1) * m * n]);
            }
            return from_f32(y, out.dtype);
        }
        x = int8::round_rows(&x, k);
    }
    if transpose && m <= QMV_MAX_ROWS {
        let mut y = vec![0f32; total];
        for b in 0..batch {
            qmv(bits, gs, &x[b * m * k..(b + 1) * m * k], m, k, n, |r| row(b, r), &mut y[b * m * n..(b + 1) * m * n]);
        }
        return from_f32(y, out.dtype);
    }

    // Output columns per task: weight rows (transposed) or whole groups.
    let block = if transpose { 16 } else { gs * 64usize.div_ceil(gs) };
    let tasks: Vec<Task> = (0..batch)
        .flat_map(|b| (0..n).step_by(block).map(move |n0| Task { b, n0, nb: block.min(n - n0) }))
        .collect();
    let run = |t: Task, par: gemm::Parallelism| -> Vec<f32> {
        let xb = &x[t.b * m * k..(t.b + 1) * m * k];
        let mut tile = vec![0f32; m * t.nb];
        // Contracted elements decoded per step: whole groups.
        let kc_max = if transpose { (DECODE_BLOCK / t.nb / gs).max(1) * gs } else { (DECODE_BLOCK / t.nb).max(1) };
        let mut scratch = vec![0f32; kc_max * t.nb];
        for k0 in (0..k).step_by(kc_max) {
            let kc = kc_max.min(k - k0);
            let buf = &mut scratch[..kc * t.nb];
            // `buf` holds the block of the logical `[K, N]` weight, element
            // (kk, j) at `kk * rs + j * cs`.
            let (rs, cs) = if transpose {
                for (j, o) in buf.chunks_mut(kc).enumerate() {
                    row(t.b, t.n0 + j).decode(dec, gs, bits, k0 / gs, o);
                }
                (1, kc)
            } else {
                for (kk, o) in buf.chunks_mut(t.nb).enumerate() {
                    row(t.b, k0 + kk).decode(dec, gs, bits, t.n0 / gs, o);
                }
                (t.nb, 1)
            };
            // SAFETY: `tile` holds `m * nb` elements, written with row
            // stride `nb`, column stride 1. `lhs` points at `xb[k0]`; the
            // elements read, `k0 + r * k + c` for `r < m`, `c < kc`, lie in
            // `xb` (`m * k` long). `buf` holds `kc * nb` elements, read at
            // `kk * rs + j * cs < kc * nb` for `kk < kc`, `j < nb` (the two
            // layouts above). All three are distinct allocations alive for
            // the call; f32 is a type `gemm` accepts.
            unsafe {
                gemm::gemm::<f32>(
                    m,
                    t.nb,
                    kc,
                    tile.as_mut_ptr(),
                    1,
                    t.nb as isize,
                    k0 > 0,
                    xb.as_ptr().add(k0),
                    1,
                    k as isize,
                    buf.as_ptr(),
                    cs as isize,
                    rs as isize,
                    1.0,
                    1.0,
                    false,
                    false,
                    false,
                    par,
                )
            }
        }
        tile
    };
    let threads = rayon::current_num_threads();
    let tiles: Vec<Vec<f32>> = if batch * m * n * k < PARALLEL_FLOPS || threads == 1 {
        tasks.iter().map(|&t| run(t, gemm::Parallelism::None)).collect()
    } else if tasks.len() >= threads {
        tasks.par_iter().map(|&t| run(t, gemm::Parallelism::None)).collect()
    } else {
        // Few, large tasks: each uses every thread.
        tasks.iter().map(|&t| run(t, gemm::Parallelism::Rayon(threads))).collect()
    };
    let mut y = vec![0f32; total];
    for (t, tile) in tasks.iter().zip(&tiles) {
        for (i, src) in tile.chunks(t.nb).enumerate() {
            let at = (t.b * m + i) * n + t.n0;
            y[at..at + t.nb].copy_from_slice(src);
        }
    }
    from_f32(y, out.dtype)
}

/// Up to this many rows of `x`, a transposed `QuantizedMatmul` (the linear
/// layer `x @ w.T`: a decode step of a language model, or a server's
/// batched step of up to 32 sequences) runs as matrix-vector products
/// ([`qmv`], [`int8::qmv`]): each weight row is read once, while it stays
/// in L1, against every row of `x` (8 rows per kernel call). Above it the
/// decoded blocks go through `gemm`, which amortizes its packing. Measured
/// on SmolLM2's `[1536, 576]` 4-bit projection (`cargo bench -p weft
/// --bench core qmm_rows`, docs/benchmarks.md): the row kernels cost ~44 µs
/// per row of `x` on 2 cores, the `gemm` path 1.3 ms at 9 rows and 2.4 ms
/// at 64, so they cross near 48 rows.
const QMV_MAX_ROWS: usize = 32;
/// Weight rows per parallel task in [`qmv`].
const QMV_ROWS_PER_TASK: usize = 16;

/// `y[i, r] = x[i] . (s * q + b)[r]` for the `m` rows of `x` (`[m, k]`,
/// float32) and the `n` weight rows given by `rows`; `y` is `[m, n]`.
///
/// On x86-64, 4- and 8-bit codes in groups of a multiple of 32 go through
/// the fused kernels of [`simd::Fused`] (codes widened in registers, never
/// stored); other widths decode each row into a buffer and dot it, a body
/// compiled for AVX-512, for AVX2 + FMA and for the baseline target. The
/// widest the CPU has is chosen at run time.
#[allow(clippy::too_many_arguments)]
fn qmv<'a, S: Element + Sync>(
    bits: u32,
    gs: usize,
    x: &[f32],
    m: usize,
    k: usize,
    n: usize,
    rows: impl Fn(usize) -> Row<'a, S> + Sync,
    y: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    let (avx512, avx2, fused) = (simd::avx512(), simd::avx2(), simd::Fused::new(bits, gs, x, m, k));
    by_weight_rows(m, k, n, y, |r0, out| {
        #[cfg(target_arch = "x86_64")]
        if let Some(f) = &fused {
            let mut scratch = Vec::new();
            for (j, o) in out.chunks_mut(m).enumerate() {
                let row = rows(r0 + j);
                f.row(row.words, row.s, row.b, &mut scratch, o);
            }
            return;
        }
        let mut buf = vec![0f32; k];
        for (j, o) in out.chunks_mut(m).enumerate() {
            let row = rows(r0 + j);
            #[cfg(target_arch = "x86_64")]
            {
                if avx512 {
                    // SAFETY: the CPU has AVX-512F/BW/VL (`simd::avx512`
                    // checked at run time), the features `qmv_row_avx512` is compiled for.
                    unsafe { simd::qmv_row_avx512(bits, gs, &row, x, m, &mut buf, o) };
                    continue;
                }
                if avx2 {
                    // SAFETY: the CPU has AVX2 and FMA (`simd::avx2` checked
                    // at run time), the features `qmv_row_avx2` is compiled for.
                    unsafe { simd::qmv_row_avx2(bits, gs, &row, x, m, &mut buf, o) };
                    continue;
                }
            }
            qmv_row::<false, S>(bits, gs, &row, x, m, &mut buf, o);
        }
    });
}

/// The task split of the matrix-vector paths ([`qmv`], `int8::qmv`): each
/// task gets a run of [`QMV_ROWS_PER_TASK`] weight rows starting at `r0`
/// and fills `out` with their `m` results each (`[rows, m]`); tasks run in
/// parallel from [`PARALLEL_FLOPS`] multiply-adds (`m * k * n`). `y` is
/// written as `[m, n]`: computed transposed, then copied out (for one row
/// of `x` the two are the same and `y` is written directly).
fn by_weight_rows(m: usize, k: usize, n: usize, y: &mut [f32], task: impl Fn(usize, &mut [f32]) + Sync) {
    let mut yt = if m == 1 { Vec::new() } else { vec![0f32; n * m] };
    let out: &mut [f32] = if m == 1 { y } else { &mut yt };
    let run = |(t, o): (usize, &mut [f32])| task(t * QMV_ROWS_PER_TASK, o);
    if n * m * k < PARALLEL_FLOPS || rayon::current_num_threads() == 1 {
        out.chunks_mut(QMV_ROWS_PER_TASK * m).enumerate().for_each(run);
    } else {
        out.par_chunks_mut(QMV_ROWS_PER_TASK * m).enumerate().for_each(run);
    }
    if m > 1 {
        for (r, v) in yt.chunks(m).enumerate() {
            for (i, &e) in v.iter().enumerate() {
                y[i * n + r] = e;
            }
        }
    }
}

/// One weight row of [`qmv`]: decodes it into `buf` (`k` floats) and
/// writes its dot product with each of the `m` rows of `x` into `out`.
/// `FMA` as in [`decode_group`], which is inlined here per bit width.
#[inline(always)]
fn qmv_row<const FMA: bool, S: Element>(bits: u32, gs: usize, row: &Row<'_, S>, x: &[f32], m: usize, buf: &mut [f32], out: &mut [f32]) {
    let k = buf.len();
    match bits {
        1 => row.decode(decode_group::<1, FMA>, gs, bits, 0, buf),
        2 => row.decode(decode_group::<2, FMA>, gs, bits, 0, buf),
        3 => row.decode(decode_group::<3, FMA>, gs, bits, 0, buf),
        4 => row.decode(decode_group::<4, FMA>, gs, bits, 0, buf),
        5 => row.decode(decode_group::<5, FMA>, gs, bits, 0, buf),
        6 => row.decode(decode_group::<6, FMA>, gs, bits, 0, buf),
        _ => row.decode(decode_group::<8, FMA>, gs, bits, 0, buf),
    }
    for (i, o) in out.iter_mut().enumerate().take(m) {
        *o = dot::<FMA>(buf, &x[i * k..(i + 1) * k]);
    }
}

#[inline(always)]
fn fma<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `a . b` with 16 independent partial sums (so the loop vectorizes; the
/// sum's order differs from a sequential one by rounding only).
#[inline(always)]
fn dot<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let mut acc = [0f32; L];
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..L {
            acc[l] = fma::<FMA>(x[l], y[l], acc[l]);
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail = fma::<FMA>(*x, *y, tail);
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod simd;

mod int8;
