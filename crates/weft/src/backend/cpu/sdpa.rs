//! `Sdpa`: fused scaled dot-product attention,
//! `softmax(scale * q k^T + mask) v`, one query row at a time.
//!
//! Keys are visited in blocks of [`BLOCK`] with an online softmax: the row
//! keeps its running maximum `m`, normalizer `s` and unnormalized output
//! `acc`, rescaled by `exp(m_old - m_new)` when a block raises the maximum.
//! The `[L, S]` score matrix is never materialized; a row needs `BLOCK + Dv`
//! accumulators. Grouped-query heads: query head `h` reads key/value head
//! `h / (Hq / Hk)`. A causal mask aligns the last query with the last key
//! (query `i` sees keys `j <= i + S - L`), as in MLX.

use super::rows::{build_rows, contiguous, dot, float_dispatch, Acc, FloatElem};
use crate::buffer::{CpuBuffer, CpuElement, Data};
use std::borrow::Cow;
use crate::dtype::Dtype;
use crate::primitive::OutSpec;
use crate::{Error, Result};
use num_traits::{Float, Zero};

const BLOCK: usize = 64;

pub(crate) fn sdpa(scale: f32, causal: bool, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
    let [b, hq, l, d] = dims4(&q.layout.shape)?;
    let [_, hk, s, _] = dims4(&k.layout.shape)?;
    let dv = v.layout.shape[3];
    let group = hq / hk.max(1);
    float_dispatch!(out.dtype, "scaled_dot_product_attention", T => {
        type A = <T as FloatElem>::A;
        let qa: Vec<A> = contiguous::<T>(q)?.iter().map(|&e| e.to_acc()).collect();
        let (ka, va) = (Heads::<A>::new::<T>(k)?, Heads::<A>::new::<T>(v)?);
        let mask = inputs.get(3).map(mask_source::<A>).transpose()?;
        let scale = A::of_f64(scale as f64);
        build_rows::<T>(b * hq * l, dv, |row, y| {
            let (bh, i) = (row / l, row % l);
            let (bi, h) = (bh / hq, bh % hq);
            let kvh = h / group;
            let qr = &qa[row * d..(row + 1) * d];
            // Keys this query may see: all, or up to its causal limit.
            let visible = if causal { (i + s + 1).saturating_sub(l).min(s) } else { s };
            let mut m = A::neg_infinity();
            let mut sum = A::zero();
            let mut acc = vec![A::zero(); dv];
            let mut scores = [A::zero(); BLOCK];
            for j0 in (0..visible).step_by(BLOCK) {
                let n = BLOCK.min(visible - j0);
                let mut bm = A::neg_infinity();
                for (t, sc) in scores[..n].iter_mut().enumerate() {
                    let kr = ka.row(bi, kvh, j0 + t);
                    *sc = dot(qr, kr) * scale;
                    if let Some(mk) = &mask {
                        *sc = *sc + mk.at(bi, h, i, j0 + t);
                    }
                    bm = bm.max(*sc);
                }
                if bm == A::neg_infinity() {
                    continue;
                }
                let m_new = m.max(bm);
                let corr = (m - m_new).exp();
                sum *= corr;
                acc.iter_mut().for_each(|a| *a *= corr);
                for (t, &sc) in scores[..n].iter().enumerate() {
                    let p = (sc - m_new).exp();
                    sum += p;
                    let vr = va.row(bi, kvh, j0 + t);
                    for (a, &x) in acc.iter_mut().zip(vr) {
                        *a += p * x;
                    }
                }
                m = m_new;
            }
            // A row whose visible keys all score -inf (a float mask of
            // -inf) gives 0/0 = NaN, as the unfused softmax of such a row.
            let inv = sum.recip();
            for (o, &a) in y.iter_mut().zip(&acc) {
                *o = T::from_acc(if sum == A::zero() { A::nan() } else { a * inv });
            }
        })
    })
}

/// Keys or values (`[B, H, S, D]`) as rows of `D` accumulator values, read
/// in the input's own memory when it already holds them with unit stride
/// along `D` (a float32 KV cache's filled part is a view of a longer buffer:
/// copying it would cost a pass over the whole cache per step), else from a
/// contiguous converted copy.
struct Heads<'a, A: Clone> {
    data: Cow<'a, [A]>,
    offset: usize,
    /// Element strides of `B`, `H` and `S`.
    strides: [usize; 3],
    d: usize,
}

impl<'a, A: Acc + CpuElement> Heads<'a, A> {
    fn new<T: FloatElem<A = A> + CpuElement>(x: &'a Data) -> Result<Heads<'a, A>> {
        let [_, h, s, d] = dims4(&x.layout.shape)?;
        if let (Some(all), &[sb, sh, ss, 1]) = (x.cpu_buffer().try_slice::<A>(), x.layout.strides.as_slice()) {
            // An empty view may sit at any offset (past its buffer's end too):
            // it takes the copy path, which reads nothing.
            if T::DTYPE == A::DTYPE && sb >= 0 && sh >= 0 && ss >= 0 && x.layout.numel() > 0 {
                let strides = [sb as usize, sh as usize, ss as usize];
                return Ok(Heads { data: Cow::Borrowed(all), offset: x.layout.offset, strides, d });
            }
        }
        let data: Vec<A> = contiguous::<T>(x)?.iter().map(|&e| e.to_acc()).collect();
        Ok(Heads { data: Cow::Owned(data), offset: 0, strides: [h * s * d, s * d, d], d })
    }

    /// Row `j` of head `h` of batch `b`.
    #[inline]
    fn row(&self, b: usize, h: usize, j: usize) -> &[A] {
        let [sb, sh, ss] = self.strides;
        &self.data[self.offset + b * sb + h * sh + j * ss..][..self.d]
    }
}

fn dims4(shape: &[usize]) -> Result<[usize; 4]> {
    shape
        .try_into()
        .map_err(|_| Error::Shape(format!("attention expects 4-D inputs, got shape {shape:?}")))
}

/// The mask's elements as additive scores (a bool mask keeps `true`: 0, and
/// drops `false`: the lowest finite value), addressed through the mask's own strides, so a
/// broadcast mask is read without being expanded.
struct MaskSource<A> {
    values: Vec<A>,
    strides: [isize; 4],
    offset: isize,
}

impl<A: Acc> MaskSource<A> {
    #[inline]
    fn at(&self, b: usize, h: usize, i: usize, j: usize) -> A {
        let st = &self.strides;
        let o = self.offset + b as isize * st[0] + h as isize * st[1] + i as isize * st[2] + j as isize * st[3];
        self.values[o as usize]
    }
}

fn mask_source<A: Acc>(m: &Data) -> Result<MaskSource<A>> {
    let strides: [isize; 4] = m
        .layout
        .strides
        .as_slice()
        .try_into()
        .map_err(|_| Error::Shape(format!("attention mask must be 4-D, got {:?}", m.layout.shape)))?;
    let buf = m.cpu_buffer();
    let values: Vec<A> = match buf.dtype() {
        // A dropped key scores the lowest finite value (MLX's rule), so a
        // row with every key dropped averages the values (uniform weights)
        // instead of dividing 0 by 0; with any key kept, the dropped ones
        // weigh exp(lowest - max) = 0.
        Dtype::Bool => buf.as_slice::<bool>().iter().map(|&k| if k { A::zero() } else { A::min_value() }).collect(),
        dt => super::dispatch!(dt, T => {
            buf.as_slice::<T>().iter().map(|&x| A::of_f64(crate::dtype::Element::to_f64(x))).collect()
        }),
    };
    Ok(MaskSource { values, strides, offset: m.layout.offset as isize })
}
