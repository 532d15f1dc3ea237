//! Shapes, strides and broadcasting: the arithmetic every op and kernel shares.

use crate::{bail, Result};

/// The most dimensions an array may have (NumPy's limit). Past it, shape
/// checks fail with `Error::Shape`, so no walk over dimensions (a Python
/// `tolist`, a kernel's index odometer) can recurse or loop unboundedly.
pub const MAX_NDIM: usize = 64;

/// The one check every shape passes where it is made (docs/architecture.md,
/// "Shapes"): at most [`MAX_NDIM`] dimensions, and the element count and the
/// extent in bytes of a contiguous array of `elem_size`-byte elements fit in
/// `isize`, with zero-sized dimensions counted as 1 (so the strides of an
/// empty array fit too). Returns the element count.
///
/// Every `Array` passes it at construction, so `numel`, `contiguous_strides`
/// and byte counts (`numel * dtype.size()`) of an existing array never
/// overflow, on any backend.
///
/// ```
/// use weft::shape::check_shape;
/// assert_eq!(check_shape(&[2, 3], 4).unwrap(), 6);
/// assert!(matches!(check_shape(&[1 << 32, 1 << 32], 4), Err(weft::Error::Shape(_))));
/// ```
pub fn check_shape(shape: &[usize], elem_size: usize) -> Result<usize> {
    if shape.len() > MAX_NDIM {
        bail!(Shape, "an array can have at most {MAX_NDIM} dimensions, got {}", shape.len());
    }
    let too_big = || crate::Error::Shape(format!("shape {shape:?} is too large to address"));
    let max = isize::MAX as usize / elem_size.max(1);
    let mut extent = 1usize;
    let mut n = 1usize;
    for &d in shape {
        extent = extent.checked_mul(d.max(1)).filter(|&e| e <= max).ok_or_else(too_big)?;
        n *= d; // n <= extent: cannot overflow
    }
    Ok(n)
}

/// Number of elements of `shape`, or `Error::Shape` when it does not fit
/// (for shapes not yet checked: user input, products of other shapes).
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    check_shape(shape, 1)
}

/// Row-major strides (in elements) of a contiguous array of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d.max(1) as isize;
    }
    strides
}

/// Number of elements of `shape`: for shapes that passed [`check_shape`]
/// (every array's), which cannot overflow.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => bail!(Shape, "shapes {a:?} and {b:?} cannot be broadcast together"),
        };
    }
    checked_numel(&out)?;
    Ok(out)
}

/// Turns a possibly negative `axis` of an `ndim`-dimensional array into an index.
pub fn normalize_axis(axis: isize, ndim: usize) -> Result<usize> {
    let n = ndim as isize;
    if axis < -n || axis >= n {
        bail!(InvalidArgument, "axis {axis} is out of bounds for an array with {ndim} dimensions");
    }
    Ok(if axis < 0 { (axis + n) as usize } else { axis as usize })
}

/// The axes an op works over: every axis, or the ones listed (possibly
/// none: `Axes::These(vec![])` reduces over nothing, as `axis=[]` does in MLX
/// and NumPy). Reductions, `softmax`, `logsumexp`, `all` and `any` take
/// `impl Into<Axes>`; [`Axes::normalize`] is the one place negative, out of
/// range and repeated axes are handled.
///
/// ```
/// use weft::{ops, Array, Axes};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// assert_eq!(ops::sum(&a, Axes::All, false).unwrap().item::<f32>().unwrap(), 10.0);
/// assert_eq!(ops::sum(&a, -1, false).unwrap().to_vec::<f32>().unwrap(), [3.0, 7.0]);
/// assert_eq!(ops::sum(&a, &[0, 1], true).unwrap().shape(), &[1, 1]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axes {
    All,
    These(Vec<isize>),
}

impl Axes {
    /// The axes of an `ndim`-dimensional array, non-negative, sorted and
    /// distinct; `Error::InvalidArgument` names an axis out of range or repeated.
    pub fn normalize(&self, ndim: usize) -> Result<Vec<usize>> {
        let given = match self {
            Axes::All => return Ok((0..ndim).collect()),
            Axes::These(given) => given,
        };
        let mut out = given.iter().map(|&ax| normalize_axis(ax, ndim)).collect::<Result<Vec<_>>>()?;
        out.sort_unstable();
        if out.windows(2).any(|w| w[0] == w[1]) {
            bail!(InvalidArgument, "repeated axis in {given:?}");
        }
        Ok(out)
    }
}

impl From<isize> for Axes {
    fn from(axis: isize) -> Axes {
        Axes::These(vec![axis])
    }
}

impl From<Vec<isize>> for Axes {
    fn from(axes: Vec<isize>) -> Axes {
        Axes::These(axes)
    }
}

impl From<&[isize]> for Axes {
    fn from(axes: &[isize]) -> Axes {
        Axes::These(axes.to_vec())
    }
}

impl<const N: usize> From<&[isize; N]> for Axes {
    /// A literal list of axes. `&[]` does not compile: write `Axes::All` for
    /// every axis, or `Axes::These(vec![])` for none, so neither is a guess.
    fn from(axes: &[isize; N]) -> Axes {
        const { assert!(N > 0, "an empty axis list is ambiguous: use Axes::All or Axes::These(vec![])") };
        Axes::These(axes.to_vec())
    }
}

impl From<Option<Vec<isize>>> for Axes {
    /// `None` is every axis (MLX's `axis=None`).
    fn from(axes: Option<Vec<isize>>) -> Axes {
        axes.map_or(Axes::All, Axes::These)
    }
}

/// How an array's elements sit in its buffer: shape, element strides and an
/// offset.
///
/// Views (transpose, broadcast, slice, reshape of contiguous data) share a
/// buffer and differ only in layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    pub offset: usize,
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: shape.to_vec(), strides: contiguous_strides(shape), offset: 0 }
    }

    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Row-major contiguous: element `i` of the array is element `offset + i` of the buffer.
    pub fn is_contiguous(&self) -> bool {
        let mut acc = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != acc {
                return false;
            }
            acc *= d as isize;
        }
        true
    }

    /// Every element reads the same buffer slot.
    pub fn is_scalar_broadcast(&self) -> bool {
        self.shape.iter().zip(&self.strides).all(|(&d, &s)| d == 1 || s == 0)
    }

    /// This layout seen through broadcasting to `out` (a shape it broadcasts to).
    pub fn broadcast_to(&self, out: &[usize]) -> Layout {
        let pad = out.len() - self.shape.len();
        let mut strides = vec![0isize; out.len()];
        for (i, (&d, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            strides[pad + i] = if d == 1 && out[pad + i] != 1 { 0 } else { s };
        }
        Layout { shape: out.to_vec(), strides, offset: self.offset }
    }

    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// This layout viewed as `new_shape` without copying, if possible.
    pub fn reshape(&self, new_shape: &[usize]) -> Option<Layout> {
        self.is_contiguous().then(|| Layout {
            shape: new_shape.to_vec(),
            strides: contiguous_strides(new_shape),
            offset: self.offset,
        })
    }
}

/// Calls `f(outer_offsets, inner_len)` for each innermost row of an
/// iteration over `shape`, where `outer_offsets[k]` is the element offset of
/// the row's first element in operand `k` (whose strides are `strides[k]`).
/// Inner strides are `strides[k][last]`. A zero-dimensional shape is one row
/// of length 1.
pub fn for_each_row<const K: usize>(
    shape: &[usize],
    strides: [&[isize]; K],
    offsets: [usize; K],
    f: impl FnMut([isize; K], usize),
) {
    for_each_row_in(shape, strides, offsets, 0..row_count(shape), f)
}

/// The number of innermost rows an iteration over `shape` visits.
pub fn row_count(shape: &[usize]) -> usize {
    match shape.split_last() {
        None => 1,
        Some((&0, _)) => 0,
        Some((_, outer)) => numel(outer),
    }
}

/// [`for_each_row`] restricted to the rows numbered `rows` (row-major), so
/// disjoint ranges can be walked by different threads.
pub fn for_each_row_in<const K: usize>(
    shape: &[usize],
    strides: [&[isize]; K],
    offsets: [usize; K],
    rows: std::ops::Range<usize>,
    mut f: impl FnMut([isize; K], usize),
) {
    let nd = shape.len();
    if nd == 0 {
        if rows.contains(&0) {
            f(offsets.map(|o| o as isize), 1);
        }
        return;
    }
    if shape.contains(&0) || rows.is_empty() {
        return;
    }
    let inner = shape[nd - 1];
    // The multi-index of row `rows.start` over the outer dimensions.
    let mut idx = vec![0usize; nd - 1];
    let mut base: [isize; K] = offsets.map(|o| o as isize);
    let mut r = rows.start;
    for d in (0..nd - 1).rev() {
        idx[d] = r % shape[d];
        r /= shape[d];
        for k in 0..K {
            base[k] += idx[d] as isize * strides[k][d];
        }
    }
    for _ in rows {
        f(base, inner);
        // Advance the multi-index over the outer dimensions, odometer style.
        for d in (0..nd - 1).rev() {
            idx[d] += 1;
            for k in 0..K {
                base[k] += strides[k][d];
            }
            if idx[d] < shape[d] {
                break;
            }
            for k in 0..K {
                base[k] -= strides[k][d] * shape[d] as isize;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 2]).unwrap(), vec![2, 2]);
        let e = broadcast_shapes(&[3, 2], &[4]).unwrap_err();
        assert!(e.to_string().contains("[3, 2]") && e.to_string().contains("[4]"));
    }

    #[test]
    fn rows_visit_every_element_once() {
        let l = Layout::contiguous(&[2, 3, 4]).permute(&[2, 0, 1]);
        assert_eq!(l.shape, vec![4, 2, 3]);
        let mut seen = vec![0; 24];
        for_each_row(&l.shape, [&l.strides], [0], |[o], n| {
            for i in 0..n {
                seen[(o + i as isize * l.strides[2]) as usize] += 1;
            }
        });
        assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn row_ranges_split_the_walk() {
        let l = Layout::contiguous(&[3, 4, 5]).permute(&[1, 2, 0]);
        let mut whole = Vec::new();
        for_each_row(&l.shape, [&l.strides], [7], |[o], n| whole.push((o, n)));
        assert_eq!(whole.len(), row_count(&l.shape));
        for cut in 0..=whole.len() {
            let mut parts = Vec::new();
            for r in [0..cut, cut..whole.len()] {
                for_each_row_in(&l.shape, [&l.strides], [7], r, |[o], n| parts.push((o, n)));
            }
            assert_eq!(parts, whole, "split at row {cut}");
        }
        assert_eq!(row_count(&[]), 1);
        assert_eq!(row_count(&[2, 0]), 0);
    }

    #[test]
    fn axes_normalize_once() {
        assert_eq!(Axes::All.normalize(3).unwrap(), vec![0, 1, 2]);
        assert_eq!(Axes::from(vec![-1, 0]).normalize(3).unwrap(), vec![0, 2]);
        assert_eq!(Axes::These(vec![]).normalize(3).unwrap(), Vec::<usize>::new());
        assert!(matches!(Axes::from(3).normalize(3), Err(crate::Error::InvalidArgument(_))));
        assert!(matches!(Axes::from(&[1, -2]).normalize(3), Err(crate::Error::InvalidArgument(_))));
        assert_eq!(Axes::from(None::<Vec<isize>>), Axes::All);
    }

    #[test]
    fn shape_checks_catch_overflow() {
        use crate::Error;
        assert_eq!(check_shape(&[], 8).unwrap(), 1);
        assert_eq!(check_shape(&[0, 5], 8).unwrap(), 0);
        assert!(matches!(check_shape(&[1 << 32, 1 << 32], 1), Err(Error::Shape(_))));
        assert!(matches!(check_shape(&[(1 << 62) + 1, 4], 4), Err(Error::Shape(_))));
        // Empty, but its strides would overflow.
        assert!(matches!(check_shape(&[0, 1 << 40, 1 << 40], 4), Err(Error::Shape(_))));
        assert!(matches!(check_shape(&[1; MAX_NDIM + 1], 4), Err(Error::Shape(_))));
        assert!(matches!(check_shape(&[1 << 61], 8), Err(Error::Shape(_))));
        assert!(matches!(broadcast_shapes(&[1 << 32, 1], &[1 << 32]), Err(Error::Shape(_))));
    }

    #[test]
    fn contiguity() {
        let l = Layout::contiguous(&[2, 3]);
        assert!(l.is_contiguous());
        assert!(!l.permute(&[1, 0]).is_contiguous());
        assert_eq!(Layout::contiguous(&[1, 3]).broadcast_to(&[4, 3]).strides, vec![0, 1]);
    }
}
