//! The x86-64 kernels of the int8 scheme ([`super`]): AVX2 (`vpmaddubsw`,
//! `vpaddw`, `vpmaddwd`) and AVX-512 VNNI (`vpdpbusd` on 256-bit
//! registers, AVX-512 VL). One step (two 4-bit blocks, or one 8-bit block)
//! per 256-bit register; both keep the scheme's float order, so they agree
//! bit for bit with the portable kernel.
//!
//! Codes are unsigned (4-bit: `0..16`, 8-bit: `0..256`), activations
//! signed (`-127..=127`), the operand order `vpmaddubsw` and `vpdpbusd`
//! take. `vpmaddubsw` saturates a pair sum past `i16`: 4-bit pairs stay
//! below `2 * 15 * 127`, and the sum of a low- and a high-nibble pair below
//! `4 * 15 * 127 < 32767`, so `vpaddw` is exact; 8-bit codes go in as two
//! nibbles (`lo + 16 * hi`, each pair sum widened to `i32` by `vpmaddwd`
//! before the `* 16`). `vpdpbusd` sums its four products in `i32` without
//! saturation.

use super::super::simd::load;
use super::{Prepared, LANES};
use std::arch::x86_64::*;
use std::sync::OnceLock;

pub(super) fn has_avx2() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c"))
}

pub(super) fn has_vnni() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
            && has_avx2()
    })
}

/// Every row of `p` against each of a run of `out.len() / m` consecutive
/// weight rows, in kernel calls of up to 8 rows of `x` at a time. `codes`,
/// `s` and `b` start at the run's first row (its `k * bits / 8` code bytes,
/// then the next row's); `s` and `b` point at `ng` scales and biases a row:
/// `f16` when `H`, else `f32`.
///
/// # Safety
/// `s` and `b` each point at `ng * out.len() / m` readable values of that
/// type; `codes` is `k * bits / 8` bytes per row of the run (`Prepared::rows`
/// asserts both).
pub(super) unsafe fn rows<const H: bool>(p: &Prepared, vnni: bool, codes: &[u8], s: *const u8, b: *const u8, out: &mut [f32]) {
    assert!(if vnni { has_vnni() } else { has_avx2() }, "int8 qmv: the CPU lacks the kernel's features");
    let row_bytes = p.k * p.bits as usize / 8;
    let scale_bytes = p.ng * if H { 2 } else { 4 };
    for (w, out) in out.chunks_mut(p.m).enumerate() {
        let row = &codes[w * row_bytes..(w + 1) * row_bytes];
        // SAFETY: weight row `w` of the run: its scales and biases start
        // `w * ng` values in (the caller's contract).
        let (s, b) = unsafe { (s.add(w * scale_bytes), b.add(w * scale_bytes)) };
        let mut i0 = 0;
        while i0 < p.m {
            let r = [8, 4, 2, 1].into_iter().find(|&r| r <= p.m - i0).unwrap_or(1);
            let a = Args { p, i0, codes: row.as_ptr(), s, b };
            let o = &mut out[i0..i0 + r];
            macro_rules! call {
                ($f:ident) => {
                    match (p.bits, r) {
                        (4, 8) => $f::<4, 8, H>(&a, o),
                        (4, 4) => $f::<4, 4, H>(&a, o),
                        (4, 2) => $f::<4, 2, H>(&a, o),
                        (4, _) => $f::<4, 1, H>(&a, o),
                        (_, 8) => $f::<8, 8, H>(&a, o),
                        (_, 4) => $f::<8, 4, H>(&a, o),
                        (_, 2) => $f::<8, 2, H>(&a, o),
                        (_, _) => $f::<8, 1, H>(&a, o),
                    }
                };
            }
            if vnni {
                // SAFETY: `rows_vnni` is compiled for AVX-512 F/BW/VL/VNNI + AVX2
                // + FMA + F16C, which `has_vnni` confirmed above. Its reads (see
                // `Args`): rows `i0..i0 + r` of `p` (`i0 + r <= m`), the weight
                // row's `k * bits / 8` code bytes (`row`) and `ng` scales and
                // biases (the caller's contract); it writes `o` (`r` long).
                unsafe { call!(rows_vnni) }
            } else {
                // SAFETY: as above, for `rows_avx2` (AVX2 + FMA + F16C,
                // confirmed by `has_avx2`).
                unsafe { call!(rows_avx2) }
            }
            i0 += r;
        }
    }
}

/// One kernel call's operands: rows `i0..i0 + M` of `p`, and one weight
/// row's codes (`p.k * bits / 8` bytes), scales and biases (`p.ng` each,
/// `f16` or `f32` as the kernel's `H` says).
struct Args<'a> {
    p: &'a Prepared,
    i0: usize,
    codes: *const u8,
    s: *const u8,
    b: *const u8,
}

/// `((t0 + t4) + (t2 + t6)) + ((t1 + t5) + (t3 + t7))` of 8 lanes (`tree`).
#[target_feature(enable = "avx2")]
fn hsum(t: __m256) -> f32 {
    let u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps::<1>(t));
    let v = _mm_add_ps(u, _mm_movehl_ps(u, u));
    _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)))
}

/// `tree(B)`: the bias terms of row `i` (`B[g % 8] += b_g * xs_g`), 8
/// groups at a time, then the remaining ones lane by lane.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `a.b` holds `ng` values (`f16` when
/// `H`, else `f32`); `i < m`.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bias_sum<const H: bool>(a: &Args, i: usize) -> f32 {
    let ng = a.p.ng;
    let xs = &a.p.xs[i * ng..(i + 1) * ng];
    let mut acc = _mm256_setzero_ps();
    let full = ng / LANES * LANES;
    for g in (0..full).step_by(LANES) {
        // SAFETY: `g + 8 <= ng` values of `a.b` (caller) and floats of `xs`.
        let (b, x) = unsafe {
            let b = if H { _mm256_cvtph_ps(_mm_loadu_si128(a.b.cast::<u16>().add(g).cast())) } else { _mm256_loadu_ps(a.b.cast::<f32>().add(g)) };
            (b, _mm256_loadu_ps(xs.as_ptr().add(g)))
        };
        acc = _mm256_fmadd_ps(b, x, acc);
    }
    let mut lanes = [0f32; LANES];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
    for g in full..ng {
        // SAFETY: `g < ng` (caller's contract for `a.b`).
        let b = unsafe { load::<H>(a.b, g) };
        lanes[g % LANES] = b.mul_add(xs[g], lanes[g % LANES]);
    }
    // SAFETY: `lanes` holds 8 floats.
    hsum(unsafe { _mm256_loadu_ps(lanes.as_ptr()) })
}

/// Step `j`'s codes: for 4 bits the low and the high nibbles of its 32
/// bytes (blocks `2j`, `2j + 1`; the second block is zeros when it is the
/// padding one), for 8 bits the block's 32 bytes (and zeros).
///
/// # Safety
/// The CPU has AVX2; `a.codes` is the row's `nb * B * 4` code bytes.
#[target_feature(enable = "avx2")]
unsafe fn step_codes<const B: u32>(a: &Args, j: usize) -> (__m256i, __m256i) {
    // SAFETY: 4 bits: bytes `32j .. 32j + 32` (two blocks) or `.. 32j + 16`
    // (the last block of an odd count); 8 bits: bytes `32j .. 32j + 32`,
    // block `j < nb`. All inside the row's codes (caller).
    unsafe {
        if B == 4 {
            let v = if 2 * j + 1 < a.p.nb {
                _mm256_loadu_si256(a.codes.add(32 * j).cast())
            } else {
                _mm256_set_m128i(_mm_setzero_si128(), _mm_loadu_si128(a.codes.add(32 * j).cast()))
            };
            let mask = _mm256_set1_epi8(0x0f);
            (_mm256_and_si256(v, mask), _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask))
        } else {
            (_mm256_loadu_si256(a.codes.add(32 * j).cast()), _mm256_setzero_si256())
        }
    }
}

/// Step `j`'s scale per lane: 8-bit, its block's `s_g` in all 8; 4-bit,
/// block `2j`'s in lanes 0-3 and block `2j + 1`'s (0 for padding) in 4-7.
///
/// # Safety
/// The CPU has AVX2 and F16C; `a.s` holds `ng` values (`f16` when `H`,
/// else `f32`); `j < steps`.
#[target_feature(enable = "avx2,f16c")]
unsafe fn step_scales<const B: u32, const H: bool>(a: &Args, j: usize) -> __m256 {
    let p = a.p;
    // SAFETY: every index read is a block's group (`blk >> shift`) of a
    // block `blk < nb`, so `< ng` (caller's contract for `a.s`).
    unsafe {
        if B != 4 {
            return _mm256_set1_ps(load::<H>(a.s, j >> p.shift));
        }
        let b0 = 2 * j;
        if p.shift > 0 {
            // Groups of 2 blocks or more: both blocks of the step share one
            // (`2j` is even), and the block count is even.
            return _mm256_set1_ps(load::<H>(a.s, b0 >> p.shift));
        }
        if b0 + 1 < p.nb {
            // One group per block: the step's two scales are adjacent
            // (values `2j`, `2j + 1`).
            let two = if H {
                _mm_cvtph_ps(_mm_cvtsi32_si128(a.s.cast::<u32>().add(j).read_unaligned() as i32))
            } else {
                _mm_castsi128_ps(_mm_cvtsi64_si128(a.s.cast::<i64>().add(j).read_unaligned()))
            };
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1))
        } else {
            _mm256_set_m128(_mm_setzero_ps(), _mm_set1_ps(load::<H>(a.s, b0)))
        }
    }
}

/// A 4-bit step's lane sums (AVX2): low nibbles times the even elements,
/// high nibbles times the odd ones, pair sums added as exact `i16`, then
/// widened in pairs.
#[target_feature(enable = "avx2")]
fn dot4_avx2(lo: __m256i, hi: __m256i, qe: __m256i, qo: __m256i) -> __m256i {
    let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, qe), _mm256_maddubs_epi16(hi, qo));
    _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
}

/// An 8-bit block's lane sums (AVX2): `lo + 16 * hi` of its codes' nibbles.
#[target_feature(enable = "avx2")]
fn dot8_avx2(w: __m256i, xq: __m256i) -> __m256i {
    let mask = _mm256_set1_epi8(0x0f);
    let (lo, hi) = (_mm256_and_si256(w, mask), _mm256_and_si256(_mm256_srli_epi16::<4>(w), mask));
    let lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xq), _mm256_set1_epi16(1));
    let hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xq), _mm256_set1_epi16(16));
    _mm256_add_epi32(lo, hi)
}

/// [`dot4_avx2`] with VNNI: two `vpdpbusd` into one sum.
#[target_feature(enable = "avx512f,avx512vl,avx512vnni,avx2")]
fn dot4_vnni(lo: __m256i, hi: __m256i, qe: __m256i, qo: __m256i) -> __m256i {
    _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, qe), hi, qo)
}

/// [`dot8_avx2`] with VNNI: one `vpdpbusd` (unsigned codes, signed `x`).
#[target_feature(enable = "avx512f,avx512vl,avx512vnni,avx2")]
fn dot8_vnni(w: __m256i, xq: __m256i) -> __m256i {
    _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, xq)
}

/// How far ahead of the step being read the kernels ask for code bytes:
/// decode is a stream of weight rows that each reach the core once, so
/// the hardware prefetcher alone leaves the kernel waiting on loads (perf:
/// a third of its time on the instruction after the code load).
const CODES_AHEAD: usize = 1024;
/// How far ahead of a row's scales and biases the kernels ask for theirs.
const SCALES_AHEAD: usize = 256;

/// A hint to bring the cache line at `at + ahead` into L1. The address may
/// lie past the end of the data (a prefetch never faults), so it is formed
/// with `wrapping_add` and never read.
#[inline(always)]
fn prefetch(at: *const u8, ahead: usize) {
    // SAFETY: `prefetch` is a hint: it reads no memory the program sees and
    // does not fault on any address; SSE is part of x86-64.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(ahead).cast()) }
}

/// A kernel of the scheme over rows `i0..i0 + M`: per step, the codes and
/// scales once, then per row one integer dot and one float `fma` into the
/// row's accumulator; the two levels differ only in their integer dots.
macro_rules! kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, $dot4:ident, $dot8:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The CPU has the features the kernel is compiled for; `a` is as
        /// [`Args`] says; `out` is `M` long.
        #[target_feature(enable = $features)]
        unsafe fn $name<const B: u32, const M: usize, const H: bool>(a: &Args, out: &mut [f32]) {
            let p = a.p;
            let mut acc = [_mm256_setzero_ps(); M];
            // The row's scales and biases are read once per row: ask for the
            // ones a few rows on now (the rows of a task are adjacent).
            prefetch(a.s, SCALES_AHEAD);
            prefetch(a.b, SCALES_AHEAD);
            for j in 0..p.steps {
                // The codes stream through once: keep loads in flight ahead
                // of the step (into the task's next rows at a row's end).
                prefetch(a.codes, 32 * j + CODES_AHEAD);
                // SAFETY: `j < steps` (`step_codes`, `step_scales`); `q` and
                // `d8` of rows `i0 + i < m` (the call's rows), step `j`:
                // `step_bytes` (64 for 4 bits, read as two halves of 32; 32
                // for 8) and 8 floats, inside `[m, steps, ...]`.
                unsafe {
                    let (w0, w1) = step_codes::<B>(a, j);
                    let sv = step_scales::<B, H>(a, j);
                    for (i, acc) in acc.iter_mut().enumerate() {
                        let at = (a.i0 + i) * p.steps + j;
                        let q = p.q.as_ptr().add(at * p.step_bytes);
                        let dot = if B == 4 {
                            $dot4(w0, w1, _mm256_loadu_si256(q.cast()), _mm256_loadu_si256(q.add(32).cast()))
                        } else {
                            $dot8(w0, _mm256_loadu_si256(q.cast()))
                        };
                        let c = _mm256_mul_ps(sv, _mm256_loadu_ps(p.d8.as_ptr().add(at * LANES)));
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), c, *acc);
                    }
                }
            }
            for (i, (o, acc)) in out.iter_mut().zip(acc).enumerate() {
                // SAFETY: row `a.i0 + i < m`; the caller's contract for `a.b`.
                *o = hsum(acc) + unsafe { bias_sum::<H>(a, a.i0 + i) };
            }
        }
    };
}

kernel!(
    /// The scheme with AVX2 (`vpmaddubsw` / `vpaddw` / `vpmaddwd`).
    rows_avx2,
    "avx2,fma,f16c",
    dot4_avx2,
    dot8_avx2
);
kernel!(
    /// The scheme with AVX-512 VNNI on 256-bit registers (`vpdpbusd`).
    rows_vnni,
    "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c",
    dot4_vnni,
    dot8_vnni
);
