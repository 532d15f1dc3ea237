//! `linalg` and `einsum` against reconstruction identities (`Q R = A`,
//! `U S Vt = A`, `A inv(A) = I`, ...), plain f64 loops, and finite
//! differences for the derivatives.

mod common;

use common::Rng;
use weft::ops::{self, SliceArg};
use weft::{linalg, transforms, Array, Dtype, Error};

fn rand(rng: &mut Rng, shape: &[usize]) -> Array {
    let n = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
    Array::from_vec(v, shape).unwrap()
}

fn f32s(a: &Array) -> Array {
    ops::astype(a, Dtype::F32).unwrap()
}

fn read(a: &Array) -> Vec<f64> {
    ops::astype(a, Dtype::F64).unwrap().to_vec::<f64>().unwrap()
}

fn close(ctx: &str, got: &Array, want: &Array, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{ctx}: shapes");
    for (i, (g, w)) in read(got).iter().zip(read(want)).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{ctx}: element {i}: {g} vs {w}");
    }
}

fn mm(a: &Array, b: &Array) -> Array {
    ops::matmul(a, b).unwrap()
}

fn t(a: &Array) -> Array {
    ops::swapaxes(a, -1, -2).unwrap()
}

fn eye_like(n: usize, dtype: Dtype) -> Array {
    ops::eye(n, n, 0, dtype).unwrap()
}

/// Symmetric positive definite `[.., n, n]`: `x x^T + n I`.
fn spd(rng: &mut Rng, batch: &[usize], n: usize) -> Array {
    let x = rand(rng, &[batch, &[n, n]].concat());
    ops::add(&mm(&x, &t(&x)), &ops::multiply(&eye_like(n, Dtype::F64), &Array::scalar(n as f64)).unwrap()).unwrap()
}

#[test]
fn inverses_and_solves_reconstruct() {
    let mut rng = Rng::new(1);
    for dtype in [Dtype::F32, Dtype::F64] {
        let tol = if dtype == Dtype::F32 { 1e-4 } else { 1e-10 };
        let a = ops::astype(&spd(&mut rng, &[3], 4), dtype).unwrap();
        let i = ops::broadcast_to(&eye_like(4, dtype), &[3, 4, 4]).unwrap();
        close("a inv(a)", &mm(&a, &linalg::inv(&a).unwrap()), &i, tol);
        let b = ops::astype(&rand(&mut rng, &[3, 4, 2]), dtype).unwrap();
        close("a solve(a, b)", &mm(&a, &linalg::solve(&a, &b).unwrap()), &b, tol);
        // A vector right-hand side broadcasts against the batch.
        let v = ops::astype(&rand(&mut rng, &[4]), dtype).unwrap();
        let x = linalg::solve(&a, &v).unwrap();
        assert_eq!(x.shape(), &[3, 4]);
        close("a solve(a, v)", &ops::squeeze(&mm(&a, &ops::expand_dims(&x, -1isize).unwrap()), -1isize).unwrap(), &ops::broadcast_to(&v, &[3, 4]).unwrap(), tol);
        for upper in [false, true] {
            let tri = if upper { ops::triu(&a, 0).unwrap() } else { ops::tril(&a, 0).unwrap() };
            let ti = linalg::tri_inv(&a, upper).unwrap();
            close("tri_inv", &mm(&tri, &ti), &i, tol);
            let kept = if upper { ops::triu(&ti, 0).unwrap() } else { ops::tril(&ti, 0).unwrap() };
            assert_eq!(read(&ti), read(&kept), "tri_inv zeroes the other triangle");
            close("solve_triangular", &mm(&tri, &linalg::solve_triangular(&a, &b, upper).unwrap()), &b, tol);
            let l = linalg::cholesky(&a, upper).unwrap();
            let back = if upper { mm(&t(&l), &l) } else { mm(&l, &t(&l)) };
            close("cholesky", &back, &a, tol);
            close("cholesky_inv", &mm(&a, &linalg::cholesky_inv(&l, upper).unwrap()), &i, tol * 10.0);
        }
    }
}

#[test]
fn factorizations_reconstruct() {
    let mut rng = Rng::new(2);
    for (m, n) in [(4, 4), (5, 3), (3, 5), (1, 4)] {
        let a = f32s(&rand(&mut rng, &[2, m, n]));
        let k = m.min(n);
        let (q, r) = linalg::qr(&a).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[2, m, k][..], &[2, k, n][..]));
        close("q r", &mm(&q, &r), &a, 1e-5);
        close("q^T q", &mm(&t(&q), &q), &ops::broadcast_to(&eye_like(k, Dtype::F32), &[2, k, k]).unwrap(), 1e-5);
        assert_eq!(read(&r), read(&ops::triu(&r, 0).unwrap()), "R is upper triangular");

        let f = linalg::svd(&a, true).unwrap();
        let (u, s, vt) = (&f[0], &f[1], &f[2]);
        assert_eq!((u.shape(), s.shape(), vt.shape()), (&[2, m, m][..], &[2, k][..], &[2, n, n][..]));
        let uk = ops::slice(u, &[SliceArg::ALL, SliceArg::ALL, SliceArg::range(0, k as isize)]).unwrap();
        let vk = ops::slice(vt, &[SliceArg::ALL, SliceArg::range(0, k as isize)]).unwrap();
        let us = ops::multiply(&uk, &ops::expand_dims(s, -2isize).unwrap()).unwrap();
        close("u s vt", &mm(&us, &vk), &a, 1e-5);
        close("u^T u", &mm(&t(u), u), &ops::broadcast_to(&eye_like(m, Dtype::F32), &[2, m, m]).unwrap(), 1e-5);
        for sv in read(s).chunks(k) {
            assert!(sv.windows(2).all(|w| w[0] >= w[1]) && sv.iter().all(|&x| x >= 0.0), "singular values {sv:?}");
        }
        close("svd values only", &linalg::svd(&a, false).unwrap()[0], s, 1e-5);

        let (p, l, uu) = linalg::lu(&a).unwrap();
        assert_eq!(p.dtype(), Dtype::U32);
        let lp = ops::take_along_axis(&l, &ops::expand_dims(&p, -1isize).unwrap(), Some(-2)).unwrap();
        close("L[P] U", &mm(&lp, &uu), &a, 1e-5);
    }
}

#[test]
fn lu_of_singular_matrices_is_lapacks() {
    // A zero column: LAPACK leaves it unscaled (no NaN), so L[P] U = A.
    let a = Array::from_vec(vec![0.0f32, 0.0, 0.0, 0.0], &[2, 2]).unwrap();
    let (p, l, u) = linalg::lu(&a).unwrap();
    assert_eq!(p.to_vec::<u32>().unwrap(), vec![0, 1]);
    assert_eq!(l.to_vec::<f32>().unwrap(), vec![1.0, 0.0, 0.0, 1.0]);
    assert_eq!(u.to_vec::<f32>().unwrap(), vec![0.0; 4]);
    let a = Array::from_vec(vec![0.0f32, 1.0, 0.0, 2.0, 0.0, 3.0, 1.0, 1.0, 1.0], &[3, 3]).unwrap();
    let (p, l, u) = linalg::lu(&a).unwrap();
    let lp = ops::take_along_axis(&l, &ops::expand_dims(&p, -1isize).unwrap(), Some(-2)).unwrap();
    close("singular L[P] U", &mm(&lp, &u), &a, 1e-6);
    // LAPACK's pivots: row i swapped with pivots[i].
    let (lu, piv) = linalg::lu_factor(&Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap()).unwrap();
    assert_eq!(piv.to_vec::<u32>().unwrap(), vec![1, 1]);
    close("lu_factor", &lu, &Array::from_vec(vec![3.0f32, 4.0, 1.0 / 3.0, 2.0 / 3.0], &[2, 2]).unwrap(), 1e-6);
}

#[test]
fn eigh_det_slogdet_pinv_cross() {
    let mut rng = Rng::new(3);
    let x = rand(&mut rng, &[2, 4, 4]);
    let a = f32s(&ops::add(&x, &t(&x)).unwrap());
    let (w, v) = linalg::eigh(&a, false).unwrap();
    close("a v = v w", &mm(&a, &v), &ops::multiply(&v, &ops::expand_dims(&w, -2isize).unwrap()).unwrap(), 1e-5);
    close("eigvalsh", &linalg::eigvalsh(&a, false).unwrap(), &w, 1e-5);
    // UPLO: only the named triangle is read.
    let lopsided = Array::from_vec(vec![1.0f64, 999.0, 2.0, 3.0], &[2, 2]).unwrap();
    let lo = read(&linalg::eigvalsh(&lopsided, false).unwrap());
    let hi = read(&linalg::eigvalsh(&lopsided, true).unwrap());
    let want = |b: f64| [2.0 - (1.0 + b * b).sqrt(), 2.0 + (1.0 + b * b).sqrt()];
    for (g, w) in lo.iter().zip(want(2.0)).chain(hi.iter().zip(want(999.0))) {
        assert!((g - w).abs() < 1e-9, "{g} vs {w}");
    }

    let m = Array::from_vec(vec![1.0f32, 2.0, 3.0, 0.0, 1.0, 4.0, 5.0, 6.0, 0.0], &[3, 3]).unwrap();
    assert!((linalg::det(&m).unwrap().item::<f32>().unwrap() - 1.0).abs() < 1e-5);
    let (s, l) = linalg::slogdet(&ops::multiply(&m, &Array::scalar(-1.0f32)).unwrap()).unwrap();
    assert_eq!(s.item::<f32>().unwrap(), -1.0);
    assert!(l.item::<f32>().unwrap().abs() < 1e-5);
    let sing = Array::from_vec(vec![1.0f32, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
    let (s, l) = linalg::slogdet(&sing).unwrap();
    assert_eq!((s.item::<f32>().unwrap(), l.item::<f32>().unwrap()), (0.0, f32::NEG_INFINITY));
    assert_eq!(linalg::det(&ops::zeros(&[0, 0], Dtype::F32).unwrap()).unwrap().item::<f32>().unwrap(), 1.0);

    let r = f32s(&rand(&mut rng, &[2, 5, 3]));
    let rp = linalg::pinv(&r).unwrap();
    assert_eq!(rp.shape(), &[2, 3, 5]);
    close("a pinv(a) a", &mm(&mm(&r, &rp), &r), &r, 1e-4);
    close("pinv of singular", &mm(&mm(&sing, &linalg::pinv(&sing).unwrap()), &sing), &sing, 1e-5);

    let a = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let b = Array::from_vec(vec![4i32, 5, 6], &[3]).unwrap();
    assert_eq!(linalg::cross(&a, &b, -1).unwrap().to_vec::<f32>().unwrap(), vec![-3.0, 6.0, -3.0]);
    assert!(matches!(linalg::cross(&ops::ones(&[1], Dtype::F32).unwrap(), &ops::ones(&[1], Dtype::F32).unwrap(), -1), Err(Error::Shape(_))));
}

#[test]
fn norms_match_loops() {
    let x = ops::reshape(&ops::arange(1.0, 7.0, 1.0, Dtype::F32).unwrap(), &[2, 3]).unwrap();
    let v: Vec<f64> = (1..=6).map(f64::from).collect();
    let g = |o, ax: &[isize]| linalg::norm(&x, o, Some(ax), false).unwrap();
    use linalg::NormOrd::*;
    let fro = v.iter().map(|e| e * e).sum::<f64>().sqrt();
    close("fro", &g(Some(Fro), &[0, 1]), &Array::scalar(fro), 1e-6);
    close("default flattened", &linalg::norm(&x, None, None, false).unwrap(), &Array::scalar(fro), 1e-6);
    close("1 (max column sum)", &g(Some(P(1.0)), &[0, 1]), &Array::scalar(9.0), 1e-6);
    close("inf (max row sum)", &g(Some(P(f64::INFINITY)), &[0, 1]), &Array::scalar(15.0), 1e-6);
    close("-inf, axes swapped (min column sum)", &g(Some(P(f64::NEG_INFINITY)), &[1, 0]), &Array::scalar(5.0), 1e-6);
    close("vector 3-norm", &g(Some(P(3.0)), &[1]), &Array::from_vec(vec![36f64.cbrt(), 405f64.cbrt()], &[2]).unwrap(), 1e-6);
    close("vector 0-norm", &g(Some(P(0.0)), &[0]), &Array::from_vec(vec![2.0, 2.0, 2.0], &[3]).unwrap(), 0.0);
    let s = read(&linalg::svd(&x, false).unwrap()[0]);
    close("nuc", &g(Some(Nuc), &[0, 1]), &Array::scalar(s[0] + s[1]), 1e-5);
    close("2", &g(Some(P(2.0)), &[0, 1]), &Array::scalar(s[0]), 1e-5);
    assert_eq!(linalg::norm(&x, Some(P(2.0)), Some(&[0, 1]), true).unwrap().shape(), &[1, 1]);
    assert!(matches!(linalg::norm(&x, Some(P(3.0)), Some(&[0, 1]), false), Err(Error::InvalidArgument(_))));
}

/// A failed evaluation whose root cause is `Error::InvalidArgument`.
fn invalid(r: weft::Result<()>) -> bool {
    match r {
        Err(Error::InvalidArgument(_)) => true,
        Err(Error::InputFailed(e)) => matches!(*e, Error::InvalidArgument(_)),
        _ => false,
    }
}

#[test]
fn errors_are_errors_not_panics() {
    let sing = Array::from_vec(vec![1.0f32, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
    assert!(invalid(linalg::inv(&sing).unwrap().eval()));
    assert!(invalid(linalg::solve(&sing, &ops::ones(&[2], Dtype::F32).unwrap()).unwrap().eval()));
    let not_pd = Array::from_vec(vec![1.0f32, 2.0, 2.0, 1.0], &[2, 2]).unwrap();
    assert!(invalid(linalg::cholesky(&not_pd, false).unwrap().eval()));
    let zero_diag = Array::from_vec(vec![0.0f32, 0.0, 1.0, 1.0], &[2, 2]).unwrap();
    assert!(invalid(linalg::tri_inv(&zero_diag, false).unwrap().eval()));
    assert!(matches!(linalg::inv(&ops::ones(&[2, 3], Dtype::F32).unwrap()), Err(Error::Shape(_))));
    assert!(matches!(linalg::qr(&ops::ones(&[3], Dtype::F32).unwrap()), Err(Error::Shape(_))));
    assert!(matches!(linalg::qr(&ops::ones(&[2, 2], Dtype::I32).unwrap()), Err(Error::Dtype(_))));
    assert!(matches!(linalg::inv(&ops::ones(&[2, 2], Dtype::F16).unwrap()), Err(Error::Dtype(_))));
    assert!(matches!(linalg::solve(&sing, &ops::ones(&[3], Dtype::F32).unwrap()), Err(Error::Shape(_))));
    // Zero-size matrices: NumPy's shapes, identity factors for svd.
    let f = linalg::svd(&ops::zeros(&[2, 3, 0], Dtype::F32).unwrap(), true).unwrap();
    assert_eq!((f[0].shape(), f[1].shape(), f[2].shape()), (&[2, 3, 3][..], &[2, 0][..], &[2, 0, 0][..]));
    assert_eq!(read(&f[0]), read(&ops::broadcast_to(&eye_like(3, Dtype::F32), &[2, 3, 3]).unwrap()));
    let (q, r) = linalg::qr(&ops::zeros(&[5, 0], Dtype::F32).unwrap()).unwrap();
    assert_eq!((q.shape(), r.shape()), (&[5, 0][..], &[0, 0][..]));
    q.eval().unwrap();
}

/// `f`'s gradient at `x` (f64) against central differences of `sum(f(x) * w)`.
fn check_grad(ctx: &str, x: &Array, f: impl Fn(&Array) -> Array) {
    let mut rng = Rng::new(99);
    let probe = f(x);
    let w = rand(&mut rng, probe.shape());
    let loss = |y: &Array| ops::sum(&ops::multiply(&f(y), &w).unwrap(), weft::Axes::All, false).unwrap().item::<f64>().unwrap();
    let g = transforms::grad(|v| Ok(vec![ops::sum(&ops::multiply(&f(&v[0]), &w)?, weft::Axes::All, false)?]), &[x.clone()], &[0]).unwrap();
    let got = read(&g[0]);
    let base = read(x);
    let h = 1e-6;
    for i in 0..base.len() {
        let at = |d: f64| {
            let mut v = base.clone();
            v[i] += d;
            loss(&Array::from_vec(v, x.shape()).unwrap())
        };
        let fd = (at(h) - at(-h)) / (2.0 * h);
        assert!((got[i] - fd).abs() < 1e-5 * (1.0 + fd.abs()), "{ctx}: d/dx[{i}]: {} vs finite difference {fd}", got[i]);
    }
}

/// A symmetric argument: the function sees `(x + x^T) / 2`, so finite
/// differences of any entry match the symmetric cotangent rules.
fn symmetrized(x: &Array) -> Array {
    ops::multiply(&ops::add(x, &t(x)).unwrap(), &Array::scalar(0.5)).unwrap()
}

#[test]
fn derivatives_match_finite_differences() {
    let mut rng = Rng::new(4);
    let a = spd(&mut rng, &[2], 3);
    let b = rand(&mut rng, &[2, 3, 2]);
    check_grad("inv", &a, |x| linalg::inv(x).unwrap());
    check_grad("solve wrt a", &a, |x| linalg::solve(x, &b).unwrap());
    check_grad("solve wrt b", &b, |y| linalg::solve(&a, y).unwrap());
    check_grad("solve_triangular", &a, |x| linalg::solve_triangular(x, &b, true).unwrap());
    check_grad("tri_inv", &a, |x| linalg::tri_inv(x, false).unwrap());
    check_grad("cholesky", &a, |x| linalg::cholesky(&symmetrized(x), false).unwrap());
    check_grad("cholesky upper", &a, |x| linalg::cholesky(&symmetrized(x), true).unwrap());
    let tall = rand(&mut rng, &[2, 4, 3]);
    check_grad("qr Q", &tall, |x| linalg::qr(x).unwrap().0);
    check_grad("qr R", &tall, |x| linalg::qr(x).unwrap().1);
    for shape in [[3, 3], [4, 3], [3, 4]] {
        let x0 = rand(&mut rng, &shape);
        check_grad("svd S", &x0, |x| linalg::svd(x, false).unwrap().remove(0));
        // Singular vectors have a sign freedom; U diag(S) Vt and U Vt do not.
        check_grad("svd U S Vt", &x0, |x| {
            let f = linalg::svd(x, true).unwrap();
            let k = shape[0].min(shape[1]) as isize;
            let u = ops::slice(&f[0], &[SliceArg::ALL, SliceArg::range(0, k)]).unwrap();
            let vt = ops::slice(&f[2], &[SliceArg::range(0, k)]).unwrap();
            mm(&u, &vt)
        });
    }
    let s = symmetrized(&rand(&mut rng, &[2, 3, 3]));
    check_grad("eigvalsh", &s, |x| linalg::eigvalsh(&symmetrized(x), false).unwrap());
    check_grad("eigh V diag(w) V^T-like", &s, |x| {
        let (w, v) = linalg::eigh(&symmetrized(x), false).unwrap();
        // v v^T w-weighted: invariant to the eigenvectors' signs.
        let vw = ops::multiply(&v, &ops::expand_dims(&ops::exp(&w).unwrap(), -2isize).unwrap()).unwrap();
        mm(&vw, &t(&v))
    });
    assert!(matches!(
        transforms::grad(|v| Ok(vec![ops::sum(&linalg::lu(&v[0])?.2, weft::Axes::All, false)?]), &[a.clone()], &[0]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn vmap_over_any_axis() {
    let mut rng = Rng::new(5);
    let a = f32s(&rand(&mut rng, &[3, 4, 4]));
    let moved = ops::moveaxis(&a, 0, 1).unwrap();
    let inv = transforms::vmap(|x| Ok(vec![linalg::inv(&x[0])?]), &[moved], &[Some(1)], &[0]).unwrap();
    close("vmap inv", &inv[0], &linalg::inv(&a).unwrap(), 1e-4);
    let f = transforms::vmap(|x| linalg::svd(&x[0], true), &[a.clone()], &[Some(2)], &[0, 0, 0]).unwrap();
    assert_eq!(f[0].shape(), &[4, 3, 3]);
    close("vmap svd", &f[1], &linalg::svd(&ops::moveaxis(&a, 2, 0).unwrap(), false).unwrap()[0], 1e-5);
}

/// `einsum` against an f64 loop over every index assignment.
fn einsum_loop(spec: &str, ops_: &[(Vec<usize>, Vec<f64>)]) -> (Vec<usize>, Vec<f64>) {
    let (lhs, out) = spec.split_once("->").unwrap();
    let terms: Vec<&str> = lhs.split(',').collect();
    let mut size = std::collections::BTreeMap::new();
    for (term, (shape, _)) in terms.iter().zip(ops_) {
        for (ch, &d) in term.chars().zip(shape) {
            let e = size.entry(ch).or_insert(d);
            *e = (*e).max(d);
        }
    }
    let letters: Vec<char> = size.keys().copied().collect();
    let out_shape: Vec<usize> = out.chars().map(|c| size[&c]).collect();
    let mut res = vec![0.0; out_shape.iter().product()];
    let total: usize = letters.iter().map(|c| size[c]).product();
    for flat in 0..total {
        let mut idx = std::collections::BTreeMap::new();
        let mut r = flat;
        for c in letters.iter().rev() {
            idx.insert(*c, r % size[c]);
            r /= size[c];
        }
        let mut p = 1.0;
        for (term, (shape, vals)) in terms.iter().zip(ops_) {
            let mut off = 0;
            for (ch, &d) in term.chars().zip(shape) {
                off = off * d + if d == 1 { 0 } else { idx[&ch] };
            }
            p *= vals[off];
        }
        let o = out.chars().zip(&out_shape).fold(0, |acc, (ch, &d)| acc * d + idx[&ch]);
        res[o] += p;
    }
    (out_shape, res)
}

#[test]
fn einsum_matches_loops() {
    let mut rng = Rng::new(6);
    let cases: &[(&str, &[&[usize]])] = &[
        ("ii->i", &[&[3, 3]]),
        ("ii->", &[&[3, 3]]),
        ("iijj->ij", &[&[2, 2, 3, 3]]),
        ("ijk->kij", &[&[2, 3, 4]]),
        ("ij,jk->ik", &[&[2, 3], &[3, 4]]),
        ("ij,jk->ki", &[&[2, 3], &[3, 4]]),
        ("i,j->ij", &[&[3], &[4]]),
        ("ab,bc->c", &[&[5, 1], &[8, 2]]),
        ("abcd,fgda->bfca", &[&[2, 3, 2, 4], &[2, 3, 4, 2]]),
        ("ijk,lmk,ijf->lf", &[&[2, 3, 2], &[2, 2, 2], &[2, 3, 3]]),
        ("aab,fa,df,ecc->bde", &[&[2, 2, 3], &[2, 2], &[4, 2], &[2, 3, 3]]),
        ("ab,ab,c->c", &[&[2, 3], &[2, 3], &[4]]),
        ("bij,bjk->bik", &[&[1, 3, 4], &[2, 4, 5]]),
    ];
    for (spec, shapes) in cases {
        let vals: Vec<(Vec<usize>, Vec<f64>)> = shapes
            .iter()
            .map(|s| (s.to_vec(), (0..s.iter().product()).map(|_| rng.uniform(-1.0, 1.0)).collect()))
            .collect();
        let arrays: Vec<Array> = vals.iter().map(|(s, v)| Array::from_vec(v.clone(), s).unwrap()).collect();
        let got = ops::einsum(spec, &arrays).unwrap();
        let (shape, want) = einsum_loop(spec, &vals);
        assert_eq!(got.shape(), &shape[..], "{spec}");
        close(spec, &got, &Array::from_vec(want, &shape).unwrap(), 1e-12);
    }
    // Implicit output and ellipses.
    let a = rand(&mut rng, &[2, 3, 4]);
    let b = rand(&mut rng, &[4, 5]);
    close("...j,jk", &ops::einsum("...j,jk", &[a.clone(), b.clone()]).unwrap(), &mm(&a, &b), 1e-12);
    close("implicit ij,jk", &ops::einsum("ij,jk", &[b.clone(), t(&b)]).unwrap(), &mm(&b, &t(&b)), 1e-12);
    // Integers: no matmul, same sums.
    let ia = ops::reshape(&ops::arange(0.0, 6.0, 1.0, Dtype::I32).unwrap(), &[2, 3]).unwrap();
    let r = ops::einsum("ij,kj->ik", &[ia.clone(), ia]).unwrap();
    assert_eq!((r.dtype(), r.to_vec::<i32>().unwrap()), (Dtype::I32, vec![5, 14, 14, 50]));
}

#[test]
fn einsum_errors_and_paths() {
    let a = ops::ones(&[2, 2], Dtype::F32).unwrap();
    for bad in ["i1,jk", "ij->ii", "ij->k", "ijk", "a...b...", "ij,jk"] {
        let r = ops::einsum(bad, &[a.clone()]);
        assert!(matches!(r, Err(Error::InvalidArgument(_) | Error::Shape(_))), "{bad}: {r:?}");
    }
    assert!(matches!(ops::einsum("ii", &[ops::ones(&[2, 3], Dtype::F32).unwrap()]), Err(Error::Shape(_))));
    assert!(matches!(ops::einsum("ij,jk", &[ops::ones(&[2, 3], Dtype::F32).unwrap(), a.clone()]), Err(Error::Shape(_))));
    let z = |s: &[usize]| ops::zeros(s, Dtype::F32).unwrap();
    let path = |spec: &str, xs: &[Array]| ops::einsum_path(spec, xs).unwrap().0;
    assert_eq!(path("ii", &[z(&[5, 5])]), vec![vec![0]]);
    assert_eq!(path("ij,jk", &[z(&[5, 8]), z(&[8, 3])]), vec![vec![0, 1]]);
    assert_eq!(path("ij,jk,kl", &[z(&[5, 8]), z(&[8, 3]), z(&[3, 7])]), vec![vec![0, 1], vec![0, 1]]);
    assert_eq!(path("ij,jk,kl", &[z(&[5, 8]), z(&[8, 10]), z(&[10, 7])]), vec![vec![1, 2], vec![0, 1]]);
}
