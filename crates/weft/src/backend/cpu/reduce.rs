//! `Reduce` (sum, prod, max, min over axes) and `ArgReduce` (argmax, argmin along
//! one axis).
//!
//! Both start by splitting the input's dimensions into *kept* ones (in output
//! order) and *reduced* ones, dropping size-1 dimensions and merging
//! neighbours that sit contiguously in memory. Reduced dimensions may be
//! reordered and flipped (the result does not depend on their order), so a
//! transposed or reversed input still reduces over unit-stride runs.
//!
//! Two inner loops then cover the layouts that matter:
//! - *rows*: the reduced elements of one output are a unit-stride run (sums
//!   of contiguous rows), folded with several independent accumulators and
//!   pairwise blocks, which vectorizes and keeps float sums accurate;
//! - *columns*: the kept innermost dimension has unit stride (sums over
//!   leading axes), so each reduced position adds a contiguous run of
//!   elements into a run of accumulators.
//!
//! Everything else gathers with strides. Large inputs are split across the
//! worker pool over output elements, or, when there are too few outputs to
//! keep the threads busy, over the reduced elements (partial results are then
//! combined).

use super::num::Arith;
use super::{dispatch, PARALLEL_MIN};
use crate::buffer::{CpuBuffer, CpuElement, Data, Reservation};
use crate::dtype::Dtype;
use crate::primitive::{ArgReduceOp, OutSpec, ReduceOp};
use crate::{Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::ops::Range;

/// An element type and the type it accumulates in: `float16` and `bfloat16`
/// in `float32`, everything else in itself.
pub(crate) trait Reducible: CpuElement + Arith {
    type Acc: Arith;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(a: Self::Acc) -> Self;
    /// Calls `f` on consecutive pieces of `s` converted to the accumulator
    /// type: `s` itself when no conversion is needed, otherwise blocks
    /// converted in bulk (one SIMD conversion per block instead of a
    /// feature check per element).
    fn for_acc_blocks(s: &[Self], f: impl FnMut(&[Self::Acc]));
}

macro_rules! reducible_self {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            type Acc = $t;
            #[inline(always)] fn to_acc(self) -> $t { self }
            #[inline(always)] fn from_acc(a: $t) -> $t { a }
            #[inline(always)]
            fn for_acc_blocks(s: &[$t], mut f: impl FnMut(&[$t])) { f(s) }
        }
    )*};
}
reducible_self!(bool, u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, crate::Complex64);

macro_rules! reducible_half {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            type Acc = f32;
            #[inline(always)] fn to_acc(self) -> f32 { self.to_f32() }
            #[inline(always)] fn from_acc(a: f32) -> $t { <$t>::from_f32(a) }
            #[inline]
            fn for_acc_blocks(s: &[$t], mut f: impl FnMut(&[f32])) {
                use half::slice::HalfFloatSliceExt;
                let mut buf = [0f32; 512];
                for c in s.chunks(buf.len()) {
                    let b = &mut buf[..c.len()];
                    c.convert_to_f32_slice(b);
                    f(b);
                }
            }
        }
    )*};
}
reducible_half!(f16, bf16);

/// A reduction as a monoid over the accumulator type (scans use it too).
pub(super) trait Monoid<A>: Copy + Send + Sync {
    fn identity() -> A;
    fn combine(a: A, b: A) -> A;
}

#[derive(Clone, Copy)]
pub(super) struct Sum;
#[derive(Clone, Copy)]
pub(super) struct Prod;
#[derive(Clone, Copy)]
pub(super) struct Max;
#[derive(Clone, Copy)]
pub(super) struct Min;

impl<A: Arith> Monoid<A> for Sum {
    #[inline(always)]
    fn identity() -> A {
        A::from_f64(0.0)
    }
    #[inline(always)]
    fn combine(a: A, b: A) -> A {
        a.add(b)
    }
}

impl<A: Arith> Monoid<A> for Prod {
    #[inline(always)]
    fn identity() -> A {
        A::from_f64(1.0)
    }
    #[inline(always)]
    fn combine(a: A, b: A) -> A {
        a.mul(b)
    }
}

// Max and min propagate NaN (as NumPy): written as selects rather than
// branches, so that the folds vectorize. `b != b` is "b is NaN" (always
// false for integers, where it compiles away).
impl<A: Arith> Monoid<A> for Max {
    #[inline(always)]
    fn identity() -> A {
        // The smallest value of the type (float -inf; `as` saturates for
        // integers); for bool, whose `from_f64` is "nonzero", false.
        if A::DTYPE == Dtype::Bool { A::from_f64(0.0) } else { A::from_f64(f64::NEG_INFINITY) }
    }
    #[inline(always)]
    #[allow(clippy::eq_op)]
    fn combine(a: A, b: A) -> A {
        // A NaN `a` is kept: `b > a` is false.
        let m = if b > a { b } else { a };
        if b != b { b } else { m }
    }
}

impl<A: Arith> Monoid<A> for Min {
    #[inline(always)]
    fn identity() -> A {
        A::from_f64(f64::INFINITY)
    }
    #[inline(always)]
    #[allow(clippy::eq_op)]
    fn combine(a: A, b: A) -> A {
        let m = if b < a { b } else { a };
        if b != b { b } else { m }
    }
}

/// Size and element stride of one dimension.
type Dim = (usize, isize);

/// Merges neighbouring dimensions whose elements are evenly spaced across
/// both (outer stride = inner stride * inner size), keeping iteration order.
fn merge(dims: Vec<Dim>) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::with_capacity(dims.len());
    for (n, s) in dims {
        match out.last_mut() {
            Some(last) if last.1 == s * n as isize => *last = (last.0 * n, s),
            _ => out.push((n, s)),
        }
    }
    out
}

/// Offsets of the elements of `dims` in row-major order, starting at flat
/// index `start`, relative to the first element.
struct Odometer<'a> {
    dims: &'a [Dim],
    idx: Vec<usize>,
    off: isize,
}

impl<'a> Odometer<'a> {
    fn new(dims: &'a [Dim], start: usize) -> Odometer<'a> {
        let mut idx = vec![0; dims.len()];
        let mut rest = start;
        let mut off = 0;
        for (d, &(n, s)) in dims.iter().enumerate().rev() {
            idx[d] = rest % n;
            rest /= n;
            off += idx[d] as isize * s;
        }
        Odometer { dims, idx, off }
    }

    /// The current offset; then steps to the next element.
    #[inline]
    fn next_offset(&mut self) -> isize {
        let cur = self.off;
        for d in (0..self.dims.len()).rev() {
            let (n, s) = self.dims[d];
            self.idx[d] += 1;
            self.off += s;
            if self.idx[d] < n {
                return cur;
            }
            self.off -= s * n as isize;
            self.idx[d] = 0;
        }
        cur
    }
}

/// Offset of flat index `i` of `dims`.
fn offset_of(dims: &[Dim], mut i: usize) -> isize {
    let mut off = 0;
    for &(n, s) in dims.iter().rev() {
        off += (i % n) as isize * s;
        i /= n;
    }
    off
}

/// How to walk an input for one reduction, after simplifying its layout.
struct Plan {
    /// Buffer offset of the first element visited.
    base: isize,
    /// Kept dimensions, in output order (merged, without size-1 ones).
    kept: Vec<Dim>,
    /// Offsets (relative to an output's first element) of each run of the
    /// innermost reduced dimension.
    runs: Vec<isize>,
    /// Length and stride of the innermost reduced dimension.
    inner: Dim,
}

impl Plan {
    /// `order_free`: the reduced dimensions may be visited in any order.
    fn new(a: &Data, reduced: &[usize], order_free: bool) -> Plan {
        let l = &a.layout;
        let mut base = l.offset as isize;
        let (mut kept, mut red) = (Vec::new(), Vec::new());
        for (d, (&n, &s)) in l.shape.iter().zip(&l.strides).enumerate() {
            if n == 1 {
                continue;
            }
            if !reduced.contains(&d) {
                kept.push((n, s));
            } else if order_free && s < 0 {
                // Visit a reversed dimension forwards.
                base += s * (n as isize - 1);
                red.push((n, -s));
            } else {
                red.push((n, s));
            }
        }
        if order_free {
            // Largest strides outside: the innermost reduced run gets the
            // smallest stride (unit stride when there is one).
            red.sort_by_key(|&(_, s)| std::cmp::Reverse(s.unsigned_abs()));
        }
        let kept = merge(kept);
        let mut red = merge(red);
        let inner = red.pop().unwrap_or((1, 0));
        let n_runs: usize = red.iter().map(|d| d.0).product();
        let mut od = Odometer::new(&red, 0);
        let runs = (0..n_runs).map(|_| od.next_offset()).collect();
        Plan { base, kept, runs, inner }
    }

    /// Whether the kept innermost dimension is a better vector than the
    /// reduced one: unit stride, while the reduced run is not.
    fn columns(&self) -> bool {
        matches!(self.kept.last(), Some(&(n, 1)) if n > 1) && self.inner.1 != 1
    }

    fn n_reduced(&self) -> usize {
        self.runs.len() * self.inner.0
    }
}

/// Splits the `n_out * n_red` elements of a reduction across the pool when
/// it is large: over outputs if there are enough of them, otherwise over the
/// reduced elements.
enum Split {
    Serial,
    Outputs { chunk: usize },
    Reduced,
}

fn split(n_out: usize, n_red: usize, columns: bool) -> Split {
    let threads = rayon::current_num_threads();
    if threads < 2 || n_out.saturating_mul(n_red) < PARALLEL_MIN {
        Split::Serial
    } else if n_out >= 2 * threads && !(columns && n_out <= COLUMNS_MAX && n_red >= 8 * threads) {
        // Several chunks per thread for balance, each reading at least a few
        // thousand elements.
        let chunk = n_out.div_ceil(4 * threads).max((1 << 12) / n_red.max(1)).max(1);
        Split::Outputs { chunk }
    } else {
        Split::Reduced
    }
}

/// Column reductions with at most this many outputs split over bands of
/// the reduced rows instead: each task then reads whole rows in order, and
/// the per-task partial results stay small.
const COLUMNS_MAX: usize = 1 << 14;

/// Pieces of the reduced elements for a `Split::Reduced`: ranges of runs
/// when there are enough runs, otherwise ranges of the innermost dimension.
fn reduced_pieces(n_runs: usize, inner: usize) -> Vec<(Range<usize>, Range<usize>)> {
    let pieces = 4 * rayon::current_num_threads();
    let ranges = |n: usize| {
        let step = n.div_ceil(pieces).max(1);
        (0..n).step_by(step).map(move |s| s..(s + step).min(n))
    };
    if n_runs >= pieces {
        ranges(n_runs).map(|r| (r, 0..inner)).collect()
    } else {
        ranges(inner).map(|i| (0..n_runs, i)).collect()
    }
}

pub(crate) fn reduce(op: ReduceOp, axes: &[usize], a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    let dtype = a.buffer.dtype();
    if out.dtype != dtype {
        return Err(Error::Kernel(format!("reduce: output {} differs from input {dtype}", out.dtype)));
    }
    dispatch!(dtype, T => match op {
        ReduceOp::Sum => reduce_typed::<T, Sum>(axes, a),
        ReduceOp::Prod => reduce_typed::<T, Prod>(axes, a),
        ReduceOp::Max => reduce_typed::<T, Max>(axes, a),
        ReduceOp::Min => reduce_typed::<T, Min>(axes, a),
    })
}

fn reduce_typed<T: Reducible, M: Monoid<T::Acc>>(axes: &[usize], a: &Data) -> Result<CpuBuffer> {
    let n_out: usize =
        a.layout.shape.iter().enumerate().filter(|(d, _)| !axes.contains(d)).map(|(_, &n)| n).product();
    let n_red: usize = axes.iter().map(|&d| a.layout.shape[d]).product();
    if n_out == 0 || n_red == 0 {
        // An empty reduction gives the identity (a sum of nothing is 0).
        return CpuBuffer::build(n_out, |v| v.resize(n_out, T::from_acc(M::identity())));
    }
    let plan = Plan::new(a, axes, true);
    let src = a.cpu_buffer().as_slice::<T>();
    let _scratch = Reservation::new(n_out * std::mem::size_of::<T::Acc>())?;
    let mut acc = vec![M::identity(); n_out];
    let all_runs = 0..plan.runs.len();
    match split(n_out, plan.n_reduced(), plan.columns()) {
        Split::Serial => reduce_part::<T, M>(&plan, src, 0, all_runs, 0..plan.inner.0, &mut acc),
        Split::Outputs { chunk } => acc.par_chunks_mut(chunk).enumerate().for_each(|(c, part)| {
            reduce_part::<T, M>(&plan, src, c * chunk, all_runs.clone(), 0..plan.inner.0, part)
        }),
        Split::Reduced => {
            let partials: Vec<Vec<T::Acc>> = reduced_pieces(plan.runs.len(), plan.inner.0)
                .into_par_iter()
                .map(|(runs, inner)| {
                    let mut part = vec![M::identity(); n_out];
                    reduce_part::<T, M>(&plan, src, 0, runs, inner, &mut part);
                    part
                })
                .collect();
            for p in partials {
                acc.iter_mut().zip(p).for_each(|(x, y)| *x = M::combine(*x, y));
            }
        }
    }
    CpuBuffer::build(n_out, |v| v.extend(acc.iter().map(|&x| T::from_acc(x))))
}

/// Folds runs `runs` and inner positions `inner` of the outputs starting at
/// flat output index `o0` into `acc` (one slot per output).
fn reduce_part<T: Reducible, M: Monoid<T::Acc>>(
    plan: &Plan,
    src: &[T],
    o0: usize,
    runs: Range<usize>,
    inner: Range<usize>,
    acc: &mut [T::Acc],
) {
    let runs = &plan.runs[runs];
    let (len, stride) = (inner.len(), plan.inner.1);
    let skip = inner.start as isize * stride;
    if plan.columns() {
        // Blocks of columns small enough for their accumulators to stay in cache.
        const BLOCK: usize = 2048;
        let (cols, outer) = plan.kept.split_last().expect("columns need a kept dimension");
        let cols = cols.0;
        let mut o = o0;
        let mut rest = acc;
        while !rest.is_empty() {
            let (row, c0) = (o / cols, o % cols);
            let n = (cols - c0).min(rest.len()).min(BLOCK);
            let (block, tail) = rest.split_at_mut(n);
            let b = plan.base + offset_of(outer, row) + c0 as isize + skip;
            for &r in runs {
                for i in 0..len as isize {
                    let p = (b + r + i * stride) as usize;
                    let mut at = 0;
                    T::for_acc_blocks(&src[p..p + n], |ys| {
                        for (x, &y) in block[at..at + ys.len()].iter_mut().zip(ys) {
                            *x = M::combine(*x, y);
                        }
                        at += ys.len();
                    });
                }
            }
            rest = tail;
            o += n;
        }
        return;
    }
    let mut od = Odometer::new(&plan.kept, o0);
    for x in acc.iter_mut() {
        let b = plan.base + od.next_offset() + skip;
        let mut v = *x;
        for &r in runs {
            let p = b + r;
            if stride == 1 {
                v = M::combine(v, fold_run::<T, M>(&src[p as usize..p as usize + len]));
            } else {
                for i in 0..len as isize {
                    v = M::combine(v, src[(p + i * stride) as usize].to_acc());
                }
            }
        }
        *x = v;
    }
}

/// Folds a contiguous run: eight independent accumulators (so the loop
/// vectorizes) over blocks combined pairwise (so float sums lose about
/// `log2(n)` roundings, not `n`).
fn fold_run<T: Reducible, M: Monoid<T::Acc>>(s: &[T]) -> T::Acc {
    const BLOCK: usize = 512;
    const LANES: usize = 8;
    if s.len() > BLOCK {
        let half = (s.len() / 2).next_multiple_of(LANES);
        let (a, b) = s.split_at(half);
        return M::combine(fold_run::<T, M>(a), fold_run::<T, M>(b));
    }
    let mut lanes = [M::identity(); LANES];
    let mut v = M::identity();
    T::for_acc_blocks(s, |s| {
        let chunks = s.chunks_exact(LANES);
        let tail = chunks.remainder();
        for c in chunks {
            for k in 0..LANES {
                lanes[k] = M::combine(lanes[k], c[k]);
            }
        }
        for &x in tail {
            v = M::combine(v, x);
        }
    });
    // Pairwise over the lanes too.
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            lanes[k] = M::combine(lanes[k], lanes[k + w]);
        }
    }
    M::combine(lanes[0], v)
}

pub(crate) fn arg_reduce(op: ArgReduceOp, axis: usize, a: &Data, out: OutSpec<'_>) -> Result<CpuBuffer> {
    if out.dtype != Dtype::U32 {
        return Err(Error::Kernel(format!("arg_reduce: output must be uint32, got {}", out.dtype)));
    }
    let n = a.layout.shape[axis];
    if n == 0 || n > u32::MAX as usize {
        return Err(Error::Kernel(format!("arg_reduce: axis of size {n} has no uint32 index of an extremum")));
    }
    dispatch!(a.buffer.dtype(), T => match op {
        ArgReduceOp::ArgMax => arg_typed::<T, true>(axis, a),
        ArgReduceOp::ArgMin => arg_typed::<T, false>(axis, a),
    })
}

/// Whether `x` replaces `best` as the running extremum: strictly greater
/// (less) values do, and a NaN beats every number, as in NumPy. Ties keep the
/// earlier index.
#[inline(always)]
fn better<T: PartialOrd, const MAX: bool>(x: T, best: T) -> bool {
    #[allow(clippy::eq_op)]
    let (x_nan, best_nan) = (x != x, best != best);
    !best_nan && (x_nan || if MAX { x > best } else { x < best })
}

fn arg_typed<T: Reducible, const MAX: bool>(axis: usize, a: &Data) -> Result<CpuBuffer> {
    let n_out = a.layout.numel() / a.layout.shape[axis];
    if n_out == 0 {
        return CpuBuffer::build::<u32>(0, |_| {});
    }
    // The axis is walked in order (ties pick the first index).
    let plan = Plan::new(a, &[axis], false);
    let src = a.cpu_buffer().as_slice::<T>();
    let n = plan.inner.0;
    let first = src[plan.base as usize];
    let _scratch = Reservation::new(n_out * std::mem::size_of::<T>())?;
    let mut best = vec![first; n_out];
    let mut idx = vec![0u32; n_out];
    match split(n_out, n, plan.columns()) {
        Split::Serial => arg_part::<T, MAX>(&plan, src, 0, 0..n, &mut best, &mut idx),
        Split::Outputs { chunk } => best
            .par_chunks_mut(chunk)
            .zip(idx.par_chunks_mut(chunk))
            .enumerate()
            .for_each(|(c, (b, i))| arg_part::<T, MAX>(&plan, src, c * chunk, 0..n, b, i)),
        Split::Reduced => {
            let partials: Vec<(Vec<T>, Vec<u32>)> = reduced_pieces(1, n)
                .into_par_iter()
                .map(|(_, range)| {
                    let (mut b, mut i) = (vec![first; n_out], vec![0u32; n_out]);
                    arg_part::<T, MAX>(&plan, src, 0, range, &mut b, &mut i);
                    (b, i)
                })
                .collect();
            // Pieces in index order: a later piece wins only if strictly better.
            let mut partials = partials.into_iter();
            if let Some((b, i)) = partials.next() {
                (best, idx) = (b, i);
            }
            for (b, i) in partials {
                for o in 0..n_out {
                    if better::<T, MAX>(b[o], best[o]) {
                        best[o] = b[o];
                        idx[o] = i[o];
                    }
                }
            }
        }
    }
    CpuBuffer::from_vec(idx)
}

/// The extremum and its index over positions `range` of the axis, for the
/// outputs starting at flat output index `o0`.
fn arg_part<T: Reducible, const MAX: bool>(
    plan: &Plan,
    src: &[T],
    o0: usize,
    range: Range<usize>,
    best: &mut [T],
    idx: &mut [u32],
) {
    let s = plan.inner.1;
    let k0 = range.start;
    if plan.columns() {
        let (cols, outer) = plan.kept.split_last().expect("columns need a kept dimension");
        let cols = cols.0;
        let mut o = o0;
        let mut done = 0;
        while done < best.len() {
            let (row, c0) = (o / cols, o % cols);
            let n = (cols - c0).min(best.len() - done);
            let (bb, ii) = (&mut best[done..done + n], &mut idx[done..done + n]);
            let b = plan.base + offset_of(outer, row) + c0 as isize;
            let at = |k: usize| {
                let p = (b + k as isize * s) as usize;
                &src[p..p + n]
            };
            bb.copy_from_slice(at(k0));
            ii.fill(k0 as u32);
            for k in range.clone().skip(1) {
                for ((x, j), &y) in bb.iter_mut().zip(ii.iter_mut()).zip(at(k)) {
                    // Selects, not branches: the loop can vectorize.
                    let take = better::<T, MAX>(y, *x);
                    *x = if take { y } else { *x };
                    *j = if take { k as u32 } else { *j };
                }
            }
            done += n;
            o += n;
        }
        return;
    }
    let mut od = Odometer::new(&plan.kept, o0);
    for (x, j) in best.iter_mut().zip(idx.iter_mut()) {
        let b = plan.base + od.next_offset();
        if s == 1 {
            // A contiguous run: find the extremum with a vectorized fold,
            // then its first position (the first NaN if it is NaN).
            let row = &src[(b as usize + k0)..(b as usize + range.end)];
            let m = if MAX { fold_run::<T, Max>(row) } else { fold_run::<T, Min>(row) };
            #[allow(clippy::eq_op)]
            let pos = if m != m {
                row.iter().position(|&y| y != y)
            } else {
                row.iter().position(|&y| y.to_acc() == m)
            };
            let pos = pos.unwrap_or(0);
            *x = row[pos];
            *j = (k0 + pos) as u32;
            continue;
        }
        let (mut v, mut at) = (src[(b + k0 as isize * s) as usize], k0);
        for k in range.clone().skip(1) {
            let y = src[(b + k as isize * s) as usize];
            if better::<T, MAX>(y, v) {
                v = y;
                at = k;
            }
        }
        *x = v;
        *j = at as u32;
    }
}
