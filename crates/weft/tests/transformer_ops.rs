//! Transformer ops against float64 references computed here, naively, on
//! random inputs.

use half::{bf16, f16};
use weft::ops::fast::{self, Mask};
use weft::ops::{self, SliceArg};
use weft::{Array, Dtype, Error};

mod common;
use common::erf_ref;

/// Deterministic pseudo-random floats in [-scale, scale) (xorshift; test
/// data only).
fn rand_vec(seed: u64, n: usize, scale: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn f32_array(v: &[f64], shape: &[usize]) -> Array {
    Array::from_vec(v.iter().map(|&x| x as f32).collect(), shape).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * (1.0 + w.abs());
        assert!(ok, "{what}: element {i}: got {g}, want {w} (tol {tol})");
    }
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

#[test]
fn take_gathers_along_an_axis() {
    let x = rand_vec(1, 4 * 5 * 3, 1.0);
    let a = f32_array(&x, &[4, 5, 3]);
    let idx = [4i32, -1, 0, 2, 2, -5];
    let ia = Array::from_slice(&idx, &[2, 3]).unwrap();
    let out = ops::take(&a, &ia, Some(1)).unwrap();
    assert_eq!(out.shape(), &[4, 2, 3, 3]);
    let mut want = vec![];
    for i in 0..4 {
        for &j in &idx {
            let j = if j < 0 { j + 5 } else { j } as usize;
            for k in 0..3 {
                want.push(x[(i * 5 + j) * 3 + k] as f32 as f64);
            }
        }
    }
    assert_close(&out.to_f64_vec().unwrap(), &want, 0.0, "take axis 1");
    // Flattened, from a transposed (strided) view, with uint32 indices.
    let t = ops::transpose(&a, &[2, 0, 1]).unwrap();
    let flat = ops::take(&t, &Array::from_slice(&[0u32, 7, 59], &[3]).unwrap(), None).unwrap();
    let tv = t.to_f64_vec().unwrap();
    assert_close(&flat.to_f64_vec().unwrap(), &[tv[0], tv[7], tv[59]], 0.0, "take flat");
    // Out of range fails at evaluation, with an error rather than a panic.
    let bad = ops::take(&a, &Array::from_slice(&[5i64], &[1]).unwrap(), Some(1)).unwrap();
    let e = bad.eval().unwrap_err();
    assert!(e.to_string().contains("out of bounds"), "{e}");
    let res = ops::take(&a, &f32_array(&[0.0], &[1]), Some(0));
    assert!(matches!(res, Err(Error::Dtype(_))), "{res:?}");
}

#[test]
fn take_along_axis_picks_per_position() {
    let x = rand_vec(2, 3 * 5, 1.0);
    let a = f32_array(&x, &[3, 5]);
    let idx = [0i64, 4, 3, -1, 2, 2];
    let out = ops::take_along_axis(&a, &Array::from_slice(&idx, &[3, 2]).unwrap(), Some(1)).unwrap();
    let want: Vec<f64> = (0..6)
        .map(|p| {
            let (i, j) = (p / 2, idx[p]);
            x[i * 5 + if j < 0 { j + 5 } else { j } as usize] as f32 as f64
        })
        .collect();
    assert_close(&out.to_f64_vec().unwrap(), &want, 0.0, "take_along_axis");
    // Indices broadcast over the other axis.
    let out = ops::take_along_axis(&a, &Array::from_slice(&[1u32, 0], &[1, 2]).unwrap(), Some(1)).unwrap();
    assert_eq!(out.shape(), &[3, 2]);
    let want: Vec<f64> = (0..6).map(|p| x[(p / 2) * 5 + [1, 0][p % 2]] as f32 as f64).collect();
    assert_close(&out.to_f64_vec().unwrap(), &want, 0.0, "take_along_axis broadcast");
    // Along axis 0 (argsort-style use): sorts each column.
    let order = ops::argsort(&a, Some(0)).unwrap();
    let sorted = ops::take_along_axis(&a, &order, Some(0)).unwrap();
    assert_close(
        &sorted.to_f64_vec().unwrap(),
        &ops::sort(&a, Some(0)).unwrap().to_f64_vec().unwrap(),
        0.0,
        "take_along_axis(argsort) == sort",
    );
}

#[test]
fn slice_update_replaces_a_region() {
    let x = rand_vec(3, 4 * 6, 1.0);
    let u = rand_vec(4, 2 * 3, 1.0);
    let a = f32_array(&x, &[4, 6]);
    let args = [SliceArg::range(1, 3), SliceArg::new(None, None, 2)];
    let out = ops::slice_update(&a, &f32_array(&u, &[2, 3]), &args).unwrap();
    let mut want: Vec<f64> = x.iter().map(|&v| v as f32 as f64).collect();
    for i in 0..2 {
        for j in 0..3 {
            want[(1 + i) * 6 + 2 * j] = u[i * 3 + j] as f32 as f64;
        }
    }
    assert_close(&out.to_f64_vec().unwrap(), &want, 0.0, "slice_update");
    // The input is unchanged; a negative step and a broadcast update.
    assert_close(&a.to_f64_vec().unwrap(), &x.iter().map(|&v| v as f32 as f64).collect::<Vec<_>>(), 0.0, "input kept");
    let out = ops::slice_update(&a, &f32_array(&[9.0], &[1]), &[SliceArg::ALL, SliceArg::new(Some(-1), Some(2), -2)]).unwrap();
    let mut want: Vec<f64> = x.iter().map(|&v| v as f32 as f64).collect();
    for i in 0..4 {
        for j in [5, 3] {
            want[i * 6 + j] = 9.0;
        }
    }
    assert_close(&out.to_f64_vec().unwrap(), &want, 0.0, "slice_update negative step");
    let res = ops::slice_update(&a, &f32_array(&[1.0, 2.0], &[2]), &[SliceArg::range(0, 1)]);
    assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");
}

fn softmax_ref(x: &[f64], shape: &[usize], axis: usize) -> Vec<f64> {
    let st = strides(shape);
    let n = shape[axis];
    let mut out = vec![0.0; x.len()];
    for base in 0..x.len() {
        if (base / st[axis]) % n != 0 {
            continue;
        }
        let idx: Vec<usize> = (0..n).map(|k| base + k * st[axis]).collect();
        let m = idx.iter().map(|&i| x[i]).fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = idx.iter().map(|&i| (x[i] - m).exp()).sum();
        for &i in &idx {
            out[i] = (x[i] - m).exp() / s;
        }
    }
    out
}

#[test]
fn softmax_matches_float64() {
    let shape = [3, 7, 5];
    let x: Vec<f64> = rand_vec(5, 105, 40.0).iter().map(|&v| v as f32 as f64).collect();
    for axis in [1isize, -1, 0] {
        let ax = if axis < 0 { 2 } else { axis as usize };
        let want = softmax_ref(&x, &shape, ax);
        let got = ops::softmax(&f32_array(&x, &shape), axis).unwrap();
        assert_close(&got.to_f64_vec().unwrap(), &want, 1e-6, "softmax f32");
    }
    // Half types accumulate in float32: only the final rounding is lost.
    let xh: Vec<f64> = x.iter().map(|&v| f16::from_f64(v / 8.0).to_f64()).collect();
    let a = Array::from_vec(xh.iter().map(|&v| f16::from_f64(v)).collect(), &shape).unwrap();
    assert_close(&ops::softmax(&a, -1).unwrap().to_f64_vec().unwrap(), &softmax_ref(&xh, &shape, 2), 1e-3, "softmax f16");
    let xb: Vec<f64> = x.iter().map(|&v| bf16::from_f64(v).to_f64()).collect();
    let a = Array::from_vec(xb.iter().map(|&v| bf16::from_f64(v)).collect(), &shape).unwrap();
    assert_close(&ops::softmax(&a, 1).unwrap().to_f64_vec().unwrap(), &softmax_ref(&xb, &shape, 1), 8e-3, "softmax bf16");
    // Huge logits do not overflow; f64 stays f64.
    let big = Array::from_slice(&[1000.0f64, 1001.0, 999.0], &[3]).unwrap();
    assert_close(&ops::softmax(&big, 0).unwrap().to_vec::<f64>().unwrap(), &softmax_ref(&[1000.0, 1001.0, 999.0], &[3], 0), 1e-14, "softmax big");
}

#[test]
fn logsumexp_matches_float64() {
    let shape = [4, 3, 6];
    let x: Vec<f64> = rand_vec(6, 72, 30.0).iter().map(|&v| v as f32 as f64).collect();
    let a = f32_array(&x, &shape);
    let got = ops::logsumexp(&a, &[0, 2], false).unwrap();
    assert_eq!(got.shape(), &[3]);
    let want: Vec<f64> = (0..3)
        .map(|j| {
            let vals: Vec<f64> = (0..4).flat_map(|i| (0..6).map(move |k| (i, k))).map(|(i, k)| x[(i * 3 + j) * 6 + k]).collect();
            let m = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            m + vals.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
        })
        .collect();
    assert_close(&got.to_f64_vec().unwrap(), &want, 1e-6, "logsumexp");
    let kept = ops::logsumexp(&a, &[0, 2], true).unwrap();
    assert_eq!(kept.shape(), &[1, 3, 1]);
    let last = ops::logsumexp(&a, &[-1], false).unwrap();
    let want: Vec<f64> = (0..12)
        .map(|r| {
            let row = &x[r * 6..r * 6 + 6];
            row.iter().map(|v| v.exp()).sum::<f64>().ln()
        })
        .collect();
    assert_close(&last.to_f64_vec().unwrap(), &want, 1e-6, "logsumexp last");
    let inf = Array::from_slice(&[f32::NEG_INFINITY, f32::NEG_INFINITY, 1.0, f32::INFINITY], &[2, 2]).unwrap();
    assert_eq!(ops::logsumexp(&inf, &[1], false).unwrap().to_vec::<f32>().unwrap(), vec![f32::NEG_INFINITY, f32::INFINITY]);
}

#[test]
fn cumsum_all_directions() {
    let shape = [3, 5, 2];
    let x: Vec<f64> = rand_vec(7, 30, 10.0).iter().map(|v| v.round()).collect();
    for (reverse, inclusive) in [(false, true), (true, true), (false, false), (true, false)] {
        let mut want = vec![0.0; 30];
        for i in 0..3 {
            for k in 0..2 {
                let mut acc = 0.0;
                for s in 0..5 {
                    let j = if reverse { 4 - s } else { s };
                    let p = (i * 5 + j) * 2 + k;
                    if inclusive {
                        acc += x[p];
                        want[p] = acc;
                    } else {
                        want[p] = acc;
                        acc += x[p];
                    }
                }
            }
        }
        let a = f32_array(&x, &shape);
        let got = ops::cumsum(&a, Some(1), reverse, inclusive).unwrap();
        assert_close(&got.to_f64_vec().unwrap(), &want, 1e-6, "cumsum f32");
        let ai = Array::from_vec(x.iter().map(|&v| v as i32).collect(), &shape).unwrap();
        let got = ops::cumsum(&ai, Some(-2), reverse, inclusive).unwrap();
        assert_eq!(got.dtype(), Dtype::I32);
        assert_close(&got.to_f64_vec().unwrap(), &want, 0.0, "cumsum i32");
    }
    let b = Array::from_slice(&[true, false, true], &[3]).unwrap();
    assert_eq!(ops::cumsum(&b, None, false, true).unwrap().to_vec::<i32>().unwrap(), vec![1, 1, 2]);
}

#[test]
fn sort_argsort_topk() {
    let mut x: Vec<f64> = rand_vec(8, 4 * 9, 5.0).iter().map(|&v| v as f32 as f64).collect();
    x[3] = f64::NAN;
    x[20] = 1.0;
    x[21] = 1.0;
    let a = f32_array(&x, &[4, 9]);
    let sorted = ops::sort(&a, Some(1)).unwrap().to_f64_vec().unwrap();
    let args = ops::argsort(&a, Some(-1)).unwrap().to_vec::<u32>().unwrap();
    for r in 0..4 {
        let row = &x[r * 9..r * 9 + 9];
        let mut order: Vec<usize> = (0..9).collect();
        order.sort_by(|&i, &j| row[i].total_cmp(&row[j]));
        let want: Vec<f64> = order.iter().map(|&i| row[i]).collect();
        assert_close(&sorted[r * 9..r * 9 + 9], &want, 0.0, "sort");
        assert_eq!(args[r * 9..r * 9 + 9].iter().map(|&i| i as usize).collect::<Vec<_>>(), order, "argsort row {r}");
    }
    // Along axis 0, and topk.
    let s0 = ops::sort(&a, Some(0)).unwrap().to_f64_vec().unwrap();
    for c in 0..9 {
        let mut col: Vec<f64> = (0..4).map(|r| x[r * 9 + c]).collect();
        col.sort_by(|a, b| a.total_cmp(b));
        assert_close(&(0..4).map(|r| s0[r * 9 + c]).collect::<Vec<_>>(), &col, 0.0, "sort axis 0");
    }
    let y: Vec<f64> = rand_vec(9, 3 * 10, 1.0).iter().map(|&v| v as f32 as f64).collect();
    let t = ops::topk(&f32_array(&y, &[3, 10]), 3, Some(1)).unwrap();
    assert_eq!(t.shape(), &[3, 3]);
    let got = t.to_f64_vec().unwrap();
    for r in 0..3 {
        let mut row = y[r * 10..r * 10 + 10].to_vec();
        row.sort_by(|a, b| a.total_cmp(b));
        assert_close(&got[r * 3..r * 3 + 3], &row[7..], 0.0, "topk");
    }
    let res = ops::topk(&a, 10, Some(1));
    assert!(matches!(res, Err(Error::InvalidArgument(_))), "{res:?}");
}


#[test]
fn erf_and_activations_match_float64() {
    let mut x = rand_vec(10, 200, 4.0);
    x.extend([0.0, 1e-5, -1e-3, 0.49, 0.51, 2.9, 3.1, -5.5, 7.0]);
    let want: Vec<f64> = x.iter().map(|&v| erf_ref(v)).collect();
    let got = ops::erf(&Array::from_slice(&x, &[x.len()]).unwrap()).unwrap().to_vec::<f64>().unwrap();
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-13 + 1e-12 * w.abs(), "erf f64 at {}: {g} vs {w}", x[i]);
    }
    let xf: Vec<f64> = x.iter().map(|&v| v as f32 as f64).collect();
    let got = ops::erf(&f32_array(&xf, &[x.len()])).unwrap().to_f64_vec().unwrap();
    for (i, (&g, &v)) in got.iter().zip(&xf).enumerate() {
        let w = erf_ref(v);
        assert!((g - w).abs() <= 2.5e-7 * w.abs().max(1e-30) + 1e-30, "erf f32 at {}: {g} vs {w}", x[i]);
    }
    let a = f32_array(&xf, &[xf.len()]);
    let gelu: Vec<f64> = xf.iter().map(|&v| v * 0.5 * (1.0 + erf_ref(v / 2f64.sqrt()))).collect();
    assert_close(&ops::gelu(&a).unwrap().to_f64_vec().unwrap(), &gelu, 1e-6, "gelu");
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let approx: Vec<f64> = xf.iter().map(|&v| 0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh())).collect();
    assert_close(&ops::gelu_approx(&a).unwrap().to_f64_vec().unwrap(), &approx, 1e-6, "gelu_approx");
    let silu: Vec<f64> = xf.iter().map(|&v| v / (1.0 + (-v).exp())).collect();
    assert_close(&ops::silu(&a).unwrap().to_f64_vec().unwrap(), &silu, 1e-6, "silu");
}

#[test]
fn norms_match_float64() {
    let (rows, d) = (6, 37);
    let x: Vec<f64> = rand_vec(11, rows * d, 3.0).iter().map(|v| (v + 0.7) as f32 as f64).collect();
    let w: Vec<f64> = rand_vec(12, d, 1.0).iter().map(|&v| v as f32 as f64).collect();
    let b: Vec<f64> = rand_vec(13, d, 1.0).iter().map(|&v| v as f32 as f64).collect();
    let eps = 1e-5;
    let (mut rms, mut rms_nw, mut ln, mut ln_nw) = (vec![], vec![], vec![], vec![]);
    for r in 0..rows {
        let row = &x[r * d..(r + 1) * d];
        let ms = row.iter().map(|v| v * v).sum::<f64>() / d as f64;
        let mean = row.iter().sum::<f64>() / d as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
        for i in 0..d {
            rms.push(row[i] / (ms + eps).sqrt() * w[i]);
            rms_nw.push(row[i] / (ms + eps).sqrt());
            ln.push((row[i] - mean) / (var + eps).sqrt() * w[i] + b[i]);
            ln_nw.push((row[i] - mean) / (var + eps).sqrt());
        }
    }
    let xa = f32_array(&x, &[2, 3, d]);
    let (wa, ba) = (f32_array(&w, &[d]), f32_array(&b, &[d]));
    let got = |a: Array| a.to_f64_vec().unwrap();
    assert_close(&got(fast::rms_norm(&xa, Some(&wa), eps as f32).unwrap()), &rms, 2e-6, "rms_norm");
    assert_close(&got(fast::rms_norm(&xa, None, eps as f32).unwrap()), &rms_nw, 2e-6, "rms_norm no weight");
    assert_close(&got(fast::layer_norm(&xa, Some(&wa), Some(&ba), eps as f32).unwrap()), &ln, 2e-6, "layer_norm");
    assert_close(&got(fast::layer_norm(&xa, None, None, eps as f32).unwrap()), &ln_nw, 2e-6, "layer_norm plain");
    // float16 input: float32 accumulation, float16 rounding of the result.
    let xh = Array::from_vec(x.iter().map(|&v| f16::from_f64(v)).collect(), &[rows, d]).unwrap();
    let xr: Vec<f64> = x.iter().map(|&v| f16::from_f64(v).to_f64()).collect();
    let want: Vec<f64> = (0..rows)
        .flat_map(|r| {
            let row = &xr[r * d..(r + 1) * d];
            let ms = row.iter().map(|v| v * v).sum::<f64>() / d as f64;
            row.iter().map(move |v| v / (ms + eps).sqrt()).collect::<Vec<_>>()
        })
        .collect();
    assert_close(&got(fast::rms_norm(&xh, None, eps as f32).unwrap()), &want, 1e-3, "rms_norm f16");
    // Transposed (strided) input.
    let t = ops::transpose(&f32_array(&x, &[d, rows]), &[]).unwrap();
    let tv = t.to_f64_vec().unwrap();
    let want: Vec<f64> = (0..d)
        .flat_map(|r| {
            let row = &tv[r * rows..(r + 1) * rows];
            let ms = row.iter().map(|v| v * v).sum::<f64>() / rows as f64;
            row.iter().map(move |v| v / (ms + eps).sqrt()).collect::<Vec<_>>()
        })
        .collect();
    let _ = want;
    let tr = fast::rms_norm(&t, None, eps as f32).unwrap();
    let tvr = t.to_f64_vec().unwrap();
    let want: Vec<f64> = (0..rows)
        .flat_map(|r| {
            let row = &tvr[r * d..(r + 1) * d];
            let ms = row.iter().map(|v| v * v).sum::<f64>() / d as f64;
            row.iter().map(move |v| v / (ms + eps).sqrt()).collect::<Vec<_>>()
        })
        .collect();
    assert_close(&got(tr), &want, 2e-6, "rms_norm strided");
    let res = fast::layer_norm(&xa, Some(&f32_array(&w[..5], &[5])), None, 1e-5);
    assert!(matches!(res, Err(Error::Shape(_))), "{res:?}");
}

fn rope_ref(x: &[f64], shape: &[usize], dims: usize, traditional: bool, base: f64, scale: f64, offset: usize) -> Vec<f64> {
    let (l, d) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let mut out = x.to_vec();
    for r in 0..x.len() / d {
        let pos = (offset + r % l) as f64 * scale;
        for i in 0..dims / 2 {
            let theta = pos / base.powf(2.0 * i as f64 / dims as f64);
            let (i0, i1) = if traditional { (2 * i, 2 * i + 1) } else { (i, i + dims / 2) };
            let (a, b) = (x[r * d + i0], x[r * d + i1]);
            out[r * d + i0] = a * theta.cos() - b * theta.sin();
            out[r * d + i1] = a * theta.sin() + b * theta.cos();
        }
    }
    out
}

#[test]
fn rope_matches_float64() {
    let shape = [2, 3, 7, 16];
    let x: Vec<f64> = rand_vec(14, 2 * 3 * 7 * 16, 2.0).iter().map(|&v| v as f32 as f64).collect();
    let a = f32_array(&x, &shape);
    for (dims, traditional, offset, scale) in [(16, false, 0, 1.0), (16, true, 5, 1.0), (8, false, 3, 0.5), (12, true, 100, 1.0)] {
        let got = fast::rope(&a, dims, traditional, 10000.0, scale as f32, offset).unwrap();
        let want = rope_ref(&x, &shape, dims, traditional, 10000.0, scale, offset);
        assert_close(&got.to_f64_vec().unwrap(), &want, 2e-6, &format!("rope dims={dims} traditional={traditional}"));
    }
    let res = fast::rope(&a, 7, false, 10000.0, 1.0, 0);
    assert!(matches!(res, Err(Error::InvalidArgument(_))), "{res:?}");
    let res = fast::rope(&a, 18, false, 10000.0, 1.0, 0);
    assert!(matches!(res, Err(Error::InvalidArgument(_))), "{res:?}");
}

/// The composed `rope_with`: custom frequencies (here `base^(2i / dims)`,
/// so the reference is the base formula), negative offsets and one offset
/// per batch example, against the float64 reference.
#[test]
fn rope_with_freqs_negative_and_per_batch_offsets_matches_float64() {
    let shape = [3, 2, 5, 16];
    let x: Vec<f64> = rand_vec(15, 3 * 2 * 5 * 16, 2.0).iter().map(|&v| v as f32 as f64).collect();
    let a = f32_array(&x, &shape);
    let base = 500.0f64;
    for (dims, traditional) in [(16, false), (12, true), (8, false)] {
        let f: Vec<f32> = (0..dims / 2).map(|i| base.powf(2.0 * i as f64 / dims as f64) as f32).collect();
        let freqs = fast::RopeFreqs::Freqs(Array::from_slice(&f, &[dims / 2]).unwrap());
        let got = fast::rope_with(&a, dims, traditional, &freqs, 1.0, &fast::RopeOffset::One(4)).unwrap();
        assert_close(&got.to_f64_vec().unwrap(), &rope_ref(&x, &shape, dims, traditional, base, 1.0, 4), 1e-5, &format!("freqs dims={dims}"));
        // Per-example offsets: example b starts at position 2b (+ 3 in the reference's offset).
        let per = fast::RopeOffset::PerBatch(Array::from_slice(&[3i32, 5, 7], &[3]).unwrap());
        let got = fast::rope_with(&a, dims, traditional, &fast::RopeFreqs::Base(base as f32), 0.5, &per).unwrap().to_f64_vec().unwrap();
        let n = x.len() / 3;
        for b in 0..3 {
            let want = rope_ref(&x[b * n..(b + 1) * n], &shape[1..], dims, traditional, base, 0.5, 3 + 2 * b);
            assert_close(&got[b * n..(b + 1) * n], &want, 1e-5, &format!("per-batch offset, example {b}"));
        }
    }
    // A negative offset turns the other way: rope at -k undoes rope at +k.
    let fwd = fast::rope(&a, 16, false, 10000.0, 1.0, 3).unwrap();
    let back = fast::rope_with(&fwd, 16, false, &fast::RopeFreqs::Base(10000.0), 1.0, &fast::RopeOffset::One(-3)).unwrap();
    // Position l was turned by (3 + l) and is now turned by (-3 + l): the net turn is 2l, so compare at l = 0 only.
    let (b0, x0) = (back.to_f64_vec().unwrap(), &x);
    for r in 0..x.len() / (5 * 16) {
        for k in 0..16 {
            let i = r * 5 * 16 + k;
            assert!((b0[i] - x0[i]).abs() < 1e-5, "negative offset at l = 0, row {r}, feature {k}");
        }
    }
    let bad = fast::RopeFreqs::Freqs(Array::from_slice(&[1.0f32; 7], &[7]).unwrap());
    assert!(matches!(fast::rope_with(&a, 16, false, &bad, 1.0, &fast::RopeOffset::One(0)), Err(Error::Shape(_))));
    let wrong_batch = fast::RopeOffset::PerBatch(Array::from_slice(&[1i32, 2], &[2]).unwrap());
    assert!(matches!(fast::rope_with(&a, 16, false, &fast::RopeFreqs::Base(1e4), 1.0, &wrong_batch), Err(Error::Shape(_))));
}

/// Naive attention in float64: full score matrix, full softmax.
#[allow(clippy::too_many_arguments)]
fn attention_ref(
    q: &[f64], k: &[f64], v: &[f64], dims: [usize; 6], scale: f64,
    causal: bool, mask: Option<&dyn Fn(usize, usize, usize, usize) -> f64>,
) -> Vec<f64> {
    let [b, hq, hk, l, s, d] = dims;
    let dv = d + 2;
    let mut out = vec![0.0; b * hq * l * dv];
    for bi in 0..b {
        for h in 0..hq {
            let hkv = h / (hq / hk);
            for i in 0..l {
                let qr = &q[((bi * hq + h) * l + i) * d..][..d];
                let mut sc: Vec<f64> = (0..s)
                    .map(|j| {
                        let kr = &k[((bi * hk + hkv) * s + j) * d..][..d];
                        let mut x = scale * qr.iter().zip(kr).map(|(a, b)| a * b).sum::<f64>();
                        if let Some(m) = mask {
                            x += m(bi, h, i, j);
                        }
                        if causal && j > i + s - l {
                            x = f64::NEG_INFINITY;
                        }
                        x
                    })
                    .collect();
                let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                sc.iter_mut().for_each(|x| *x = (*x - m).exp());
                let z: f64 = sc.iter().sum();
                for c in 0..dv {
                    out[((bi * hq + h) * l + i) * dv + c] =
                        (0..s).map(|j| sc[j] * v[((bi * hk + hkv) * s + j) * dv + c]).sum::<f64>() / z;
                }
            }
        }
    }
    out
}

#[test]
fn attention_matches_float64() {
    // S > 64 spans several key blocks of the online softmax.
    let (b, hq, hk, d) = (2, 4, 2, 8);
    for (l, s) in [(5, 150), (70, 70), (1, 9)] {
        let dv = d + 2;
        let q: Vec<f64> = rand_vec(20 + l as u64, b * hq * l * d, 1.5).iter().map(|&v| v as f32 as f64).collect();
        let k: Vec<f64> = rand_vec(21, b * hk * s * d, 1.5).iter().map(|&v| v as f32 as f64).collect();
        let v: Vec<f64> = rand_vec(22, b * hk * s * dv, 1.0).iter().map(|&v| v as f32 as f64).collect();
        let (qa, ka, va) = (f32_array(&q, &[b, hq, l, d]), f32_array(&k, &[b, hk, s, d]), f32_array(&v, &[b, hk, s, dv]));
        let scale = 1.0 / (d as f64).sqrt();
        let dims = [b, hq, hk, l, s, d];
        let run = |mask: Option<&Mask>| {
            fast::scaled_dot_product_attention(&qa, &ka, &va, scale as f32, mask).unwrap().to_f64_vec().unwrap()
        };
        assert_close(&run(None), &attention_ref(&q, &k, &v, dims, scale, false, None), 1e-5, "sdpa");
        assert_close(&run(Some(&Mask::Causal)), &attention_ref(&q, &k, &v, dims, scale, true, None), 1e-5, "sdpa causal");
        // An additive [L, S] mask broadcast over batch and heads.
        let mv: Vec<f64> = rand_vec(23, l * s, 4.0).iter().map(|&v| v as f32 as f64).collect();
        let madd = Mask::Array(f32_array(&mv, &[l, s]));
        let f = |_: usize, _: usize, i: usize, j: usize| mv[i * s + j];
        assert_close(&run(Some(&madd)), &attention_ref(&q, &k, &v, dims, scale, false, Some(&f)), 1e-5, "sdpa additive");
        // A bool keep-mask per batch [B, 1, 1, S] (padding), keeping key 0.
        let keep: Vec<bool> = (0..b * s).map(|p| p % s == 0 || (p * 7) % 5 != 0).collect();
        let mb = Mask::Array(Array::from_slice(&keep, &[b, 1, 1, s]).unwrap());
        let g = |bi: usize, _: usize, _: usize, j: usize| if keep[bi * s + j] { 0.0 } else { f64::NEG_INFINITY };
        assert_close(&run(Some(&mb)), &attention_ref(&q, &k, &v, dims, scale, false, Some(&g)), 1e-5, "sdpa bool");
    }
    // float64 end to end is exact to rounding.
    let q = rand_vec(30, 2 * 3 * 4, 1.0);
    let k = rand_vec(31, 2 * 1 * 90 * 4, 1.0);
    let v = rand_vec(32, 2 * 1 * 90 * 6, 1.0);
    let got = fast::scaled_dot_product_attention(
        &Array::from_slice(&q, &[2, 3, 1, 4]).unwrap(),
        &Array::from_slice(&k, &[2, 1, 90, 4]).unwrap(),
        &Array::from_slice(&v, &[2, 1, 90, 6]).unwrap(),
        0.5,
        Some(&Mask::Causal),
    )
    .unwrap();
    assert_eq!(got.dtype(), Dtype::F64);
    let want = attention_ref(&q, &k, &v, [2, 3, 1, 1, 90, 4], 0.5, true, None);
    assert_close(&got.to_vec::<f64>().unwrap(), &want, 1e-12, "sdpa f64");
    // Keys and values given as views, which the kernel reads in place: the
    // filled part of a longer cache (batches 1.. of a bigger buffer, positions
    // 0..s of `cap`; the rest NaN, so a read past the view shows) and a
    // `[B, S, H, D]` buffer transposed to `[B, H, S, D]`.
    {
        let (b, hq, hk, d, s, cap) = (2, 4, 2, 8, 70, 100);
        let dv = d + 2; // `attention_ref`'s value width
        let q = rand_vec(40, b * hq * d, 1.5);
        let k = rand_vec(41, b * hk * s * d, 1.5);
        let v = rand_vec(42, b * hk * s * dv, 1.0);
        let want = attention_ref(&q, &k, &v, [b, hq, hk, 1, s, d], 0.5, false, None);
        let qa = f32_array(&q, &[b, hq, 1, d]);
        let in_cache = |x: &[f64], w: usize| {
            let mut c = vec![f64::NAN; (b + 1) * hk * cap * w];
            for (r, row) in x.chunks(w).enumerate() {
                let (bh, j) = (r / s, r % s);
                let at = ((hk + bh) * cap + j) * w; // batch bh / hk + 1, head bh % hk
                c[at..at + w].copy_from_slice(row);
            }
            let all = SliceArg::ALL;
            let rows = [SliceArg::range(1, b as isize + 1), all, SliceArg::range(0, s as isize), all];
            ops::slice(&f32_array(&c, &[b + 1, hk, cap, w]), &rows).unwrap()
        };
        let seq_major = |x: &[f64], w: usize| {
            let mut c = vec![0.0; x.len()];
            for (r, row) in x.chunks(w).enumerate() {
                let (bi, h, j) = (r / (hk * s), r / s % hk, r % s);
                let at = ((bi * s + j) * hk + h) * w;
                c[at..at + w].copy_from_slice(row);
            }
            ops::transpose(&f32_array(&c, &[b, s, hk, w]), &[0, 2, 1, 3]).unwrap()
        };
        for (ka, va) in [(in_cache(&k, d), in_cache(&v, dv)), (seq_major(&k, d), seq_major(&v, dv))] {
            let got = fast::scaled_dot_product_attention(&qa, &ka, &va, 0.5, None).unwrap();
            assert_close(&got.to_f64_vec().unwrap(), &want, 1e-5, "sdpa on views");
        }
    }
    // Shape errors are errors.
    let e = fast::scaled_dot_product_attention(
        &Array::from_slice(&q, &[2, 3, 1, 4]).unwrap(),
        &Array::from_slice(&k, &[2, 2, 45, 4]).unwrap(),
        &Array::from_slice(&v[..2 * 2 * 45 * 6], &[2, 2, 45, 6]).unwrap(),
        0.5,
        None,
    );
    assert!(matches!(e, Err(Error::Shape(_))), "{e:?}");
}
