//! Functions with their own derivative: `custom_vjp`, `checkpoint`, and
//! `stop_gradient`.

use super::trace::{self, kind, Kind, Tape, TapeOp};
use super::vjp::vjp;
use crate::{Array, Result};
use std::sync::{Arc, OnceLock};

/// A custom derivative: `(primals, cotangents of the outputs, outputs)` to
/// the primals' cotangents (one per primal, of its shape).
pub type VjpRule = dyn Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync;

/// One call of a function with a custom derivative, shared by its outputs'
/// tapes. The outputs were computed with the gradient traces hidden, so
/// reverse mode sees this call as one step whose rule is `vjp`.
pub(crate) struct CustomCall {
    pub inputs: Vec<Array>,
    /// The outputs as the function computed them (batching traces kept).
    pub outs: Vec<Array>,
    /// Ids of the nodes returned for `outs` (set once, right after they are made).
    pub out_ids: OnceLock<Vec<u64>>,
    pub vjp: Arc<VjpRule>,
}

/// `a` with every gradient trace removed: its value, seen as a constant by
/// `vjp`, `grad` and `jvp` (vmap still batches it).
pub fn stop_gradient(a: &Array) -> Array {
    trace::unmark_where(a, |t| kind(t) == Kind::Grad)
}

/// Calls `f` on `inputs`; under a gradient transform, the derivative of the
/// result is `rule` instead of the derivative of what `f` did.
///
/// ```
/// use std::sync::Arc;
/// use weft::{ops, transforms, Array};
/// let x = Array::from_slice(&[2.0f32], &[1]).unwrap();
/// // d/dx of x*x, declared as 10 (and not 2x).
/// let rule: Arc<transforms::VjpRule> = Arc::new(|_, cots, _| Ok(vec![ops::multiply(&cots[0], &Array::scalar(10.0f32))?]));
/// let (_, g) = transforms::vjp(
///     |x| transforms::custom_vjp(|x| Ok(vec![ops::multiply(&x[0], &x[0])?]), rule.clone(), x),
///     &[x],
///     &[Array::from_slice(&[1.0f32], &[1]).unwrap()],
/// ).unwrap();
/// assert_eq!(g[0].to_vec::<f32>().unwrap(), vec![10.0]);
/// ```
pub fn custom_vjp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    rule: Arc<VjpRule>,
    inputs: &[Array],
) -> Result<Vec<Array>> {
    let hidden: Vec<Array> = inputs.iter().map(stop_gradient).collect();
    let outs = f(&hidden)?;
    let grads: Vec<u64> = trace::union(inputs).into_iter().filter(|&t| kind(t) == Kind::Grad).collect();
    if grads.is_empty() {
        return Ok(outs);
    }
    let call = Arc::new(CustomCall { inputs: inputs.to_vec(), outs: outs.clone(), out_ids: OnceLock::new(), vjp: rule });
    let wrapped: Vec<Array> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut ids = trace::traces(o).to_vec();
            for &t in &grads {
                if let Err(at) = ids.binary_search(&t) {
                    ids.insert(at, t);
                }
            }
            let tape = Tape { traces: ids, op: TapeOp::Custom(call.clone(), i), inputs: inputs.to_vec(), note: None };
            Array::retaped(o, Some(Box::new(tape)))
        })
        .collect();
    // Only this function has `call` so far: the set cannot fail.
    let _ = call.out_ids.set(wrapped.iter().map(Array::id).collect());
    Ok(wrapped)
}

/// Calls `f` without keeping its intermediates for reverse mode: the
/// backward pass computes them again (gradient checkpointing). The result
/// and its derivatives are those of `f`.
pub fn checkpoint<F>(f: Arc<F>, inputs: &[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    let g = f.clone();
    let rule: Arc<VjpRule> = Arc::new(move |primals, cots, _outs| Ok(vjp(|x| g(x), primals, cots)?.1));
    custom_vjp(|x| f(x), rule, inputs)
}
