//! `compile` fuses elementwise chains (`transforms/fuse.rs`,
//! `Primitive::Fused`, `backend/cpu/fused.rs`): the replay holds fused nodes,
//! their results are bit-identical to the unfused graph's for every dtype,
//! shape and layout, transforms see through them, and many threads may
//! call one compiled function at once.

mod common;

use common::{array, read, Rng};
use std::sync::Arc;
use weft::ops::{self, SliceArg};
use weft::primitive::fused::{FusedArg, FusedProgram, FusedStep};
use weft::primitive::{BinaryOp, Primitive, UnaryOp};
use weft::transforms::{self, Compiled};
use weft::{Array, Dtype, Error, Result};

type F = fn(&[Array]) -> Result<Vec<Array>>;

/// Equal bit for bit (read through each dtype's own element type; NaN
/// equals NaN).
fn same(ctx: &str, got: &Array, want: &Array) {
    assert_eq!(got.shape(), want.shape(), "{ctx}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{ctx}: dtype");
    if got.dtype() == Dtype::C64 {
        let (g, w) = (got.to_vec::<weft::Complex64>().unwrap(), want.to_vec::<weft::Complex64>().unwrap());
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert!(a.0.re.to_bits() == b.0.re.to_bits() && a.0.im.to_bits() == b.0.im.to_bits(), "{ctx}: [{i}] {a:?} vs {b:?}");
        }
        return;
    }
    let (g, w) = (read(got), read(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{ctx}: [{i}] {a} vs {b}");
    }
}

/// Traces `f` on `inputs`, checks the replay fuses (`fused` nodes at
/// least) and that its results equal `f`'s, bit for bit.
fn check_fused(ctx: &str, f: F, inputs: &[Array], fused: usize) -> Compiled {
    let want = f(inputs).unwrap();
    let (c, first) = Compiled::trace(f, inputs).unwrap();
    let n = c.primitive_counts().get("Fused").copied().unwrap_or(0);
    assert!(n >= fused, "{ctx}: {n} fused nodes, expected at least {fused}: {:?}", c.primitive_counts());
    let got = c.call(inputs).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        same(&format!("{ctx} (output {i})"), g, w);
        same(&format!("{ctx} (traced output {i})"), &first[i], w);
    }
    c
}

fn float_chain(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b, c) = (&x[0], &x[1], &x[2]);
    let half = ops::astype(&Array::scalar(0.5f32), a.dtype())?;
    let t = ops::tanh(&ops::add(&ops::multiply(a, b)?, c)?)?;
    let u = ops::subtract(&ops::multiply(&t, &half)?, &ops::exp(&ops::negative(a)?)?)?;
    let w = ops::where_(&ops::greater(a, b)?, &u, &ops::sqrt(&ops::abs(b)?)?)?;
    Ok(vec![ops::maximum(&w, &ops::sigmoid(c)?)?])
}

fn int_chain(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b, c) = (&x[0], &x[1], &x[2]);
    let s = ops::add(&ops::multiply(a, b)?, c)?;
    let m = ops::minimum(&ops::maximum(&s, a)?, &ops::subtract(b, c)?)?;
    let q = ops::floor_divide(&m, &ops::add(&ops::abs(c)?, &ops::astype(&Array::scalar(1i32), c.dtype())?)?)?;
    Ok(vec![ops::where_(&ops::less(a, b)?, &q, &ops::remainder(&s, &ops::astype(&Array::scalar(3i32), c.dtype())?)?)?])
}

fn bool_chain(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b, c) = (&x[0], &x[1], &x[2]);
    let y = ops::bitwise_xor(&ops::bitwise_and(a, b)?, c)?;
    Ok(vec![ops::where_(&ops::bitwise_or(&y, a)?, &ops::equal(b, c)?, &y)?])
}

fn complex_chain(x: &[Array]) -> Result<Vec<Array>> {
    let z = ops::astype(&x[0], Dtype::C64)?;
    let w = ops::astype(&x[1], Dtype::C64)?;
    let i = Array::scalar(weft::Complex64::new(0.5, -1.0));
    Ok(vec![ops::add(&ops::multiply(&ops::exp(&ops::multiply(&z, &i)?)?, &w)?, &z)?])
}

/// Complex steps beside real ones (a float32 comparison and exp): only the
/// steps that touch complex64 need a complex meaning.
fn mixed_complex_chain(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b) = (&x[0], &x[1]);
    let z = ops::multiply(&ops::astype(a, Dtype::C64)?, &ops::astype(b, Dtype::C64)?)?;
    Ok(vec![ops::where_(&ops::greater(a, b)?, &z, &ops::astype(&ops::exp(a)?, Dtype::C64)?)?])
}

/// One Adam step: three outputs, `m` and `v` also read by `p`'s chain.
fn adam(x: &[Array]) -> Result<Vec<Array>> {
    let (p, g, m, v) = (&x[0], &x[1], &x[2], &x[3]);
    let c = |v: f32| Array::scalar(v);
    let m = ops::add(&ops::multiply(&c(0.9), m)?, &ops::multiply(&c(0.1), g)?)?;
    let v = ops::add(&ops::multiply(&c(0.999), v)?, &ops::multiply(&c(0.001), &ops::multiply(g, g)?)?)?;
    let p = ops::subtract(p, &ops::divide(&ops::multiply(&c(1e-3), &m)?, &ops::add(&ops::sqrt(&v)?, &c(1e-8))?)?)?;
    Ok(vec![p, m, v])
}

#[test]
fn multi_output_chains_keep_every_output() {
    let mut rng = Rng::new(11);
    for shape in [vec![0usize], vec![1], vec![1000], vec![70_000]] {
        let mut x: Vec<Array> = (0..4).map(|_| sample(&mut rng, &shape, Dtype::F32)).collect();
        x[3] = ops::abs(&x[3]).unwrap();
        let c = check_fused(&format!("adam {shape:?}"), adam, &x, 3);
        // p, m and v: one fused node each, nothing else.
        assert_eq!(c.primitive_counts().into_iter().collect::<Vec<_>>(), vec![("Fused".to_string(), 3)]);
    }
}

fn sample(rng: &mut Rng, shape: &[usize], dtype: Dtype) -> Array {
    let n = shape.iter().product();
    array(&common::values(rng, n, dtype, common::Kind::Any), shape, dtype)
}

/// Inputs in several layouts: plain, a row broadcast, a column broadcast,
/// a transposed and a strided (sliced) view, a scalar, empty.
fn layouts(rng: &mut Rng, dtype: Dtype) -> Vec<(&'static str, Vec<Array>)> {
    let m = |s: &[usize], r: &mut Rng| sample(r, s, dtype);
    let big = [300, 257]; // more than the kernel's parallel threshold, not whole chunks
    vec![
        ("contiguous", vec![m(&[5, 7], rng), m(&[5, 7], rng), m(&[5, 7], rng)]),
        ("broadcast", vec![m(&[5, 7], rng), m(&[7], rng), m(&[5, 1], rng)]),
        ("transposed", vec![ops::transpose(&m(&[7, 5], rng), &[1, 0]).unwrap(), m(&[5, 7], rng), m(&[1, 7], rng)]),
        (
            "strided",
            vec![
                ops::slice(&m(&[10, 14], rng), &[SliceArg::new(Some(0), None, 2), SliceArg::new(Some(13), None, -2)]).unwrap(),
                m(&[5, 7], rng),
                ops::broadcast_to(&m(&[], rng), &[5, 7]).unwrap(),
            ],
        ),
        ("scalars", vec![m(&[], rng), m(&[], rng), m(&[], rng)]),
        ("empty", vec![m(&[0, 3], rng), m(&[3], rng), m(&[0, 1], rng)]),
        ("large", vec![m(&big, rng), m(&[257], rng), ops::transpose(&m(&[257, 300], rng), &[1, 0]).unwrap()]),
    ]
}

#[test]
fn fused_chains_equal_the_unfused_graph_in_every_dtype_and_layout() {
    let mut rng = Rng::new(13);
    for dtype in [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16] {
        for (what, inputs) in layouts(&mut rng, dtype) {
            check_fused(&format!("float {dtype} {what}"), float_chain, &inputs, 1);
        }
    }
    for dtype in [Dtype::I8, Dtype::I16, Dtype::I32, Dtype::I64, Dtype::U8, Dtype::U16, Dtype::U32, Dtype::U64] {
        for (what, inputs) in layouts(&mut rng, dtype) {
            check_fused(&format!("int {dtype} {what}"), int_chain, &inputs, 1);
        }
    }
    for (what, inputs) in layouts(&mut rng, Dtype::Bool) {
        check_fused(&format!("bool {what}"), bool_chain, &inputs, 1);
    }
    for (what, inputs) in layouts(&mut rng, Dtype::F32) {
        check_fused(&format!("complex64 {what}"), complex_chain, &inputs[..2], 1);
    }
    for (what, inputs) in layouts(&mut rng, Dtype::F32) {
        check_fused(&format!("complex64 beside float32 {what}"), mixed_complex_chain, &inputs[..2], 1);
    }
}

/// GELU (tanh form) written out: one fused node, nothing else.
fn gelu(x: &[Array]) -> Result<Vec<Array>> {
    let x = &x[0];
    let c = |v: f32| Array::scalar(v);
    let inner = ops::multiply(&c(0.797_884_6), &ops::add(x, &ops::multiply(&c(0.044715), &ops::power(x, &c(3.0))?)?)?)?;
    Ok(vec![ops::multiply(&ops::multiply(&c(0.5), x)?, &ops::add(&c(1.0), &ops::tanh(&inner)?)?)?])
}

#[test]
fn the_replay_holds_fused_nodes() {
    let x = Array::from_vec((0..4096).map(|i| i as f32 / 1000.0 - 2.0).collect(), &[64, 64]).unwrap();
    let c = check_fused("gelu", gelu, std::slice::from_ref(&x), 1);
    let counts = c.primitive_counts();
    assert_eq!(counts.len(), 1, "only the fused node is left: {counts:?}");
    assert_eq!(counts["Fused"], 1);
    let p = &c.fused_programs()[0];
    assert_eq!(p.compute_steps(), 8, "{}", p.label());
    // The graph a call builds shows it (export_to_dot's labels).
    let y = c.call(&[x.clone()]).unwrap();
    let dot = weft::dot::to_dot(&[(Some("y".into()), y[0].clone())]);
    assert_eq!(dot.matches("Fused(").count(), 1, "{dot}");
    assert!(dot.contains("tanh") && !dot.contains("label=\"tanh\""), "{dot}");
    // No unfused node of the chain is left in that graph. (Not counted with
    // `kernels_run`: the counter is process-wide, and this file's tests run
    // at once.)
    for op in ["Mul", "Add", "Pow", "tanh"] {
        assert!(!dot.contains(&format!("label=\"{op}\"")), "{op} left unfused: {dot}");
    }
}

#[test]
fn intermediates_read_elsewhere_stay_arrays() {
    // `e` is an output and `d` is read by a reduction: neither may vanish
    // into a group, and each side of them still fuses.
    let f: F = |x| {
        let d = ops::multiply(&ops::add(&x[0], &x[1])?, &x[1])?;
        let e = ops::exp(&ops::negative(&d)?)?;
        let s = ops::sum(&d, weft::Axes::All, true)?;
        let y = ops::add(&ops::multiply(&e, &Array::scalar(2.0f32))?, &s)?;
        Ok(vec![e, ops::sqrt(&ops::abs(&y)?)?])
    };
    let mut rng = Rng::new(5);
    let inputs = [sample(&mut rng, &[8, 9], Dtype::F32), sample(&mut rng, &[9], Dtype::F32)];
    let c = check_fused("shared intermediates", f, &inputs, 3);
    let counts = c.primitive_counts();
    assert_eq!(counts.get("Fused"), Some(&3), "{counts:?}");
    assert_eq!(counts.get("Reduce"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("Unary"), None, "{counts:?}");
    assert_eq!(counts.get("Binary"), None, "{counts:?}");
}

fn f64s(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn close(ctx: &str, got: &Array, want: &Array, tol: f64) {
    let (g, w) = (read(got), read(want));
    assert_eq!(g.len(), w.len(), "{ctx}");
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{ctx}: [{i}] {a} vs {b}");
    }
}

fn loss(x: &[Array]) -> Result<Vec<Array>> {
    let (a, b) = (&x[0], &x[1]);
    let y = ops::multiply(&ops::tanh(&ops::add(&ops::multiply(a, b)?, &Array::scalar(0.25f64))?)?, &ops::exp(&ops::negative(b)?)?)?;
    let z = ops::where_(&ops::greater(a, &Array::scalar(0.0f64))?, &y, &ops::sin(&y)?)?;
    Ok(vec![ops::divide(&z, &ops::add(&ops::multiply(a, a)?, &Array::scalar(1.0f64))?)?])
}

#[test]
fn transforms_through_fused_nodes_equal_the_unfused_path() {
    let a = f64s(&[0.3, -1.2, 0.7, 2.0, -0.1, 0.9], &[2, 3]);
    let b = f64s(&[0.5, -0.4, 1.5], &[3]);
    let (c, _) = Compiled::trace(loss, &[a.clone(), b.clone()]).unwrap();
    assert!(c.primitive_counts().get("Fused").is_some(), "{:?}", c.primitive_counts());
    let c = Arc::new(c);
    let summed = |f: &dyn Fn(&[Array]) -> Result<Vec<Array>>, x: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![ops::sum(&f(x)?[0], weft::Axes::All, false)?])
    };
    let cc = c.clone();
    let compiled = move |x: &[Array]| cc.call(x);
    // grad of compile.
    let want = transforms::grad(|x| summed(&loss, x), &[a.clone(), b.clone()], &[0, 1]).unwrap();
    let got = transforms::grad(|x| summed(&compiled, x), &[a.clone(), b.clone()], &[0, 1]).unwrap();
    close("grad a", &got[0], &want[0], 1e-12);
    close("grad b", &got[1], &want[1], 1e-12);
    // ... and against central differences.
    let h = 1e-6;
    let av = read(&a);
    for i in 0..av.len() {
        let at = |d: f64| {
            let mut v = av.clone();
            v[i] += d;
            read(&summed(&compiled, &[f64s(&v, &[2, 3]), b.clone()]).unwrap()[0])[0]
        };
        let fd = (at(h) - at(-h)) / (2.0 * h);
        assert!((read(&got[0])[i] - fd).abs() < 1e-6, "grad a[{i}]: {} vs {fd}", read(&got[0])[i]);
    }
    // jvp of compile.
    let t = [f64s(&[1.0, 0.5, -1.0, 0.25, 2.0, -0.5], &[2, 3]), f64s(&[0.1, 0.2, -0.3], &[3])];
    let (_, jw) = transforms::jvp(loss, &[a.clone(), b.clone()], &t).unwrap();
    let (_, jg) = transforms::jvp(&compiled, &[a.clone(), b.clone()], &t).unwrap();
    close("jvp", &jg[0], &jw[0], 1e-12);
    // vmap of compile (over a's rows; the trace is of one row).
    let (row, _) = Compiled::trace(loss, &[f64s(&[0.3, -1.2, 0.7], &[3]), b.clone()]).unwrap();
    assert!(row.primitive_counts().get("Fused").is_some());
    let vw = transforms::vmap(loss, &[a.clone(), b.clone()], &[Some(0), None], &[0]).unwrap();
    let vg = transforms::vmap(|x| row.call(x), &[a.clone(), b.clone()], &[Some(0), None], &[0]).unwrap();
    close("vmap", &vg[0], &vw[0], 1e-12);
    // vmap over both inputs, batch on the last axis of a.
    let at = ops::transpose(&a, &[1, 0]).unwrap();
    let bb = f64s(&[0.5, -0.4, 1.5, 0.1, 0.2, 0.3], &[2, 3]);
    let vw = transforms::vmap(loss, &[at.clone(), bb.clone()], &[Some(1), Some(0)], &[0]).unwrap();
    let vg = transforms::vmap(|x| row.call(x), &[at, bb], &[Some(1), Some(0)], &[0]).unwrap();
    close("vmap both", &vg[0], &vw[0], 1e-12);
    // compile of grad: the backward graph fuses too, same values.
    let g = |x: &[Array]| transforms::grad(|x| summed(&loss, x), x, &[0, 1]);
    let (cg, _) = Compiled::trace(g, &[a.clone(), b.clone()]).unwrap();
    assert!(cg.primitive_counts().get("Fused").is_some(), "{:?}", cg.primitive_counts());
    let got = cg.call(&[a.clone(), b.clone()]).unwrap();
    close("compile of grad a", &got[0], &want[0], 1e-12);
    close("compile of grad b", &got[1], &want[1], 1e-12);
    // Second order through a fused node.
    let gg = |x: &[Array]| -> Result<Vec<Array>> {
        let g = transforms::grad(|y| summed(&compiled, y), x, &[0])?;
        Ok(vec![ops::sum(&g[0], weft::Axes::All, false)?])
    };
    let ggw = |x: &[Array]| -> Result<Vec<Array>> {
        let g = transforms::grad(|y| summed(&loss, y), x, &[0])?;
        Ok(vec![ops::sum(&g[0], weft::Axes::All, false)?])
    };
    let h2 = transforms::grad(gg, &[a.clone(), b.clone()], &[0]).unwrap();
    let h2w = transforms::grad(ggw, &[a.clone(), b.clone()], &[0]).unwrap();
    close("grad of grad", &h2[0], &h2w[0], 1e-10);
}

#[test]
fn complex_cotangents_pass_through_fused_nodes() {
    let f: F = |x| {
        let z = ops::astype(&x[0], Dtype::C64)?;
        let w = ops::add(&ops::multiply(&ops::exp(&z)?, &z)?, &Array::scalar(weft::Complex64::new(0.0, 1.0)))?;
        Ok(vec![ops::sum(&ops::real(&ops::multiply(&w, &ops::conjugate(&w)?)?)?, weft::Axes::All, false)?])
    };
    let x = Array::from_slice(&[0.3f32, -0.7, 1.1], &[3]).unwrap();
    let (c, _) = Compiled::trace(f, std::slice::from_ref(&x)).unwrap();
    assert!(c.primitive_counts().get("Fused").is_some(), "{:?}", c.primitive_counts());
    let want = transforms::grad(f, std::slice::from_ref(&x), &[0]).unwrap();
    let got = transforms::grad(|y| c.call(y), std::slice::from_ref(&x), &[0]).unwrap();
    close("complex grad", &got[0], &want[0], 1e-5);
}

#[test]
fn many_threads_call_one_fused_function() {
    let mut rng = Rng::new(7);
    let inputs: Vec<Vec<Array>> = (0..8)
        .map(|_| vec![sample(&mut rng, &[200, 300], Dtype::F32), sample(&mut rng, &[300], Dtype::F32), sample(&mut rng, &[200, 1], Dtype::F32)])
        .collect();
    let (c, _) = Compiled::trace(float_chain, &inputs[0]).unwrap();
    assert!(c.primitive_counts().get("Fused").is_some());
    let want: Vec<Array> = inputs.iter().map(|x| float_chain(x).unwrap().remove(0)).collect();
    weft::eval(&want).unwrap();
    let c = Arc::new(c);
    let inputs = Arc::new(inputs);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (c, inputs) = (c.clone(), inputs.clone());
            std::thread::spawn(move || {
                (0..12).map(|k| (t + k) % 8).map(|i| (i, c.call(&inputs[i]).unwrap().remove(0))).collect::<Vec<_>>()
            })
        })
        .collect();
    for th in threads {
        for (i, y) in th.join().unwrap() {
            same(&format!("thread result {i}"), &y, &want[i]);
        }
    }
}

fn step(prim: Primitive, args: Vec<FusedArg>, dtype: Dtype) -> FusedStep {
    FusedStep { prim, args, dtype }
}

#[test]
fn mismatches_are_errors() {
    use FusedArg::*;
    // Inside the chain: an f32 Add of an f16 operand, a comparison giving f32,
    // an operand that is no earlier step, a non-elementwise step.
    let exp = step(Primitive::Unary(UnaryOp::Exp), vec![Input(0)], Dtype::F32);
    let r = FusedProgram::new(vec![Dtype::F32, Dtype::F16], vec![exp.clone(), step(Primitive::Binary(BinaryOp::Add), vec![Step(0), Input(1)], Dtype::F32)]);
    assert!(matches!(r, Err(Error::Dtype(_))), "{r:?}");
    let r = FusedProgram::new(vec![Dtype::F32], vec![exp.clone(), step(Primitive::Binary(BinaryOp::Less), vec![Step(0), Input(0)], Dtype::F32)]);
    assert!(matches!(r, Err(Error::Dtype(_))), "{r:?}");
    let r = FusedProgram::new(vec![Dtype::F32], vec![step(Primitive::Unary(UnaryOp::Exp), vec![Step(0)], Dtype::F32)]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let r = FusedProgram::new(vec![Dtype::F32], vec![step(Primitive::Softmax, vec![Input(0)], Dtype::F32)]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    // Inputs that do not fit the program.
    let p = Arc::new(FusedProgram::new(vec![Dtype::F32, Dtype::F32], vec![exp, step(Primitive::Binary(BinaryOp::Mul), vec![Step(0), Input(1)], Dtype::F32)]).unwrap());
    let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let r = ops::fused(&p, &[x.clone(), Array::scalar(1.0f64)], &[2]);
    assert!(matches!(r, Err(Error::Dtype(_))), "{r:?}");
    let r = ops::fused(&p, &[x.clone(), Array::from_slice(&[1.0f32; 3], &[3]).unwrap()], &[2]);
    assert!(matches!(r, Err(Error::Shape(_))), "{r:?}");
    let r = ops::fused(&p, &[Array::scalar(1.0f32), x.clone()], &[2]);
    assert!(matches!(r, Err(Error::Shape(_))), "a unary step does not broadcast: {r:?}");
    let r = ops::fused(&p, &[x.clone()], &[2]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    // A step with no kernel for its dtype fails at evaluation, as the
    // unfused node does.
    let bad = Arc::new(
        FusedProgram::new(
            vec![Dtype::I32],
            vec![step(Primitive::Unary(UnaryOp::Exp), vec![Input(0)], Dtype::I32), step(Primitive::Unary(UnaryOp::Neg), vec![Step(0)], Dtype::I32)],
        )
        .unwrap(),
    );
    let y = ops::fused(&bad, &[Array::from_slice(&[1i32, 2], &[2]).unwrap()], &[2]).unwrap();
    assert!(matches!(y.to_vec::<i32>(), Err(Error::Dtype(_))));
    // A compiled function called with another dtype.
    let (c, _) = Compiled::trace(gelu, &[x.clone()]).unwrap();
    let r = c.call(&[Array::from_slice(&[1.0f64, 2.0], &[2]).unwrap()]);
    assert!(matches!(r, Err(Error::Shape(_))), "{r:?}");
}

/// One step of a random elementwise graph (`RandomGraph`), on the values
/// made so far (the inputs first).
#[derive(Clone, Debug)]
enum RStep {
    Unary(UnaryOp, usize),
    Binary(BinaryOp, usize, usize),
    /// `where(a < b, x, y)`.
    Where(usize, usize, usize, usize),
    Cast(Dtype, usize),
    /// A constant of the value's dtype, added.
    AddConst(f64, usize),
    /// Summed over its last axis (keepdims): a non-fusible reader.
    Reduce(usize),
    /// Reversed along axis 0 (a strided view in the middle of the graph).
    Reverse(usize),
}

/// A random chain/DAG of elementwise ops over a few broadcast inputs, some
/// of whose intermediates are also outputs.
#[derive(Clone, Debug)]
struct RandomGraph {
    steps: Vec<RStep>,
    outputs: Vec<usize>,
}

/// `s` on the values `v`.
fn apply(s: &RStep, v: &[Array]) -> Result<Array> {
    Ok(match *s {
        RStep::Unary(op, a) => ops::unary(op, &v[a])?,
        RStep::Binary(BinaryOp::Add, a, b) => ops::add(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::Sub, a, b) => ops::subtract(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::Mul, a, b) => ops::multiply(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::Div, a, b) => ops::divide(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::FloorDiv, a, b) => ops::floor_divide(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::Rem, a, b) => ops::remainder(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::Maximum, a, b) => ops::maximum(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::Minimum, a, b) => ops::minimum(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::BitAnd, a, b) => ops::bitwise_and(&v[a], &v[b])?,
        RStep::Binary(BinaryOp::BitXor, a, b) => ops::bitwise_xor(&v[a], &v[b])?,
        RStep::Binary(op, ..) => panic!("{op:?} is not generated"),
        RStep::Where(a, b, x, y) => ops::where_(&ops::less(&v[a], &v[b])?, &v[x], &v[y])?,
        RStep::Cast(d, a) => ops::astype(&v[a], d)?,
        RStep::AddConst(c, a) => ops::add(&v[a], &ops::astype(&Array::scalar(c), v[a].dtype())?)?,
        RStep::Reduce(a) => ops::sum(&v[a], -1isize, true)?,
        RStep::Reverse(a) => ops::slice(&v[a], &[SliceArg::new(None, None, -1)])?,
    })
}

impl RandomGraph {
    fn run(&self, x: &[Array]) -> Result<Vec<Array>> {
        let mut v: Vec<Array> = x.to_vec();
        for s in &self.steps {
            let y = apply(s, &v)?;
            v.push(y);
        }
        Ok(self.outputs.iter().map(|&i| v[i].clone()).collect())
    }
}

/// A random graph of `n` steps on `inputs` (only built, never evaluated:
/// a step the ops refuse to build, a bitwise op on floats say, is drawn again).
fn random_graph(rng: &mut Rng, inputs: &[Array], n: usize) -> RandomGraph {
    let mut vals: Vec<Array> = inputs.to_vec();
    let mut steps = Vec::new();
    let pick = |rng: &mut Rng, k: usize| -> usize {
        // Favour recent values, so chains form.
        if rng.int(0, 2) > 0 && k > 2 {
            rng.int((k - 3) as i64, (k - 1) as i64) as usize
        } else {
            rng.int(0, (k - 1) as i64) as usize
        }
    };
    while steps.len() < n {
        let k = vals.len();
        let (a, b) = (pick(rng, k), pick(rng, k));
        let da = vals[a].dtype();
        let float = da.is_float();
        let step = match rng.int(0, 9) {
            0..=2 => {
                let ops_f = [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Sin, UnaryOp::Sigmoid, UnaryOp::Sqrt, UnaryOp::Log, UnaryOp::Floor, UnaryOp::Erf, UnaryOp::Silu];
                let ops_i = [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Exp, UnaryOp::Tanh];
                let table: &[UnaryOp] = if float { &ops_f } else { &ops_i };
                RStep::Unary(table[rng.int(0, table.len() as i64 - 1) as usize], a)
            }
            3..=5 => {
                let ops = [
                    BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Maximum, BinaryOp::Minimum,
                    BinaryOp::FloorDiv, BinaryOp::Rem, BinaryOp::BitAnd, BinaryOp::BitXor,
                ];
                RStep::Binary(ops[rng.int(0, ops.len() as i64 - 1) as usize], a, b)
            }
            6 => {
                let (x, y) = (pick(rng, k), pick(rng, k));
                RStep::Where(a, b, x, y)
            }
            7 => {
                let to = [Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F64, Dtype::I32, Dtype::U8, Dtype::I64, Dtype::Bool];
                RStep::Cast(to[rng.int(0, to.len() as i64 - 1) as usize], a)
            }
            8 if vals[a].ndim() > 0 && rng.int(0, 1) == 0 => RStep::Reduce(a),
            8 if vals[a].ndim() > 0 => RStep::Reverse(a),
            _ => RStep::AddConst(if float { rng.uniform(-2.0, 2.0) } else { rng.int(0, 5) as f64 }, a),
        };
        if let Ok(y) = apply(&step, &vals) {
            vals.push(y);
            steps.push(step);
        }
    }
    // The last value, and up to two earlier computed ones.
    let mut outputs = vec![vals.len() - 1];
    for _ in 0..rng.int(0, 2) {
        outputs.push(rng.int(inputs.len() as i64, vals.len() as i64 - 1) as usize);
    }
    RandomGraph { steps, outputs }
}

/// Inputs broadcasting to `out`: some of its shape, some with axes of 1 or
/// fewer axes, some as views (reversed, transposed, broadcast).
fn random_inputs(rng: &mut Rng, out: &[usize], dtype: Dtype, count: usize) -> Vec<Array> {
    (0..count)
        .map(|_| {
            let mut shape = out.to_vec();
            if rng.int(0, 2) == 0 && !shape.is_empty() {
                let drop = rng.int(0, shape.len() as i64) as usize;
                shape.drain(..drop);
            }
            for d in shape.iter_mut() {
                if rng.int(0, 3) == 0 {
                    *d = 1;
                }
            }
            match rng.int(0, 4) {
                0 if shape.len() >= 2 => {
                    // Stored transposed, read through a transpose view.
                    let mut t = shape.clone();
                    let r = t.len();
                    t.swap(r - 1, r - 2);
                    let perm: Vec<isize> = (0..r as isize).map(|i| if i == r as isize - 1 { i - 1 } else if i == r as isize - 2 { i + 1 } else { i }).collect();
                    ops::transpose(&sample(rng, &t, dtype), &perm).unwrap()
                }
                1 if !shape.is_empty() => {
                    // Every other row, reversed.
                    let mut s = shape.clone();
                    s[0] *= 2;
                    ops::slice(&sample(rng, &s, dtype), &[SliceArg::new(None, None, -2)]).unwrap()
                }
                2 => ops::broadcast_to(&sample(rng, &[], dtype), &shape).unwrap(),
                _ => sample(rng, &shape, dtype),
            }
        })
        .collect()
}

/// Fresh inputs of the same shapes, dtypes and kinds of layout as `xs`
/// (contiguous ones: the replay must not depend on the traced values).
fn fresh_like(rng: &mut Rng, xs: &[Array]) -> Vec<Array> {
    xs.iter().map(|x| sample(rng, x.shape(), x.dtype())).collect()
}

/// `same`, or both fail to evaluate.
fn agree(ctx: &str, got: &Array, want: &Array) {
    match (weft::eval(std::slice::from_ref(got)), weft::eval(std::slice::from_ref(want))) {
        (Ok(()), Ok(())) => same(ctx, got, want),
        (Err(_), Err(_)) => {}
        (g, w) => panic!("{ctx}: compiled {g:?}, uncompiled {w:?}"),
    }
}

#[test]
fn random_elementwise_graphs_equal_the_uncompiled_function() {
    random_graphs(400);
}

/// The same graphs on a CUDA stream: each fused chain is one generated
/// kernel (`backend/cuda/fused.rs`) whose results equal the unfused CUDA
/// kernels' bit for bit (complex64 aside, no step goes to the host).
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn random_elementwise_graphs_fuse_on_the_gpu() {
    let gpu = weft::Stream::new(weft::Device::gpu(0)).expect("a CUDA GPU (this test runs with --ignored on one)");
    weft::with_stream(gpu, || random_graphs(200));
}

/// `count` random graphs (seeded) traced, compiled and replayed on the
/// current stream, against the uncompiled function there.
fn random_graphs(count: usize) {
    let mut rng = Rng::new(2026_12_06);
    let dtypes = [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16, Dtype::I32, Dtype::I8, Dtype::U8, Dtype::U32, Dtype::I64, Dtype::Bool];
    let (mut fused_nodes, mut cases) = (0, 0);
    for case in 0..count {
        let dtype = dtypes[case % dtypes.len()];
        let rank = rng.int(0, 3) as usize;
        let mut out: Vec<usize> = (0..rank).map(|_| rng.int(1, 6) as usize).collect();
        if case % 25 == 0 && rank >= 1 {
            // Past the kernel's parallel threshold, not whole chunks.
            out[0] = 181;
            out.push(203);
        }
        if case % 37 == 0 && rank >= 1 {
            out[0] = 0;
        }
        let count = rng.int(1, 4) as usize;
        let inputs = random_inputs(&mut rng, &out, dtype, count);
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|x| x.shape().to_vec()).collect();
        let n = rng.int(2, 14) as usize;
        let g = random_graph(&mut rng, &inputs, n);
        let ctx = format!("case {case} ({dtype}, out {out:?}, inputs {shapes:?}): {g:?}");
        let want = g.run(&inputs).unwrap();
        let gg = g.clone();
        let (c, traced) = Compiled::trace(move |x| gg.run(x), &inputs).unwrap();
        fused_nodes += c.primitive_counts().get("Fused").copied().unwrap_or(0);
        cases += 1;
        let got = c.call(&inputs).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            agree(&format!("{ctx}: output {i}"), g, w);
            agree(&format!("{ctx}: traced output {i}"), &traced[i], w);
        }
        // Other values, same shapes: the replay against the function.
        let again = fresh_like(&mut rng, &inputs);
        let want = g.run(&again).unwrap();
        let got = c.call(&again).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            agree(&format!("{ctx}: fresh output {i}"), g, w);
        }
    }
    // The test means something only if most graphs fused something.
    assert_eq!(cases, count);
    assert!(fused_nodes >= cases / 2, "{fused_nodes} fused nodes in {cases} graphs");
}

/// A CUDA graph needs a GPU stream: on the CPU, `capture` says so (the GPU
/// side is `captured_graph_matches_the_compiled_replay` in tests/gpu.rs).
#[test]
fn capture_on_a_cpu_stream_is_a_clear_error() {
    let x = array(&[1.0, 2.0], &[2], Dtype::F32);
    let xs = [x.clone(), x.clone(), x];
    let (c, _) = Compiled::trace(float_chain, &xs).unwrap();
    let s = weft::Stream::new(weft::Device::cpu()).unwrap();
    match weft::with_stream(s, || c.capture(&xs)) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("needs a GPU stream"), "{m}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("captured a CUDA graph on the CPU"),
    }
    // The compiled function still replays on the CPU.
    same("after a refused capture", &c.call(&xs).unwrap()[0], &float_chain(&xs).unwrap()[0]);
}
