//! Convolutions against a direct nested-loop reference (strides, padding
//! low/high including negative, kernel and input dilation, groups, flip; 1,
//! 2 and 3 spatial axes; every float type; strided operands), the
//! transposed convolutions and `convolve` against their definitions, the
//! argument checks, and `as_strided` (views, bounds).

mod common;

use common::Rng;
use weft::ops::{self, ConvPadding};
use weft::{Array, Dtype, Error};

/// One convolution's arguments.
#[derive(Clone, Debug)]
struct Case {
    x: Vec<usize>,
    w: Vec<usize>,
    stride: Vec<usize>,
    lo: Vec<isize>,
    hi: Vec<isize>,
    kd: Vec<usize>,
    id: Vec<usize>,
    groups: usize,
    flip: bool,
}

/// The reference: every output element as a sum over taps and channels,
/// reading the input-dilated, padded input by its definition.
fn reference(c: &Case, x: &[f64], w: &[f64]) -> (Vec<usize>, Vec<f64>) {
    let d = c.x.len() - 2;
    let (n, ci, co) = (c.x[0], c.x[d + 1], c.w[0]);
    let (cg, og) = (ci / c.groups, co / c.groups);
    let mut out = vec![n];
    for a in 0..d {
        let dil = (c.x[a + 1] as isize - 1) * c.id[a] as isize + 1;
        let padded = dil + c.lo[a] + c.hi[a];
        let span = (c.w[a + 1] as isize - 1) * c.kd[a] as isize + 1;
        out.push(((padded - span) / c.stride[a] as isize + 1) as usize);
    }
    out.push(co);
    let idx = common::indices(&out);
    let xstr = strides(&c.x);
    let wstr = strides(&c.w);
    let taps = common::indices(&c.w[1..=d]);
    let y = idx
        .iter()
        .map(|o| {
            let (b, oc) = (o[0], o[d + 1]);
            let g = oc / og;
            let mut s = 0.0;
            for k in &taps {
                let mut at = Some(b * xstr[0]);
                for a in 0..d {
                    let kk = if c.flip { c.w[a + 1] - 1 - k[a] } else { k[a] };
                    let q = (o[a + 1] * c.stride[a]) as isize - c.lo[a] + (kk * c.kd[a]) as isize;
                    let len = (c.x[a + 1] as isize - 1) * c.id[a] as isize + 1;
                    at = match at {
                        Some(p) if q >= 0 && q < len && q % c.id[a] as isize == 0 => Some(p + (q as usize / c.id[a]) * xstr[a + 1]),
                        _ => None,
                    };
                }
                let Some(p) = at else { continue };
                for ch in 0..cg {
                    let mut wi = oc * wstr[0] + ch;
                    for a in 0..d {
                        wi += k[a] * wstr[a + 1];
                    }
                    s += x[p + g * cg + ch] * w[wi];
                }
            }
            s
        })
        .collect();
    (out, y)
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

fn rand(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

fn run(c: &Case, xa: &Array, wa: &Array) -> weft::Result<Array> {
    let i = |v: &[usize]| v.iter().map(|&x| x as isize).collect::<Vec<_>>();
    ops::conv_general(xa, wa, &i(&c.stride), &ConvPadding::LoHi(c.lo.clone(), c.hi.clone()), &i(&c.kd), &i(&c.id), c.groups as isize, c.flip)
}

fn check(c: &Case, dtype: Dtype, rng: &mut Rng) {
    let x = rand(rng, c.x.iter().product());
    let w = rand(rng, c.w.iter().product());
    // Values rounded to the dtype first, so the reference sees what the kernel sees.
    let x: Vec<f64> = x.iter().map(|&v| common::round_to(v, dtype)).collect();
    let w: Vec<f64> = w.iter().map(|&v| common::round_to(v, dtype)).collect();
    let (shape, want) = reference(c, &x, &w);
    let y = run(c, &common::array(&x, &c.x, dtype), &common::array(&w, &c.w, dtype)).unwrap();
    assert_eq!(y.shape(), &shape[..], "{c:?}");
    assert_eq!(y.dtype(), dtype);
    let got = common::read(&y);
    let taps: usize = c.w[1..c.w.len() - 1].iter().product::<usize>() * c.w[c.w.len() - 1];
    let tol = match dtype {
        Dtype::F64 => 1e-12,
        Dtype::F32 => 1e-5,
        // One rounding of the f32 sum to the output type.
        Dtype::F16 => 2e-3,
        _ => 1e-2,
    } * (taps as f64).sqrt().max(1.0);
    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
        assert!((g - e).abs() <= tol * (1.0 + e.abs()), "{dtype} {c:?}: element {i}: got {g}, want {e}");
    }
}

fn case(x: &[usize], w: &[usize], stride: &[usize], lo: &[isize], hi: &[isize], kd: &[usize], id: &[usize], groups: usize, flip: bool) -> Case {
    Case { x: x.to_vec(), w: w.to_vec(), stride: stride.to_vec(), lo: lo.to_vec(), hi: hi.to_vec(), kd: kd.to_vec(), id: id.to_vec(), groups, flip }
}

fn cases() -> Vec<Case> {
    vec![
        case(&[2, 9, 3], &[4, 3, 3], &[1], &[0], &[0], &[1], &[1], 1, false),
        case(&[2, 9, 4], &[6, 3, 2], &[2], &[1], &[2], &[1], &[1], 2, false),
        case(&[1, 10, 4], &[4, 2, 1], &[1], &[2], &[0], &[3], &[1], 4, true),
        case(&[2, 5, 3], &[2, 3, 3], &[1], &[2], &[2], &[1], &[2], 1, true),
        case(&[1, 8, 2], &[3, 3, 2], &[3], &[-1], &[1], &[2], &[1], 1, false),
        case(&[2, 6, 5, 3], &[4, 3, 2, 3], &[2, 1], &[1, 0], &[1, 2], &[1, 2], &[1, 1], 1, false),
        case(&[1, 4, 4, 4], &[6, 2, 3, 2], &[1, 2], &[0, 1], &[1, 1], &[1, 1], &[2, 3], 2, true),
        case(&[1, 7, 7, 6], &[6, 3, 3, 1], &[2, 2], &[1, 1], &[1, 1], &[1, 1], &[1, 1], 6, false),
        case(&[1, 4, 3, 5, 2], &[3, 2, 2, 3, 2], &[1, 2, 1], &[1, 0, 1], &[0, 1, 1], &[1, 1, 2], &[1, 2, 1], 1, false),
        case(&[2, 3, 4, 3, 4], &[4, 2, 1, 2, 2], &[2, 1, 1], &[0, 0, 0], &[1, 0, 0], &[1, 1, 1], &[2, 1, 1], 2, true),
    ]
}

#[test]
fn conv_general_matches_the_nested_loop_reference() {
    let mut rng = Rng::new(11);
    for c in cases() {
        for dtype in [Dtype::F64, Dtype::F32, Dtype::F16, Dtype::BF16] {
            check(&c, dtype, &mut rng);
        }
    }
}

#[test]
fn random_convolutions_match_the_reference() {
    let mut rng = Rng::new(5);
    for _ in 0..60 {
        let d = rng.int(1, 3) as usize;
        let groups = rng.int(1, 3) as usize;
        let (cg, og) = (rng.int(1, 3) as usize, rng.int(1, 2) as usize);
        let mut x = vec![rng.int(1, 2) as usize];
        let mut w = vec![groups * og];
        let (mut stride, mut lo, mut hi, mut kd, mut id) = (vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..d {
            let k = rng.int(1, 3) as usize;
            let (s, kdl, idl) = (rng.int(1, 3) as usize, rng.int(1, 2) as usize, rng.int(1, 2) as usize);
            let span = (k - 1) * kdl + 1;
            let len = rng.int(span as i64 + 1, 7) as usize;
            x.push(len);
            w.push(k);
            stride.push(s);
            kd.push(kdl);
            id.push(idl);
            lo.push(rng.int(-1, 2) as isize);
            hi.push(rng.int(0, 2) as isize);
        }
        x.push(groups * cg);
        w.push(cg);
        let c = Case { x, w, stride, lo, hi, kd, id, groups, flip: rng.int(0, 1) == 1 };
        check(&c, Dtype::F64, &mut rng);
    }
}

#[test]
fn strided_operands_are_read_in_place_or_copied() {
    let mut rng = Rng::new(2);
    let c = case(&[2, 6, 3], &[4, 3, 3], &[1], &[1], &[1], &[1], &[1], 1, false);
    let x = rand(&mut rng, 36);
    let w = rand(&mut rng, 36);
    let (_, want) = reference(&c, &x, &w);
    // The same values, stored transposed ([C, L, N] and [K, C_in, C_out])
    // and viewed back through a transpose.
    let mut xs = vec![0.0; 36];
    for (i, ix) in common::indices(&[2, 6, 3]).iter().enumerate() {
        xs[(ix[2] * 6 + ix[1]) * 2 + ix[0]] = x[i];
    }
    let mut ws = vec![0.0; 36];
    for (i, ix) in common::indices(&[4, 3, 3]).iter().enumerate() {
        ws[(ix[1] * 3 + ix[2]) * 4 + ix[0]] = w[i];
    }
    let xt = ops::transpose(&Array::from_slice(&xs, &[3, 6, 2]).unwrap(), &[2, 1, 0]).unwrap();
    let wt = ops::transpose(&Array::from_slice(&ws, &[3, 3, 4]).unwrap(), &[2, 0, 1]).unwrap();
    let y = run(&c, &xt, &wt).unwrap();
    let got = common::read(&y);
    for (g, e) in got.iter().zip(&want) {
        assert!((g - e).abs() < 1e-12);
    }
}

#[test]
fn conv1d_2d_3d_are_symmetric_cases_of_conv_general() {
    let mut rng = Rng::new(4);
    let x = Array::from_slice(&rand(&mut rng, 2 * 7 * 6 * 4), &[2, 7, 6, 4]).unwrap();
    let w = Array::from_slice(&rand(&mut rng, 6 * 3 * 2 * 2), &[6, 3, 2, 2]).unwrap();
    let a = ops::conv2d(&x, &w, [2, 1], [1, 2], [1, 2], 2).unwrap();
    let b = ops::conv_general(&x, &w, &[2, 1], &ConvPadding::Symmetric(vec![1, 2]), &[1, 2], &[1], 2, false).unwrap();
    assert_eq!(a.shape(), &[2, 4, 8, 6]);
    assert_eq!(common::read(&a), common::read(&b));
    let x1 = Array::from_slice(&rand(&mut rng, 10), &[1, 5, 2]).unwrap();
    let w1 = Array::from_slice(&rand(&mut rng, 12), &[2, 3, 2]).unwrap();
    let y1 = ops::conv1d(&x1, &w1, 1, 1, 1, 1).unwrap();
    let y2 = ops::conv2d(&ops::expand_dims(&x1, 2).unwrap(), &ops::expand_dims(&w1, 2).unwrap(), [1, 1], [1, 0], [1, 1], 1).unwrap();
    assert_eq!(common::read(&y1), common::read(&y2));
    let x3 = Array::from_slice(&rand(&mut rng, 3 * 4 * 5 * 2), &[1, 3, 4, 5, 2]).unwrap();
    let w3 = Array::from_slice(&rand(&mut rng, 3 * 2 * 2 * 2 * 2), &[3, 2, 2, 2, 2]).unwrap();
    assert_eq!(ops::conv3d(&x3, &w3, [1, 1, 2], [0, 1, 0], [1, 1, 1], 1).unwrap().shape(), &[1, 2, 5, 2, 3]);
}

/// A transposed convolution scatters each input element times the kernel:
/// `out[i * s + k * d - p] += x[i] w[k]` (summed over channels), as its
/// definition reads.
#[test]
fn conv_transpose_scatters_the_kernel() {
    let mut rng = Rng::new(9);
    for (l, k, s, p, d, op, ci, co) in [(5, 3, 2, 1, 1, 1, 2, 3), (4, 2, 1, 0, 2, 0, 1, 2), (6, 3, 3, 2, 1, 2, 2, 1)] {
        let x = rand(&mut rng, l * ci);
        let w = rand(&mut rng, co * k * ci);
        let len = (l - 1) * s + (k - 1) * d + 1 + op - 2 * p;
        let mut want = vec![0.0; len * co];
        for i in 0..l {
            for t in 0..k {
                let at = (i * s + t * d) as isize - p as isize;
                if at < 0 || at >= len as isize {
                    continue;
                }
                for o in 0..co {
                    for c in 0..ci {
                        want[at as usize * co + o] += x[i * ci + c] * w[(o * k + t) * ci + c];
                    }
                }
            }
        }
        let xa = Array::from_slice(&x, &[1, l, ci]).unwrap();
        let wa = Array::from_slice(&w, &[co, k, ci]).unwrap();
        let y = ops::conv_transpose1d(&xa, &wa, s as isize, p as isize, d as isize, op as isize, 1).unwrap();
        assert_eq!(y.shape(), &[1, len, co]);
        let got = common::read(&y);
        for (g, e) in got.iter().zip(&want) {
            assert!((g - e).abs() < 1e-12, "{got:?} {want:?}");
        }
    }
    // 2-D and 3-D shapes follow (in - 1) * s - 2p + d (k - 1) + op + 1.
    let x = ops::zeros(&[1, 4, 5, 2], Dtype::F32).unwrap();
    let w = ops::zeros(&[3, 3, 2, 2], Dtype::F32).unwrap();
    assert_eq!(ops::conv_transpose2d(&x, &w, [2, 3], [1, 0], [1, 2], [1, 2], 1).unwrap().shape(), &[1, 8, 17, 3]);
    let x = ops::zeros(&[1, 2, 3, 2, 4], Dtype::F32).unwrap();
    let w = ops::zeros(&[2, 2, 2, 2, 2], Dtype::F32).unwrap();
    assert_eq!(ops::conv_transpose3d(&x, &w, [2, 2, 2], [0, 0, 0], [1, 1, 1], [0, 0, 0], 2).unwrap().shape(), &[1, 4, 6, 4, 2]);
}

#[test]
fn convolve_matches_numpy() {
    let a = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0], &[5]).unwrap();
    let v = Array::from_slice(&[1.0f64, 0.5, -1.0, 2.0], &[4]).unwrap();
    // np.convolve([1,2,3,4,5], [1,.5,-1,2], mode)
    let full = [1.0, 2.5, 3.0, 5.5, 8.0, 4.5, 3.0, 10.0];
    assert_eq!(common::read(&ops::convolve(&a, &v, "full").unwrap()), full);
    assert_eq!(common::read(&ops::convolve(&a, &v, "same").unwrap()), full[1..6]);
    assert_eq!(common::read(&ops::convolve(&a, &v, "valid").unwrap()), full[3..5]);
    assert_eq!(common::read(&ops::convolve(&v, &a, "valid").unwrap()), full[3..5]);
    assert!(matches!(ops::convolve(&a, &v, "middle"), Err(Error::InvalidArgument(_))));
    assert!(matches!(ops::convolve(&ops::reshape(&a, &[1, 5]).unwrap(), &v, "full"), Err(Error::InvalidArgument(_))));
}

#[test]
fn bad_arguments_are_errors() {
    let x = ops::zeros(&[2, 8, 4], Dtype::F32).unwrap();
    let w = ops::zeros(&[6, 3, 4], Dtype::F32).unwrap();
    let sym = |p: isize| ConvPadding::Symmetric(vec![p]);
    let conv = |x: &Array, w: &Array, s: isize, p: &ConvPadding, kd: isize, id: isize, g: isize| ops::conv_general(x, w, &[s], p, &[kd], &[id], g, false);
    assert!(matches!(conv(&ops::zeros(&[8, 4], Dtype::F32).unwrap(), &w, 1, &sym(0), 1, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &ops::zeros(&[6, 3, 3, 4], Dtype::F32).unwrap(), 1, &sym(0), 1, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &ops::zeros(&[6, 3, 3], Dtype::F32).unwrap(), 1, &sym(0), 1, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &w, 1, &sym(0), 1, 1, 3), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &ops::zeros(&[5, 3, 2], Dtype::F32).unwrap(), 1, &sym(0), 1, 1, 2), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &w, 0, &sym(0), 1, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &w, 1, &sym(0), 0, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &w, 1, &sym(0), 1, 0, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &w, 1, &sym(0), 1, 1, 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &ops::zeros(&[6, 30, 4], Dtype::F32).unwrap(), 1, &sym(0), 1, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&x, &w, 1, &ConvPadding::LoHi(vec![1], vec![1, 2]), 1, 1, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(ops::conv_general(&x, &w, &[1, 1], &sym(0), &[1], &[1], 1, false), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv(&ops::zeros(&[2, 8, 4], Dtype::I32).unwrap(), &w, 1, &sym(0), 1, 1, 1), Err(Error::Dtype(_))));
    assert!(matches!(ops::conv2d(&x, &w, [1, 1], [0, 0], [1, 1], 1), Err(Error::InvalidArgument(_))));
    // Negative padding cuts; an int weight is promoted.
    assert_eq!(conv(&x, &w, 1, &sym(-1), 1, 1, 1).unwrap().shape(), &[2, 4, 6]);
    let y = conv(&ops::zeros(&[2, 8, 4], Dtype::F16).unwrap(), &ops::zeros(&[6, 3, 4], Dtype::I32).unwrap(), 1, &sym(0), 1, 1, 1).unwrap();
    assert_eq!(y.dtype(), Dtype::F16);
}

#[test]
fn as_strided_views_and_checks_bounds() {
    let v: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let a = Array::from_slice(&v, &[3, 4]).unwrap();
    let w = ops::as_strided(&a, &[3, 3], &[3, 1], 1).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    // A negative stride walks backwards.
    let r = ops::as_strided(&a, &[12], &[-1], 11).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), v.iter().rev().copied().collect::<Vec<_>>());
    // Strided input: the elements in row-major order are what it indexes.
    let t = ops::transpose(&a, &[1, 0]).unwrap();
    let s = ops::as_strided(&t, &[2, 2], &[1, 3], 0).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 4.0, 5.0]);
    let rev = ops::flip(&ops::reshape(&a, &[12]).unwrap(), 0).unwrap();
    let s = ops::as_strided(&rev, &[3], &[2], 1).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![10.0, 8.0, 6.0]);
    let b = ops::broadcast_to(&Array::scalar(7.0f32), &[5]).unwrap();
    assert_eq!(ops::as_strided(&b, &[2, 2], &[2, 1], 1).unwrap().to_vec::<f32>().unwrap(), vec![7.0; 4]);
    // Out of bounds, either end: errors, never a read outside the buffer.
    assert!(matches!(ops::as_strided(&a, &[3], &[6], 0), Err(Error::InvalidArgument(_))));
    assert_eq!(ops::as_strided(&a, &[3], &[5], 1).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 6.0, 11.0]);
    assert!(matches!(ops::as_strided(&a, &[3], &[-1], 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(ops::as_strided(&a, &[2], &[1, 1], 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(ops::as_strided(&a, &[1], &[1], 12), Err(Error::InvalidArgument(_))));
    // Empty views read nothing.
    assert_eq!(ops::as_strided(&a, &[0, 4], &[100, 1], 0).unwrap().shape(), &[0, 4]);
}
