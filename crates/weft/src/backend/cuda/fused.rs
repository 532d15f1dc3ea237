//! `Fused`: a chain of elementwise steps (`primitive/fused.rs`) as one
//! generated kernel. The chain becomes a device function of the inputs'
//! stored values; each step stores its value in its dtype, with the same
//! expression its own kernel uses (`unary.rs`, `binary.rs`, `select.rs`,
//! `astype.rs`), so a fused chain gives the bits the unfused nodes give.

use super::astype::astype_expr;
use super::binary::binary_expr;
use super::kernel::{ctype, elementwise_with, Launcher};
use super::memory::CudaBuffer;
use super::select::select_expr;
use super::unary::unary_expr;
use super::Operand;
use crate::primitive::fused::{FusedArg, FusedProgram};
use crate::primitive::{OutSpec, Primitive};
use crate::{Error, Result};
use std::fmt::Write;

pub(crate) fn fused(k: &mut Launcher<'_>, program: &FusedProgram, o: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
    let function = device_function(program)?;
    let call = format!("fused({})", (0..o.len()).map(|i| format!("x{i}")).collect::<Vec<_>>().join(", "));
    let inputs: Vec<&Operand> = o.iter().collect();
    // The function's text names the chain in the kernel cache.
    elementwise_with(k, &function, &inputs, out.dtype, out.shape, &function, &call)
}

/// `__device__ T fused(x0, x1, ...)`: the chain on one element.
fn device_function(program: &FusedProgram) -> Result<String> {
    let ins = program.inputs();
    let steps = program.steps();
    let dtype = |a: &FusedArg| match *a {
        FusedArg::Input(i) => ins[i],
        FusedArg::Step(j) => steps[j].dtype,
    };
    let name = |a: &FusedArg| match *a {
        FusedArg::Input(i) => format!("x{i}"),
        FusedArg::Step(j) => format!("s{j}"),
    };
    let params: Vec<String> = ins.iter().enumerate().map(|(i, d)| format!("{} x{i}", ctype(*d))).collect();
    let mut s = format!("__device__ __forceinline__ {} fused({}) {{\n", ctype(program.dtype()), params.join(", "));
    for (j, step) in steps.iter().enumerate() {
        let a: Vec<String> = step.args.iter().map(name).collect();
        let expr = match &step.prim {
            Primitive::Unary(op) => unary_expr(*op, step.dtype, &a[0])?,
            Primitive::Binary(op) => binary_expr(*op, dtype(&step.args[0]), &a[0], &a[1]),
            Primitive::Select => select_expr(&a[0], &a[1], &a[2]),
            Primitive::AsType => astype_expr(dtype(&step.args[0]), step.dtype, &a[0]),
            Primitive::BroadcastTo => a[0].clone(),
            // `FusedProgram::new` admits no other primitive.
            p => return Err(Error::Kernel(format!("{} in a fused chain has no CUDA expression", p.name()))),
        };
        let _ = writeln!(s, "  {} s{j} = {expr};", ctype(step.dtype));
    }
    let _ = writeln!(s, "  return s{};\n}}", steps.len() - 1);
    Ok(s)
}
