//! [`FusedProgram`]: what a `Primitive::Fused` node computes. `compile`
//! (`transforms/compile.rs`, grouping in `transforms/fuse.rs`) replaces a
//! chain of elementwise nodes whose intermediates nothing else reads by one
//! node holding the chain as a small program; the CPU kernel
//! (`backend/cpu/fused.rs`) runs it in one pass over the output, a chunk at a
//! time, through the ops' own per-element functions.
//!
//! Every step has the node's output shape; the program's inputs broadcast to
//! it (as a `Binary` node's inputs do). A program is immutable and shared
//! (`Arc`) by every node a compiled function builds, on any thread.
//!
//! Its rules (`primitive/autodiff.rs`, `primitive/vmap.rs`) expand it back
//! into its steps ([`FusedProgram::expand`]): the derivative is the
//! derivative of the expansion, the batching rule each step's own rule.

use super::Primitive;
use crate::dtype::Dtype;
use crate::shape::broadcast_shapes;
use crate::{bail, Array, Result};

/// An operand of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedArg {
    /// Input `i` of the node, broadcast to the output shape.
    Input(usize),
    /// The result of an earlier step.
    Step(usize),
}

/// One elementwise node of the chain: `Unary`, `Binary`, `Select`,
/// `AsType`, or `BroadcastTo` (of an input: no computation, the kernel reads
/// the input broadcast).
#[derive(Clone, Debug, PartialEq)]
pub struct FusedStep {
    pub prim: Primitive,
    pub args: Vec<FusedArg>,
    pub dtype: Dtype,
}

/// A chain of elementwise steps, the last one the node's output.
#[derive(Debug, PartialEq)]
pub struct FusedProgram {
    inputs: Vec<Dtype>,
    steps: Vec<FusedStep>,
}

impl FusedProgram {
    /// A program on inputs of the dtypes `inputs`. Fails with
    /// `Error::Dtype` when a step's operands do not have the dtypes its
    /// primitive takes (`Unary`: the step's dtype; `Binary`: one dtype,
    /// giving the step's, or bool for comparisons; `Select`: bool and the
    /// step's twice; `BroadcastTo`: the step's), and `InvalidArgument` for
    /// another primitive, an operand that is not an input or an earlier
    /// step, or no steps.
    ///
    /// ```
    /// use weft::primitive::fused::{FusedArg, FusedProgram, FusedStep};
    /// use weft::primitive::{BinaryOp, Primitive, UnaryOp};
    /// use weft::Dtype;
    /// let exp = FusedStep { prim: Primitive::Unary(UnaryOp::Exp), args: vec![FusedArg::Input(0)], dtype: Dtype::F32 };
    /// let add = FusedStep { prim: Primitive::Binary(BinaryOp::Add), args: vec![FusedArg::Step(0), FusedArg::Input(1)], dtype: Dtype::F32 };
    /// assert!(FusedProgram::new(vec![Dtype::F32, Dtype::F32], vec![exp.clone(), add.clone()]).is_ok());
    /// // An f16 operand of an f32 `Add`: refused.
    /// assert!(matches!(FusedProgram::new(vec![Dtype::F32, Dtype::F16], vec![exp, add]), Err(weft::Error::Dtype(_))));
    /// ```
    pub fn new(inputs: Vec<Dtype>, steps: Vec<FusedStep>) -> Result<FusedProgram> {
        if steps.is_empty() {
            bail!(InvalidArgument, "a fused program needs at least one step");
        }
        for (k, s) in steps.iter().enumerate() {
            let dt = |a: &FusedArg| -> Result<Dtype> {
                match *a {
                    FusedArg::Input(i) if i < inputs.len() => Ok(inputs[i]),
                    FusedArg::Step(j) if j < k => Ok(steps[j].dtype),
                    a => bail!(InvalidArgument, "fused step {k}: operand {a:?} is not an input or an earlier step"),
                }
            };
            let args = s.args.iter().map(dt).collect::<Result<Vec<_>>>()?;
            let arity = match &s.prim {
                Primitive::Unary(_) | Primitive::AsType | Primitive::BroadcastTo => 1,
                Primitive::Binary(_) => 2,
                Primitive::Select => 3,
                p => bail!(InvalidArgument, "fused step {k}: {} is not elementwise", p.name()),
            };
            if args.len() != arity {
                bail!(InvalidArgument, "fused step {k}: {} takes {arity} operands, got {}", s.prim.name(), args.len());
            }
            let ok = match &s.prim {
                Primitive::Unary(_) | Primitive::BroadcastTo => args[0] == s.dtype,
                Primitive::AsType => true,
                Primitive::Binary(op) => {
                    args[0] == args[1] && s.dtype == if op.is_comparison() { Dtype::Bool } else { args[0] }
                }
                _ => args[0] == Dtype::Bool && args[1] == s.dtype && args[2] == s.dtype,
            };
            if !ok {
                bail!(Dtype, "fused step {k}: {} of {args:?} cannot give {}", s.prim.name(), s.dtype);
            }
        }
        Ok(FusedProgram { inputs, steps })
    }

    /// The dtypes of the inputs.
    pub fn inputs(&self) -> &[Dtype] {
        &self.inputs
    }

    /// The steps, oldest first; the last is the output.
    pub fn steps(&self) -> &[FusedStep] {
        &self.steps
    }

    /// The output's dtype.
    pub fn dtype(&self) -> Dtype {
        self.steps[self.steps.len() - 1].dtype
    }

    /// Steps that compute (all but the broadcasts).
    pub fn compute_steps(&self) -> usize {
        self.steps.iter().filter(|s| !matches!(s.prim, Primitive::BroadcastTo)).count()
    }

    /// The steps' names, for `export_to_dot` labels: `"Fused(exp, Add)"`.
    pub fn label(&self) -> String {
        let names: Vec<String> = self
            .steps
            .iter()
            .map(|s| match &s.prim {
                Primitive::Unary(op) => op.name().to_string(),
                Primitive::Binary(op) => format!("{op:?}"),
                p => p.name().to_string(),
            })
            .collect();
        format!("Fused({})", names.join(", "))
    }

    /// Checks that `inputs` (the node's) fit the program and broadcast to
    /// `shape`, as `ops::fused` requires before building a node.
    pub(crate) fn check_inputs(&self, inputs: &[Array], shape: &[usize]) -> Result<()> {
        if inputs.len() != self.inputs.len() {
            bail!(InvalidArgument, "a fused program of {} inputs got {}", self.inputs.len(), inputs.len());
        }
        for (i, (x, &d)) in inputs.iter().zip(&self.inputs).enumerate() {
            if x.dtype() != d {
                bail!(Dtype, "fused input {i}: {} where the program reads {d}", x.dtype());
            }
            if broadcast_shapes(x.shape(), shape).ok().as_deref() != Some(shape) {
                bail!(Shape, "fused input {i}: shape {:?} does not broadcast to {shape:?}", x.shape());
            }
        }
        // Unary and AsType do not broadcast: their input operands must
        // have the output's shape already.
        for (k, s) in self.steps.iter().enumerate() {
            if let (Primitive::Unary(_) | Primitive::AsType, FusedArg::Input(i)) = (&s.prim, s.args[0]) {
                if inputs[i].shape() != shape {
                    bail!(Shape, "fused step {k}: {} of an input of shape {:?} in an output of {shape:?}", s.prim.name(), inputs[i].shape());
                }
            }
        }
        Ok(())
    }

    /// The program as ordinary nodes on `inputs`, of output `shape`: one
    /// node per step, with the step's primitive. `batched` gives, per
    /// input, whether it carries a batch axis in front (of `n` examples):
    /// steps on batched operands then use their primitive's batching rule
    /// (`primitive/vmap.rs`). With no batched input it is the unfused graph.
    pub(crate) fn expand(&self, inputs: &[Array], batched: &[bool], n: usize, shape: &[usize]) -> Result<Array> {
        let mut vals: Vec<(Array, bool)> = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let args: Vec<(Array, bool)> = s
                .args
                .iter()
                .map(|a| match *a {
                    FusedArg::Input(i) => (inputs[i].clone(), batched[i]),
                    FusedArg::Step(j) => vals[j].clone(),
                })
                .collect();
            let any = args.iter().any(|(_, b)| *b);
            let v = if any {
                s.prim.batch(&args, n, shape, s.dtype)?
            } else {
                Array::from_op(s.prim.clone(), args.into_iter().map(|(a, _)| a).collect(), shape.to_vec(), s.dtype)?
            };
            vals.push((v, any));
        }
        let (out, b) = vals.pop().ok_or_else(|| crate::Error::Internal("an empty fused program".into()))?;
        if !b && batched.iter().any(|&b| b) {
            // Nothing batched reached the output: every example is the same.
            return crate::ops::broadcast_to(&crate::ops::expand_dims(&out, 0)?, &[&[n], shape].concat());
        }
        Ok(out)
    }

    /// Whether every step that reads or makes complex64 has a complex64
    /// meaning (`primitive/complex.rs`). Steps on real dtypes are not
    /// asked: a comparison of float32 operands beside a complex product is
    /// as valid fused as unfused.
    pub(crate) fn supports_complex(&self) -> bool {
        self.steps.iter().enumerate().all(|(k, s)| {
            let dtype = |a: &FusedArg| match *a {
                FusedArg::Input(i) => self.inputs[i],
                FusedArg::Step(j) => self.steps[j.min(k)].dtype,
            };
            let complex = s.dtype.is_complex() || s.args.iter().any(|a| dtype(a).is_complex());
            !complex || super::complex::supports_complex(&s.prim)
        })
    }

    /// Whether `prim` may be a step (elementwise, without broadcasting
    /// semantics of its own beyond its operands').
    pub fn fusible(prim: &Primitive) -> bool {
        matches!(prim, Primitive::Unary(_) | Primitive::Binary(_) | Primitive::Select | Primitive::AsType | Primitive::BroadcastTo)
    }
}
