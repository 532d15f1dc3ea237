//! complex64: arithmetic, the parts (`real`, `imag`, `conjugate`, `abs`),
//! `astype`, `matmul`, and the FFTs against a naive DFT computed in `f64`
//! here (odd and even lengths, non-last axes, `n`/`s` padding and cutting,
//! the `norm` modes).

mod common;

use common::Rng;
use std::f64::consts::PI;
use weft::ops::{self, fft, fft::Norm};
use weft::{Array, Complex64, Dtype, Error};

/// A complex number in f64, for the references.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Z(f64, f64);

impl Z {
    fn add(self, o: Z) -> Z {
        Z(self.0 + o.0, self.1 + o.1)
    }
    fn sub(self, o: Z) -> Z {
        Z(self.0 - o.0, self.1 - o.1)
    }
    fn mul(self, o: Z) -> Z {
        Z(self.0 * o.0 - self.1 * o.1, self.0 * o.1 + self.1 * o.0)
    }
    fn div(self, o: Z) -> Z {
        let d = o.0 * o.0 + o.1 * o.1;
        Z((self.0 * o.0 + self.1 * o.1) / d, (self.1 * o.0 - self.0 * o.1) / d)
    }
    fn scale(self, s: f64) -> Z {
        Z(self.0 * s, self.1 * s)
    }
    fn conj(self) -> Z {
        Z(self.0, -self.1)
    }
    fn abs(self) -> f64 {
        self.0.hypot(self.1)
    }
    fn expi(theta: f64) -> Z {
        Z(theta.cos(), theta.sin())
    }
}

fn rand_z(rng: &mut Rng, n: usize) -> Vec<Z> {
    (0..n).map(|_| Z(rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0))).collect()
}

fn rand_r(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

fn carr(v: &[Z], shape: &[usize]) -> Array {
    let v: Vec<Complex64> = v.iter().map(|z| Complex64::new(z.0 as f32, z.1 as f32)).collect();
    Array::from_vec(v, shape).unwrap()
}

fn rarr(v: &[f64], shape: &[usize]) -> Array {
    let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    Array::from_vec(v, shape).unwrap()
}

fn read_c(a: &Array) -> Vec<Z> {
    assert_eq!(a.dtype(), Dtype::C64, "expected complex64");
    a.to_vec::<Complex64>().unwrap().into_iter().map(|z| Z(z.re() as f64, z.im() as f64)).collect()
}

fn read_r(a: &Array) -> Vec<f64> {
    assert_eq!(a.dtype(), Dtype::F32, "expected float32");
    a.to_vec::<f32>().unwrap().into_iter().map(|x| x as f64).collect()
}

/// `|got - want| <= tol * (1 + max |want|)` element by element.
fn close_c(ctx: &str, got: &Array, shape: &[usize], want: &[Z], tol: f64) {
    assert_eq!(got.shape(), shape, "{ctx}: shape");
    let g = read_c(got);
    assert_eq!(g.len(), want.len(), "{ctx}: size");
    let scale = 1.0 + want.iter().map(|z| z.abs()).fold(0.0, f64::max);
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(a.sub(*b).abs() <= tol * scale, "{ctx}: element {i}: {a:?} vs {b:?}");
    }
}

fn close_r(ctx: &str, got: &Array, shape: &[usize], want: &[f64], tol: f64) {
    assert_eq!(got.shape(), shape, "{ctx}: shape");
    let g = read_r(got);
    assert_eq!(g.len(), want.len(), "{ctx}: size");
    let scale = 1.0 + want.iter().map(|x| x.abs()).fold(0.0, f64::max);
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * scale, "{ctx}: element {i}: {a} vs {b}");
    }
}

/// Values rounded to f32, as the arrays hold them (so references see the
/// same inputs).
fn f32_round(v: &[Z]) -> Vec<Z> {
    v.iter().map(|z| Z(z.0 as f32 as f64, z.1 as f32 as f64)).collect()
}

// ---- the naive references ---------------------------------------------

/// Row-major strides-free helpers: (outer, len, inner) of `axis`.
fn lines(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// `v` (of `shape`) with `axis` cut or zero-padded to `n`.
fn resize(v: &[Z], shape: &[usize], axis: usize, n: usize) -> (Vec<Z>, Vec<usize>) {
    let (outer, len, inner) = lines(shape, axis);
    let mut out = vec![Z(0.0, 0.0); outer * n * inner];
    for o in 0..outer {
        for k in 0..n.min(len) {
            for i in 0..inner {
                out[(o * n + k) * inner + i] = v[(o * len + k) * inner + i];
            }
        }
    }
    let mut s = shape.to_vec();
    s[axis] = n;
    (out, s)
}

/// The DFT along `axis` by its definition, `sum_j x_j e^(-+2 pi i jk/n)`,
/// the inverse one divided by `n`.
fn dft(v: &[Z], shape: &[usize], axis: usize, inverse: bool) -> Vec<Z> {
    let (outer, n, inner) = lines(shape, axis);
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut out = vec![Z(0.0, 0.0); v.len()];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..n {
                let mut acc = Z(0.0, 0.0);
                for j in 0..n {
                    let w = Z::expi(sign * 2.0 * PI * ((j * k) % n) as f64 / n as f64);
                    acc = acc.add(v[(o * n + j) * inner + i].mul(w));
                }
                out[(o * n + k) * inner + i] = if inverse { acc.scale(1.0 / n as f64) } else { acc };
            }
        }
    }
    out
}

/// `fftn`/`ifftn` by the definition: each axis resized to its `n`, then transformed.
fn dftn(v: &[Z], shape: &[usize], axes: &[usize], ns: &[usize], inverse: bool) -> (Vec<Z>, Vec<usize>) {
    let (mut v, mut shape) = (v.to_vec(), shape.to_vec());
    for (&ax, &n) in axes.iter().zip(ns) {
        (v, shape) = resize(&v, &shape, ax, n);
        v = dft(&v, &shape, ax, inverse);
    }
    (v, shape)
}

fn real_to_z(v: &[f64]) -> Vec<Z> {
    v.iter().map(|&x| Z(x as f32 as f64, 0.0)).collect()
}

/// `rfftn`: the full transform, the last axis cut to `n / 2 + 1`.
fn rdftn(v: &[f64], shape: &[usize], axes: &[usize], ns: &[usize]) -> (Vec<Z>, Vec<usize>) {
    let (v, shape) = dftn(&real_to_z(v), shape, axes, ns, false);
    let last = *axes.last().unwrap();
    let keep = ns.last().unwrap() / 2 + 1;
    resize(&v, &shape, last, keep)
}

/// `irfftn`: the other axes inverse-transformed, then the last axis
/// extended Hermitian to `n` (`X[n - k] = conj(X[k])`) and
/// inverse-transformed; the real part.
fn irdftn(v: &[Z], shape: &[usize], axes: &[usize], ns: &[usize]) -> (Vec<f64>, Vec<usize>) {
    let (last, others) = axes.split_last().unwrap();
    let (n, other_ns) = ns.split_last().unwrap();
    let (v, shape) = dftn(v, shape, others, other_ns, true);
    let (v, shape) = resize(&v, &shape, *last, n / 2 + 1);
    let (outer, m, inner) = lines(&shape, *last);
    let mut full = vec![Z(0.0, 0.0); outer * n * inner];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..*n {
                full[(o * n + k) * inner + i] = if k < m { v[(o * m + k) * inner + i] } else { v[(o * m + (n - k)) * inner + i].conj() };
            }
        }
    }
    let mut s = shape.clone();
    s[*last] = *n;
    let out = dft(&full, &s, *last, true);
    (out.iter().map(|z| z.0).collect(), s)
}

// ---- arithmetic and the parts -----------------------------------------

#[test]
fn arithmetic_matches_f64() {
    let mut rng = Rng::new(7);
    let (x, y) = (f32_round(&rand_z(&mut rng, 24)), f32_round(&rand_z(&mut rng, 24)));
    let (a, b) = (carr(&x, &[4, 6]), carr(&y, &[4, 6]));
    let pair = |f: fn(Z, Z) -> Z| x.iter().zip(&y).map(|(p, q)| f(*p, *q)).collect::<Vec<_>>();
    close_c("add", &ops::add(&a, &b).unwrap(), &[4, 6], &pair(Z::add), 1e-6);
    close_c("subtract", &ops::subtract(&a, &b).unwrap(), &[4, 6], &pair(Z::sub), 1e-6);
    close_c("multiply", &ops::multiply(&a, &b).unwrap(), &[4, 6], &pair(Z::mul), 1e-6);
    let dy: Vec<Z> = y.iter().map(|q| if q.abs() < 0.1 { Z(0.5, q.1) } else { *q }).collect();
    let pair_d: Vec<Z> = x.iter().zip(&dy).map(|(p, q)| p.div(*q)).collect();
    close_c("divide", &ops::divide(&a, &carr(&dy, &[4, 6])).unwrap(), &[4, 6], &pair_d, 1e-5);
    let neg: Vec<Z> = x.iter().map(|z| z.scale(-1.0)).collect();
    close_c("negative", &ops::negative(&a).unwrap(), &[4, 6], &neg, 0.0);

    // Broadcasting, and a real operand promoted to complex64.
    let r = rand_r(&mut rng, 6);
    let rz = real_to_z(&r);
    let want: Vec<Z> = x.iter().enumerate().map(|(i, z)| z.mul(rz[i % 6])).collect();
    let got = ops::multiply(&a, &rarr(&r, &[6])).unwrap();
    close_c("complex * float32 row", &got, &[4, 6], &want, 1e-6);
    let want: Vec<Z> = x.iter().map(|z| z.add(Z(2.0, 0.0))).collect();
    close_c("complex + int32 scalar", &ops::add(&a, &Array::scalar(2i32)).unwrap(), &[4, 6], &want, 1e-6);

    // Reductions that have a complex meaning.
    let s = x.iter().fold(Z(0.0, 0.0), |acc, z| acc.add(*z));
    close_c("sum", &ops::sum(&a, weft::Axes::All, false).unwrap(), &[], &[s], 1e-5);
    let p = x[..5].iter().fold(Z(1.0, 0.0), |acc, z| acc.mul(*z));
    close_c("prod", &ops::prod(&carr(&x[..5], &[5]), weft::Axes::All, false).unwrap(), &[], &[p], 1e-5);

    // exp(i pi) = -1.
    let e = ops::exp(&carr(&[Z(0.0, PI)], &[1])).unwrap();
    close_c("exp(i pi)", &e, &[1], &[Z(-1.0, 0.0)], 1e-6);
    // Equality compares both parts.
    let eq = ops::equal(&carr(&[Z(1.0, 2.0), Z(1.0, 2.0)], &[2]), &carr(&[Z(1.0, 2.0), Z(1.0, -2.0)], &[2])).unwrap();
    assert_eq!(eq.to_vec::<bool>().unwrap(), vec![true, false]);
}

#[test]
fn parts_abs_and_construction() {
    let mut rng = Rng::new(11);
    let x = f32_round(&rand_z(&mut rng, 10));
    let a = carr(&x, &[2, 5]);
    close_r("real", &ops::real(&a).unwrap(), &[2, 5], &x.iter().map(|z| z.0).collect::<Vec<_>>(), 0.0);
    close_r("imag", &ops::imag(&a).unwrap(), &[2, 5], &x.iter().map(|z| z.1).collect::<Vec<_>>(), 0.0);
    close_c("conjugate", &ops::conjugate(&a).unwrap(), &[2, 5], &x.iter().map(|z| z.conj()).collect::<Vec<_>>(), 0.0);
    close_r("abs", &ops::abs(&a).unwrap(), &[2, 5], &x.iter().map(|z| z.abs()).collect::<Vec<_>>(), 1e-6);
    // abs does not overflow where |re|^2 does in f32.
    let big = ops::abs(&carr(&[Z(3e30, 4e30)], &[1])).unwrap();
    close_r("abs of a large value", &big, &[1], &[5e30], 1e-6);

    // complex(re, im), broadcast.
    let re = rand_r(&mut rng, 3);
    let im = rand_r(&mut rng, 2);
    let z = ops::complex(&rarr(&re, &[1, 3]), &rarr(&im, &[2, 1])).unwrap();
    let want: Vec<Z> = (0..6).map(|i| Z(re[i % 3] as f32 as f64, im[i / 3] as f32 as f64)).collect();
    close_c("complex(re, im)", &z, &[2, 3], &want, 0.0);

    // Real arrays: real and conjugate are the array, imag is zeros.
    let r = rarr(&re, &[3]);
    close_r("real of float32", &ops::real(&r).unwrap(), &[3], &real_to_z(&re).iter().map(|z| z.0).collect::<Vec<_>>(), 0.0);
    close_r("imag of float32", &ops::imag(&r).unwrap(), &[3], &[0.0; 3], 0.0);
}

#[test]
fn astype_between_complex_and_real() {
    let x = vec![Z(1.5, -2.0), Z(-3.25, 4.0), Z(0.0, 1.0)];
    let a = carr(&x, &[3]);
    // Complex to real keeps the real part.
    assert_eq!(ops::astype(&a, Dtype::F32).unwrap().to_vec::<f32>().unwrap(), vec![1.5, -3.25, 0.0]);
    assert_eq!(ops::astype(&a, Dtype::F64).unwrap().to_vec::<f64>().unwrap(), vec![1.5, -3.25, 0.0]);
    assert_eq!(ops::astype(&a, Dtype::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, -3, 0]);
    // Real to complex: imaginary part 0.
    let r = Array::from_vec(vec![1i32, -7, 3], &[3]).unwrap();
    close_c("int32 -> complex64", &ops::astype(&r, Dtype::C64).unwrap(), &[3], &[Z(1.0, 0.0), Z(-7.0, 0.0), Z(3.0, 0.0)], 0.0);
    let h = Array::from_vec(vec![0.5f64, -2.0], &[2]).unwrap();
    close_c("float64 -> complex64", &ops::astype(&h, Dtype::C64).unwrap(), &[2], &[Z(0.5, 0.0), Z(-2.0, 0.0)], 0.0);
    // complex64 -> complex64 is the array.
    close_c("complex64 -> complex64", &ops::astype(&a, Dtype::C64).unwrap(), &[3], &x, 0.0);
}

#[test]
fn matmul_complex() {
    let mut rng = Rng::new(3);
    let (b, m, k, n) = (2, 3, 5, 4);
    let x = f32_round(&rand_z(&mut rng, b * m * k));
    let y = f32_round(&rand_z(&mut rng, k * n));
    let got = ops::matmul(&carr(&x, &[b, m, k]), &carr(&y, &[k, n])).unwrap();
    let mut want = vec![Z(0.0, 0.0); b * m * n];
    for bi in 0..b {
        for i in 0..m {
            for j in 0..n {
                want[(bi * m + i) * n + j] = (0..k).fold(Z(0.0, 0.0), |acc, t| acc.add(x[(bi * m + i) * k + t].mul(y[t * n + j])));
            }
        }
    }
    close_c("matmul", &got, &[b, m, n], &want, 1e-5);
    // A transposed (strided) operand, and a real one promoted to complex.
    let yt = ops::transpose(&carr(&y, &[k, n]), &[1, 0]).unwrap();
    let got = ops::matmul(&carr(&x[..m * k], &[m, k]), &ops::transpose(&yt, &[1, 0]).unwrap()).unwrap();
    close_c("matmul of a transposed operand", &got, &[m, n], &want[..m * n], 1e-5);
    let r = rand_r(&mut rng, k * n);
    let rz = real_to_z(&r);
    let got = ops::matmul(&carr(&x[..m * k], &[m, k]), &rarr(&r, &[k, n])).unwrap();
    let want: Vec<Z> = (0..m * n).map(|ij| (0..k).fold(Z(0.0, 0.0), |acc, t| acc.add(x[(ij / n) * k + t].mul(rz[t * n + ij % n])))).collect();
    close_c("complex @ float32", &got, &[m, n], &want, 1e-5);
    // Matrix-vector.
    let v = f32_round(&rand_z(&mut rng, k));
    let got = ops::matmul(&carr(&x[..m * k], &[m, k]), &carr(&v, &[k])).unwrap();
    let want: Vec<Z> = (0..m).map(|i| (0..k).fold(Z(0.0, 0.0), |acc, t| acc.add(x[i * k + t].mul(v[t])))).collect();
    close_c("matrix @ vector", &got, &[m], &want, 1e-5);
}

#[test]
fn ops_without_a_complex_meaning_are_errors() {
    let a = carr(&[Z(1.0, 2.0), Z(3.0, -1.0)], &[2]);
    let dtype_err = |what: &str, r: weft::Result<Array>| match r {
        Err(Error::Dtype(_)) => {}
        other => panic!("{what}: expected Error::Dtype, got {other:?}"),
    };
    dtype_err("maximum", ops::maximum(&a, &a));
    dtype_err("less", ops::less(&a, &a));
    dtype_err("floor", ops::floor(&a));
    dtype_err("argmax", ops::argmax(&a, None, false));
    dtype_err("cummax", ops::cummax(&a, Some(0), false, true));
    dtype_err("rfft of complex", fft::rfft(&a, None, -1, Norm::Backward));
}

// ---- FFTs -------------------------------------------------------------

const LENGTHS: [usize; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16];

#[test]
fn fft_and_ifft_match_the_dft() {
    let mut rng = Rng::new(5);
    for n in LENGTHS {
        let x = f32_round(&rand_z(&mut rng, 2 * n));
        let a = carr(&x, &[2, n]);
        let y = fft::fft(&a, None, -1, Norm::Backward).unwrap();
        close_c(&format!("fft n={n}"), &y, &[2, n], &dft(&x, &[2, n], 1, false), 1e-5);
        let yi = fft::ifft(&a, None, -1, Norm::Backward).unwrap();
        close_c(&format!("ifft n={n}"), &yi, &[2, n], &dft(&x, &[2, n], 1, true), 1e-5);
        let back = fft::ifft(&y, None, -1, Norm::Backward).unwrap();
        close_c(&format!("ifft(fft(x)) n={n}"), &back, &[2, n], &x, 1e-5);
        // A real input is converted to complex64.
        let r = rand_r(&mut rng, n);
        close_c(&format!("fft of float32 n={n}"), &fft::fft(&rarr(&r, &[n]), None, 0, Norm::Backward).unwrap(), &[n], &dft(&real_to_z(&r), &[n], 0, false), 1e-5);
    }
}

#[test]
fn fft_along_a_non_last_axis() {
    let mut rng = Rng::new(9);
    for n in [5usize, 8] {
        let shape = [3, n, 4];
        let x = f32_round(&rand_z(&mut rng, 3 * n * 4));
        let a = carr(&x, &shape);
        close_c("fft axis 1", &fft::fft(&a, None, 1, Norm::Backward).unwrap(), &shape, &dft(&x, &shape, 1, false), 1e-5);
        close_c("fft axis -3", &fft::fft(&a, None, -3, Norm::Backward).unwrap(), &shape, &dft(&x, &shape, 0, false), 1e-5);
        close_c("ifft axis 0", &fft::ifft(&a, None, 0, Norm::Backward).unwrap(), &shape, &dft(&x, &shape, 0, true), 1e-5);
        // A transposed (non-contiguous) input.
        let t = ops::transpose(&a, &[2, 1, 0]).unwrap();
        let xt = t.to_vec::<Complex64>().unwrap().into_iter().map(|z| Z(z.re() as f64, z.im() as f64)).collect::<Vec<_>>();
        let ts = [4, n, 3];
        close_c("fft of a transpose", &fft::fft(&t, None, 1, Norm::Backward).unwrap(), &ts, &dft(&xt, &ts, 1, false), 1e-5);
        // rfft / irfft along axis 1.
        let r = rand_r(&mut rng, 3 * n * 4);
        let (want, ws) = rdftn(&r, &shape, &[1], &[n]);
        let y = fft::rfft(&rarr(&r, &shape), None, 1, Norm::Backward).unwrap();
        close_c("rfft axis 1", &y, &ws, &want, 1e-5);
        let back = fft::irfft(&y, Some(n), 1, Norm::Backward).unwrap();
        close_r("irfft(rfft(x)) axis 1", &back, &shape, &real_to_z(&r).iter().map(|z| z.0).collect::<Vec<_>>(), 1e-5);
    }
}

#[test]
fn n_pads_and_truncates() {
    let mut rng = Rng::new(13);
    let x = f32_round(&rand_z(&mut rng, 2 * 6));
    let a = carr(&x, &[2, 6]);
    for n in [1usize, 3, 6, 8, 11] {
        let (want, ws) = dftn(&x, &[2, 6], &[1], &[n], false);
        close_c(&format!("fft n={n} of 6"), &fft::fft(&a, Some(n), -1, Norm::Backward).unwrap(), &ws, &want, 1e-5);
        let (want, ws) = dftn(&x, &[2, 6], &[0], &[n], true);
        close_c(&format!("ifft n={n} of 2 along axis 0"), &fft::ifft(&a, Some(n), 0, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    }
    let r = rand_r(&mut rng, 7);
    for n in [2usize, 4, 7, 9, 10] {
        let (want, ws) = rdftn(&r, &[7], &[0], &[n]);
        close_c(&format!("rfft n={n} of 7"), &fft::rfft(&rarr(&r, &[7]), Some(n), -1, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    }
    // irfft: m = 5 frequencies, to n of either parity (the input is cut
    // or padded to n / 2 + 1).
    let h = f32_round(&rand_z(&mut rng, 5));
    for n in [1usize, 2, 5, 7, 8, 9, 13] {
        let (want, ws) = irdftn(&h, &[5], &[0], &[n]);
        close_r(&format!("irfft n={n} of 5"), &fft::irfft(&carr(&h, &[5]), Some(n), -1, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    }
    // The default n of irfft is 2 (m - 1).
    let (want, ws) = irdftn(&h, &[5], &[0], &[8]);
    close_r("irfft default n", &fft::irfft(&carr(&h, &[5]), None, -1, Norm::Backward).unwrap(), &ws, &want, 1e-5);
}

#[test]
fn rfft_irfft_round_trip_odd_and_even() {
    let mut rng = Rng::new(17);
    for n in LENGTHS {
        let r = rand_r(&mut rng, 3 * n);
        let a = rarr(&r, &[3, n]);
        let y = fft::rfft(&a, None, -1, Norm::Backward).unwrap();
        let (want, ws) = rdftn(&r, &[3, n], &[1], &[n]);
        close_c(&format!("rfft n={n}"), &y, &ws, &want, 1e-5);
        let back = fft::irfft(&y, Some(n), -1, Norm::Backward).unwrap();
        close_r(&format!("irfft(rfft(x), n) n={n}"), &back, &[3, n], &real_to_z(&r).iter().map(|z| z.0).collect::<Vec<_>>(), 1e-5);
    }
}

#[test]
fn nd_transforms_match_the_dft() {
    let mut rng = Rng::new(19);
    let shape = [3, 4, 5];
    let x = f32_round(&rand_z(&mut rng, 60));
    let a = carr(&x, &shape);
    let r = rand_r(&mut rng, 60);
    let ra = rarr(&r, &shape);

    let (want, ws) = dftn(&x, &shape, &[0, 1, 2], &[3, 4, 5], false);
    close_c("fftn", &fft::fftn(&a, None, None, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    let (want, ws) = dftn(&x, &shape, &[0, 1, 2], &[3, 4, 5], true);
    close_c("ifftn", &fft::ifftn(&a, None, None, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    let (want, ws) = dftn(&x, &shape, &[1, 2], &[4, 5], false);
    close_c("fft2", &fft::fft2(&a, None, None, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    let (want, ws) = dftn(&x, &shape, &[1, 2], &[4, 5], true);
    close_c("ifft2", &fft::ifft2(&a, None, None, Norm::Backward).unwrap(), &ws, &want, 1e-5);

    // Chosen axes (non-last, out of order) and sizes.
    let (want, ws) = dftn(&x, &shape, &[2, 0], &[7, 2], false);
    close_c("fftn s=[7, 2] axes=[2, 0]", &fft::fftn(&a, Some(&[7, 2][..]), Some(&[2, 0][..]), Norm::Backward).unwrap(), &ws, &want, 1e-5);
    let (want, ws) = dftn(&x, &shape, &[1, 2], &[2, 6], false);
    close_c("fftn s only: the last axes", &fft::fftn(&a, Some(&[2, 6][..]), None, Norm::Backward).unwrap(), &ws, &want, 1e-5);
    let (want, ws) = dftn(&x, &shape, &[0, 1], &[3, 4], true);
    close_c("ifft2 axes=[0, 1]", &fft::ifft2(&a, None, Some(&[0, 1][..]), Norm::Backward).unwrap(), &ws, &want, 1e-5);

    // Real transforms.
    let (want, ws) = rdftn(&r, &shape, &[0, 1, 2], &[3, 4, 5]);
    let y = fft::rfftn(&ra, None, None, Norm::Backward).unwrap();
    close_c("rfftn", &y, &ws, &want, 1e-5);
    let back = fft::irfftn(&y, Some(&[3, 4, 5][..]), None, Norm::Backward).unwrap();
    close_r("irfftn(rfftn(x), s)", &back, &shape, &real_to_z(&r).iter().map(|z| z.0).collect::<Vec<_>>(), 1e-5);
    let (want, ws) = rdftn(&r, &shape, &[1, 2], &[4, 5]);
    let y2 = fft::rfft2(&ra, None, None, Norm::Backward).unwrap();
    close_c("rfft2", &y2, &ws, &want, 1e-5);
    let back = fft::irfft2(&y2, Some(&[4, 5][..]), None, Norm::Backward).unwrap();
    close_r("irfft2(rfft2(x), s)", &back, &shape, &real_to_z(&r).iter().map(|z| z.0).collect::<Vec<_>>(), 1e-5);
    // rfftn over (2, 0): axis 0 is the halved one.
    let (want, ws) = rdftn(&r, &shape, &[2, 0], &[5, 3]);
    let y = fft::rfftn(&ra, None, Some(&[2, 0][..]), Norm::Backward).unwrap();
    close_c("rfftn axes=[2, 0]", &y, &ws, &want, 1e-5);
    // irfftn of an arbitrary (non-Hermitian) input against the reference,
    // with the default last size 2 (m - 1) and a given odd one.
    let h = f32_round(&rand_z(&mut rng, 60));
    let (want, ws) = irdftn(&h, &shape, &[1, 2], &[4, 8]);
    close_r("irfftn default s", &fft::irfftn(&carr(&h, &shape), None, Some(&[1, 2][..]), Norm::Backward).unwrap(), &ws, &want, 1e-5);
    let (want, ws) = irdftn(&h, &shape, &[0, 2], &[2, 9]);
    close_r("irfftn s=[2, 9] axes=[0, 2]", &fft::irfftn(&carr(&h, &shape), Some(&[2, 9][..]), Some(&[0, 2][..]), Norm::Backward).unwrap(), &ws, &want, 1e-5);
}

#[test]
fn norm_modes_scale_as_numpy() {
    let mut rng = Rng::new(23);
    let n = 6;
    let x = f32_round(&rand_z(&mut rng, n));
    let a = carr(&x, &[n]);
    let fwd = dft(&x, &[n], 0, false);
    let inv = dft(&x, &[n], 0, true);
    let s = (n as f64).sqrt();
    let scaled = |v: &[Z], k: f64| v.iter().map(|z| z.scale(k)).collect::<Vec<_>>();
    close_c("fft ortho", &fft::fft(&a, None, 0, Norm::Ortho).unwrap(), &[n], &scaled(&fwd, 1.0 / s), 1e-5);
    close_c("fft forward", &fft::fft(&a, None, 0, Norm::Forward).unwrap(), &[n], &scaled(&fwd, 1.0 / n as f64), 1e-5);
    close_c("ifft ortho", &fft::ifft(&a, None, 0, Norm::Ortho).unwrap(), &[n], &scaled(&inv, s), 1e-5);
    close_c("ifft forward", &fft::ifft(&a, None, 0, Norm::Forward).unwrap(), &[n], &scaled(&inv, n as f64), 1e-5);
    let r = rand_r(&mut rng, n);
    let y = fft::rfft(&rarr(&r, &[n]), None, 0, Norm::Ortho).unwrap();
    let back = fft::irfft(&y, Some(n), 0, Norm::Ortho).unwrap();
    close_r("irfft(rfft(x, ortho), ortho)", &back, &[n], &real_to_z(&r).iter().map(|z| z.0).collect::<Vec<_>>(), 1e-5);
    assert!(matches!("bogus".parse::<Norm>(), Err(Error::InvalidArgument(_))));
}

#[test]
fn fft_argument_errors_do_not_panic() {
    let a = carr(&[Z(1.0, 0.0), Z(0.0, 1.0), Z(2.0, 0.0)], &[3]);
    let scalar = Array::scalar(Complex64::new(1.0, 0.0));
    let err = |what: &str, r: weft::Result<Array>| assert!(r.is_err(), "{what}: expected an error, got {r:?}");
    err("fft of a 0-d array", fft::fft(&scalar, None, -1, Norm::Backward));
    err("fft n = 0", fft::fft(&a, Some(0), -1, Norm::Backward));
    err("fft axis out of range", fft::fft(&a, None, 1, Norm::Backward));
    err("fft axis out of range (negative)", fft::fft(&a, None, -2, Norm::Backward));
    err("fftn repeated axes", fft::fftn(&ops::reshape(&a, &[1, 3]).unwrap(), None, Some(&[1, -1][..]), Norm::Backward));
    err("fftn s and axes of different lengths", fft::fftn(&a, Some(&[3, 3][..]), Some(&[0][..]), Norm::Backward));
    err("fftn more axes than dimensions", fft::fftn(&a, Some(&[3, 3][..]), None, Norm::Backward));
    err("irfft of one frequency, default n = 0", fft::irfft(&carr(&[Z(1.0, 0.0)], &[1]), None, -1, Norm::Backward));
    err("fft2 of a vector", fft::fft2(&a, None, None, Norm::Backward));
    err("fftn s = 0", fft::fftn(&a, Some(&[0][..]), None, Norm::Backward));
    // An empty axis elsewhere is fine (nothing to transform).
    let e = fft::fft(&carr(&[], &[0, 4]), None, -1, Norm::Backward).unwrap();
    assert_eq!(e.shape(), &[0, 4]);
    assert!(read_c(&e).is_empty());
}

#[test]
fn fftfreq_and_shift() {
    let f = fft::fftfreq(5, 0.5).unwrap();
    close_r("fftfreq(5, 0.5)", &f, &[5], &[0.0, 0.4, 0.8, -0.8, -0.4], 1e-6);
    let f = fft::rfftfreq(6, 1.0).unwrap();
    close_r("rfftfreq(6)", &f, &[4], &[0.0, 1.0 / 6.0, 2.0 / 6.0, 0.5], 1e-6);
    let x = Array::from_vec((0..5).map(|i| i as f32).collect::<Vec<_>>(), &[5]).unwrap();
    let s = fft::fftshift(&x, None).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 0.0, 1.0, 2.0]);
    assert_eq!(fft::ifftshift(&s, None).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
}

// ---- gradients --------------------------------------------------------
//
// The convention (MLX's, and PyTorch's): the cotangent of a complex64
// input z is dL/dRe(z) + i dL/dIm(z); a real input gets dL/dx. Checked
// against central differences of the real scalar loss.

use weft::transforms;

/// The elements of a float32 or complex64 array as complex numbers.
fn read_any(a: &Array) -> Vec<Z> {
    match a.dtype() {
        Dtype::C64 => read_c(a),
        _ => read_r(&ops::astype(a, Dtype::F32).unwrap()).into_iter().map(|x| Z(x, 0.0)).collect(),
    }
}

fn from_any(v: &[Z], shape: &[usize], dtype: Dtype) -> Array {
    match dtype {
        Dtype::C64 => carr(v, shape),
        _ => rarr(&v.iter().map(|z| z.0).collect::<Vec<_>>(), shape),
    }
}

fn check_grad(ctx: &str, f: &dyn Fn(&Array) -> weft::Result<Array>, x: &Array, tol: f64) {
    let g = transforms::grad(|a| Ok(vec![f(&a[0])?]), &[x.clone()], &[0]).unwrap_or_else(|e| panic!("{ctx}: grad failed: {e}"));
    assert_eq!(g[0].dtype(), x.dtype(), "{ctx}: the gradient's dtype");
    let got = read_any(&g[0]);
    let x0 = read_any(x);
    let eval = |v: &[Z]| -> f64 {
        let y = f(&from_any(v, x.shape(), x.dtype())).unwrap();
        read_r(&ops::astype(&y, Dtype::F32).unwrap())[0]
    };
    let eps = 1e-2;
    let mut want = Vec::new();
    for i in 0..x0.len() {
        let d = |dz: Z| {
            let (mut p, mut m) = (x0.clone(), x0.clone());
            p[i] = p[i].add(dz);
            m[i] = m[i].sub(dz);
            (eval(&p) - eval(&m)) / (2.0 * eps)
        };
        let im = if x.dtype() == Dtype::C64 { d(Z(0.0, eps)) } else { 0.0 };
        want.push(Z(d(Z(eps, 0.0)), im));
    }
    let scale = 1.0 + want.iter().map(|z| z.abs()).fold(0.0, f64::max);
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!(a.sub(*b).abs() <= tol * scale, "{ctx}: element {i}: grad {a:?} vs finite differences {b:?}");
    }
}

/// A real loss that reads both parts of a complex `y`: sum(re * wa + im * wb + |y|^2 / 4).
fn loss(y: &Array, seed: u64) -> weft::Result<Array> {
    let mut rng = Rng::new(seed);
    let n = y.size();
    let wa = rarr(&rand_r(&mut rng, n), y.shape());
    let wb = rarr(&rand_r(&mut rng, n), y.shape());
    let re = ops::real(y)?;
    let im = ops::imag(y)?;
    let sq = ops::multiply(&ops::abs(y)?, &ops::abs(y)?)?;
    let quarter = Array::scalar(0.25f32);
    let t = ops::add(&ops::add(&ops::multiply(&re, &wa)?, &ops::multiply(&im, &wb)?)?, &ops::multiply(&sq, &quarter)?)?;
    ops::sum(&t, weft::Axes::All, false)
}

#[test]
fn gradients_of_the_parts_and_arithmetic() {
    let mut rng = Rng::new(29);
    let z = carr(&f32_round(&rand_z(&mut rng, 6)), &[2, 3]);
    let w = carr(&f32_round(&rand_z(&mut rng, 6)), &[2, 3]);
    check_grad("real", &|z| ops::sum(&ops::multiply(&ops::real(z)?, &rarr(&[1.0, -2.0, 3.0], &[3]))?, weft::Axes::All, false), &z, 1e-2);
    check_grad("imag", &|z| ops::sum(&ops::multiply(&ops::imag(z)?, &rarr(&[1.0, -2.0, 3.0], &[3]))?, weft::Axes::All, false), &z, 1e-2);
    check_grad("conjugate", &|z| loss(&ops::conjugate(z)?, 1), &z, 1e-2);
    check_grad("abs", &|z| ops::sum(&ops::abs(z)?, weft::Axes::All, false), &z, 1e-2);
    check_grad("multiply", &|z| loss(&ops::multiply(z, &w)?, 2), &z, 1e-2);
    check_grad("divide (numerator)", &|z| loss(&ops::divide(z, &w)?, 3), &z, 1e-2);
    let wz = ops::add(&w, &carr(&[Z(1.5, 0.0)], &[1])).unwrap();
    check_grad("divide (denominator)", &|z| loss(&ops::divide(&w, &ops::add(z, &wz)?)?, 3), &z, 2e-2);
    check_grad("exp", &|z| loss(&ops::exp(z)?, 4), &z, 1e-2);
    check_grad("sin", &|z| loss(&ops::sin(z)?, 5), &z, 1e-2);
    check_grad("sum and broadcast", &|z| loss(&ops::sum(z, 0isize, true)?, 6), &z, 1e-2);
    let m = carr(&f32_round(&rand_z(&mut rng, 12)), &[3, 4]);
    check_grad("matmul (left)", &|z| loss(&ops::matmul(z, &m)?, 7), &z, 1e-2);
    check_grad("matmul (right)", &|m| loss(&ops::matmul(&z, m)?, 8), &m, 1e-2);
    // Real inputs through complex intermediates.
    let a = rarr(&rand_r(&mut rng, 6), &[2, 3]);
    let b = rarr(&rand_r(&mut rng, 6), &[2, 3]);
    check_grad("complex(re, .)", &|a| loss(&ops::multiply(&ops::complex(a, &b)?, &w)?, 9), &a, 1e-2);
    check_grad("complex(., im)", &|b| loss(&ops::multiply(&ops::complex(&a, b)?, &w)?, 10), &b, 1e-2);
    check_grad("float32 * complex", &|a| loss(&ops::multiply(a, &w)?, 11), &a, 1e-2);
    check_grad("astype to complex64", &|a| loss(&ops::multiply(&ops::astype(a, Dtype::C64)?, &w)?, 12), &a, 1e-2);
    check_grad("astype to float32", &|z| ops::sum(&ops::multiply(&ops::astype(z, Dtype::F32)?, &b)?, weft::Axes::All, false), &z, 1e-2);
}

#[test]
fn gradients_of_the_transforms() {
    let mut rng = Rng::new(31);
    let z = carr(&f32_round(&rand_z(&mut rng, 15)), &[3, 5]);
    let r = rarr(&rand_r(&mut rng, 24), &[4, 6]);
    let ro = rarr(&rand_r(&mut rng, 15), &[3, 5]);
    let h = carr(&f32_round(&rand_z(&mut rng, 12)), &[3, 4]);
    let b = Norm::Backward;
    check_grad("fft", &|z| loss(&fft::fft(z, None, -1, b)?, 1), &z, 1e-2);
    check_grad("fft axis 0, n = 5", &|z| loss(&fft::fft(z, Some(5), 0, b)?, 2), &z, 1e-2);
    check_grad("ifft n = 3", &|z| loss(&fft::ifft(z, Some(3), -1, b)?, 3), &z, 1e-2);
    check_grad("fft2 ortho", &|z| loss(&fft::fft2(z, None, None, Norm::Ortho)?, 4), &z, 1e-2);
    check_grad("ifftn", &|z| loss(&fft::ifftn(z, None, None, b)?, 5), &z, 1e-2);
    check_grad("fft of float32", &|x| loss(&fft::fft(x, None, -1, b)?, 6), &r, 1e-2);
    check_grad("rfft even", &|x| loss(&fft::rfft(x, None, -1, b)?, 7), &r, 1e-2);
    check_grad("rfft odd", &|x| loss(&fft::rfft(x, None, -1, b)?, 8), &ro, 1e-2);
    check_grad("rfft n = 9 axis 0", &|x| loss(&fft::rfft(x, Some(9), 0, b)?, 9), &r, 1e-2);
    check_grad("rfft2", &|x| loss(&fft::rfft2(x, None, None, b)?, 10), &r, 1e-2);
    check_grad("rfftn axes (1, 0)", &|x| loss(&fft::rfftn(x, None, Some(&[1, 0][..]), b)?, 11), &ro, 1e-2);
    let wr = rarr(&rand_r(&mut rng, 3 * 9), &[3, 9]);
    let lin = |y: &Array, w: &Array| -> weft::Result<Array> {
        ops::sum(&ops::add(&ops::multiply(y, w)?, &ops::multiply(&ops::multiply(y, y)?, &Array::scalar(0.25f32))?)?, weft::Axes::All, false)
    };
    let wr6 = rarr(&rand_r(&mut rng, 18), &[3, 6]);
    check_grad("irfft even", &|h| lin(&fft::irfft(h, None, -1, b)?, &wr6), &h, 1e-2);
    check_grad("irfft odd n = 9", &|h| lin(&fft::irfft(h, Some(9), -1, b)?, &wr), &h, 1e-2);
    let wr2 = rarr(&rand_r(&mut rng, 2 * 7), &[2, 7]);
    check_grad("irfft2 s = (2, 7)", &|h| lin(&fft::irfft2(h, Some(&[2, 7][..]), None, b)?, &wr2), &h, 1e-2);
    check_grad("irfftn forward", &|h| lin(&fft::irfftn(h, None, None, Norm::Forward)?, &wr6), &h, 1e-2);
}

#[test]
fn grad_of_a_complex_output_is_an_error() {
    let z = carr(&[Z(1.0, 2.0)], &[1]);
    let r = transforms::grad(|a| Ok(vec![ops::sum(&ops::multiply(&a[0], &a[0])?, weft::Axes::All, false)?]), &[z], &[0]);
    assert!(matches!(r, Err(Error::Dtype(_))), "{r:?}");
}

/// MLX's order of complex numbers: real part, then imaginary part, a NaN
/// part after every number.
fn lex(a: &Z, b: &Z) -> std::cmp::Ordering {
    let key = |x: f64| if x.is_nan() { (1, 0.0) } else { (0, x) };
    let (ka, kb) = ((key(a.0), key(a.1)), (key(b.0), key(b.1)));
    ka.0 .0.cmp(&kb.0 .0)
        .then(ka.0 .1.partial_cmp(&kb.0 .1).unwrap())
        .then(ka.1 .0.cmp(&kb.1 .0))
        .then(ka.1 .1.partial_cmp(&kb.1 .1).unwrap())
}

#[test]
fn sort_argsort_and_extremes_order_by_real_then_imaginary() {
    let mut rng = Rng::new(41);
    // Few distinct real parts, so ties on the real part are common.
    let mut v: Vec<Z> = (0..24).map(|_| Z((rng.uniform(0.0, 3.0)).floor(), rng.uniform(-1.0, 1.0))).collect();
    v = f32_round(&v);
    let (rows, n) = (4, 6);
    let a = carr(&v, &[rows, n]);
    let sorted = ops::sort(&a, Some(-1)).unwrap();
    let idx = ops::argsort(&a, Some(-1)).unwrap().to_vec::<u32>().unwrap();
    let got = read_c(&sorted);
    for r in 0..rows {
        let mut want = v[r * n..(r + 1) * n].to_vec();
        want.sort_by(lex);
        assert_eq!(&got[r * n..(r + 1) * n], &want[..], "sort row {r}");
        let by_idx: Vec<Z> = idx[r * n..(r + 1) * n].iter().map(|&i| v[r * n + i as usize]).collect();
        assert_eq!(by_idx, want, "argsort row {r}");
        let max = read_c(&ops::max(&a, 1isize, false).unwrap())[r];
        let min = read_c(&ops::min(&a, 1isize, false).unwrap())[r];
        assert_eq!((max, min), (want[n - 1], want[0]), "max/min row {r}");
    }
    // Along axis 0 too.
    let max0 = read_c(&ops::max(&a, 0isize, true).unwrap());
    for c in 0..n {
        let col: Vec<Z> = (0..rows).map(|r| v[r * n + c]).collect();
        assert_eq!(max0[c], *col.iter().max_by(|a, b| lex(a, b)).unwrap(), "max of column {c}");
    }
    // NaN parts sort last, and make max and min NaN.
    let w = carr(&[Z(3.0, 1.0), Z(f64::NAN, 2.0), Z(2.0, 1.0), Z(0.0, f64::NAN), Z(0.0, 1.0)], &[5]);
    let s = read_c(&ops::sort(&w, None).unwrap());
    assert_eq!(&s[..3], &[Z(0.0, 1.0), Z(2.0, 1.0), Z(3.0, 1.0)]);
    assert!(s[3].0 == 0.0 && s[3].1.is_nan() && s[4].0.is_nan(), "{s:?}");
    for m in [ops::max(&w, weft::Axes::All, false).unwrap(), ops::min(&w, weft::Axes::All, false).unwrap()] {
        assert!(ops::isnan(&m).unwrap().item::<bool>().unwrap());
    }
}

#[test]
fn predicates_tolerances_and_moments_of_complex() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let z = carr(&[Z(0.0, inf), Z(-inf, 0.0), Z(inf, 0.0), Z(nan, 1.0), Z(1.0, nan), Z(3.0, 4.0)], &[6]);
    let b = |a: weft::Result<Array>| a.unwrap().to_vec::<bool>().unwrap();
    assert_eq!(b(ops::isinf(&z)), [true, true, true, false, false, false]);
    assert_eq!(b(ops::isnan(&z)), [false, false, false, true, true, false]);
    assert_eq!(b(ops::isfinite(&z)), [false, false, false, false, false, true]);
    assert_eq!(b(ops::isposinf(&z)), [false, false, true, false, false, false]);
    assert_eq!(b(ops::isneginf(&z)), [false, true, false, false, false, false]);
    // isclose compares |a - b| with atol + rtol |b| in float32.
    let p = carr(&[Z(1.0, 1.0), Z(1.0, 1.0), Z(nan, 0.0)], &[3]);
    let q = carr(&[Z(1.0, 1.001), Z(1.0, 1.5), Z(nan, 0.0)], &[3]);
    assert_eq!(b(ops::isclose(&p, &q, 1e-2, 1e-2, false)), [true, false, false]);
    assert_eq!(b(ops::isclose(&p, &q, 1e-2, 1e-2, true)), [true, false, true]);
    assert!(!ops::allclose(&p, &q, 1e-2, 1e-2, true).unwrap().item::<bool>().unwrap());
    // var and std of complex are real: the mean of |x - mean|^2.
    let v = [Z(1.0, 2.0), Z(-1.0, 0.5), Z(0.25, -3.0), Z(2.0, 1.0)];
    let mean = v.iter().fold(Z(0.0, 0.0), |s, x| s.add(*x));
    let mean = Z(mean.0 / 4.0, mean.1 / 4.0);
    let want = v.iter().map(|x| x.sub(mean).abs().powi(2)).sum::<f64>() / 3.0;
    let a = carr(&v, &[4]);
    close_r("var ddof 1", &ops::var(&a, weft::Axes::All, false, 1).unwrap(), &[], &[want], 1e-5);
    close_r("std ddof 1", &ops::std(&a, weft::Axes::All, false, 1).unwrap(), &[], &[want.sqrt()], 1e-5);
    // sign is z / |z| (0 at 0); round takes each part.
    let s = carr(&[Z(3.0, -4.0), Z(0.0, 0.0), Z(-2.0, 0.0)], &[3]);
    close_c("sign", &ops::sign(&s).unwrap(), &[3], &[Z(0.6, -0.8), Z(0.0, 0.0), Z(-1.0, 0.0)], 1e-6);
    let r = carr(&[Z(22.2, 3.6), Z(18.5, 98.2), Z(-1.26, 0.04)], &[3]);
    close_c("round", &ops::round(&r, 0).unwrap(), &[3], &[Z(22.0, 4.0), Z(18.0, 98.0), Z(-1.0, 0.0)], 1e-7);
    close_c("round 1", &ops::round(&r, 1).unwrap(), &[3], &[Z(22.2, 3.6), Z(18.5, 98.2), Z(-1.3, 0.0)], 1e-6);
}

#[test]
fn complex_normal_has_independent_parts_of_variance_one_half() {
    use weft::ops::random;
    let k = random::key(3);
    let n = 20000;
    let z = random::normal(&[n], Dtype::C64, 0.0, 1.0, Some(&k)).unwrap();
    assert_eq!(z.dtype(), Dtype::C64);
    let v = read_c(&z);
    let m = |f: &dyn Fn(&Z) -> f64| v.iter().map(f).sum::<f64>() / n as f64;
    let (mr, mi) = (m(&|z| z.0), m(&|z| z.1));
    assert!(mr.abs() < 0.03 && mi.abs() < 0.03, "means {mr} {mi}");
    let (vr, vi, cov) = (m(&|z| z.0 * z.0), m(&|z| z.1 * z.1), m(&|z| z.0 * z.1));
    assert!((vr - 0.5).abs() < 0.03 && (vi - 0.5).abs() < 0.03 && cov.abs() < 0.03, "{vr} {vi} {cov}");
    // Same key, same numbers; loc and scale shift and scale.
    let w = read_c(&random::normal(&[n], Dtype::C64, 3.0, 2.0, Some(&k)).unwrap());
    assert!(v.iter().zip(&w).all(|(a, b)| (a.0 * 2.0 + 3.0 - b.0).abs() < 1e-4 && (a.1 * 2.0 - b.1).abs() < 1e-4));
    // The default key advances; the state can be read and restored.
    let saved = random::current_key();
    let a = random::normal(&[4], Dtype::C64, 0.0, 1.0, None).unwrap().to_vec::<Complex64>().unwrap();
    random::set_current_key(&saved).unwrap();
    let b = random::normal(&[4], Dtype::C64, 0.0, 1.0, None).unwrap().to_vec::<Complex64>().unwrap();
    assert_eq!(a, b);
    assert!(matches!(random::normal(&[2], Dtype::I32, 0.0, 1.0, None), Err(Error::Dtype(_))));
    assert!(matches!(random::set_current_key(&Array::from_vec(vec![1u32, 2, 3], &[3]).unwrap()), Err(Error::InvalidArgument(_))));
}
