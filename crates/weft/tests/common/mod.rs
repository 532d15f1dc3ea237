//! Shared by the numerics suites: a seeded PRNG, typed array construction
//! from `f64` values, and a naive `f64` reference array.

#![allow(dead_code)]

use weft::ops::{self, SliceArg};
use weft::{Array, Dtype};

/// SplitMix64: small, seeded, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
}

/// What values an op accepts.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// Floats in [-4, 4), signed ints in [-20, 20], unsigned in [0, 20].
    Any,
    /// Strictly positive: floats in [0.1, 4), ints in [1, 20].
    Positive,
    /// Small non-negative: floats in [0, 2), ints in [0, 4] (exponents).
    Small,
}

/// `v` rounded to what `dtype` can hold (ints wrap, bools are "nonzero").
pub fn round_to(v: f64, dtype: Dtype) -> f64 {
    use weft::dtype::Element;
    weft::with_dtype!(dtype, T => {
        if dtype.is_float() || dtype == Dtype::Bool {
            T::from_f64(v).to_f64()
        } else {
            T::from_i64(v as i64).to_f64()
        }
    })
}

/// `n` random values of `dtype` (exactly representable in it).
pub fn values(rng: &mut Rng, n: usize, dtype: Dtype, kind: Kind) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let v = match (dtype, kind) {
                (Dtype::Bool, _) => rng.int(0, 1) as f64,
                (d, Kind::Any) if d.is_float() => rng.uniform(-4.0, 4.0),
                (d, Kind::Positive) if d.is_float() => rng.uniform(0.1, 4.0),
                (d, Kind::Small) if d.is_float() => rng.uniform(0.0, 2.0),
                (d, Kind::Any) if d.is_signed() => rng.int(-20, 20) as f64,
                (_, Kind::Any) => rng.int(0, 20) as f64,
                (_, Kind::Positive) => rng.int(1, 20) as f64,
                (_, Kind::Small) => rng.int(0, 4) as f64,
            };
            round_to(v, dtype)
        })
        .collect()
}

/// An array of `dtype` holding `vals` (each converted as `round_to` does).
pub fn array(vals: &[f64], shape: &[usize], dtype: Dtype) -> Array {
    fn mk<T: weft::buffer::CpuElement>(v: Vec<T>, shape: &[usize]) -> Array {
        Array::from_vec(v, shape).unwrap()
    }
    use weft::dtype::Element;
    weft::with_dtype!(dtype, T => mk(vals.iter().map(|&v| T::from_f64(round_to(v, dtype))).collect::<Vec<T>>(), shape))
}

/// The elements of `a` as `f64`, read with `a`'s own element type (not
/// through weft's `astype`).
pub fn read(a: &Array) -> Vec<f64> {
    use weft::dtype::Element;
    weft::with_dtype!(a.dtype(), T => a.to_vec::<T>().unwrap().into_iter().map(Element::to_f64).collect())
}

/// Relative tolerance of one rounding to `dtype` (with some slack for
/// library math functions); 0 for exact types.
pub fn tol(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::F16 => 2e-3,
        Dtype::BF16 => 1.6e-2,
        Dtype::F32 => 2e-6,
        Dtype::F64 => 1e-13,
        _ => 0.0,
    }
}

/// Checks `got` against `want` elementwise: equal NaN-ness and infinities,
/// and `|got - want| <= rtol * (|want| + scale)`, where `scale` (default 0)
/// accounts for cancellation in sums; `atol` absorbs results near zero.
pub fn check(ctx: &str, got: &[f64], want: &[f64], rtol: f64, scale: Option<&[f64]>) {
    assert_eq!(got.len(), want.len(), "{ctx}: {} elements, expected {}", got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() || rtol == 0.0 {
            g == w
        } else {
            let s = scale.map_or(0.0, |s| s[i]);
            (g - w).abs() <= rtol * (w.abs() + s) + rtol * 1e-2
        };
        assert!(ok, "{ctx}: element {i}: got {g}, expected {w} (rtol {rtol})\n got  {got:?}\n want {want:?}");
    }
}

/// A naive row-major `f64` array: the reference every op is checked against.
#[derive(Clone, Debug, PartialEq)]
pub struct Ref {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

/// Every multi-index of `shape`, in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    for mut flat in 0..n {
        let mut idx = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = flat % shape[d];
            flat /= shape[d];
        }
        out.push(idx);
    }
    out
}

impl Ref {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Ref {
        assert_eq!(shape.iter().product::<usize>(), data.len());
        Ref { shape: shape.to_vec(), data }
    }

    pub fn from_fn(shape: &[usize], mut f: impl FnMut(&[usize]) -> f64) -> Ref {
        let data = indices(shape).iter().map(|i| f(i)).collect();
        Ref { shape: shape.to_vec(), data }
    }

    pub fn get(&self, idx: &[usize]) -> f64 {
        let mut flat = 0;
        for (d, &i) in idx.iter().enumerate() {
            assert!(i < self.shape[d]);
            flat = flat * self.shape[d] + i;
        }
        self.data[flat]
    }

    pub fn map(&self, f: impl Fn(f64) -> f64) -> Ref {
        Ref { shape: self.shape.clone(), data: self.data.iter().map(|&x| f(x)).collect() }
    }

    /// Axis `i` of the result is axis `perm[i]` of `self`.
    pub fn transpose(&self, perm: &[usize]) -> Ref {
        let shape: Vec<usize> = perm.iter().map(|&p| self.shape[p]).collect();
        Ref::from_fn(&shape, |j| {
            let mut k = vec![0; j.len()];
            for (i, &p) in perm.iter().enumerate() {
                k[p] = j[i];
            }
            self.get(&k)
        })
    }

    /// NumPy broadcasting to `shape`.
    pub fn broadcast(&self, shape: &[usize]) -> Ref {
        let pad = shape.len() - self.shape.len();
        Ref::from_fn(shape, |j| {
            let k: Vec<usize> =
                (0..self.shape.len()).map(|d| if self.shape[d] == 1 { 0 } else { j[pad + d] }).collect();
            self.get(&k)
        })
    }

    /// Picks the listed indices along each axis.
    pub fn take(&self, picks: &[Vec<usize>]) -> Ref {
        let shape: Vec<usize> = picks.iter().map(|p| p.len()).collect();
        Ref::from_fn(&shape, |j| {
            let k: Vec<usize> = j.iter().enumerate().map(|(d, &i)| picks[d][i]).collect();
            self.get(&k)
        })
    }

    /// Python slicing of each leading axis (see `slice_indices`).
    pub fn slice(&self, args: &[SliceArg]) -> Ref {
        let picks: Vec<Vec<usize>> = (0..self.shape.len())
            .map(|d| match args.get(d) {
                Some(a) => slice_indices(*a, self.shape[d]),
                None => (0..self.shape[d]).collect(),
            })
            .collect();
        self.take(&picks)
    }
}

/// The indices Python's `range(n)[start:stop:step]` picks, by walking them.
pub fn slice_indices(a: SliceArg, n: usize) -> Vec<usize> {
    let n = n as i64;
    let step = a.step as i64;
    let norm = |i: i64| if i < 0 { i + n } else { i };
    let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let start = a.start.map_or(if step > 0 { 0 } else { n - 1 }, |s| norm(s as i64).clamp(lo, hi));
    let stop = a.stop.map_or(if step > 0 { n } else { -1 }, |s| norm(s as i64).clamp(lo, hi));
    let mut out = vec![];
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(i as usize);
        i += step;
    }
    out
}

/// How an input sits in memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum View {
    Contiguous,
    /// A transpose of an array stored with the axes reversed.
    Transposed,
    /// Every other element of a larger array, backwards on even axes.
    Strided,
    /// Some axes broadcast from size 1 (stride 0).
    Broadcast,
}

pub const VIEWS: [View; 4] = [View::Contiguous, View::Transposed, View::Strided, View::Broadcast];

/// A random array of `shape` and `dtype` laid out as `view`, and its reference.
pub fn sample(rng: &mut Rng, shape: &[usize], dtype: Dtype, kind: Kind, view: View) -> (Array, Ref) {
    let nd = shape.len();
    let fresh = |rng: &mut Rng, s: &[usize]| {
        let v = values(rng, s.iter().product(), dtype, kind);
        (array(&v, s, dtype), Ref::new(s, v))
    };
    match view {
        View::Transposed if nd >= 2 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let perm: Vec<usize> = (0..nd).rev().collect();
            let (a, r) = fresh(rng, &rev);
            let t = ops::transpose(&a, &[]).unwrap();
            (t, r.transpose(&perm))
        }
        View::Strided if nd >= 1 => {
            let big: Vec<usize> = shape.iter().map(|&d| 2 * d + 1).collect();
            let args: Vec<SliceArg> = (0..nd)
                .map(|d| if d % 2 == 0 { SliceArg::new(Some(-2), None, -2) } else { SliceArg::new(Some(1), None, 2) })
                .collect();
            let (a, r) = fresh(rng, &big);
            let s = ops::slice(&a, &args).unwrap();
            let rs = r.slice(&args);
            assert_eq!(rs.shape, shape);
            (s, rs)
        }
        View::Broadcast if nd >= 1 => {
            let small: Vec<usize> = shape.iter().enumerate().map(|(d, &n)| if d % 2 == 0 { 1 } else { n }).collect();
            let (a, r) = fresh(rng, &small);
            (ops::broadcast_to(&a, shape).unwrap(), r.broadcast(shape))
        }
        _ => fresh(rng, shape),
    }
}

/// Reference reduction of `axes` (keeping them as size 1) with `fold`
/// started from the first element.
pub fn reduce_ref(r: &Ref, axes: &[usize], init: f64, fold: impl Fn(f64, f64) -> f64) -> Ref {
    let shape: Vec<usize> =
        r.shape.iter().enumerate().map(|(d, &n)| if axes.contains(&d) { 1 } else { n }).collect();
    let mut out = Ref::from_fn(&shape, |_| init);
    let strides: Vec<usize> = (0..shape.len()).map(|d| shape[d + 1..].iter().product()).collect();
    for idx in indices(&r.shape) {
        let flat: usize =
            idx.iter().enumerate().map(|(d, &i)| if axes.contains(&d) { 0 } else { i * strides[d] }).sum();
        out.data[flat] = fold(out.data[flat], r.get(&idx));
    }
    out
}

pub fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

pub fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

/// Reference argmax/argmin along `axis` (kept as size 1): first index of the
/// extremum, a NaN counting as the extremum.
pub fn arg_ref(r: &Ref, axis: usize, max: bool) -> Ref {
    let mut shape = r.shape.clone();
    shape[axis] = 1;
    Ref::from_fn(&shape, |o| {
        let mut idx = o.to_vec();
        let (mut best, mut at) = (f64::NAN, usize::MAX);
        for k in 0..r.shape[axis] {
            idx[axis] = k;
            let x = r.get(&idx);
            if at == usize::MAX || (!best.is_nan() && (x.is_nan() || if max { x > best } else { x < best })) {
                best = x;
                at = k;
            }
        }
        at as f64
    })
}

/// Reference batched matmul of `[.., m, k] @ [.., k, n]` (batch axes broadcast).
pub fn matmul_ref(a: &Ref, b: &Ref) -> Ref {
    let (na, nb) = (a.shape.len(), b.shape.len());
    let (m, k, n) = (a.shape[na - 2], a.shape[na - 1], b.shape[nb - 1]);
    let nd = na.max(nb);
    let mut batch = vec![1; nd - 2];
    for (d, s) in batch.iter_mut().enumerate() {
        let da = (d + na).checked_sub(nd).map_or(1, |i| a.shape[i]);
        let db = (d + nb).checked_sub(nd).map_or(1, |i| b.shape[i]);
        *s = da.max(db);
    }
    let mut full_a = batch.clone();
    full_a.extend([m, k]);
    let mut full_b = batch.clone();
    full_b.extend([k, n]);
    let (a, b) = (a.broadcast(&full_a), b.broadcast(&full_b));
    let mut shape = batch.clone();
    shape.extend([m, n]);
    Ref::from_fn(&shape, |o| {
        let mut ia = o.to_vec();
        let mut ib = o.to_vec();
        let (i, j) = (o[nd - 2], o[nd - 1]);
        let mut s = 0.0;
        for p in 0..k {
            ia[nd - 2] = i;
            ia[nd - 1] = p;
            ib[nd - 2] = p;
            ib[nd - 1] = j;
            s += a.get(&ia) * b.get(&ib);
        }
        s
    })
}

/// erf by composite Simpson integration of 2/sqrt(pi) e^(-t^2), in float64.
pub fn erf_ref(x: f64) -> f64 {
    let n = 4000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..n {
        s += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

/// The f64 reference of every unary op of weft's table and the input range
/// its tests draw from. An exhaustive match: a new op does not compile here
/// until it has its reference.
pub fn unary_reference(op: weft::primitive::UnaryOp) -> (fn(f64) -> f64, f64, f64) {
    use weft::primitive::UnaryOp::*;
    match op {
        Neg => (|x| -x, -4.0, 4.0),
        Abs => (f64::abs, -4.0, 4.0),
        Exp => (f64::exp, -4.0, 4.0),
        Exp2 => (f64::exp2, -4.0, 4.0),
        Log => (f64::ln, 0.1, 4.0),
        Sqrt => (f64::sqrt, 0.1, 4.0),
        Rsqrt => (|x| 1.0 / x.sqrt(), 0.1, 4.0),
        Tanh => (f64::tanh, -4.0, 4.0),
        Sigmoid => (|x| 1.0 / (1.0 + (-x).exp()), -4.0, 4.0),
        Sin => (f64::sin, -4.0, 4.0),
        Cos => (f64::cos, -4.0, 4.0),
        Erf => (erf_ref, -3.0, 3.0),
        // GELU's negative tail cancels in 1 + erf: stay where float32 keeps
        // its relative precision.
        Gelu => (|x| x * 0.5 * (1.0 + erf_ref(x / 2f64.sqrt())), -1.5, 4.0),
        GeluApprox => (
            |x| 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh()),
            -1.5,
            4.0,
        ),
        Silu => (|x| x / (1.0 + (-x).exp()), -4.0, 4.0),
        Floor => (f64::floor, -4.0, 4.0),
        Ceil => (f64::ceil, -4.0, 4.0),
        Round => (f64::round_ties_even, -4.0, 4.0),
        Tan => (f64::tan, -1.4, 1.4),
        Sinh => (f64::sinh, -4.0, 4.0),
        Cosh => (f64::cosh, -4.0, 4.0),
        Arcsin => (f64::asin, -0.99, 0.99),
        Arccos => (f64::acos, -0.99, 0.99),
        Arctan => (f64::atan, -4.0, 4.0),
        Arcsinh => (f64::asinh, -4.0, 4.0),
        Arccosh => (f64::acosh, 1.01, 4.0),
        Arctanh => (f64::atanh, -0.99, 0.99),
        Log1p => (f64::ln_1p, -0.9, 4.0),
        Expm1 => (f64::exp_m1, -4.0, 4.0),
        Log2 => (f64::log2, 0.1, 4.0),
        Log10 => (f64::log10, 0.1, 4.0),
        // Bisection on erf: independent of the kernel's Newton iteration.
        Erfinv => (
            |x| {
                // erfinv(±1) = ±inf (a bool input reaches 1); erfinv(0) = 0 exactly.
                if x.abs() >= 1.0 || x == 0.0 {
                    return if x == 0.0 { 0.0 } else { x * f64::INFINITY };
                }
                let (mut lo, mut hi) = (-6.0f64, 6.0f64);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if erf_ref(mid) < x { lo = mid } else { hi = mid }
                }
                0.5 * (lo + hi)
            },
            -0.99,
            0.99,
        ),
    }
}
