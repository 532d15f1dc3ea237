//! The CUDA backend against the CPU (or a float64 host reference where the
//! CPU kernel is not there yet), and the threading rules on GPU streams.
//!
//! Every test but `no_gpu_is_an_error_not_a_panic` needs a CUDA GPU and is
//! ignored by default: `scripts/gpu-check` builds this binary and runs it
//! with `--ignored` on a machine with one.

use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::thread;
use weft::primitive::UnaryOp;
use weft::{ops, Array, Axes, Device, Dtype, Error, Stream};

mod common;

const NEEDS_GPU: &str = "needs a CUDA GPU: run scripts/gpu-check";

/// Tests here change process-wide settings (the memory limit): one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn gpu() -> Stream {
    Stream::new(Device::gpu(0)).expect("a CUDA GPU (these tests run with --ignored on one)")
}

fn cpu() -> Stream {
    Stream::new(Device::cpu()).unwrap()
}

/// xorshift64*: reproducible inputs without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A host array of `dtype` with values drawn from [lo, hi) (integers
/// rounded toward zero), built on the CPU.
fn random(shape: &[usize], dtype: Dtype, lo: f64, hi: f64, seed: u64) -> Array {
    let mut r = Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| r.uniform(lo, hi)).collect();
    let a = Array::from_vec(v, shape).unwrap();
    let out = weft::with_stream(cpu(), || ops::astype(&a, dtype)).unwrap();
    out.eval().unwrap();
    out
}

fn values(a: &Array) -> Vec<f64> {
    weft::with_stream(cpu(), || a.to_f64_vec()).unwrap()
}

fn tolerance(d: Dtype) -> f64 {
    match d {
        Dtype::F16 => 2e-3,
        Dtype::BF16 => 1.6e-2,
        Dtype::F32 => 2e-6,
        Dtype::F64 => 1e-12,
        _ => 0.0,
    }
}

/// Element by element: equal (NaN equals NaN), or within `rel` of `want`.
fn assert_close(got: &[f64], want: &[f64], rel: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= rel * w.abs().max(1e-30) + rel;
        assert!(ok, "{what}: element {i}: gpu {g}, want {w}");
    }
}

/// `f` on the GPU and on the CPU, compared.
fn same_as_cpu(what: &str, rel: f64, f: impl Fn() -> weft::Result<Array>) {
    let g = weft::with_stream(gpu(), &f).unwrap();
    let c = weft::with_stream(cpu(), &f).unwrap();
    assert_eq!(g.shape(), c.shape(), "{what}: shape");
    assert_eq!(g.dtype(), c.dtype(), "{what}: dtype");
    let gv = values(&g);
    match weft::with_stream(cpu(), || c.to_f64_vec()) {
        Ok(cv) => assert_close(&gv, &cv, rel, what),
        Err(e) => panic!("{what}: the CPU reference failed: {e}"),
    }
}

#[test]
fn no_gpu_is_an_error_not_a_panic() {
    match Stream::new(Device::gpu(0)) {
        Ok(_) => eprintln!("a CUDA GPU is present: the --ignored tests exercise it"),
        Err(e) => {
            eprintln!("no GPU here ({e}); the GPU tests are skipped: {NEEDS_GPU}");
            assert!(matches!(e, Error::DeviceUnavailable(_)), "{e:?}");
            let res = weft::set_default_device(Device::gpu(0));
    assert!(matches!(res, Err(Error::DeviceUnavailable(_))), "{res:?}");
        }
    }
    let res = Stream::new(Device::gpu(15));
    assert!(matches!(res, Err(Error::DeviceUnavailable(_))), "{res:?}");
}

/// One-element host arrays (scalars) reach the GPU by memsets of 1, 2, 4 or
/// 8 bytes (`backend/cuda/memory.rs`, `set_element`); every dtype's bytes,
/// in order, next to a two-element array, which is copied.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn scalars_of_every_size_reach_the_gpu_exactly() {
    let _g = serial();
    let g = gpu();
    fn check<T: weft::buffer::CpuElement + PartialEq + std::fmt::Debug + Copy>(g: Stream, v: T, w: T) {
        let s = Array::scalar(v);
        let pair = Array::from_vec(vec![w, v], &[2]).unwrap();
        let (got, got_pair) = weft::with_stream(g, || {
            let z = ops::zeros(&[3], s.dtype())?;
            let zp = ops::zeros(&[2], s.dtype())?;
            Ok::<_, weft::Error>((ops::add(&z, &s)?, ops::add(&zp, &pair)?))
        })
        .unwrap();
        assert_eq!(got.to_vec::<T>().unwrap(), vec![v; 3], "{:?}", s.dtype());
        assert_eq!(got_pair.to_vec::<T>().unwrap(), vec![w, v], "{:?}", s.dtype());
    }
    check(g, 0xa5u8, 3);
    check(g, -91i8, 3);
    check(g, 0xabcdu16, 3);
    check(g, -12345i16, 3);
    check(g, weft::half::f16::from_f32(-1.2345), weft::half::f16::from_f32(2.5));
    check(g, weft::half::bf16::from_f32(3.1415), weft::half::bf16::from_f32(-0.5));
    check(g, 0x89ab_cdefu32, 3);
    check(g, -123_456_789i32, 3);
    check(g, 1.234_567_9f32, -2.0);
    check(g, 0x0123_4567_89ab_cdefu64, 3);
    check(g, -0x0123_4567_89ab_cdefi64, 3);
    check(g, 1.234_567_890_123_456_7f64, -2.0);
    let t = weft::with_stream(g, || ops::logical_and(&ops::full(&[3], true)?, &Array::scalar(true))).unwrap();
    assert_eq!(t.to_vec::<bool>().unwrap(), vec![true; 3]);
}

const FLOATS: [Dtype; 4] = [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16];
const INTS: [Dtype; 4] = [Dtype::I32, Dtype::I64, Dtype::U32, Dtype::U8];

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn unary_ops_match_cpu() {
    let _s = serial();
    use ops::*;
    // Every op of the table, on inputs moved into its range, contiguous and
    // through a transpose: `x * (hi - lo) + lo` with x in [0, 1).
    for (i, d) in FLOATS.into_iter().enumerate() {
        let x = random(&[37, 29], d, 0.0, 1.0, 30 + i as u64);
        let rel = tolerance(d).max(if d == Dtype::F32 { 4e-6 } else { 0.0 });
        for &op in UnaryOp::ALL {
            let (_, lo, hi) = common::unary_reference(op);
            let (sc, sh) = (astype(&Array::scalar(hi - lo), d).unwrap(), astype(&Array::scalar(lo), d).unwrap());
            let name = op.name();
            same_as_cpu(&format!("{name} {d}"), rel, || unary(op, &add(&multiply(&x, &sc)?, &sh)?));
            same_as_cpu(&format!("{name} {d} strided"), rel, || {
                unary(op, &add(&multiply(&transpose(&x, &[])?, &sc)?, &sh)?)
            });
        }
    }
    for (i, d) in INTS.into_iter().enumerate() {
        let x = random(&[1000], d, -100.0, 100.0, 20 + i as u64);
        same_as_cpu(&format!("neg {d}"), 0.0, || negative(&x));
        same_as_cpu(&format!("abs {d}"), 0.0, || abs(&x));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn binary_ops_match_cpu() {
    let _s = serial();
    use ops::*;
    let fs: [(&str, fn(&Array, &Array) -> weft::Result<Array>); 15] = [
        ("add", add),
        ("sub", subtract),
        ("mul", multiply),
        ("div", divide),
        ("floordiv", floor_divide),
        ("rem", remainder),
        ("pow", power),
        ("max", maximum),
        ("min", minimum),
        ("eq", equal),
        ("ne", not_equal),
        ("lt", less),
        ("le", less_equal),
        ("gt", greater),
        ("ge", greater_equal),
    ];
    let all: Vec<Dtype> = FLOATS.iter().chain(&INTS).copied().chain([Dtype::Bool]).collect();
    for (i, d) in all.into_iter().enumerate() {
        let (lo, hi) = if d.is_float() { (0.1, 3.0) } else { (0.0, 6.0) };
        // Broadcast [3, 1, 5] with [4, 5]; a transposed operand; a scalar.
        let a = random(&[3, 1, 5], d, lo, hi, 100 + i as u64);
        let b = random(&[4, 5], d, lo, hi, 200 + i as u64);
        let c = random(&[5, 4], d, lo, hi, 300 + i as u64);
        let s = random(&[], d, lo, hi, 400 + i as u64);
        let big_a = random(&[1 << 16], d, lo, hi, 500 + i as u64);
        let big_b = random(&[1 << 16], d, lo, hi, 600 + i as u64);
        for (name, f) in fs {
            let rel = tolerance(d) * 4.0;
            same_as_cpu(&format!("{name} {d} broadcast"), rel, || f(&a, &b));
            same_as_cpu(&format!("{name} {d} transposed"), rel, || f(&b, &transpose(&c, &[])?));
            same_as_cpu(&format!("{name} {d} scalar"), rel, || f(&s, &b));
            same_as_cpu(&format!("{name} {d} contiguous"), rel, || f(&big_a, &big_b));
        }
    }
    // Integer edge cases: division by zero, wrapping, negative exponents.
    let x = Array::from_vec(vec![7i32, -7, i32::MIN, 5, 1, -1, 0, 3], &[8]).unwrap();
    let y = Array::from_vec(vec![0i32, 2, -1, -1, -3, -2, 0, 31], &[8]).unwrap();
    for (name, f) in fs {
        same_as_cpu(&format!("{name} i32 edges"), 0.0, || f(&x, &y));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn select_astype_arange_match_cpu() {
    let _s = serial();
    let all: Vec<Dtype> = FLOATS.iter().chain(&INTS).copied().chain([Dtype::Bool]).collect();
    let cond = random(&[6, 1], Dtype::F32, 0.0, 1.0, 1).to_vec::<f32>().unwrap();
    let cond = Array::from_vec(cond.iter().map(|&c| c > 0.5).collect(), &[6, 1]).unwrap();
    for (i, &d) in all.iter().enumerate() {
        let x = random(&[6, 7], d, -50.0, 50.0, 700 + i as u64);
        let y = random(&[7], d, -50.0, 50.0, 800 + i as u64);
        same_as_cpu(&format!("where {d}"), 0.0, || ops::where_(&cond, &x, &y));
        for &to in &all {
            // Fractions, negatives and out-of-range values for the integers.
            let src = random(&[333], d, -300.0, 300.0, 900 + i as u64);
            same_as_cpu(&format!("astype {d} -> {to}"), 0.0, || ops::astype(&src, to));
            same_as_cpu(&format!("astype {d} -> {to} strided"), 0.0, || {
                ops::astype(&ops::slice(&src, &[ops::SliceArg::new(None, None, -3)])?, to)
            });
        }
        same_as_cpu(&format!("arange {d}"), 0.0, || ops::arange(-3.0, 40.0, 0.75, d));
    }
    // Float specials converting to integers: saturation and NaN.
    let sp = Array::from_vec(vec![f32::NAN, f32::INFINITY, -f32::INFINITY, 3e9, -3e9, 255.9, -0.5], &[7]).unwrap();
    for to in all {
        same_as_cpu(&format!("astype specials -> {to}"), 0.0, || ops::astype(&sp, to));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn views_copy_concatenate_match_cpu() {
    let _s = serial();
    for (i, d) in FLOATS.iter().chain(&INTS).copied().chain([Dtype::Bool]).enumerate() {
        let a = random(&[4, 6, 5], d, -9.0, 9.0, 1000 + i as u64);
        let b = random(&[4, 3, 5], d, -9.0, 9.0, 1100 + i as u64);
        same_as_cpu(&format!("reshape of a transpose {d}"), 0.0, || {
            ops::reshape(&ops::transpose(&a, &[2, 0, 1])?, &[5, -1])
        });
        same_as_cpu(&format!("slice {d}"), 0.0, || {
            let s = ops::slice(&a, &[ops::SliceArg::new(Some(3), None, -2), ops::SliceArg::range(1, 5)])?;
            ops::reshape(&s, &[-1])
        });
        same_as_cpu(&format!("concatenate axis 1 {d}"), 0.0, || ops::concatenate(&[a.clone(), b.clone()], 1));
        same_as_cpu(&format!("concatenate axis 0 {d}"), 0.0, || {
            ops::concatenate(&[ops::transpose(&a, &[1, 0, 2])?, ops::transpose(&b, &[1, 0, 2])?], 0)
        });
        same_as_cpu(&format!("broadcast copy {d}"), 0.0, || {
            ops::reshape(&ops::broadcast_to(&ops::slice(&b, &[ops::SliceArg::range(0, 1)])?, &[3, 3, 5])?, &[-1])
        });
    }
}

/// Host reference of a reduction over `axes` of a row-major [d0, d1, d2].
fn reduce_ref(v: &[f64], shape: [usize; 3], axes: &[usize], op: &str) -> Vec<f64> {
    let out_shape: Vec<usize> = (0..3).map(|d| if axes.contains(&d) { 1 } else { shape[d] }).collect();
    let n: usize = out_shape.iter().product();
    let init = match op {
        "sum" => 0.0,
        "max" => f64::NEG_INFINITY,
        _ => f64::INFINITY,
    };
    let mut out = vec![init; n];
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            for k in 0..shape[2] {
                let idx = [i, j, k];
                let o = (0..3).fold(0, |acc, d| acc * out_shape[d] + if axes.contains(&d) { 0 } else { idx[d] });
                let x = v[(i * shape[1] + j) * shape[2] + k];
                out[o] = match op {
                    "sum" => out[o] + x,
                    "max" => out[o].max(x),
                    _ => out[o].min(x),
                };
            }
        }
    }
    out
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn reductions_match_reference() {
    let _s = serial();
    // Shapes that take each path: few long rows (block per output, two
    // passes), many short rows, columns (thread per output).
    let cases: [([usize; 3], &[usize]); 7] = [
        ([7, 300, 5], &[0, 1, 2]),
        ([7, 300, 5], &[1]),
        ([7, 300, 5], &[0, 2]),
        ([5000, 3, 1], &[0]),
        ([1, 1 << 20, 1], &[1]),
        ([2, 3000, 7], &[2]),
        ([64, 2048, 1], &[1]),
    ];
    for (ci, (shape, axes)) in cases.into_iter().enumerate() {
        for (di, d) in [Dtype::F32, Dtype::F64, Dtype::BF16, Dtype::F16, Dtype::I32, Dtype::I64].into_iter().enumerate() {
            let x = random(&shape, d, -2.0, 2.0, (ci * 10 + di) as u64);
            let xs = values(&x);
            let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            let count: usize = axes.iter().map(|&a| shape[a]).product();
            for op in ["sum", "max", "min"] {
                let g = weft::with_stream(gpu(), || match op {
                    "sum" => ops::sum(&x, ax.clone(), true),
                    "max" => ops::max(&x, ax.clone(), true),
                    _ => ops::min(&x, ax.clone(), true),
                })
                .unwrap();
                let want = reduce_ref(&xs, shape, axes, op);
                let got = values(&g);
                let what = format!("{op} {d} {shape:?} axes {axes:?}");
                if op == "sum" && !d.is_integer() {
                    // Rounding grows with what was summed: compare against
                    // the sum of magnitudes (at most 2 per element here).
                    let bound = tolerance(d).max(1e-6) * 4.0 * 2.0 * count as f64 + tolerance(d);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!((g - w).abs() <= bound, "{what}: element {i}: gpu {g}, want {w}");
                    }
                } else {
                    assert_close(&got, &want, 0.0, &what);
                }
            }
        }
    }
    // Arg reductions: first extreme wins.
    for (di, d) in [Dtype::F32, Dtype::BF16, Dtype::I32].into_iter().enumerate() {
        // [3, 70000] and [1, 49152] along axis 1: two passes (partial (value, index) pairs).
        for (rows, cols) in [(37, 1000), (1000, 5), (3, 70000), (1, 49152)] {
            let x = random(&[rows, cols], d, -50.0, 50.0, 77 + di as u64);
            let xs = values(&x);
            for axis in [0usize, 1] {
                for op in ["argmax", "argmin"] {
                    let g = weft::with_stream(gpu(), || {
                        if op == "argmax" { ops::argmax(&x, Some(axis as isize), false) } else { ops::argmin(&x, Some(axis as isize), false) }
                    })
                    .unwrap();
                    let got = g.to_vec::<u32>().unwrap();
                    let (outer, len) = if axis == 0 { (cols, rows) } else { (rows, cols) };
                    for o in 0..outer {
                        let at = |i: usize| if axis == 0 { xs[i * cols + o] } else { xs[o * cols + i] };
                        let mut best = 0;
                        for i in 1..len {
                            let better = if op == "argmax" { at(i) > at(best) } else { at(i) < at(best) };
                            if better {
                                best = i;
                            }
                        }
                        assert_eq!(got[o] as usize, best, "{op} {d} [{rows}, {cols}] axis {axis} row {o}");
                    }
                }
            }
        }
    }
}

/// float64 host reference of `[b, m, k] @ [b, k, n]` (b may broadcast from 1).
fn matmul_ref(a: &[f64], b: &[f64], (ba, bb): (usize, usize), m: usize, k: usize, n: usize) -> Vec<f64> {
    let batch = ba.max(bb);
    let mut out = vec![0.0; batch * m * n];
    for t in 0..batch {
        let (pa, pb) = (if ba == 1 { 0 } else { t }, if bb == 1 { 0 } else { t });
        for i in 0..m {
            for j in 0..n {
                out[(t * m + i) * n + j] = (0..k).map(|p| a[(pa * m + i) * k + p] * b[(pb * k + p) * n + j]).sum();
            }
        }
    }
    out
}

fn rel_error(got: &[f64], want: &[f64]) -> f64 {
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den.max(1e-300)).sqrt()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn matmul_matches_reference() {
    let _s = serial();
    let cases = [(1, 1, 64, 48, 80), (3, 3, 33, 17, 65), (4, 1, 128, 256, 64), (1, 1, 1, 300, 1), (2, 2, 5, 0, 7)];
    for (di, d) in [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16].into_iter().enumerate() {
        let tol = match d {
            Dtype::F32 => 1e-5,
            Dtype::F64 => 1e-12,
            _ => 1e-2,
        };
        for (ci, (ba, bb, m, k, n)) in cases.into_iter().enumerate() {
            let seed = (di * 100 + ci) as u64;
            let a = random(&[ba, m, k], d, -1.0, 1.0, seed);
            let b = random(&[bb, k, n], d, -1.0, 1.0, seed + 50);
            let want = matmul_ref(&values(&a), &values(&b), (ba, bb), m, k, n);
            let g = weft::with_stream(gpu(), || ops::matmul(&a, &b)).unwrap();
            assert_eq!(g.shape(), &[ba.max(bb), m, n]);
            let got = values(&g);
            if k == 0 {
                assert!(got.iter().all(|&x| x == 0.0), "{d} k=0 gives zeros");
                continue;
            }
            let e = rel_error(&got, &want);
            assert!(e < tol, "matmul {d} {:?}: relative error {e}", (ba, bb, m, k, n));
            // Transposed operands (read in place as column-major) and a
            // sliced one (copied first) give the same product.
            let at = ops::transpose(&random(&[ba, k, m], d, -1.0, 1.0, seed + 7), &[0, 2, 1]).unwrap();
            let bt = ops::transpose(&random(&[bb, n, k], d, -1.0, 1.0, seed + 8), &[0, 2, 1]).unwrap();
            let want_t = matmul_ref(&values(&at), &values(&bt), (ba, bb), m, k, n);
            let gt = weft::with_stream(gpu(), || ops::matmul(&at, &bt)).unwrap();
            let e = rel_error(&values(&gt), &want_t);
            assert!(e < tol, "matmul {d} transposed {:?}: relative error {e}", (ba, bb, m, k, n));
        }
    }
    // A strided slice as the left operand, and 1-D operands.
    let a = random(&[10, 16], Dtype::F32, -1.0, 1.0, 3);
    let s = ops::slice(&a, &[ops::SliceArg::new(None, None, 2), ops::SliceArg::new(None, None, 2)]).unwrap();
    let v = random(&[8], Dtype::F32, -1.0, 1.0, 4);
    same_as_cpu_or_ref(&s, &v);
}

fn same_as_cpu_or_ref(s: &Array, v: &Array) {
    let g = weft::with_stream(gpu(), || ops::matmul(s, v)).unwrap();
    assert_eq!(g.shape(), &[5]);
    let (sv, vv) = (values(s), values(v));
    let want: Vec<f64> = (0..5).map(|i| (0..8).map(|p| sv[i * 8 + p] * vv[p]).sum()).collect();
    assert!(rel_error(&values(&g), &want) < 1e-5);
}

/// A lazy chain `x -> tanh(x * w + 1) ...` of `steps` ops on `stream`.
fn chain(x: &Array, steps: usize) -> Array {
    let w = Array::scalar(0.5f32);
    let one = Array::scalar(1.0f32);
    let mut y = x.clone();
    for _ in 0..steps {
        y = ops::tanh(&ops::add(&ops::multiply(&y, &w).unwrap(), &one).unwrap()).unwrap();
    }
    y
}

fn chain_host(x: &[f32], steps: usize) -> Vec<f64> {
    x.iter()
        .map(|&v| {
            let mut y = v as f64;
            for _ in 0..steps {
                y = (y * 0.5 + 1.0).tanh();
            }
            y
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn four_threads_evaluate_one_lazy_graph() {
    let _s = serial();
    let xs: Vec<f32> = (0..100_000).map(|i| (i % 97) as f32 / 50.0 - 1.0).collect();
    let x = Array::from_vec(xs.clone(), &[100_000]).unwrap();
    let y = weft::with_stream(gpu(), || chain(&x, 50));
    let before = weft::kernels_run();
    let barrier = Arc::new(Barrier::new(4));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let (y, b) = (y.clone(), barrier.clone());
            thread::spawn(move || {
                b.wait();
                y.eval().unwrap();
                y.to_vec::<f32>().unwrap()
            })
        })
        .collect();
    let want = chain_host(&xs, 50);
    for h in hs {
        let got: Vec<f64> = h.join().unwrap().iter().map(|&v| v as f64).collect();
        assert_close(&got, &want, 1e-5, "chain evaluated from 4 threads");
    }
    // Each of the 150 nodes ran once (other tests are serialized with this one).
    assert_eq!(weft::kernels_run() - before, 150);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn a_stream_made_on_main_is_used_by_workers() {
    let _s = serial();
    let s = gpu();
    let hs: Vec<_> = (0..8)
        .map(|t| {
            thread::spawn(move || {
                let x = Array::from_vec((0..1000).map(|i| (i + t) as f32).collect(), &[1000]).unwrap();
                let y = weft::with_stream(s, || ops::sum(&ops::multiply(&x, &x)?, Axes::All, false)).unwrap();
                assert_eq!(y.stream(), s);
                y.item::<f32>().unwrap()
            })
        })
        .collect();
    for (t, h) in hs.into_iter().enumerate() {
        let want: f64 = (0..1000).map(|i| ((i + t) as f64).powi(2)).sum();
        let got = h.join().unwrap() as f64;
        assert!((got - want).abs() / want < 1e-5, "worker {t}: {got} vs {want}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn one_stream_fed_by_three_threads_synchronized_by_a_fourth() {
    let _s = serial();
    let s = gpu();
    let outs: Vec<Array> = (0..3)
        .map(|t| {
            thread::spawn(move || {
                let mut v = Vec::new();
                for i in 0..20 {
                    let x = Array::from_vec(vec![(t * 100 + i) as f32; 4096], &[4096]).unwrap();
                    let y = weft::with_stream(s, || chain(&x, 10));
                    weft::async_eval(std::slice::from_ref(&y)).unwrap();
                    v.push(y);
                }
                v
            })
        })
        .flat_map(|h| h.join().unwrap())
        .collect();
    let outs = Arc::new(outs);
    let o2 = outs.clone();
    thread::spawn(move || {
        s.synchronize().unwrap();
        for y in o2.iter() {
            assert!(y.is_evaluated());
        }
    })
    .join()
    .unwrap();
    for (k, y) in outs.iter().enumerate() {
        let (t, i) = (k / 20, k % 20);
        let want = chain_host(&[(t * 100 + i) as f32], 10)[0];
        let got = y.to_vec::<f32>().unwrap();
        assert!(got.iter().all(|&g| (g as f64 - want).abs() < 1e-5), "output {k}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn cross_stream_inputs_wait_for_their_producers() {
    let _s = serial();
    let (s1, s2, s3) = (gpu(), gpu(), gpu());
    let n = 1 << 22;
    let x = Array::from_vec(vec![0.25f32; n], &[n]).unwrap();
    for round in 0..5 {
        // Long chains on two streams, combined on a third, read from a
        // fourth thread: any missing wait shows up as a wrong sum.
        let a = weft::with_stream(s1, || chain(&x, 40 + round));
        let b = weft::with_stream(s2, || ops::multiply(&chain(&ops::negative(&x)?, 40), &Array::scalar(3.0f32))).unwrap();
        let c = weft::with_stream(s3, || ops::sum(&ops::subtract(&a, &b)?, Axes::All, false)).unwrap();
        // Both chains approach tanh's fixed point; the factor 3 keeps the
        // expected sum away from 0.
        let want = (chain_host(&[0.25], 40 + round)[0] - 3.0 * chain_host(&[-0.25], 40)[0]) * n as f64;
        let got = thread::spawn(move || c.item::<f32>().unwrap()).join().unwrap() as f64;
        assert!((got - want).abs() / want.abs() < 1e-4, "round {round}: {got} vs {want}");
        drop((a, b));
    }
    // Ping-pong: each step on the other stream reads the last one's output.
    let mut y = x.clone();
    for i in 0..64 {
        let s = if i % 2 == 0 { s1 } else { s2 };
        y = weft::with_stream(s, || ops::add(&y, &Array::scalar(1.0f32))).unwrap();
        weft::async_eval(std::slice::from_ref(&y)).unwrap();
    }
    assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == 64.25));
    // GPU results read by a CPU stream.
    let z = weft::with_stream(cpu(), || ops::multiply(&y, &Array::scalar(2.0f32))).unwrap();
    assert!(z.to_vec::<f32>().unwrap().iter().all(|&v| v == 128.5));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn out_of_memory_is_an_error_and_the_next_eval_works() {
    let _s = serial();
    let s = gpu();
    // Past the device: 2^41 bytes of float32 (a broadcast made real).
    let big = weft::with_stream(s, || ops::exp(&ops::full(&[1 << 39], 1.0f32)?)).unwrap();
    let e = big.eval().unwrap_err();
    assert!(matches!(e.root(), Error::OutOfMemory { .. }), "{e:?}");
    let after = weft::with_stream(s, || ops::add(&Array::scalar(1.0f32), &Array::scalar(2.0f32))).unwrap();
    assert_eq!(after.item::<f32>().unwrap(), 3.0);
    // Past weft's own limit.
    let old = weft::set_memory_limit(weft::active_memory() + (1 << 20));
    let x = weft::with_stream(s, || ops::exp(&ops::full(&[1 << 22], 1.0f32)?)).unwrap();
    let e = x.eval().unwrap_err();
    weft::set_memory_limit(old);
    assert!(matches!(e.root(), Error::OutOfMemory { .. }), "{e:?}");
    let ok = weft::with_stream(s, || ops::exp(&ops::full(&[1 << 22], 0.0f32)?)).unwrap();
    assert!(ok.to_vec::<f32>().unwrap().iter().all(|&v| v == 1.0));
    // A failed input fails its users, on every thread that waits.
    let user = weft::with_stream(s, || ops::add(&big, &big)).unwrap();
    let h = {
        let u = user.clone();
        thread::spawn(move || u.eval().unwrap_err())
    };
    assert!(matches!(user.eval().unwrap_err().root(), Error::OutOfMemory { .. }));
    assert!(matches!(h.join().unwrap().root(), Error::OutOfMemory { .. }));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn memory_is_released_and_exit_is_clean() {
    let _s = serial();
    let s = gpu();
    let base = weft::active_memory();
    for _ in 0..20 {
        let x = weft::with_stream(s, || ops::exp(&ops::full(&[1 << 24], 0.5f32)?)).unwrap();
        let y = weft::with_stream(gpu(), || ops::sum(&x, Axes::All, false)).unwrap();
        y.eval().unwrap();
    }
    weft::synchronize_all().unwrap();
    // Host constants keep their device copies only while they live.
    assert!(weft::active_memory() <= base + (1 << 20), "{} bytes held", weft::active_memory() - base);
}

/// The transformer ops (CUDA kernels since issue 12) between GPU producers
/// and consumers.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn transformer_ops_on_gpu_streams_match_cpu() {
    let _g = serial();
    let x = random(&[4, 33], Dtype::F32, -3.0, 3.0, 91);
    let w = random(&[33], Dtype::F32, 0.5, 1.5, 92);
    same_as_cpu("softmax of a GPU product", 1e-5, || {
        let y = ops::multiply(&x, &Array::scalar(1.5f32))?; // GPU kernel
        let s = ops::softmax(&y, -1)?; // host
        ops::add(&s, &Array::scalar(1.0f32)) // GPU kernel again
    });
    same_as_cpu("rms_norm", 1e-5, || weft::fast::rms_norm(&x, Some(&w), 1e-5));
    let idx = Array::from_slice(&[3u32, 0, 2], &[3]).unwrap();
    same_as_cpu("take", 0.0, || ops::take(&x, &idx, Some(0)));
    same_as_cpu("slice_update of GPU arrays", 0.0, || {
        let a = ops::multiply(&x, &Array::scalar(2.0f32))?; // GPU kernel
        let u = ops::add(&w, &Array::scalar(1.0f32))?; // GPU kernel
        let region = [ops::SliceArg::range(1, 2), ops::SliceArg::ALL];
        let b = ops::slice_update(&a, &u, &region)?; // host
        ops::subtract(&b, &Array::scalar(0.5f32)) // GPU kernel
    });
}

/// `x` seen through a transpose of its last two axes and back (same values,
/// strided layout): kernels must read it through its strides.
fn strided(x: &Array) -> weft::Result<Array> {
    let nd = x.ndim();
    let mut perm: Vec<isize> = (0..nd as isize).collect();
    perm.swap(nd - 1, nd - 2);
    // A contiguous copy of the transpose, transposed back: a strided view.
    let t = ops::add(&ops::transpose(x, &perm)?, &Array::scalar(0.0f32).astype_like(x)?)?;
    ops::transpose(&t, &perm)
}

trait AsTypeLike {
    fn astype_like(&self, x: &Array) -> weft::Result<Array>;
}
impl AsTypeLike for Array {
    fn astype_like(&self, x: &Array) -> weft::Result<Array> {
        ops::astype(self, x.dtype())
    }
}

fn float_rel(d: Dtype) -> f64 {
    match d {
        Dtype::F32 => 2e-5,
        d => tolerance(d).max(1e-12) * 2.0,
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn softmax_logsumexp_match_cpu() {
    let _g = serial();
    for (i, d) in FLOATS.into_iter().enumerate() {
        let rel = float_rel(d);
        for shape in [[0usize, 5], [1, 1], [3, 1], [7, 37], [2, 1000], [2, 10007]] {
            let x = random(&shape, d, -8.0, 8.0, 100 + i as u64);
            let what = format!("{d} {shape:?}");
            same_as_cpu(&format!("softmax {what}"), rel, || ops::softmax(&x, -1));
            same_as_cpu(&format!("logsumexp {what}"), rel, || ops::logsumexp(&x, -1, true));
            if shape[0] > 1 && shape[1] > 1 {
                same_as_cpu(&format!("softmax strided {what}"), rel, || ops::softmax(&strided(&x)?, -1));
                same_as_cpu(&format!("softmax axis 0 {what}"), rel, || ops::softmax(&x, 0));
                same_as_cpu(&format!("logsumexp all {what}"), rel, || ops::logsumexp(&x, Axes::All, false));
            }
        }
    }
    // -inf rows, NaN and +inf entries: the CPU kernel's special cases.
    let v = [f32::NEG_INFINITY, f32::NEG_INFINITY, 1.0, f32::NAN, 2.0, f32::INFINITY, 0.5, 1.5, 3.0];
    let x = Array::from_slice(&v, &[3, 3]).unwrap();
    same_as_cpu("softmax specials", 1e-6, || ops::softmax(&x, -1));
    same_as_cpu("logsumexp specials", 1e-6, || ops::logsumexp(&x, -1, false));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn norms_match_cpu() {
    let _g = serial();
    for (i, d) in FLOATS.into_iter().enumerate() {
        let rel = float_rel(d) * 2.0;
        for shape in [[0usize, 4], [1, 1], [5, 3], [4, 576], [2, 4097]] {
            let n = shape[1];
            let x = random(&shape, d, -3.0, 3.0, 200 + i as u64);
            let w = random(&[n], d, 0.5, 1.5, 210 + i as u64);
            // A strided weight: every other element of a longer vector.
            let w2 = random(&[2 * n], d, 0.5, 1.5, 220 + i as u64);
            let ws = ops::slice(&w2, &[ops::SliceArg::new(None, None, 2)]).unwrap();
            let b = random(&[n], d, -1.0, 1.0, 230 + i as u64);
            let what = format!("{d} {shape:?}");
            same_as_cpu(&format!("rms_norm {what}"), rel, || weft::fast::rms_norm(&x, Some(&w), 1e-5));
            same_as_cpu(&format!("rms_norm no weight {what}"), rel, || weft::fast::rms_norm(&x, None, 1e-5));
            same_as_cpu(&format!("rms_norm strided {what}"), rel, || weft::fast::rms_norm(&strided(&x)?, Some(&ws), 1e-5));
            same_as_cpu(&format!("layer_norm {what}"), rel, || weft::fast::layer_norm(&x, Some(&w), Some(&b), 1e-5));
            same_as_cpu(&format!("layer_norm w {what}"), rel, || weft::fast::layer_norm(&x, Some(&ws), None, 1e-5));
            same_as_cpu(&format!("layer_norm b {what}"), rel, || weft::fast::layer_norm(&strided(&x)?, None, Some(&b), 1e-5));
            same_as_cpu(&format!("layer_norm plain {what}"), rel, || weft::fast::layer_norm(&x, None, None, 1e-5));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn rope_matches_cpu() {
    let _g = serial();
    for (i, d) in FLOATS.into_iter().enumerate() {
        let rel = float_rel(d) * 2.0;
        // [B, L, H, D] seen as [B, H, L, D] through a transpose (the model's layout).
        let x = random(&[2, 7, 3, 64], d, -2.0, 2.0, 300 + i as u64);
        let xt = ops::transpose(&x, &[0, 2, 1, 3]).unwrap();
        for traditional in [true, false] {
            for (dims, offset) in [(64, 0), (32, 5), (2, 100)] {
                let what = format!("rope {d} dims {dims} offset {offset} traditional {traditional}");
                same_as_cpu(&what, rel, || weft::fast::rope(&xt, dims, traditional, 10000.0, 1.0, offset));
                same_as_cpu(&format!("{what} contiguous"), rel, || weft::fast::rope(&x, dims, traditional, 500.0, 0.5, offset));
            }
        }
        let e = random(&[0, 4], d, -1.0, 1.0, 1);
        same_as_cpu(&format!("rope empty {d}"), rel, || weft::fast::rope(&e, 4, false, 10000.0, 1.0, 0));
        let one = random(&[1, 2], d, -1.0, 1.0, 2);
        same_as_cpu(&format!("rope 1x2 {d}"), rel, || weft::fast::rope(&one, 2, true, 10000.0, 1.0, 3));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn attention_matches_cpu() {
    let _g = serial();
    use weft::fast::{scaled_dot_product_attention as sdpa, Mask};
    for (i, d) in FLOATS.into_iter().enumerate() {
        let rel = match d {
            Dtype::F32 => 1e-4,
            Dtype::F64 => 1e-10,
            _ => tolerance(d) * 3.0,
        };
        let seed = 400 + 10 * i as u64;
        // (B, Hq, Hk, L, S, D, Dv): decode against a long cache (split-K),
        // prefill, GQA, odd sizes, one key.
        for (b, hq, hk, l, s, dd, dv) in [
            (1, 9, 3, 1, 1000, 64, 64),
            (2, 4, 4, 1, 37, 32, 48),
            (1, 6, 2, 70, 70, 64, 64),
            (1, 2, 1, 5, 1, 16, 16),
            (2, 3, 1, 9, 300, 40, 24),
        ] {
            let q = random(&[b, hq, l, dd], d, -1.0, 1.0, seed);
            let k = random(&[b, hk, s, dd], d, -1.0, 1.0, seed + 1);
            let v = random(&[b, hk, s, dv], d, -1.0, 1.0, seed + 2);
            let scale = 1.0 / (dd as f32).sqrt();
            let what = format!("sdpa {d} b{b} hq{hq} hk{hk} l{l} s{s} d{dd} dv{dv}");
            same_as_cpu(&what, rel, || sdpa(&q, &k, &v, scale, None));
            same_as_cpu(&format!("{what} causal"), rel, || sdpa(&q, &k, &v, scale, Some(&Mask::Causal)));
            // Strided queries: [B, L, Hq, D] transposed.
            let qt = random(&[b, l, hq, dd], d, -1.0, 1.0, seed + 3);
            same_as_cpu(&format!("{what} strided q"), rel, || sdpa(&ops::transpose(&qt, &[0, 2, 1, 3])?, &k, &v, scale, None));
            // An additive float mask broadcast over batch and heads, and a bool mask.
            let m = random(&[l, s], Dtype::F32, -2.0, 0.0, seed + 4);
            same_as_cpu(&format!("{what} additive mask"), rel, || sdpa(&q, &k, &v, scale, Some(&Mask::Array(m.clone()))));
            let keep = weft::with_stream(cpu(), || ops::greater(&m, &Array::scalar(-1.0f32))).unwrap();
            keep.eval().unwrap();
            same_as_cpu(&format!("{what} bool mask"), rel, || sdpa(&q, &k, &v, scale, Some(&Mask::Array(keep.clone()))));
        }
        // More queries than keys under a causal mask: the first rows see no
        // key and are NaN, as on the CPU.
        let q = random(&[1, 2, 6, 8], d, -1.0, 1.0, seed + 5);
        let k = random(&[1, 2, 3, 8], d, -1.0, 1.0, seed + 6);
        same_as_cpu(&format!("sdpa {d} L > S causal"), rel, || sdpa(&q, &k, &k, 0.3, Some(&Mask::Causal)));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn take_and_take_along_axis_match_cpu() {
    let _g = serial();
    for (i, d) in FLOATS.into_iter().chain(INTS).enumerate() {
        let a = random(&[5, 7, 3], d, -50.0, 50.0, 500 + i as u64);
        let idx = Array::from_slice(&[4i32, 0, -1, 2, 2], &[5]).unwrap();
        let idx2 = Array::from_slice(&[1i64, 6, 0, -7, 3, 5], &[2, 3]).unwrap();
        same_as_cpu(&format!("take axis 0 {d}"), 0.0, || ops::take(&a, &idx, Some(0)));
        same_as_cpu(&format!("take axis 1 {d}"), 0.0, || ops::take(&a, &idx2, Some(1)));
        same_as_cpu(&format!("take flat {d}"), 0.0, || ops::take(&a, &idx2, None));
        // The transpose is [3, 7, 5]: indices into its last axis (size 5).
        same_as_cpu(&format!("take strided {d}"), 0.0, || ops::take(&ops::transpose(&a, &[])?, &idx, Some(2)));
        let e = Array::from_slice::<u32>(&[], &[0]).unwrap();
        same_as_cpu(&format!("take empty {d}"), 0.0, || ops::take(&a, &e, Some(1)));
        let along = random(&[5, 4, 3], Dtype::I32, 0.0, 7.0, 510 + i as u64);
        same_as_cpu(&format!("take_along_axis {d}"), 0.0, || ops::take_along_axis(&a, &along, Some(1)));
        let bcast = Array::from_slice(&[2u32, 0], &[1, 2, 1]).unwrap();
        same_as_cpu(&format!("take_along_axis broadcast {d}"), 0.0, || ops::take_along_axis(&a, &bcast, Some(1)));
    }
    // An embedding lookup: GPU-computed indices into a host table.
    let table = random(&[100, 64], Dtype::BF16, -1.0, 1.0, 520);
    let ids = Array::from_slice(&[3u32, 99, 0, 42], &[4]).unwrap();
    same_as_cpu("embedding of computed ids", 0.0, || {
        let j = ops::add(&ids, &Array::scalar(0u32))?; // GPU kernel
        ops::take(&table, &j, Some(0))
    });
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn slice_update_matches_cpu() {
    let _g = serial();
    use ops::SliceArg;
    for (i, d) in [Dtype::F32, Dtype::BF16, Dtype::I64, Dtype::U8].into_iter().enumerate() {
        let a = random(&[4, 6, 5], d, -9.0, 9.0, 600 + i as u64);
        let u = random(&[2, 1, 5], d, -9.0, 9.0, 610 + i as u64);
        let region = [SliceArg::range(1, 3), SliceArg::new(Some(5), None, -2)];
        same_as_cpu(&format!("slice_update host input {d}"), 0.0, || ops::slice_update(&a, &u, &region));
        // A GPU-made input referenced only by the update: written in place.
        same_as_cpu(&format!("slice_update in place {d}"), 0.0, || {
            let b = ops::add(&a, &ops::astype(&Array::scalar(1.0f32), d)?)?;
            ops::slice_update(&b, &u, &region)
        });
        // A GPU-made input still referenced elsewhere: copied, the original kept.
        same_as_cpu(&format!("slice_update shared {d}"), 0.0, || {
            let b = ops::add(&a, &ops::astype(&Array::scalar(1.0f32), d)?)?;
            let c = ops::slice_update(&b, &u, &region)?;
            ops::concatenate(&[b, c], 0)
        });
        same_as_cpu(&format!("slice_update strided input {d}"), 0.0, || {
            // A strided input and a strided update (a column of the transpose).
            let t = ops::transpose(&a, &[2, 1, 0])?;
            let col = ops::slice(&t, &[SliceArg::ALL, SliceArg::range(2, 3)])?;
            ops::slice_update(&t, &col, &[SliceArg::ALL, SliceArg::range(0, 1)])
        });
    }
    // A KV cache filled step by step on the GPU, each step evaluated.
    let g = weft::with_stream(gpu(), || {
        let mut cache = ops::zeros(&[1, 2, 16, 4], Dtype::F32)?;
        for t in 0..10 {
            let new = ops::full(&[1, 2, 1, 4], t as f32)?;
            let new = ops::multiply(&new, &Array::scalar(1.5f32))?;
            let at = [SliceArg::ALL, SliceArg::ALL, SliceArg::range(t, t + 1)];
            cache = ops::slice_update(&cache, &new, &at)?;
            cache.eval()?;
        }
        Ok::<_, weft::Error>(cache)
    })
    .unwrap();
    let v = values(&g);
    for h in 0..2 {
        for t in 0..16 {
            for e in 0..4 {
                let want = if t < 10 { t as f64 * 1.5 } else { 0.0 };
                assert_eq!(v[(h * 16 + t) * 4 + e], want, "kv cache at head {h} position {t}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn cumsum_matches_cpu() {
    let _g = serial();
    let all = [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16, Dtype::I32, Dtype::I64, Dtype::U32, Dtype::U8, Dtype::Bool];
    for (i, d) in all.into_iter().enumerate() {
        let x = random(&[3, 17, 5], d, if d == Dtype::Bool { 0.0 } else { -5.0 }, 5.0, 700 + i as u64);
        let rel = if d.is_float() { float_rel(d) } else { 0.0 };
        for axis in [0isize, 1, 2] {
            for (reverse, inclusive) in [(false, true), (true, true), (false, false), (true, false)] {
                let what = format!("cumsum {d} axis {axis} reverse {reverse} inclusive {inclusive}");
                same_as_cpu(&what, rel, || ops::cumsum(&x, Some(axis), reverse, inclusive));
            }
        }
        same_as_cpu(&format!("cumsum strided {d}"), rel, || ops::cumsum(&ops::transpose(&x, &[])?, Some(2), false, true));
        same_as_cpu(&format!("cumsum flat {d}"), rel, || ops::cumsum(&x, None, false, true));
    }
    let e = random(&[0, 3], Dtype::F32, 0.0, 1.0, 1);
    same_as_cpu("cumsum empty", 0.0, || ops::cumsum(&e, Some(1), false, true));
    let big = random(&[1, 100_000], Dtype::I32, -100.0, 100.0, 2);
    same_as_cpu("cumsum long row", 0.0, || ops::cumsum(&big, Some(1), false, true));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn sort_argsort_match_cpu() {
    let _g = serial();
    for (i, d) in FLOATS.into_iter().chain(INTS).enumerate() {
        // Ties (values rounded to a few levels) test stability; 5000 runs on
        // the host (beyond the GPU limit of 4096).
        for shape in [[0usize, 3], [1, 1], [4, 5], [3, 1000], [2, 4096], [2, 5000]] {
            let x = random(&shape, d, 0.0, 20.0, 800 + i as u64);
            let what = format!("{d} {shape:?}");
            same_as_cpu(&format!("sort {what}"), 0.0, || ops::sort(&x, Some(-1)));
            same_as_cpu(&format!("argsort {what}"), 0.0, || ops::argsort(&x, Some(-1)));
            if shape[0] > 1 {
                same_as_cpu(&format!("argsort axis 0 {what}"), 0.0, || ops::argsort(&x, Some(0)));
                same_as_cpu(&format!("topk {what}"), 0.0, || ops::topk(&x, 1, Some(-1)));
            }
        }
    }
    let v = [3.0f32, f32::NAN, -1.0, f32::INFINITY, -0.0, 0.0, f32::NAN, f32::NEG_INFINITY, 2.0];
    let x = Array::from_slice(&v, &[9]).unwrap();
    same_as_cpu("sort with NaN", 0.0, || ops::sort(&x, Some(0)));
    same_as_cpu("argsort with NaN", 0.0, || ops::argsort(&x, Some(0)));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn random_bits_match_cpu() {
    let _g = serial();
    let key = weft::random::key(1234);
    for shape in [vec![0usize], vec![1], vec![7], vec![3, 333], vec![1 << 20]] {
        same_as_cpu(&format!("bits {shape:?}"), 0.0, || weft::random::bits(&shape, Some(&key)));
    }
    same_as_cpu("split", 0.0, || weft::random::split(&key, 5));
    // A key made on the GPU (a row of a split), strided.
    same_as_cpu("bits of a split key", 0.0, || {
        let ks = weft::random::split(&key, 3)?;
        let k1 = ops::reshape(&ops::slice(&ks, &[ops::SliceArg::range(1, 2)])?, &[2])?;
        weft::random::bits(&[1001], Some(&k1))
    });
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn bitwise_ops_and_scatter_match_cpu() {
    let _s = serial();
    use ops::*;
    let fs: [(&str, fn(&Array, &Array) -> weft::Result<Array>); 5] =
        [("and", bitwise_and), ("or", bitwise_or), ("xor", bitwise_xor), ("shl", left_shift), ("shr", right_shift)];
    for (i, d) in INTS.iter().copied().chain([Dtype::Bool]).enumerate() {
        let a = random(&[3, 1, 5], d, 0.0, 60.0, 700 + i as u64);
        let b = random(&[4, 5], d, 0.0, 9.0, 800 + i as u64);
        for (name, f) in fs {
            if d == Dtype::Bool && name.starts_with("sh") {
                continue;
            }
            same_as_cpu(&format!("{name} {d}"), 0.0, || f(&a, &b));
        }
        same_as_cpu(&format!("invert {d}"), 0.0, || bitwise_invert(&a));
    }
    // Scatter runs on the host from a GPU stream (docs/gpu.md); its result must still match.
    let x = random(&[6, 7], Dtype::F32, -1.0, 1.0, 900);
    let p = Array::from_slice(&[3i32, 40, 3, -1], &[4]).unwrap();
    let u = random(&[4], Dtype::F32, -1.0, 1.0, 901);
    same_as_cpu("scatter add", 0.0, || scatter(&x, &p, &u, Some(weft::primitive::ReduceOp::Sum)));
    same_as_cpu("scatter", 0.0, || scatter(&x, &p, &u, None));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn conv_matches_cpu() {
    let _s = serial();
    use ops::ConvPadding;
    for (i, d) in FLOATS.iter().copied().enumerate() {
        let rel = tolerance(d).max(1e-5) * 8.0;
        let s = 3000 + 10 * i as u64;
        // 1-D: stride, asymmetric padding, kernel dilation, groups.
        let x = random(&[2, 11, 6], d, -1.0, 1.0, s);
        let w = random(&[4, 3, 3], d, -1.0, 1.0, s + 1);
        same_as_cpu(&format!("conv1d groups {d}"), rel, || {
            ops::conv_general(&x, &w, &[2], &ConvPadding::LoHi(vec![1], vec![2]), &[2], &[1], 2, false)
        });
        // 2-D: input dilation and flip (a transposed convolution), strided input.
        let x = random(&[2, 5, 7, 3], d, -1.0, 1.0, s + 2);
        let w = random(&[5, 3, 2, 3], d, -1.0, 1.0, s + 3);
        same_as_cpu(&format!("conv_transpose2d {d}"), rel, || ops::conv_transpose2d(&x, &w, [2, 1], [1, 0], [1, 2], [1, 0], 1));
        let xt = random(&[3, 7, 5, 2], d, -1.0, 1.0, s + 4);
        same_as_cpu(&format!("conv2d of a transposed input {d}"), rel, || {
            ops::conv2d(&ops::transpose(&xt, &[3, 2, 1, 0])?, &w, [1, 2], [1, 1], [1, 1], 1)
        });
        // 3-D, depthwise.
        let x = random(&[1, 4, 5, 3, 4], d, -1.0, 1.0, s + 5);
        let w = random(&[4, 2, 3, 2, 1], d, -1.0, 1.0, s + 6);
        same_as_cpu(&format!("conv3d depthwise {d}"), rel, || ops::conv3d(&x, &w, [1, 2, 1], [1, 1, 0], [1, 1, 2], 4));
    }
    // as_strided is a view on the GPU too.
    let a = random(&[4, 6], Dtype::F32, -1.0, 1.0, 3100);
    same_as_cpu("as_strided", 0.0, || ops::as_strided(&ops::transpose(&a, &[1, 0])?, &[3, 4], &[5, 1], 2));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn quantized_ops_match_cpu() {
    let _g = serial();
    for (gs, bits) in [(32, 2), (64, 3), (64, 4), (128, 5), (32, 6), (64, 8)] {
        for dt in [Dtype::F32, Dtype::F16, Dtype::BF16] {
            let what = format!("gs {gs} bits {bits} {dt}");
            let w = random(&[3, 24, 256], dt, -1.0, 1.0, 31);
            // Codes: exact; scales and biases come from the same ops.
            same_as_cpu(&format!("quantize {what}"), 0.0, || Ok(ops::quantize(&w, gs, bits)?.0));
            let (wq, s, b) = weft::with_stream(cpu(), || ops::quantize(&w, gs, bits)).unwrap();
            same_as_cpu(&format!("dequantize {what}"), 1e-6, || ops::dequantize(&wq, &s, &b, gs, bits, Some(Dtype::F32)));
            // A strided (transposed) view of the scales is read in place.
            let x = random(&[3, 5, 256], dt, -1.0, 1.0, 32);
            same_as_cpu(&format!("qmm {what}"), 2e-2, || ops::quantized_matmul(&x, &wq, &s, &b, true, gs, bits));
            let xt = random(&[2, 1, 7, 24], dt, -1.0, 1.0, 33);
            same_as_cpu(&format!("qmm untransposed {what}"), 2e-2, || {
                ops::quantized_matmul(&xt, &wq, &s, &b, false, gs, bits)
            });
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn quantized_matvec_matches_cpu() {
    // The warp-per-output kernel (`x @ w.T`, 4- and 8-bit codes, groups of
    // 32/64/128): every row count of x up to a block's 8 and past it (row
    // blocks), odd output sizes, batched x against one weight matrix, and
    // a contracted axis long enough that fewer rows fit in shared memory.
    let _g = serial();
    for bits in [4u32, 8] {
        for gs in [32usize, 64, 128] {
            for (di, dt) in [Dtype::F32, Dtype::F16, Dtype::BF16].into_iter().enumerate() {
                let seed = 4000 + 100 * bits as u64 + gs as u64 + 10 * di as u64;
                for (n, kdim) in [(37usize, 256usize), (1, 384), (67, 1536)] {
                    let w = random(&[n, kdim], dt, -1.0, 1.0, seed);
                    let (wq, s, b) = weft::with_stream(cpu(), || ops::quantize(&w, gs, bits)).unwrap();
                    let ms: &[usize] = if kdim == 1536 { &[1, 8, 13] } else { &[1, 2, 3, 4, 5, 6, 7, 8, 13] };
                    for &m in ms {
                        let what = format!("qmv bits {bits} gs {gs} {dt} m {m} n {n} k {kdim}");
                        let x = random(&[m, kdim], dt, -1.0, 1.0, seed + m as u64);
                        same_as_cpu(&what, 2e-2, || ops::quantized_matmul(&x, &wq, &s, &b, true, gs, bits));
                    }
                    // Batched x (a decode step of two sequences) against one matrix,
                    // and x read through a transpose.
                    let xb = random(&[2, 3, kdim], dt, -1.0, 1.0, seed + 50);
                    same_as_cpu(&format!("qmv batched bits {bits} gs {gs} {dt} k {kdim}"), 2e-2, || {
                        ops::quantized_matmul(&xb, &wq, &s, &b, true, gs, bits)
                    });
                    let xt = random(&[kdim, 5], dt, -1.0, 1.0, seed + 51);
                    same_as_cpu(&format!("qmv strided x bits {bits} gs {gs} {dt} k {kdim}"), 2e-2, || {
                        ops::quantized_matmul(&ops::transpose(&xt, &[1, 0])?, &wq, &s, &b, true, gs, bits)
                    });
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn complex64_on_a_gpu_stream_matches_cpu() {
    // complex64 has no CUDA kernels: each of its primitives runs on the
    // host from a GPU stream (views, slice_update and the FFTs included).
    use ops::fft::{self, Norm};
    let _s = serial();
    let re = random(&[4, 6], Dtype::F32, -1.0, 1.0, 91);
    let im = random(&[4, 6], Dtype::F32, -1.0, 1.0, 92);
    let r2 = random(&[6, 3], Dtype::F32, -1.0, 1.0, 93);
    let z = || ops::complex(&re, &im);
    let w = || ops::complex(&r2, &ops::negative(&r2)?);
    let cases: Vec<(&str, Box<dyn Fn() -> weft::Result<Array>>)> = vec![
        ("fft", Box::new(|| fft::fft(&z()?, None, -1, Norm::Backward))),
        ("ifft axis 0 n 7", Box::new(|| fft::ifft(&z()?, Some(7), 0, Norm::Backward))),
        ("rfft2", Box::new(|| fft::rfft2(&re, None, None, Norm::Ortho))),
        ("irfft", Box::new(|| fft::irfft(&z()?, None, -1, Norm::Backward))),
        ("matmul", Box::new(|| ops::matmul(&z()?, &w()?))),
        ("multiply add", Box::new(|| ops::add(&ops::multiply(&z()?, &z()?)?, &re))),
        ("sum", Box::new(|| ops::sum(&z()?, 0isize, false))),
        ("transpose copy", Box::new(|| ops::add(&ops::transpose(&z()?, &[1, 0])?, &Array::scalar(weft::Complex64::new(0.0, 1.0))))),
        ("slice_update", Box::new(|| {
            // Rows 1..4 of z take the conjugates of its first three rows.
            let update = ops::slice(&ops::conjugate(&z()?)?, &[ops::SliceArg::range(0, 3)])?;
            ops::slice_update(&z()?, &update, &[ops::SliceArg::range(1, 4)])
        })),
        ("concatenate", Box::new(|| ops::concatenate(&[z()?, ops::conjugate(&z()?)?], 0isize))),
        ("abs", Box::new(|| ops::abs(&z()?))),
        ("astype", Box::new(|| ops::astype(&z()?, Dtype::F32))),
    ];
    for (what, f) in &cases {
        let part = |p: fn(&Array) -> weft::Result<Array>| move || f().and_then(|y| if y.dtype().is_complex() { p(&y) } else { Ok(y) });
        same_as_cpu(&format!("{what} (real part)"), 1e-5, part(ops::real));
        same_as_cpu(&format!("{what} (imaginary part)"), 1e-5, part(ops::imag));
    }
    // A gradient through a transform.
    same_as_cpu("grad of sum |fft(x)|^2", 1e-5, || {
        let g = weft::transforms::grad(
            |x| {
                let a = ops::abs(&fft::fft(&x[0], None, -1, Norm::Backward)?)?;
                Ok(vec![ops::sum(&ops::multiply(&a, &a)?, Axes::All, false)?])
            },
            &[re.clone()],
            &[0],
        )?;
        Ok(g[0].clone())
    });
}

/// A compiled function with a matmul, a norm, a softmax, a fused chain, a
/// reduction, a strided (transposed) output and an input returned as is.
fn graph_fn(w: Array, norm: Array) -> impl Fn(&[Array]) -> weft::Result<Vec<Array>> {
    move |x: &[Array]| {
        let h = ops::matmul(&x[0], &w)?; // [4, 48]
        let h = weft::fast::rms_norm(&h, Some(&norm), 1e-5)?;
        let s = ops::softmax(&h, &[-1])?;
        let y = ops::add(&ops::multiply(&s, &x[1])?, &Array::scalar(0.5f32))?;
        let r = ops::sum(&h, &[-1], false)?;
        Ok(vec![ops::transpose(&y, &[1, 0])?, r, x[1].clone()])
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn captured_graph_matches_the_compiled_replay() {
    let _s = serial();
    let g = gpu();
    // Constants: a device weight and a host one (uploaded once, kept alive by the graph).
    let w = weft::with_stream(g, || ops::copy_as(&random(&[64, 48], Dtype::F32, -0.5, 0.5, 1), Dtype::F32)).unwrap();
    w.eval().unwrap();
    let norm = random(&[48], Dtype::F32, 0.5, 1.5, 2);
    let inputs = |seed: u64| vec![random(&[4, 64], Dtype::F32, -1.0, 1.0, seed), random(&[4, 48], Dtype::F32, -1.0, 1.0, seed + 1)];
    let (c, _) = weft::with_stream(g, || weft::transforms::Compiled::trace(graph_fn(w.clone(), norm.clone()), &inputs(10))).unwrap();
    let cap = Arc::new(weft::with_stream(g, || c.capture(&inputs(10))).unwrap());
    assert_eq!(cap.output_specs(), vec![(vec![48, 4], Dtype::F32), (vec![4], Dtype::F32), (vec![4, 48], Dtype::F32)]);
    let check = |seed: u64| {
        let xs = inputs(seed);
        let want = weft::with_stream(g, || c.call(&xs)).unwrap();
        let got = cap.call(&xs).unwrap();
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(a.shape(), b.shape(), "output {i}");
            // The same kernels on the same values: equal bit for bit.
            assert_eq!(values(a), values(b), "output {i}, inputs {seed}");
        }
    };
    for seed in [10, 20, 30] {
        check(seed);
    }
    // Many threads calling one graph: each gets its own inputs' outputs.
    thread::scope(|sc| {
        for t in 0..6u64 {
            let check = &check;
            sc.spawn(move || {
                for k in 0..8 {
                    check(100 + 10 * t + k);
                }
            });
        }
    });
    // Inputs on another GPU stream (waited on through events), and strided inputs.
    let other = gpu();
    let xs: Vec<Array> = inputs(7).iter().map(|x| weft::with_stream(other, || ops::copy_as(x, Dtype::F32)).unwrap()).collect();
    // [4, 48] read through strides: the transpose of a contiguous [48, 4].
    let t = weft::with_stream(other, || ops::transpose(&ops::copy_as(&ops::transpose(&xs[1], &[1, 0])?, Dtype::F32)?, &[1, 0])).unwrap();
    let got = cap.call(&[xs[0].clone(), t.clone()]).unwrap();
    let want = weft::with_stream(g, || c.call(&[xs[0].clone(), t])).unwrap();
    assert_eq!(values(&got[0]), values(&want[0]));
    // Wrong shapes and dtypes are errors, and the graph still works after them.
    let bad = cap.call(&[random(&[5, 64], Dtype::F32, 0.0, 1.0, 3), inputs(3)[1].clone()]);
    assert!(matches!(bad, Err(Error::Shape(_))), "{bad:?}");
    let bad = cap.call(&[random(&[4, 64], Dtype::F16, 0.0, 1.0, 3), inputs(3)[1].clone()]);
    assert!(matches!(bad, Err(Error::Shape(_))), "{bad:?}");
    assert!(matches!(cap.call(&inputs(3)[..1]), Err(Error::InvalidArgument(_))));
    check(40);
    drop(cap);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn capture_refuses_host_fallbacks_with_an_error() {
    let _s = serial();
    let g = gpu();
    // `linalg::inv` has no CUDA kernel: the replay would read device memory on the host.
    let f = |x: &[Array]| Ok(vec![weft::linalg::inv(&x[0])?]);
    let x = random(&[3, 3], Dtype::F32, 1.0, 2.0, 5);
    let (c, _) = weft::with_stream(g, || weft::transforms::Compiled::trace(f, &[x.clone()])).unwrap();
    match weft::with_stream(g, || c.capture(&[x.clone()])) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("cannot be captured"), "{m}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a host fallback was captured"),
    }
    // The stream and the device still work.
    let y = weft::with_stream(g, || ops::add(&x, &x)).unwrap();
    assert_eq!(values(&y), values(&x).iter().map(|v| v * 2.0).collect::<Vec<_>>());
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-check"]
fn captured_graph_keeps_kernel_temporaries() {
    // Two-pass reductions and split-K attention make temporary buffers inside
    // their kernels; a graph runs those kernels at every launch, so the
    // temporaries' memory must live as long as the graph, even though their
    // buffers are dropped during the capture.
    use weft::fast::scaled_dot_product_attention as sdpa;
    let _s = serial();
    let g = gpu();
    let f = |x: &[Array]| {
        let s = ops::sum(&x[0], &[-1], false)?;
        let a = ops::argmax(&x[0], Some(-1), false)?;
        let o = sdpa(&x[1], &x[2], &x[2], 0.125, None)?; // one query against 4096 keys: split-K
        Ok(vec![s, a, o])
    };
    let inputs = |seed: u64| {
        vec![
            random(&[1, 1 << 16], Dtype::F32, -1.0, 1.0, seed),
            random(&[1, 4, 1, 64], Dtype::F32, -1.0, 1.0, seed + 1),
            random(&[1, 4, 4096, 64], Dtype::F32, -1.0, 1.0, seed + 2),
        ]
    };
    let (c, _) = weft::with_stream(g, || weft::transforms::Compiled::trace(f, &inputs(1))).unwrap();
    let cap = weft::with_stream(g, || c.capture(&inputs(1))).unwrap();
    // Other memory in use while the graph runs (freed temporaries would be
    // handed out again).
    let other: Vec<Array> = (0..8).map(|i| weft::with_stream(gpu(), || ops::full(&[1 << 18], i as f32)).unwrap()).collect();
    weft::eval(&other).unwrap();
    for seed in [5u64, 9, 13, 17] {
        let xs = inputs(seed);
        let want = weft::with_stream(g, || c.call(&xs)).unwrap();
        let got = cap.call(&xs).unwrap();
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(values(a), values(b), "output {i}, inputs {seed}");
        }
    }
    for (i, o) in other.iter().enumerate() {
        assert!(values(o).iter().all(|&v| v == i as f64), "memory of array {i} was overwritten");
    }
}
