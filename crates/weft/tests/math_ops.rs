//! The NumPy-style math and predicate ops (rounding, inverse trig, log1p,
//! logical ops, all/any, isclose, var/std, clip, sign, logaddexp, tri/tril/
//! triu, linspace, split, flip, swapaxes/moveaxis) against f64 references on
//! seeded random inputs, in every float dtype and on strided views.

mod common;

use common::*;
use weft::ops;
use weft::{Array, Axes, Dtype, Error};

const FLOATS: [Dtype; 4] = [Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64];

/// Random values of `dtype` in `[lo, hi)`, as an array of `shape` and its reference.
fn rand(rng: &mut Rng, shape: &[usize], dtype: Dtype, lo: f64, hi: f64) -> (Array, Ref) {
    let n = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| round_to(rng.uniform(lo, hi), dtype)).collect();
    (array(&v, shape, dtype), Ref::new(shape, v))
}

/// Every op of the unary table (`UnaryOp::ALL`) against its f64 reference,
/// in every dtype (integer inputs in the op's range; `Float` ops compute
/// them in float32), contiguous and transposed.
#[test]
fn every_unary_op_matches_reference() {
    use weft::primitive::unary::Domain;
    use weft::primitive::UnaryOp;
    let mut rng = Rng::new(7);
    for &op in UnaryOp::ALL {
        let (f, lo, hi) = unary_reference(op);
        let name = op.name();
        for dtype in Dtype::REAL {
            if op == UnaryOp::Neg && dtype == Dtype::Bool {
                let r = ops::unary(op, &array(&[1.0], &[1], dtype));
                assert!(matches!(r, Err(weft::Error::Dtype(_))), "negative of bool: {r:?}");
                continue;
            }
            let (a, r) = if dtype.is_float() {
                rand(&mut rng, &[3, 5], dtype, lo, hi)
            } else {
                // Whole numbers in the op's range (and the dtype's).
                let floor = if dtype == Dtype::Bool || dtype.is_unsigned() { lo.ceil().max(0.0) } else { lo.ceil() };
                let top = if dtype == Dtype::Bool { 1.0 } else { hi.floor() };
                if floor > top {
                    continue;
                }
                let v: Vec<f64> = (0..15).map(|_| rng.uniform(floor, top + 1.0).floor().min(top)).collect();
                (array(&v, &[3, 5], dtype), Ref::new(&[3, 5], v))
            };
            let want_dtype = match op.domain() {
                Domain::Float => dtype.at_least_float(),
                Domain::Numeric | Domain::Rounding => dtype,
            };
            for (view, a, r) in [("contiguous", a.clone(), r.clone()), ("transposed", ops::transpose(&a, &[]).unwrap(), r.transpose(&[1, 0]))] {
                let out = ops::unary(op, &a).unwrap();
                let ctx = format!("{name} {dtype} {view}");
                assert_eq!(out.dtype(), want_dtype, "{ctx}");
                let want = r.map(|x| round_to(f(x), want_dtype));
                check(&ctx, &read(&out), &want.data, tol(want_dtype), None);
            }
        }
    }
    // Rounding leaves integers alone; halves go to even.
    let i = array(&[-3.0, 0.0, 7.0], &[3], Dtype::I32);
    for op in [ops::floor, ops::ceil, ops::rint] {
        let out = op(&i).unwrap();
        assert_eq!((out.dtype(), read(&out)), (Dtype::I32, vec![-3.0, 0.0, 7.0]));
    }
    let halves = array(&[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], &[6], Dtype::F32);
    assert_eq!(read(&ops::round(&halves, 0).unwrap()), vec![-2.0, -2.0, -0.0, 0.0, 2.0, 2.0]);
}

#[test]
fn logical_ops_and_predicates() {
    let a = Array::from_slice(&[0.0f32, 1.5, f32::NAN, -2.0, f32::INFINITY, f32::NEG_INFINITY], &[6]).unwrap();
    let b = Array::from_slice(&[0.0f32, 0.0, 1.0, -2.0, 0.0, 3.0], &[6]).unwrap();
    let t = |x: &Array| read(x).into_iter().map(|v| v != 0.0).collect::<Vec<_>>();
    assert_eq!(t(&ops::logical_not(&a).unwrap()), [true, false, false, false, false, false]);
    assert_eq!(t(&ops::logical_and(&a, &b).unwrap()), [false, false, true, true, false, true]);
    assert_eq!(t(&ops::logical_or(&a, &b).unwrap()), [false, true, true, true, true, true]);
    assert_eq!(t(&ops::isnan(&a).unwrap()), [false, false, true, false, false, false]);
    assert_eq!(t(&ops::isinf(&a).unwrap()), [false, false, false, false, true, true]);
    assert_eq!(t(&ops::isfinite(&a).unwrap()), [true, true, false, true, false, false]);
    let ints = Array::from_slice(&[3i32, 0], &[2]).unwrap();
    assert_eq!(t(&ops::isnan(&ints).unwrap()), [false, false]);
    assert_eq!(t(&ops::isfinite(&ints).unwrap()), [true, true]);

    // all / any over axes, against a direct count; empty arrays.
    let mut rng = Rng::new(3);
    let v: Vec<f64> = (0..24).map(|_| rng.int(0, 3) as f64).collect();
    let m = array(&v, &[2, 3, 4], Dtype::I32);
    let r = Ref::new(&[2, 3, 4], v);
    let all1 = read(&ops::all(&m, &[1], false).unwrap());
    let any1 = read(&ops::any(&m, &[1], false).unwrap());
    for i in 0..2 {
        for k in 0..4 {
            let col: Vec<f64> = (0..3).map(|j| r.get(&[i, j, k])).collect();
            assert_eq!(all1[i * 4 + k] != 0.0, col.iter().all(|&x| x != 0.0));
            assert_eq!(any1[i * 4 + k] != 0.0, col.iter().any(|&x| x != 0.0));
        }
    }
    assert_eq!(ops::all(&m, &[0, 2], true).unwrap().shape(), &[1, 3, 1]);
    let empty = ops::zeros(&[0, 3], Dtype::F32).unwrap();
    assert_eq!(read(&ops::all(&empty, Axes::All, false).unwrap()), [1.0]);
    assert_eq!(read(&ops::any(&empty, Axes::All, false).unwrap()), [0.0]);

    // isclose / allclose / array_equal.
    let x = Array::from_slice(&[1.0f64, 1e10, f64::NAN, f64::INFINITY, 1.0], &[5]).unwrap();
    let y = Array::from_slice(&[1.0 + 1e-9, 1.00001e10, f64::NAN, f64::INFINITY, 1.1], &[5]).unwrap();
    assert_eq!(t(&ops::isclose(&x, &y, 1e-5, 1e-8, false).unwrap()), [true, true, false, true, false]);
    assert_eq!(t(&ops::isclose(&x, &y, 1e-5, 1e-8, true).unwrap()), [true, true, true, true, false]);
    assert_eq!(read(&ops::allclose(&x, &x, 1e-5, 1e-8, false).unwrap()), [0.0], "NaN is not close to NaN");
    assert_eq!(read(&ops::allclose(&x, &x, 1e-5, 1e-8, true).unwrap()), [1.0]);
    assert_eq!(read(&ops::array_equal(&x, &x, true).unwrap()), [1.0]);
    assert_eq!(read(&ops::array_equal(&x, &y, true).unwrap()), [0.0]);
    assert_eq!(read(&ops::array_equal(&ints, &ops::astype(&ints, Dtype::F32).unwrap(), false).unwrap()), [1.0]);
    assert_eq!(read(&ops::array_equal(&ints, &x, false).unwrap()), [0.0], "shapes differ");
}

#[test]
fn var_std_clip_sign_logaddexp() {
    let mut rng = Rng::new(11);
    for dtype in FLOATS {
        let (a, r) = rand(&mut rng, &[4, 6], dtype, -3.0, 3.0);
        for ddof in [0usize, 1] {
            let var = read(&ops::var(&a, &[1], false, ddof).unwrap());
            let std = read(&ops::std(&a, &[-1], true, ddof).unwrap());
            for i in 0..4 {
                let row: Vec<f64> = (0..6).map(|j| r.get(&[i, j])).collect();
                let m = row.iter().sum::<f64>() / 6.0;
                let want = row.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (6 - ddof) as f64;
                check(&format!("var {dtype} ddof {ddof}"), &var[i..i + 1], &[want], 4.0 * tol(dtype), Some(&[1.0]));
                check(&format!("std {dtype}"), &std[i..i + 1], &[want.sqrt()], 4.0 * tol(dtype), Some(&[1.0]));
            }
        }
        let (lo, hi) = (array(&[-1.0], &[1], dtype), array(&[0.5], &[1], dtype));
        let c = read(&ops::clip(&a, Some(&lo), Some(&hi)).unwrap());
        assert_eq!(c, r.map(|x| x.clamp(-1.0, 0.5)).data, "clip {dtype}");
        let s = read(&ops::sign(&a).unwrap());
        assert_eq!(s, r.map(|x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 }).data, "sign {dtype}");
        let (b, rb) = rand(&mut rng, &[4, 6], dtype, -30.0, 30.0);
        let l = read(&ops::logaddexp(&a, &b).unwrap());
        let want: Vec<f64> = r.data.iter().zip(&rb.data).map(|(&x, &y)| round_to((x.exp() + y.exp()).ln(), dtype)).collect();
        check(&format!("logaddexp {dtype}"), &l, &want, 2.0 * tol(dtype), None);
    }
    let res = ops::clip(&ops::zeros(&[2], Dtype::F32).unwrap(), None, None);
    assert!(matches!(res, Err(Error::InvalidArgument(_))), "{res:?}");
    let ints = Array::from_slice(&[-5i32, 0, 9], &[3]).unwrap();
    assert_eq!((ops::sign(&ints).unwrap().dtype(), read(&ops::sign(&ints).unwrap())), (Dtype::I32, vec![-1.0, 0.0, 1.0]));
    let inf = Array::from_slice(&[f32::NEG_INFINITY, f32::INFINITY, 1000.0], &[3]).unwrap();
    let l = read(&ops::logaddexp(&inf, &inf).unwrap());
    assert_eq!(l[..2], [f64::NEG_INFINITY, f64::INFINITY]);
    assert!((l[2] - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-3, "no overflow: {}", l[2]);
    assert!(ops::sign(&Array::from_slice(&[f32::NAN], &[1]).unwrap()).map(|s| read(&s)[0].is_nan()).unwrap());
}

#[test]
fn triangles_linspace_and_views() {
    let mut rng = Rng::new(5);
    let (a, r) = rand(&mut rng, &[2, 3, 4], Dtype::F32, -1.0, 1.0);
    for k in [-2isize, -1, 0, 1, 3] {
        let lo = read(&ops::tril(&a, k).unwrap());
        let up = read(&ops::triu(&a, k).unwrap());
        let tri = read(&ops::tri(3, 4, k, Dtype::F32).unwrap());
        for (n, idx) in indices(&[2, 3, 4]).into_iter().enumerate() {
            let (i, j) = (idx[1] as isize, idx[2] as isize);
            let v = r.get(&idx);
            assert_eq!(lo[n], if j <= i + k { v } else { 0.0 }, "tril k={k} {idx:?}");
            assert_eq!(up[n], if j >= i + k { v } else { 0.0 }, "triu k={k} {idx:?}");
            assert_eq!(tri[n % 12], (j <= i + k) as u8 as f64, "tri k={k}");
        }
    }
    let res = ops::tril(&ops::zeros(&[3], Dtype::F32).unwrap(), 0);
    assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");

    let l = read(&ops::linspace(-1.0, 2.0, 7, true, Dtype::F64).unwrap());
    check("linspace", &l, &(0..7).map(|i| -1.0 + 0.5 * i as f64).collect::<Vec<_>>(), 1e-15, Some(&[1.0; 7]));
    assert_eq!(read(&ops::linspace(3.0, 9.0, 1, true, Dtype::F32).unwrap()), [3.0]);
    assert_eq!(ops::linspace(0.0, 1.0, 0, true, Dtype::F32).unwrap().shape(), &[0]);

    // flip, swapaxes, moveaxis against the reference's index maps.
    let f = read(&ops::flip(&a, 1).unwrap());
    let s = read(&ops::swapaxes(&a, 0, -1).unwrap());
    let m = read(&ops::moveaxis(&a, 0, 2).unwrap());
    assert_eq!(s, r.transpose(&[2, 1, 0]).data);
    assert_eq!(m, r.transpose(&[1, 2, 0]).data);
    for (n, idx) in indices(&[2, 3, 4]).into_iter().enumerate() {
        assert_eq!(f[n], r.get(&[idx[0], 2 - idx[1], idx[2]]));
    }
    // split: pieces cover the axis in order; indices past the end give empty pieces.
    let parts = ops::split(&a, &[1, 3, 9], -1).unwrap();
    assert_eq!(parts.iter().map(|p| p.shape()[2]).collect::<Vec<_>>(), [1, 2, 1, 0]);
    let joined = ops::concatenate(&parts, -1).unwrap();
    assert_eq!(read(&joined), r.data);
}

/// Python's `//` and `%` on one pair (integers: 0 for a zero divisor).
fn py_floordiv_rem(x: f64, y: f64, int: bool) -> (f64, f64) {
    if int && y == 0.0 {
        return (0.0, 0.0);
    }
    let q = (x / y).floor();
    let r = x % y;
    let r = if r != 0.0 && ((r < 0.0) != (y < 0.0)) { r + y } else { r };
    (if int { ((x - r) / y).round() } else { q }, r)
}

#[test]
fn floor_divide_and_remainder_follow_python() {
    let mut rng = Rng::new(13);
    for dtype in [Dtype::I32, Dtype::I64, Dtype::U8, Dtype::U32, Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16] {
        let signed = dtype.is_float() || matches!(dtype, Dtype::I32 | Dtype::I64);
        let (lo, hi) = if signed { (-20, 21) } else { (0, 41) };
        let xs: Vec<f64> = (0..60).map(|_| round_to(rng.int(lo, hi) as f64 * if dtype.is_float() { 0.37 } else { 1.0 }, dtype)).collect();
        let ys: Vec<f64> = (0..60).map(|i| if i % 10 == 0 && !dtype.is_float() { 0.0 } else { round_to(rng.int(lo, hi) as f64 / 3.0, dtype) }).map(|y| if y == 0.0 && dtype.is_float() { 1.5 } else { y }).collect();
        let (x, y) = (array(&xs, &[6, 10], dtype), array(&ys, &[6, 10], dtype));
        let q = read(&ops::floor_divide(&x, &y).unwrap());
        let r = read(&ops::remainder(&x, &y).unwrap());
        assert_eq!(ops::floor_divide(&x, &y).unwrap().dtype(), dtype);
        for i in 0..60 {
            let (wq, wr) = py_floordiv_rem(xs[i], ys[i], !dtype.is_float());
            let ctx = format!("{dtype}: {} // {}", xs[i], ys[i]);
            assert_eq!(q[i], round_to(wq, dtype), "{ctx}");
            check(&ctx, &r[i..i + 1], &[round_to(wr, dtype)], tol(dtype), Some(&[ys[i].abs()]));
        }
    }
    // Wrapping at the edge, as the other integer ops: MIN // -1 == MIN, MIN % -1 == 0.
    let m = Array::from_slice(&[i32::MIN, 7, -7], &[3]).unwrap();
    let d = Array::from_slice(&[-1i32, -2, 2], &[3]).unwrap();
    assert_eq!(read(&ops::floor_divide(&m, &d).unwrap()), [i32::MIN as f64, -4.0, -4.0]);
    assert_eq!(read(&ops::remainder(&m, &d).unwrap()), [0.0, -1.0, 1.0]);
    // Floats: division by zero follows IEEE (inf, NaN).
    let z = read(&ops::floor_divide(&Array::from_slice(&[1.0f32, -1.0], &[2]).unwrap(), &Array::from_slice(&[0.0f32, 0.0], &[2]).unwrap()).unwrap());
    assert_eq!(z, [f64::INFINITY, f64::NEG_INFINITY]);
    assert!(read(&ops::remainder(&Array::from_slice(&[1.0f32], &[1]).unwrap(), &Array::from_slice(&[0.0f32], &[1]).unwrap()).unwrap())[0].is_nan());
}

#[test]
fn repeat_tile_pad_match_index_maps() {
    let mut rng = Rng::new(17);
    let (a, r) = rand(&mut rng, &[2, 3], Dtype::F32, -1.0, 1.0);
    // repeat along an axis, and flattened.
    let rep = read(&ops::repeat(&a, 3, Some(1)).unwrap());
    assert_eq!(ops::repeat(&a, 3, Some(1)).unwrap().shape(), &[2, 9]);
    for (n, idx) in indices(&[2, 9]).into_iter().enumerate() {
        assert_eq!(rep[n], r.get(&[idx[0], idx[1] / 3]));
    }
    let flat = read(&ops::repeat(&a, 2, None).unwrap());
    assert_eq!(flat, r.data.iter().flat_map(|&v| [v, v]).collect::<Vec<_>>());
    // tile with fewer, equal and more reps than dimensions.
    for (reps, shape) in [(vec![2], vec![2, 6]), (vec![2, 1], vec![4, 3]), (vec![2, 1, 2], vec![2, 2, 6])] {
        let t = ops::tile(&a, &reps).unwrap();
        assert_eq!(t.shape(), &shape[..], "tile {reps:?}");
        let got = read(&t);
        for (n, idx) in indices(&shape).into_iter().enumerate() {
            let k = idx.len();
            assert_eq!(got[n], r.get(&[idx[k - 2] % 2, idx[k - 1] % 3]), "tile {reps:?} {idx:?}");
        }
    }
    // pad: constant and edge, one side empty.
    let widths = [(1, 0), (2, 1)];
    let c = ops::pad(&a, &widths, ops::PadMode::Constant(7.0)).unwrap();
    let e = ops::pad(&a, &widths, ops::PadMode::Edge).unwrap();
    assert_eq!(c.shape(), &[3, 6]);
    let (cv, ev) = (read(&c), read(&e));
    for (n, idx) in indices(&[3, 6]).into_iter().enumerate() {
        let (i, j) = (idx[0] as isize - 1, idx[1] as isize - 2);
        let inside = (0..2).contains(&i) && (0..3).contains(&j);
        assert_eq!(cv[n], if inside { r.get(&[i as usize, j as usize]) } else { 7.0 }, "constant {idx:?}");
        assert_eq!(ev[n], r.get(&[i.clamp(0, 1) as usize, j.clamp(0, 2) as usize]), "edge {idx:?}");
    }
    let res = ops::pad(&a, &[(1, 1)], ops::PadMode::Edge);
    assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");
    let empty = ops::zeros(&[0, 2], Dtype::F32).unwrap();
    let res = ops::pad(&empty, &[(1, 0), (0, 0)], ops::PadMode::Edge);
    assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");
    assert_eq!(ops::pad(&empty, &[(1, 0), (0, 0)], ops::PadMode::Constant(1.0)).unwrap().shape(), &[1, 2]);
    // reflect and symmetric, against NumPy's documented examples, including
    // pads longer than the axis (the mirror repeats).
    let v = Array::from_slice(&[1i32, 2, 3, 4, 5], &[5]).unwrap();
    let refl = ops::pad(&v, &[(2, 3)], ops::PadMode::Reflect).unwrap();
    assert_eq!(refl.to_vec::<i32>().unwrap(), vec![3, 2, 1, 2, 3, 4, 5, 4, 3, 2]);
    let sym = ops::pad(&v, &[(2, 3)], ops::PadMode::Symmetric).unwrap();
    assert_eq!(sym.to_vec::<i32>().unwrap(), vec![2, 1, 1, 2, 3, 4, 5, 5, 4, 3]);
    let w = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let long = ops::pad(&w, &[(5, 4)], ops::PadMode::Reflect).unwrap().to_vec::<i32>().unwrap();
    assert_eq!(long, vec![2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3]);
    let long = ops::pad(&w, &[(4, 4)], ops::PadMode::Symmetric).unwrap().to_vec::<i32>().unwrap();
    assert_eq!(long, vec![3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1]);
    let one = Array::from_slice(&[7i32], &[1]).unwrap();
    assert_eq!(ops::pad(&one, &[(2, 1)], ops::PadMode::Reflect).unwrap().to_vec::<i32>().unwrap(), vec![7; 4]);
    let res = ops::pad(&empty, &[(1, 1), (0, 0)], ops::PadMode::Reflect);
    assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");
    assert_eq!(ops::pad(&empty, &[(0, 0), (2, 1)], ops::PadMode::Symmetric).unwrap().shape(), &[0, 5]);
}

/// cumprod / cummax / cummin (forward, reversed, exclusive) and prod,
/// against direct loops; cummax's derivative goes to where the running
/// maximum was set; the windows against their closed forms.
#[test]
fn scans_prod_and_windows_match_loops() {
    let v = [2.0, -1.0, 3.0, f64::NAN, 0.5, 4.0];
    let x = Array::from_slice(&v.map(|x| x as f32), &[6]).unwrap();
    let loop_scan = |f: fn(f64, f64) -> f64, init: f64, reverse: bool, inclusive: bool| -> Vec<f64> {
        let order: Vec<usize> = if reverse { (0..6).rev().collect() } else { (0..6).collect() };
        let mut out = vec![0.0; 6];
        let mut acc = init;
        for &i in &order {
            if inclusive {
                acc = f(acc, v[i]);
                out[i] = acc;
            } else {
                out[i] = acc;
                acc = f(acc, v[i]);
            }
        }
        out
    };
    let nan_max = |a: f64, b: f64| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) };
    let nan_min = |a: f64, b: f64| if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) };
    let same = |got: Vec<f64>, want: Vec<f64>, ctx: &str| {
        assert!(got.iter().zip(&want).all(|(g, w)| (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() < 1e-5), "{ctx}: {got:?} vs {want:?}");
    };
    for reverse in [false, true] {
        for inclusive in [true, false] {
            let ctx = format!("reverse {reverse} inclusive {inclusive}");
            same(read(&ops::cumprod(&x, Some(0), reverse, inclusive).unwrap()), loop_scan(|a, b| a * b, 1.0, reverse, inclusive), &ctx);
            same(read(&ops::cummax(&x, Some(0), reverse, inclusive).unwrap()), loop_scan(nan_max, f64::NEG_INFINITY, reverse, inclusive), &ctx);
            same(read(&ops::cummin(&x, Some(0), reverse, inclusive).unwrap()), loop_scan(nan_min, f64::INFINITY, reverse, inclusive), &ctx);
        }
    }
    // Integers wrap and keep their type; bool products count in int32.
    let i = Array::from_slice(&[3i32, -2, 5], &[3]).unwrap();
    assert_eq!(ops::cumprod(&i, None, false, true).unwrap().to_vec::<i32>().unwrap(), vec![3, -6, -30]);
    assert_eq!(ops::prod(&i, Axes::All, false).unwrap().to_vec::<i32>().unwrap(), vec![-30]);
    let m = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(read(&ops::prod(&m, &[1], false).unwrap()), vec![2.0, 12.0]);
    assert_eq!(read(&ops::prod(&ops::zeros(&[0], Dtype::F32).unwrap(), Axes::All, false).unwrap()), vec![1.0]);

    // d sum(cummax(y)) / dy: each output's 1 goes to where its maximum was set.
    let y = Array::from_slice(&[1.0f32, 3.0, 2.0, 5.0, 4.0], &[5]).unwrap();
    let (_, g) = weft::transforms::vjp(
        |a| Ok(vec![ops::sum(&ops::cummax(&a[0], Some(0), false, true)?, Axes::All, false)?]),
        &[y],
        &[Array::scalar(1.0f32)],
    )
    .unwrap();
    assert_eq!(read(&g[0]), vec![1.0, 2.0, 0.0, 2.0, 0.0]);

    let hann = read(&ops::hanning(5).unwrap());
    same(hann, vec![0.0, 0.5, 1.0, 0.5, 0.0], "hanning");
    same(read(&ops::bartlett(5).unwrap()), vec![0.0, 0.5, 1.0, 0.5, 0.0], "bartlett");
    same(read(&ops::linspace(0.0, 1.0, 4, false, Dtype::F32).unwrap()), vec![0.0, 0.25, 0.5, 0.75], "linspace endpoint=false");
}

/// Bitwise ops on every integer width and bool against Rust's operators;
/// floats are refused.
#[test]
fn bitwise_ops_match_rust() {
    let x: Vec<i64> = vec![-8, -3, 0, 1, 5, 127, 40, 77];
    let y: Vec<i64> = vec![1, 2, 3, 0, 7, 1, 3, 33];
    for dtype in [Dtype::I8, Dtype::I16, Dtype::I32, Dtype::I64, Dtype::U8, Dtype::U16, Dtype::U32, Dtype::U64] {
        let bits = dtype.size() as u32 * 8;
        // Values as the dtype holds them (two's complement wrap for unsigned).
        let wrap = |v: i64| -> i64 {
            let m = if bits == 64 { v } else { v.rem_euclid(1i64 << bits) };
            if dtype.is_unsigned() || bits == 64 || m < (1i64 << (bits - 1)) { m } else { m - (1i64 << bits) }
        };
        let xs: Vec<i64> = x.iter().map(|&v| wrap(v)).collect();
        let a = ops::astype(&Array::from_slice(&x, &[8]).unwrap(), dtype).unwrap();
        let b = ops::astype(&Array::from_slice(&y, &[8]).unwrap(), dtype).unwrap();
        let get = |r: weft::Result<Array>| -> Vec<i64> {
            let r = r.unwrap();
            assert_eq!(r.dtype(), dtype);
            ops::astype(&r, Dtype::I64).unwrap().to_vec::<i64>().unwrap()
        };
        let as_u = |v: i64| -> u64 { if bits == 64 { v as u64 } else { (v as u64) & ((1u64 << bits) - 1) } };
        let back = |u: u64| -> i64 { wrap(u as i64) };
        let and: Vec<i64> = xs.iter().zip(&y).map(|(&p, &q)| back(as_u(p) & as_u(q))).collect();
        let or: Vec<i64> = xs.iter().zip(&y).map(|(&p, &q)| back(as_u(p) | as_u(q))).collect();
        let xor: Vec<i64> = xs.iter().zip(&y).map(|(&p, &q)| back(as_u(p) ^ as_u(q))).collect();
        let shl: Vec<i64> = xs.iter().zip(&y).map(|(&p, &q)| back(as_u(p) << (q as u32 % bits))).collect();
        let shr: Vec<i64> = xs
            .iter()
            .zip(&y)
            .map(|(&p, &q)| if dtype.is_unsigned() { back(as_u(p) >> (q as u32 % bits)) } else { p >> (q as u32 % bits) })
            .collect();
        let inv: Vec<i64> = xs.iter().map(|&p| back(!as_u(p))).collect();
        assert_eq!(get(ops::bitwise_and(&a, &b)), and, "and {dtype}");
        assert_eq!(get(ops::bitwise_or(&a, &b)), or, "or {dtype}");
        assert_eq!(get(ops::bitwise_xor(&a, &b)), xor, "xor {dtype}");
        assert_eq!(get(ops::left_shift(&a, &b)), shl, "shl {dtype}");
        assert_eq!(get(ops::right_shift(&a, &b)), shr, "shr {dtype}");
        assert_eq!(get(ops::bitwise_invert(&a)), inv, "invert {dtype}");
    }
    let t = Array::from_slice(&[true, true, false, false], &[4]).unwrap();
    let f = Array::from_slice(&[true, false, true, false], &[4]).unwrap();
    assert_eq!(ops::bitwise_and(&t, &f).unwrap().to_vec::<bool>().unwrap(), vec![true, false, false, false]);
    assert_eq!(ops::bitwise_xor(&t, &f).unwrap().to_vec::<bool>().unwrap(), vec![false, true, true, false]);
    assert_eq!(ops::bitwise_invert(&t).unwrap().to_vec::<bool>().unwrap(), vec![false, false, true, true]);
    assert_eq!(ops::left_shift(&t, &f).unwrap().dtype(), Dtype::U8);
    let fl = Array::from_slice(&[1.0f32], &[1]).unwrap();
    assert!(matches!(ops::bitwise_and(&fl, &fl), Err(Error::Dtype(_))));
    assert!(matches!(ops::bitwise_invert(&fl), Err(Error::Dtype(_))));
}

/// partition, median, searchsorted, tensordot, vecdot and diff against
/// loops over the same values.
#[test]
fn order_statistics_and_contractions_match_loops() {
    let mut rng = Rng::new(23);
    // partition: the kth element is in place, smaller before, larger after.
    let v: Vec<f64> = (0..9).map(|_| rng.uniform(-5.0, 5.0)).collect();
    let a = array(&v, &[9], Dtype::F64);
    let p = read(&ops::partition(&a, 4, Some(0)).unwrap());
    let mut s = v.clone();
    s.sort_by(|x, y| x.partial_cmp(y).unwrap());
    assert_eq!(p[4], s[4]);
    assert!(p[..4].iter().all(|&x| x <= p[4]) && p[5..].iter().all(|&x| x >= p[4]));
    let ip = ops::argpartition(&a, -2, Some(0)).unwrap().to_vec::<u32>().unwrap();
    assert_eq!(v[ip[7] as usize], s[7]);
    assert!(ops::partition(&a, 9, Some(0)).is_err());

    // median over an axis, odd and even counts, and NaN.
    let m = Array::from_slice(&[3.0f32, 1.0, 2.0, 10.0, 4.0, 1.0, 2.0, 8.0], &[2, 4]).unwrap();
    assert_eq!(ops::median(&m, 1isize, false).unwrap().to_vec::<f32>().unwrap(), vec![2.5, 3.0]);
    assert_eq!(ops::median(&m, weft::Axes::All, false).unwrap().to_vec::<f32>().unwrap(), vec![2.5]);
    assert_eq!(ops::median(&m, 0isize, true).unwrap().shape(), &[1, 4]);
    let odd = Array::from_slice(&[5i32, 1, 3], &[3]).unwrap();
    let med = ops::median(&odd, weft::Axes::All, false).unwrap();
    assert_eq!((med.dtype(), med.to_vec::<f32>().unwrap()), (Dtype::F32, vec![3.0]));
    let nan = Array::from_slice(&[1.0f32, f32::NAN, 0.0], &[3]).unwrap();
    assert!(ops::median(&nan, weft::Axes::All, false).unwrap().to_vec::<f32>().unwrap()[0].is_nan());

    // searchsorted, both sides, against counting.
    let sorted = [1.0f64, 2.0, 2.0, 3.0, 7.0];
    let vals = [0.0f64, 2.0, 2.5, 7.0, 9.0, 3.0];
    let ss = Array::from_slice(&sorted, &[5]).unwrap();
    let vv = Array::from_slice(&vals, &[2, 3]).unwrap();
    for right in [false, true] {
        let got = ops::searchsorted(&ss, &vv, right).unwrap();
        assert_eq!(got.shape(), &[2, 3]);
        let want: Vec<u32> = vals.iter().map(|&x| sorted.iter().filter(|&&s| if right { s <= x } else { s < x }).count() as u32).collect();
        assert_eq!(got.to_vec::<u32>().unwrap(), want, "right = {right}");
    }

    // NaN sorts after every number: it is inserted at the end (left) or after other NaNs.
    let with_nan = Array::from_slice(&[1.0f32, 2.0, f32::NAN], &[3]).unwrap();
    let nan = Array::from_slice(&[f32::NAN, 5.0], &[2]).unwrap();
    assert_eq!(ops::searchsorted(&with_nan, &nan, false).unwrap().to_vec::<u32>().unwrap(), vec![2, 2]);
    assert_eq!(ops::searchsorted(&with_nan, &nan, true).unwrap().to_vec::<u32>().unwrap(), vec![3, 2]);
    // count_nonzero is int32; roll without axes rolls the flat array by the sum of the shifts.
    let c = ops::count_nonzero(&with_nan, weft::Axes::All, false).unwrap();
    assert_eq!((c.dtype(), c.to_vec::<i32>().unwrap()), (Dtype::I32, vec![3]));
    let r = ops::roll(&Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3]).unwrap(), &[1, 1], None).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![4, 5, 0, 1, 2, 3]);
    // Shifts and axes broadcast: two shifts of one axis add up, one shift serves two axes.
    let m = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3]).unwrap();
    let twice = ops::roll(&m, &[-1, 2], Some(&[1])).unwrap();
    assert_eq!(twice.to_vec::<i32>().unwrap(), ops::roll(&m, &[1], Some(&[1])).unwrap().to_vec::<i32>().unwrap());
    assert_eq!(twice.to_vec::<i32>().unwrap(), vec![2, 0, 1, 5, 3, 4]);
    assert_eq!(ops::roll(&m, &[1], Some(&[0, 1])).unwrap().to_vec::<i32>().unwrap(), vec![5, 3, 4, 2, 0, 1]);
    assert!(matches!(ops::roll(&m, &[1, 2, 3], Some(&[0, 1])), Err(weft::Error::InvalidArgument(_))));

    // tensordot over two axis pairs, against the explicit sum.
    let (a3, ra) = rand(&mut rng, &[2, 3, 4], Dtype::F64, -1.0, 1.0);
    let (b3, rb) = rand(&mut rng, &[4, 3, 5], Dtype::F64, -1.0, 1.0);
    let t = ops::tensordot(&a3, &b3, &[1, 2], &[1, 0]).unwrap();
    assert_eq!(t.shape(), &[2, 5]);
    let mut want = vec![0.0; 10];
    for i in 0..2 {
        for l in 0..5 {
            for j in 0..3 {
                for k in 0..4 {
                    want[i * 5 + l] += ra.data[(i * 3 + j) * 4 + k] * rb.data[(k * 3 + j) * 5 + l];
                }
            }
        }
    }
    check("tensordot", &read(&t), &want, 1e-12, None);
    assert!(ops::tensordot(&a3, &b3, &[1], &[2]).is_err());

    // vecdot and diff.
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!(ops::vecdot(&x, &x, -1).unwrap().to_vec::<f32>().unwrap(), vec![14.0, 77.0]);
    let sq = Array::from_slice(&[1i32, 4, 9, 16], &[4]).unwrap();
    assert_eq!(ops::diff(&sq, 2, -1).unwrap().to_vec::<i32>().unwrap(), vec![2, 2]);
    assert_eq!(ops::diff(&x, 1, 0).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 3.0, 3.0]);
}

/// Integer `arange` with a fractional step steps by `int(start + step) -
/// int(start)` and keeps the float length; more than `i32::MAX` elements is
/// an error, not an allocation.
#[test]
fn arange_integer_step_and_size_limit() {
    let a = ops::arange(0.0, 3.0, 0.2, Dtype::I32).unwrap();
    assert_eq!(a.to_vec::<i32>().unwrap(), vec![0; 15]);
    let a = ops::arange(-1.0, -20.0, -1.2, Dtype::I32).unwrap();
    assert_eq!(a.to_vec::<i32>().unwrap(), (1..=16).map(|i| -i).collect::<Vec<i32>>());
    let a = ops::arange(-1.0, -4.0, -0.9, Dtype::I32).unwrap();
    assert_eq!(a.to_vec::<i32>().unwrap(), vec![-1; 4]);
    let a = ops::arange(0.0, 1.0, 0.25, Dtype::F32).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0, 0.25, 0.5, 0.75]);
    let r = ops::arange(0.0, 2f64.powi(40), 1.0, Dtype::I64);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
}

/// Infinities are close only to an equal infinity.
#[test]
fn isclose_opposite_infinities() {
    let a = Array::from_vec(vec![f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, 1.0], &[4]).unwrap();
    let b = Array::from_vec(vec![f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 1.0], &[4]).unwrap();
    let c = ops::isclose(&a, &b, 1e-5, 1e-8, false).unwrap();
    assert_eq!(c.to_vec::<bool>().unwrap(), vec![true, false, true, true]);
}

/// A scalar's Hadamard transform is the scalar times `scale` (1 by default);
/// `kron` of an empty array is a shape error.
#[test]
fn hadamard_of_scalar_and_kron_of_empty() {
    let x = Array::scalar(5.0f32);
    assert_eq!(ops::hadamard_transform(&x, None).unwrap().item::<f32>().unwrap(), 5.0);
    assert_eq!(ops::hadamard_transform(&x, Some(0.2)).unwrap().item::<f32>().unwrap(), 1.0);
    let e = Array::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    let y = Array::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    assert!(matches!(ops::kron(&e, &y), Err(Error::Shape(_))));
}

/// `depends`: the outputs equal the inputs, and evaluating one evaluates
/// every dependency (including an empty one).
#[test]
fn depends_evaluates_the_dependencies_first() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let b = ops::exp(&a).unwrap();
    let c = ops::log(&a).unwrap();
    let e = ops::zeros(&[0], Dtype::I32).unwrap();
    let out = ops::depends(&[b.clone()], &[c.clone(), e.clone()]).unwrap();
    assert_eq!(out.len(), 1);
    assert!(!c.is_evaluated());
    assert_eq!(out[0].to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert!(c.is_evaluated() && e.is_evaluated());
    let none = ops::depends(&[a.clone()], &[]).unwrap();
    assert_eq!(none[0].to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
}

/// Integer powers with negative exponents are 0, whatever the base (MLX);
/// inner products of empty vectors are 0; complex vecdot conjugates `a`.
#[test]
fn integer_power_empty_inner_and_complex_vecdot() {
    for dtype in [Dtype::I8, Dtype::I16, Dtype::I32, Dtype::I64] {
        let x = ops::astype(&Array::from_slice(&[2i64, -2, 1, 3], &[4]).unwrap(), dtype).unwrap();
        let y = ops::astype(&Array::from_slice(&[-1i64, -3, -9, 2], &[4]).unwrap(), dtype).unwrap();
        let p = ops::astype(&ops::power(&x, &y).unwrap(), Dtype::I64).unwrap();
        assert_eq!(p.to_vec::<i64>().unwrap(), vec![0, 0, 0, 9], "{dtype}");
    }
    let empty = ops::zeros(&[0], Dtype::F32).unwrap();
    assert_eq!(ops::inner(&empty, &empty).unwrap().to_vec::<f32>().unwrap(), vec![0.0]);
    let m = ops::zeros(&[10, 0], Dtype::F32).unwrap();
    assert_eq!(ops::inner(&m, &m).unwrap().shape(), &[10, 10]);
    let a = Array::from_slice(&[weft::Complex64::new(1.0, 2.0), weft::Complex64::new(3.0, 4.0)], &[2]).unwrap();
    let b = Array::from_slice(&[weft::Complex64::new(5.0, 6.0), weft::Complex64::new(7.0, 8.0)], &[2]).unwrap();
    // conj(1+2i)(5+6i) + conj(3+4i)(7+8i) = (17-4i) + (53-4i)
    assert_eq!(ops::vecdot(&a, &b, -1).unwrap().to_vec::<weft::Complex64>().unwrap(), vec![weft::Complex64::new(70.0, -8.0)]);
}
