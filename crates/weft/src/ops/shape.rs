//! Shape ops: `reshape`, `transpose`, `broadcast_to`, `slice`,
//! `concatenate`, `expand_dims`, `squeeze`. All but `concatenate` are views.

use super::{arange, astype};
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::shape::{broadcast_shapes, checked_numel, normalize_axis, numel, Axes};
use crate::{bail, Array, Result};

/// Same elements in a new shape; one dimension may be `-1` (inferred).
pub fn reshape(a: &Array, shape: &[isize]) -> Result<Array> {
    let known: Vec<usize> = shape.iter().filter(|&&d| d >= 0).map(|&d| d as usize).collect();
    let known = checked_numel(&known)?;
    let mut out = Vec::with_capacity(shape.len());
    let mut inferred = false;
    for &d in shape {
        if d == -1 {
            if inferred {
                bail!(Shape, "reshape: only one dimension can be -1, got {shape:?}");
            }
            inferred = true;
            if known == 0 || a.size() % known != 0 {
                bail!(Shape, "cannot reshape array of shape {:?} into {shape:?}", a.shape());
            }
            out.push(a.size() / known);
        } else if d < 0 {
            bail!(Shape, "reshape: invalid dimension {d} in {shape:?}");
        } else {
            out.push(d as usize);
        }
    }
    if checked_numel(&out)? != a.size() {
        bail!(Shape, "cannot reshape array of shape {:?} into {shape:?}", a.shape());
    }
    if out == a.shape() {
        return Ok(a.clone());
    }
    Array::from_op(Primitive::Reshape, vec![a.clone()], out, a.dtype())
}

/// `a` in `dtype` as a new array computed on the default stream (so on its
/// device, e.g. weights moved to a GPU once): `astype` when the dtype
/// changes, else a contiguous copy (`astype` to the same dtype is `a`
/// itself, and a view would keep reading `a`'s buffer).
pub fn copy_as(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() != dtype {
        return astype(a, dtype);
    }
    Array::from_op(Primitive::Copy, vec![a.clone()], a.shape().to_vec(), dtype)
}

/// Permutes the axes; an empty `perm` reverses them.
pub fn transpose(a: &Array, perm: &[isize]) -> Result<Array> {
    let perm: Vec<usize> = if perm.is_empty() {
        (0..a.ndim()).rev().collect()
    } else {
        perm.iter().map(|&p| normalize_axis(p, a.ndim())).collect::<Result<_>>()?
    };
    let mut seen = vec![false; a.ndim()];
    if perm.len() != a.ndim() || perm.iter().any(|&p| std::mem::replace(&mut seen[p], true)) {
        bail!(Shape, "transpose: {perm:?} is not a permutation of the axes of shape {:?}", a.shape());
    }
    let shape = perm.iter().map(|&p| a.shape()[p]).collect();
    Array::from_op(Primitive::Transpose { perm }, vec![a.clone()], shape, a.dtype())
}

/// `a` broadcast to `shape` (a view: no copy).
pub fn broadcast_to(a: &Array, shape: &[usize]) -> Result<Array> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    if broadcast_shapes(a.shape(), shape)? != shape {
        bail!(Shape, "cannot broadcast shape {:?} to {shape:?}", a.shape());
    }
    Array::from_op(Primitive::BroadcastTo, vec![a.clone()], shape.to_vec(), a.dtype())
}

/// One axis of a slice, with Python's meaning: `None` bounds take the whole
/// axis in the step's direction, negative indices count from the end, out of
/// range bounds are clamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceArg {
    pub start: Option<isize>,
    pub stop: Option<isize>,
    pub step: isize,
}

impl SliceArg {
    /// The whole axis.
    pub const ALL: SliceArg = SliceArg { start: None, stop: None, step: 1 };

    pub fn new(start: Option<isize>, stop: Option<isize>, step: isize) -> SliceArg {
        SliceArg { start, stop, step }
    }

    /// `start:stop` with step 1.
    pub fn range(start: isize, stop: isize) -> SliceArg {
        SliceArg { start: Some(start), stop: Some(stop), step: 1 }
    }

    /// (first index, length) of this slice on an axis of size `n`, as
    /// Python's `slice.indices` computes it.
    pub(crate) fn resolve(self, n: usize) -> Result<(usize, usize)> {
        let (n, step) = (n as isize, self.step);
        if step == 0 {
            bail!(InvalidArgument, "slice step cannot be zero");
        }
        let clamp = |i: Option<isize>, default: isize| -> isize {
            match i {
                None => default,
                Some(i) if i < 0 => {
                    let i = i + n;
                    if i < 0 { if step < 0 { -1 } else { 0 } } else { i }
                }
                Some(i) if i >= n => if step < 0 { n - 1 } else { n },
                Some(i) => i,
            }
        };
        let (start, stop) = if step > 0 {
            (clamp(self.start, 0), clamp(self.stop, n))
        } else {
            (clamp(self.start, n - 1), clamp(self.stop, -1))
        };
        // ceil(distance / |step|), without the overflow of `distance + step - 1`
        // for steps near isize::MAX (or of `-step` for isize::MIN).
        let len = match (step > 0, start.abs_diff(stop)) {
            (true, d) if stop > start => (d - 1) / step.unsigned_abs() + 1,
            (false, d) if start > stop => (d - 1) / step.unsigned_abs() + 1,
            _ => 0,
        };
        Ok((if len == 0 { 0 } else { start as usize }, len as usize))
    }
}

/// `a[args[0], args[1], ...]`: one [`SliceArg`] per leading axis; the
/// remaining axes are taken whole. A view.
pub fn slice(a: &Array, args: &[SliceArg]) -> Result<Array> {
    if args.len() > a.ndim() {
        bail!(Shape, "too many indices ({}) for an array of shape {:?}", args.len(), a.shape());
    }
    let mut start = vec![0; a.ndim()];
    let mut step = vec![1; a.ndim()];
    let mut shape = a.shape().to_vec();
    for (ax, arg) in args.iter().enumerate() {
        let (s, len) = arg.resolve(a.shape()[ax])?;
        start[ax] = s;
        step[ax] = arg.step;
        shape[ax] = len;
    }
    if shape == a.shape() && step.iter().all(|&s| s == 1) {
        return Ok(a.clone());
    }
    Array::from_op(Primitive::Slice { start, step }, vec![a.clone()], shape, a.dtype())
}

/// Joins arrays along `axis` (`None`: the arrays flattened first, as
/// `mlx.core.concatenate(axis=None)`); dtypes are promoted to a common one.
pub fn concatenate(arrays: &[Array], axis: impl Into<Option<isize>>) -> Result<Array> {
    let Some(axis) = axis.into() else {
        let flat = arrays.iter().map(|a| reshape(a, &[-1])).collect::<Result<Vec<_>>>()?;
        return concatenate(&flat, 0);
    };
    let Some(first) = arrays.first() else {
        bail!(InvalidArgument, "concatenate needs at least one array");
    };
    let ax = normalize_axis(axis, first.ndim())?;
    let mut shape = first.shape().to_vec();
    let mut dtype = first.dtype();
    for a in &arrays[1..] {
        let same = a.ndim() == first.ndim()
            && a.shape().iter().zip(first.shape()).enumerate().all(|(i, (x, y))| i == ax || x == y);
        if !same {
            bail!(
                Shape,
                "concatenate: shapes {:?} and {:?} differ outside axis {ax}",
                first.shape(),
                a.shape()
            );
        }
        shape[ax] = checked_add(shape[ax], a.shape()[ax])?;
        dtype = Dtype::promote(dtype, a.dtype());
    }
    let inputs = arrays.iter().map(|a| astype(a, dtype)).collect::<Result<Vec<_>>>()?;
    Array::from_op(Primitive::Concatenate { axis: ax }, inputs, shape, dtype)
}

fn checked_add(a: usize, b: usize) -> Result<usize> {
    match a.checked_add(b) {
        Some(n) => Ok(n),
        None => bail!(Shape, "dimension {a} + {b} overflows"),
    }
}

/// Arrays of one shape joined along a new axis `axis` (counted in the result).
pub fn stack(arrays: &[Array], axis: isize) -> Result<Array> {
    let Some(first) = arrays.first() else {
        bail!(InvalidArgument, "stack needs at least one array");
    };
    if let Some(other) = arrays.iter().find(|a| a.shape() != first.shape()) {
        bail!(Shape, "stack: all arrays must have one shape, got {:?} and {:?}", first.shape(), other.shape());
    }
    let parts = arrays.iter().map(|a| expand_dims(a, axis)).collect::<Result<Vec<_>>>()?;
    concatenate(&parts, axis)
}

/// Inserts size-1 axes at `axes`, positions counted in the result
/// (`Axes::All` is refused: the result's rank would be unknown).
pub fn expand_dims(a: &Array, axes: impl Into<Axes>) -> Result<Array> {
    let axes = axes.into();
    let Axes::These(given) = &axes else {
        bail!(InvalidArgument, "expand_dims needs the axes to insert");
    };
    let at = axes.normalize(a.ndim() + given.len())?;
    reshape_units(a, &[], &at)
}

/// `a` without its size-1 axes `remove`, then with size-1 axes inserted at
/// `insert` (ascending, axes of the result): a reshape that a shapeless
/// replay can redo for new sizes of the other axes (`ShapeNote::Units`).
pub(crate) fn reshape_units(a: &Array, remove: &[usize], insert: &[usize]) -> Result<Array> {
    let shape = crate::primitive::shape::units_shape(a.shape(), remove, insert)?;
    if shape == a.shape() {
        return Ok(a.clone());
    }
    let note = || Some(crate::transforms::trace::ShapeNote::Units { remove: remove.to_vec(), insert: insert.to_vec() });
    Array::from_op_noted(Primitive::Reshape, vec![a.clone()], shape, a.dtype(), note)
}

/// Removes size-1 axes: those in `axes` (`Axes::All`: every size-1 axis).
pub fn squeeze(a: &Array, axes: impl Into<Axes>) -> Result<Array> {
    let axes = match axes.into() {
        Axes::All => (0..a.ndim()).filter(|&i| a.shape()[i] == 1).collect(),
        these => these.normalize(a.ndim())?,
    };
    if let Some(&ax) = axes.iter().find(|&&ax| a.shape()[ax] != 1) {
        bail!(Shape, "cannot squeeze axis {ax} of size {} (shape {:?})", a.shape()[ax], a.shape());
    }
    reshape_units(a, &axes, &[])
}

/// Axes `start_axis..=end_axis` merged into one (a zero-dimensional array
/// becomes one element long).
pub fn flatten(a: &Array, start_axis: isize, end_axis: isize) -> Result<Array> {
    if a.ndim() == 0 {
        return reshape(a, &[1]);
    }
    let (s, e) = (normalize_axis(start_axis, a.ndim())?, normalize_axis(end_axis, a.ndim())?);
    if s > e {
        bail!(InvalidArgument, "flatten: start axis {start_axis} comes after end axis {end_axis}");
    }
    let dims: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    let merged: usize = a.shape()[s..=e].iter().product();
    let shape: Vec<isize> = dims[..s].iter().copied().chain([merged as isize]).chain(dims[e + 1..].iter().copied()).collect();
    reshape(a, &shape)
}

/// `a` with axes `i` and `j` exchanged (a view).
pub fn swapaxes(a: &Array, i: isize, j: isize) -> Result<Array> {
    let (i, j) = (normalize_axis(i, a.ndim())?, normalize_axis(j, a.ndim())?);
    let mut perm: Vec<isize> = (0..a.ndim() as isize).collect();
    perm.swap(i, j);
    transpose(a, &perm)
}

/// `a` with axis `source` moved to position `destination` (a view).
pub fn moveaxis(a: &Array, source: isize, destination: isize) -> Result<Array> {
    let (s, d) = (normalize_axis(source, a.ndim())?, normalize_axis(destination, a.ndim())?);
    let mut perm: Vec<isize> = (0..a.ndim() as isize).filter(|&p| p != s as isize).collect();
    perm.insert(d, s as isize);
    transpose(a, &perm)
}

/// `a` reversed along `axis` (a view with a negative stride).
pub fn flip(a: &Array, axis: isize) -> Result<Array> {
    let ax = normalize_axis(axis, a.ndim())?;
    let mut args = vec![SliceArg::ALL; ax + 1];
    args[ax] = SliceArg::new(None, None, -1);
    slice(a, &args)
}

/// Views of `a` cut along `axis` before each index in `at` (ascending
/// indices past the end give empty pieces, as NumPy): `at.len() + 1` pieces.
pub fn split(a: &Array, at: &[usize], axis: isize) -> Result<Vec<Array>> {
    let ax = normalize_axis(axis, a.ndim())?;
    let n = a.shape()[ax];
    let mut bounds: Vec<usize> = Vec::with_capacity(at.len() + 2);
    bounds.push(0);
    bounds.extend(at.iter().map(|&i| i.min(n)));
    bounds.push(n);
    bounds
        .windows(2)
        .map(|w| {
            let mut args = vec![SliceArg::ALL; ax + 1];
            // A decreasing pair is an empty piece.
            args[ax] = SliceArg::range(w[0] as isize, w[1].max(w[0]) as isize);
            slice(a, &args)
        })
        .collect()
}

/// Each element of `a` repeated `repeats` times along `axis` (of the
/// flattened array when `None`), as NumPy's `repeat` with one count.
pub fn repeat(a: &Array, repeats: usize, axis: Option<isize>) -> Result<Array> {
    let (a, ax) = match axis {
        Some(ax) => (a.clone(), normalize_axis(ax, a.ndim())?),
        None => (reshape(a, &[-1])?, 0),
    };
    let mut wide = a.shape().to_vec();
    wide.insert(ax + 1, repeats);
    let spread = broadcast_to(&expand_dims(&a, ax as isize + 1)?, &wide)?;
    let mut out: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    out[ax] *= repeats as isize;
    reshape(&spread, &out)
}

/// `a` repeated `reps[i]` times along each axis, as NumPy's `tile` (the
/// shorter of `reps` and `a.shape` is padded with leading 1s).
pub fn tile(a: &Array, reps: &[usize]) -> Result<Array> {
    let nd = a.ndim().max(reps.len());
    let pad = |v: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, nd - v.len()).chain(v.iter().copied()).collect() };
    let (dims, reps) = (pad(a.shape()), pad(reps));
    // [1, d0, 1, d1, ...] broadcast to [r0, d0, r1, d1, ...], then merged pairwise.
    let split: Vec<isize> = dims.iter().flat_map(|&d| [1, d as isize]).collect();
    let wide: Vec<usize> = dims.iter().zip(&reps).flat_map(|(&d, &r)| [r, d]).collect();
    let out: Vec<isize> = dims.iter().zip(&reps).map(|(&d, &r)| (d * r) as isize).collect();
    reshape(&broadcast_to(&reshape(a, &split)?, &wide)?, &out)
}

/// How [`pad`] fills the new elements.
#[derive(Clone, Debug)]
pub enum PadMode {
    /// Every new element is this scalar (in `a`'s dtype).
    Constant(f64),
    /// Each new element repeats the nearest edge element.
    Edge,
    /// The axis mirrored about its edge elements, not repeating them
    /// (NumPy's `reflect`: `[c, b | a, b, c | b, a]`), as often as needed.
    Reflect,
    /// The axis mirrored including its edge elements (NumPy's
    /// `symmetric`: `[b, a | a, b, c | c, b]`), as often as needed.
    Symmetric,
}

/// The source index along an axis of length `n > 0` of padded position `p`
/// (negative before the axis, `>= n` after it) for a mirroring mode: the
/// mirrored axis repeats with period `2 (n - 1)` (reflect) or `2 n`
/// (symmetric).
fn mirror_index(p: i64, n: i64, mode: &PadMode) -> i64 {
    match mode {
        PadMode::Reflect if n == 1 => 0,
        PadMode::Reflect => {
            let m = 2 * (n - 1);
            let j = p.rem_euclid(m);
            if j >= n { m - j } else { j }
        }
        _ => {
            let m = 2 * n;
            let j = p.rem_euclid(m);
            if j >= n { m - 1 - j } else { j }
        }
    }
}

/// `a` with `widths[i] = (before, after)` new elements on each side of axis
/// `i` (one pair for every axis).
pub fn pad(a: &Array, widths: &[(usize, usize)], mode: PadMode) -> Result<Array> {
    if widths.len() != a.ndim() {
        bail!(Shape, "pad: {} (before, after) pairs for an array of {} dimensions", widths.len(), a.ndim());
    }
    let mut out = a.clone();
    for (ax, &(lo, hi)) in widths.iter().enumerate() {
        if lo == 0 && hi == 0 {
            continue;
        }
        let n = out.shape()[ax];
        if matches!(mode, PadMode::Reflect | PadMode::Symmetric) {
            if n == 0 {
                bail!(Shape, "pad: {mode:?} mode needs a non-empty axis {ax} (shape {:?})", out.shape());
            }
            // One gather along the axis: each padded position reads its mirror.
            let idx: Vec<i64> = (0..lo + n + hi).map(|i| mirror_index(i as i64 - lo as i64, n as i64, &mode)).collect();
            let len = idx.len();
            out = super::take(&out, &Array::from_vec(idx, &[len])?, Some(ax as isize))?;
            continue;
        }
        let side = |w: usize, at_end: bool| -> Result<Array> {
            let mut shape = out.shape().to_vec();
            shape[ax] = w;
            match &mode {
                PadMode::Constant(v) => broadcast_to(&super::creation::scalar(*v, out.dtype())?, &shape),
                PadMode::Reflect | PadMode::Symmetric => unreachable!("mirroring modes gather above"),
                PadMode::Edge => {
                    if n == 0 {
                        bail!(Shape, "pad: edge mode needs a non-empty axis {ax} (shape {:?})", out.shape());
                    }
                    let mut args = vec![SliceArg::ALL; ax + 1];
                    let i = if at_end { n - 1 } else { 0 } as isize;
                    args[ax] = SliceArg::range(i, i + 1);
                    broadcast_to(&slice(&out, &args)?, &shape)
                }
            }
        };
        out = concatenate(&[side(lo, false)?, out.clone(), side(hi, true)?], ax as isize)?;
    }
    Ok(out)
}

/// `a` with `axes` (sorted, distinct) moved to the end, in order; `a` itself
/// when they already are there.
pub(crate) fn axes_to_end(a: &Array, axes: &[usize]) -> Result<Array> {
    let rest = (0..a.ndim()).filter(|d| !axes.contains(d));
    let perm: Vec<isize> = rest.chain(axes.iter().copied()).map(|d| d as isize).collect();
    permuted(a, &perm)
}

/// The inverse of [`axes_to_end`]: the last `axes.len()` axes of `a` moved
/// back to positions `axes` (sorted, distinct).
pub(crate) fn from_end(a: &Array, axes: &[usize]) -> Result<Array> {
    let nd = a.ndim();
    let first_moved = nd - axes.len();
    let (mut rest, mut moved) = (0..first_moved, first_moved..nd);
    let perm: Vec<isize> = (0..nd)
        .map(|d| if axes.contains(&d) { moved.next() } else { rest.next() })
        .map(|p| p.expect("axes are distinct and in range") as isize)
        .collect();
    permuted(a, &perm)
}

/// `a` permuted by `perm`; `a` itself when `perm` is the identity.
fn permuted(a: &Array, perm: &[isize]) -> Result<Array> {
    if perm.iter().enumerate().all(|(i, &p)| i as isize == p) {
        return Ok(a.clone());
    }
    transpose(a, perm)
}

/// `a` with at least `n` (1 to 3) dimensions, as NumPy's `atleast_nd`: a
/// scalar becomes `[1]`, `[1, 1]` or `[1, 1, 1]`; for `n = 2` a vector
/// `[k]` becomes `[1, k]`; for `n = 3` a vector becomes `[1, k, 1]` and a
/// matrix `[m, k]` becomes `[m, k, 1]`.
pub fn atleast_nd(a: &Array, n: usize) -> Result<Array> {
    if !(1..=3).contains(&n) {
        bail!(InvalidArgument, "atleast_nd: n must be 1, 2 or 3, got {n}");
    }
    if a.ndim() >= n {
        return Ok(a.clone());
    }
    let s: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    let shape: Vec<isize> = match (n, s.as_slice()) {
        (_, []) => vec![1; n],
        (2, [k]) => vec![1, *k],
        (3, [k]) => vec![1, *k, 1],
        (3, [m, k]) => vec![*m, *k, 1],
        _ => unreachable!("ndim {} < n {n} <= 3 is covered above", a.ndim()),
    };
    reshape(a, &shape)
}

/// `a` with `axis` split into `shape` (one entry may be `-1`).
pub fn unflatten(a: &Array, axis: isize, shape: &[isize]) -> Result<Array> {
    let ax = normalize_axis(axis, a.ndim())?;
    if shape.is_empty() {
        bail!(InvalidArgument, "unflatten: the new shape of axis {axis} is empty");
    }
    let mut new: Vec<isize> = a.shape()[..ax].iter().map(|&d| d as isize).collect();
    let inner: Vec<isize> = shape.to_vec();
    // The split axis must hold exactly `shape`'s elements.
    let known: isize = inner.iter().filter(|&&d| d >= 0).product();
    let holes = inner.iter().filter(|&&d| d < 0).count();
    let n = a.shape()[ax] as isize;
    if holes > 1 || inner.iter().any(|&d| d < -1) || (holes == 0 && known != n) || (holes == 1 && (known == 0 || n % known != 0)) {
        bail!(Shape, "unflatten: cannot split axis {axis} of size {n} into {shape:?}");
    }
    new.extend(inner.iter().map(|&d| if d < 0 { n / known } else { d }));
    new.extend(a.shape()[ax + 1..].iter().map(|&d| d as isize));
    reshape(a, &new)
}

/// The slices of `a` along `axis`, each without that axis.
pub fn unstack(a: &Array, axis: isize) -> Result<Vec<Array>> {
    let ax = normalize_axis(axis, a.ndim())?;
    let n = a.shape()[ax];
    let at: Vec<usize> = (1..n).collect();
    if n == 0 {
        return Ok(vec![]);
    }
    split(a, &at, ax as isize)?.iter().map(|p| squeeze(p, ax as isize)).collect()
}

/// The arrays broadcast to their common shape.
pub fn broadcast_arrays(arrays: &[Array]) -> Result<Vec<Array>> {
    let mut shape: Vec<usize> = vec![];
    for a in arrays {
        shape = broadcast_shapes(&shape, a.shape())?;
    }
    arrays.iter().map(|a| broadcast_to(a, &shape)).collect()
}

/// `a` shifted by `shift[i]` along `axes[i]`, elements pushed off one end
/// coming back at the other; with no axes, the flattened array is rolled
/// by the sum of the shifts (as MLX) and reshaped back.
pub fn roll(a: &Array, shift: &[isize], axes: Option<&[isize]>) -> Result<Array> {
    let Some(axes) = axes else {
        let s: isize = shift.iter().sum();
        let flat = reshape(a, &[-1])?;
        let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
        return reshape(&roll(&flat, &[s], Some(&[0]))?, &shape);
    };
    // Shifts and axes broadcast together (as NumPy): one shift for every
    // axis, one axis for every shift (they add up), or one per axis.
    let (shifts, axes): (Vec<isize>, Vec<isize>) = match (shift.len(), axes.len()) {
        (s, n) if s == n => (shift.to_vec(), axes.to_vec()),
        (1, n) => (vec![shift[0]; n], axes.to_vec()),
        (s, 1) => (shift.to_vec(), vec![axes[0]; s]),
        (s, n) => bail!(InvalidArgument, "roll: {s} shifts for {n} axes"),
    };
    let mut out = a.clone();
    for (&ax, &s) in axes.iter().zip(&shifts) {
        let ax = normalize_axis(ax, a.ndim())?;
        let n = a.shape()[ax] as isize;
        if n == 0 {
            continue;
        }
        let s = s.rem_euclid(n);
        if s == 0 {
            continue;
        }
        let mut head = vec![SliceArg::ALL; ax + 1];
        let mut tail = head.clone();
        head[ax] = SliceArg::range(n - s, n);
        tail[ax] = SliceArg::range(0, n - s);
        out = concatenate(&[slice(&out, &head)?, slice(&out, &tail)?], ax as isize)?;
    }
    Ok(out)
}

/// Coordinate arrays from the 1-D `arrays`: `xy` indexing (the default,
/// the first two outputs' axes swapped, as NumPy's) or `ij`; `sparse`
/// keeps size-1 axes instead of broadcasting.
pub fn meshgrid(arrays: &[Array], sparse: bool, indexing_xy: bool) -> Result<Vec<Array>> {
    let n = arrays.len();
    let mut out = Vec::with_capacity(n);
    for (i, a) in arrays.iter().enumerate() {
        let a = reshape(a, &[-1])?;
        let mut shape = vec![1isize; n];
        let at = if indexing_xy && n >= 2 && i < 2 { 1 - i } else { i };
        shape[at] = -1;
        out.push(reshape(&a, &shape)?);
    }
    if sparse {
        return Ok(out);
    }
    broadcast_arrays(&out)
}

/// The diagonal `offset` (positive above the main one) of the matrices
/// spanned by `axis1` and `axis2`; that axis pair is removed and the
/// diagonal becomes the last axis, as NumPy's `diagonal`.
pub fn diagonal(a: &Array, offset: isize, axis1: isize, axis2: isize) -> Result<Array> {
    let (i, j) = (normalize_axis(axis1, a.ndim())?, normalize_axis(axis2, a.ndim())?);
    if i == j {
        bail!(InvalidArgument, "diagonal: axis1 and axis2 must differ, got {axis1} and {axis2}");
    }
    let (n, m) = (a.shape()[i] as isize, a.shape()[j] as isize);
    let x = axes_to_end(a, &[i, j])?;
    let (r0, c0) = (0isize.max(-offset), 0isize.max(offset));
    let len = (n - r0).min(m - c0).max(0);
    let mut flat_shape: Vec<isize> = x.shape()[..x.ndim() - 2].iter().map(|&d| d as isize).collect();
    flat_shape.push(n * m);
    let flat = reshape(&x, &flat_shape)?;
    let k = arange(0.0, len as f64, 1.0, Dtype::I64)?;
    // Element (r0 + k, c0 + k) of each n x m matrix, read as one row.
    let idx = super::add(&super::multiply(&k, &Array::scalar((m + 1) as i64))?, &Array::scalar((r0 * m + c0) as i64))?;
    super::take(&flat, &idx, Some(-1))
}

/// For a vector, the square matrix with it on diagonal `k`; for a matrix,
/// its diagonal `k`.
pub fn diag(a: &Array, k: isize) -> Result<Array> {
    match a.ndim() {
        1 => {
            let n = a.shape()[0];
            let size = n + k.unsigned_abs();
            let v = pad(a, &[(0, k.unsigned_abs())], PadMode::Constant(0.0))?;
            // Row i holds v[i] at column i + k (k >= 0); column j holds v[j]
            // at row j - k (k < 0).
            let v = if k >= 0 { expand_dims(&v, 1)? } else { expand_dims(&v, 0)? };
            let on = super::eye(size, size, k, Dtype::Bool)?;
            let zero = astype(&Array::scalar(0.0f64), a.dtype())?;
            super::where_(&on, &v, &zero)
        }
        2 => diagonal(a, k, 0, 1),
        d => bail!(Shape, "diag: needs a 1-D or 2-D array, got {d} dimensions"),
    }
}

/// The sum of [`diagonal`]`(a, offset, axis1, axis2)`.
pub fn trace(a: &Array, offset: isize, axis1: isize, axis2: isize) -> Result<Array> {
    super::sum(&diagonal(a, offset, axis1, axis2)?, -1isize, false)
}

/// The Kronecker product: blocks `a[i...] * b`, shape `a.shape * b.shape`
/// (the shorter shape padded with leading 1s).
pub fn kron(a: &Array, b: &Array) -> Result<Array> {
    if a.size() == 0 || b.size() == 0 {
        bail!(Shape, "kron: both inputs must be non-empty, got shapes {:?} and {:?}", a.shape(), b.shape());
    }
    let nd = a.ndim().max(b.ndim());
    let pad_to = |s: &[usize]| -> Vec<usize> { std::iter::repeat(1).take(nd - s.len()).chain(s.iter().copied()).collect() };
    let (sa, sb) = (pad_to(a.shape()), pad_to(b.shape()));
    // a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...].
    let ia: Vec<isize> = sa.iter().flat_map(|&d| [d as isize, 1]).collect();
    let ib: Vec<isize> = sb.iter().flat_map(|&d| [1, d as isize]).collect();
    let p = super::multiply(&reshape(a, &ia)?, &reshape(b, &ib)?)?;
    let out: Vec<isize> = sa.iter().zip(&sb).map(|(&x, &y)| (x * y) as isize).collect();
    reshape(&p, &out)
}

/// A view of `a`'s elements (in row-major order) with any shape and
/// element strides: element `idx` is element `offset + sum(idx[k] *
/// strides[k])` of `a` flattened, as `mlx.core.as_strided`. Every element
/// the view can read must lie inside `a` (an `InvalidArgument` error
/// otherwise), so a view never reads outside its buffer.
///
/// ```
/// use weft::{ops, Array};
/// let a = Array::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0], &[5]).unwrap();
/// // Overlapping windows of 3, one element apart.
/// let w = ops::as_strided(&a, &[3, 3], &[1, 1], 0).unwrap();
/// assert_eq!(w.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 1.0, 2.0, 3.0, 2.0, 3.0, 4.0]);
/// ```
pub fn as_strided(a: &Array, shape: &[usize], strides: &[isize], offset: usize) -> Result<Array> {
    if shape.len() != strides.len() {
        bail!(InvalidArgument, "as_strided: shape {shape:?} and strides {strides:?} have different lengths");
    }
    if numel(shape) > 0 {
        // The lowest and highest element reached, in i128 so no product overflows.
        let (mut low, mut high) = (offset as i128, offset as i128);
        for (&d, &s) in shape.iter().zip(strides) {
            let reach = (d as i128 - 1) * s as i128;
            if reach < 0 { low += reach } else { high += reach }
        }
        if low < 0 || high >= a.size() as i128 {
            bail!(
                InvalidArgument,
                "as_strided: shape {shape:?}, strides {strides:?} and offset {offset} read elements {low}..={high}, outside an array of {} elements",
                a.size()
            );
        }
    }
    let flat = reshape(a, &[-1])?;
    Array::from_op(Primitive::AsStrided { strides: strides.to_vec(), offset }, vec![flat], shape.to_vec(), a.dtype())
}
