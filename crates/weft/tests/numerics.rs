//! Every op in `weft::ops` against a naive `f64` reference (tests/common),
//! on seeded random inputs, every dtype it applies to, broadcast and strided
//! (transposed, reversed, stride-0) inputs; plus the errors bad input gives.

mod common;

use common::*;
use weft::ops::{self, SliceArg};
use weft::{Array, Axes, Dtype, Error};

const FLOATS: [Dtype; 4] = [Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64];

fn shape_of(a: &Array) -> Vec<usize> {
    a.shape().to_vec()
}

// ---------------------------------------------------------------- unary

#[test]
fn unary_special_values() {
    let a = Array::from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0], &[5]).unwrap();
    let e = read(&ops::exp(&a).unwrap());
    assert!(e[0].is_nan());
    assert_eq!(&e[1..], &[f64::INFINITY, 0.0, 1.0, 1.0]);
    let l = read(&ops::log(&a).unwrap());
    assert!(l[0].is_nan() && l[2].is_nan());
    assert_eq!((l[1], l[3], l[4]), (f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY));
    let s = read(&ops::sigmoid(&a).unwrap());
    assert_eq!(&s[1..], &[1.0, 0.0, 0.5, 0.5]);
}

// ---------------------------------------------------------------- binary

type BinF = fn(&Array, &Array) -> weft::Result<Array>;

/// (name, op, reference on exact inputs, kind of lhs, kind of rhs, applies to bool)
fn binary_table() -> Vec<(&'static str, BinF, fn(f64, f64) -> f64, Kind, Kind)> {
    vec![
        ("add", ops::add, |x, y| x + y, Kind::Any, Kind::Any),
        ("subtract", ops::subtract, |x, y| x - y, Kind::Any, Kind::Any),
        ("multiply", ops::multiply, |x, y| x * y, Kind::Any, Kind::Any),
        ("divide", ops::divide, |x, y| x / y, Kind::Any, Kind::Positive),
        ("power", ops::power, f64::powf, Kind::Positive, Kind::Small),
        ("maximum", ops::maximum, f64::max, Kind::Any, Kind::Any),
        ("minimum", ops::minimum, f64::min, Kind::Any, Kind::Any),
        ("equal", ops::equal, |x, y| (x == y) as u8 as f64, Kind::Small, Kind::Small),
        ("not_equal", ops::not_equal, |x, y| (x != y) as u8 as f64, Kind::Small, Kind::Small),
        ("less", ops::less, |x, y| (x < y) as u8 as f64, Kind::Small, Kind::Small),
        ("less_equal", ops::less_equal, |x, y| (x <= y) as u8 as f64, Kind::Small, Kind::Small),
        ("greater", ops::greater, |x, y| (x > y) as u8 as f64, Kind::Small, Kind::Small),
        ("greater_equal", ops::greater_equal, |x, y| (x >= y) as u8 as f64, Kind::Small, Kind::Small),
    ]
}

const BROADCAST_PAIRS: [(&[usize], &[usize]); 7] = [
    (&[3, 4], &[3, 4]),
    (&[3, 4], &[4]),
    (&[2, 1, 3], &[4, 1]),
    (&[], &[2, 3]),
    (&[5], &[1]),
    (&[1], &[3, 1]),
    (&[2, 0, 3], &[1, 3]),
];

/// The bool result of an integer-valued op cast back to bool, as weft's
/// bool arithmetic defines it (`+` or, `-` xor, `*` and).
fn bool_ref(name: &str, x: f64, y: f64) -> Option<f64> {
    let (p, q) = (x != 0.0, y != 0.0);
    Some(match name {
        "add" | "maximum" => (p || q) as u8 as f64,
        "subtract" => (p != q) as u8 as f64,
        "multiply" | "minimum" => (p && q) as u8 as f64,
        _ => return None,
    })
}

#[test]
fn binary_ops_match_reference() {
    let mut rng = Rng::new(2);
    for (name, op, f, ka, kb) in binary_table() {
        let cmp = name.contains("equal") || name.contains("less") || name.contains("greater");
        for dtype in Dtype::REAL {
            if dtype == Dtype::Bool && !cmp && bool_ref(name, 0.0, 0.0).is_none() && name != "divide" {
                continue;
            }
            for (pi, (sa, sb)) in BROADCAST_PAIRS.into_iter().enumerate() {
                let (va, vb) = (VIEWS[pi % 4], VIEWS[(pi + 1) % 4]);
                let (a, ra) = sample(&mut rng, sa, dtype, ka, va);
                let (b, rb) = sample(&mut rng, sb, dtype, kb, vb);
                let out = op(&a, &b).unwrap();
                let ctx = format!("{name} {dtype} {sa:?}({va:?}) {sb:?}({vb:?})");
                let compute = if name == "divide" { dtype.at_least_float() } else { dtype };
                let want_dtype = if cmp { Dtype::Bool } else { compute };
                assert_eq!(out.dtype(), want_dtype, "{ctx}");
                let shape = weft::shape::broadcast_shapes(sa, sb).unwrap();
                assert_eq!(shape_of(&out), shape, "{ctx}");
                let (ba, bb) = (ra.broadcast(&shape), rb.broadcast(&shape));
                let want: Vec<f64> = ba
                    .data
                    .iter()
                    .zip(&bb.data)
                    .map(|(&x, &y)| match bool_ref(name, x, y) {
                        Some(v) if dtype == Dtype::Bool => v,
                        _ => round_to(f(x, y), want_dtype),
                    })
                    .collect();
                check(&ctx, &read(&out), &want, tol(want_dtype), None);
            }
        }
    }
}

#[test]
fn integer_arithmetic_wraps_and_divides_truly() {
    let a = Array::from_slice(&[250u8, 3, 0], &[3]).unwrap();
    let b = Array::from_slice(&[10u8, 5, 1], &[3]).unwrap();
    assert_eq!(ops::add(&a, &b).unwrap().to_vec::<u8>().unwrap(), vec![4, 8, 1]);
    assert_eq!(ops::subtract(&a, &b).unwrap().to_vec::<u8>().unwrap(), vec![240, 254, 255]);
    let x = Array::from_slice(&[7i32, -7, 1, 0], &[4]).unwrap();
    let y = Array::from_slice(&[2i32, 2, 0, 0], &[4]).unwrap();
    let q = ops::divide(&x, &y).unwrap();
    assert_eq!(q.dtype(), Dtype::F32);
    let q = read(&q);
    assert_eq!(&q[..3], &[3.5, -3.5, f64::INFINITY]);
    assert!(q[3].is_nan());
    let m = Array::from_slice(&[i32::MAX], &[1]).unwrap();
    assert_eq!(ops::add(&m, &Array::scalar(1i32)).unwrap().to_vec::<i32>().unwrap(), vec![i32::MIN]);
}

#[test]
fn maximum_minimum_propagate_nan() {
    let a = Array::from_slice(&[f32::NAN, 1.0, 2.0], &[3]).unwrap();
    let b = Array::from_slice(&[0.0f32, f32::NAN, 1.0], &[3]).unwrap();
    for out in [ops::maximum(&a, &b).unwrap(), ops::minimum(&a, &b).unwrap()] {
        let v = read(&out);
        assert!(v[0].is_nan() && v[1].is_nan());
    }
    assert_eq!(read(&ops::maximum(&a, &b).unwrap())[2], 2.0);
    assert_eq!(read(&ops::minimum(&a, &b).unwrap())[2], 1.0);
}

#[test]
fn mixed_dtypes_promote_like_mlx() {
    use Dtype::*;
    let cases = [(I32, F16, F16), (U32, I32, I64), (Bool, U8, U8), (F16, BF16, F32), (U8, F32, F32), (I64, F64, F64)];
    let mut rng = Rng::new(3);
    for (da, db, want_dtype) in cases {
        let (a, ra) = sample(&mut rng, &[3, 4], da, Kind::Small, View::Transposed);
        let (b, rb) = sample(&mut rng, &[4], db, Kind::Small, View::Contiguous);
        for (name, op, f) in [
            ("add", ops::add as BinF, (|x, y| x + y) as fn(f64, f64) -> f64),
            ("multiply", ops::multiply, |x, y| x * y),
            ("maximum", ops::maximum, f64::max),
        ] {
            let out = op(&a, &b).unwrap();
            let ctx = format!("{name} {da} {db}");
            assert_eq!(out.dtype(), want_dtype, "{ctx}");
            let bb = rb.broadcast(&[3, 4]);
            let want: Vec<f64> = ra.data.iter().zip(&bb.data).map(|(&x, &y)| round_to(f(x, y), want_dtype)).collect();
            check(&ctx, &read(&out), &want, tol(want_dtype), None);
        }
    }
}

#[test]
fn operators_are_the_ops() {
    let mut rng = Rng::new(4);
    let (a, ra) = sample(&mut rng, &[2, 3], Dtype::F64, Kind::Positive, View::Strided);
    let (b, rb) = sample(&mut rng, &[3], Dtype::F64, Kind::Positive, View::Contiguous);
    let rb = rb.broadcast(&[2, 3]);
    let z = |f: fn(f64, f64) -> f64| ra.data.iter().zip(&rb.data).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
    check("+", &read(&(&a + &b).unwrap()), &z(|x, y| x + y), 1e-15, None);
    check("-", &read(&(&a - &b).unwrap()), &z(|x, y| x - y), 1e-15, None);
    check("*", &read(&(&a * &b).unwrap()), &z(|x, y| x * y), 1e-15, None);
    check("/", &read(&(&a / &b).unwrap()), &z(|x, y| x / y), 1e-15, None);
    check("neg", &read(&(-&a).unwrap()), &ra.data.iter().map(|x| -x).collect::<Vec<_>>(), 0.0, None);
}

// ---------------------------------------------------------------- where, astype

#[test]
fn where_matches_reference() {
    let mut rng = Rng::new(5);
    let shapes: [(&[usize], &[usize], &[usize]); 4] =
        [(&[3, 4], &[3, 4], &[3, 4]), (&[4], &[3, 1], &[]), (&[2, 1, 3], &[1, 5, 1], &[3]), (&[1], &[2, 2], &[2, 1])];
    for (i, (sc, sx, sy)) in shapes.into_iter().enumerate() {
        for (dx, dy) in [(Dtype::F32, Dtype::F32), (Dtype::I32, Dtype::F16), (Dtype::U8, Dtype::I64), (Dtype::Bool, Dtype::Bool)] {
            let (c, rc) = sample(&mut rng, sc, Dtype::Bool, Kind::Any, VIEWS[i % 4]);
            let (x, rx) = sample(&mut rng, sx, dx, Kind::Any, VIEWS[(i + 1) % 4]);
            let (y, ry) = sample(&mut rng, sy, dy, Kind::Any, VIEWS[(i + 2) % 4]);
            let out = ops::where_(&c, &x, &y).unwrap();
            let shape = weft::shape::broadcast_shapes(&weft::shape::broadcast_shapes(sc, sx).unwrap(), sy).unwrap();
            let dt = Dtype::promote(dx, dy);
            assert_eq!((shape_of(&out), out.dtype()), (shape.clone(), dt));
            let (bc, bx, by) = (rc.broadcast(&shape), rx.broadcast(&shape), ry.broadcast(&shape));
            let want: Vec<f64> = (0..bc.data.len())
                .map(|k| round_to(if bc.data[k] != 0.0 { bx.data[k] } else { by.data[k] }, dt))
                .collect();
            check(&format!("where {sc:?} {sx:?} {sy:?} {dx} {dy}"), &read(&out), &want, 0.0, None);
        }
    }
    // A non-bool condition means "nonzero".
    let c = Array::from_slice(&[0.0f32, 0.5, -2.0], &[3]).unwrap();
    let out = ops::where_(&c, &Array::scalar(1i32), &Array::scalar(0i32)).unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![0, 1, 1]);
}

#[test]
fn astype_between_all_dtypes() {
    let mut rng = Rng::new(6);
    for from in Dtype::REAL {
        for to in Dtype::REAL {
            // Float to unsigned is only defined for values in range.
            let kind = if from.is_float() && to.is_unsigned() { Kind::Positive } else { Kind::Any };
            for view in [View::Contiguous, View::Strided] {
                let (a, r) = sample(&mut rng, &[4, 5], from, kind, view);
                let out = ops::astype(&a, to).unwrap();
                let ctx = format!("astype {from} -> {to} {view:?}");
                assert_eq!((out.dtype(), shape_of(&out)), (to, vec![4, 5]), "{ctx}");
                // Exact: floats round once, float to int truncates, ints wrap.
                check(&ctx, &read(&out), &r.map(|x| round_to(x, to)).data, 0.0, None);
            }
        }
    }
}

#[test]
fn astype_special_values() {
    let a = Array::from_slice(&[f64::NAN, f64::INFINITY, -0.0, 1e10, 70000.0, 1.0 + 1e-12], &[6]).unwrap();
    let h = read(&ops::astype(&a, Dtype::F16).unwrap());
    assert!(h[0].is_nan());
    assert_eq!(&h[1..], &[f64::INFINITY, 0.0, f64::INFINITY, f64::INFINITY, 1.0]);
    let b = read(&ops::astype(&a, Dtype::BF16).unwrap());
    assert_eq!(b[4], 70144.0); // nearest bfloat16
    let t = ops::astype(&a, Dtype::Bool).unwrap().to_vec::<bool>().unwrap();
    assert_eq!(t, vec![true, true, false, true, true, true]);
    let neg = Array::from_slice(&[-1i32, -2, 256, 300], &[4]).unwrap();
    assert_eq!(ops::astype(&neg, Dtype::U8).unwrap().to_vec::<u8>().unwrap(), vec![255, 254, 0, 44]);
    assert_eq!(ops::astype(&neg, Dtype::U32).unwrap().to_vec::<u32>().unwrap()[0], u32::MAX);
    let f = Array::from_slice(&[2.9f32, -2.9, 0.5], &[3]).unwrap();
    assert_eq!(ops::astype(&f, Dtype::I32).unwrap().to_vec::<i32>().unwrap(), vec![2, -2, 0]);
}

// ---------------------------------------------------------------- reductions

/// Reduction cases: a shape and its axes (`None`: every axis; `Some(&[])`: none).
const REDUCE_CASES: [(&[usize], Option<&[isize]>); 12] = [
    (&[2, 3, 4], None),
    (&[2, 3, 4], Some(&[0])),
    (&[2, 3, 4], Some(&[1])),
    (&[2, 3, 4], Some(&[-1])),
    (&[2, 3, 4], Some(&[0, 2])),
    (&[2, 3, 4], Some(&[2, 1])),
    (&[2, 3, 4], Some(&[])),
    (&[5, 7], Some(&[0])),
    (&[1, 6], Some(&[1])),
    (&[4], Some(&[0])),
    (&[], None),
    (&[], Some(&[])),
];

fn axes_arg(axes: Option<&[isize]>) -> Axes {
    axes.map_or(Axes::All, Axes::from)
}

fn norm_axes(shape: &[usize], axes: Option<&[isize]>) -> Vec<usize> {
    let Some(axes) = axes else { return (0..shape.len()).collect() };
    axes.iter().map(|&a| if a < 0 { (a + shape.len() as isize) as usize } else { a as usize }).collect()
}

fn squeezed(shape: &[usize], axes: &[usize], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(d, &n)| match (axes.contains(&d), keepdims) {
            (true, true) => Some(1),
            (true, false) => None,
            _ => Some(n),
        })
        .collect()
}

#[test]
fn sum_max_min_match_reference() {
    let mut rng = Rng::new(7);
    for dtype in Dtype::REAL {
        for (ci, (shape, axes)) in REDUCE_CASES.into_iter().enumerate() {
            for keepdims in [false, true] {
                let view = VIEWS[(ci + keepdims as usize) % 4];
                let (a, r) = sample(&mut rng, shape, dtype, Kind::Any, view);
                let ax = norm_axes(shape, axes);
                let out_shape = squeezed(shape, &ax, keepdims);
                let ctx = format!("{dtype} {shape:?} axes {axes:?} keepdims {keepdims} {view:?}");

                let s = ops::sum(&a, axes_arg(axes), keepdims).unwrap();
                // MLX's sum widens narrow integers to 32 bits.
                let sum_dtype = match dtype {
                    Dtype::Bool | Dtype::I8 | Dtype::I16 => Dtype::I32,
                    Dtype::U8 | Dtype::U16 => Dtype::U32,
                    d => d,
                };
                assert_eq!((s.dtype(), shape_of(&s)), (sum_dtype, out_shape.clone()), "sum {ctx}");
                let want = reduce_ref(&r, &ax, 0.0, |a, b| a + b);
                let scale = reduce_ref(&r, &ax, 0.0, |a, b| a + b.abs());
                check(&format!("sum {ctx}"), &read(&s), &want.data, tol(sum_dtype), Some(&scale.data));

                for (name, op, f) in [
                    ("max", (|a, ax, k| ops::max(a, ax, k)) as fn(&Array, Axes, bool) -> weft::Result<Array>, nan_max as fn(f64, f64) -> f64),
                    ("min", |a, ax, k| ops::min(a, ax, k), nan_min),
                ] {
                    let m = op(&a, axes_arg(axes), keepdims).unwrap();
                    assert_eq!((m.dtype(), shape_of(&m)), (dtype, out_shape.clone()), "{name} {ctx}");
                    let init = if name == "max" { f64::NEG_INFINITY } else { f64::INFINITY };
                    check(&format!("{name} {ctx}"), &read(&m), &reduce_ref(&r, &ax, init, f).data, 0.0, None);
                }

                if dtype != Dtype::Bool {
                    let m = ops::mean(&a, axes_arg(axes), keepdims).unwrap();
                    let md = dtype.at_least_float();
                    assert_eq!((m.dtype(), shape_of(&m)), (md, out_shape.clone()), "mean {ctx}");
                    let n: usize = ax.iter().map(|&d| shape[d]).product();
                    let want = want.map(|x| x / n as f64);
                    let scale = scale.map(|x| x / n as f64);
                    check(&format!("mean {ctx}"), &read(&m), &want.data, 2.0 * tol(md), Some(&scale.data));
                }
            }
        }
    }
}

#[test]
fn reductions_of_empty_and_nan() {
    let e = ops::zeros(&[3, 0], Dtype::F32).unwrap();
    let s = ops::sum(&e, &[1], false).unwrap();
    assert_eq!(shape_of(&s), vec![3]);
    assert_eq!(read(&s), vec![0.0; 3]);
    assert_eq!(read(&ops::sum(&e, Axes::All, false).unwrap()), vec![0.0]);
    assert_eq!(shape_of(&ops::sum(&e, &[0], false).unwrap()), vec![0]);
    let ei = Array::from_vec(Vec::<i64>::new(), &[0]).unwrap();
    assert_eq!(ops::sum(&ei, Axes::All, false).unwrap().to_vec::<i64>().unwrap(), vec![0]);

    let a = Array::from_slice(&[1.0f32, f32::NAN, 3.0, 4.0, 5.0, f32::NAN], &[2, 3]).unwrap();
    let mx = read(&ops::max(&a, &[1], false).unwrap());
    assert!(mx[0].is_nan() && mx[1].is_nan());
    let mn = read(&ops::min(&a, &[0], false).unwrap());
    assert_eq!(mn[0], 1.0);
    assert!(mn[1].is_nan() && mn[2].is_nan());
    // bfloat16 / float16 NaN too, and whole-array reductions.
    for d in [Dtype::F16, Dtype::BF16, Dtype::F64] {
        let b = ops::astype(&a, d).unwrap();
        assert!(read(&ops::max(&b, Axes::All, false).unwrap())[0].is_nan(), "{d}");
        assert!(read(&ops::sum(&b, Axes::All, false).unwrap())[0].is_nan(), "{d}");
    }
    let inf = Array::from_slice(&[f32::NEG_INFINITY, f32::NEG_INFINITY], &[2]).unwrap();
    assert_eq!(read(&ops::max(&inf, Axes::All, false).unwrap()), vec![f64::NEG_INFINITY]);
}

#[test]
fn half_sums_accumulate_in_f32() {
    // 4096 ones in float16: a float16 accumulator would stop at 2048.
    for d in [Dtype::F16, Dtype::BF16] {
        let a = array(&vec![1.0; 4096], &[4096], d);
        assert_eq!(read(&ops::sum(&a, Axes::All, false).unwrap()), vec![4096.0], "{d}");
        // Also through the column path: sum over the leading axis.
        let b = array(&vec![1.0; 4096 * 3], &[4096, 3], d);
        assert_eq!(read(&ops::sum(&b, &[0], false).unwrap()), vec![4096.0; 3], "{d}");
        // And strided.
        let t = ops::transpose(&b, &[]).unwrap();
        assert_eq!(read(&ops::sum(&t, &[1], false).unwrap()), vec![4096.0; 3], "{d}");
    }
}

#[test]
fn argmax_argmin_match_reference() {
    let mut rng = Rng::new(8);
    let cases: [(&[usize], Option<isize>); 8] = [
        (&[2, 3, 4], Some(0)),
        (&[2, 3, 4], Some(1)),
        (&[2, 3, 4], Some(-1)),
        (&[5, 7], Some(0)),
        (&[5, 7], None),
        (&[9], Some(0)),
        (&[1, 4], Some(0)),
        (&[], None),
    ];
    for dtype in Dtype::REAL {
        for (ci, (shape, axis)) in cases.into_iter().enumerate() {
            for keepdims in [false, true] {
                let view = VIEWS[(ci + 2 * keepdims as usize) % 4];
                // Small ranges make ties common: the first index must win.
                let (a, r) = sample(&mut rng, shape, dtype, Kind::Small, view);
                let ctx = format!("{dtype} {shape:?} axis {axis:?} keepdims {keepdims} {view:?}");
                for (name, max) in [("argmax", true), ("argmin", false)] {
                    let out = if max { ops::argmax(&a, axis, keepdims) } else { ops::argmin(&a, axis, keepdims) }.unwrap();
                    assert_eq!(out.dtype(), Dtype::U32, "{name} {ctx}");
                    let (r2, ax) = match axis {
                        Some(ax) => (r.clone(), norm_axes(shape, Some(&[ax]))[0]),
                        None => (Ref::new(&[r.data.len()], r.data.clone()), 0),
                    };
                    let want = arg_ref(&r2, ax, max);
                    // With no axis, keepdims keeps every axis as size 1 (as NumPy and MLX).
                    let want_shape = match axis {
                        None if keepdims => vec![1; shape.len()],
                        _ => squeezed(&r2.shape, &[ax], keepdims),
                    };
                    assert_eq!(shape_of(&out), want_shape, "{name} {ctx}");
                    check(&format!("{name} {ctx}"), &read(&out), &want.data, 0.0, None);
                }
            }
        }
    }
}

#[test]
fn argmax_nan_counts_as_extremum() {
    let a = Array::from_slice(&[1.0f32, f32::NAN, 7.0, f32::NAN, 2.0, 9.0, 0.0, 3.0], &[2, 4]).unwrap();
    for d in FLOATS {
        let b = ops::astype(&a, d).unwrap();
        assert_eq!(ops::argmax(&b, Some(1), false).unwrap().to_vec::<u32>().unwrap(), vec![1, 1], "{d}");
        assert_eq!(ops::argmin(&b, Some(1), false).unwrap().to_vec::<u32>().unwrap(), vec![1, 2], "{d}");
        assert_eq!(ops::argmax(&b, None, false).unwrap().to_vec::<u32>().unwrap(), vec![1], "{d}");
        assert_eq!(ops::argmax(&b, Some(0), false).unwrap().to_vec::<u32>().unwrap(), vec![1, 0, 0, 0], "{d}");
    }
}

/// Inputs large enough for the kernels' parallel and blocked paths.
#[test]
fn large_reductions_match_reference() {
    let mut rng = Rng::new(9);
    let cases: [(&[usize], Option<&[isize]>, View); 11] = [
        // Many column outputs: split over outputs, chunks cutting across rows.
        (&[2, 3, 9001], Some(&[1]), View::Contiguous),
        (&[2, 3, 9001], Some(&[0, 1]), View::Transposed),
        (&[300, 257], Some(&[1]), View::Contiguous),
        (&[300, 257], Some(&[0]), View::Contiguous),
        (&[300, 257], None, View::Transposed),
        (&[300, 257], Some(&[0]), View::Transposed),
        (&[40000, 3], Some(&[0]), View::Contiguous),
        (&[3, 40000], Some(&[1]), View::Strided),
        (&[40, 50, 30], Some(&[1]), View::Contiguous),
        (&[40, 50, 30], Some(&[0, 2]), View::Broadcast),
        (&[70000], None, View::Contiguous),
    ];
    for (shape, axes, view) in cases {
        for dtype in [Dtype::F32, Dtype::F16, Dtype::I32, Dtype::F64] {
            let (a, r) = sample(&mut rng, shape, dtype, Kind::Any, view);
            let ax = norm_axes(shape, axes);
            let ctx = format!("{dtype} {shape:?} axes {axes:?} {view:?}");
            let want = reduce_ref(&r, &ax, 0.0, |a, b| a + b);
            let scale = reduce_ref(&r, &ax, 0.0, |a, b| a + b.abs());
            // float32 sums of 1e5 terms: allow a few roundings per level of the
            // pairwise tree on top of the output rounding.
            // float32: sequential column sums lose up to ~sqrt(n) roundings
            // (as NumPy's do); exactness is checked by int32 and float64.
            let t = if dtype == Dtype::F32 { 5e-5 } else { tol(dtype) };
            check(&format!("sum {ctx}"), &read(&ops::sum(&a, axes_arg(axes), false).unwrap()), &want.data, t, Some(&scale.data));
            let mx = reduce_ref(&r, &ax, f64::NEG_INFINITY, nan_max);
            check(&format!("max {ctx}"), &read(&ops::max(&a, axes_arg(axes), false).unwrap()), &mx.data, 0.0, None);
            let mn = reduce_ref(&r, &ax, f64::INFINITY, nan_min);
            check(&format!("min {ctx}"), &read(&ops::min(&a, axes_arg(axes), false).unwrap()), &mn.data, 0.0, None);
        }
    }
    for (shape, axis, view) in [
        (&[300usize, 257][..], Some(0isize), View::Contiguous),
        (&[300, 257], Some(1), View::Transposed),
        (&[300, 257], None, View::Contiguous),
        (&[40000, 3], Some(0), View::Contiguous),
        (&[3, 40000], Some(1), View::Strided),
        (&[2, 3, 9001], Some(1), View::Contiguous),
        (&[2, 3, 9001], Some(2), View::Broadcast),
    ] {
        let (a, r) = sample(&mut rng, shape, Dtype::F32, Kind::Any, view);
        let (r2, ax) = match axis {
            Some(ax) => (r.clone(), ax as usize),
            None => (Ref::new(&[r.data.len()], r.data.clone()), 0),
        };
        for max in [true, false] {
            let out = if max { ops::argmax(&a, axis, false) } else { ops::argmin(&a, axis, false) }.unwrap();
            check(&format!("arg {max} {shape:?} {axis:?} {view:?}"), &read(&out), &arg_ref(&r2, ax, max).data, 0.0, None);
        }
    }
    // A large integer sum is exact (no float accumulator in between).
    let v: Vec<i64> = (0..100_000).map(|i| i * 1_000_003 - 7).collect();
    let want: i64 = v.iter().sum();
    let a = Array::from_vec(v, &[100_000]).unwrap();
    assert_eq!(ops::sum(&a, Axes::All, false).unwrap().item::<i64>().unwrap(), want);
}

// ---------------------------------------------------------------- matmul

const MATMUL_SHAPES: [(&[usize], &[usize]); 10] = [
    (&[3, 4], &[4, 5]),
    (&[1, 1], &[1, 1]),
    (&[4], &[4, 5]),
    (&[3, 4], &[4]),
    (&[6], &[6]),
    (&[2, 3, 4], &[4, 5]),
    (&[3, 4], &[2, 4, 5]),
    (&[2, 1, 3, 4], &[5, 4, 2]),
    (&[3, 0], &[0, 2]),
    (&[2, 0, 3], &[3, 4]),
];

#[test]
fn matmul_matches_reference() {
    let mut rng = Rng::new(10);
    for dtype in FLOATS {
        for (si, (sa, sb)) in MATMUL_SHAPES.into_iter().enumerate() {
            for vi in 0..4 {
                let (va, vb) = (VIEWS[vi], VIEWS[(vi + si) % 4]);
                let (a, ra) = sample(&mut rng, sa, dtype, Kind::Any, va);
                let (b, rb) = sample(&mut rng, sb, dtype, Kind::Any, vb);
                let ctx = format!("{dtype} {sa:?}({va:?}) @ {sb:?}({vb:?})");
                let out = ops::matmul(&a, &b).unwrap();
                assert_eq!(out.dtype(), dtype, "{ctx}");
                // NumPy: 1-D operands gain an axis that is removed again.
                let ra2 = if sa.len() == 1 { Ref::new(&[1, sa[0]], ra.data.clone()) } else { ra.clone() };
                let rb2 = if sb.len() == 1 { Ref::new(&[sb[0], 1], rb.data.clone()) } else { rb.clone() };
                let want = matmul_ref(&ra2, &rb2);
                let scale = matmul_ref(&ra2.map(f64::abs), &rb2.map(f64::abs));
                let mut want_shape = want.shape.clone();
                if sb.len() == 1 {
                    want_shape.pop();
                }
                if sa.len() == 1 {
                    want_shape.remove(want_shape.len() - 1 - (sb.len() > 1) as usize);
                }
                assert_eq!(shape_of(&out), want_shape, "{ctx}");
                check(&ctx, &read(&out), &want.data, tol(dtype), Some(&scale.data));
            }
        }
    }
}

#[test]
fn matmul_large_and_batched() {
    let mut rng = Rng::new(11);
    let cases: [(&[usize], View, &[usize], View, Dtype); 6] = [
        (&[130, 97], View::Contiguous, &[97, 65], View::Contiguous, Dtype::F32),
        (&[130, 97], View::Transposed, &[97, 65], View::Transposed, Dtype::F64),
        (&[64, 80], View::Strided, &[80, 72], View::Contiguous, Dtype::F32),
        (&[64, 80], View::Contiguous, &[80, 72], View::Contiguous, Dtype::F16),
        (&[64, 80], View::Transposed, &[80, 72], View::Contiguous, Dtype::BF16),
        (&[600, 8, 9], View::Contiguous, &[9, 7], View::Transposed, Dtype::F32),
    ];
    for (sa, va, sb, vb, dtype) in cases {
        let (a, ra) = sample(&mut rng, sa, dtype, Kind::Any, va);
        let (b, rb) = sample(&mut rng, sb, dtype, Kind::Any, vb);
        let out = ops::matmul(&a, &b).unwrap();
        let want = matmul_ref(&ra, &rb);
        let scale = matmul_ref(&ra.map(f64::abs), &rb.map(f64::abs));
        assert_eq!(shape_of(&out), want.shape);
        let t = if dtype == Dtype::F32 { 1e-5 } else { tol(dtype) };
        check(&format!("{dtype} {sa:?}({va:?}) @ {sb:?}({vb:?})"), &read(&out), &want.data, t, Some(&scale.data));
    }
}

#[test]
fn matmul_promotes_and_rejects_integers() {
    let a = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
    let b = Array::from_slice(&[0.5f32, 1.0, 1.5, 2.0], &[2, 2]).unwrap();
    let c = ops::matmul(&a, &b).unwrap();
    assert_eq!(c.dtype(), Dtype::F32);
    assert_eq!(read(&c), vec![3.5, 5.0, 7.5, 11.0]);
    let e = ops::matmul(&a, &a).unwrap_err();
    assert!(matches!(e, Error::Dtype(_)), "{e}");
    assert!(e.to_string().contains("int32"), "{e}");
}

// ---------------------------------------------------------------- shape ops

#[test]
fn reshape_transpose_broadcast_match_reference() {
    let mut rng = Rng::new(12);
    for dtype in [Dtype::F32, Dtype::I64, Dtype::Bool, Dtype::BF16] {
        for view in VIEWS {
            let (a, r) = sample(&mut rng, &[2, 3, 4], dtype, Kind::Any, view);
            let ctx = format!("{dtype} {view:?}");
            // Reshape keeps row-major order (copying strided data).
            for shape in [&[6, 4][..], &[24], &[4, -1], &[2, 1, 12], &[-1]] {
                let out = ops::reshape(&a, shape).unwrap();
                let want: Vec<usize> = shape.iter().map(|&d| if d < 0 { 24 / shape.iter().product::<isize>().unsigned_abs() } else { d as usize }).collect();
                assert_eq!(shape_of(&out), want, "reshape {shape:?} {ctx}");
                assert_eq!(read(&out), r.data, "reshape {shape:?} {ctx}");
            }
            for perm in [&[2, 0, 1][..], &[1, 0, 2], &[], &[-1, 0, 1]] {
                let out = ops::transpose(&a, perm).unwrap();
                let p: Vec<usize> =
                    if perm.is_empty() { vec![2, 1, 0] } else { perm.iter().map(|&x| ((x + 3) % 3) as usize).collect() };
                let want = r.transpose(&p);
                assert_eq!(shape_of(&out), want.shape, "transpose {perm:?} {ctx}");
                assert_eq!(read(&out), want.data, "transpose {perm:?} {ctx}");
                // And a transpose of a transpose computes through both.
                let back = ops::transpose(&ops::negative(&ops::astype(&out, Dtype::F64).unwrap()).unwrap(), &[]).unwrap();
                let wb = want.map(|x| -x).transpose(&[2, 1, 0]);
                assert_eq!(read(&back), wb.data, "transpose back {perm:?} {ctx}");
            }
            let b = ops::broadcast_to(&ops::slice(&a, &[SliceArg::range(0, 1)]).unwrap(), &[5, 2, 3, 4]).unwrap();
            let rb = r.slice(&[SliceArg::range(0, 1)]).broadcast(&[5, 2, 3, 4]);
            assert_eq!(read(&b), rb.data, "broadcast {ctx}");
        }
    }
}

#[test]
fn slices_match_python() {
    let mut rng = Rng::new(13);
    let args_list: Vec<Vec<SliceArg>> = vec![
        vec![SliceArg::range(1, 4)],
        vec![SliceArg::ALL, SliceArg::new(None, None, -1)],
        vec![SliceArg::new(Some(-1), None, -2), SliceArg::new(Some(1), Some(-1), 2), SliceArg::new(None, None, 3)],
        vec![SliceArg::new(Some(10), Some(-10), -3)],
        vec![SliceArg::new(Some(-100), Some(100), 2), SliceArg::range(3, 3)],
        vec![SliceArg::new(Some(2), Some(1), 1)],
        vec![SliceArg::new(Some(4), Some(0), -1), SliceArg::new(None, Some(-7), -1)],
        vec![SliceArg::new(Some(0), None, 7), SliceArg::new(Some(-2), Some(-4), -1), SliceArg::new(Some(5), Some(1), -2)],
    ];
    for dtype in [Dtype::F32, Dtype::U8, Dtype::F16] {
        for view in VIEWS {
            let (a, r) = sample(&mut rng, &[5, 6, 7], dtype, Kind::Any, view);
            for args in &args_list {
                let ctx = format!("{dtype} {view:?} {args:?}");
                let out = ops::slice(&a, args).unwrap();
                let want = r.slice(args);
                assert_eq!(shape_of(&out), want.shape, "{ctx}");
                assert_eq!(read(&out), want.data, "{ctx}");
                // Slicing the slice again, and computing on it.
                let again = ops::slice(&out, &[SliceArg::new(None, None, -1)]).unwrap();
                let want2 = want.slice(&[SliceArg::new(None, None, -1)]);
                assert_eq!(read(&again), want2.data, "re-slice {ctx}");
                let plus = ops::add(&again, &again).unwrap();
                check(&ctx, &read(&plus), &want2.map(|x| round_to(2.0 * x, dtype)).data, 0.0, None);
            }
        }
    }
}

#[test]
fn concatenate_expand_squeeze_match_reference() {
    let mut rng = Rng::new(14);
    for axis in [0isize, 1, 2, -1] {
        let ax = ((axis + 3) % 3) as usize;
        let mut parts = vec![];
        let mut refs = vec![];
        for (i, (len, dtype)) in [(2usize, Dtype::I32), (0, Dtype::F32), (3, Dtype::F32), (1, Dtype::U8)].into_iter().enumerate() {
            let mut shape = vec![2, 3, 4];
            shape[ax] = len;
            let (a, r) = sample(&mut rng, &shape, dtype, Kind::Any, VIEWS[i % 4]);
            parts.push(a);
            refs.push(r);
        }
        let out = ops::concatenate(&parts, axis).unwrap();
        assert_eq!(out.dtype(), Dtype::F32);
        let mut shape = vec![2, 3, 4];
        shape[ax] = 6;
        let want = Ref::from_fn(&shape, |idx| {
            let mut i = idx.to_vec();
            for r in &refs {
                if i[ax] < r.shape[ax] {
                    return r.get(&i);
                }
                i[ax] -= r.shape[ax];
            }
            unreachable!()
        });
        assert_eq!(shape_of(&out), shape, "axis {axis}");
        assert_eq!(read(&out), want.data, "axis {axis}");
    }
    let (a, r) = sample(&mut rng, &[2, 3], Dtype::F64, Kind::Any, View::Transposed);
    for (axis, shape) in [(0isize, vec![1, 2, 3]), (1, vec![2, 1, 3]), (2, vec![2, 3, 1]), (-1, vec![2, 3, 1]), (-3, vec![1, 2, 3])] {
        let e = ops::expand_dims(&a, axis).unwrap();
        assert_eq!(shape_of(&e), shape, "expand_dims {axis}");
        assert_eq!(read(&e), r.data);
    }
    let b = ops::reshape(&a, &[1, 2, 1, 3, 1]).unwrap();
    assert_eq!(shape_of(&ops::squeeze(&b, Axes::All).unwrap()), vec![2, 3]);
    assert_eq!(shape_of(&ops::squeeze(&b, &[0, -1]).unwrap()), vec![2, 1, 3]);
    assert_eq!(read(&ops::squeeze(&b, &[2]).unwrap()), r.data);
}

#[test]
fn creation_ops() {
    for dtype in Dtype::REAL {
        let z = ops::zeros(&[2, 3], dtype).unwrap();
        let o = ops::ones(&[4], dtype).unwrap();
        assert_eq!((z.dtype(), shape_of(&z), read(&z)), (dtype, vec![2, 3], vec![0.0; 6]));
        assert_eq!((o.dtype(), read(&o)), (dtype, vec![1.0; 4]));
        // A view of one scalar still computes as a full array.
        let s = ops::sum(&o, Axes::All, false).unwrap();
        assert_eq!(read(&s), vec![4.0]);
        let e = ops::eye(3, 4, 1, dtype).unwrap();
        let want = Ref::from_fn(&[3, 4], |i| (i[1] as isize - i[0] as isize == 1) as u8 as f64);
        assert_eq!((e.dtype(), read(&e)), (dtype, want.data), "eye {dtype}");
    }
    let f = ops::full(&[2, 2], 2.5f32).unwrap();
    assert_eq!((f.dtype(), read(&f)), (Dtype::F32, vec![2.5; 4]));
    let e = ops::eye(4, 2, -2, Dtype::F32).unwrap();
    assert_eq!(read(&e), vec![0., 0., 0., 0., 1., 0., 0., 1.]);
    for (start, stop, step, dtype) in [
        (0.0, 5.0, 1.0, Dtype::I32),
        (1.0, 2.0, 0.1, Dtype::F64),
        (1.0, 2.0, 0.25, Dtype::F16),
        (5.0, -3.0, -1.5, Dtype::F32),
        (3.0, 3.0, 1.0, Dtype::F32),
        (3.0, 0.0, 1.0, Dtype::I64),
        (0.0, 10.0, 3.0, Dtype::U8),
    ] {
        let a = ops::arange(start, stop, step, dtype).unwrap();
        let mut want = vec![];
        let mut i = 0;
        loop {
            let x = start + i as f64 * step;
            if (step > 0.0 && x >= stop) || (step < 0.0 && x <= stop) {
                break;
            }
            want.push(round_to(x, dtype));
            i += 1;
        }
        assert_eq!(shape_of(&a), vec![want.len()], "arange {start} {stop} {step}");
        check(&format!("arange {start} {stop} {step}"), &read(&a), &want, tol(dtype), None);
    }
}

// ---------------------------------------------------------------- errors

fn shape_err(r: weft::Result<Array>, parts: &[&str]) {
    match r {
        Err(Error::Shape(m)) => {
            for p in parts {
                assert!(m.contains(p), "message {m:?} lacks {p:?}");
            }
        }
        other => panic!("expected a shape error naming {parts:?}, got {other:?}"),
    }
}

fn arg_err(r: weft::Result<Array>) {
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "expected InvalidArgument, got {r:?}");
}

#[test]
fn bad_input_gives_errors() {
    let a = ops::zeros(&[3, 2], Dtype::F32).unwrap();
    let b = ops::zeros(&[4], Dtype::F32).unwrap();
    shape_err(ops::add(&a, &b), &["[3, 2]", "[4]"]);
    shape_err(ops::less(&a, &b), &["[3, 2]", "[4]"]);
    shape_err(ops::where_(&a, &a, &b), &["[3, 2]", "[4]"]);
    shape_err(ops::matmul(&a, &ops::zeros(&[3, 5], Dtype::F32).unwrap()), &["[3, 2]", "[3, 5]"]);
    shape_err(ops::matmul(&a, &Array::scalar(1.0f32)), &["[3, 2]", "[]"]);
    shape_err(
        ops::matmul(&ops::zeros(&[2, 3, 2], Dtype::F32).unwrap(), &ops::zeros(&[4, 2, 1], Dtype::F32).unwrap()),
        &["[2]", "[4]"],
    );
    shape_err(ops::reshape(&a, &[4, 2]), &["[3, 2]", "[4, 2]"]);
    shape_err(ops::reshape(&a, &[-1, -1]), &["[-1, -1]"]);
    shape_err(ops::broadcast_to(&a, &[3, 3]), &["[3, 2]", "[3, 3]"]);
    shape_err(ops::concatenate(&[a.clone(), b.clone()], 0), &["[3, 2]", "[4]"]);
    shape_err(ops::transpose(&a, &[0, 0]), &["[3, 2]"]);
    shape_err(ops::squeeze(&a, &[0]), &["[3, 2]"]);
    shape_err(ops::max(&ops::zeros(&[0, 2], Dtype::F32).unwrap(), &[0], false), &["[0, 2]"]);
    shape_err(ops::argmax(&ops::zeros(&[2, 0], Dtype::F32).unwrap(), Some(1), false), &["[2, 0]"]);
    shape_err(ops::slice(&a, &[SliceArg::ALL; 3]), &["[3, 2]"]);

    let i = ops::zeros(&[2, 2], Dtype::I32).unwrap();
    assert!(matches!(ops::matmul(&i, &i), Err(Error::Dtype(_))));
    assert!(matches!(ops::matmul(&i, &ops::zeros(&[2, 2], Dtype::U8).unwrap()), Err(Error::Dtype(_))));
    assert!(matches!(ops::negative(&ops::zeros(&[2], Dtype::Bool).unwrap()), Err(Error::Dtype(_))));
    assert!(matches!(a.to_vec::<i32>(), Err(Error::Dtype(_))));

    arg_err(ops::sum(&a, &[2], false));
    arg_err(ops::sum(&a, &[-3], false));
    arg_err(ops::sum(&a, &[0, -2], false));
    arg_err(ops::mean(&a, &[5], true));
    arg_err(ops::max(&a, &[1, 1], false));
    arg_err(ops::argmax(&a, Some(2), false));
    arg_err(ops::argmin(&a, Some(-3), false));
    arg_err(ops::expand_dims(&a, 3));
    arg_err(ops::squeeze(&a, &[4]));
    arg_err(ops::concatenate(&[a.clone()], 2));
    arg_err(ops::concatenate(&[], 0));
    arg_err(ops::transpose(&a, &[0, 2]));
    arg_err(ops::slice(&a, &[SliceArg::new(None, None, 0)]));
    arg_err(ops::arange(0.0, 1.0, 0.0, Dtype::F32));
    arg_err(ops::arange(0.0, f64::INFINITY, 1.0, Dtype::F32));
}
