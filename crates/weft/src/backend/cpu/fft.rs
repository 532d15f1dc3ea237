//! `Fft`: discrete Fourier transforms on `rustfft`, one axis at a time.
//!
//! The input is copied to a contiguous complex buffer; each transformed
//! axis is then a set of lines (`outer x inner` of them, `len` apart by
//! `inner`), gathered into a scratch line, transformed and written back.
//! Real transforms: `rfft` transforms the last axis of `axes` in full and
//! keeps its first `n / 2 + 1` frequencies, then the other axes; `irfft`
//! runs the other axes first, then rebuilds each Hermitian line of `n` from
//! its `n / 2 + 1` values (`X[n - k] = conj(X[k])`), transforms it and keeps
//! the real part. Inverse transforms are scaled by `1 / n` at the end.

use super::to_vec;
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::OutSpec;
use crate::{Complex64, Dtype, Error, Result};
use num_complex::Complex32 as C;
use rayon::prelude::*;
use rustfft::{FftDirection, FftPlanner};

/// Lines of one axis of a contiguous array of `shape`.
struct Lines {
    outer: usize,
    len: usize,
    inner: usize,
}

impl Lines {
    fn of(shape: &[usize], axis: usize) -> Lines {
        Lines {
            outer: shape[..axis].iter().product(),
            len: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        }
    }
}

/// Transforms every line of `axis` of `buf` (contiguous, `shape`) in place.
fn transform_axis(buf: &mut [C], shape: &[usize], axis: usize, dir: FftDirection, planner: &mut FftPlanner<f32>) {
    let l = Lines::of(shape, axis);
    if l.len <= 1 || buf.is_empty() {
        return;
    }
    let fft = planner.plan_fft(l.len, dir);
    if l.inner == 1 {
        // Lines are contiguous: transform them in place, in parallel.
        let scratch_len = fft.get_inplace_scratch_len();
        buf.par_chunks_mut(l.len * 64.max(1)).for_each(|block| {
            let mut scratch = vec![C::default(); scratch_len];
            for line in block.chunks_mut(l.len) {
                fft.process_with_scratch(line, &mut scratch);
            }
        });
        return;
    }
    let scratch_len = fft.get_inplace_scratch_len();
    let stride = l.len * l.inner;
    buf.par_chunks_mut(stride).for_each(|block| {
        let mut line = vec![C::default(); l.len];
        let mut scratch = vec![C::default(); scratch_len];
        for i in 0..l.inner {
            for (k, x) in line.iter_mut().enumerate() {
                *x = block[k * l.inner + i];
            }
            fft.process_with_scratch(&mut line, &mut scratch);
            for (k, x) in line.iter().enumerate() {
                block[k * l.inner + i] = *x;
            }
        }
    });
    debug_assert_eq!(buf.len(), l.outer * stride);
}

/// `buf` (contiguous, `shape`) with `axis` cut to its first `keep` entries.
fn truncate_axis(buf: &[C], shape: &[usize], axis: usize, keep: usize) -> Vec<C> {
    let l = Lines::of(shape, axis);
    let mut out = Vec::with_capacity(l.outer * keep * l.inner);
    for block in buf.chunks(l.len * l.inner) {
        out.extend_from_slice(&block[..keep * l.inner]);
    }
    out
}

/// The complex-to-real last step of `irfft` along `axis`: lines of `m`
/// Hermitian values in, lines of `n` real values out.
fn hermitian_to_real(buf: &[C], shape: &[usize], axis: usize, n: usize, planner: &mut FftPlanner<f32>) -> Vec<f32> {
    let l = Lines::of(shape, axis);
    let m = l.len;
    let fft = planner.plan_fft(n, FftDirection::Inverse);
    let mut out = vec![0f32; l.outer * n * l.inner];
    if out.is_empty() {
        return out;
    }
    let scratch_len = fft.get_inplace_scratch_len();
    out.par_chunks_mut(n * l.inner).zip(buf.par_chunks(m * l.inner)).for_each(|(dst, src)| {
        let mut line = vec![C::default(); n];
        let mut scratch = vec![C::default(); scratch_len];
        for i in 0..l.inner {
            for (k, x) in line.iter_mut().enumerate() {
                *x = if k < m {
                    src[k * l.inner + i]
                } else {
                    // n - k < n / 2 + 1 = m whenever k >= m.
                    src[(n - k) * l.inner + i].conj()
                };
            }
            fft.process_with_scratch(&mut line, &mut scratch);
            for (k, x) in line.iter().enumerate() {
                dst[k * l.inner + i] = x.re;
            }
        }
    });
    out
}

pub(crate) fn fft(axes: &[usize], inverse: bool, real: bool, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let Some(&last) = axes.last() else {
        return Err(Error::Kernel("fft: no axes".into()));
    };
    let mut planner = FftPlanner::<f32>::new();
    let dir = if inverse { FftDirection::Inverse } else { FftDirection::Forward };
    let mut shape = a.layout.shape.clone();
    let mut buf: Vec<C> = match a.buffer.dtype() {
        Dtype::C64 => {
            let v = to_vec::<Complex64>(a)?;
            v.into_iter().map(|z| z.0).collect()
        }
        Dtype::F32 => to_vec::<f32>(a)?.into_iter().map(|x| C::new(x, 0.0)).collect(),
        d => return Err(Error::Kernel(format!("fft: input of {d}"))),
    };
    let n_total: f64 = axes.iter().map(|&ax| out.shape[ax].max(a.layout.shape[ax]) as f64).product();
    let others = &axes[..axes.len() - 1];
    let result: Vec<C> = if real && !inverse {
        transform_axis(&mut buf, &shape, last, dir, &mut planner);
        let keep = out.shape[last];
        buf = truncate_axis(&buf, &shape, last, keep);
        shape[last] = keep;
        for &ax in others {
            transform_axis(&mut buf, &shape, ax, dir, &mut planner);
        }
        buf
    } else if real {
        for &ax in others {
            transform_axis(&mut buf, &shape, ax, dir, &mut planner);
        }
        let n = out.shape[last];
        let scale = (1.0 / axes.iter().map(|&ax| out.shape[ax] as f64).product::<f64>()) as f32;
        let mut v = hermitian_to_real(&buf, &shape, last, n, &mut planner);
        v.iter_mut().for_each(|x| *x *= scale);
        return CpuBuffer::from_vec(v);
    } else {
        for &ax in axes {
            transform_axis(&mut buf, &shape, ax, dir, &mut planner);
        }
        if inverse {
            let scale = (1.0 / n_total) as f32;
            buf.iter_mut().for_each(|z| *z *= scale);
        }
        buf
    };
    CpuBuffer::from_vec(result.into_iter().map(Complex64).collect::<Vec<_>>())
}
