//! Random numbers the MLX way: explicit keys, split into independent keys,
//! and a default key per thread for calls without one.
//!
//! A key is a `uint32[2]` array. Every draw is a pure function of its key
//! and shape (threefry-2x32, a counter-based generator, see
//! `backend/cpu/random_bits.rs`): the same key gives the same numbers on any
//! thread, stream or machine.
//!
//! Calls without a key split the calling thread's default key: `(next,
//! sub) = split(key)`, draw with `sub`, keep `next`. [`seed`] restarts the
//! default key of *every* thread at `key(seed)` (each thread picks the new
//! seed up at its next draw), so a thread's sequence of default draws
//! depends only on the seed and its own calls, never on other threads.
//!
//! ```
//! use weft::{ops::random, Dtype};
//! let k = random::key(7);
//! let a = random::uniform(0.0, 1.0, &[4], Dtype::F32, Some(&k)).unwrap();
//! let b = random::uniform(0.0, 1.0, &[4], Dtype::F32, Some(&k)).unwrap();
//! assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
//! ```

use super::{add, argmax, astype, cos, less, log, minimum, multiply, negative, reshape, slice, sqrt, SliceArg};
use crate::primitive::threefry::threefry2x32;
use crate::dtype::Dtype;
use crate::primitive::Primitive;
use crate::shape::{normalize_axis, numel};
use crate::{bail, Array, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The seed every thread's default key restarts from, and how many times
/// [`seed`] was called (threads compare it with the epoch they last saw).
static SEED: AtomicU64 = AtomicU64::new(0);
static EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// (epoch seen, current default key) of this thread.
    static DEFAULT: Cell<Option<(u64, [u32; 2])>> = const { Cell::new(None) };
}

fn key_words(seed: u64) -> [u32; 2] {
    [(seed >> 32) as u32, seed as u32]
}

/// Restarts the default key of every thread at `key(s)`.
pub fn seed(s: u64) {
    // SeqCst: a thread that sees the new epoch also sees the new seed.
    SEED.store(s, Ordering::SeqCst);
    EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// Takes a fresh subkey from the calling thread's default key.
fn next_default_key() -> [u32; 2] {
    DEFAULT.with(|d| {
        let epoch = EPOCH.load(Ordering::SeqCst);
        let key = match d.get() {
            Some((e, k)) if e == epoch => k,
            _ => key_words(SEED.load(Ordering::SeqCst)),
        };
        // split(key, 2): row 0 carries on, row 1 is used now.
        let next = threefry2x32(key, [0, 0]);
        d.set(Some((epoch, next)));
        threefry2x32(key, [0, 1])
    })
}

/// A key (`uint32[2]`) from a seed.
pub fn key(seed: u64) -> Array {
    let w = key_words(seed);
    Array::from_vec(w.to_vec(), &[2]).expect("two words fill a key")
}

fn resolve_key(key: Option<&Array>) -> Result<Array> {
    match key {
        Some(k) => {
            if k.shape() != [2] || k.dtype() != Dtype::U32 {
                bail!(InvalidArgument, "a random key is a uint32 array of shape [2], got {} {:?}", k.dtype(), k.shape());
            }
            Ok(k.clone())
        }
        None => Ok(Array::from_vec(next_default_key().to_vec(), &[2])?),
    }
}

/// Uniformly random `uint32` words of `shape`.
pub fn bits(shape: &[usize], key: Option<&Array>) -> Result<Array> {
    let k = resolve_key(key)?;
    Array::from_op(Primitive::RandomBits, vec![k], shape.to_vec(), Dtype::U32)
}

/// `n` new keys (`uint32[n, 2]`) from `key`, independent of it and of each other.
pub fn split(key: &Array, n: usize) -> Result<Array> {
    let k = resolve_key(Some(key))?;
    Array::from_op(Primitive::RandomBits, vec![k], vec![n, 2], Dtype::U32)
}

/// Uniform floats in `[0, 1)` (float64, 32 random bits each).
fn unit(shape: &[usize], key: Option<&Array>) -> Result<Array> {
    let b = astype(&bits(shape, key)?, Dtype::F64)?;
    multiply(&b, &Array::scalar(2f64.powi(-32)))
}

/// The largest value of `dtype` below `x` (IEEE formats: step the bits).
fn below(x: f64, dtype: Dtype) -> f64 {
    fn step(bits: u64, sign: u64) -> u64 {
        if bits == 0 {
            sign | 1
        } else if bits & sign == 0 {
            bits - 1
        } else {
            bits + 1
        }
    }
    use half::{bf16, f16};
    match dtype {
        Dtype::F16 => {
            let h = f16::from_f64(x);
            let h = if h.to_f64() >= x { f16::from_bits(step(h.to_bits() as u64, 0x8000) as u16) } else { h };
            h.to_f64()
        }
        Dtype::BF16 => {
            let h = bf16::from_f64(x);
            let h = if h.to_f64() >= x { bf16::from_bits(step(h.to_bits() as u64, 0x8000) as u16) } else { h };
            h.to_f64()
        }
        Dtype::F32 => {
            let h = x as f32;
            let h = if h as f64 >= x { f32::from_bits(step(h.to_bits() as u64, 0x8000_0000) as u32) } else { h };
            h as f64
        }
        _ => f64::from_bits(step(x.to_bits(), 1 << 63)),
    }
}

/// Uniform floats in `[low, high)` of `shape`.
pub fn uniform(low: f64, high: f64, shape: &[usize], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    if !dtype.is_float() {
        bail!(Dtype, "uniform needs a float dtype, got {dtype}");
    }
    if !(low < high && low.is_finite() && high.is_finite()) {
        bail!(InvalidArgument, "uniform needs finite low < high, got [{low}, {high})");
    }
    let u = unit(shape, key)?;
    let x = add(&multiply(&u, &Array::scalar(high - low))?, &Array::scalar(low))?;
    // Rounding to a narrow dtype can reach `high`: clamp to the value below.
    minimum(&astype(&x, dtype)?, &super::creation::scalar(below(high, dtype), dtype)?)
}

/// Normal floats with mean `loc` and standard deviation `scale` (Box-Muller
/// on two independent uniform streams, in float64).
///
/// complex64 (as MLX): real and imaginary parts independent, each with
/// variance 1/2, so `|z - loc|` has mean square `scale^2`.
pub fn normal(shape: &[usize], dtype: Dtype, loc: f64, scale: f64, key: Option<&Array>) -> Result<Array> {
    if dtype.is_complex() {
        let z = complex_normal(shape, key)?;
        return add(&multiply(&z, &Array::scalar(scale as f32))?, &Array::scalar(loc as f32)).and_then(|x| astype(&x, dtype));
    }
    if !dtype.is_float() {
        bail!(Dtype, "normal needs a float dtype, got {dtype} (a float dtype or complex64)");
    }
    let n = numel(shape);
    let u = unit(&[2, n], key)?;
    let one = Array::scalar(1.0f64);
    // 1 - u lies in (0, 1]: its log is finite.
    let u1 = super::subtract(&one, &slice(&u, &[SliceArg::range(0, 1)])?)?;
    let u2 = slice(&u, &[SliceArg::range(1, 2)])?;
    let r = sqrt(&multiply(&log(&u1)?, &Array::scalar(-2.0f64))?)?;
    let z = multiply(&r, &cos(&multiply(&u2, &Array::scalar(2.0 * std::f64::consts::PI))?)?)?;
    // Standard samples in `dtype`, then scaled and shifted in `dtype` (as
    // MLX), so `normal(loc, scale)` is `loc + scale * normal()` exactly.
    let shape: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    let z = astype(&reshape(&z, &shape)?, dtype)?;
    if scale == 1.0 && loc == 0.0 {
        return Ok(z);
    }
    add(&multiply(&z, &super::creation::scalar(scale, dtype)?)?, &super::creation::scalar(loc, dtype)?)
}

/// Standard complex normal samples of `shape` (complex64): one draw of
/// `shape + [2]` real normals of variance 1/2, the last axis split into the
/// real and imaginary parts.
pub fn complex_normal(shape: &[usize], key: Option<&Array>) -> Result<Array> {
    let mut pair = shape.to_vec();
    pair.push(2);
    let z = normal(&pair, Dtype::F32, 0.0, std::f64::consts::FRAC_1_SQRT_2, key)?;
    let part = |i: isize| -> Result<Array> {
        let mut args = vec![SliceArg::ALL; pair.len()];
        args[shape.len()] = SliceArg::range(i, i + 1);
        let dims: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
        reshape(&slice(&z, &args)?, &dims)
    };
    super::complex(&part(0)?, &part(1)?)
}

/// The calling thread's default key (`uint32[2]`) as it stands, without
/// advancing it (what `mx.random.state[0]` reads).
pub fn current_key() -> Array {
    let words = DEFAULT.with(|d| {
        let epoch = EPOCH.load(Ordering::SeqCst);
        match d.get() {
            Some((e, k)) if e == epoch => k,
            _ => key_words(SEED.load(Ordering::SeqCst)),
        }
    });
    Array::from_vec(words.to_vec(), &[2]).expect("two words fill a key")
}

/// Makes `key` (a `uint32[2]` array; read, which evaluates it) the calling
/// thread's default key: the next call without `key=` splits it.
pub fn set_current_key(key: &Array) -> Result<()> {
    let k = resolve_key(Some(key))?;
    let w = k.to_vec::<u32>()?;
    DEFAULT.with(|d| d.set(Some((EPOCH.load(Ordering::SeqCst), [w[0], w[1]]))));
    Ok(())
}

/// Uniform integers in `[low, high)`.
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    if !dtype.is_integer() {
        bail!(Dtype, "randint needs an integer dtype, got {dtype}");
    }
    if low >= high {
        bail!(InvalidArgument, "randint needs low < high, got [{low}, {high})");
    }
    let span = (high as i128 - low as i128) as f64;
    // u * span < span, and truncation of a non-negative float is its floor.
    let k = astype(&multiply(&unit(shape, key)?, &Array::scalar(span))?, Dtype::I64)?;
    astype(&add(&k, &Array::scalar(low))?, dtype)
}

/// `true` with probability `p` (broadcast to `shape`, or `p`'s shape when
/// `None`).
pub fn bernoulli(p: &Array, shape: Option<&[usize]>, key: Option<&Array>) -> Result<Array> {
    let shape = shape.unwrap_or(p.shape()).to_vec();
    let u = unit(&shape, key)?;
    less(&u, &astype(p, Dtype::F64)?)
}

/// Indices (`uint32`) sampled from the unnormalized log-probabilities
/// `logits` along `axis`: `argmax(logits + Gumbel noise)`.
pub fn categorical(logits: &Array, axis: isize, key: Option<&Array>) -> Result<Array> {
    let ax = normalize_axis(axis, logits.ndim())?;
    let u = unit(logits.shape(), key)?;
    // -log(-log(u)); u = 0 gives -inf noise (that sample is never picked).
    let g = negative(&log(&negative(&log(&u)?)?)?)?;
    let x = add(&astype(logits, Dtype::F64)?, &g)?;
    argmax(&x, Some(ax as isize), false)
}
