//! Indexed updates: `scatter` (assign, add, prod, max, min) against a
//! sequential loop on random positions with repeats, `put_along_axis`
//! against its definition through `take_along_axis`, the derivatives of
//! assignment and add, and errors for bad positions.

mod common;

use common::*;
use weft::primitive::ReduceOp;
use weft::{ops, transforms, Array, Dtype};

/// The loop `scatter` must equal: updates applied in order.
fn scatter_ref(a: &[f64], pos: &[i64], upd: &[f64], reduce: Option<ReduceOp>) -> Vec<f64> {
    let mut out = a.to_vec();
    let n = a.len() as i64;
    for (k, &p) in pos.iter().enumerate() {
        let p = if p < 0 { p + n } else { p } as usize;
        let (old, new) = (out[p], upd[k]);
        out[p] = match reduce {
            None => new,
            Some(ReduceOp::Sum) => old + new,
            Some(ReduceOp::Prod) => old * new,
            Some(ReduceOp::Max) => old.max(new),
            Some(ReduceOp::Min) => old.min(new),
        };
    }
    out
}

#[test]
fn scatter_matches_a_sequential_loop() {
    let mut rng = Rng::new(11);
    let reduces = [None, Some(ReduceOp::Sum), Some(ReduceOp::Prod), Some(ReduceOp::Max), Some(ReduceOp::Min)];
    for dtype in [Dtype::F32, Dtype::F64, Dtype::BF16, Dtype::I32, Dtype::U8, Dtype::I64] {
        for reduce in reduces {
            // 12 positions into 5 elements: repeats, and negative positions.
            let a: Vec<f64> = (0..10).map(|_| round_to(rng.uniform(1.0, 4.0), dtype).floor()).collect();
            let pos: Vec<i64> = (0..12).map(|_| rng.uniform(-10.0, 10.0).floor() as i64).collect();
            let upd: Vec<f64> = (0..12).map(|_| round_to(rng.uniform(1.0, 3.0), dtype).floor()).collect();
            let x = array(&a, &[2, 5], dtype);
            let p = Array::from_slice(&pos, &[3, 4]).unwrap();
            let u = array(&upd, &[3, 4], dtype);
            let out = ops::scatter(&x, &p, &u, reduce).unwrap();
            assert_eq!(out.shape(), &[2, 5]);
            assert_eq!(out.dtype(), dtype);
            let want = scatter_ref(&a, &pos, &upd, reduce);
            check(&format!("scatter {reduce:?} {dtype}"), &read(&out), &want, tol(dtype), None);
        }
    }
}

#[test]
fn scatter_broadcasts_updates_and_reads_strided_inputs() {
    let a = ops::transpose(&Array::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap(), &[]).unwrap();
    // a is [[0, 3], [1, 4], [2, 5]] (a transposed view); flat positions are of that shape.
    let p = Array::from_slice(&[1i32, 4], &[2]).unwrap();
    let out = ops::scatter(&a, &p, &Array::scalar(9.0f32), None).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 9.0, 1.0, 4.0, 9.0, 5.0]);
}

#[test]
fn scatter_rejects_bad_positions() {
    let a = Array::from_slice(&[0.0f32; 4], &[4]).unwrap();
    let r = ops::scatter(&a, &Array::from_slice(&[0.5f32], &[1]).unwrap(), &Array::scalar(1.0f32), None);
    assert!(matches!(r, Err(weft::Error::Dtype(_))), "float positions: {r:?}");
    // Out of range: the evaluation fails and reading raises, never a panic.
    let out = ops::scatter(&a, &Array::from_slice(&[4i32], &[1]).unwrap(), &Array::scalar(1.0f32), None).unwrap();
    assert!(out.to_vec::<f32>().is_err());
    let out = ops::scatter(&a, &Array::from_slice(&[-5i32], &[1]).unwrap(), &Array::scalar(1.0f32), None).unwrap();
    assert!(out.to_vec::<f32>().is_err());
}

#[test]
fn put_along_axis_inverts_take_along_axis() {
    let a = Array::from_slice(&(0..12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 4]).unwrap();
    let idx = Array::from_slice(&[3i32, 0, 1], &[3, 1]).unwrap();
    let out = ops::put_along_axis(&a, &idx, &Array::scalar(-1.0f32), Some(1)).unwrap();
    let want = vec![0.0, 1.0, 2.0, -1.0, -1.0, 5.0, 6.0, 7.0, 8.0, -1.0, 10.0, 11.0];
    assert_eq!(out.to_vec::<f32>().unwrap(), want);
    let back = ops::take_along_axis(&out, &idx, Some(1)).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![-1.0; 3]);
}

#[test]
fn derivatives_of_assignment_and_add() {
    let a = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[4]).unwrap();
    let p = Array::from_slice(&[2i32, 0], &[2]).unwrap();
    let u = Array::from_slice(&[10.0f64, 20.0], &[2]).unwrap();
    let w = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[4]).unwrap();
    for reduce in [None, Some(ReduceOp::Sum)] {
        let (p2, w2) = (p.clone(), w.clone());
        let f = move |x: &[Array]| -> weft::Result<Vec<Array>> {
            let y = ops::scatter(&x[0], &p2, &x[1], reduce)?;
            Ok(vec![ops::sum(&ops::multiply(&y, &w2)?, weft::Axes::All, false)?])
        };
        let (_, grads) = transforms::vjp(f, &[a.clone(), u.clone()], &[Array::scalar(1.0f64)]).unwrap();
        let ga = grads[0].to_vec::<f64>().unwrap();
        let gu = grads[1].to_vec::<f64>().unwrap();
        // Overwritten places get nothing when assigning; everything passes when adding.
        let want_a = if reduce.is_none() { vec![0.0, 2.0, 0.0, 4.0] } else { vec![1.0, 2.0, 3.0, 4.0] };
        assert_eq!(ga, want_a, "{reduce:?}");
        assert_eq!(gu, vec![3.0, 1.0], "{reduce:?}");
    }
}
