//! Property tests: shapes, axes and slices vary; every result is checked
//! against the naive `f64` reference in tests/common.

mod common;

use common::*;
use common::Rng;
use proptest::prelude::*;
use weft::ops::{self, SliceArg};
use weft::{Array, Axes, Dtype, Error};

fn config() -> ProptestConfig {
    ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() }
}

fn dtype() -> impl Strategy<Value = Dtype> {
    prop::sample::select(vec![Dtype::F32, Dtype::F64, Dtype::I32, Dtype::F16, Dtype::U8])
}

fn view() -> impl Strategy<Value = View> {
    prop::sample::select(VIEWS.to_vec())
}

fn shape(max_nd: usize, max_dim: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..=max_dim, 0..=max_nd)
}

/// Two shapes that broadcast together: each takes every output axis or 1,
/// and may drop leading axes.
fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (prop::collection::vec(1usize..5, 0..=4), any::<u64>()).prop_map(|(out, seed)| {
        let mut rng = Rng::new(seed);
        let pick = |rng: &mut Rng| {
            let drop = rng.int(0, out.len() as i64) as usize;
            out[drop..].iter().map(|&d| if rng.int(0, 2) == 0 { 1 } else { d }).collect::<Vec<_>>()
        };
        let a = pick(&mut rng);
        let b = pick(&mut rng);
        (a, b)
    })
}

fn binary_op() -> impl Strategy<Value = usize> {
    0usize..6
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn broadcasting_binary_ops((sa, sb) in broadcast_pair(), op in binary_op(), dt in dtype(),
                               va in view(), vb in view(), seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let (a, ra) = sample(&mut rng, &sa, dt, Kind::Any, va);
        let (b, rb) = sample(&mut rng, &sb, dt, Kind::Any, vb);
        let (out, f): (Array, fn(f64, f64) -> f64) = match op {
            0 => (ops::add(&a, &b).unwrap(), |x, y| x + y),
            1 => (ops::subtract(&a, &b).unwrap(), |x, y| x - y),
            2 => (ops::multiply(&a, &b).unwrap(), |x, y| x * y),
            3 => (ops::maximum(&a, &b).unwrap(), f64::max),
            4 => (ops::less(&a, &b).unwrap(), |x, y| (x < y) as u8 as f64),
            _ => (ops::equal(&a, &b).unwrap(), |x, y| (x == y) as u8 as f64),
        };
        let shape = weft::shape::broadcast_shapes(&sa, &sb).unwrap();
        prop_assert_eq!(out.shape(), &shape[..]);
        let (ba, bb) = (ra.broadcast(&shape), rb.broadcast(&shape));
        let want: Vec<f64> = ba.data.iter().zip(&bb.data).map(|(&x, &y)| round_to(f(x, y), out.dtype())).collect();
        check(&format!("op {op} {sa:?} {sb:?} {dt}"), &read(&out), &want, tol(out.dtype()), None);
    }

    #[test]
    fn reductions_over_random_axes(sh in shape(4, 5), mask in any::<u8>(), keepdims in any::<bool>(),
                                   op in 0usize..4, dt in dtype(), v in view(), seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let (a, r) = sample(&mut rng, &sh, dt, Kind::Any, v);
        let axes: Vec<usize> = (0..sh.len()).filter(|d| mask >> d & 1 == 1).collect();
        // Negative axes too, and in any order.
        let given: Vec<isize> = axes.iter().rev().map(|&d| if seed % 2 == 0 { d as isize } else { d as isize - sh.len() as isize }).collect();
        // No axes selected: every axis (`Axes::All`) or none (`Axes::These([])`).
        let (given, all): (Axes, Vec<usize>) = match (axes.is_empty(), seed % 3) {
            (true, 0) => (Axes::These(vec![]), vec![]),
            (true, _) => (Axes::All, (0..sh.len()).collect()),
            (false, _) => (Axes::These(given), axes.clone()),
        };
        let empty = all.iter().any(|&d| sh[d] == 0);
        let out_shape: Vec<usize> = sh.iter().enumerate()
            .filter_map(|(d, &n)| if all.contains(&d) { keepdims.then_some(1) } else { Some(n) }).collect();
        let ctx = format!("op {op} {sh:?} axes {given:?} keepdims {keepdims} {dt} {v:?}");
        match op {
            0 | 3 => {
                let (out, want, scale) = if op == 0 {
                    (ops::sum(&a, given.clone(), keepdims).unwrap(),
                     reduce_ref(&r, &all, 0.0, |x, y| x + y),
                     reduce_ref(&r, &all, 0.0, |x, y| x + y.abs()))
                } else {
                    if empty { return Ok(()); }
                    let n: usize = all.iter().map(|&d| sh[d]).product();
                    (ops::mean(&a, given.clone(), keepdims).unwrap(),
                     reduce_ref(&r, &all, 0.0, |x, y| x + y).map(|x| x / n as f64),
                     reduce_ref(&r, &all, 0.0, |x, y| x + y.abs()).map(|x| x / n as f64))
                };
                prop_assert_eq!(out.shape(), &out_shape[..], "{}", ctx);
                check(&ctx, &read(&out), &want.data, 2.0 * tol(out.dtype()), Some(&scale.data));
            }
            _ => {
                if empty {
                    let res = ops::max(&a, given.clone(), keepdims);
    prop_assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");
                    return Ok(());
                }
                let (out, want) = if op == 1 {
                    (ops::max(&a, given.clone(), keepdims).unwrap(), reduce_ref(&r, &all, f64::NEG_INFINITY, nan_max))
                } else {
                    (ops::min(&a, given.clone(), keepdims).unwrap(), reduce_ref(&r, &all, f64::INFINITY, nan_min))
                };
                prop_assert_eq!(out.shape(), &out_shape[..], "{}", ctx);
                check(&ctx, &read(&out), &want.data, 0.0, None);
            }
        }
    }

    #[test]
    fn arg_reductions_along_random_axis(sh in prop::collection::vec(1usize..6, 1..=4), ax in any::<prop::sample::Index>(),
                                        max in any::<bool>(), dt in dtype(), v in view(), seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let (a, r) = sample(&mut rng, &sh, dt, Kind::Small, v);
        let axis = ax.index(sh.len());
        let out = if max { ops::argmax(&a, Some(axis as isize), true) } else { ops::argmin(&a, Some(axis as isize), true) }.unwrap();
        let want = arg_ref(&r, axis, max);
        prop_assert_eq!(out.shape(), &want.shape[..]);
        check(&format!("{sh:?} axis {axis} max {max} {dt} {v:?}"), &read(&out), &want.data, 0.0, None);
    }

    #[test]
    fn matmul_shapes(m in 0usize..7, k in 0usize..7, n in 0usize..7,
                     batch_a in prop::collection::vec(1usize..4, 0..3), bmask in any::<u8>(),
                     one_d in 0usize..4, va in view(), vb in view(),
                     f64_ in any::<bool>(), seed in any::<u64>()) {
        let dt = if f64_ { Dtype::F64 } else { Dtype::F32 };
        let mut rng = Rng::new(seed);
        // b's batch axes: a's, some set to 1, maybe fewer.
        let batch_b: Vec<usize> = batch_a.iter().enumerate().map(|(i, &d)| if bmask >> i & 1 == 1 { 1 } else { d })
            .skip((bmask >> 4) as usize % (batch_a.len() + 1)).collect();
        let (sa, sb): (Vec<usize>, Vec<usize>) = match one_d {
            1 => (vec![k], batch_b.iter().copied().chain([k, n]).collect()),
            2 => (batch_a.iter().copied().chain([m, k]).collect(), vec![k]),
            3 => (vec![k], vec![k]),
            _ => (batch_a.iter().copied().chain([m, k]).collect(), batch_b.iter().copied().chain([k, n]).collect()),
        };
        let (a, ra) = sample(&mut rng, &sa, dt, Kind::Any, va);
        let (b, rb) = sample(&mut rng, &sb, dt, Kind::Any, vb);
        let out = ops::matmul(&a, &b).unwrap();
        let ra2 = if sa.len() == 1 { Ref::new(&[1, k], ra.data.clone()) } else { ra };
        let rb2 = if sb.len() == 1 { Ref::new(&[k, 1], rb.data.clone()) } else { rb };
        let want = matmul_ref(&ra2, &rb2);
        let scale = matmul_ref(&ra2.map(f64::abs), &rb2.map(f64::abs));
        prop_assert_eq!(out.size(), want.data.len());
        check(&format!("{sa:?}({va:?}) @ {sb:?}({vb:?}) {dt}"), &read(&out), &want.data, tol(dt), Some(&scale.data));
    }

    #[test]
    fn slices_with_random_bounds(sh in prop::collection::vec(0usize..8, 1..=3),
                                 bounds in prop::collection::vec((prop::option::of(-10isize..10), prop::option::of(-10isize..10),
                                                                  prop::sample::select(vec![-3isize, -2, -1, 1, 2, 3])), 0..=3),
                                 v in view(), seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let (a, r) = sample(&mut rng, &sh, Dtype::F32, Kind::Any, v);
        let args: Vec<SliceArg> = bounds.iter().take(sh.len()).map(|&(s, e, st)| SliceArg::new(s, e, st)).collect();
        let out = ops::slice(&a, &args).unwrap();
        let want = r.slice(&args);
        prop_assert_eq!(out.shape(), &want.shape[..], "{:?} {:?}", sh, args);
        prop_assert_eq!(read(&out), want.data.clone());
        // The slice computes like any array (a kernel reading the view).
        let doubled = ops::add(&out, &out).unwrap();
        prop_assert_eq!(read(&doubled), want.map(|x| 2.0 * x).data);
    }
}

/// proptest's find (CI, 2026-12-06), its minimal failing input replayed: a
/// slice of a zero-length axis may sit at an offset past its empty buffer's
/// end; elementwise kernels over it must read nothing (they indexed the
/// buffer at the offset and failed).
#[test]
fn empty_slices_past_the_buffer_compute() {
    let mut rng = Rng::new(0);
    let (a, _) = sample(&mut rng, &[4, 0], Dtype::F32, Kind::Any, View::Contiguous);
    let mut arrays = vec![a];
    // And a zero-length view cut out of a larger buffer, far from its start.
    let big = ops::reshape(&ops::arange(0.0, 24.0, 1.0, Dtype::F32).unwrap(), &[4, 6]).unwrap();
    arrays.push(ops::slice(&big, &[SliceArg::new(Some(3), None, 1), SliceArg::new(Some(5), Some(5), 1)]).unwrap());
    for a in arrays {
        let s = ops::slice(&a, &[SliceArg::new(Some(1), None, 3)]).unwrap();
        for out in [ops::add(&s, &s).unwrap(), ops::multiply(&s, &Array::scalar(2.0f32)).unwrap(), ops::exp(&s).unwrap()] {
            assert_eq!(out.to_vec::<f32>().unwrap(), Vec::<f32>::new());
            assert_eq!(out.shape()[1], 0);
        }
    }
}
