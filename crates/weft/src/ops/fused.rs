//! `fused`: one node running a [`FusedProgram`] (a chain of elementwise
//! steps) on its inputs. `compile` builds these (`transforms/compile.rs`);
//! the program checks its own dtypes when made, this checks the inputs.

use crate::primitive::{FusedProgram, Primitive};
use crate::{Array, Result};
use std::sync::Arc;

/// `program` on `inputs` (each broadcast to `shape`), in one node.
///
/// ```
/// use std::sync::Arc;
/// use weft::primitive::fused::{FusedArg, FusedProgram, FusedStep};
/// use weft::primitive::{BinaryOp, Primitive, UnaryOp};
/// use weft::{ops, Array, Dtype};
/// let steps = vec![
///     FusedStep { prim: Primitive::Unary(UnaryOp::Exp), args: vec![FusedArg::Input(0)], dtype: Dtype::F32 },
///     FusedStep { prim: Primitive::Binary(BinaryOp::Add), args: vec![FusedArg::Step(0), FusedArg::Input(1)], dtype: Dtype::F32 },
/// ];
/// let p = Arc::new(FusedProgram::new(vec![Dtype::F32, Dtype::F32], steps).unwrap());
/// let x = Array::from_slice(&[0.0f32, 0.0], &[2]).unwrap();
/// let y = ops::fused(&p, &[x, Array::scalar(1.0f32)], &[2]).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
/// ```
pub fn fused(program: &Arc<FusedProgram>, inputs: &[Array], shape: &[usize]) -> Result<Array> {
    program.check_inputs(inputs, shape)?;
    Array::from_op(Primitive::Fused(program.clone()), inputs.to_vec(), shape.to_vec(), program.dtype())
}
