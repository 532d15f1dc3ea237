//! GGUF files written here byte by byte (from the format's description),
//! read back by `weft::io::gguf`; and corrupted every which way: the reader must
//! return an error or a valid result, never panic, hang or over-allocate.

use half::f16;
use proptest::prelude::*;
use weft::io::gguf::{GgmlType, Gguf, Value};
use weft::{Array, Dtype, Error};

/// Builds a GGUF file.
struct Writer {
    kv: Vec<u8>,
    n_kv: u64,
    tensors: Vec<(String, Vec<u64>, u32, Vec<u8>)>,
    alignment: u64,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

impl Writer {
    fn new() -> Writer {
        Writer { kv: vec![], n_kv: 0, tensors: vec![], alignment: 32 }
    }

    /// A key with a value already encoded (type number, bytes).
    fn raw(&mut self, key: &str, ty: u32, bytes: &[u8]) -> &mut Self {
        put_str(&mut self.kv, key);
        self.kv.extend(ty.to_le_bytes());
        self.kv.extend(bytes);
        self.n_kv += 1;
        self
    }

    fn u32(&mut self, key: &str, v: u32) -> &mut Self {
        self.raw(key, 4, &v.to_le_bytes())
    }

    fn string(&mut self, key: &str, v: &str) -> &mut Self {
        let mut b = vec![];
        put_str(&mut b, v);
        self.raw(key, 8, &b)
    }

    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, data: Vec<u8>) -> &mut Self {
        self.tensors.push((name.into(), dims.to_vec(), ty, data));
        self
    }

    fn finish(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend(self.n_kv.to_le_bytes());
        out.extend(&self.kv);
        let mut offset = 0u64;
        let mut offsets = vec![];
        for (name, dims, ty, data) in &self.tensors {
            put_str(&mut out, name);
            out.extend((dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(ty.to_le_bytes());
            out.extend(offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + data.len() as u64).div_ceil(self.alignment) * self.alignment;
        }
        let data_start = (out.len() as u64).div_ceil(self.alignment) * self.alignment;
        for ((_, _, _, data), off) in self.tensors.iter().zip(offsets) {
            out.resize((data_start + off) as usize, 0);
            out.extend(data);
        }
        out
    }
}

fn q8_0_block(d: f32, qs: [i8; 32]) -> Vec<u8> {
    let mut b = f16::from_f32(d).to_le_bytes().to_vec();
    b.extend(qs.iter().map(|&q| q as u8));
    b
}

/// A small file with every metadata type and three tensors.
fn sample() -> Vec<u8> {
    let mut w = Writer::new();
    w.raw("a.u8", 0, &[200])
        .raw("a.i8", 1, &[0xfe])
        .raw("a.u16", 2, &700u16.to_le_bytes())
        .raw("a.i16", 3, &(-700i16).to_le_bytes())
        .u32("a.u32", 70000)
        .raw("a.i32", 5, &(-70000i32).to_le_bytes())
        .raw("a.f32", 6, &1.5f32.to_le_bytes())
        .raw("a.bool", 7, &[1])
        .string("general.architecture", "llama")
        .raw("a.u64", 10, &(1u64 << 40).to_le_bytes())
        .raw("a.i64", 11, &(-(1i64 << 40)).to_le_bytes())
        .raw("a.f64", 12, &0.25f64.to_le_bytes());
    // An array of strings and an array of arrays of u32.
    let mut strs = 8u32.to_le_bytes().to_vec();
    strs.extend(3u64.to_le_bytes());
    for s in ["a", "", "héllo"] {
        put_str(&mut strs, s);
    }
    w.raw("a.strings", 9, &strs);
    let mut nested = 9u32.to_le_bytes().to_vec();
    nested.extend(2u64.to_le_bytes());
    for row in [[1u32, 2], [3, 4]] {
        nested.extend(4u32.to_le_bytes());
        nested.extend(2u64.to_le_bytes());
        for v in row {
            nested.extend(v.to_le_bytes());
        }
    }
    w.raw("a.nested", 9, &nested);
    let f32s: Vec<u8> = (0..6).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
    w.tensor("f32", &[3, 2], 0, f32s);
    let f16s: Vec<u8> = (0..4).flat_map(|i| f16::from_f32(-(i as f32)).to_le_bytes()).collect();
    w.tensor("f16", &[4], 1, f16s);
    let mut qs = [0i8; 32];
    for (i, q) in qs.iter_mut().enumerate() {
        *q = i as i8 - 16;
    }
    let mut q8 = q8_0_block(0.5, qs);
    q8.extend(q8_0_block(-2.0, qs));
    w.tensor("q8", &[32, 2], 8, q8);
    w.finish()
}

#[test]
fn written_file_reads_back() {
    let f = Gguf::parse(sample(), "sample").unwrap();
    assert_eq!(f.version(), 3);
    assert_eq!(f.get("a.u8"), Some(&Value::U8(200)));
    assert_eq!(f.get("a.i8"), Some(&Value::I8(-2)));
    assert_eq!(f.get("a.u16"), Some(&Value::U16(700)));
    assert_eq!(f.get("a.i16"), Some(&Value::I16(-700)));
    assert_eq!(f.get_u64("a.u32").unwrap(), 70000);
    assert_eq!(f.get("a.i32"), Some(&Value::I32(-70000)));
    assert_eq!(f.get_f64("a.f32").unwrap(), 1.5);
    assert_eq!(f.get("a.bool"), Some(&Value::Bool(true)));
    assert_eq!(f.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(f.get_u64("a.u64").unwrap(), 1 << 40);
    assert_eq!(f.get("a.i64"), Some(&Value::I64(-(1 << 40))));
    assert_eq!(f.get("a.f64"), Some(&Value::F64(0.25)));
    assert_eq!(f.get_str_array("a.strings").unwrap(), vec!["a", "", "héllo"]);
    let nested = f.get("a.nested").unwrap().as_array().unwrap();
    assert_eq!(nested[1], Value::Array(4, vec![Value::U32(3), Value::U32(4)]));
    let res = f.get_str("a.u32");
    assert!(matches!(res, Err(Error::Io(_))), "{res:?}");
    assert!(f.get("missing").is_none());
    assert_eq!(f.metadata().len(), 14);

    assert_eq!(f.tensors().len(), 3);
    let t = f.tensor("f32", Dtype::F32).unwrap();
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
    let t = f.tensor("f16", Dtype::F16).unwrap();
    assert_eq!(t.to_vec::<f16>().unwrap(), (0..4).map(|i| f16::from_f32(-(i as f32))).collect::<Vec<_>>());
    let info = f.tensor_info("q8").unwrap();
    assert_eq!((info.ty, info.dims.as_slice(), info.offset % 32), (GgmlType::Q8_0, &[32u64, 2][..], 0));
    let q = f.tensor("q8", Dtype::F32).unwrap();
    assert_eq!(q.shape(), &[2, 32]);
    let v = q.to_vec::<f32>().unwrap();
    for i in 0..32 {
        assert_eq!(v[i], (i as f32 - 16.0) * 0.5);
        assert_eq!(v[32 + i], (i as f32 - 16.0) * -2.0);
    }
    assert!(matches!(f.tensor("nope", Dtype::F32), Err(Error::Io(_))));
    assert!(matches!(f.tensor("f32", Dtype::I32), Err(Error::Dtype(_))));
}

#[test]
fn custom_alignment_and_unsupported_types() {
    let mut w = Writer::new();
    w.alignment = 64;
    w.u32("general.alignment", 64);
    w.tensor("a", &[2], 0, 1.0f32.to_le_bytes().into_iter().chain(2.0f32.to_le_bytes()).collect());
    w.tensor("k", &[256], 11, vec![0; 110]); // Q3_K: known layout, not dequantized
    let f = Gguf::parse(w.finish(), "aligned").unwrap();
    assert_eq!(f.alignment(), 64);
    assert_eq!(f.data_start() % 64, 0);
    assert_eq!(f.tensor_info("k").unwrap().offset, 64);
    assert_eq!(f.tensor("a", Dtype::F32).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    assert_eq!(f.tensor_bytes("k").unwrap().len(), 110);
    match f.tensor("k", Dtype::F32) {
        Err(Error::Dtype(m)) => assert!(m.contains("Q3_K"), "{m}"),
        r => panic!("expected a dtype error, got {r:?}"),
    }
}

fn header(version: u32, n_tensors: u64, n_kv: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(version.to_le_bytes());
    b.extend(n_tensors.to_le_bytes());
    b.extend(n_kv.to_le_bytes());
    b
}

fn expect_io(bytes: Vec<u8>, needle: &str) {
    match Gguf::parse(bytes, "bad") {
        Err(Error::Io(m)) => assert!(m.contains(needle), "{m:?} should mention {needle:?}"),
        r => panic!("expected an io error mentioning {needle:?}, got {r:?}"),
    }
}

#[test]
fn specific_corruptions_are_named() {
    expect_io(b"GGML".to_vec(), "magic");
    expect_io(header(1, 0, 0), "version 1");
    expect_io(header(7, 0, 0), "unknown version");
    expect_io(header(3u32.swap_bytes(), 0, 0), "big-endian");
    expect_io(header(3, u64::MAX, 0), "tensor count");
    expect_io(header(3, 0, 1 << 40), "metadata count");
    // A string claiming 2^60 bytes.
    let mut b = header(3, 0, 1);
    b.extend((1u64 << 60).to_le_bytes());
    b.extend([0; 16]);
    expect_io(b, "key length");
    // An array of 2^50 u64s.
    let mut b = header(3, 0, 1);
    put_str(&mut b, "k");
    b.extend(9u32.to_le_bytes());
    b.extend(10u32.to_le_bytes());
    b.extend((1u64 << 50).to_le_bytes());
    expect_io(b, "array length");
    // Arrays nested without end.
    let mut b = header(3, 0, 1);
    put_str(&mut b, "k");
    b.extend(9u32.to_le_bytes());
    for _ in 0..100 {
        b.extend(9u32.to_le_bytes());
        b.extend(1u64.to_le_bytes());
    }
    expect_io(b, "nested");
    // An unknown value type, a bad bool.
    let mut w = Writer::new();
    w.raw("k", 13, &[0; 8]);
    expect_io(w.finish(), "value type 13");
    let mut w = Writer::new();
    w.raw("k", 7, &[2]);
    expect_io(w.finish(), "bool");
    // Tensors: rank, dims overflow, data past the end, misaligned offset, block size.
    let mut w = Writer::new();
    w.tensor("t", &[1; 65], 0, vec![0; 4]);
    expect_io(w.finish(), "rank");
    let mut w = Writer::new();
    w.tensor("t", &[1 << 40, 1 << 40], 0, vec![0; 4]);
    expect_io(w.finish(), "absurd");
    let mut w = Writer::new();
    w.tensor("t", &[100], 0, vec![0; 4]);
    expect_io(w.finish(), "past the end");
    let mut w = Writer::new();
    w.tensor("t", &[48], 8, vec![0; 68]);
    expect_io(w.finish(), "block size");
    let mut w = Writer::new();
    w.u32("general.alignment", 3);
    expect_io(w.finish(), "alignment");
    let mut w = Writer::new();
    w.u32("k", 1).u32("k", 2);
    expect_io(w.finish(), "twice");
    let mut bad = sample();
    // Tensor "f32"'s offset field lies 8 bytes before the next tensor's name length.
    let name = bad.windows(3).position(|w| w == b"f16").unwrap();
    bad[name - 8 - 8] = 4; // offset 4: not aligned
    expect_io(bad, "not a multiple");
}

#[test]
fn every_truncation_is_an_error_or_valid() {
    let full = sample();
    for n in 0..full.len() {
        match Gguf::parse(full[..n].to_vec(), "cut") {
            Err(Error::Io(_)) => {}
            Err(e) => panic!("cut at {n}: unexpected error kind {e:?}"),
            // Only a cut inside the last tensor's padding could be valid; the
            // data ends the file, so every shorter file must fail.
            Ok(_) => panic!("cut at {n} of {} parsed", full.len()),
        }
    }
}

/// Parses and, when that works, dequantizes every tensor and reads every
/// block-quantized one kept quantized: an error or a result, never a panic;
/// and where both reads work they agree (see [`same_values`]).
fn parse_and_load(bytes: Vec<u8>) {
    if let Ok(f) = Gguf::parse(bytes, "fuzz") {
        for t in f.tensors().to_vec() {
            let dense = f.tensor(&t.name, Dtype::F32);
            if let Ok(a) = &dense {
                assert_eq!(a.size() as u64, t.numel());
            }
            if let (Ok(Some(q)), Ok(a)) = (f.quantized(&t.name), &dense) {
                same_values(&t.name, &q.dequantize(Dtype::F32).unwrap(), a);
            }
        }
    }
}

/// A quantized tensor kept as affine codes (`Gguf::quantized`) and the same
/// tensor dequantized directly (`Gguf::tensor`) hold the same values: the
/// repacking is exact (`d * q` and `d * (q + 128) - 128 * d` are exact in
/// float32 for a float16 `d`), so finite values are equal bit for bit, and
/// a non-finite scale gives non-finite values both ways.
fn same_values(name: &str, quantized: &Array, dense: &Array) {
    assert_eq!(quantized.shape(), dense.shape(), "{name}");
    let (q, d) = (quantized.to_vec::<f32>().unwrap(), dense.to_vec::<f32>().unwrap());
    for (i, (q, d)) in q.iter().zip(&d).enumerate() {
        assert!(q == d || (!q.is_finite() && !d.is_finite()), "{name}[{i}]: kept quantized {q}, dequantized {d}");
    }
}

#[test]
fn kept_quantized_equals_dequantized() {
    let f = Gguf::parse(sample(), "sample").unwrap();
    let q = f.quantized("q8").unwrap().expect("a Q8_0 matrix is kept quantized");
    same_values("q8", &q.dequantize(Dtype::F32).unwrap(), &f.tensor("q8", Dtype::F32).unwrap());
    assert!(f.quantized("f32").unwrap().is_none(), "a float tensor is not block quantized");
    assert!(f.quantized("missing").is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_byte_flips(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut b = sample();
        for (i, v) in flips {
            let i = i.index(b.len());
            b[i] = v;
        }
        parse_and_load(b);
    }

    #[test]
    fn absurd_u64s_anywhere(at in any::<prop::sample::Index>(), v in prop::sample::select(vec![u64::MAX, 1 << 63, 1 << 40, 1 << 32, 0])) {
        let mut b = sample();
        let i = at.index(b.len() - 8);
        b[i..i + 8].copy_from_slice(&v.to_le_bytes());
        parse_and_load(b);
    }

    #[test]
    fn random_bytes_after_a_header(n_tensors in 0u64..4, n_kv in 0u64..4, tail in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut b = header(3, n_tensors, n_kv);
        b.extend(tail);
        parse_and_load(b);
    }
}

/// The K-quants against gguf-py (llama.cpp's Python package): the fixture
/// holds random `Q4_K`, `Q5_K` and `Q6_K` tensors and gguf-py's decoding of
/// each (`scripts/make-kquant-fixture.py`). weft's decoder must give the same
/// floats; `Q4_K` and `Q5_K` repacked as affine codes must too, and their
/// quantized product must match the product with the decoded matrix.
#[test]
fn k_quants_decode_as_gguf_py_does() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/kquants.gguf");
    let f = Gguf::open(path).unwrap();
    let x = Array::from_vec((0..2 * 512).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect(), &[2, 512]).unwrap();
    for (name, ty) in [("q4_k", GgmlType::Q4_K), ("q5_k", GgmlType::Q5_K), ("q6_k", GgmlType::Q6_K)] {
        assert_eq!(f.tensor_info(name).unwrap().ty, ty);
        let want = f.tensor(&format!("{name}.expected"), Dtype::F32).unwrap();
        let got = f.tensor(name, Dtype::F32).unwrap();
        assert_eq!(got.shape(), &[3, 512]);
        let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
        assert!(w.iter().any(|&v| v != 0.0), "{name}: the fixture is not all zeros");
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "{name}[{i}]: weft {a}, gguf-py {b}");
        }
        let q = f.quantized(name).unwrap();
        if ty == GgmlType::Q6_K {
            assert!(q.is_none(), "Q6_K's 16-element groups are expanded, not kept quantized");
            continue;
        }
        let q = q.expect("Q4_K and Q5_K are kept quantized");
        assert_eq!((q.bits, q.group_size), (if ty == GgmlType::Q4_K { 4 } else { 8 }, 32));
        let d = q.dequantize(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
        let scale = w.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (i, (a, b)) in d.iter().zip(&w).enumerate() {
            assert!((a - b).abs() <= scale * 1e-6, "{name}[{i}] as affine codes: {a}, gguf-py {b}");
        }
        let y = q.matmul_t(&x).unwrap().to_vec::<f32>().unwrap();
        let r = weft::ops::matmul(&x, &weft::ops::transpose(&want, &[]).unwrap()).unwrap().to_vec::<f32>().unwrap();
        let big = r.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (i, (a, b)) in y.iter().zip(&r).enumerate() {
            assert!((a - b).abs() <= big * 1e-4, "{name}: product [{i}] {a} against {b}");
        }
    }
}

/// `quantize_blocks` then `save_gguf_blocks`, read back and decoded: every
/// value within its format's step of the original (a broken packing lands
/// far off), and the tensor keeps its type and shape.
#[test]
fn k_quants_written_by_weft_read_back_within_their_step() {
    use weft::io::gguf::{quantize_blocks, save_gguf_blocks, Blocks};
    let (rows, cols) = (4usize, 512usize);
    let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.3) * (1.0 + (i / 256) as f32)).collect();
    let mut blocks = Vec::new();
    for ty in [GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K] {
        let bytes = quantize_blocks(ty, &x).unwrap();
        blocks.push(Blocks { name: ty.name(), ty: ty.to_u32(), shape: vec![rows, cols], bytes });
    }
    let f = Gguf::parse(save_gguf_blocks(&blocks, &[("general.name".into(), Value::String("k".into()))]).unwrap(), "k").unwrap();
    for (ty, groups) in [(GgmlType::Q8_0, 32), (GgmlType::Q4_K, 32), (GgmlType::Q6_K, 16)] {
        assert_eq!(f.tensor_info(&ty.name()).unwrap().ty, ty);
        let got = f.tensor(&ty.name(), Dtype::F32).unwrap();
        assert_eq!(got.shape(), &[rows, cols]);
        let got = got.to_vec::<f32>().unwrap();
        for (g, (want, back)) in x.chunks(groups).zip(got.chunks(groups)).enumerate() {
            let (lo, hi) = want.iter().fold((0f32, 0f32), |(l, h), &v| (l.min(v), h.max(v)));
            // One code step of the group (plus the rounding of its 6- or 8-bit scale).
            let step = match ty {
                GgmlType::Q4_K => (hi - lo) / 15.0,
                GgmlType::Q6_K => lo.abs().max(hi) / 31.0,
                _ => lo.abs().max(hi) / 127.0,
            };
            for (a, b) in want.iter().zip(back) {
                assert!((a - b).abs() <= step * 0.75 + 1e-6, "{}: group {g}: {a} came back as {b} (step {step})", ty.name());
            }
        }
    }
    assert!(quantize_blocks(GgmlType::Q4_K, &x[..100]).is_err(), "not whole super-blocks");
    assert!(quantize_blocks(GgmlType::Q4_K, &[f32::NAN; 256]).is_err(), "a NaN");
    assert!(quantize_blocks(GgmlType::Q4_1, &x).is_err(), "a type weft does not encode");
    let bad = Blocks { name: "bad".into(), ty: GgmlType::Q4_K.to_u32(), shape: vec![2, 256], bytes: vec![0; 100] };
    assert!(save_gguf_blocks(&[bad], &[]).is_err(), "bytes that do not fit the shape");
    // A shape whose element count overflows is refused, not wrapped (nor a panic).
    let huge = Blocks { name: "huge".into(), ty: GgmlType::Q4_K.to_u32(), shape: vec![1 << 40, 1 << 40, 256], bytes: vec![0; 144] };
    match save_gguf_blocks(&[huge], &[]) {
        Err(weft::Error::Shape(m)) => assert!(m.contains("more elements"), "{m}"),
        other => panic!("an overflowing shape gave {other:?}"),
    }
}
