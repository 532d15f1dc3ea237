//! Shape rules: a node's output shape from its inputs' shapes, for the
//! primitives whose output shape follows from them alone. A shapeless
//! `compile` (`transforms/compile.rs`) replays its trace on inputs of new
//! shapes with these rules; a primitive with a shape fixed when its node was
//! built (a reshape to a given shape, a slice with given bounds, `arange`,
//! ...) has none.

use super::Primitive;
use crate::shape::broadcast_shapes;
use crate::{bail, Result};

impl Primitive {
    /// The output shape of this primitive on inputs of shapes `inputs`.
    /// Fails with `Error::Shape` when the shapes do not fit the primitive
    /// (a `Matmul` whose inner sizes differ, a norm's weight of another
    /// length, ...), and with `Error::InvalidArgument` when the primitive
    /// has no rule: its output shape was fixed by the op that built it.
    ///
    /// ```
    /// use weft::primitive::{BinaryOp, Primitive};
    /// let add = Primitive::Binary(BinaryOp::Add);
    /// assert_eq!(add.output_shape(&[&[4, 1], &[3]]).unwrap(), vec![4, 3]);
    /// assert_eq!(Primitive::Matmul.output_shape(&[&[2, 5, 3], &[2, 3, 7]]).unwrap(), vec![2, 5, 7]);
    /// assert!(matches!(Primitive::Reshape.output_shape(&[&[6]]), Err(weft::Error::InvalidArgument(_))));
    /// ```
    pub fn output_shape(&self, inputs: &[&[usize]]) -> Result<Vec<usize>> {
        let name = self.name();
        let first = |n: usize| -> Result<&[usize]> {
            if inputs.len() < n {
                bail!(Shape, "{name} takes at least {n} inputs, got {}", inputs.len());
            }
            Ok(inputs[0])
        };
        let last_axis = |x: &[usize]| -> Result<usize> {
            match x.last() {
                Some(&d) => Ok(d),
                None => bail!(Shape, "{name} needs at least one dimension, got a scalar"),
            }
        };
        match self {
            Primitive::Unary(_) | Primitive::AsType | Primitive::Copy | Primitive::Complex(_) => Ok(first(1)?.to_vec()),
            Primitive::Binary(_) | Primitive::Select | Primitive::Fused(_) => {
                let mut out = first(1)?.to_vec();
                for s in &inputs[1..] {
                    out = broadcast_shapes(&out, s)?;
                }
                Ok(out)
            }
            Primitive::Softmax | Primitive::Sort | Primitive::ArgSort => {
                let x = first(1)?;
                last_axis(x)?;
                Ok(x.to_vec())
            }
            Primitive::LogSumExp => {
                let mut x = first(1)?.to_vec();
                last_axis(&x)?;
                *x.last_mut().expect("checked above") = 1;
                Ok(x)
            }
            Primitive::Reduce { axes, .. } => {
                let mut x = first(1)?.to_vec();
                for &ax in axes {
                    match x.get_mut(ax) {
                        Some(d) => *d = 1,
                        None => bail!(Shape, "{name} of axis {ax} on shape {x:?}"),
                    }
                }
                Ok(x)
            }
            Primitive::ArgReduce { axis, .. } => {
                let mut x = first(1)?.to_vec();
                match x.get_mut(*axis) {
                    Some(0) => bail!(Shape, "{name} needs a non-empty axis {axis}, got shape {:?}", inputs[0]),
                    Some(d) => *d = 1,
                    None => bail!(Shape, "{name} of axis {axis} on shape {x:?}"),
                }
                Ok(x)
            }
            Primitive::Scan { axis, .. } => {
                let x = first(1)?;
                if *axis >= x.len() {
                    bail!(Shape, "{name} along axis {axis} of shape {x:?}");
                }
                Ok(x.to_vec())
            }
            Primitive::Transpose { perm } => {
                let x = first(1)?;
                if perm.len() != x.len() {
                    bail!(Shape, "{name} by {perm:?} of shape {x:?}");
                }
                Ok(perm.iter().map(|&p| x[p]).collect())
            }
            Primitive::Matmul => {
                let (a, b) = (first(2)?, inputs[1]);
                if a.len() < 2 || a.len() != b.len() {
                    bail!(Shape, "{name} of shapes {a:?} and {b:?}");
                }
                let n = a.len();
                if a[n - 1] != b[n - 2] {
                    bail!(Shape, "{name}: inner dimensions differ: {a:?} @ {b:?}");
                }
                // The op broadcasts the batch axes before building the node;
                // a replay broadcasts them again to this shape.
                let mut out = broadcast_shapes(&a[..n - 2], &b[..n - 2])?;
                out.extend([a[n - 2], b[n - 1]]);
                Ok(out)
            }
            Primitive::Concatenate { axis } => {
                let mut out = first(1)?.to_vec();
                if *axis >= out.len() {
                    bail!(Shape, "{name} along axis {axis} of shape {out:?}");
                }
                for s in &inputs[1..] {
                    let same = s.len() == out.len() && (0..s.len()).all(|d| d == *axis || s[d] == out[d]);
                    if !same {
                        bail!(Shape, "{name} along axis {axis}: shapes {:?} and {s:?} differ elsewhere", inputs[0]);
                    }
                    out[*axis] += s[*axis];
                }
                Ok(out)
            }
            Primitive::Gather { axis } => {
                let (a, idx) = (first(2)?, inputs[1]);
                if *axis >= a.len() {
                    bail!(Shape, "{name} along axis {axis} of shape {a:?}");
                }
                Ok([&a[..*axis], idx, &a[axis + 1..]].concat())
            }
            Primitive::RmsNorm { .. } | Primitive::LayerNorm { .. } => {
                let x = first(1)?;
                let d = last_axis(x)?;
                if let Some(p) = inputs[1..].iter().find(|p| **p != [d]) {
                    bail!(Shape, "{name}: a weight or bias of shape {p:?} for rows of {d}");
                }
                Ok(x.to_vec())
            }
            Primitive::Rope(p) => {
                let x = first(1)?;
                if x.len() < 2 || p.dims > x[x.len() - 1] {
                    bail!(Shape, "{name} of {} dims on shape {x:?}", p.dims);
                }
                Ok(x.to_vec())
            }
            Primitive::Sdpa { .. } => {
                let (q, k, v) = (first(3)?, inputs[1], inputs[2]);
                let ok = q.len() == 4
                    && k.len() == 4
                    && v.len() == 4
                    && q[0] == k[0]
                    && k[0] == v[0]
                    && k[1] > 0
                    && q[1] % k[1] == 0
                    && v[1] == k[1]
                    && q[3] == k[3]
                    && v[2] == k[2];
                if !ok {
                    bail!(Shape, "{name} of q {q:?}, k {k:?}, v {v:?}");
                }
                if let Some(m) = inputs.get(3) {
                    if *m != [q[0], q[1], q[2], k[2]] {
                        bail!(Shape, "{name}: mask of shape {m:?} for scores of {:?}", [q[0], q[1], q[2], k[2]]);
                    }
                }
                Ok(vec![q[0], q[1], q[2], v[3]])
            }
            _ => bail!(InvalidArgument, "{name} has no shape rule: its output shape was fixed when its node was built"),
        }
    }
}

/// `shape` without its size-1 axes `remove`, then with size-1 axes
/// inserted at `insert` (ascending, axes of the result): the shape of
/// `squeeze` and `expand_dims` (`ops::shape`), for any sizes of the other
/// axes.
pub(crate) fn units_shape(shape: &[usize], remove: &[usize], insert: &[usize]) -> Result<Vec<usize>> {
    if let Some(&r) = remove.iter().find(|&&r| shape.get(r) != Some(&1)) {
        bail!(Shape, "cannot drop axis {r} of shape {shape:?}: it is not of size 1");
    }
    let mut out: Vec<usize> = (0..shape.len()).filter(|i| !remove.contains(i)).map(|i| shape[i]).collect();
    for &ax in insert {
        if ax > out.len() {
            bail!(Shape, "cannot insert axis {ax} in shape {out:?}");
        }
        out.insert(ax, 1);
    }
    Ok(out)
}
