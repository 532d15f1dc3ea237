//! Walking strided data: the row-major reads (`contiguous_slice`,
//! `for_each`, `to_vec`) and the elementwise maps (`map1`..`map3`) every
//! CPU kernel builds on. Contiguous operands take slice fast paths; strided
//! and broadcast ones are walked one innermost row at a time
//! (`shape::for_each_row`), large outputs in parallel on the worker pool.

use super::PARALLEL_MIN;
use crate::buffer::{CpuBuffer, CpuElement, Data};
use crate::shape::{for_each_row, Layout};
use crate::Result;
use rayon::prelude::*;

/// The elements of `data` in row-major order, as a slice when they already
/// are contiguous.
pub(crate) fn contiguous_slice<T: CpuElement>(data: &Data) -> Option<&[T]> {
    let l = &data.layout;
    if l.numel() == 0 {
        // An empty view may sit at any offset, even past its buffer's end.
        return Some(&[]);
    }
    l.is_contiguous()
        .then(|| &data.cpu_buffer().as_slice::<T>()[l.offset..l.offset + l.numel()])
}

/// Calls `f` with each element of `data` in row-major order.
pub(crate) fn for_each<T: CpuElement>(data: &Data, mut f: impl FnMut(T)) {
    if let Some(s) = contiguous_slice::<T>(data) {
        s.iter().for_each(|&x| f(x));
        return;
    }
    let src = data.cpu_buffer().as_slice::<T>();
    let l = &data.layout;
    let inner = *l.strides.last().unwrap_or(&1);
    for_each_row(&l.shape, [&l.strides], [l.offset], |[o], n| {
        for i in 0..n as isize {
            f(src[(o + i * inner) as usize]);
        }
    });
}

/// `data`'s elements in row-major order, in a new Vec (allocated through
/// `buffer::host_vec`: reserved first, fallible).
pub(crate) fn to_vec<T: CpuElement>(data: &Data) -> Result<Vec<T>> {
    let (mut v, _counted_while_filling) = crate::buffer::host_vec::<T>(data.layout.numel())?;
    copy_into(data, &mut v);
    Ok(v)
}

/// `data`'s elements in row-major order, in a new buffer.
pub(crate) fn copy_to_buffer<T: CpuElement>(data: &Data) -> Result<CpuBuffer> {
    CpuBuffer::build::<T>(data.layout.numel(), |v| copy_into(data, v))
}

/// Appends `data`'s elements in row-major order to the empty `v`, which has
/// room for them.
fn copy_into<T: CpuElement>(data: &Data, v: &mut Vec<T>) {
    if let Some(s) = contiguous_slice::<T>(data) {
        v.extend_from_slice(s);
        return;
    }
    let src = data.cpu_buffer().as_slice::<T>();
    let l = &data.layout;
    let inner = *l.strides.last().unwrap_or(&1);
    v.resize(l.numel(), T::from_f64(0.0));
    fill_rows(v, &l.shape, [&l.strides], [l.offset], |[o], row| {
        if inner == 1 {
            row.copy_from_slice(&src[o as usize..o as usize + row.len()]);
        } else {
            for (i, y) in row.iter_mut().enumerate() {
                *y = src[(o + i as isize * inner) as usize];
            }
        }
    });
}

/// Writes `out` (contiguous, `numel(shape)` elements) one innermost row of
/// `shape` at a time: `f(offsets, row)` gets each operand's element offset
/// of the row's first element. Large outputs are cut into ranges of whole
/// rows, walked on the worker pool; each output element is written by
/// exactly one call.
pub(crate) fn fill_rows<T: Send, const K: usize>(
    out: &mut [T],
    shape: &[usize],
    strides: [&[isize]; K],
    offsets: [usize; K],
    f: impl Fn([isize; K], &mut [T]) + Sync + Send,
) {
    use crate::shape::{for_each_row_in, row_count};
    let (rows, n) = (row_count(shape), out.len());
    debug_assert_eq!(n, crate::shape::numel(shape));
    if n == 0 {
        return;
    }
    let inner = n / rows;
    let walk = |first: usize, part: &mut [T]| {
        let mut at = 0;
        for_each_row_in(shape, strides, offsets, first..first + part.len() / inner, |o, m| {
            f(o, &mut part[at..at + m]);
            at += m;
        });
    };
    // In parallel only inside weft's pool: a user thread reading
    // (`Array::to_vec`) walks on its own thread, never on rayon's global
    // pool (docs/architecture.md, "Threads and shutdown").
    if n >= PARALLEL_MIN && rows > 1 && crate::scheduler::on_pool() {
        // About four ranges per worker, for balance.
        let per = rows.div_ceil(4 * rayon::current_num_threads()).max(1);
        out.par_chunks_mut(per * inner).enumerate().for_each(|(c, part)| walk(c * per, part));
    } else {
        walk(0, out);
    }
}

/// Elementwise map of one input (already laid out as the output).
pub(crate) fn map1<T: CpuElement, U: CpuElement>(
    a: &Data,
    f: impl Fn(T) -> U + Sync + Send,
) -> Result<CpuBuffer> {
    let n = a.layout.numel();
    CpuBuffer::build(n, |v| match contiguous_slice::<T>(a) {
        Some(s) if n >= PARALLEL_MIN => v.par_extend(s.par_iter().map(|&x| f(x))),
        Some(s) => v.extend(s.iter().map(|&x| f(x))),
        None => {
            let (src, l) = (a.cpu_buffer().as_slice::<T>(), &a.layout);
            let inner = *l.strides.last().unwrap_or(&1);
            v.resize(n, U::from_f64(0.0));
            fill_rows(v, &l.shape, [&l.strides], [l.offset], |[o], row| {
                for (i, y) in row.iter_mut().enumerate() {
                    *y = f(src[(o + i as isize * inner) as usize]);
                }
            });
        }
    })
}

/// Elementwise map of two inputs broadcast to `shape`.
pub(crate) fn map2<A: CpuElement, B: CpuElement, U: CpuElement>(
    a: &Data,
    b: &Data,
    shape: &[usize],
    f: impl Fn(A, B) -> U + Sync + Send,
) -> Result<CpuBuffer> {
    let la = a.layout.broadcast_to(shape);
    let lb = b.layout.broadcast_to(shape);
    let (sa, sb) = (a.cpu_buffer().as_slice::<A>(), b.cpu_buffer().as_slice::<B>());
    let n = crate::shape::numel(shape);
    if n == 0 {
        // An empty view may sit at any offset, even past its buffer's end
        // (a slice of a zero-length axis): read nothing.
        return CpuBuffer::build::<U>(0, |_| {});
    }
    let par = n >= PARALLEL_MIN;
    CpuBuffer::build(n, |v| {
        match (la.is_contiguous(), lb.is_contiguous()) {
            (true, true) => {
                let (x, y) = (&sa[la.offset..la.offset + n], &sb[lb.offset..lb.offset + n]);
                if par {
                    v.par_extend(x.par_iter().zip(y).map(|(&x, &y)| f(x, y)))
                } else {
                    v.extend(x.iter().zip(y).map(|(&x, &y)| f(x, y)))
                }
            }
            (true, false) if lb.is_scalar_broadcast() => {
                let (x, y) = (&sa[la.offset..la.offset + n], sb[lb.offset]);
                if par {
                    v.par_extend(x.par_iter().map(|&x| f(x, y)))
                } else {
                    v.extend(x.iter().map(|&x| f(x, y)))
                }
            }
            (false, true) if la.is_scalar_broadcast() => {
                let (x, y) = (sa[la.offset], &sb[lb.offset..lb.offset + n]);
                if par {
                    v.par_extend(y.par_iter().map(|&y| f(x, y)))
                } else {
                    v.extend(y.iter().map(|&y| f(x, y)))
                }
            }
            _ => {
                let (ia, ib) = (*la.strides.last().unwrap_or(&0), *lb.strides.last().unwrap_or(&0));
                v.resize(n, U::from_f64(0.0));
                fill_rows(v, shape, [&la.strides, &lb.strides], [la.offset, lb.offset], |[oa, ob], row| {
                    let (oa, ob, m) = (oa as usize, ob as usize, row.len());
                    // Rows that are runs or repeats of one element (a bias
                    // row, a column broadcast) go through slices, which vectorize.
                    match (ia, ib) {
                        (1, 1) => {
                            let (x, y) = (&sa[oa..oa + m], &sb[ob..ob + m]);
                            row.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (&x, &y))| *o = f(x, y));
                        }
                        (1, 0) => {
                            let y = sb[ob];
                            row.iter_mut().zip(&sa[oa..oa + m]).for_each(|(o, &x)| *o = f(x, y));
                        }
                        (0, 1) => {
                            let x = sa[oa];
                            row.iter_mut().zip(&sb[ob..ob + m]).for_each(|(o, &y)| *o = f(x, y));
                        }
                        _ => {
                            for (i, o) in row.iter_mut().enumerate() {
                                let i = i as isize;
                                *o = f(sa[(oa as isize + i * ia) as usize], sb[(ob as isize + i * ib) as usize]);
                            }
                        }
                    }
                });
            }
        }
    })
}

/// Elementwise map of three inputs broadcast to `shape` (general path only:
/// `where` is rarely hot enough to need more).
pub(crate) fn map3<A: CpuElement, B: CpuElement, C: CpuElement, U: CpuElement>(
    a: &Data,
    b: &Data,
    c: &Data,
    shape: &[usize],
    f: impl Fn(A, B, C) -> U,
) -> Result<CpuBuffer> {
    let ls: [Layout; 3] = [a, b, c].map(|d| d.layout.broadcast_to(shape));
    let (sa, sb, sc) = (
        a.cpu_buffer().as_slice::<A>(),
        b.cpu_buffer().as_slice::<B>(),
        c.cpu_buffer().as_slice::<C>(),
    );
    let inner = ls.clone().map(|l| *l.strides.last().unwrap_or(&0));
    let n = crate::shape::numel(shape);
    CpuBuffer::build(n, |v| {
        for_each_row(
            shape,
            [&ls[0].strides, &ls[1].strides, &ls[2].strides],
            [ls[0].offset, ls[1].offset, ls[2].offset],
            |[oa, ob, oc], m| {
                for i in 0..m as isize {
                    v.push(f(
                        sa[(oa + i * inner[0]) as usize],
                        sb[(ob + i * inner[1]) as usize],
                        sc[(oc + i * inner[2]) as usize],
                    ));
                }
            },
        );
    })
}

/// How an elementwise kernel applies its per-element function `f`: to whole
/// arrays ([`Whole1`]..[`Whole3`], through `map1`..`map3`) or to one chunk of
/// a fused program (`fused.rs`). Each op's function is chosen once, in the
/// op's own file (`unary.rs`, `binary.rs`, `select.rs`, `astype.rs`), and
/// handed to either, so the fused kernel computes exactly what the op's own
/// kernel does.
pub(crate) trait Apply1 {
    type Out;
    fn apply<T: CpuElement, U: CpuElement>(self, f: impl Fn(T) -> U + Sync + Send + Copy) -> Result<Self::Out>;
}

/// [`Apply1`] for functions of two elements.
pub(crate) trait Apply2 {
    type Out;
    fn apply<A: CpuElement, B: CpuElement, U: CpuElement>(self, f: impl Fn(A, B) -> U + Sync + Send + Copy) -> Result<Self::Out>;
}

/// [`Apply1`] for functions of three elements.
pub(crate) trait Apply3 {
    type Out;
    fn apply<A: CpuElement, B: CpuElement, C: CpuElement, U: CpuElement>(
        self,
        f: impl Fn(A, B, C) -> U + Sync + Send + Copy,
    ) -> Result<Self::Out>;
}

/// A whole array (laid out as the output) through [`map1`].
pub(crate) struct Whole1<'a>(pub &'a Data);

impl Apply1 for Whole1<'_> {
    type Out = CpuBuffer;
    fn apply<T: CpuElement, U: CpuElement>(self, f: impl Fn(T) -> U + Sync + Send + Copy) -> Result<CpuBuffer> {
        map1(self.0, f)
    }
}

/// Two whole arrays broadcast to a shape, through [`map2`].
pub(crate) struct Whole2<'a>(pub &'a Data, pub &'a Data, pub &'a [usize]);

impl Apply2 for Whole2<'_> {
    type Out = CpuBuffer;
    fn apply<A: CpuElement, B: CpuElement, U: CpuElement>(self, f: impl Fn(A, B) -> U + Sync + Send + Copy) -> Result<CpuBuffer> {
        map2(self.0, self.1, self.2, f)
    }
}

/// Three whole arrays broadcast to a shape, through [`map3`].
pub(crate) struct Whole3<'a>(pub &'a Data, pub &'a Data, pub &'a Data, pub &'a [usize]);

impl Apply3 for Whole3<'_> {
    type Out = CpuBuffer;
    fn apply<A: CpuElement, B: CpuElement, C: CpuElement, U: CpuElement>(
        self,
        f: impl Fn(A, B, C) -> U + Sync + Send + Copy,
    ) -> Result<CpuBuffer> {
        map3(self.0, self.1, self.2, self.3, f)
    }
}
