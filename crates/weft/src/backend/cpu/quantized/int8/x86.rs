//! The x86-64 kernels of the int8 scheme ([`super`]): AVX2 (`vpmaddubsw`
//! then `vpmaddwd`, one block per 8-lane register) and AVX-512 VNNI
//! (`vpdpbusd`, two blocks per 16-lane register). Both keep the scheme's
//! float order, so they agree bit for bit with the portable kernel.
//!
//! Codes are unsigned (4-bit: `0..16`, 8-bit: `0..256`), activations
//! signed (`-127..=127`), the operand order `vpmaddubsw` and `vpdpbusd`
//! take. `vpmaddubsw` saturates a pair sum past `i16`: 4-bit pairs stay
//! below `2 * 15 * 127`, and 8-bit codes go in as two nibbles (`lo + 16 *
//! hi`, each pair sum widened to `i32` by `vpmaddwd` before the `* 16`).
//! `vpdpbusd` sums its four products in `i32` without saturation.

use super::super::simd::load;
use super::{Prepared, BLOCK, LANES};
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

/// Every row of `p` against one weight row, in calls of up to 8 (VNNI) or 4
/// (AVX2) rows of `x` at a time. `s` and `b` point at the row's scales and
/// biases: `f16` when `H`, else `f32`.
///
/// # Safety
/// `s` and `b` each point at `p.ng` readable values of that type; `codes`
/// is `p.k * p.bits / 8` bytes and `out` is `p.m` long (`Prepared::row`
/// asserts both).
pub(super) unsafe fn rows<const H: bool>(p: &Prepared, vnni: bool, codes: &[u8], s: *const u8, b: *const u8, out: &mut [f32]) {
    let mut i0 = 0;
    while i0 < p.m {
        let most = if vnni { 8 } else { 4 };
        let r = [8, 4, 2, 1].into_iter().find(|&r| r <= most && r <= p.m - i0).unwrap_or(1);
        let a = Args { p, i0, codes: codes.as_ptr(), s, b };
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
            assert!(has_vnni(), "int8 qmv: no AVX-512 VNNI");
            // SAFETY: `rows_vnni` is compiled for AVX-512 F/BW/VL/VNNI + AVX2
            // + FMA + F16C, which `has_vnni` just confirmed. Its reads (see `Args`):
            // rows `i0..i0 + r` of `p` (`i0 + r <= m`), the row's
            // `k * bits / 8` code bytes and `ng` scales and biases (lengths
            // asserted by `Prepared::row`); it writes `o` (`r` long).
            unsafe { call!(rows_vnni) }
        } else {
            assert!(has_avx2(), "int8 qmv: no AVX2");
            // SAFETY: as above, for `rows_avx2` (AVX2 + FMA + F16C,
            // confirmed by `has_avx2`).
            unsafe { call!(rows_avx2) }
        }
        i0 += r;
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

/// The lane sums of one 8-bit block with `x` codes `xq` (AVX2): `lo + 16 * hi`.
#[target_feature(enable = "avx2")]
fn dot8_avx2(w: __m256i, xq: __m256i) -> __m256i {
    let mask = _mm256_set1_epi8(0x0f);
    let (lo, hi) = (_mm256_and_si256(w, mask), _mm256_and_si256(_mm256_srli_epi16::<4>(w), mask));
    let lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xq), _mm256_set1_epi16(1));
    let hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xq), _mm256_set1_epi16(16));
    _mm256_add_epi32(lo, hi)
}

/// One block's codes (AVX2): 4-bit as `[low nibbles, high nibbles]` of its
/// 16 bytes (the order of the prepared `q`), 8-bit as its 32 bytes.
///
/// # Safety
/// The CPU has AVX2; block `blk` lies inside the row's codes.
#[target_feature(enable = "avx2")]
unsafe fn block_codes<const B: u32>(codes: *const u8, blk: usize) -> __m256i {
    // SAFETY: the caller's contract: bytes `blk * B * 4 .. (blk + 1) * B * 4`.
    unsafe {
        if B == 4 {
            let v = _mm_loadu_si128(codes.add(blk * 16).cast());
            _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16::<4>(v), v), _mm256_set1_epi8(0x0f))
        } else {
            _mm256_loadu_si256(codes.add(blk * 32).cast())
        }
    }
}

/// The scheme over rows `i0..i0 + M` with AVX2: per block, the codes once,
/// then per row one integer dot and one float `fma` into the accumulator of
/// the block's parity.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `a` is as [`Args`] says; `out` is `M` long.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows_avx2<const B: u32, const M: usize, const H: bool>(a: &Args, out: &mut [f32]) {
    let p = a.p;
    let (k, nb) = (p.k, p.nb);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; M];
    macro_rules! step {
        ($blk:expr, $par:expr) => {{
            let blk = $blk;
            // SAFETY: block `blk < nb` of the row's codes (`block_codes`);
            // `q` rows `i0 + i < m`, bytes `blk * 32 .. + 32 <= k`; `d8`
            // rows `i0 + i`, floats `blk * 8 .. + 8 <= nb * 8`; scale
            // `blk >> shift < ng`.
            unsafe {
                let w = block_codes::<B>(a.codes, blk);
                let sv = _mm256_set1_ps(load::<H>(a.s, blk >> p.shift));
                for (i, acc) in acc.iter_mut().enumerate() {
                    let row = a.i0 + i;
                    let xq = _mm256_loadu_si256(p.q.as_ptr().add(row * k + blk * BLOCK).cast());
                    let dot = if B == 4 { _mm256_madd_epi16(_mm256_maddubs_epi16(w, xq), ones) } else { dot8_avx2(w, xq) };
                    let c = _mm256_mul_ps(sv, _mm256_loadu_ps(p.d8.as_ptr().add((row * nb + blk) * LANES)));
                    acc[$par] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), c, acc[$par]);
                }
            }
        }};
    }
    for blk in (0..nb / 2 * 2).step_by(2) {
        step!(blk, 0);
        step!(blk + 1, 1);
    }
    if nb % 2 == 1 {
        step!(nb - 1, 0);
    }
    for (i, (o, acc)) in out.iter_mut().zip(acc).enumerate() {
        // SAFETY: row `a.i0 + i < m`; the caller's contract for `a.b`.
        *o = hsum(_mm256_add_ps(acc[0], acc[1])) + unsafe { bias_sum::<H>(a, a.i0 + i) };
    }
}

/// The scheme over rows `i0..i0 + M` with AVX-512 VNNI: two blocks per
/// 512-bit register (lanes 0-7 the even block, 8-15 the odd one, the
/// scheme's `A`), one `vpdpbusd` per row and pair; an odd last block runs
/// 256 bits wide into the low half.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/VNNI, AVX2, FMA and F16C; `a` is as
/// [`Args`] says; `out` is `M` long.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
unsafe fn rows_vnni<const B: u32, const M: usize, const H: bool>(a: &Args, out: &mut [f32]) {
    let p = a.p;
    let (k, nb) = (p.k, p.nb);
    let mut acc = [_mm512_setzero_ps(); M];
    for blk in (0..nb / 2 * 2).step_by(2) {
        // SAFETY: blocks `blk, blk + 1 < nb` of the row's codes
        // (`blk * B * 4 .. + 2 * B * 4` bytes); `q` rows `i0 + i < m`,
        // bytes `blk * 32 .. + 64 <= k`; `d8` floats `blk * 8 .. + 16 <=
        // nb * 8` of those rows; scales `< ng`.
        unsafe {
            let w = if B == 4 {
                // [b lo, b+1 lo, b hi, b+1 hi] -> [b lo, b hi, b+1 lo, b+1 hi].
                let v = _mm256_loadu_si256(a.codes.add(blk * 16).cast());
                let z = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(v), _mm256_srli_epi16::<4>(v));
                let z = _mm512_and_si512(z, _mm512_set1_epi8(0x0f));
                _mm512_shuffle_i64x2::<0b11_01_10_00>(z, z)
            } else {
                _mm512_loadu_si512(a.codes.add(blk * 32).cast())
            };
            let (s0, s1) = (load::<H>(a.s, blk >> p.shift), load::<H>(a.s, (blk + 1) >> p.shift));
            let sv = _mm512_castpd_ps(_mm512_insertf64x4::<1>(
                _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_set1_ps(s0))),
                _mm256_castps_pd(_mm256_set1_ps(s1)),
            ));
            for (i, acc) in acc.iter_mut().enumerate() {
                let row = a.i0 + i;
                let xq = _mm512_loadu_si512(p.q.as_ptr().add(row * k + blk * BLOCK).cast());
                let dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, xq);
                let c = _mm512_mul_ps(sv, _mm512_loadu_ps(p.d8.as_ptr().add((row * nb + blk) * LANES)));
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), c, *acc);
            }
        }
    }
    if nb % 2 == 1 {
        let blk = nb - 1;
        // SAFETY: as in the loop, for the one block `blk` (32 `q` bytes and
        // 8 `d8` floats per row).
        unsafe {
            let w = block_codes::<B>(a.codes, blk);
            let sv = _mm256_set1_ps(load::<H>(a.s, blk >> p.shift));
            for (i, acc) in acc.iter_mut().enumerate() {
                let row = a.i0 + i;
                let xq = _mm256_loadu_si256(p.q.as_ptr().add(row * k + blk * BLOCK).cast());
                let dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, xq);
                let c = _mm256_mul_ps(sv, _mm256_loadu_ps(p.d8.as_ptr().add((row * nb + blk) * LANES)));
                let (dot, c) = (_mm512_zextps256_ps512(_mm256_cvtepi32_ps(dot)), _mm512_zextps256_ps512(c));
                // Lanes 0-7 (an even block) only; 8-15 keep `acc`.
                *acc = _mm512_mask3_fmadd_ps(dot, c, *acc, 0x00ff);
            }
        }
    }
    for (i, (o, acc)) in out.iter_mut().zip(acc).enumerate() {
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc)));
        // SAFETY: row `a.i0 + i < m`; the caller's contract for `a.b`.
        *o = hsum(_mm256_add_ps(_mm512_castps512_ps256(acc), hi)) + unsafe { bias_sum::<H>(a, a.i0 + i) };
    }
}
