//! Helpers shared by the row-wise kernels (softmax, norms, rope, sort,
//! attention, ...): contiguous views of inputs, float accumulator types, and
//! outputs filled one row at a time, in parallel when large.

use super::{contiguous_slice, to_vec, PARALLEL_MIN};
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::Result;
pub(crate) use super::num::{Acc, FloatElem};
use rayon::prelude::*;
use std::borrow::Cow;

/// `data`'s elements in row-major order: borrowed when already contiguous.
pub(crate) fn contiguous<T: CpuElement>(data: &Data) -> Result<Cow<'_, [T]>> {
    Ok(match contiguous_slice::<T>(data) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(to_vec::<T>(data)?),
    })
}

/// Runs `$body` with `$T` bound to the float type of `$dtype`; other dtypes
/// fail with a dtype error naming `$what`.
macro_rules! float_dispatch {
    ($dtype:expr, $what:expr, $T:ident => $body:expr) => {{
        use $crate::dtype::Dtype;
        match $dtype {
            Dtype::F16 => { type $T = half::f16; $body }
            Dtype::BF16 => { type $T = half::bf16; $body }
            Dtype::F32 => { type $T = f32; $body }
            Dtype::F64 => { type $T = f64; $body }
            d => Err($crate::Error::Dtype(format!("{} needs a float input, got {d}", $what))),
        }
    }};
}
pub(crate) use float_dispatch;

/// Independent partial sums [`sum_by`] and [`dot`] keep: one running sum is
/// a serial chain of dependent adds the compiler may not reorder, eight are
/// SIMD lanes.
const LANES: usize = 8;

/// `sum(f(x))` over `x`, in [`LANES`] interleaved partial sums.
#[inline]
pub(crate) fn sum_by<T: Copy, A: Acc>(x: &[T], f: impl Fn(T) -> A) -> A {
    let mut lanes = [A::zero(); LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..LANES {
            lanes[k] += f(c[k]);
        }
    }
    tail.iter().fold(lanes.iter().fold(A::zero(), |s, &l| s + l), |s, &v| s + f(v))
}

/// The dot product of two equally long slices, in [`LANES`] partial sums.
#[inline]
pub(crate) fn dot<A: Acc>(a: &[A], b: &[A]) -> A {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [A::zero(); LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..LANES {
            lanes[k] += x[k] * y[k];
        }
    }
    ta.iter().zip(tb).fold(lanes.iter().fold(A::zero(), |s, &l| s + l), |s, (&x, &y)| s + x * y)
}

/// A contiguous output of `rows * row_len` elements, row `r` written by
/// `f(r, row)`; rows are spread over the worker pool when the output is large.
pub(crate) fn build_rows<T: CpuElement>(
    rows: usize,
    row_len: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) -> Result<CpuBuffer> {
    let n = rows * row_len;
    CpuBuffer::build(n, |v: &mut Vec<T>| {
        v.resize(n, T::from_f64(0.0));
        if row_len == 0 {
            return;
        }
        if n >= PARALLEL_MIN && rows > 1 {
            v.par_chunks_mut(row_len).enumerate().for_each(|(r, row)| f(r, row));
        } else {
            v.chunks_mut(row_len).enumerate().for_each(|(r, row)| f(r, row));
        }
    })
}

/// The indices in `idx` (any integer dtype) as `i64`, in row-major order.
pub(crate) fn indices_i64(idx: &Data) -> crate::Result<Vec<i64>> {
    use crate::dtype::Element;
    super::dispatch!(idx.buffer.dtype(), I => {
        if !I::DTYPE.is_integer() {
            return Err(crate::Error::Dtype(format!("indices must be integers, got {}", I::DTYPE)));
        }
        Ok(contiguous::<I>(idx)?.iter().map(|&x| x.to_i64()).collect())
    })
}

/// `i` (possibly negative, counting from the end) as an index into an axis
/// of size `n`, or an error naming it.
pub(crate) fn resolve_index(i: i64, n: usize, what: &str) -> crate::Result<usize> {
    let j = if i < 0 { i + n as i64 } else { i };
    if j < 0 || j >= n as i64 {
        return Err(crate::Error::InvalidArgument(format!(
            "{what}: index {i} is out of bounds for an axis of size {n}"
        )));
    }
    Ok(j as usize)
}
