//! `Matmul`: `[..batch, M, K] @ [..batch, K, N]` with the `gemm` crate.
//!
//! `gemm` takes row and column strides, so transposed and batch-broadcast
//! (stride 0) operands are read in place; only matrices with negative strides
//! (reversed slices) are copied first. It picks its SIMD kernels (FMA/AVX2,
//! and AVX-512 when built with its `x86-v4` feature) at run time. `float32`,
//! `float64` and `float16` run natively (`gemm` accumulates `float16` in
//! `float32`); `bfloat16` is converted to `float32` and back.

use super::dispatch;
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::dtype::{Dtype, Element};
use crate::primitive::OutSpec;
use crate::shape::Layout;
use crate::{Error, Result};
use half::bf16;
use rayon::prelude::*;
use std::borrow::Cow;

/// Multiply-adds (`M * N * K`) from which one product is split across threads.
const PARALLEL_FLOPS: usize = 1 << 18;

pub(crate) fn matmul(a: &Data, b: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let nd = out.shape.len();
    if nd < 2 || a.layout.shape.len() != nd || b.layout.shape.len() != nd {
        return Err(Error::Kernel(format!(
            "matmul: operands {:?} and {:?} do not match output {:?}",
            a.layout.shape, b.layout.shape, out.shape
        )));
    }
    match out.dtype {
        Dtype::F32 => gemm_batched::<f32>(a, b, out.shape),
        Dtype::F64 => gemm_batched::<f64>(a, b, out.shape),
        Dtype::F16 => gemm_batched::<half::f16>(a, b, out.shape),
        Dtype::C64 => gemm_batched::<crate::Complex64>(a, b, out.shape),
        Dtype::BF16 => {
            // float32 operands and product, rounded once at the end.
            let (a32, b32) = (to_f32(a)?, to_f32(b)?);
            let prod = gemm_batched::<f32>(&a32, &b32, out.shape)?;
            let n = prod.data.len();
            CpuBuffer::build::<bf16>(n, |v| v.extend(prod.as_slice::<f32>().iter().map(|&x| bf16::from_f32(x))))
        }
        d => Err(Error::Dtype(format!("matmul supports floating point types only, got {d}"))),
    }
}

/// A contiguous `float32` copy of `d` (any dtype).
fn to_f32(d: &Data) -> Result<Data> {
    let n = d.layout.numel();
    let buf = dispatch!(d.buffer.dtype(), T => {
        CpuBuffer::build::<f32>(n, |v| super::for_each::<T>(d, |x| v.push(x.to_f64() as f32)))
    })?;
    Ok(Data::cpu(buf, &d.layout.shape))
}

/// One operand: its elements and a layout with non-negative matrix strides.
fn operand<T: CpuElement>(d: &Data) -> Result<(Cow<'_, [T]>, Cow<'_, Layout>)> {
    let l = &d.layout;
    let nd = l.shape.len();
    if l.strides[nd - 2] < 0 || l.strides[nd - 1] < 0 {
        Ok((Cow::Owned(super::to_vec::<T>(d)?), Cow::Owned(Layout::contiguous(&l.shape))))
    } else {
        Ok((Cow::Borrowed(d.cpu_buffer().as_slice::<T>()), Cow::Borrowed(l)))
    }
}

/// Buffer offset of the first element of matrix `i` (row-major over the
/// batch dimensions) of `l`.
pub(super) fn batch_offset(l: &Layout, mut i: usize) -> usize {
    let nb = l.shape.len() - 2;
    let mut off = l.offset as isize;
    for d in (0..nb).rev() {
        off += (i % l.shape[d]) as isize * l.strides[d];
        i /= l.shape[d];
    }
    off as usize
}

/// An element and the type `gemm` computes it as (`gemm` picks its kernel
/// by type: `Complex64` is passed as the `Complex32` it wraps).
trait GemmElement: CpuElement + Default {
    type G: 'static + Copy;
    fn to_gemm(self) -> Self::G;
}

macro_rules! gemm_self {
    ($($t:ty),*) => {$(
        impl GemmElement for $t {
            type G = $t;
            fn to_gemm(self) -> $t { self }
        }
    )*};
}
gemm_self!(f32, f64, half::f16);

impl GemmElement for crate::Complex64 {
    type G = num_complex::Complex32;
    fn to_gemm(self) -> num_complex::Complex32 {
        self.0
    }
}

fn gemm_batched<T: GemmElement>(a: &Data, b: &Data, shape: &[usize]) -> Result<CpuBuffer> {
    let nd = shape.len();
    let (m, n) = (shape[nd - 2], shape[nd - 1]);
    let k = a.layout.shape[nd - 1];
    let batch: usize = shape[..nd - 2].iter().product();
    let total = batch * m * n;
    if total == 0 || k == 0 {
        // An empty sum is zero.
        return CpuBuffer::build::<T>(total, |v| v.resize(total, T::from_f64(0.0)));
    }
    let (sa, la) = operand::<T>(a)?;
    let (sb, lb) = operand::<T>(b)?;
    let (sa, sb): (&[T], &[T]) = (&sa, &sb);
    let (la, lb): (&Layout, &Layout) = (&la, &lb);
    let flops = m * n * k;
    let one = |i: usize, dst: &mut [T], par: gemm::Parallelism| {
        let (oa, ob) = (batch_offset(la, i), batch_offset(lb, i));
        // SAFETY: `dst` holds exactly `m * n` elements, written with row
        // stride `n` and column stride 1. The operand layouts are valid views
        // of their buffers with non-negative matrix strides (`operand`
        // copies otherwise), so every element `gemm` reads, at `oa + r *
        // rs + c * cs` for `r < m, c < k` (and likewise for `b`), lies inside
        // `sa` (`sb`). `T::G` is f32, f64, half::f16 (= gemm::f16) or
        // Complex32 (= gemm::c32), the types `gemm` accepts, and `T` has
        // the layout of `T::G` (itself, or Complex64, repr(transparent)). The buffers outlive the call, and `dst` is not
        // aliased by the operands (it is a fresh allocation).
        unsafe {
            gemm::gemm::<T::G>(
                m,
                n,
                k,
                dst.as_mut_ptr().cast::<T::G>(),
                1,
                n as isize,
                false,
                sa.as_ptr().add(oa).cast::<T::G>(),
                la.strides[nd - 1],
                la.strides[nd - 2],
                sb.as_ptr().add(ob).cast::<T::G>(),
                lb.strides[nd - 1],
                lb.strides[nd - 2],
                T::from_f64(0.0).to_gemm(),
                T::from_f64(1.0).to_gemm(),
                false,
                false,
                false,
                par,
            )
        }
    };
    CpuBuffer::build::<T>(total, |v| {
        v.resize(total, T::default());
        let threads = rayon::current_num_threads();
        if flops >= PARALLEL_FLOPS && threads > 1 {
            // Large products: each one uses every thread.
            for (i, dst) in v.chunks_mut(m * n).enumerate() {
                one(i, dst, gemm::Parallelism::Rayon(threads));
            }
        } else if batch > 1 && batch * flops >= PARALLEL_FLOPS && threads > 1 {
            // Many small products: one per task.
            v.par_chunks_mut(m * n).enumerate().for_each(|(i, dst)| one(i, dst, gemm::Parallelism::None));
        } else {
            for (i, dst) in v.chunks_mut(m * n).enumerate() {
                one(i, dst, gemm::Parallelism::None);
            }
        }
    })
}
