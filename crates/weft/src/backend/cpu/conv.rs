//! `Conv`: im2col + the `gemm` crate.
//!
//! For each group, the patches the kernel sees are gathered into a matrix
//! (one row per output position, one column per (kernel tap, channel);
//! channels are the innermost axis of both the input and the weight, so a
//! tap is one contiguous copy of `C_in / groups` values, or zeros where it
//! falls in padding or between dilated inputs). The product of that matrix
//! with the group's weights, `[C_out / groups, taps * C_in / groups]`
//! read transposed in place, is written straight into the group's output
//! columns (row stride `C_out`). Output rows are processed in tiles so the
//! patch matrix stays bounded (`TILE_ELEMS`), whatever the input size.
//! `float32` and `float64` run natively; `float16` and `bfloat16` are
//! converted to `float32`, accumulated there and rounded once at the end.

use super::{contiguous_slice, to_vec, PARALLEL_MIN};
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::dtype::Dtype;
use crate::primitive::{ConvParams, OutSpec};
use crate::{Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::borrow::Cow;

/// Elements of the patch matrix built at once (16 MiB of `float32`).
const TILE_ELEMS: usize = 1 << 22;
/// Multiply-adds from which one product uses every thread.
const PARALLEL_FLOPS: usize = 1 << 18;

pub(crate) fn conv(p: &ConvParams, x: &Data, w: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let g = Geometry::new(p, &x.layout.shape, &w.layout.shape, out.shape)?;
    match out.dtype {
        Dtype::F32 => CpuBuffer::from_vec(run::<f32>(p, &g, &elements(x)?, &elements(w)?)?),
        Dtype::F64 => CpuBuffer::from_vec(run::<f64>(p, &g, &elements(x)?, &elements(w)?)?),
        Dtype::F16 => {
            let y = run::<f32>(p, &g, &widened::<f16>(x)?, &widened::<f16>(w)?)?;
            CpuBuffer::build::<f16>(y.len(), |v| v.extend(y.iter().map(|&a| f16::from_f32(a))))
        }
        Dtype::BF16 => {
            let y = run::<f32>(p, &g, &widened::<bf16>(x)?, &widened::<bf16>(w)?)?;
            CpuBuffer::build::<bf16>(y.len(), |v| v.extend(y.iter().map(|&a| bf16::from_f32(a))))
        }
        d => Err(Error::Dtype(format!("conv supports floating point types only, got {d}"))),
    }
}

/// `d`'s elements in row-major order: borrowed when contiguous.
fn elements<T: CpuElement>(d: &Data) -> Result<Cow<'_, [T]>> {
    Ok(match contiguous_slice::<T>(d) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(to_vec::<T>(d)?),
    })
}

/// `d`'s half-precision elements as `float32`, in row-major order.
fn widened<H: CpuElement + Into<f32>>(d: &Data) -> Result<Cow<'static, [f32]>> {
    let src = elements::<H>(d)?;
    let (mut v, _counted_while_filling) = crate::buffer::host_vec::<f32>(src.len())?;
    v.extend(src.iter().map(|&h| h.into()));
    Ok(Cow::Owned(v))
}

/// Sizes of one convolution, checked against the primitive's parameters.
struct Geometry {
    batch: usize,
    input: Vec<usize>,
    kernel: Vec<usize>,
    output: Vec<usize>,
    c_in: usize,
    c_out: usize,
    groups: usize,
}

impl Geometry {
    fn new(p: &ConvParams, xs: &[usize], ws: &[usize], os: &[usize]) -> Result<Geometry> {
        let nd = xs.len();
        let d = nd.saturating_sub(2);
        let ok = nd >= 3
            && ws.len() == nd
            && os.len() == nd
            && [&p.stride, &p.kernel_dilation, &p.input_dilation].iter().all(|v| v.len() == d && v.iter().all(|&s| s > 0))
            && p.padding_lo.len() == d
            && p.padding_hi.len() == d
            && p.groups > 0
            && xs[nd - 1] % p.groups == 0
            && ws[nd - 1] * p.groups == xs[nd - 1]
            && ws[0] % p.groups == 0
            && os[0] == xs[0]
            && os[nd - 1] == ws[0]
            && (0..d).all(|i| os[i + 1] == p.out_len(i, xs[i + 1], ws[i + 1]));
        if !ok {
            return Err(Error::Kernel(format!("conv: input {xs:?}, weight {ws:?} and output {os:?} do not fit {p:?}")));
        }
        Ok(Geometry {
            batch: xs[0],
            input: xs[1..nd - 1].to_vec(),
            kernel: ws[1..nd - 1].to_vec(),
            output: os[1..nd - 1].to_vec(),
            c_in: xs[nd - 1],
            c_out: ws[0],
            groups: p.groups,
        })
    }

    /// For axis `a`: the input index each (output position, kernel tap)
    /// reads, `o * taps + k`, or `None` in padding and dilation holes.
    fn sources(&self, p: &ConvParams, a: usize) -> Vec<Option<usize>> {
        let (n, taps, outs) = (self.input[a] as isize, self.kernel[a], self.output[a]);
        let dil = p.input_dilation[a] as isize;
        let span = if n == 0 { 0 } else { (n - 1) * dil + 1 };
        let mut v = Vec::with_capacity(outs * taps);
        for o in 0..outs {
            for k in 0..taps {
                let tap = if p.flip { taps - 1 - k } else { k };
                let q = (o * p.stride[a]) as isize - p.padding_lo[a] + (tap * p.kernel_dilation[a]) as isize;
                v.push((q >= 0 && q < span && q % dil == 0).then(|| (q / dil) as usize));
            }
        }
        v
    }
}

fn run<T: CpuElement + Default>(p: &ConvParams, g: &Geometry, x: &[T], w: &[T]) -> Result<Vec<T>> {
    let d = g.input.len();
    let positions: usize = g.output.iter().product();
    let rows = g.batch * positions;
    let taps: usize = g.kernel.iter().product();
    let (cg, og) = (g.c_in / g.groups, g.c_out / g.groups);
    let width = taps * cg;
    let (mut y, _counted) = crate::buffer::host_vec::<T>(rows * g.c_out)?;
    y.resize(rows * g.c_out, T::from_f64(0.0));
    if rows == 0 || width == 0 || og == 0 {
        // An empty sum is zero.
        return Ok(y);
    }
    let sources: Vec<Vec<Option<usize>>> = (0..d).map(|a| g.sources(p, a)).collect();
    // Element strides of the input's spatial axes (channels innermost).
    let mut in_strides = vec![g.c_in; d];
    for a in (0..d.saturating_sub(1)).rev() {
        in_strides[a] = in_strides[a + 1] * g.input[a + 1];
    }
    let image = g.c_in * g.input.iter().product::<usize>();
    let tile = (TILE_ELEMS / width).clamp(1, rows);
    let (mut cols, _counted_cols) = crate::buffer::host_vec::<T>(tile * width)?;
    cols.resize(tile * width, T::from_f64(0.0));
    let threads = rayon::current_num_threads();
    for start in (0..rows).step_by(tile) {
        let count = tile.min(rows - start);
        for grp in 0..g.groups {
            // Gather the patches: row r of the tile is output row start + r.
            let fill = |(r, row): (usize, &mut [T])| {
                let mut at = start + r;
                let mut pos = vec![0usize; d];
                for a in (0..d).rev() {
                    pos[a] = at % g.output[a];
                    at /= g.output[a];
                }
                let base = at * image + grp * cg;
                let mut tap = vec![0usize; d];
                for chunk in row.chunks_exact_mut(cg) {
                    let mut off = Some(base);
                    for a in 0..d {
                        off = match (off, sources[a][pos[a] * g.kernel[a] + tap[a]]) {
                            (Some(o), Some(i)) => Some(o + i * in_strides[a]),
                            _ => None,
                        };
                    }
                    match off {
                        Some(o) => chunk.copy_from_slice(&x[o..o + cg]),
                        None => chunk.fill(T::from_f64(0.0)),
                    }
                    // The next tap, last axis fastest.
                    for a in (0..d).rev() {
                        tap[a] += 1;
                        if tap[a] < g.kernel[a] {
                            break;
                        }
                        tap[a] = 0;
                    }
                }
            };
            let patches = &mut cols[..count * width];
            if count * width >= PARALLEL_MIN && threads > 1 {
                patches.par_chunks_mut(width).enumerate().for_each(fill);
            } else {
                patches.chunks_mut(width).enumerate().for_each(fill);
            }
            let flops = count * og * width;
            let par = if flops >= PARALLEL_FLOPS && threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
            let dst = &mut y[start * g.c_out + grp * og..];
            let wg = &w[grp * og * width..(grp + 1) * og * width];
            // SAFETY: the destination is rows `start..start + count` of `y`
            // (row stride `c_out`), columns `grp * og..(grp + 1) * og`: its
            // last element, `(count - 1) * c_out + og - 1` past `dst`'s start,
            // lies inside `y` since `start + count <= rows` and
            // `grp * og + og <= c_out`. The left operand is `patches`
            // (`count x width`, row-major); the right one reads `wg[j *
            // width + q]` for `q < width`, `j < og`, inside the group's
            // `og * width` weights. `T` is f32 or f64, types `gemm` accepts;
            // `cols`, `w` and `y` are distinct allocations that outlive the
            // call.
            unsafe {
                gemm::gemm::<T>(
                    count,
                    og,
                    width,
                    dst.as_mut_ptr(),
                    1,
                    g.c_out as isize,
                    false,
                    cols.as_ptr(),
                    1,
                    width as isize,
                    wg.as_ptr(),
                    width as isize,
                    1,
                    T::from_f64(0.0),
                    T::from_f64(1.0),
                    false,
                    false,
                    false,
                    par,
                )
            }
        }
    }
    Ok(y)
}
