//! The matrix-vector path of `QuantizedMatmul` ([`super::qmv`]) compiled
//! for wider vector units, chosen at run time.
//!
//! Two kinds of kernel:
//! - [`Fused`]: 4- and 8-bit codes in groups of a multiple of 32 (GGUF's
//!   Q4_0 / Q4_1 / Q8_0 blocks once repacked, and MLX's common settings).
//!   Codes are widened to float32 in registers, 16 (AVX-512) or 8 (AVX2)
//!   at a time, and multiplied into the activations without ever being
//!   stored: per group `s * (q . x) + b * sum(x)`, with `sum(x)` per group
//!   computed once per call. Activations stay float32, so results differ
//!   from dequantize-then-matmul by summation order only (no int8
//!   activations, unlike llama.cpp's kernels).
//! - [`qmv_row_avx512`] / [`qmv_row_avx2`]: every other bit width, the
//!   portable decode-then-dot row of `qmv_row` compiled with the features.

use super::{qmv_row, Row};
use crate::dtype::Element;
use half::f16;
use std::any::TypeId;
use std::arch::x86_64::*;
use std::sync::OnceLock;

pub(super) fn avx512() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vl") && avx2())
}

pub(super) fn avx2() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c"))
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub(super) fn qmv_row_avx512<S: Element>(bits: u32, gs: usize, row: &Row<'_, S>, x: &[f32], m: usize, buf: &mut [f32], out: &mut [f32]) {
    qmv_row::<true, S>(bits, gs, row, x, m, buf, out)
}

#[target_feature(enable = "avx2,fma")]
pub(super) fn qmv_row_avx2<S: Element>(bits: u32, gs: usize, row: &Row<'_, S>, x: &[f32], m: usize, buf: &mut [f32], out: &mut [f32]) {
    qmv_row::<true, S>(bits, gs, row, x, m, buf, out)
}

/// The activations of one fused matrix-vector product, prepared once and
/// shared (read-only) by every task.
pub(super) struct Fused {
    bits: u32,
    gs: usize,
    k: usize,
    m: usize,
    wide: bool,
    /// `x` (`[m, k]`), for 4 bits with each run of 32 reordered as its 16
    /// even-indexed elements then its 16 odd-indexed ones: the order in
    /// which a run's 16 bytes yield their low nibbles, then their high ones.
    xp: Vec<f32>,
    /// `sum(x[i, group g])` at `i * groups + g`.
    xsum: Vec<f32>,
}

/// Lanes a register widens at once: 32 codes in two (AVX-512) or four
/// (AVX2) registers.
const RUN: usize = 32;

impl Fused {
    /// `None` where no fused kernel applies (other bit widths, groups not a
    /// multiple of 32, a CPU without AVX2 + FMA).
    pub(super) fn new(bits: u32, gs: usize, x: &[f32], m: usize, k: usize) -> Option<Fused> {
        if !matches!(bits, 4 | 8) || gs == 0 || gs % RUN != 0 || k % gs != 0 || x.len() != m * k {
            return None;
        }
        let wide = avx512();
        if !wide && !avx2() {
            return None;
        }
        let mut xp = x.to_vec();
        if bits == 4 {
            for (src, dst) in x.chunks_exact(RUN).zip(xp.chunks_exact_mut(RUN)) {
                for j in 0..RUN / 2 {
                    dst[j] = src[2 * j];
                    dst[RUN / 2 + j] = src[2 * j + 1];
                }
            }
        }
        let xsum = x.chunks_exact(gs).map(|g| g.iter().map(|&v| v as f64).sum::<f64>() as f32).collect();
        Some(Fused { bits, gs, k, m, wide, xp, xsum })
    }

    /// Groups per row.
    fn groups(&self) -> usize {
        self.k / self.gs
    }

    /// `out[i] = x[i] . (s * q + b)` for the `m` rows of `x` and one weight
    /// row: codes `words` (`k * bits / 32` words), scales `s` and biases `b`
    /// (one per group). Float16 scales (GGUF's) are read as they are;
    /// others are first converted into `scratch`.
    pub(super) fn row<S: Element>(&self, words: &[u32], s: &[S], b: &[S], scratch: &mut Vec<f32>, out: &mut [f32]) {
        let ng = self.groups();
        assert!(
            words.len() * 32 == self.k * self.bits as usize && s.len() == ng && b.len() == ng && out.len() == self.m,
            "fused qmv: a row of the wrong length"
        );
        let half = TypeId::of::<S>() == TypeId::of::<f16>();
        let (sp, bp) = if half {
            (s.as_ptr().cast::<u8>(), b.as_ptr().cast::<u8>())
        } else {
            scratch.clear();
            scratch.extend(s.iter().chain(b).map(|v| v.to_f64() as f32));
            (scratch.as_ptr().cast::<u8>(), scratch[ng..].as_ptr().cast::<u8>())
        };
        let codes = words.as_ptr().cast::<u8>();
        let mut i0 = 0;
        while i0 < self.m {
            // Rows of x per kernel call: the largest of 8, 4, 2, 1 left.
            let r = [8, 4, 2, 1].into_iter().find(|&r| r <= self.m - i0).unwrap_or(1);
            let a = Args { codes, gs: self.gs, ng, s: sp, b: bp, x: self.xp[i0 * self.k..].as_ptr(), xsum: self.xsum[i0 * ng..].as_ptr(), k: self.k };
            let o = &mut out[i0..i0 + r];
            macro_rules! call {
                ($f:ident, $h:literal) => {
                    // SAFETY: `$f` is compiled for AVX-512F/BW/VL + AVX2 + FMA
                    // + F16C (`dot_avx512`) or AVX2 + FMA + F16C (`dot_avx2`),
                    // and `self.wide` / `Fused::new` checked that the CPU
                    // has them. Reads: codes `[0, k * bits / 8)` bytes,
                    // inside `words` (its length asserted above); `x` rows
                    // `i0..i0 + r` of `xp` (`m * k` floats, `i0 + r <= m`),
                    // each read at `[0, k)`, and their `ng` sums in `xsum`;
                    // `ng` scales and biases at `s` / `b`: `f16` when `$h`
                    // (`S` is `f16`, lengths asserted above), else `f32` in
                    // `scratch` (`2 * ng` floats).
                    unsafe {
                        match (self.bits, r) {
                            (4, 8) => $f::<4, 8, $h>(&a, o),
                            (4, 4) => $f::<4, 4, $h>(&a, o),
                            (4, 2) => $f::<4, 2, $h>(&a, o),
                            (4, _) => $f::<4, 1, $h>(&a, o),
                            (_, 8) => $f::<8, 8, $h>(&a, o),
                            (_, 4) => $f::<8, 4, $h>(&a, o),
                            (_, 2) => $f::<8, 2, $h>(&a, o),
                            (_, _) => $f::<8, 1, $h>(&a, o),
                        }
                    }
                };
            }
            match (self.wide, half) {
                (true, true) => call!(dot_avx512, true),
                (true, false) => call!(dot_avx512, false),
                (false, true) => call!(dot_avx2, true),
                (false, false) => call!(dot_avx2, false),
            }
            i0 += r;
        }
    }
}

/// One kernel call's operands (see the `SAFETY` note in [`Fused::row`]).
struct Args {
    codes: *const u8,
    gs: usize,
    ng: usize,
    /// Scales and biases: `ng` of `f16` or of `f32` (the kernel's `H`).
    s: *const u8,
    b: *const u8,
    /// The first of the call's rows of prepared activations, `k` apart.
    x: *const f32,
    /// Their group sums, `ng` apart.
    xsum: *const f32,
    k: usize,
}

/// Scale or bias `g` at `p`: `f16` when `H`, else `f32`.
///
/// # Safety
/// `p` holds at least `g + 1` values of that type; the CPU has F16C.
#[target_feature(enable = "f16c")]
#[inline]
pub(super) unsafe fn load<const H: bool>(p: *const u8, g: usize) -> f32 {
    // SAFETY: the caller's contract.
    unsafe {
        if H {
            let bits = p.cast::<u16>().add(g).read_unaligned();
            _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
        } else {
            p.cast::<f32>().add(g).read_unaligned()
        }
    }
}

/// The 32 codes of the run starting at code `c`, as two registers of 16
/// bytes: for 4 bits the low nibbles of the run's 16 bytes then the high
/// ones (matching `Fused::xp`'s order), for 8 bits bytes `0..16` then
/// `16..32`. SSE2 only, which every x86-64 CPU has.
///
/// # Safety
/// `codes` holds the row's codes and `c + 32` is at most the row's length
/// in codes (bytes up to `(c + 32) * B / 8` are read).
#[inline(always)]
unsafe fn run_codes<const B: usize>(codes: *const u8, c: usize) -> (__m128i, __m128i) {
    // SAFETY: the caller's contract: bytes `c * B / 8 .. (c + 32) * B / 8`
    // lie inside the row's codes.
    unsafe {
        if B == 4 {
            let v = _mm_loadu_si128(codes.add(c / 2).cast());
            let mask = _mm_set1_epi8(0x0f);
            (_mm_and_si128(v, mask), _mm_and_si128(_mm_srli_epi16::<4>(v), mask))
        } else {
            (_mm_loadu_si128(codes.add(c).cast()), _mm_loadu_si128(codes.add(c + 16).cast()))
        }
    }
}

/// `out[i] = sum_g s[g] * (q_g . x_i) + b[g] * sum(x_i in g)` over `M`
/// rows of x, 16 lanes wide.
/// Each run of 32 codes ([`run_codes`]) is widened into two registers.
///
/// # Safety
/// The CPU has AVX-512F/BW/VL, AVX2, FMA and F16C; `a` reads as `Fused::row` says.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn dot_avx512<const B: usize, const M: usize, const H: bool>(a: &Args, out: &mut [f32]) {
    let mut acc = [_mm512_setzero_ps(); M];
    let mut bias = [0f32; M];
    for g in 0..a.ng {
        let mut part = [_mm512_setzero_ps(); M];
        for c in (g * a.gs..(g + 1) * a.gs).step_by(RUN) {
            // SAFETY: `c` starts a run of the row (`c + 32 <= k`).
            let (lo, hi) = unsafe { run_codes::<B>(a.codes, c) };
            let lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(lo));
            let hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(hi));
            for (i, p) in part.iter_mut().enumerate() {
                // SAFETY: floats `i * k + c .. + 32` of the call's rows, `c + 32 <= k`.
                let (x0, x1) = unsafe {
                    let x = a.x.add(i * a.k + c);
                    (_mm512_loadu_ps(x), _mm512_loadu_ps(x.add(16)))
                };
                *p = _mm512_fmadd_ps(hi, x1, _mm512_fmadd_ps(lo, x0, *p));
            }
        }
        // SAFETY: `g < ng` (caller's contract for `s`, `b`, `xsum`).
        let (s, b) = unsafe { (load::<H>(a.s, g), load::<H>(a.b, g)) };
        let s = _mm512_set1_ps(s);
        for (i, (acc, p)) in acc.iter_mut().zip(part).enumerate() {
            *acc = _mm512_fmadd_ps(p, s, *acc);
            // SAFETY: as above, row `i < M` of the call's sums.
            bias[i] += b * unsafe { *a.xsum.add(i * a.ng + g) };
        }
    }
    for ((o, acc), bias) in out.iter_mut().zip(acc).zip(bias) {
        *o = _mm512_reduce_add_ps(acc) + bias;
    }
}

/// [`dot_avx512`] 8 lanes wide: each 16-code register half of a run is
/// widened in two steps of 8.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `a` reads as `Fused::row` says.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_avx2<const B: usize, const M: usize, const H: bool>(a: &Args, out: &mut [f32]) {
    let widen = |v: __m128i| (_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(v, v))));
    let mut acc = [_mm256_setzero_ps(); M];
    let mut bias = [0f32; M];
    for g in 0..a.ng {
        let mut part = [_mm256_setzero_ps(); M];
        for c in (g * a.gs..(g + 1) * a.gs).step_by(RUN) {
            // SAFETY: as in `dot_avx512`.
            let (lo, hi) = unsafe { run_codes::<B>(a.codes, c) };
            let (q0, q1) = widen(lo);
            let (q2, q3) = widen(hi);
            for (i, p) in part.iter_mut().enumerate() {
                // SAFETY: as in `dot_avx512`.
                let (x0, x1, x2, x3) = unsafe {
                    let x = a.x.add(i * a.k + c);
                    (_mm256_loadu_ps(x), _mm256_loadu_ps(x.add(8)), _mm256_loadu_ps(x.add(16)), _mm256_loadu_ps(x.add(24)))
                };
                let t = _mm256_fmadd_ps(q1, x1, _mm256_mul_ps(q0, x0));
                *p = _mm256_add_ps(*p, _mm256_fmadd_ps(q3, x3, _mm256_fmadd_ps(q2, x2, t)));
            }
        }
        // SAFETY: `g < ng` (caller's contract for `s`, `b`, `xsum`).
        let (s, b) = unsafe { (load::<H>(a.s, g), load::<H>(a.b, g)) };
        let s = _mm256_set1_ps(s);
        for (i, (acc, p)) in acc.iter_mut().zip(part).enumerate() {
            *acc = _mm256_fmadd_ps(p, s, *acc);
            // SAFETY: as above, row `i < M` of the call's sums.
            bias[i] += b * unsafe { *a.xsum.add(i * a.ng + g) };
        }
    }
    for ((o, acc), bias) in out.iter_mut().zip(acc).zip(bias) {
        let h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps::<1>(acc));
        let h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        *o = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h))) + bias;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both widths' kernels (whichever this CPU has) against a float64 sum,
    /// over bit widths, group sizes and every row count up to 9 (so each
    /// of the 8/4/2/1-row kernels runs, alone and after another).
    #[test]
    fn fused_kernels_match_a_float64_dot() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut ran = 0;
        for wide in [true, false] {
            if (wide && !avx512()) || !avx2() {
                continue;
            }
            for bits in [4u32, 8] {
                for gs in [32usize, 64, 128] {
                    for m in 1..=9usize {
                        let k = gs * 3;
                        let x: Vec<f32> = (0..m * k).map(|_| (next() % 2001) as f32 / 1000.0 - 1.0).collect();
                        let words: Vec<u32> = (0..k * bits as usize / 32).map(|_| next() as u32).collect();
                        let s: Vec<f32> = (0..k / gs).map(|_| (next() % 100) as f32 / 300.0 + 0.01).collect();
                        let b: Vec<f32> = (0..k / gs).map(|_| (next() % 100) as f32 / 50.0 - 1.0).collect();
                        let mut f = Fused::new(bits, gs, &x, m, k).expect("a fused kernel applies");
                        f.wide = wide;
                        let code = |j: usize| (words[j * bits as usize / 32] >> (j * bits as usize % 32)) as u64 & ((1 << bits) - 1);
                        let check = |out: &[f32], s: &[f32], b: &[f32], what: &str| {
                            for (i, &got) in out.iter().enumerate() {
                                let (mut want, mut mag) = (0f64, 0f64);
                                for j in 0..k {
                                    let w = s[j / gs] as f64 * code(j) as f64 + b[j / gs] as f64;
                                    want += w * x[i * k + j] as f64;
                                    mag += (w * x[i * k + j] as f64).abs();
                                }
                                assert!((got as f64 - want).abs() <= 1e-5 * mag + 1e-6, "{what} wide {wide} bits {bits} gs {gs} m {m} row {i}: {got} vs {want}");
                            }
                        };
                        let mut out = vec![0f32; m];
                        f.row(&words, &s, &b, &mut Vec::new(), &mut out);
                        check(&out, &s, &b, "f32 scales");
                        // Float16 scales and biases, read as they are in the kernel.
                        let sh: Vec<f16> = s.iter().map(|&v| f16::from_f32(v)).collect();
                        let bh: Vec<f16> = b.iter().map(|&v| f16::from_f32(v)).collect();
                        f.row(&words, &sh, &bh, &mut Vec::new(), &mut out);
                        let wide_h = |v: &[f16]| v.iter().map(|h| h.to_f32()).collect::<Vec<f32>>();
                        check(&out, &wide_h(&sh), &wide_h(&bh), "f16 scales");
                        ran += 1;
                    }
                }
            }
        }
        // On x86-64 without AVX2 nothing runs; say so rather than pass.
        assert!(ran > 0 || !avx2(), "no fused kernel ran");
    }

    #[test]
    fn fused_declines_what_it_cannot_run() {
        let x = vec![0f32; 64];
        assert!(Fused::new(3, 32, &x, 1, 64).is_none());
        assert!(Fused::new(4, 16, &x, 1, 64).is_none());
        assert!(Fused::new(4, 32, &x, 2, 64).is_none());
    }
}
