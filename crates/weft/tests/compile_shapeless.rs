//! `Compiled::trace_shapeless` (MLX's `compile(..., shapeless=True)`): the
//! function runs once and its trace replays on inputs of new shapes (same
//! numbers of dimensions and dtypes), each node's shape recomputed from its
//! inputs' (`primitive/shape.rs`, `transforms/compile.rs`). A node whose
//! shape was fixed at trace time (a reshape to a given shape, a slice) fails
//! such a call with a clear error rather than a wrong answer.

mod common;

use common::{array, check, read, Rng};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weft::ops::{self, SliceArg};
use weft::shape::Axes;
use weft::transforms::Compiled;
use weft::{Array, Dtype, Error, Result};

fn random(rng: &mut Rng, shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.uniform(-2.0, 2.0)).collect();
    array(&v, shape, Dtype::F32)
}

/// Close (float32 rounding; the replay runs the same kernels, fused or not).
fn close(ctx: &str, got: &[Array], want: &[Array]) {
    assert_eq!(got.len(), want.len(), "{ctx}: outputs");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{ctx}: output {i} shape");
        assert_eq!(g.dtype(), w.dtype(), "{ctx}: output {i} dtype");
        check(&format!("{ctx}: output {i}"), &read(g), &read(w), 1e-5, None);
    }
}

/// Inputs x `[a, b]`, y `[b]`, w `[b, c]`, z `[d, a, b]`: elementwise
/// chains with broadcasting, reductions, mean and var, softmax,
/// logsumexp, matmul (2-D and batched against a 2-D weight).
fn model(x: &[Array]) -> Result<Vec<Array>> {
    let (x, y, w, z) = (&x[0], &x[1], &x[2], &x[3]);
    let e = ops::tanh(&ops::add(&ops::multiply(&ops::exp(&ops::multiply(x, &Array::scalar(0.5f32))?)?, y)?, &Array::scalar(1.0f32))?)?;
    let s = ops::sum(&e, &[-1], false)?;
    let m = ops::mean(x, &[0], false)?;
    let mall = ops::mean(x, Axes::All, false)?;
    let v = ops::var(x, &[1], true, 1)?;
    let sd = ops::std(x, Axes::All, false, 0)?;
    let sm = ops::softmax(x, -1isize)?;
    let lse = ops::logsumexp(x, &[-1], false)?;
    let mx = ops::max(x, &[0], true)?;
    let mm = ops::matmul(x, w)?;
    let bm = ops::matmul(z, w)?;
    let centered = ops::subtract(x, &ops::mean(x, &[-1], true)?)?;
    Ok(vec![e, s, m, mall, v, sd, sm, lse, mx, mm, bm, centered])
}

fn inputs(rng: &mut Rng, a: usize, b: usize, c: usize, d: usize) -> Vec<Array> {
    vec![random(rng, &[a, b]), random(rng, &[b]), random(rng, &[b, c]), random(rng, &[d, a, b])]
}

const SHAPES: [(usize, usize, usize, usize); 7] = [(2, 3, 4, 2), (5, 7, 2, 1), (1, 4, 3, 3), (8, 1, 5, 2), (3, 16, 1, 4), (6, 9, 4, 1), (2, 3, 4, 2)];

#[test]
fn one_trace_serves_many_shapes() {
    let traces = Arc::new(AtomicUsize::new(0));
    let counted = {
        let traces = traces.clone();
        move |x: &[Array]| {
            traces.fetch_add(1, Ordering::SeqCst);
            model(x)
        }
    };
    let mut rng = Rng::new(13);
    let (a, b, c, d) = SHAPES[0];
    let first = inputs(&mut rng, a, b, c, d);
    let (compiled, outs) = Compiled::trace_shapeless(counted, &first).unwrap();
    assert!(compiled.is_shapeless());
    close("trace", &outs, &model(&first).unwrap());
    for &(a, b, c, d) in &SHAPES[1..] {
        let x = inputs(&mut rng, a, b, c, d);
        let got = compiled.call(&x).unwrap();
        close(&format!("shapes {:?}", (a, b, c, d)), &got, &model(&x).unwrap());
    }
    assert_eq!(traces.load(Ordering::SeqCst), 1, "a shapeless compile traces once");
}

#[test]
fn fusion_follows_new_shapes() {
    // exp(x) * y + 1: one fused chain, y broadcasting along the rows.
    let f = |x: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![ops::add(&ops::multiply(&ops::exp(&x[0])?, &x[1])?, &Array::scalar(1.0f32))?])
    };
    let mut rng = Rng::new(5);
    let (c, _) = Compiled::trace_shapeless(f, &[random(&mut rng, &[2, 3]), random(&mut rng, &[3])]).unwrap();
    assert_eq!(c.primitive_counts().get("Fused"), Some(&1));
    for shape in [[4usize, 5], [1, 1], [7, 2], [3, 33]] {
        let x = [random(&mut rng, &shape), random(&mut rng, &shape[1..])];
        close(&format!("{shape:?}"), &c.call(&x).unwrap(), &f(&x).unwrap());
    }
    // Members of one shape when traced that no longer share one: the
    // replay falls back to the unfused nodes.
    let (c, _) = Compiled::trace_shapeless(f, &[random(&mut rng, &[2, 3]), random(&mut rng, &[2, 3])]).unwrap();
    let x = [random(&mut rng, &[4, 1]), random(&mut rng, &[4, 6])];
    close("exp of [4, 1] times [4, 6]", &c.call(&x).unwrap(), &f(&x).unwrap());
    let x = [random(&mut rng, &[4, 6]), random(&mut rng, &[1, 6])];
    close("exp of [4, 6] times [1, 6]", &c.call(&x).unwrap(), &f(&x).unwrap());
}

#[test]
fn new_ndim_or_dtype_needs_a_new_trace() {
    let traces = AtomicUsize::new(0);
    let f = |x: &[Array]| -> Result<Vec<Array>> {
        traces.fetch_add(1, Ordering::SeqCst);
        Ok(vec![ops::sum(&ops::exp(&x[0])?, &[-1], false)?])
    };
    // A cache keyed by ndim and dtype, as `weft.core.compile` keys it.
    let mut cache: std::collections::HashMap<(usize, Dtype), Compiled> = Default::default();
    let mut run = |x: Array| -> Array {
        let key = (x.ndim(), x.dtype());
        if let Some(c) = cache.get(&key) {
            return c.call(&[x]).unwrap().remove(0);
        }
        let (c, mut out) = Compiled::trace_shapeless(&f, &[x]).unwrap();
        cache.insert(key, c);
        out.remove(0)
    };
    let mut rng = Rng::new(7);
    for shape in [vec![2usize, 3], vec![4, 5], vec![3, 4, 5], vec![1, 2, 2], vec![6], vec![9, 9]] {
        let x = random(&mut rng, &shape);
        let got = run(x.clone());
        close(&format!("{shape:?}"), &[got], &[ops::sum(&ops::exp(&x).unwrap(), &[-1], false).unwrap()]);
    }
    assert_eq!(traces.load(Ordering::SeqCst), 3, "one trace per number of dimensions");
    // The compiled function itself refuses another ndim or dtype.
    let (c, _) = Compiled::trace_shapeless(&f, &[random(&mut rng, &[2, 3])]).unwrap();
    assert!(matches!(c.call(&[random(&mut rng, &[2, 3, 4])]), Err(Error::Shape(_))));
    assert!(matches!(c.call(&[array(&[1.0; 6], &[2, 3], Dtype::F16)]), Err(Error::Shape(_))));
}

#[test]
fn fixed_shapes_fail_clearly_on_new_shapes() {
    let mut rng = Rng::new(3);
    // A reshape to a given shape.
    let reshape = |x: &[Array]| -> Result<Vec<Array>> { Ok(vec![ops::multiply(&ops::reshape(&x[0], &[6])?, &Array::scalar(2.0f32))?]) };
    let (c, _) = Compiled::trace_shapeless(reshape, &[random(&mut rng, &[2, 3])]).unwrap();
    // The traced shape (and a new array of it) still replays.
    let x = random(&mut rng, &[2, 3]);
    close("same shape", &c.call(&[x.clone()]).unwrap(), &reshape(&[x]).unwrap());
    // Same element count, other shape: still refused (no silent reuse).
    for shape in [[3usize, 2], [4, 5], [1, 1]] {
        match c.call(&[random(&mut rng, &shape)]) {
            Err(Error::Shape(m)) => assert!(m.contains("Reshape"), "{shape:?}: {m}"),
            other => panic!("{shape:?}: expected a shape error, got {:?}", other.map(|o| o[0].shape().to_vec())),
        }
    }
    // A slice with fixed bounds.
    let slice = |x: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![ops::exp(&ops::slice(&x[0], &[SliceArg::range(0, 2)])?)?])
    };
    let (c, _) = Compiled::trace_shapeless(slice, &[random(&mut rng, &[4])]).unwrap();
    match c.call(&[random(&mut rng, &[6])]) {
        Err(Error::Shape(m)) => assert!(m.contains("Slice"), "{m}"),
        other => panic!("expected a shape error, got {:?}", other.map(|o| o[0].shape().to_vec())),
    }
    // Inputs that no longer fit each other: an error from the rule.
    let mm = |x: &[Array]| -> Result<Vec<Array>> { Ok(vec![ops::matmul(&x[0], &x[1])?]) };
    let (c, _) = Compiled::trace_shapeless(mm, &[random(&mut rng, &[2, 3]), random(&mut rng, &[3, 4])]).unwrap();
    match c.call(&[random(&mut rng, &[2, 5]), random(&mut rng, &[3, 4])]) {
        Err(Error::Shape(m)) => assert!(m.contains("Matmul"), "{m}"),
        other => panic!("expected a shape error, got {:?}", other.map(|o| o[0].shape().to_vec())),
    }
}

#[test]
fn threads_share_one_shapeless_function() {
    let mut rng = Rng::new(21);
    let (a, b, c, d) = SHAPES[0];
    let (compiled, _) = Compiled::trace_shapeless(model, &inputs(&mut rng, a, b, c, d)).unwrap();
    let compiled = Arc::new(compiled);
    // Each thread its own shapes; serial results first.
    let work: Vec<Vec<Vec<Array>>> = (0..4)
        .map(|t| (0..4).map(|k| inputs(&mut rng, 1 + t + k, 2 + k, 1 + t, 1 + (t + k) % 3)).collect())
        .collect();
    let serial: Vec<Vec<Vec<Array>>> = work.iter().map(|w| w.iter().map(|x| compiled.call(x).unwrap()).collect()).collect();
    let handles: Vec<_> = work
        .into_iter()
        .map(|w| {
            let compiled = compiled.clone();
            std::thread::spawn(move || {
                let mut outs = Vec::new();
                for _ in 0..3 {
                    outs = w.iter().map(|x| compiled.call(x).unwrap()).collect::<Vec<_>>();
                    for o in &outs {
                        for a in o {
                            a.eval().unwrap();
                        }
                    }
                }
                (w, outs)
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let (w, outs) = h.join().unwrap();
        for (k, (x, got)) in w.iter().zip(&outs).enumerate() {
            close(&format!("thread {t}, call {k}"), got, &serial[t][k]);
            close(&format!("thread {t}, call {k} (uncompiled)"), got, &model(x).unwrap());
        }
    }
}
