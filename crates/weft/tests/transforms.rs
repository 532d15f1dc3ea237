//! Function transforms: every primitive's vjp and jvp against central
//! finite differences in f64, vmap against a loop over examples, higher
//! order and composed transforms, custom derivatives, and transforms from
//! many threads at once giving the single-thread results.

mod common;

use common::Rng;
use std::sync::Arc;
use weft::fast::Mask;
use weft::ops::{self, SliceArg};
use weft::primitive::{BinaryOp, ReduceOp, UnaryOp};
use weft::transforms::{self, VjpRule};
use weft::{Array, Dtype, Error, Result};

type Fun = Arc<dyn Fn(&[Array]) -> Result<Array> + Send + Sync>;

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn rand(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Vec<f64> {
    (0..shape.iter().product::<usize>()).map(|_| rng.uniform(lo, hi)).collect()
}

fn read(a: &Array) -> Vec<f64> {
    a.to_f64_vec().unwrap()
}

fn close(ctx: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{ctx}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{ctx}: element {i}: got {g}, want {w}\n got {got:?}\nwant {want:?}");
    }
}

/// Checks `f`'s vjp and jvp at `xs` (values, shapes) against central
/// differences of `sum(f(x) * w)` and of `f` along a random direction.
fn check_derivatives(name: &str, f: &Fun, xs: &[(Vec<f64>, Vec<usize>)], rng: &mut Rng) {
    let h = 1e-6;
    // A trip through float32 limits what finite differences can see.
    let tol = if name.starts_with("astype") { 2e-2 } else { 1e-5 };
    let inputs: Vec<Array> = xs.iter().map(|(v, s)| arr(v, s)).collect();
    let eval = |vals: &[Vec<f64>]| -> Vec<f64> {
        let a: Vec<Array> = vals.iter().zip(xs).map(|(v, (_, s))| arr(v, s)).collect();
        read(&f(&a).unwrap())
    };
    let y = f(&inputs).unwrap();
    let w = rand(rng, y.shape(), -1.0, 1.0);
    let g = Arc::clone(f);
    let (outs, grads) = transforms::vjp(move |x| Ok(vec![g(x)?]), &inputs, &[arr(&w, y.shape())]).unwrap();
    close(&format!("{name}: value"), &read(&outs[0]), &read(&y), 1e-12);
    let base: Vec<Vec<f64>> = xs.iter().map(|(v, _)| v.clone()).collect();
    for (i, grad) in grads.iter().enumerate() {
        assert_eq!(grad.shape(), inputs[i].shape(), "{name}: cotangent shape of input {i}");
        let fd: Vec<f64> = (0..base[i].len())
            .map(|j| {
                let (mut up, mut down) = (base.clone(), base.clone());
                up[i][j] += h;
                down[i][j] -= h;
                let dot = |v: Vec<f64>| v.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
                (dot(eval(&up)) - dot(eval(&down))) / (2.0 * h)
            })
            .collect();
        close(&format!("{name}: vjp of input {i}"), &read(grad), &fd, tol);
    }
    let dirs: Vec<Vec<f64>> = xs.iter().map(|(v, _)| rand(rng, &[v.len()], -1.0, 1.0)).collect();
    let tangents: Vec<Array> = dirs.iter().zip(xs).map(|(d, (_, s))| arr(d, s)).collect();
    let g = Arc::clone(f);
    let (_, jt) = transforms::jvp(move |x| Ok(vec![g(x)?]), &inputs, &tangents).unwrap();
    let step = |sign: f64| -> Vec<Vec<f64>> {
        base.iter().zip(&dirs).map(|(b, d)| b.iter().zip(d).map(|(x, t)| x + sign * h * t).collect()).collect()
    };
    let fd: Vec<f64> = eval(&step(1.0)).iter().zip(eval(&step(-1.0))).map(|(a, b)| (a - b) / (2.0 * h)).collect();
    close(&format!("{name}: jvp"), &read(&jt[0]), &fd, tol);
}

/// Checks `vmap(f)` over 3 examples against `f` on each example, stacked:
/// every input batched (on axis 0, then on its last axis), and only the first.
fn check_vmap(name: &str, f: &Fun, xs: &[(Vec<f64>, Vec<usize>)], rng: &mut Rng) {
    let n = 3;
    let examples: Vec<Vec<Array>> = (0..n)
        .map(|_| xs.iter().map(|(v, s)| arr(&v.iter().map(|x| x + rng.uniform(-0.05, 0.05)).collect::<Vec<_>>(), s)).collect())
        .collect();
    for only_first in [false, true] {
        let mut batched = Vec::new();
        let mut axes = Vec::new();
        for i in 0..xs.len() {
            if only_first && i > 0 {
                batched.push(examples[0][i].clone());
                axes.push(None);
            } else {
                let rows: Vec<Array> = examples.iter().map(|e| ops::expand_dims(&e[i], 0).unwrap()).collect();
                batched.push(ops::concatenate(&rows, 0isize).unwrap());
                axes.push(Some(0));
            }
        }
        let g = Arc::clone(f);
        let got = transforms::vmap(move |x| Ok(vec![g(x)?]), &batched, &axes, &[0]).unwrap();
        let want: Vec<f64> = (0..n)
            .flat_map(|b| {
                let ins: Vec<Array> = (0..xs.len()).map(|i| if only_first && i > 0 { examples[0][i].clone() } else { examples[b][i].clone() }).collect();
                read(&f(&ins).unwrap())
            })
            .collect();
        close(&format!("{name}: vmap (only first batched: {only_first})"), &read(&got[0]), &want, 1e-12);
        // The batch on the last axis of every batched input, out on axis 0.
        if !only_first {
            let moved: Vec<Array> = batched.iter().map(|b| ops::moveaxis(b, 0, -1).unwrap()).collect();
            let axes: Vec<Option<isize>> = moved.iter().map(|_| Some(-1)).collect();
            let g = Arc::clone(f);
            let got = transforms::vmap(move |x| Ok(vec![g(x)?]), &moved, &axes, &[0]).unwrap();
            close(&format!("{name}: vmap over the last axis"), &read(&got[0]), &want, 1e-12);
        }
    }
}

fn unary_domain(op: UnaryOp) -> (f64, f64) {
    match op {
        UnaryOp::Arccosh => (1.2, 3.0),
        // Away from the integers and halves where rounding jumps.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => (0.05, 0.45),
        _ => (0.1, 0.9),
    }
}

#[test]
fn every_unary_op_has_a_derivative_and_a_batching_rule() {
    let mut rng = Rng::new(1);
    for &op in UnaryOp::ALL {
        let (lo, hi) = unary_domain(op);
        let x = (rand(&mut rng, &[2, 3], lo, hi), vec![2, 3]);
        let f: Fun = Arc::new(move |x| ops::unary(op, &x[0]));
        check_derivatives(op.name(), &f, std::slice::from_ref(&x), &mut rng);
        check_vmap(op.name(), &f, &[x], &mut rng);
    }
}

fn binary(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    use BinaryOp::*;
    let f = match op {
        Add => ops::add,
        Sub => ops::subtract,
        Mul => ops::multiply,
        Div => ops::divide,
        FloorDiv => ops::floor_divide,
        Rem => ops::remainder,
        Pow => ops::power,
        Maximum => ops::maximum,
        Minimum => ops::minimum,
        Atan2 => ops::arctan2,
        BitAnd => ops::bitwise_and,
        BitOr => ops::bitwise_or,
        BitXor => ops::bitwise_xor,
        LeftShift => ops::left_shift,
        RightShift => ops::right_shift,
        Equal => ops::equal,
        NotEqual => ops::not_equal,
        Less => ops::less,
        LessEqual => ops::less_equal,
        Greater => ops::greater,
        GreaterEqual => ops::greater_equal,
    };
    let y = f(a, b)?;
    // Comparisons give bools: feed them through a float op so there is
    // something to differentiate (their derivative is zero).
    if y.dtype() == Dtype::Bool {
        ops::multiply(&ops::astype(&y, Dtype::F64)?, a)
    } else {
        Ok(y)
    }
}

#[test]
fn every_binary_op_has_a_derivative_and_a_batching_rule_with_broadcasting() {
    let mut rng = Rng::new(2);
    for &op in BinaryOp::ALL {
        // Bitwise ops take no floats and have no derivative (math_ops tests them).
        if op.is_bitwise() {
            continue;
        }
        // `b` broadcasts against `a` (shape [3] against [2, 3]); values in
        // [0.6, 2.4) and [0.2, 0.5) keep a > b, a // b away from its jumps
        // and a^b defined.
        let a = (rand(&mut rng, &[2, 3], 1.05, 1.35), vec![2, 3]);
        let b = (rand(&mut rng, &[3], 0.25, 0.3), vec![3]);
        let f: Fun = Arc::new(move |x| binary(op, &x[0], &x[1]));
        let name = format!("{op:?}");
        check_derivatives(&name, &f, &[a.clone(), b.clone()], &mut rng);
        check_vmap(&name, &f, &[a, b], &mut rng);
    }
}

/// Every other primitive, through the ops that build it.
fn cases() -> Vec<(&'static str, Fun, Vec<Vec<usize>>)> {
    let idx = Array::from_slice(&[2i32, 0, 2, -1], &[4]).unwrap();
    let idx2 = Array::from_slice(&[1u32, 0, 0, 2, 2, 1], &[2, 3]).unwrap();
    let pos = Array::from_slice(&[4i32, 0, 4, -1], &[4]).unwrap();
    let keep = Array::from_slice(&[true, false, true, true, false, false], &[2, 3]).unwrap();
    let amask = Array::from_slice(&[0.0f64, -1.0, 0.5, 0.0, 0.25, -0.5], &[1, 1, 2, 3]).unwrap();
    let bmask = Array::from_slice(&[true, false, true, true, true, false], &[1, 1, 2, 3]).unwrap();
    let c = |f: Fun, name: &'static str, shapes: &[&[usize]]| (name, f, shapes.iter().map(|s| s.to_vec()).collect());
    vec![
        c(Arc::new(move |x| ops::where_(&keep, &x[0], &x[1])), "where", &[&[2, 3], &[3]]),
        c(Arc::new(|x| ops::astype(&ops::multiply(&ops::astype(&x[0], Dtype::F32)?, &x[0])?, Dtype::F64)), "astype", &[&[2, 3]]),
        c(Arc::new(|x| ops::sum(&x[0], &[1], false)), "sum", &[&[2, 3]]),
        c(Arc::new(|x| ops::mean(&x[0], weft::Axes::All, true)), "mean", &[&[2, 3]]),
        c(Arc::new(|x| ops::max(&x[0], &[0], false)), "max", &[&[2, 3]]),
        c(Arc::new(|x| ops::min(&x[0], &[1], true)), "min", &[&[2, 3]]),
        c(Arc::new(|x| ops::multiply(&x[0], &ops::astype(&ops::argmax(&x[0], Some(1), true)?, Dtype::F64)?)), "argmax", &[&[2, 3]]),
        c(Arc::new(|x| ops::matmul(&x[0], &x[1])), "matmul", &[&[2, 3], &[3, 4]]),
        c(Arc::new(|x| ops::matmul(&x[0], &x[1])), "matmul (batch broadcast, vector)", &[&[2, 2, 3], &[3]]),
        c(Arc::new(|x| ops::reshape(&x[0], &[3, 2])), "reshape", &[&[2, 3]]),
        c(Arc::new(|x| ops::transpose(&x[0], &[1, 2, 0])), "transpose", &[&[2, 3, 2]]),
        c(Arc::new(|x| ops::broadcast_to(&x[0], &[2, 2, 3])), "broadcast_to", &[&[1, 3]]),
        c(Arc::new(|x| ops::slice(&x[0], &[SliceArg::new(None, None, -1), SliceArg::new(Some(0), None, 2)])), "slice", &[&[2, 5]]),
        c(Arc::new(|x| ops::concatenate(&[x[0].clone(), x[1].clone()], 1isize)), "concatenate", &[&[2, 3], &[2, 1]]),
        c(Arc::new(move |x| ops::take(&x[0], &idx, Some(0))), "take", &[&[3, 2]]),
        c(Arc::new(move |x| ops::take_along_axis(&x[0], &idx2, Some(0))), "take_along_axis", &[&[3, 3]]),
        c(Arc::new(|x| ops::slice_update(&x[0], &x[1], &[SliceArg::ALL, SliceArg::range(1, 3)])), "slice_update", &[&[2, 4], &[2, 1]]),
        c(Arc::new(|x| ops::softmax(&x[0], 0)), "softmax", &[&[3, 2]]),
        c(Arc::new(|x| ops::logsumexp(&x[0], &[-1], false)), "logsumexp", &[&[2, 3]]),
        c(Arc::new(|x| ops::cumsum(&x[0], Some(1), false, true)), "cumsum", &[&[2, 3]]),
        c(Arc::new(|x| ops::cumsum(&x[0], Some(0), true, false)), "cumsum (reverse, exclusive)", &[&[3, 2]]),
        c(Arc::new(|x| ops::sort(&x[0], Some(0))), "sort", &[&[3, 2]]),
        // Exclusive running extremes start at -inf / +inf: clipped, so finite differences see finite values.
        c(Arc::new(|x| ops::maximum(&ops::cummax(&x[0], Some(1), false, false)?, &Array::scalar(-10.0f64))), "cummax (exclusive)", &[&[2, 4]]),
        c(Arc::new(|x| ops::minimum(&ops::cummin(&x[0], Some(0), true, false)?, &Array::scalar(10.0f64))), "cummin (reverse, exclusive)", &[&[4, 2]]),
        c(Arc::new(|x| ops::cummax(&x[0], Some(0), true, true)), "cummax (reverse)", &[&[4, 2]]),
        c(Arc::new({ let pos = pos.clone(); move |x| ops::scatter(&x[0], &pos, &x[1], Some(ReduceOp::Max)) }), "scatter max (repeated position)", &[&[2, 3], &[4]]),
        c(Arc::new({ let pos = pos.clone(); move |x| ops::scatter(&x[0], &pos, &x[1], Some(ReduceOp::Min)) }), "scatter min (repeated position)", &[&[2, 3], &[4]]),
        c(Arc::new({ let pos = pos.clone(); move |x| ops::scatter(&x[0], &pos, &x[1], Some(ReduceOp::Prod)) }), "scatter prod (repeated position)", &[&[2, 3], &[4]]),
        c(Arc::new({ let pos = pos.clone(); move |x| ops::scatter(&x[0], &pos, &x[1], Some(ReduceOp::Sum)) }), "scatter add", &[&[2, 3], &[4]]),
        c(Arc::new(|x| ops::multiply(&x[0], &ops::astype(&ops::argsort(&x[0], Some(1))?, Dtype::F64)?)), "argsort", &[&[2, 3]]),
        c(Arc::new(|x| ops::conv1d(&x[0], &x[1], 2, 1, 1, 2)), "conv1d (stride, padding, groups)", &[&[2, 5, 4], &[4, 3, 2]]),
        c(
            Arc::new(|x| ops::conv_general(&x[0], &x[1], &[1, 2], &ops::ConvPadding::LoHi(vec![1, 0], vec![0, 2]), &[2, 1], &[1, 2], 1, true)),
            "conv_general (dilations, flip, asymmetric padding)",
            &[&[1, 4, 3, 2], &[2, 2, 2, 2]],
        ),
        // The weight first: batching only the first input batches the weight.
        c(Arc::new(|x| ops::conv_general(&x[1], &x[0], &[1], &ops::ConvPadding::LoHi(vec![2], vec![-1]), &[1], &[1], 2, false)), "conv (weight first, groups)", &[&[4, 2, 1], &[1, 5, 2]]),
        c(Arc::new(|x| ops::conv_transpose1d(&x[0], &x[1], 2, 1, 1, 1, 1)), "conv_transpose1d", &[&[1, 3, 2], &[2, 3, 2]]),
        c(Arc::new(|x| ops::as_strided(&x[0], &[2, 3], &[1, 2], 1)), "as_strided", &[&[2, 4]]),
        c(Arc::new(|x| weft::fast::rms_norm(&x[0], Some(&x[1]), 1e-5)), "rms_norm", &[&[2, 4], &[4]]),
        c(Arc::new(|x| weft::fast::layer_norm(&x[0], Some(&x[1]), Some(&x[2]), 1e-5)), "layer_norm", &[&[2, 4], &[4], &[4]]),
        c(Arc::new(|x| weft::fast::layer_norm(&x[0], None, None, 1e-5)), "layer_norm (no affine)", &[&[2, 4]]),
        c(Arc::new(|x| weft::fast::rope(&x[0], 4, false, 10000.0, 1.0, 3)), "rope", &[&[2, 3, 6]]),
        c(Arc::new(|x| weft::fast::rope(&x[0], 4, true, 100.0, 0.5, 0)), "rope (traditional)", &[&[3, 4]]),
        c(Arc::new(|x| weft::fast::scaled_dot_product_attention(&x[0], &x[1], &x[2], 0.7, None)), "sdpa", &[&[1, 2, 2, 3], &[1, 1, 3, 3], &[1, 1, 3, 2]]),
        c(Arc::new(|x| weft::fast::scaled_dot_product_attention(&x[0], &x[1], &x[2], 0.5, Some(&Mask::Causal))), "sdpa (causal)", &[&[1, 1, 3, 2], &[1, 1, 3, 2], &[1, 1, 3, 2]]),
        c(Arc::new(move |x| weft::fast::scaled_dot_product_attention(&x[0], &x[1], &x[2], 0.5, Some(&Mask::Array(amask.clone())))), "sdpa (additive mask)", &[&[1, 1, 2, 2], &[1, 1, 3, 2], &[1, 1, 3, 2]]),
        c(Arc::new(move |x| weft::fast::scaled_dot_product_attention(&x[0], &x[1], &x[2], 0.5, Some(&Mask::Array(bmask.clone())))), "sdpa (bool mask)", &[&[1, 1, 2, 2], &[1, 1, 3, 2], &[1, 1, 3, 2]]),
    ]
}

#[test]
fn every_other_primitive_has_a_derivative_and_a_batching_rule() {
    let mut rng = Rng::new(3);
    for (name, f, shapes) in cases() {
        let xs: Vec<(Vec<f64>, Vec<usize>)> = shapes.iter().map(|s| (rand(&mut rng, s, -1.0, 1.0), s.clone())).collect();
        check_derivatives(name, &f, &xs, &mut rng);
        check_vmap(name, &f, &xs, &mut rng);
    }
}

fn sin_x_times_x(x: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![ops::sum(&ops::multiply(&ops::sin(&x[0])?, &x[0])?, weft::Axes::All, false)?])
}

#[test]
fn second_derivatives_and_composed_transforms() {
    let xs = [0.3, -1.2, 2.0];
    let x = arr(&xs, &[3]);
    // d/dx (x sin x) = sin x + x cos x; d2 = 2 cos x - x sin x.
    let d2 = transforms::grad(
        |x| Ok(vec![ops::sum(&transforms::grad(sin_x_times_x, x, &[0])?[0], weft::Axes::All, false)?]),
        std::slice::from_ref(&x),
        &[0],
    )
    .unwrap();
    close("grad of grad", &read(&d2[0]), &xs.map(|v: f64| 2.0 * v.cos() - v * v.sin()), 1e-12);
    // vmap of grad: per-row gradients of a [3] -> scalar function.
    let rows = arr(&[0.3, -1.2, 2.0, 0.5, 0.1, -0.7], &[2, 3]);
    let per_row = transforms::vmap(|r| transforms::grad(sin_x_times_x, r, &[0]), std::slice::from_ref(&rows), &[Some(0)], &[0]).unwrap();
    let want: Vec<f64> = read(&rows).iter().map(|v| v.sin() + v * v.cos()).collect();
    close("vmap of grad", &read(&per_row[0]), &want, 1e-12);
    // grad of vmap: d/dx sum_rows sum(x sin x) is the same elementwise.
    let g = transforms::grad(
        |x| {
            let y = transforms::vmap(sin_x_times_x, x, &[Some(0)], &[0])?;
            Ok(vec![ops::sum(&y[0], weft::Axes::All, false)?])
        },
        std::slice::from_ref(&rows),
        &[0],
    )
    .unwrap();
    close("grad of vmap", &read(&g[0]), &want, 1e-12);
    // jvp of grad (a Hessian-vector product).
    let t = arr(&[1.0, 0.0, 2.0], &[3]);
    let (_, hv) = transforms::jvp(|x| transforms::grad(sin_x_times_x, x, &[0]), std::slice::from_ref(&x), &[t]).unwrap();
    close("jvp of grad", &read(&hv[0]), &[2.0 * 0.3f64.cos() - 0.3 * 0.3f64.sin(), 0.0, 2.0 * (2.0 * 2.0f64.cos() - 2.0 * 2.0f64.sin())], 1e-12);
}

#[test]
fn value_and_grad_argnums_and_auxiliary_outputs() {
    let (a, b) = (arr(&[1.0, 2.0], &[2]), arr(&[3.0, 4.0], &[2]));
    let (vals, grads) = transforms::value_and_grad(
        |x| Ok(vec![ops::sum(&ops::multiply(&x[0], &x[1])?, weft::Axes::All, false)?, ops::add(&x[0], &x[1])?]),
        &[a.clone(), b.clone()],
        &[1, 0],
    )
    .unwrap();
    assert_eq!(read(&vals[0]), vec![11.0]);
    assert_eq!(read(&vals[1]), vec![4.0, 6.0], "the auxiliary output is returned, not differentiated");
    assert_eq!(read(&grads[0]), vec![1.0, 2.0], "argnums order: d/db first");
    assert_eq!(read(&grads[1]), vec![3.0, 4.0]);
    // An input the output does not depend on gets zeros.
    let g = transforms::grad(|x| Ok(vec![ops::sum(&x[0], weft::Axes::All, false)?]), &[a.clone(), b], &[1]).unwrap();
    assert_eq!(read(&g[0]), vec![0.0, 0.0]);
}

#[test]
fn transforms_reject_bad_arguments_with_named_errors() {
    let x = arr(&[1.0, 2.0], &[2]);
    let r = transforms::grad(|x| Ok(vec![ops::exp(&x[0])?]), std::slice::from_ref(&x), &[0]);
    assert!(matches!(r, Err(Error::Shape(_))), "grad of a non-scalar: {r:?}");
    let r = transforms::grad(|x| Ok(vec![ops::sum(&x[0], weft::Axes::All, false)?]), std::slice::from_ref(&x), &[3]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "argnum out of range: {r:?}");
    let r = transforms::vjp(|x| Ok(vec![ops::exp(&x[0])?]), std::slice::from_ref(&x), &[arr(&[1.0], &[1])]);
    assert!(matches!(r, Err(Error::Shape(_))), "cotangent of the wrong shape: {r:?}");
    let r = transforms::vmap(|x| Ok(vec![ops::add(&x[0], &x[1])?]), &[x.clone(), arr(&[1.0; 3], &[3])], &[Some(0), Some(0)], &[0]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "mapped axes of different sizes: {r:?}");
    let r = transforms::vmap(|x| Ok(vec![x[0].clone()]), std::slice::from_ref(&x), &[Some(1)], &[0]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "in_axes out of range: {r:?}");
    let r = transforms::vmap(|x| Ok(vec![x[0].clone()]), std::slice::from_ref(&x), &[None], &[0]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "nothing mapped: {r:?}");
    // An error inside the function comes out as is.
    let r = transforms::grad(|x| Ok(vec![ops::reshape(&x[0], &[3])?]), std::slice::from_ref(&x), &[0]);
    assert!(matches!(r, Err(Error::Shape(_))), "the function's own error: {r:?}");
}

#[test]
fn stop_gradient_custom_vjp_and_checkpoint() {
    let x = arr(&[0.5, -1.0, 2.0], &[3]);
    // d/dx sum(x * stop_gradient(x)) = stop_gradient(x) = x (not 2x).
    let g = transforms::grad(
        |x| Ok(vec![ops::sum(&ops::multiply(&x[0], &transforms::stop_gradient(&x[0]))?, weft::Axes::All, false)?]),
        std::slice::from_ref(&x),
        &[0],
    )
    .unwrap();
    assert_eq!(read(&g[0]), read(&x));
    // A custom rule replaces the derivative of what the function did.
    let rule: Arc<VjpRule> = Arc::new(|p, cots, outs| {
        assert_eq!(read(&outs[0]), vec![0.25, 1.0, 4.0], "the rule sees the outputs");
        Ok(vec![ops::multiply(&cots[0], &ops::add(&p[0], &Array::scalar(100.0f64))?)?])
    });
    let g = transforms::grad(
        |x| {
            let y = transforms::custom_vjp(|x| Ok(vec![ops::multiply(&x[0], &x[0])?]), rule.clone(), x)?;
            Ok(vec![ops::sum(&y[0], weft::Axes::All, false)?])
        },
        std::slice::from_ref(&x),
        &[0],
    )
    .unwrap();
    assert_eq!(read(&g[0]), vec![100.5, 99.0, 102.0]);
    // Checkpointed: same values and gradients as the plain function.
    let f = |x: &[Array]| -> Result<Vec<Array>> { Ok(vec![ops::tanh(&ops::multiply(&ops::exp(&x[0])?, &x[0])?)?]) };
    let plain = transforms::vjp(f, std::slice::from_ref(&x), &[arr(&[1.0, 2.0, 3.0], &[3])]).unwrap();
    let ck = transforms::vjp(|x| transforms::checkpoint(Arc::new(f), x), std::slice::from_ref(&x), &[arr(&[1.0, 2.0, 3.0], &[3])]).unwrap();
    close("checkpoint value", &read(&ck.0[0]), &read(&plain.0[0]), 1e-15);
    close("checkpoint grad", &read(&ck.1[0]), &read(&plain.1[0]), 1e-15);
    // vmap through a custom function batches its forward computation.
    let rows = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = transforms::vmap(|x| transforms::custom_vjp(|x| Ok(vec![ops::sum(&x[0], weft::Axes::All, false)?]), rule.clone(), x), &[rows], &[Some(0)], &[0]).unwrap();
    assert_eq!(read(&y[0]), vec![3.0, 7.0]);
}

#[test]
fn evaluating_inside_a_traced_function_keeps_the_trace() {
    let x = arr(&[1.0, 2.0], &[2]);
    let g = transforms::grad(
        |x| {
            let y = ops::multiply(&x[0], &x[0])?;
            y.eval()?; // the scheduler detaches its graph; the tape stays
            let s = ops::sum(&ops::exp(&y)?, weft::Axes::All, false)?;
            assert!(s.item::<f64>()? > 0.0);
            Ok(vec![s])
        },
        std::slice::from_ref(&x),
        &[0],
    )
    .unwrap();
    close("grad after eval", &read(&g[0]), &[2.0 * 1f64.exp(), 4.0 * 4f64.exp()], 1e-12);
}

/// One step of a small model: value and gradients of a loss, and a vmapped
/// per-example prediction, on shared weights and data.
fn step(w: &Array, b: &Array, data: &Array) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let loss = |p: &[Array], d: &Array| -> Result<Vec<Array>> {
        let h = ops::tanh(&ops::add(&ops::matmul(d, &p[0])?, &p[1])?)?;
        Ok(vec![ops::mean(&ops::multiply(&h, &h)?, weft::Axes::All, false)?])
    };
    let d = data.clone();
    let (v, g) = transforms::value_and_grad(|p| loss(p, &d), &[w.clone(), b.clone()], &[0, 1]).unwrap();
    let w2 = w.clone();
    let per = transforms::vmap(move |x| Ok(vec![ops::sum(&ops::matmul(&x[0], &w2)?, weft::Axes::All, false)?]), &[data.clone()], &[Some(0)], &[0]).unwrap();
    (read(&v[0]), read(&g[0]), read(&g[1]), read(&per[0]))
}

#[test]
fn transforms_from_many_threads_match_one_thread() {
    let mut rng = Rng::new(9);
    let w = arr(&rand(&mut rng, &[4, 3], -1.0, 1.0), &[4, 3]);
    let b = arr(&rand(&mut rng, &[3], -1.0, 1.0), &[3]);
    let data = arr(&rand(&mut rng, &[5, 4], -1.0, 1.0), &[5, 4]);
    let want = step(&w, &b, &data);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (w, b, data) = (w.clone(), b.clone(), data.clone());
            std::thread::spawn(move || (0..10).map(|_| step(&w, &b, &data)).collect::<Vec<_>>())
        })
        .collect();
    for t in threads {
        for got in t.join().unwrap() {
            close("loss", &got.0, &want.0, 1e-12);
            close("dw", &got.1, &want.1, 1e-12);
            close("db", &got.2, &want.2, 1e-12);
            close("vmap", &got.3, &want.3, 1e-12);
        }
    }
}

#[test]
fn a_compiled_trace_replays_on_new_inputs_from_any_thread() {
    use weft::transforms::Compiled;
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let bias = arr(&[10.0, 20.0], &[2]); // captured: a constant of the trace
    let f = |x: &[Array]| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(vec![ops::add(&ops::multiply(&ops::exp(&x[0])?, &x[1])?, &bias)?])
    };
    let (c, first) = Compiled::trace(f, &[arr(&[0.0, 1.0], &[2]), arr(&[2.0, 3.0], &[2])]).unwrap();
    close("traced", &read(&first[0]), &[12.0, 3.0 * 1f64.exp() + 20.0], 1e-12);
    let c = Arc::new(c);
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || read(&c.call(&[arr(&[i as f64, 0.5], &[2]), arr(&[1.0, 2.0], &[2])]).unwrap()[0]))
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        close("replayed", &t.join().unwrap(), &[(i as f64).exp() + 10.0, 2.0 * 0.5f64.exp() + 20.0], 1e-12);
    }
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1, "replays do not call the function");
    // Gradients flow through a replay.
    let g = transforms::grad(
        |x| Ok(vec![ops::sum(&c.call(&[x[0].clone(), arr(&[1.0, 1.0], &[2])])?[0], weft::Axes::All, false)?]),
        &[arr(&[0.0, 1.0], &[2])],
        &[0],
    )
    .unwrap();
    close("grad of a replay", &read(&g[0]), &[1.0, 1f64.exp()], 1e-12);
    let r = c.call(&[arr(&[0.0; 3], &[3]), arr(&[0.0; 3], &[3])]);
    assert!(matches!(r, Err(Error::Shape(_))), "inputs of other shapes: {r:?}");
}

#[test]
fn jvp_of_a_comparison_is_zero_in_the_tangent_dtype() {
    let x = Array::from_slice(&[1.0f32, -2.0, 3.0], &[3]).unwrap();
    let t = ops::ones(&[3], Dtype::F32).unwrap();
    let (y, jt) = transforms::jvp(|x| Ok(vec![ops::greater(&x[0], &Array::scalar(0.0f32))?]), &[x], &[t]).unwrap();
    assert_eq!(y[0].dtype(), Dtype::Bool);
    assert_eq!(jt[0].dtype(), Dtype::F32);
    assert_eq!(jt[0].to_vec::<f32>().unwrap(), vec![0.0; 3]);
}

/// cumprod's vjp where the input holds zeros (one, several, none), in every
/// direction and with exclusive scans, against the derivative written out:
/// dL/dx_k = sum over the y_i covering x_k of g_i times the product of the
/// other covered x_j. No NaN or infinity from dividing by a zero.
#[test]
fn cumprod_vjp_with_zeros_matches_the_product_rule() {
    let xs: [&[f64]; 4] = [&[2.0, 0.0, 2.0, 2.0, 3.0], &[2.0, 0.0, 2.0, 0.0, 3.0], &[0.0, 1.5, -2.0, 0.5, 0.0], &[1.5, -2.0, 0.5, 3.0, 2.0]];
    let g = [0.5, -1.0, 2.0, 1.5, 0.25];
    for x in xs {
        for reverse in [false, true] {
            for inclusive in [true, false] {
                let n = x.len();
                let covers = |i: usize, j: usize| match (reverse, inclusive) {
                    (false, true) => j <= i,
                    (false, false) => j < i,
                    (true, true) => j >= i,
                    (true, false) => j > i,
                };
                let want: Vec<f64> = (0..n)
                    .map(|k| {
                        (0..n)
                            .filter(|&i| covers(i, k))
                            .map(|i| g[i] * (0..n).filter(|&j| j != k && covers(i, j)).map(|j| x[j]).product::<f64>())
                            .sum()
                    })
                    .collect();
                let (_, grads) = transforms::vjp(
                    |a| Ok(vec![ops::cumprod(&a[0], Some(0), reverse, inclusive)?]),
                    &[arr(x, &[n])],
                    &[arr(&g, &[n])],
                )
                .unwrap();
                close(&format!("cumprod {x:?} reverse={reverse} inclusive={inclusive}"), &read(&grads[0]), &want, 1e-12);
            }
        }
    }
}

/// prod's vjp is the product of the other elements (no division): exact
/// where inputs are zero (one zero, two zeros), over one axis and two.
#[test]
fn prod_vjp_with_zeros_is_the_product_of_the_others() {
    let x = [2.0, 0.0, 3.0, -1.5, 0.5, 4.0, 0.0, 0.0, 1.5, 2.0, -2.0, 0.25];
    let a = arr(&x, &[2, 3, 2]);
    for axes in [vec![1usize], vec![0, 2], vec![0, 1, 2]] {
        let ax: Vec<isize> = axes.iter().map(|&v| v as isize).collect();
        let out_shape: Vec<usize> = [2, 3, 2].iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
        let g: Vec<f64> = (0..out_shape.iter().product::<usize>()).map(|i| 0.5 + i as f64).collect();
        let (_, grads) = transforms::vjp(|v| Ok(vec![ops::prod(&v[0], ax.clone(), true)?]), &[a.clone()], &[arr(&g, &out_shape)]).unwrap();
        let idx = |i: usize| [i / 6, (i / 2) % 3, i % 2];
        let out_index = |c: [usize; 3]| {
            let c: Vec<usize> = (0..3).map(|d| if axes.contains(&d) { 0 } else { c[d] }).collect();
            (c[0] * out_shape[1] + c[1]) * out_shape[2] + c[2]
        };
        let want: Vec<f64> = (0..12)
            .map(|k| {
                let ck = idx(k);
                let others: f64 = (0..12).filter(|&j| j != k && out_index(idx(j)) == out_index(ck)).map(|j| x[j]).product();
                g[out_index(ck)] * others
            })
            .collect();
        close(&format!("prod over {axes:?}"), &read(&grads[0]), &want, 1e-12);
    }
}
