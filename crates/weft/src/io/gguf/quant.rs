//! GGML tensor element types, and dequantization of the block formats weft
//! reads (`Q4_0`, `Q4_1`, `Q8_0`, the K-quants `Q4_K`, `Q5_K`, `Q6_K`) and of
//! plain floats (`F32`, `F16`, `BF16`).
//!
//! A quantized tensor is a run of blocks along its innermost axis. The
//! 32-element blocks start with their scale `d` (a little-endian `f16`), then:
//! - `Q4_0` (18 bytes): 16 bytes of 4-bit codes `q`; `x = (q - 8) * d`;
//! - `Q4_1` (20 bytes): the minimum `m` (`f16`), 16 bytes of codes; `x = q * d + m`;
//! - `Q8_0` (34 bytes): 32 signed bytes `q`; `x = q * d`.
//!
//! In the 4-bit formats byte `j` holds element `j` in its low nibble and
//! element `j + 16` in its high nibble.
//!
//! The K-quants are *super-blocks* of 256 elements:
//! - `Q4_K` (144 bytes): `d`, `dmin` (`f16`), 12 bytes packing eight 6-bit
//!   scales `sc` and eight 6-bit mins `mn` (one per 32 elements, [`scale_min`]),
//!   128 bytes of 4-bit codes; `x = d sc q - dmin mn`. Each 64 elements read 32
//!   code bytes: the first 32 elements their low nibbles, the next 32 their high.
//! - `Q5_K` (176 bytes): as `Q4_K` with a fifth bit per code from 32 bytes
//!   `qh` (after the scales, before the 128 code bytes): element `l` of the
//!   `i`-th 32 takes bit `i` of `qh[l]` as 16.
//! - `Q6_K` (210 bytes): 128 bytes `ql` (low 4 bits), 64 bytes `qh` (high 2
//!   bits), 16 signed 8-bit scales (one per 16 elements), then `d`;
//!   `x = d sc (q - 32)`. Each half of 128 elements reads 64 bytes of `ql` and 32
//!   of `qh`: element `l + 32 k` (`l < 32`, `k < 4`) takes the low (`k < 2`)
//!   or high nibble of `ql[l + 32 (k % 2)]` and bits `2k, 2k + 1` of `qh[l]`.

use half::{bf16, f16};
use rayon::prelude::*;

/// A GGML tensor type, as numbered in GGUF files (named as ggml names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q8_0,
    Q4_K,
    Q5_K,
    Q6_K,
    BF16,
    /// A type weft cannot dequantize (other K-quants, i-quants, integers, ...):
    /// its number, and its block geometry where known so that the file's
    /// layout can still be checked.
    Other(u32),
}

impl GgmlType {
    pub fn from_u32(v: u32) -> GgmlType {
        match v {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            8 => GgmlType::Q8_0,
            12 => GgmlType::Q4_K,
            13 => GgmlType::Q5_K,
            14 => GgmlType::Q6_K,
            30 => GgmlType::BF16,
            v => GgmlType::Other(v),
        }
    }

    pub fn to_u32(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4_K => 12,
            GgmlType::Q5_K => 13,
            GgmlType::Q6_K => 14,
            GgmlType::BF16 => 30,
            GgmlType::Other(v) => v,
        }
    }

    /// ggml's name for the type.
    pub fn name(self) -> String {
        let known = match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q4_K => "Q4_K",
            GgmlType::Q5_K => "Q5_K",
            GgmlType::Q6_K => "Q6_K",
            GgmlType::BF16 => "BF16",
            GgmlType::Other(v) => {
                let name = match v {
                    6 => "Q5_0",
                    7 => "Q5_1",
                    9 => "Q8_1",
                    10 => "Q2_K",
                    11 => "Q3_K",
                    15 => "Q8_K",
                    24 => "I8",
                    25 => "I16",
                    26 => "I32",
                    27 => "I64",
                    28 => "F64",
                    _ => return format!("type {v}"),
                };
                return name.to_string();
            }
        };
        known.to_string()
    }

    /// (elements per block, bytes per block), for the types whose layout
    /// weft knows; `None` for the rest.
    pub fn block(self) -> Option<(usize, usize)> {
        Some(match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 | GgmlType::BF16 => (1, 2),
            GgmlType::Q4_0 => (32, 18),
            GgmlType::Q4_1 => (32, 20),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q4_K => (256, 144),
            GgmlType::Q5_K => (256, 176),
            GgmlType::Q6_K => (256, 210),
            GgmlType::Other(v) => match v {
                6 => (32, 22),
                7 => (32, 24),
                9 => (32, 36),
                10 => (256, 84),
                11 => (256, 110),
                15 => (256, 292),
                24 => (1, 1),
                25 => (1, 2),
                26 => (1, 4),
                27 | 28 => (1, 8),
                _ => return None,
            },
        })
    }

    /// Whether [`dequantize`] reads this type.
    pub fn is_supported(self) -> bool {
        !matches!(self, GgmlType::Other(_))
    }
}

fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Blocks handed to one rayon task at a time.
const BLOCKS_PER_TASK: usize = 1024;

/// Decodes `bytes` (whole blocks of `ty`) into `out`, which has room for
/// exactly the elements they hold. The caller checks both lengths.
pub(crate) fn dequantize(ty: GgmlType, bytes: &[u8], out: &mut [f32]) {
    let (block, block_bytes) = ty.block().expect("dequantize: a supported type");
    debug_assert_eq!(bytes.len() / block_bytes * block, out.len());
    let per_task = block * BLOCKS_PER_TASK;
    // On weft's pool: a load from a user thread must not start rayon's.
    crate::scheduler::in_pool(|| {
        out.par_chunks_mut(per_task)
            .zip(bytes.par_chunks(block_bytes * BLOCKS_PER_TASK))
            .for_each(|(out, bytes)| dequantize_run(ty, bytes, out))
    });
}

fn dequantize_run(ty: GgmlType, bytes: &[u8], out: &mut [f32]) {
    match ty {
        GgmlType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        GgmlType::BF16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        GgmlType::Q4_0 => {
            for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(18)) {
                let d = f16_at(b, 0);
                let qs = &b[2..18];
                for j in 0..16 {
                    o[j] = ((qs[j] & 0x0f) as i32 - 8) as f32 * d;
                    o[j + 16] = ((qs[j] >> 4) as i32 - 8) as f32 * d;
                }
            }
        }
        GgmlType::Q4_1 => {
            for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(20)) {
                let d = f16_at(b, 0);
                let m = f16_at(b, 2);
                let qs = &b[4..20];
                for j in 0..16 {
                    o[j] = (qs[j] & 0x0f) as f32 * d + m;
                    o[j + 16] = (qs[j] >> 4) as f32 * d + m;
                }
            }
        }
        GgmlType::Q8_0 => {
            for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(34)) {
                let d = f16_at(b, 0);
                for j in 0..32 {
                    o[j] = (b[2 + j] as i8) as f32 * d;
                }
            }
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let (_, block_bytes) = ty.block().expect("a K-quant");
            for (o, b) in out.chunks_exact_mut(256).zip(bytes.chunks_exact(block_bytes)) {
                let k = KBlock::new(ty, b);
                for (i, o) in o.chunks_exact_mut(32).enumerate() {
                    let (scale, min) = k.group(i);
                    for (l, o) in o.iter_mut().enumerate() {
                        *o = scale * k.code(i, l) as f32 - min;
                    }
                }
            }
        }
        GgmlType::Q6_K => {
            let (_, block_bytes) = ty.block().expect("a K-quant");
            for (o, b) in out.chunks_exact_mut(256).zip(bytes.chunks_exact(block_bytes)) {
                let d = f16_at(b, 208);
                for (half, o) in o.chunks_exact_mut(128).enumerate() {
                    let ql = &b[half * 64..half * 64 + 64];
                    let qh = &b[128 + half * 32..128 + half * 32 + 32];
                    let sc = &b[192 + half * 8..192 + half * 8 + 8];
                    for (k, o) in o.chunks_exact_mut(32).enumerate() {
                        for (l, o) in o.iter_mut().enumerate() {
                            let low = ql[l + 32 * (k % 2)];
                            let low = if k < 2 { low & 0x0f } else { low >> 4 };
                            let q = (low | (((qh[l] >> (2 * k)) & 3) << 4)) as i32 - 32;
                            *o = d * (sc[2 * k + l / 16] as i8) as f32 * q as f32;
                        }
                    }
                }
            }
        }
        GgmlType::Other(_) => unreachable!("dequantize_run: checked by the caller"),
    }
}

/// Encodes `x` (whole blocks: a multiple of the type's block size) as
/// blocks of `ty`: `Q8_0`, `Q4_K` or `Q6_K` (with `Q4_K`, the pair
/// llama.cpp's `Q4_K_M` files use). A plain round-to-nearest encoder: per
/// group the scale that spans its values (`Q4_K`: its range, with the min as
/// an offset; `Q6_K` and `Q8_0`: its largest magnitude), the 6- or 8-bit
/// scales of a super-block relative to their largest; not llama.cpp's
/// error-minimizing search, so its files are a little less accurate than
/// llama.cpp's, but every decoder reads them the same. For writing test and
/// benchmark models (`save_gguf_blocks`). Errors on other types, a length
/// that is not whole blocks, or a value that is not finite.
pub fn quantize_blocks(ty: GgmlType, x: &[f32]) -> crate::Result<Vec<u8>> {
    let (block, block_bytes) = match ty {
        GgmlType::Q8_0 | GgmlType::Q4_K | GgmlType::Q6_K => ty.block().expect("a block format"),
        _ => return Err(crate::Error::Dtype(format!("quantize_blocks: weft encodes Q8_0, Q4_K and Q6_K, not {}", ty.name()))),
    };
    if x.len() % block != 0 {
        return Err(crate::Error::Shape(format!("quantize_blocks: {} values are not whole blocks of {block}", x.len())));
    }
    if let Some(bad) = x.iter().find(|v| !v.is_finite()) {
        return Err(crate::Error::InvalidArgument(format!("quantize_blocks: the values hold {bad}")));
    }
    let mut out = vec![0u8; x.len() / block * block_bytes];
    crate::scheduler::in_pool(|| {
        out.par_chunks_mut(block_bytes).zip(x.par_chunks(block)).for_each(|(b, x)| match ty {
            GgmlType::Q8_0 => encode_q8_0(x, b),
            GgmlType::Q4_K => encode_q4_k(x, b),
            _ => encode_q6_k(x, b),
        })
    });
    Ok(out)
}

/// `v / d` rounded and clamped to `lo..=hi` (0 when `d` is 0).
fn code(v: f32, d: f32, lo: i32, hi: i32) -> i32 {
    if d == 0.0 {
        return 0.clamp(lo, hi);
    }
    ((v / d).round() as i32).clamp(lo, hi)
}

fn encode_q8_0(x: &[f32], b: &mut [u8]) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = f16::from_f32(amax / 127.0);
    b[0..2].copy_from_slice(&d.to_le_bytes());
    for (o, &v) in b[2..34].iter_mut().zip(x) {
        *o = code(v, d.to_f32(), -127, 127) as i8 as u8;
    }
}

fn encode_q4_k(x: &[f32], b: &mut [u8]) {
    // Per 32: x ~ scale * q - min, q in 0..16, with min >= 0 (the range includes 0).
    let mut scale = [0f32; 8];
    let mut min = [0f32; 8];
    for (j, g) in x.chunks_exact(32).enumerate() {
        let lo = g.iter().fold(0f32, |m, &v| m.min(v));
        let hi = g.iter().fold(f32::MIN, |m, &v| m.max(v));
        scale[j] = (hi - lo) / 15.0;
        min[j] = -lo;
    }
    let d = f16::from_f32(scale.iter().fold(0f32, |m, &v| m.max(v)) / 63.0);
    let dmin = f16::from_f32(min.iter().fold(0f32, |m, &v| m.max(v)) / 63.0);
    let sc: [u8; 8] = std::array::from_fn(|j| code(scale[j], d.to_f32(), 0, 63) as u8);
    let mn: [u8; 8] = std::array::from_fn(|j| code(min[j], dmin.to_f32(), 0, 63) as u8);
    b[0..2].copy_from_slice(&d.to_le_bytes());
    b[2..4].copy_from_slice(&dmin.to_le_bytes());
    // The packing `scale_min` reads.
    let s = &mut b[4..16];
    for j in 0..4 {
        s[j] = sc[j] | ((sc[j + 4] >> 4) << 6);
        s[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6);
        s[j + 8] = (sc[j + 4] & 0x0f) | ((mn[j + 4] & 0x0f) << 4);
    }
    for j in 0..8 {
        let (step, off) = (d.to_f32() * sc[j] as f32, dmin.to_f32() * mn[j] as f32);
        for l in 0..32 {
            let q = code(x[32 * j + l] + off, step, 0, 15) as u8;
            let at = 16 + (j / 2) * 32 + l;
            b[at] |= if j % 2 == 0 { q } else { q << 4 };
        }
    }
}

fn encode_q6_k(x: &[f32], b: &mut [u8]) {
    // Per 16: x ~ d * sc * (q - 32), q in 0..64, sc a signed byte.
    let scale: [f32; 16] = std::array::from_fn(|j| x[16 * j..16 * j + 16].iter().fold(0f32, |m, v| m.max(v.abs())) / 31.0);
    let d = f16::from_f32(scale.iter().fold(0f32, |m, &v| m.max(v)) / 127.0);
    let sc: [i8; 16] = std::array::from_fn(|j| code(scale[j], d.to_f32(), 0, 127) as i8);
    b[208..210].copy_from_slice(&d.to_le_bytes());
    for (j, &s) in sc.iter().enumerate() {
        b[192 + j] = s as u8;
    }
    for (e, &v) in x.iter().enumerate() {
        let q = (code(v, d.to_f32() * sc[e / 16] as f32, -32, 31) + 32) as u8;
        // Element `half * 128 + l + 32 k` (the layout `dequantize_run` reads).
        let (half, r) = (e / 128, e % 128);
        let (k, l) = (r / 32, r % 32);
        let ql = half * 64 + l + 32 * (k % 2);
        b[ql] |= if k < 2 { q & 0x0f } else { (q & 0x0f) << 4 };
        b[128 + half * 32 + l] |= (q >> 4) << (2 * k);
    }
}

/// Sub-block `j`'s (0..8) 6-bit scale and min in a `Q4_K`/`Q5_K` super-block's
/// 12 scale bytes: for `j < 4` the low 6 bits of bytes `j` (scale) and
/// `j + 4` (min); for `j >= 4` the nibbles of byte `j + 4` (low: scale, high:
/// min) topped with the two high bits of bytes `j - 4` (scale) and `j` (min).
fn scale_min(s: &[u8; 12], j: usize) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// One `Q4_K`/`Q5_K` super-block, read in place (the layout in the module
/// docs): what the decoder and the affine repacking both read.
struct KBlock<'a> {
    d: f32,
    dmin: f32,
    scales: &'a [u8; 12],
    /// `Q5_K`'s fifth bits (32 bytes); empty for `Q4_K`.
    qh: &'a [u8],
    /// The 128 bytes of 4-bit codes.
    qs: &'a [u8],
}

impl<'a> KBlock<'a> {
    /// `b` is one whole super-block of `ty` (`Q4_K` or `Q5_K`).
    fn new(ty: GgmlType, b: &'a [u8]) -> KBlock<'a> {
        let (qh, qs) = if ty == GgmlType::Q5_K { (&b[16..48], &b[48..176]) } else { (&b[0..0], &b[16..144]) };
        KBlock { d: f16_at(b, 0), dmin: f16_at(b, 2), scales: b[4..16].try_into().expect("12 bytes"), qh, qs }
    }

    /// Group `i`'s (0..8) step `d sc` and offset `dmin mn`: `x = step q - offset`.
    fn group(&self, i: usize) -> (f32, f32) {
        let (sc, mn) = scale_min(self.scales, i);
        (self.d * sc as f32, self.dmin * mn as f32)
    }

    /// The code of element `l` (0..32) of group `i`.
    fn code(&self, i: usize, l: usize) -> u8 {
        let byte = self.qs[(i / 2) * 32 + l];
        let low = if i % 2 == 0 { byte & 0x0f } else { byte >> 4 };
        if self.qh.is_empty() { low } else { low | (((self.qh[l] >> i) & 1) << 4) }
    }
}

/// A block-quantized tensor repacked, losslessly, into MLX's affine layout
/// (`ops::quantized`): per row, `cols * bits / 32` code words, and one
/// scale and one bias per group of 32: float16 (`S = f16`, as the 32-element
/// formats store them) or float32 (the K-quants' products `d sc`).
pub(crate) struct Affine<S> {
    pub codes: Vec<u32>,
    pub scales: Vec<S>,
    pub biases: Vec<S>,
    pub bits: u32,
}

/// Repacks `bytes` (whole super-blocks of `Q4_K` or `Q5_K`) into affine codes
/// with group size 32 and float32 scales: each 32 elements of a super-block
/// are `(d sc) q + (-(dmin mn))`, so scale `d sc` and bias `-(dmin mn)`,
/// computed in float32 as the decoder does; `Q4_K` keeps 4-bit codes,
/// `Q5_K`'s 5-bit codes go into 8-bit ones. `None` for other types, or when
/// a scale or bias is not finite.
pub(crate) fn k_to_affine(ty: GgmlType, bytes: &[u8]) -> Option<Affine<f32>> {
    let bits = match ty {
        GgmlType::Q4_K => 4u32,
        GgmlType::Q5_K => 8u32,
        _ => return None,
    };
    let (_, block_bytes) = ty.block().expect("a K-quant");
    let blocks = bytes.len() / block_bytes;
    let words = 8 * bits as usize; // per super-block: 8 groups of 32 codes of `bits` bits
    let mut codes = vec![0u32; blocks * words];
    let mut scales = vec![0f32; blocks * 8];
    let mut biases = vec![0f32; blocks * 8];
    let per_task = BLOCKS_PER_TASK / 8;
    let ok = crate::scheduler::in_pool(|| {
        codes
            .par_chunks_mut(words * per_task)
            .zip(scales.par_chunks_mut(8 * per_task))
            .zip(biases.par_chunks_mut(8 * per_task))
            .zip(bytes.par_chunks(block_bytes * per_task))
            .all(|(((codes, scales), biases), bytes)| {
                for (((c, s), m), b) in codes
                    .chunks_exact_mut(words)
                    .zip(scales.chunks_exact_mut(8))
                    .zip(biases.chunks_exact_mut(8))
                    .zip(bytes.chunks_exact(block_bytes))
                {
                    let k = KBlock::new(ty, b);
                    for i in 0..8 {
                        let (step, offset) = k.group(i);
                        (s[i], m[i]) = (step, -offset);
                        if !s[i].is_finite() || !m[i].is_finite() {
                            return false;
                        }
                        // Element l of the group sits at bits `bits * l` of the group's stream.
                        let group = &mut c[i * bits as usize..(i + 1) * bits as usize];
                        let per_word = 32 / bits as usize;
                        for (wi, w) in group.iter_mut().enumerate() {
                            *w = (0..per_word).fold(0u32, |v, e| v | (k.code(i, wi * per_word + e) as u32) << (bits as usize * e));
                        }
                    }
                }
                true
            })
    });
    ok.then_some(Affine { codes, scales, biases, bits })
}

/// Repacks `bytes` (whole blocks of `ty`: `Q4_0`, `Q4_1` or `Q8_0`) into
/// affine codes with group size 32. Each format is affine in its code:
/// - `Q4_0`: `(q - 8) * d` is `d * q + (-8 d)`: scale `d`, bias `-8 d`;
/// - `Q4_1`: `q * d + m`: scale `d`, bias `m`;
/// - `Q8_0`: signed `q * d` is `d * (q + 128) + (-128 d)`: the code is `q`'s
///   byte with its sign bit flipped, scale `d`, bias `-128 d`.
///
/// The biases `-8 d` and `-128 d` are exact in float16 (a power-of-two
/// multiple) unless they overflow it, which a file's scales (`|d| < 256`
/// for any weight under 32768 in magnitude) do not reach; `None` for any
/// other type or if one would overflow.
pub(crate) fn to_affine(ty: GgmlType, bytes: &[u8]) -> Option<Affine<f16>> {
    let (bits, block_bytes) = match ty {
        GgmlType::Q4_0 => (4, 18),
        GgmlType::Q4_1 => (4, 20),
        GgmlType::Q8_0 => (8, 34),
        _ => return None,
    };
    let blocks = bytes.len() / block_bytes;
    let words = bits as usize; // per block: 32 codes of `bits` bits
    let mut codes = vec![0u32; blocks * words];
    let mut scales = vec![f16::ZERO; blocks];
    let mut biases = vec![f16::ZERO; blocks];
    let f16_of = |b: &[u8], i: usize| f16::from_le_bytes([b[i], b[i + 1]]);
    let per_task = BLOCKS_PER_TASK;
    let ok = crate::scheduler::in_pool(|| {
        codes
            .par_chunks_mut(words * per_task)
            .zip(scales.par_chunks_mut(per_task))
            .zip(biases.par_chunks_mut(per_task))
            .zip(bytes.par_chunks(block_bytes * per_task))
            .all(|(((codes, scales), biases), bytes)| {
                for (((c, s), m), b) in
                    codes.chunks_exact_mut(words).zip(scales.iter_mut()).zip(biases.iter_mut()).zip(bytes.chunks_exact(block_bytes))
                {
                    let d = f16_of(b, 0);
                    *s = d;
                    match ty {
                        GgmlType::Q8_0 => {
                            *m = f16::from_f32(-128.0 * d.to_f32());
                            for (w, q) in c.iter_mut().zip(b[2..34].chunks_exact(4)) {
                                *w = u32::from_le_bytes([q[0] ^ 0x80, q[1] ^ 0x80, q[2] ^ 0x80, q[3] ^ 0x80]);
                            }
                        }
                        _ => {
                            let qs = if ty == GgmlType::Q4_1 {
                                *m = f16_of(b, 2);
                                &b[4..20]
                            } else {
                                *m = f16::from_f32(-8.0 * d.to_f32());
                                &b[2..18]
                            };
                            // Element j is byte j's low nibble (j < 16) or
                            // byte j - 16's high nibble; in the affine stream
                            // element j sits at bits 4j.
                            for (i, w) in c.iter_mut().enumerate() {
                                let mut v = 0u32;
                                for e in 0..8 {
                                    let j = i * 8 + e;
                                    let q = if j < 16 { qs[j] & 0x0f } else { qs[j - 16] >> 4 };
                                    v |= (q as u32) << (4 * e);
                                }
                                *w = v;
                            }
                        }
                    }
                    if !m.is_finite() && d.is_finite() {
                        return false;
                    }
                }
                true
            })
    });
    ok.then_some(Affine { codes, scales, biases, bits })
}

#[cfg(test)]
mod tests {
    //! Each format against a float64 decoder written here from the format's
    //! description (bit fields pulled out one element at a time), on random
    //! blocks.
    use super::*;
    use proptest::prelude::*;

    /// The 4-bit code of element `i` (0..32) of a block whose codes start at `qs`.
    fn nibble(qs: &[u8], i: usize) -> u8 {
        let byte = qs[i % 16];
        if i < 16 {
            byte % 16
        } else {
            byte / 16
        }
    }

    fn half(b: &[u8], at: usize) -> f64 {
        f16::from_bits(u16::from(b[at]) | (u16::from(b[at + 1]) << 8)).to_f64()
    }

    fn reference(ty: GgmlType, block: &[u8]) -> Vec<f64> {
        match ty {
            GgmlType::Q4_0 => (0..32).map(|i| (f64::from(nibble(&block[2..], i)) - 8.0) * half(block, 0)).collect(),
            GgmlType::Q4_1 => {
                (0..32).map(|i| f64::from(nibble(&block[4..], i)) * half(block, 0) + half(block, 2)).collect()
            }
            GgmlType::Q8_0 => (0..32)
                .map(|i| {
                    let q = block[2 + i];
                    let q = if q >= 128 { f64::from(q) - 256.0 } else { f64::from(q) };
                    q * half(block, 0)
                })
                .collect(),
            _ => unreachable!(),
        }
    }

    /// Random blocks whose scales are finite f16 values.
    fn blocks(ty: GgmlType, n: usize) -> impl Strategy<Value = Vec<u8>> {
        let (_, bytes) = ty.block().unwrap();
        prop::collection::vec(
            (prop::collection::vec(any::<u8>(), bytes), -8.0f32..8.0, -4.0f32..4.0).prop_map(move |(mut b, d, m)| {
                b[0..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
                if ty == GgmlType::Q4_1 {
                    b[2..4].copy_from_slice(&f16::from_f32(m).to_le_bytes());
                }
                b
            }),
            1..n,
        )
        .prop_map(|v| v.concat())
    }

    fn check(ty: GgmlType, bytes: &[u8]) {
        let (block, block_bytes) = ty.block().unwrap();
        let mut out = vec![f32::NAN; bytes.len() / block_bytes * block];
        dequantize(ty, bytes, &mut out);
        for (i, b) in bytes.chunks_exact(block_bytes).enumerate() {
            for (j, want) in reference(ty, b).into_iter().enumerate() {
                let got = f64::from(out[i * block + j]);
                assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{ty:?} block {i} element {j}: {got} vs {want}");
            }
        }
    }

    /// The affine repacking, decoded element by element from its bit
    /// stream (`scale * code + bias` in float64), equals the reference
    /// decoding of the original blocks exactly.
    fn check_affine(ty: GgmlType, bytes: &[u8]) {
        let (_, block_bytes) = ty.block().unwrap();
        let a = to_affine(ty, bytes).expect("a block type with finite scales");
        let words = a.bits as usize; // 32 elements * bits / 32
        for (i, b) in bytes.chunks_exact(block_bytes).enumerate() {
            let (s, m) = (a.scales[i].to_f64(), a.biases[i].to_f64());
            for (j, want) in reference(ty, b).into_iter().enumerate() {
                let bit = j * a.bits as usize;
                let code = (a.codes[i * words + bit / 32] >> (bit % 32)) & ((1u32 << a.bits) - 1);
                let got = s * f64::from(code) + m;
                assert_eq!(got, want, "{ty:?} block {i} element {j}");
            }
        }
    }

    proptest! {
        #[test]
        fn q4_0_matches_reference(bytes in blocks(GgmlType::Q4_0, 40)) { check(GgmlType::Q4_0, &bytes) }
        #[test]
        fn q4_1_matches_reference(bytes in blocks(GgmlType::Q4_1, 40)) { check(GgmlType::Q4_1, &bytes) }
        #[test]
        fn q8_0_matches_reference(bytes in blocks(GgmlType::Q8_0, 40)) { check(GgmlType::Q8_0, &bytes) }
        #[test]
        fn q4_0_repacks_exactly(bytes in blocks(GgmlType::Q4_0, 40)) { check_affine(GgmlType::Q4_0, &bytes) }
        #[test]
        fn q4_1_repacks_exactly(bytes in blocks(GgmlType::Q4_1, 40)) { check_affine(GgmlType::Q4_1, &bytes) }
        #[test]
        fn q8_0_repacks_exactly(bytes in blocks(GgmlType::Q8_0, BLOCKS_PER_TASK + 40)) { check_affine(GgmlType::Q8_0, &bytes) }
    }

    #[test]
    fn many_blocks_split_across_tasks() {
        // More blocks than one rayon task takes, with a ragged last task.
        let n = BLOCKS_PER_TASK * 2 + 7;
        let mut bytes = vec![0u8; n * 20];
        for (i, b) in bytes.chunks_exact_mut(20).enumerate() {
            b[0..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
            b[2..4].copy_from_slice(&f16::from_f32(i as f32).to_le_bytes());
            for (j, q) in b[4..].iter_mut().enumerate() {
                *q = (j as u8) | ((15 - j as u8) << 4);
            }
        }
        check(GgmlType::Q4_1, &bytes);
    }

    #[test]
    fn hand_made_blocks() {
        // Q4_0, d = 2: code 0 is -16, code 15 is 14.
        let mut b = vec![0u8; 18];
        b[0..2].copy_from_slice(&f16::from_f32(2.0).to_le_bytes());
        b[2] = 0xf0; // element 0 code 0, element 16 code 15
        let mut out = vec![0.0; 32];
        dequantize(GgmlType::Q4_0, &b, &mut out);
        assert_eq!((out[0], out[16], out[1]), (-16.0, 14.0, -16.0));
        // Q8_0, d = 0.5: byte 0xff is -1.
        let mut b = vec![0u8; 34];
        b[0..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        b[2] = 0xff;
        b[33] = 100;
        dequantize(GgmlType::Q8_0, &b, &mut out);
        assert_eq!((out[0], out[31], out[5]), (-0.5, 50.0, 0.0));
    }

    #[test]
    fn plain_floats() {
        let vals = [1.5f32, -2.25, 1e-3, 65504.0];
        let mut out = vec![0.0; 4];
        let f32s: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        dequantize(GgmlType::F32, &f32s, &mut out);
        assert_eq!(out, vals);
        let f16s: Vec<u8> = vals.iter().flat_map(|&v| f16::from_f32(v).to_le_bytes()).collect();
        dequantize(GgmlType::F16, &f16s, &mut out);
        assert_eq!(out, vals.map(|v| f16::from_f32(v).to_f32()));
        let bf16s: Vec<u8> = vals.iter().flat_map(|&v| bf16::from_f32(v).to_le_bytes()).collect();
        dequantize(GgmlType::BF16, &bf16s, &mut out);
        assert_eq!(out, vals.map(|v| bf16::from_f32(v).to_f32()));
    }
}
