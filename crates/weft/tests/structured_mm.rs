//! `gather_mm`, `block_masked_mm`, `segmented_mm` against f64 loops.

mod common;

use common::Rng;
use weft::ops;
use weft::{Array, Dtype, Error};

fn rand(rng: &mut Rng, shape: &[usize]) -> (Vec<f64>, Array) {
    let v: Vec<f64> = (0..shape.iter().product()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let a = ops::astype(&Array::from_vec(v.iter().map(|&x| x as f32).collect::<Vec<f32>>(), shape).unwrap(), Dtype::F32).unwrap();
    (a.to_f64_vec().unwrap(), a)
}

/// `[m, k] @ [k, n]` of row-major slices, with `keep(i, kk, j)` weighting each term.
fn mm(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, keep: impl Fn(usize, usize, usize) -> f64) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j] * keep(i, kk, j)).sum();
        }
    }
    out
}

fn assert_close(got: &Array, want: &[f64], what: &str) {
    let g = got.to_f64_vec().unwrap();
    assert_eq!(g.len(), want.len(), "{what}: size");
    for (i, (x, y)) in g.iter().zip(want).enumerate() {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{what}: element {i}: {x} vs {y}");
    }
}

#[test]
fn gather_mm_picks_matrices_by_index() {
    let mut rng = Rng::new(1);
    let (av, a) = rand(&mut rng, &[2, 3, 4, 5]);
    let (bv, b) = rand(&mut rng, &[4, 5, 2]);
    let lhs = Array::from_slice(&[5u32, 0, 2], &[3, 1]).unwrap();
    let rhs = Array::from_slice(&[3u32, 1], &[1, 2]).unwrap();
    let y = ops::gather_mm(&a, &b, Some(&lhs), Some(&rhs)).unwrap();
    assert_eq!(y.shape(), &[3, 2, 4, 2]);
    let mut want = vec![];
    for li in [5usize, 0, 2] {
        for ri in [3usize, 1] {
            want.extend(mm(&av[li * 20..(li + 1) * 20], &bv[ri * 10..(ri + 1) * 10], 4, 5, 2, |_, _, _| 1.0));
        }
    }
    assert_close(&y, &want, "gather_mm");
    let bad = Array::from_slice(&[0.5f32], &[1]).unwrap();
    assert!(matches!(ops::gather_mm(&a, &b, Some(&bad), None), Err(Error::Dtype(_))));
}

#[test]
fn block_masked_mm_zeroes_and_scales_blocks() {
    let mut rng = Rng::new(2);
    let (m, k, n, bs) = (40, 70, 33, 32);
    let (av, a) = rand(&mut rng, &[m, k]);
    let (bv, b) = rand(&mut rng, &[k, n]);
    let (tm, tk, tn) = (2, 3, 2);
    let lhs: Vec<f32> = (0..tm * tk).map(|i| (i % 3) as f32 * 0.5).collect();
    let rhs: Vec<bool> = (0..tk * tn).map(|i| i % 4 != 1).collect();
    let out: Vec<bool> = (0..tm * tn).map(|i| i != 2).collect();
    let y = ops::block_masked_mm(
        &a,
        &b,
        bs,
        Some(&Array::from_vec(out.clone(), &[tm, tn]).unwrap()),
        Some(&Array::from_vec(lhs.clone(), &[tm, tk]).unwrap()),
        Some(&Array::from_vec(rhs.clone(), &[tk, tn]).unwrap()),
    )
    .unwrap();
    let want = mm(&av, &bv, m, k, n, |i, kk, j| {
        let l = lhs[(i / bs) * tk + kk / bs] as f64;
        let r = if rhs[(kk / bs) * tn + j / bs] { 1.0 } else { 0.0 };
        let o = if out[(i / bs) * tn + j / bs] { 1.0 } else { 0.0 };
        l * r * o
    });
    assert_close(&y, &want, "block_masked_mm");
    assert!(matches!(ops::block_masked_mm(&a, &b, 16, None, None, None), Err(Error::InvalidArgument(_))));
    let wrong = Array::from_vec(vec![true; 4], &[2, 2]).unwrap();
    assert!(matches!(ops::block_masked_mm(&a, &b, bs, None, Some(&wrong), None), Err(Error::Shape(_))));
}

#[test]
fn segmented_mm_contracts_each_segment() {
    let mut rng = Rng::new(3);
    let (m, k, n) = (3, 10, 4);
    let (av, a) = rand(&mut rng, &[m, k]);
    let (bv, b) = rand(&mut rng, &[k, n]);
    let segs = [(0u32, 0u32), (0, 4), (4, 10), (2, 7)];
    let flat: Vec<u32> = segs.iter().flat_map(|&(s, e)| [s, e]).collect();
    let y = ops::segmented_mm(&a, &b, &Array::from_vec(flat, &[2, 2, 2]).unwrap()).unwrap();
    assert_eq!(y.shape(), &[2, 2, m, n]);
    let want: Vec<f64> = segs
        .iter()
        .flat_map(|&(s, e)| mm(&av, &bv, m, k, n, move |_, kk, _| if (s as usize..e as usize).contains(&kk) { 1.0 } else { 0.0 }))
        .collect();
    assert_close(&y, &want, "segmented_mm");
    let a3 = ops::zeros(&[2, 10, 10], Dtype::F32).unwrap();
    let s = Array::from_slice(&[0u32, 5, 5, 10], &[2, 2]).unwrap();
    assert!(matches!(ops::segmented_mm(&a3, &a3, &s), Err(Error::Shape(_))));
}
