//! Each primitive's batching rule: given its inputs with the batch axis in
//! front (or unbatched), the node that computes every example at once.
//!
//! One arm per primitive in the exhaustive match of [`Primitive::batch`];
//! a primitive without a direct rule says so and runs once per example
//! ([`per_example`]), which is always correct.

use super::Primitive;
use crate::ops::{self as o, SliceArg};
use crate::{Array, Dtype, Result};

fn front(n: usize, shape: &[usize]) -> Vec<usize> {
    [&[n], shape].concat()
}

/// A batched `[n, ...s]` as `[n, 1, ..., 1, ...s]` of rank `rank + 1`, so
/// right-aligned broadcasting against the other operands still lines up.
fn lift(a: &Array, rank: usize) -> Result<Array> {
    let s = &a.shape()[1..];
    if s.len() >= rank {
        return Ok(a.clone());
    }
    let mut dims = vec![a.shape()[0] as isize];
    dims.extend(std::iter::repeat_n(1, rank - s.len()));
    dims.extend(s.iter().map(|&d| d as isize));
    o::reshape(a, &dims)
}

/// Every operand with the batch axis: unbatched ones broadcast (a view).
fn spread(args: &[(Array, bool)], n: usize) -> Result<Vec<Array>> {
    args.iter()
        .map(|(a, b)| if *b { Ok(a.clone()) } else { o::broadcast_to(&o::expand_dims(a, 0)?, &front(n, a.shape())) })
        .collect()
}

fn plus_one(axes: &[usize]) -> Vec<usize> {
    axes.iter().map(|&a| a + 1).collect()
}

/// Example `i` of a batched operand.
fn example(a: &Array, i: usize) -> Result<Array> {
    let one = o::slice(a, &[SliceArg::range(i as isize, i as isize + 1)])?;
    o::reshape(&one, &a.shape()[1..].iter().map(|&d| d as isize).collect::<Vec<_>>())
}

/// `prim` once per example, stacked: the rule of primitives without a direct one.
pub(crate) fn per_example(prim: &Primitive, args: &[(Array, bool)], n: usize, shape: &[usize], dtype: Dtype) -> Result<Array> {
    if n == 0 {
        return o::zeros(&front(0, shape), dtype);
    }
    let rows = (0..n)
        .map(|i| {
            let inputs = args.iter().map(|(a, b)| if *b { example(a, i) } else { Ok(a.clone()) }).collect::<Result<Vec<_>>>()?;
            o::expand_dims(&Array::from_op(prim.clone(), inputs, shape.to_vec(), dtype)?, 0)
        })
        .collect::<Result<Vec<_>>>()?;
    o::concatenate(&rows, 0isize)
}

fn dims(v: &[usize]) -> Vec<isize> {
    v.iter().map(|&d| d as isize).collect()
}

/// A convolution of `n` examples as one convolution: batched inputs fold
/// into the batch axis; batched weights into the output channels (kept
/// grouped: `[G, n, og]`); both batched, into `n` times the groups (the
/// examples side by side along the channels).
fn conv_batch(p: &super::ConvParams, args: &[(Array, bool)], n: usize, shape: &[usize]) -> Result<Array> {
    let ((x, xb), (w, wb)) = (&args[0], &args[1]);
    let nd = shape.len();
    let d = nd - 2;
    let groups = p.groups;
    let c_out = shape[nd - 1];
    let og = c_out / groups;
    let out = front(n, shape);
    match (*xb, *wb) {
        (true, false) => {
            let xs = x.shape();
            let xf = o::reshape(x, &dims(&[&[n * xs[1]], &xs[2..]].concat()))?;
            let y = o::conv_node(&xf, w, p.clone(), [&[n * shape[0]], &shape[1..]].concat())?;
            o::reshape(&y, &dims(&out))
        }
        (false, true) => {
            let ws = w.shape();
            // [n, G, og, K.., cg] -> [G, n, og, K.., cg].
            let w6 = o::reshape(w, &dims(&[&[n, groups, og], &ws[2..]].concat()))?;
            let mut perm: Vec<isize> = vec![1, 0, 2];
            perm.extend((3..w6.ndim()).map(|a| a as isize));
            let wf = o::reshape(&o::transpose(&w6, &perm)?, &dims(&[&[groups * n * og], &ws[2..]].concat()))?;
            let y = o::conv_node(x, &wf, p.clone(), [&shape[..nd - 1], &[n * c_out]].concat())?;
            // [N, O.., G, n, og] -> [n, N, O.., G, og].
            let y5 = o::reshape(&y, &dims(&[&shape[..nd - 1], &[groups, n, og]].concat()))?;
            let mut perm: Vec<isize> = vec![nd as isize];
            perm.extend((0..nd).map(|a| a as isize));
            perm.push(nd as isize + 1);
            o::reshape(&o::transpose(&y5, &perm)?, &dims(&out))
        }
        _ => {
            let (x, w) = (spread(&args[..1], n)?.remove(0), spread(&args[1..], n)?.remove(0));
            let xs = x.shape();
            // [n, N, S.., C] -> [N, S.., n * C].
            let xm = o::moveaxis(&x, 0, d as isize + 1)?;
            let xf = o::reshape(&xm, &dims(&[&xs[1..nd], &[n * xs[nd]]].concat()))?;
            let wf = o::reshape(&w, &dims(&[&[n * c_out], &w.shape()[2..]].concat()))?;
            let q = super::ConvParams { groups: groups * n, ..p.clone() };
            let y = o::conv_node(&xf, &wf, q, [&shape[..nd - 1], &[n * c_out]].concat())?;
            let y2 = o::reshape(&y, &dims(&[&shape[..nd - 1], &[n, c_out]].concat()))?;
            o::moveaxis(&y2, d as isize + 1, 0)
        }
    }
}

impl Primitive {
    /// This primitive on a batch of `n` examples: `args` are the inputs,
    /// each with whether it is batched (axis 0); `shape` and `dtype` are one
    /// example's output. The result has the batch axis in front.
    pub(crate) fn batch(&self, args: &[(Array, bool)], n: usize, shape: &[usize], dtype: Dtype) -> Result<Array> {
        let out = front(n, shape);
        let node = |prim: Primitive, inputs: Vec<Array>| Array::from_op(prim, inputs, out.clone(), dtype);
        let only_first = args.iter().skip(1).all(|(_, b)| !b);
        let x = &args[0].0;
        match self {
            // One input, batched; the op keeps every axis's meaning.
            Primitive::Unary(_)
            | Primitive::AsType
            | Primitive::Copy
            | Primitive::Reshape
            | Primitive::Softmax
            | Primitive::LogSumExp
            | Primitive::Sort
            | Primitive::ArgSort
            | Primitive::Rope(_)
            | Primitive::Complex(_) => node(self.clone(), vec![x.clone()]),
            Primitive::Fft { axes, inverse, real } => {
                node(Primitive::Fft { axes: plus_one(axes), inverse: *inverse, real: *real }, vec![x.clone()])
            }
            // Elementwise with broadcasting: align batched operands.
            Primitive::Binary(_) | Primitive::Select => {
                let inputs = args.iter().map(|(a, b)| if *b { lift(a, shape.len()) } else { Ok(a.clone()) }).collect::<Result<_>>()?;
                node(self.clone(), inputs)
            }
            Primitive::BroadcastTo => node(self.clone(), vec![lift(x, shape.len())?]),
            Primitive::Reduce { op, axes } => node(Primitive::Reduce { op: *op, axes: plus_one(axes) }, vec![x.clone()]),
            Primitive::ArgReduce { op, axis } => node(Primitive::ArgReduce { op: *op, axis: axis + 1 }, vec![x.clone()]),
            Primitive::Scan { op, axis, reverse, inclusive } => {
                node(Primitive::Scan { op: *op, axis: axis + 1, reverse: *reverse, inclusive: *inclusive }, vec![x.clone()])
            }
            // Batched over leading axes already; operands share their batch.
            Primitive::Matmul | Primitive::Linalg(_) => node(self.clone(), spread(args, n)?),
            // Every operand carries the same leading axes: the batch is one more.
            Primitive::Quantize { .. } | Primitive::Dequantize { .. } | Primitive::QuantizedMatmul { .. } => {
                node(self.clone(), spread(args, n)?)
            }
            Primitive::Transpose { perm } => {
                let perm = std::iter::once(0).chain(plus_one(perm)).collect();
                node(Primitive::Transpose { perm }, vec![x.clone()])
            }
            Primitive::Slice { start, step } => {
                let start = std::iter::once(0).chain(start.iter().copied()).collect();
                let step = std::iter::once(1).chain(step.iter().copied()).collect();
                node(Primitive::Slice { start, step }, vec![x.clone()])
            }
            Primitive::Concatenate { axis } => node(Primitive::Concatenate { axis: axis + 1 }, spread(args, n)?),
            Primitive::Gather { axis } if only_first => node(Primitive::Gather { axis: axis + 1 }, vec![x.clone(), args[1].0.clone()]),
            Primitive::GatherAxis { axis } => node(Primitive::GatherAxis { axis: axis + 1 }, spread(args, n)?),
            Primitive::SliceUpdate { start, step, region } => {
                let a = spread(&args[..1], n)?.remove(0);
                let (u, ub) = &args[1];
                let u = if *ub { lift(u, region.len())? } else { u.clone() };
                let prim = Primitive::SliceUpdate {
                    start: std::iter::once(0).chain(start.iter().copied()).collect(),
                    step: std::iter::once(1).chain(step.iter().copied()).collect(),
                    region: front(n, region),
                };
                node(prim, vec![a, u])
            }
            Primitive::RmsNorm { .. } | Primitive::LayerNorm { .. } if only_first => node(self.clone(), args.iter().map(|(a, _)| a.clone()).collect()),
            // Four-dimensional operands: fold the batch into their first axis.
            Primitive::Sdpa { .. } => {
                let inputs = spread(args, n)?
                    .iter()
                    .map(|a| {
                        let mut dims: Vec<isize> = a.shape()[1..].iter().map(|&d| d as isize).collect();
                        dims[0] *= n as isize;
                        o::reshape(a, &dims)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut folded = shape.to_vec();
                folded[0] *= n;
                let y = Array::from_op(self.clone(), inputs, folded, dtype)?;
                o::reshape(&y, &out.iter().map(|&d| d as isize).collect::<Vec<_>>())
            }
            Primitive::Conv(p) => conv_batch(p, args, n, shape),
            // `compile`'s fused chain: its steps as nodes, each batched by its own rule.
            Primitive::Fused(p) => {
                let (inputs, flags): (Vec<Array>, Vec<bool>) = args.iter().cloned().unzip();
                p.expand(&inputs, &flags, n, shape)
            }
            // Batched indices, batched norm weights, random keys, strided views: per example.
            Primitive::Gather { .. }
            | Primitive::Scatter { .. }
            | Primitive::RmsNorm { .. }
            | Primitive::LayerNorm { .. }
            | Primitive::RandomBits
            | Primitive::Arange { .. }
            | Primitive::AsStrided { .. } => per_example(self, args, n, shape, dtype),
        }
    }
}
