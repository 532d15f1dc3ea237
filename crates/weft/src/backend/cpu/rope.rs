//! `Rope`: rotary position embedding of `[..., L, D]`. Position `offset + l`
//! rotates feature pair `i` (of the first `dims` features) by
//! `(offset + l) * scale * base^(-2i / dims)`. Pairs are `(2i, 2i + 1)` in
//! the traditional layout, `(i, i + dims / 2)` otherwise; features past
//! `dims` pass through.

use super::rows::{build_rows, contiguous, float_dispatch, Acc, FloatElem};
use crate::buffer::{CpuBuffer, Data};
use crate::primitive::{OutSpec, RopeParams};
use crate::Result;

pub(crate) fn rope(p: &RopeParams, x: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let nd = out.shape.len();
    let (l, d) = (out.shape[nd - 2], out.shape[nd - 1]);
    let rows = if d == 0 { 0 } else { x.layout.numel() / d };
    let half = p.dims / 2;
    float_dispatch!(out.dtype, "rope", T => {
        type A = <T as FloatElem>::A;
        let src = contiguous::<T>(x)?;
        // (cos, sin) per position and pair, computed once in float64.
        let table: Vec<(A, A)> = (0..l)
            .flat_map(|pos| {
                let pos = (p.offset + pos) as f64 * p.scale as f64;
                (0..half).map(move |i| {
                    let theta = pos * (p.base as f64).powf(-2.0 * i as f64 / p.dims as f64);
                    (A::of_f64(theta.cos()), A::of_f64(theta.sin()))
                })
            })
            .collect();
        build_rows::<T>(rows, d, |r, y| {
            let x = &src[r * d..(r + 1) * d];
            let t = &table[(r % l) * half..(r % l + 1) * half];
            y.copy_from_slice(x);
            for (i, &(c, s)) in t.iter().enumerate() {
                let (i0, i1) = if p.traditional { (2 * i, 2 * i + 1) } else { (i, i + half) };
                let (a, b) = (x[i0].to_acc(), x[i1].to_acc());
                y[i0] = T::from_acc(a * c - b * s);
                y[i1] = T::from_acc(a * s + b * c);
            }
        })
    })
}
