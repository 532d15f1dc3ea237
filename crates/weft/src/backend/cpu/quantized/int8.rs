//! Int8 activations for `QuantizedMatmul` (`int8_activations: true`):
//! each row of `x` is rounded to int8 per block of [`BLOCK`] elements, and
//! the matrix-vector path takes integer dot products of those with the
//! weight codes (llama.cpp's approach for its block formats).
//!
//! # The scheme
//!
//! A block of `x` (32 consecutive elements of a row; the last block of a row
//! may be shorter) with `amax = max |x_j|` gets `d = amax / 127` and
//! `q_j = round(x_j / d)` (ties away from zero) in `-127..=127`; an all-zero
//! block has `d = 0, q = 0`, and a block holding a NaN has `d = NaN`. The
//! product computed is `x̂ @ ŵ.T` with `x̂_j = d * q_j` and `ŵ` the
//! dequantized weights: for a weight row with scales `s_g`, biases `b_g`
//! and codes `c_j`,
//!
//! `y = sum_blocks (s_g * d) * (c . q)_block + sum_g b_g * sum_{blocks in g} d * sum(q)`,
//!
//! where `(c . q)` and `sum(q)` are exact integers. Rounding `x` is the only
//! approximation: `|y - x @ ŵ.T| <= sum_blocks (d / 2) * sum_{j in block} |ŵ_j|`
//! plus float rounding (the tests check this bound).
//!
//! # Float order (the same at every SIMD level)
//!
//! A row's blocks are taken in *steps*: one block per step for 8-bit
//! codes, two for 4-bit codes (blocks `2j` and `2j + 1`, whose 32 code
//! bytes one 256-bit load reads; when the block count is odd, the last
//! step pairs the last block with an all-zero block of scale 0). A step's
//! integer dot is 8 exact lane sums:
//!
//! - 8-bit: lane `l` sums elements `4l..4l + 4` of the block;
//! - 4-bit: lane `l < 4` sums elements `8l..8l + 8` of block `2j`, lane
//!   `4 + l` the same elements of block `2j + 1`.
//!
//! (`vpmaddubsw`, `vpaddw`, `vpmaddwd` give these with AVX2; `vpdpbusd`
//! with VNNI.) Steps accumulate in order into one 8-lane accumulator,
//! `A[l] = fma(lane_l, s_g * d, A[l])` with the scale `s_g` and `d` of the
//! lane's block (0 and 0 for the padding block); the bias terms accumulate
//! into `B[g % 8] = fma(b_g, xs_g, B[g % 8])`. The result is `tree(A) +
//! tree(B)` with `tree(t) = ((t0 + t4) + (t2 + t6)) + ((t1 + t5) + (t3 +
//! t7))`. The portable, AVX2 and AVX-512 VNNI kernels all compute exactly
//! this, so they agree bit for bit (the tests check each against a scalar
//! integer reference), and a row's result does not depend on how many
//! rows of `x` a kernel call takes.
//!
//! The prepared `q` of a step is laid out for those loads. 8-bit: the
//! block's 32 codes. 4-bit (a byte holds element `2e` in its low nibble
//! and `2e + 1` in its high one): 64 bytes, the even elements of block
//! `2j` then of block `2j + 1` (16 each, against the low nibbles of the 32
//! code bytes), then their odd elements (against the high nibbles).

use super::{by_weight_rows, Row};
use crate::dtype::Element;
use half::slice::HalfFloatSliceExt;
use half::f16;
use std::any::TypeId;

/// Elements of `x` per int8 block.
pub(super) const BLOCK: usize = 32;
/// Integer lane sums per block.
const LANES: usize = 8;

#[cfg(target_arch = "x86_64")]
mod x86;

/// The kernel family that runs the int8 products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// Plain Rust (any target).
    Portable,
    /// AVX2 + FMA: `vpmaddubsw` / `vpmaddwd`, 8 lanes.
    Avx2,
    /// AVX-512 F/BW/VL + VNNI: `vpdpbusd`, two blocks per 16-lane register.
    Vnni,
}

impl Level {
    /// The widest level this CPU runs (checked once).
    pub(crate) fn best() -> Level {
        [Level::Vnni, Level::Avx2].into_iter().find(|l| l.available()).unwrap_or(Level::Portable)
    }

    /// Whether this CPU has the level's features.
    pub(crate) fn available(self) -> bool {
        match self {
            Level::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => x86::has_avx2(),
            #[cfg(target_arch = "x86_64")]
            Level::Vnni => x86::has_vnni(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// Whether the int8 matrix-vector kernels take codes of `bits` in groups of
/// `gs` (other widths round `x` with [`round_rows`] and run in float).
pub(super) fn applies(bits: u32, gs: usize) -> bool {
    matches!(bits, 4 | 8) && gs % BLOCK == 0 && gs.is_power_of_two()
}

/// Rounds the block `x` (at most [`BLOCK`] long) into `q`: returns `d`.
///
/// `amax` is taken over 8 lanes, then across them: `max` of non-NaN
/// values is exact and order-free, so this is the plain maximum, in a form
/// the compiler turns into vector `max`es instead of one compare per element.
fn quantize_block(x: &[f32], q: &mut [i8]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut nan = [false; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            nan[l] |= c[l].is_nan();
            lanes[l] = lanes[l].max(c[l].abs());
        }
    }
    for (l, &v) in tail.iter().enumerate() {
        nan[l] |= v.is_nan();
        lanes[l] = lanes[l].max(v.abs());
    }
    if nan.iter().any(|&n| n) {
        q.iter_mut().for_each(|v| *v = 0);
        return f32::NAN;
    }
    let amax = lanes.iter().fold(0f32, |a, &v| a.max(v));
    let d = amax / 127.0;
    if d == 0.0 {
        q.iter_mut().for_each(|v| *v = 0);
        return d;
    }
    for (o, &v) in q.iter_mut().zip(x) {
        *o = round_away(v / d).clamp(-127, 127) as i8;
    }
    d
}

/// `y` rounded to the nearest integer, ties away from zero (`f32::round`),
/// for `|y|` within `i32` (here `|v / d| <= 127` and a bit): the truncation
/// is exact, and so is `y - t` (both have `y`'s sign and `|y - t| < 1`),
/// so this is `round` without a libm call per element, and it vectorizes.
/// A NaN (`inf / inf` in a block holding an infinity) gives 0, as the
/// saturating `as` gave before; the adds saturate rather than wrap.
#[inline(always)]
fn round_away(y: f32) -> i32 {
    let t = y as i32;
    let f = y - t as f32;
    t.saturating_add((f >= 0.5) as i32).saturating_sub((f <= -0.5) as i32)
}

/// `x` (rows of `k`) with every block replaced by `d * q`: the activations
/// the int8 scheme multiplies, for the paths that run them in float.
pub(super) fn round_rows(x: &[f32], k: usize) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    let mut q = [0i8; BLOCK];
    if k == 0 {
        return out;
    }
    for (row, o) in x.chunks(k).zip(out.chunks_mut(k)) {
        for (xb, ob) in row.chunks(BLOCK).zip(o.chunks_mut(BLOCK)) {
            let d = quantize_block(xb, &mut q[..xb.len()]);
            for (v, &c) in ob.iter_mut().zip(&q) {
                *v = d * c as f32;
            }
        }
    }
    out
}

/// The int8 activations of one product, prepared once and shared
/// (read-only) by every task.
pub(super) struct Prepared {
    bits: u32,
    k: usize,
    m: usize,
    /// Blocks per row (`k / BLOCK`) and groups per row.
    nb: usize,
    ng: usize,
    /// `log2(gs / BLOCK)`: block `i` lies in group `i >> shift`.
    shift: u32,
    /// Steps per row (`nb` for 8 bits, `ceil(nb / 2)` for 4) and the
    /// prepared bytes of one step (32 or 64).
    steps: usize,
    step_bytes: usize,
    /// `[m, steps, step_bytes]`: the codes of `x` in the order the module
    /// doc gives.
    q: Vec<i8>,
    /// `[m, steps, LANES]`: the `d` of each lane's block (0 for padding).
    d8: Vec<f32>,
    /// `[m, ng]`: per group, `sum over its blocks of fma(sum(q), d, .)` in
    /// block order, from 0: the group's `sum(x̂)`.
    xs: Vec<f32>,
}

impl Prepared {
    /// `None` unless [`applies`] and `k` is whole groups.
    pub(super) fn new(bits: u32, gs: usize, x: &[f32], m: usize, k: usize) -> Option<Prepared> {
        if !applies(bits, gs) || k % gs != 0 || x.len() != m * k {
            return None;
        }
        let (nb, ng, shift) = (k / BLOCK, k / gs, (gs / BLOCK).trailing_zeros());
        let (steps, step_bytes) = if bits == 4 { (nb.div_ceil(2), 2 * BLOCK) } else { (nb, BLOCK) };
        let mut p = Prepared {
            bits,
            k,
            m,
            nb,
            ng,
            shift,
            steps,
            step_bytes,
            q: vec![0; m * steps * step_bytes],
            d8: vec![0.0; m * steps * LANES],
            xs: vec![0.0; m * ng],
        };
        let mut qb = [0i8; BLOCK];
        for i in 0..m {
            for blk in 0..nb {
                let d = quantize_block(&x[i * k + blk * BLOCK..][..BLOCK], &mut qb);
                if bits == 4 {
                    // Block `blk` is half `h` of step `blk / 2`.
                    let (step, h) = (i * steps + blk / 2, blk % 2);
                    let dst = &mut p.q[step * step_bytes..][..step_bytes];
                    for e in 0..BLOCK / 2 {
                        dst[h * 16 + e] = qb[2 * e];
                        dst[32 + h * 16 + e] = qb[2 * e + 1];
                    }
                    p.d8[step * LANES + h * 4..][..4].fill(d);
                } else {
                    let step = i * steps + blk;
                    p.q[step * step_bytes..][..step_bytes].copy_from_slice(&qb);
                    p.d8[step * LANES..][..LANES].fill(d);
                }
                let sum: i32 = qb.iter().map(|&v| v as i32).sum();
                let xs = &mut p.xs[i * ng + (blk >> shift)];
                *xs = (sum as f32).mul_add(d, *xs);
            }
        }
        Some(p)
    }

    /// `out[r * m + i] = x̂[i] . ŵ_r` for every row `i` of `x` and each of a
    /// run of `out.len() / m` consecutive weight rows `r`: their codes
    /// `codes` (`k * bits / 8` bytes a row), scales `s` and biases `b` (`ng`
    /// a row), with `level`'s kernels (it must be available). The checks
    /// and the kernel choice are made once per run, not per weight row. The
    /// x86 kernels read float16 scales (GGUF's) as they are, 8 at a time
    /// with F16C; other types, and the portable kernel, first convert them
    /// into `scratch`.
    pub(super) fn rows<S: Element>(&self, level: Level, codes: &[u8], s: &[S], b: &[S], scratch: &mut Vec<f32>, out: &mut [f32]) {
        let (ng, m) = (self.ng, self.m);
        assert!(m > 0 && out.len() % m == 0, "int8 qmv: an output of the wrong length");
        let count = out.len() / m;
        let row_bytes = self.k * self.bits as usize / 8;
        assert!(
            codes.len() == count * row_bytes && s.len() == count * ng && b.len() == count * ng,
            "int8 qmv: weight rows of the wrong length"
        );
        assert!(level.available(), "int8 qmv: {level:?} is not available on this CPU");
        // Float16 scales go to the x86 kernels as they are; anything else
        // is converted first.
        let as_stored = TypeId::of::<S>() == TypeId::of::<f16>() && level != Level::Portable;
        if !as_stored {
            scratch.resize(2 * count * ng, 0.0);
            let (sf, bf) = scratch.split_at_mut(count * ng);
            to_f32(s, sf);
            to_f32(b, bf);
        }
        match level {
            Level::Portable => {
                let (sf, bf) = scratch.split_at(count * ng);
                for (r, o) in out.chunks_mut(m).enumerate() {
                    self.rows_portable(&codes[r * row_bytes..][..row_bytes], &sf[r * ng..][..ng], &bf[r * ng..][..ng], o);
                }
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 | Level::Vnni => {
                let vnni = level == Level::Vnni;
                // SAFETY: `codes` is `count` rows of `row_bytes` and `out`
                // `count * m` long (asserted above); `s` and `b` are
                // `count * ng` long, and `S` is `f16` when `as_stored` (same
                // type id), so they are that many `f16`s each; otherwise
                // `scratch` holds their `2 * count * ng` float32 values.
                unsafe {
                    if as_stored {
                        x86::rows::<true>(self, vnni, codes, s.as_ptr().cast(), b.as_ptr().cast(), out)
                    } else {
                        let bf = scratch[count * ng..].as_ptr().cast();
                        x86::rows::<false>(self, vnni, codes, scratch.as_ptr().cast(), bf, out)
                    }
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("checked available above"),
        }
    }

    /// The portable kernel: the scheme's order with scalar integers.
    fn rows_portable(&self, codes: &[u8], s: &[f32], bias: &[f32], out: &mut [f32]) {
        let (steps, sb, ng) = (self.steps, self.step_bytes, self.ng);
        for (i, o) in out.iter_mut().enumerate() {
            let mut a = [0f32; LANES];
            for j in 0..steps {
                let q = &self.q[(i * steps + j) * sb..][..sb];
                let d = &self.d8[(i * steps + j) * LANES..][..LANES];
                for (l, a) in a.iter_mut().enumerate() {
                    let (sum, scale) = if self.bits == 4 {
                        // Half `h` of the step (its block), quarter `u` of the block.
                        let (h, u) = (l / 4, l % 4);
                        let blk = 2 * j + h;
                        if blk < self.nb {
                            let w = &codes[blk * 16..][..16];
                            let sum: i32 = (4 * u..4 * u + 4)
                                .map(|t| (w[t] & 0x0f) as i32 * q[h * 16 + t] as i32 + (w[t] >> 4) as i32 * q[32 + h * 16 + t] as i32)
                                .sum();
                            (sum, s[blk >> self.shift])
                        } else {
                            (0, 0.0)
                        }
                    } else {
                        let w = &codes[j * BLOCK..][..BLOCK];
                        let sum: i32 = (4 * l..4 * l + 4).map(|t| w[t] as i32 * q[t] as i32).sum();
                        (sum, s[j >> self.shift])
                    };
                    *a = (sum as f32).mul_add(scale * d[l], *a);
                }
            }
            let mut bsum = [0f32; LANES];
            for g in 0..ng {
                bsum[g % LANES] = bias[g].mul_add(self.xs[i * ng + g], bsum[g % LANES]);
            }
            *o = tree(&a) + tree(&bsum);
        }
    }
}

/// `((t0 + t4) + (t2 + t6)) + ((t1 + t5) + (t3 + t7))`: the reduction a
/// 256-bit register's halves, then quarters, then pairs give.
fn tree(t: &[f32; LANES]) -> f32 {
    let u = [t[0] + t[4], t[1] + t[5], t[2] + t[6], t[3] + t[7]];
    (u[0] + u[2]) + (u[1] + u[3])
}

/// `v` as float32 into `out` (float16 through `half`'s F16C conversion
/// where the CPU has it).
fn to_f32<S: Element>(v: &[S], out: &mut [f32]) {
    if TypeId::of::<S>() == TypeId::of::<f16>() {
        // SAFETY: `S` is `f16` (same type id), so the slice is `v.len()`
        // `f16`s at the same address, alive and unaliased-mutably for `v`'s
        // borrow.
        let h = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<f16>(), v.len()) };
        h.convert_to_f32_slice(out);
    } else {
        for (o, x) in out.iter_mut().zip(v) {
            *o = x.to_f64() as f32;
        }
    }
}

/// The codes of `words` as bytes (little-endian, so code `j` of a 4-bit row
/// is nibble `j % 2` of byte `j / 2`).
fn bytes(words: &[u32]) -> &[u8] {
    // SAFETY: `u8` has alignment 1 and every bit pattern is a valid `u8`;
    // the `4 * len` bytes are exactly `words`' memory, borrowed (shared)
    // for as long as `words` is. x86-64 and the other targets weft runs
    // on are little-endian, the order the codes were packed in.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 4) }
}

/// The int8 counterpart of `qmv` (the same task split, `by_weight_rows`):
/// `y` (`[m, n]`) `= x̂ @ ŵ.T` for the `n` weight rows; `rows(r, count)`
/// gives weight rows `r..r + count` (consecutive in memory) as one [`Row`].
pub(super) fn qmv<'a, S: Element + Sync>(level: Level, p: &Prepared, n: usize, rows: impl Fn(usize, usize) -> Row<'a, S> + Sync, y: &mut [f32]) {
    by_weight_rows(p.m, p.k, n, y, |r0, out| {
        let run = rows(r0, out.len() / p.m);
        p.rows(level, bytes(run.words), run.s, run.b, &mut Vec::new(), out);
    });
}

#[cfg(test)]
mod tests;
