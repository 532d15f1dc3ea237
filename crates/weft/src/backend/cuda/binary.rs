//! `Binary`: elementwise arithmetic and comparisons of two broadcast inputs,
//! with the CPU backend's semantics: wrapping integers (division by zero
//! gives 0), NaN-propagating max/min, `float16`/`bfloat16` in float.

use super::kernel::{compute_type, elementwise, load, store, Launcher};
use super::memory::CudaBuffer;
use super::Operand;
use crate::dtype::Dtype;
use crate::primitive::{BinaryOp, OutSpec};
use crate::Result;

pub(crate) fn binary(k: &mut Launcher<'_>, op: BinaryOp, a: &Operand, b: &Operand, out: OutSpec<'_>) -> Result<CudaBuffer> {
    let expr = binary_expr(op, a.dtype, "x0", "x1");
    elementwise(k, &format!("bin{op:?}"), &[a, b], out.dtype, out.shape, &expr)
}

/// `op` of `x` and `y`, stored values of `d`, as the stored value it gives
/// (of `d`, or `bool` for comparisons; also a step of a fused chain:
/// `fused.rs`).
pub(crate) fn binary_expr(op: BinaryOp, d: Dtype, x: &str, y: &str) -> String {
    let (x, y) = (load(d, x), load(d, y));
    if op.is_comparison() {
        let c = match op {
            BinaryOp::Equal => "==",
            BinaryOp::NotEqual => "!=",
            BinaryOp::Less => "<",
            BinaryOp::LessEqual => "<=",
            BinaryOp::Greater => ">",
            _ => ">=",
        };
        format!("(({x}) {c} ({y}))")
    } else {
        store(d, &arith(op, d, &x, &y))
    }
}

/// `op(x, y)` in `d`'s compute type.
fn arith(op: BinaryOp, d: Dtype, x: &str, y: &str) -> String {
    let ct = compute_type(d);
    if d == Dtype::Bool {
        return match op {
            BinaryOp::Add | BinaryOp::Maximum => format!("({x} | {y})"),
            BinaryOp::Sub => format!("({x} ^ {y})"),
            BinaryOp::Mul | BinaryOp::Minimum => format!("({x} & {y})"),
            BinaryOp::Div | BinaryOp::FloorDiv => format!("({y} && {x})"),
            BinaryOp::Rem => "false".to_string(),
            BinaryOp::Pow => format!("({x} || !{y})"),
            BinaryOp::Atan2 => format!("(atan2((double){x}, (double){y}) != 0.0)"),
            BinaryOp::BitAnd => format!("({x} & {y})"),
            BinaryOp::BitOr => format!("({x} | {y})"),
            BinaryOp::BitXor => format!("({x} ^ {y})"),
            // Ops promote bool to uint8 for shifts.
            BinaryOp::LeftShift | BinaryOp::RightShift => "false".to_string(),
            _ => unreachable!("comparisons are handled by the caller"),
        };
    }
    if d.is_float() && op.is_bitwise() {
        // Ops never build these (binary.rs of the CPU refuses them too).
        return "0".to_string();
    }
    if d.is_float() {
        let pow = if d == Dtype::F64 { "pow" } else { "powf" };
        return match op {
            BinaryOp::Add => format!("({x} + {y})"),
            BinaryOp::Sub => format!("({x} - {y})"),
            BinaryOp::Mul => format!("({x} * {y})"),
            BinaryOp::Div => format!("({x} / {y})"),
            BinaryOp::FloorDiv if d == Dtype::F64 => format!("floor({x} / {y})"),
            BinaryOp::FloorDiv => format!("floorf({x} / {y})"),
            BinaryOp::Rem if d == Dtype::F64 => format!("rem_d({x}, {y})"),
            BinaryOp::Rem => format!("rem_f({x}, {y})"),
            BinaryOp::Pow => format!("{pow}({x}, {y})"),
            BinaryOp::Maximum => format!("max_nan<{ct}>({x}, {y})"),
            BinaryOp::Minimum => format!("min_nan<{ct}>({x}, {y})"),
            BinaryOp::Atan2 if d == Dtype::F64 => format!("atan2({x}, {y})"),
            BinaryOp::Atan2 => format!("atan2f({x}, {y})"),
            _ => unreachable!("comparisons are handled by the caller"),
        };
    }
    // Integers: wrap through the unsigned type of the same width.
    let u = match d {
        Dtype::I64 | Dtype::U64 => "unsigned long long",
        _ => "unsigned int",
    };
    let signed = d.is_signed();
    match op {
        BinaryOp::Add => format!("(({ct})(({u}){x} + ({u}){y}))"),
        BinaryOp::Sub => format!("(({ct})(({u}){x} - ({u}){y}))"),
        BinaryOp::Mul => format!("(({ct})(({u}){x} * ({u}){y}))"),
        BinaryOp::Div if signed => {
            format!("({y} == 0 ? ({ct})0 : {y} == -1 ? ({ct})(({u})0 - ({u}){x}) : ({ct})({x} / {y}))")
        }
        BinaryOp::Div => format!("({y} == 0 ? ({ct})0 : ({ct})({x} / {y}))"),
        // INT_MIN // -1 and INT_MIN % -1 overflow in C; they wrap (to INT_MIN and 0) as on the CPU.
        BinaryOp::FloorDiv if signed => format!("({y} == -1 ? ({ct})(({u})0 - ({u}){x}) : fdiv_int<{ct}>({x}, {y}))"),
        BinaryOp::FloorDiv => format!("({y} == 0 ? ({ct})0 : ({ct})({x} / {y}))"),
        BinaryOp::Rem if signed => format!("({y} == -1 ? ({ct})0 : rem_int<{ct}>({x}, {y}))"),
        BinaryOp::Rem => format!("({y} == 0 ? ({ct})0 : ({ct})({x} % {y}))"),
        BinaryOp::Pow => {
            // A negative exponent gives 0, whatever the base (MLX's rule, as the CPU kernel).
            let neg = if signed { format!("{y} < 0 ? ({ct})0 : ") } else { String::new() };
            format!(
                "({neg}({ct})ipow(({u}){x}, (unsigned int){y}))"
            )
        }
        BinaryOp::Maximum => format!("({y} > {x} ? {y} : {x})"),
        BinaryOp::Minimum => format!("({y} < {x} ? {y} : {x})"),
        BinaryOp::Atan2 => format!("(({ct})atan2((double){x}, (double){y}))"),
        BinaryOp::BitAnd => format!("(({ct})({x} & {y}))"),
        BinaryOp::BitOr => format!("(({ct})({x} | {y}))"),
        BinaryOp::BitXor => format!("(({ct})({x} ^ {y}))"),
        // The shift modulo the width, as the CPU's wrapping_shl/shr.
        BinaryOp::LeftShift => format!("(({ct})(({u}){x} << ((unsigned int){y} & {w})))", w = d.size() * 8 - 1),
        BinaryOp::RightShift => format!("(({ct})({x} >> ((unsigned int){y} & {w})))", w = d.size() * 8 - 1),
        _ => unreachable!("comparisons are handled by the caller"),
    }
}
