//! Reverse and forward mode: `vjp`, `grad`, `value_and_grad`, `jvp`.
//!
//! `vjp` traces the function on marked inputs, then walks the trace from
//! the outputs back, newest node first, applying each primitive's rule
//! (`primitive/autodiff.rs`). `jvp` is the transpose of that: for the
//! linear map `u -> vjp(f, x, u)`, its own vjp with cotangent `t` is `J t`,
//! so each primitive states one derivative rule and both modes follow.

use super::trace::{self, new_trace, Kind, TapeOp};
use crate::{bail, ops, Array, Result};
use std::collections::{HashMap, HashSet};

/// Whether reverse mode carries a cotangent for arrays of this dtype
/// (floats and complex64; see `Primitive::vjp` for complex cotangents).
fn differentiable(a: &Array) -> bool {
    a.dtype().is_inexact()
}

fn accumulate(cots: &mut HashMap<u64, Array>, a: &Array, c: Array) -> Result<()> {
    let c = if c.dtype() != a.dtype() { ops::astype(&c, a.dtype())? } else { c };
    if c.shape() != a.shape() {
        bail!(Shape, "a derivative rule gave a cotangent of shape {:?} for an array of shape {:?}", c.shape(), a.shape());
    }
    let c = match cots.remove(&a.id()) {
        Some(prev) => ops::add(&prev, &c)?,
        None => c,
    };
    cots.insert(a.id(), c);
    Ok(())
}

/// Cotangents of `sources` (marked with trace `t`) given cotangents of
/// `outputs` (`None`: no cotangent). `None` for a source nothing reached.
pub(crate) fn backward(t: u64, sources: &[Array], outputs: &[Array], out_cots: &[Option<Array>]) -> Result<Vec<Option<Array>>> {
    let stop: HashSet<u64> = sources.iter().map(Array::id).collect();
    let nodes = trace::collect(t, outputs, &stop, |tape| tape.inputs.clone());
    let mut cots: HashMap<u64, Array> = HashMap::new();
    for (o, c) in outputs.iter().zip(out_cots) {
        if let Some(c) = c {
            if trace::has(o, t) && differentiable(o) {
                accumulate(&mut cots, o, c.clone())?;
            }
        }
    }
    for node in nodes.iter().rev() {
        if stop.contains(&node.id()) {
            continue;
        }
        let Some(tape) = node.tape() else { continue };
        let needs: Vec<bool> = tape.inputs.iter().map(|x| trace::has(x, t) && differentiable(x)).collect();
        if !needs.iter().any(|&n| n) {
            continue;
        }
        let input_cots = match &tape.op {
            TapeOp::Prim(p) => {
                let Some(g) = cots.remove(&node.id()) else { continue };
                p.vjp(&tape.inputs, node, &g, &needs)?
            }
            TapeOp::Custom(call, _) => {
                let ids = call.out_ids.get().map(Vec::as_slice).unwrap_or(&[]);
                // All consumers of a call's outputs are newer than all of
                // them, so at the newest output every cotangent is final.
                if ids.iter().max() != Some(&node.id()) {
                    continue;
                }
                let out_cots: Vec<Option<Array>> = ids.iter().map(|id| cots.remove(id)).collect();
                if out_cots.iter().all(Option::is_none) {
                    continue;
                }
                let filled = out_cots
                    .into_iter()
                    .zip(&call.outs)
                    .map(|(c, o)| c.map_or_else(|| ops::zeros(o.shape(), o.dtype()), Ok))
                    .collect::<Result<Vec<_>>>()?;
                let r = (call.vjp)(&call.inputs, &filled, &call.outs)?;
                if r.len() != call.inputs.len() {
                    bail!(InvalidArgument, "a custom vjp returned {} cotangents for {} primals", r.len(), call.inputs.len());
                }
                r.into_iter().map(Some).collect()
            }
        };
        for ((x, c), need) in tape.inputs.iter().zip(input_cots).zip(&needs) {
            if let (Some(c), true) = (c, need) {
                accumulate(&mut cots, x, c)?;
            }
        }
    }
    Ok(sources.iter().map(|s| cots.remove(&s.id())).collect())
}

/// `f(primals)` and the vector-Jacobian product: the cotangent of each
/// primal given `cotangents` of the outputs (one per output, of its shape).
///
/// ```
/// use weft::{ops, transforms, Array};
/// let x = Array::from_slice(&[3.0f32], &[1]).unwrap();
/// let one = Array::from_slice(&[1.0f32], &[1]).unwrap();
/// let (y, dx) = transforms::vjp(|x| Ok(vec![ops::multiply(&x[0], &x[0])?]), &[x], &[one]).unwrap();
/// assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![9.0]);
/// assert_eq!(dx[0].to_vec::<f32>().unwrap(), vec![6.0]);
/// ```
pub fn vjp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    cotangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    let cots: Vec<Option<Array>> = cotangents.iter().cloned().map(Some).collect();
    vjp_partial(f, primals, |outs| {
        if outs.len() != cots.len() {
            bail!(InvalidArgument, "vjp: {} cotangents for {} outputs", cots.len(), outs.len());
        }
        for (o, c) in outs.iter().zip(&cots) {
            if let Some(c) = c {
                if c.shape() != o.shape() {
                    bail!(Shape, "vjp: cotangent of shape {:?} for an output of shape {:?}", c.shape(), o.shape());
                }
            }
        }
        Ok(cots.clone())
    })
}

/// `vjp` with the cotangents chosen once the outputs are known (`None`:
/// that output does not contribute).
pub(crate) fn vjp_partial(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    cotangents: impl FnOnce(&[Array]) -> Result<Vec<Option<Array>>>,
) -> Result<(Vec<Array>, Vec<Array>)> {
    let t = new_trace(Kind::Grad);
    let marked: Vec<Array> = primals.iter().map(|p| trace::mark(p, t)).collect();
    let outs = f(&marked)?;
    let cots = cotangents(&outs)?;
    let grads = backward(t, &marked, &outs, &cots)?;
    let grads = grads
        .into_iter()
        .zip(primals)
        .map(|(g, p)| g.map_or_else(|| ops::zeros(p.shape(), p.dtype()), |g| Ok(trace::unmark(&g, t))))
        .collect::<Result<Vec<_>>>()?;
    Ok((outs.iter().map(|o| trace::unmark(o, t)).collect(), grads))
}

/// `f(primals)` and the gradients of its first output (a scalar) with
/// respect to the primals at `argnums`.
pub fn value_and_grad(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    argnums: &[usize],
) -> Result<(Vec<Array>, Vec<Array>)> {
    if let Some(&i) = argnums.iter().find(|&&i| i >= primals.len()) {
        bail!(InvalidArgument, "grad: argnum {i} for a function of {} arguments", primals.len());
    }
    let (outs, grads) = vjp_partial(f, primals, |outs| {
        let Some(first) = outs.first() else {
            bail!(InvalidArgument, "grad: the function returned nothing");
        };
        if first.size() != 1 {
            bail!(Shape, "grad: the function must return a scalar, got shape {:?}", first.shape());
        }
        if first.dtype().is_complex() {
            bail!(Dtype, "grad: the function must return a real scalar, got complex64 (take its real part, abs or a vjp)");
        }
        let mut cots = vec![None; outs.len()];
        cots[0] = Some(ops::ones(first.shape(), first.dtype())?);
        Ok(cots)
    })?;
    Ok((outs, argnums.iter().map(|&i| grads[i].clone()).collect()))
}

/// The gradients of `f`'s scalar output with respect to the primals at `argnums`.
pub fn grad(f: impl FnOnce(&[Array]) -> Result<Vec<Array>>, primals: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
    Ok(value_and_grad(f, primals, argnums)?.1)
}

/// `f(primals)` and the Jacobian-vector product `J t` for `tangents` (one
/// per primal, of its shape).
///
/// ```
/// use weft::{ops, transforms, Array};
/// let x = Array::from_slice(&[0.0f64], &[1]).unwrap();
/// let t = Array::from_slice(&[2.0f64], &[1]).unwrap();
/// let (_, jt) = transforms::jvp(|x| Ok(vec![ops::sin(&x[0])?]), &[x], &[t]).unwrap();
/// assert_eq!(jt[0].to_vec::<f64>().unwrap(), vec![2.0]);
/// ```
pub fn jvp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    tangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    if tangents.len() != primals.len() {
        bail!(InvalidArgument, "jvp: {} tangents for {} primals", tangents.len(), primals.len());
    }
    for (p, t) in primals.iter().zip(tangents) {
        if p.shape() != t.shape() {
            bail!(Shape, "jvp: tangent of shape {:?} for a primal of shape {:?}", t.shape(), p.shape());
        }
    }
    let (tx, tu) = (new_trace(Kind::Grad), new_trace(Kind::Grad));
    let marked: Vec<Array> = primals.iter().map(|p| trace::mark(p, tx)).collect();
    let outs = f(&marked)?;
    // The cotangents `u` of the outputs are the inputs of the linear map
    // u -> J^T u; their value does not matter (zeros).
    let us = outs
        .iter()
        .map(|o| Ok(trace::mark(&ops::zeros(o.shape(), o.dtype())?, tu)))
        .collect::<Result<Vec<_>>>()?;
    let jt_u = backward(tx, &marked, &outs, &us.iter().cloned().map(Some).collect::<Vec<_>>())?;
    let (mut lin_outs, mut lin_cots) = (Vec::new(), Vec::new());
    for (g, t) in jt_u.into_iter().zip(tangents) {
        if let Some(g) = g {
            lin_outs.push(g);
            lin_cots.push(Some(t.clone()));
        }
    }
    let jts = backward(tu, &us, &lin_outs, &lin_cots)?;
    let jts = jts
        .into_iter()
        .zip(&outs)
        .map(|(j, o)| {
            // An output with no derivative (a comparison's bool, an
            // integer) gets zeros in the tangents' dtype, as MLX.
            let dt = if o.dtype().is_inexact() { o.dtype() } else { tangents.first().map_or(o.dtype(), |t| t.dtype()) };
            let j = j.map_or_else(|| ops::zeros(o.shape(), dt), Ok)?;
            Ok(trace::unmark(&trace::unmark(&j, tu), tx))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((outs.iter().map(|o| trace::unmark(o, tx)).collect(), jts))
}
