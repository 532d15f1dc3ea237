//! Affine quantization: `quantize`'s packing and parameters, `dequantize`,
//! and `quantized_matmul` against a reference that unpacks the codes
//! independently (bytes of the little-endian bit stream), dequantizes in
//! f64 and multiplies in f64; derivatives and the batching rule; errors.

mod common;

use common::Rng;
use weft::ops;
use weft::transforms;
use weft::{Array, Dtype, Error};

fn rand_vec(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()
}

fn f64s(a: &Array) -> Vec<f64> {
    a.to_f64_vec().unwrap()
}

/// Code `j` of a packed row, read from its bytes (independent of the
/// kernels' word-wise decoding).
fn code(words: &[u32], j: usize, bits: u32) -> u64 {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    (0..bits as usize).map(|b| {
        let p = j * bits as usize + b;
        (((bytes[p / 8] >> (p % 8)) & 1) as u64) << b
    }).sum()
}

/// The dequantized matrix `[rows, cols]` in f64 from packed rows.
fn reference_dequantize(wq: &[u32], s: &[f64], b: &[f64], rows: usize, cols: usize, gs: usize, bits: u32) -> Vec<f64> {
    let words = cols * bits as usize / 32;
    let groups = cols / gs;
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &wq[r * words..(r + 1) * words];
        for c in 0..cols {
            let g = r * groups + c / gs;
            out[r * cols + c] = s[g] * code(row, c, bits) as f64 + b[g];
        }
    }
    out
}

#[test]
fn packing_is_a_little_endian_bit_stream() {
    // A group 0..15, 0..15: the max (15) has the larger magnitude, so
    // scale = -1, bias = 15 and code = 15 - w.
    let w: Vec<f32> = (0..32).map(|j| (j % 16) as f32).collect();
    let (wq, s, b) = ops::quantize(&Array::from_vec(w, &[1, 32]).unwrap(), 32, 4).unwrap();
    assert_eq!(wq.dtype(), Dtype::U32);
    assert_eq!(wq.to_vec::<u32>().unwrap(), vec![0x89AB_CDEF, 0x0123_4567, 0x89AB_CDEF, 0x0123_4567]);
    assert_eq!((s.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap()), (vec![-1.0], vec![15.0]));
    // 3 bits: eight codes in three bytes; 0..7 then 7..0 as codes.
    let w: Vec<f32> = (0..32i32).map(|j| (if j < 8 { 7 - j } else { j % 8 }) as f32).collect();
    let (wq, _, _) = ops::quantize(&Array::from_vec(w.clone(), &[1, 32]).unwrap(), 32, 3).unwrap();
    let words = wq.to_vec::<u32>().unwrap();
    assert_eq!(words.len(), 3);
    for (j, &x) in w.iter().enumerate() {
        assert_eq!(code(&words, j, 3), 7 - x as u64, "code {j}");
    }
}

#[test]
fn quantize_bounds_the_error_and_keeps_zeros() {
    let mut rng = Rng::new(1);
    for gs in [32, 64, 128] {
        for bits in [1, 2, 3, 4, 5, 6, 8] {
            let (rows, cols) = (6, 256);
            let w = rand_vec(&mut rng, rows * cols, -2.0, 3.0);
            let (wq, s, b) = ops::quantize(&Array::from_vec(w.clone(), &[rows, cols]).unwrap(), gs, bits).unwrap();
            assert_eq!(wq.shape(), &[rows, cols * bits as usize / 32]);
            assert_eq!(s.shape(), &[rows, cols / gs]);
            let (sv, bv) = (f64s(&s), f64s(&b));
            let want = reference_dequantize(&wq.to_vec::<u32>().unwrap(), &sv, &bv, rows, cols, gs, bits);
            let got = f64s(&ops::dequantize(&wq, &s, &b, gs, bits, None).unwrap());
            for i in 0..rows * cols {
                let scale = sv[i / gs].abs();
                assert!((got[i] - want[i]).abs() <= 1e-6 * want[i].abs().max(1.0), "gs {gs} bits {bits}: dequantize {i}");
                assert!((w[i] as f64 - want[i]).abs() <= scale + 1e-5, "gs {gs} bits {bits}: error at {i}");
            }
            let z = ops::zeros(&[4, 128], Dtype::F32).unwrap();
            let (zq, zs, zb) = ops::quantize(&z, gs, bits).unwrap();
            assert!(f64s(&ops::dequantize(&zq, &zs, &zb, gs, bits, None).unwrap()).iter().all(|&v| v == 0.0));
        }
    }
}

#[test]
fn quantize_keeps_the_dtype_and_leading_axes() {
    let x = ops::astype(&Array::from_vec((0..2 * 3 * 64).map(|i| (i % 7) as f32).collect(), &[2, 3, 64]).unwrap(), Dtype::BF16).unwrap();
    let (wq, s, b) = ops::quantize(&x, 64, 8).unwrap();
    assert_eq!((wq.shape(), s.shape(), s.dtype(), b.dtype()), (&[2, 3, 16][..], &[2, 3, 1][..], Dtype::BF16, Dtype::BF16));
    let back = ops::dequantize(&wq, &s, &b, 64, 8, Some(Dtype::F32)).unwrap();
    assert_eq!(back.dtype(), Dtype::F32);
    let (xv, bv) = (f64s(&x), f64s(&back));
    assert!(xv.iter().zip(&bv).all(|(a, b)| (a - b).abs() < 0.05));
}

/// Each row of `x` (`[.., K]`, in f32) rounded as `quantized_matmul_int8`
/// says, computed here from that description: per block of 32 along `K`
/// (the last one may be shorter) `d = max |x| / 127`, `d * round(x / d)`.
/// Returns the rounded values and each element's `d / 2`.
fn int8_rounded(x: &[f64], k: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut out, mut half) = (Vec::new(), Vec::new());
    for row in x.chunks(k) {
        for blk in row.chunks(32) {
            let amax = blk.iter().fold(0f32, |m, &v| m.max((v as f32).abs()));
            let d = amax / 127.0;
            for &v in blk {
                let q = if d == 0.0 { 0.0 } else { (v as f32 / d).round() };
                out.push((d * q) as f64);
                half.push(d as f64 / 2.0);
            }
        }
    }
    (out, half)
}

/// `quantized_matmul` (or with `int8`, `quantized_matmul_int8`) of random
/// operands against the reference, with `x` `[batch.., M, K]`. With `int8`
/// the result must match the reference product of the rounded `x` up to
/// float rounding, and the product of `x` itself within the rounding bound
/// (`sum |w| * d / 2` over the contracted axis).
#[allow(clippy::too_many_arguments)]
fn check_qmm(rng: &mut Rng, xshape: &[usize], wbatch: &[usize], n: usize, transpose: bool, gs: usize, bits: u32, dt: Dtype, int8: bool) {
    let k = xshape[xshape.len() - 1];
    // Untransposed codes run along N: whole groups.
    let n = if transpose { n } else { n.div_ceil(gs) * gs };
    let (rows, cols) = if transpose { (n, k) } else { (k, n) };
    let nw: usize = wbatch.iter().product::<usize>() * rows * cols;
    let wshape: Vec<usize> = wbatch.iter().copied().chain([rows, cols]).collect();
    let w = Array::from_vec(rand_vec(rng, nw, -1.0, 1.0), &wshape).unwrap();
    let (wq, s, b) = ops::quantize(&ops::astype(&w, dt).unwrap(), gs, bits).unwrap();
    let nx: usize = xshape.iter().product();
    let x = ops::astype(&Array::from_vec(rand_vec(rng, nx, -1.0, 1.0), xshape).unwrap(), dt).unwrap();
    let y = if int8 { ops::quantized_matmul_int8(&x, &wq, &s, &b, transpose, gs, bits) } else { ops::quantized_matmul(&x, &wq, &s, &b, transpose, gs, bits) };
    let y = y.unwrap();
    // Reference: every batch matrix of w dequantized independently, in f64.
    let mats = wbatch.iter().product::<usize>();
    let words = cols * bits as usize / 32;
    let (wqv, sv, bv) = (wq.to_vec::<u32>().unwrap(), f64s(&s), f64s(&b));
    let g = cols / gs;
    let deq: Vec<Vec<f64>> = (0..mats)
        .map(|i| {
            reference_dequantize(&wqv[i * rows * words..(i + 1) * rows * words], &sv[i * rows * g..(i + 1) * rows * g], &bv[i * rows * g..(i + 1) * rows * g], rows, cols, gs, bits)
        })
        .collect();
    let xv = f64s(&x);
    let (xr, half) = if int8 { int8_rounded(&xv, k) } else { (xv.clone(), vec![0.0; xv.len()]) };
    let m = if xshape.len() == 1 { 1 } else { xshape[xshape.len() - 2] };
    let xb = &xshape[..xshape.len().saturating_sub(2)];
    let batch = weft::shape::broadcast_shapes(xb, wbatch).unwrap();
    let mut want_shape = batch.clone();
    if xshape.len() > 1 {
        want_shape.push(m);
    }
    want_shape.push(n);
    assert_eq!(y.shape(), &want_shape[..], "shape for x {xshape:?}, w batch {wbatch:?}");
    assert_eq!(y.dtype(), dt);
    let yv = f64s(&y);
    let nb: usize = batch.iter().product();
    // Index of broadcast batch `i` into a batch shape `of` (right-aligned).
    let index_in = |mut i: usize, of: &[usize]| -> usize {
        let mut idx = 0;
        let mut mul = 1;
        for d in (0..batch.len()).rev() {
            let c = i % batch[d];
            i /= batch[d];
            let od = d as isize - (batch.len() - of.len()) as isize;
            if od >= 0 {
                let size = of[od as usize];
                idx += (if size == 1 { 0 } else { c }) * mul;
                mul *= size;
            }
        }
        idx
    };
    let tol = match dt {
        Dtype::F32 => 1e-4,
        Dtype::F16 => 1e-2,
        _ => 5e-2,
    };
    for bi in 0..nb {
        let (xi, wi) = (index_in(bi, xb), index_in(bi, wbatch));
        let d = &deq[wi];
        for r in 0..m {
            for c in 0..n {
                let (mut acc, mut mag, mut exact, mut bound) = (0.0, 0.0, 0.0, 0.0);
                for kk in 0..k {
                    let wv = if transpose { d[c * k + kk] } else { d[kk * n + c] };
                    let at = (xi * m + r) * k + kk;
                    acc += xr[at] * wv;
                    mag += (xr[at] * wv).abs();
                    exact += xv[at] * wv;
                    bound += half[at] * wv.abs();
                }
                let got = yv[(bi * m + r) * n + c];
                assert!(
                    (got - acc).abs() <= tol * mag + 1e-5,
                    "x {xshape:?} w {wbatch:?} n {n} t {transpose} gs {gs} bits {bits} {dt} int8 {int8}: ({bi}, {r}, {c}) got {got}, want {acc}"
                );
                assert!(
                    (got - exact).abs() <= bound * (1.0 + 1e-4) + tol * mag + 1e-5,
                    "x {xshape:?} t {transpose} gs {gs} bits {bits} {dt}: ({bi}, {r}, {c}) got {got}, float product {exact}, int8 bound {bound}"
                );
            }
        }
    }
}

#[test]
fn quantized_matmul_matches_dequantize_then_matmul() {
    let mut rng = Rng::new(7);
    for gs in [32, 64, 128] {
        for bits in [1, 2, 3, 4, 5, 6, 8] {
            for transpose in [true, false] {
                check_qmm(&mut rng, &[5, 128], &[], 40, transpose, gs, bits, Dtype::F32, false);
            }
        }
    }
    // Shapes: vectors, one row, batches broadcasting either way, blocks
    // that do not divide the output, a contracted axis longer than one
    // decoded block.
    for transpose in [true, false] {
        check_qmm(&mut rng, &[256], &[], 24, transpose, 64, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[1, 256], &[], 33, transpose, 64, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[3, 1, 7, 64], &[1, 2], 20, transpose, 32, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[7, 64], &[3], 96, transpose, 32, 8, Dtype::F32, false);
        check_qmm(&mut rng, &[2, 3, 4096], &[], 64, transpose, 128, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[70, 256], &[], 257, transpose, 64, 3, Dtype::F32, false);
        // Both sides of the matrix-vector path's row limit (32 rows of x),
        // and rows past one 8-row kernel call, with enough weight rows
        // (1000) to split across parallel tasks.
        check_qmm(&mut rng, &[8, 128], &[], 1000, transpose, 32, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[9, 128], &[], 1000, transpose, 32, 8, Dtype::F32, false);
        check_qmm(&mut rng, &[32, 128], &[], 300, transpose, 32, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[33, 128], &[], 300, transpose, 64, 4, Dtype::F32, false);
        check_qmm(&mut rng, &[4, 96], &[], 17, transpose, 32, 6, Dtype::BF16, false);
    }
    check_qmm(&mut rng, &[9, 128], &[], 64, true, 64, 4, Dtype::F16, false);
    check_qmm(&mut rng, &[9, 128], &[], 64, false, 64, 4, Dtype::BF16, false);
}

#[test]
fn quantized_matmul_int8_is_the_product_of_the_rounded_rows() {
    let mut rng = Rng::new(12);
    // The integer kernels (up to 32 rows, transposed, 4 and 8 bits, every
    // group size, block counts odd and even) and every other path (more
    // rows, untransposed with a contracted axis that is not whole blocks,
    // other bit widths), which rounds x and multiplies in float.
    for gs in [32, 64, 128] {
        for bits in [4, 8] {
            for m in [1, 3, 8] {
                check_qmm(&mut rng, &[m, gs * 3], &[], 40, true, gs, bits, Dtype::F32, true);
            }
            check_qmm(&mut rng, &[9, 2 * gs], &[], 20, true, gs, bits, Dtype::F32, true);
            check_qmm(&mut rng, &[33, 2 * gs], &[], 20, true, gs, bits, Dtype::F32, true);
        }
    }
    for transpose in [true, false] {
        check_qmm(&mut rng, &[256], &[], 24, transpose, 64, 4, Dtype::F32, true);
        check_qmm(&mut rng, &[3, 1, 7, 64], &[1, 2], 20, transpose, 32, 4, Dtype::F32, true);
        check_qmm(&mut rng, &[4, 96], &[], 17, transpose, 32, 3, Dtype::F32, true);
        check_qmm(&mut rng, &[8, 128], &[], 1000, transpose, 32, 4, Dtype::F32, true);
        check_qmm(&mut rng, &[2, 128], &[], 64, transpose, 64, 4, Dtype::F16, true);
        check_qmm(&mut rng, &[2, 128], &[], 64, transpose, 64, 8, Dtype::BF16, true);
    }
    // A contracted axis of 70: two blocks of 32 and one of 6.
    check_qmm(&mut rng, &[2, 70], &[], 64, false, 32, 8, Dtype::F32, true);
}

#[test]
fn quantized_matmul_derivatives() {
    let mut rng = Rng::new(3);
    for transpose in [true, false] {
        let (m, k, n, gs, bits) = (3, 64, 32, 32, 4);
        let (rows, cols) = if transpose { (n, k) } else { (k, n) };
        let w = Array::from_vec(rand_vec(&mut rng, rows * cols, -1.0, 1.0), &[rows, cols]).unwrap();
        let (wq, s, b) = ops::quantize(&w, gs, bits).unwrap();
        let x = Array::from_vec(rand_vec(&mut rng, m * k, -1.0, 1.0), &[m, k]).unwrap();
        let g = Array::from_vec(rand_vec(&mut rng, m * n, -1.0, 1.0), &[m, n]).unwrap();
        let wq2 = wq.clone();
        let f = move |a: &[Array]| -> weft::Result<Vec<Array>> {
            Ok(vec![ops::quantized_matmul(&a[0], &wq2, &a[1], &a[2], transpose, gs, bits)?])
        };
        let (_, grads) = transforms::vjp(f, &[x.clone(), s.clone(), b.clone()], std::slice::from_ref(&g)).unwrap();
        // References through the dequantized matrix (in float32 ops).
        let what = ops::dequantize(&wq, &s, &b, gs, bits, None).unwrap();
        let wt = if transpose { what.clone() } else { ops::transpose(&what, &[1, 0]).unwrap() }; // [n, k]
        let dx = ops::matmul(&g, &wt).unwrap();
        let p = if transpose {
            ops::matmul(&ops::transpose(&g, &[1, 0]).unwrap(), &x).unwrap()
        } else {
            ops::matmul(&ops::transpose(&x, &[1, 0]).unwrap(), &g).unwrap()
        };
        let ones = ops::ones(s.shape(), Dtype::F32).unwrap();
        let q = ops::dequantize(&wq, &ones, &ops::zeros(s.shape(), Dtype::F32).unwrap(), gs, bits, None).unwrap();
        let grouped = |a: &Array| ops::sum(&ops::reshape(a, &[rows as isize, (cols / gs) as isize, gs as isize]).unwrap(), -1isize, false).unwrap();
        let ds = grouped(&ops::multiply(&p, &q).unwrap());
        let db = grouped(&p);
        for (i, want) in [dx, ds, db].iter().enumerate() {
            let (gv, wv) = (f64s(&grads[i]), f64s(want));
            assert_eq!(grads[i].shape(), want.shape());
            assert!(gv.iter().zip(&wv).all(|(a, b)| (a - b).abs() <= 1e-4 * (1.0 + b.abs())), "transpose {transpose}: cotangent {i}");
        }
        // The codes are integers: like every integer input they get a zero
        // cotangent of their own shape and dtype (docs/transforms.md).
        let (s2, b2, x2) = (s.clone(), b.clone(), x.clone());
        let (_, r) = transforms::vjp(
            move |a: &[Array]| Ok(vec![ops::quantized_matmul(&x2, &a[0], &s2, &b2, transpose, gs, bits)?]),
            std::slice::from_ref(&wq),
            std::slice::from_ref(&g),
        )
        .unwrap();
        assert_eq!((r[0].shape(), r[0].dtype()), (wq.shape(), Dtype::U32));
        assert!(r[0].to_vec::<u32>().unwrap().iter().all(|&v| v == 0));
    }
}

#[test]
fn quantized_matmul_batches_under_vmap() {
    let mut rng = Rng::new(11);
    let w = Array::from_vec(rand_vec(&mut rng, 16 * 64, -1.0, 1.0), &[16, 64]).unwrap();
    let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
    let xs = Array::from_vec(rand_vec(&mut rng, 3 * 2 * 64, -1.0, 1.0), &[3, 2, 64]).unwrap();
    let (wq2, s2, b2) = (wq.clone(), s.clone(), b.clone());
    let got = transforms::vmap(
        move |a: &[Array]| Ok(vec![ops::quantized_matmul(&a[0], &wq2, &s2, &b2, true, 32, 4)?]),
        std::slice::from_ref(&xs),
        &[Some(0)],
        &[0],
    )
    .unwrap();
    let want = ops::quantized_matmul(&xs, &wq, &s, &b, true, 32, 4).unwrap();
    assert_eq!(f64s(&got[0]), f64s(&want));
}

#[test]
fn gather_qmm_matches_gather_mm_of_the_dequantized_weights() {
    let mut rng = Rng::new(5);
    let w = Array::from_vec(rand_vec(&mut rng, 3 * 16 * 64, -1.0, 1.0), &[3, 16, 64]).unwrap();
    let (wq, s, b) = ops::quantize(&w, 64, 4).unwrap();
    let what = ops::swapaxes(&ops::dequantize(&wq, &s, &b, 64, 4, None).unwrap(), -1, -2).unwrap();
    let x = Array::from_vec(rand_vec(&mut rng, 5 * 2 * 64, -1.0, 1.0), &[5, 2, 64]).unwrap();
    let lhs = Array::from_slice(&[0u32, 2, 4], &[3]).unwrap();
    let rhs = Array::from_slice(&[2u32, 1, 2], &[3]).unwrap();
    let got = ops::gather_qmm(&x, &wq, &s, &b, Some(&lhs), Some(&rhs), true, 64, 4).unwrap();
    let want = ops::gather_mm(&x, &what, Some(&lhs), Some(&rhs)).unwrap();
    assert_eq!(got.shape(), &[3, 2, 16]);
    let (gv, wv) = (f64s(&got), f64s(&want));
    assert!(gv.iter().zip(&wv).all(|(a, b)| (a - b).abs() < 1e-4));
    // gather_mm picks the matrices the indices name.
    let row1 = ops::matmul(&ops::take(&x, &Array::scalar(2u32), Some(0)).unwrap(), &ops::take(&what, &Array::scalar(1u32), Some(0)).unwrap()).unwrap();
    let got1 = ops::take(&want, &Array::scalar(1u32), Some(0)).unwrap();
    assert_eq!(f64s(&row1), f64s(&got1));
}

#[test]
fn bad_arguments_are_errors() {
    // 16 rows, so the transposed codes ([8, 16]) differ in shape from the codes ([16, 8]).
    let w = ops::zeros(&[16, 64], Dtype::F32).unwrap();
    assert!(matches!(ops::quantize(&w, 16, 4), Err(Error::InvalidArgument(_))));
    assert!(matches!(ops::quantize(&w, 32, 7), Err(Error::InvalidArgument(_))));
    assert!(matches!(ops::quantize(&ops::zeros(&[64], Dtype::F32).unwrap(), 32, 4), Err(Error::Shape(_))));
    assert!(matches!(ops::quantize(&ops::zeros(&[8, 48], Dtype::F32).unwrap(), 32, 4), Err(Error::Shape(_))));
    assert!(matches!(ops::quantize(&ops::zeros(&[8, 64], Dtype::I32).unwrap(), 32, 4), Err(Error::Dtype(_))));
    let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
    let x = ops::zeros(&[3, 64], Dtype::F32).unwrap();
    // Scales that do not fit the packed width for these parameters.
    assert!(matches!(ops::quantized_matmul(&x, &wq, &s, &b, true, 64, 4), Err(Error::Shape(_))));
    assert!(matches!(ops::quantized_matmul(&x, &wq, &s, &b, true, 32, 8), Err(Error::Shape(_))));
    // x of the wrong width; transposed codes; int x; int codes.
    assert!(matches!(ops::quantized_matmul(&x, &wq, &s, &b, false, 32, 4), Err(Error::Shape(_))));
    let wqt = ops::transpose(&wq, &[1, 0]).unwrap();
    assert!(matches!(ops::quantized_matmul(&x, &wqt, &s, &b, true, 32, 4), Err(Error::Shape(_))));
    let xi = ops::zeros(&[3, 64], Dtype::I32).unwrap();
    assert!(matches!(ops::quantized_matmul(&xi, &wq, &s, &b, true, 32, 4), Err(Error::Dtype(_))));
    let wqi = ops::astype(&wq, Dtype::I32).unwrap();
    assert!(matches!(ops::quantized_matmul(&x, &wqi, &s, &b, true, 32, 4), Err(Error::Dtype(_))));
    assert!(matches!(ops::dequantize(&wq, &s, &b, 32, 4, Some(Dtype::I32)), Err(Error::Dtype(_))));
    let b1 = ops::zeros(&[8, 1], Dtype::F32).unwrap();
    assert!(matches!(ops::dequantize(&wq, &s, &b1, 32, 4, None), Err(Error::Shape(_))));
}

/// `QuantizedMatrix::converted` (how models move their weights to a device
/// and dtype): a new, evaluated matrix of the same values, made through
/// `ops::copy_as`, which copies even when the dtype does not change.
#[test]
fn converted_matrices_are_evaluated_copies() {
    let mut rng = Rng::new(11);
    let w = Array::from_vec(rand_vec(&mut rng, 8 * 64, -1.0, 1.0), &[8, 64]).unwrap();
    let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
    let q = ops::QuantizedMatrix::new(wq, s, b, 32, 4).unwrap();
    let before = f64s(&q.dequantize(Dtype::F32).unwrap());
    for dt in [Dtype::F32, Dtype::F16, Dtype::BF16] {
        let c = q.converted(dt).unwrap();
        let after = f64s(&c.dequantize(Dtype::F32).unwrap());
        let tol = if dt == Dtype::F32 { 0.0 } else { 1e-2 };
        for (x, y) in before.iter().zip(&after) {
            assert!((x - y).abs() <= tol * x.abs().max(1.0), "{dt}: {x} vs {y}");
        }
    }
    let a = Array::from_vec(vec![1.0f32, -2.0, 3.5], &[3]).unwrap();
    let same = ops::copy_as(&a, Dtype::F32).unwrap();
    assert_ne!(same.id(), a.id(), "a copy in the same dtype is a new array");
    assert_eq!(same.to_vec::<f32>().unwrap(), vec![1.0, -2.0, 3.5]);
    let half = ops::copy_as(&a, Dtype::F16).unwrap();
    assert_eq!((half.dtype(), ops::astype(&half, Dtype::F32).unwrap().to_vec::<f32>().unwrap()), (Dtype::F16, vec![1.0, -2.0, 3.5]));
}
