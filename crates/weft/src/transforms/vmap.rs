//! `vmap`: a function of one example applied to a batch.
//!
//! The function is traced once on example-shaped inputs (the first example
//! of each batched input, never evaluated unless the function reads it);
//! the trace is then replayed oldest node first with each primitive's
//! batching rule (`primitive/vmap.rs`), on arrays whose batch axis is 0.

use super::trace::{self, new_trace, Kind, TapeOp};
use crate::ops::{self, SliceArg};
use crate::{bail, Array, Result};
use std::collections::{HashMap, HashSet};

/// `f` mapped over axis `in_axes[i]` of each input (`None`: the input is
/// shared by every example); output `j` has its batch axis at `out_axes[j]`
/// (one entry for all outputs, or one per output).
///
/// ```
/// use weft::{ops, transforms, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// // The sum of each row.
/// let y = transforms::vmap(|x| Ok(vec![ops::sum(&x[0], weft::Axes::All, false)?]), &[x], &[Some(0)], &[0]).unwrap();
/// assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![3.0, 7.0]);
/// ```
pub fn vmap(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    inputs: &[Array],
    in_axes: &[Option<isize>],
    out_axes: &[isize],
) -> Result<Vec<Array>> {
    if in_axes.len() != inputs.len() {
        bail!(InvalidArgument, "vmap: {} in_axes for {} inputs", in_axes.len(), inputs.len());
    }
    let t = new_trace(Kind::Batch);
    let mut size: Option<usize> = None;
    let mut batched: HashMap<u64, Array> = HashMap::new();
    let mut examples = Vec::with_capacity(inputs.len());
    for (x, ax) in inputs.iter().zip(in_axes) {
        let Some(ax) = *ax else {
            examples.push(x.clone());
            continue;
        };
        let ax = crate::shape::normalize_axis(ax, x.ndim()).map_err(|_| {
            crate::Error::InvalidArgument(format!("vmap: in_axes {ax} is out of range for an input of shape {:?}", x.shape()))
        })?;
        let n = x.shape()[ax];
        if *size.get_or_insert(n) != n {
            bail!(InvalidArgument, "vmap: inputs have different sizes along their mapped axes ({} and {n})", size.unwrap_or(0));
        }
        let front = ops::moveaxis(x, ax as isize, 0)?;
        let first = if n == 0 { front.clone() } else { ops::slice(&front, &[SliceArg::range(0, 1)])? };
        let shape: Vec<isize> = front.shape()[1..].iter().map(|&d| d as isize).collect();
        let example = trace::mark(&ops::reshape(&first, &shape).or_else(|_| ops::zeros(&front.shape()[1..], x.dtype()))?, t);
        batched.insert(example.id(), front);
        examples.push(example);
    }
    let Some(n) = size else {
        bail!(InvalidArgument, "vmap: at least one input must be mapped (in_axes are all None)");
    };
    let outs = f(&examples)?;
    if out_axes.len() != 1 && out_axes.len() != outs.len() {
        bail!(InvalidArgument, "vmap: {} out_axes for {} outputs", out_axes.len(), outs.len());
    }
    let stop: HashSet<u64> = batched.keys().copied().collect();
    let nodes = trace::collect(t, &outs, &stop, |tape| match &tape.op {
        TapeOp::Prim(_) => tape.inputs.clone(),
        TapeOp::Custom(call, i) => vec![call.outs[*i].clone()],
    });
    for node in &nodes {
        if batched.contains_key(&node.id()) {
            continue;
        }
        let Some(tape) = node.tape() else { continue };
        let out = match &tape.op {
            TapeOp::Prim(p) => {
                let args: Vec<(Array, bool)> = tape
                    .inputs
                    .iter()
                    .map(|x| match batched.get(&x.id()) {
                        Some(b) => (b.clone(), true),
                        None => (x.clone(), false),
                    })
                    .collect();
                if !args.iter().any(|(_, b)| *b) {
                    continue;
                }
                p.batch(&args, n, node.shape(), node.dtype())?
            }
            TapeOp::Custom(call, i) => match batched.get(&call.outs[*i].id()) {
                Some(b) => b.clone(),
                None => continue,
            },
        };
        batched.insert(node.id(), out);
    }
    outs.iter()
        .enumerate()
        .map(|(j, o)| {
            let b = match batched.get(&o.id()) {
                Some(b) => b.clone(),
                None => ops::broadcast_to(&ops::expand_dims(o, 0)?, &[&[n], o.shape()].concat())?,
            };
            let ax = if out_axes.len() == 1 { out_axes[0] } else { out_axes[j] };
            if crate::shape::normalize_axis(ax, b.ndim()).is_err() {
                bail!(InvalidArgument, "vmap: out_axes {ax} is out of range for an output of {} dimensions", o.ndim());
            }
            Ok(trace::unmark(&ops::moveaxis(&b, 0, ax)?, t))
        })
        .collect()
}
