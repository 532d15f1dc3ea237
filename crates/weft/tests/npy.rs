//! `.npy`, `.npz` and GGUF writing: round trips of every dtype, files laid
//! out as NumPy writes them (Fortran order, big-endian, version 2 headers),
//! and corrupt or truncated input, which must be an error, never a panic.

use proptest::prelude::*;
use weft::io::gguf::{save_gguf_bytes, Gguf, Value};
use weft::io::{npy, npz};
use weft::{ops, Array, Dtype, Error};

fn every_dtype() -> Vec<Array> {
    let base = ops::arange(0.0, 24.0, 1.0, Dtype::F32).unwrap();
    let base = ops::reshape(&base, &[2, 3, 4]).unwrap();
    Dtype::ALL.iter().map(|&d| ops::astype(&base, d).unwrap()).collect()
}

fn same(a: &Array, b: &Array) {
    assert_eq!(a.dtype(), b.dtype());
    assert_eq!(a.shape(), b.shape());
    assert_eq!(a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
}

fn expect_io<T: std::fmt::Debug>(r: weft::Result<T>, what: &str) {
    match r {
        Err(Error::Io(m)) => assert!(m.contains(what), "{m:?} does not say {what:?}"),
        other => panic!("expected an Io error saying {what:?}, got {other:?}"),
    }
}

#[test]
fn npy_round_trips_every_dtype_and_shape() {
    for a in every_dtype() {
        for shape in [vec![24], vec![2, 3, 4], vec![4, 6, 1]] {
            let shape_i: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
            let a = ops::reshape(&a, &shape_i).unwrap();
            let back = npy::from_bytes(&npy::to_bytes(&a).unwrap(), "t").unwrap();
            same(&a, &back);
        }
    }
    // 0-d, empty, and a transposed (non-contiguous) view.
    for a in [Array::scalar(2.5f64), Array::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap()] {
        same(&a, &npy::from_bytes(&npy::to_bytes(&a).unwrap(), "t").unwrap());
    }
    let m = Array::from_slice(&[1i16, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let t = ops::transpose(&m, &[]).unwrap();
    let back = npy::from_bytes(&npy::to_bytes(&t).unwrap(), "t").unwrap();
    assert_eq!(back.to_vec::<i16>().unwrap(), vec![1, 4, 2, 5, 3, 6]);
}

#[test]
fn npy_bytes_are_numpys() {
    // numpy.save of np.arange(3, dtype='<i4'): header then little-endian data.
    let a = Array::from_slice(&[0i32, 1, 2], &[3]).unwrap();
    let bytes = npy::to_bytes(&a).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + hlen) % 64, 0);
    let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
    assert_eq!(header.trim_end(), "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }");
    assert_eq!(&bytes[10 + hlen..], &[0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
    // bfloat16 as MLX writes it: two raw bytes per element.
    let b = ops::astype(&a, Dtype::BF16).unwrap();
    let bytes = npy::to_bytes(&b).unwrap();
    assert!(std::str::from_utf8(&bytes[10..74]).unwrap().contains("'<V2'"));
}

/// A `.npy` file with a hand-written header.
fn npy_file(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend((header.len() as u16).to_le_bytes());
    } else {
        out.extend((header.len() as u32).to_le_bytes());
    }
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

#[test]
fn npy_reads_fortran_order_big_endian_and_v2() {
    // [[1, 2, 3], [4, 5, 6]] in Fortran order: columns first.
    let data: Vec<u8> = [1i32, 4, 2, 5, 3, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    let f = npy_file(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }\n", &data);
    let a = npy::from_bytes(&f, "f").unwrap();
    assert_eq!(a.shape(), &[2, 3]);
    assert_eq!(a.to_vec::<i32>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
    let data: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    let f = npy_file(2, "{\"descr\": \">f8\", \"fortran_order\": False, \"shape\": (2,)}\n", &data);
    assert_eq!(npy::from_bytes(&f, "f").unwrap().to_vec::<f64>().unwrap(), vec![1.5, -2.0]);
    // Python 2 longs and a 0-d shape.
    let f = npy_file(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2L,), }\n", &[7, 9]);
    assert_eq!(npy::from_bytes(&f, "f").unwrap().to_vec::<u8>().unwrap(), vec![7, 9]);
    let f = npy_file(3, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", &[1]);
    assert!(npy::from_bytes(&f, "f").unwrap().item::<bool>().unwrap());
}

#[test]
fn npy_rejects_corrupt_headers() {
    let h = |s: &str| npy_file(1, s, &[0; 64]);
    expect_io(npy::from_bytes(b"", "e"), "magic");
    expect_io(npy::from_bytes(b"\x93NUMPX\x01\x00", "e"), "magic");
    expect_io(npy::from_bytes(b"\x93NUMPY\x09\x00\x00\x00", "e"), "version 9.0");
    expect_io(npy::from_bytes(b"\x93NUMPY\x01\x00\x40", "e"), "header length");
    expect_io(npy::from_bytes(b"\x93NUMPY\x01\x00\xff\x00{'descr'", "e"), "ends before");
    expect_io(npy::from_bytes(&h("{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }"), "e"), "complex");
    expect_io(npy::from_bytes(&h("{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }"), "e"), "no dtype");
    expect_io(npy::from_bytes(&h("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }"), "e"), "structured");
    expect_io(npy::from_bytes(&h("{'descr': '<i4', 'shape': (2,), }"), "e"), "lacks");
    expect_io(npy::from_bytes(&h("{'descr': '<i4', 'fortran_order': Maybe, 'shape': (2,), }"), "e"), "fortran_order");
    expect_io(npy::from_bytes(&h("{'descr': '<i4', 'fortran_order': False, 'shape': (2,-1), }"), "e"), "unexpected");
    expect_io(npy::from_bytes(&h("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999999,), }"), "e"), "overflows");
    expect_io(npy::from_bytes(&h("{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), "e"), "shape");
    expect_io(npy::from_bytes(&h("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}"), "e"), "unknown header key");
    expect_io(npy::from_bytes(&h("{'descr: '<i4'}"), "e"), "");
}

#[test]
fn truncated_npy_data_fails_at_evaluation() {
    let a = Array::from_slice(&[1.0f32; 16], &[16]).unwrap();
    let bytes = npy::to_bytes(&a).unwrap();
    let cut = &bytes[..bytes.len() - 20];
    let loaded = npy::from_bytes(cut, "cut.npy").unwrap();
    assert_eq!(loaded.shape(), &[16]);
    expect_io(loaded.eval(), "promises 64");
    // An array computed from it fails with it as the root cause.
    let y = ops::add(&loaded, &Array::scalar(1.0f32)).unwrap();
    match y.eval() {
        Err(e) => assert!(matches!(e.root(), Error::Io(_)), "{e:?}"),
        Ok(()) => panic!("an array computed from a truncated file evaluated"),
    }
}

#[test]
fn npz_round_trips_stored_and_deflated() {
    let arrays = every_dtype();
    let names: Vec<String> = arrays.iter().map(|a| format!("x_{}", a.dtype())).collect();
    for compressed in [false, true] {
        let bytes = npz::to_bytes(names.iter().map(String::as_str).zip(&arrays), compressed).unwrap();
        let back = npz::from_bytes(&bytes, "t.npz").unwrap();
        assert_eq!(back.len(), arrays.len());
        for ((n, b), (want_n, a)) in back.iter().zip(names.iter().zip(&arrays)) {
            assert_eq!(n, want_n);
            same(a, b);
        }
    }
    // Deflating shrinks zeros; storing does not.
    let zeros = Array::from_vec(vec![0.0f32; 10_000], &[10_000]).unwrap();
    let stored = npz::to_bytes([("z", &zeros)], false).unwrap();
    let deflated = npz::to_bytes([("z", &zeros)], true).unwrap();
    assert!(stored.len() > 40_000 && deflated.len() < 1_000, "{} {}", stored.len(), deflated.len());
}

#[test]
fn npz_rejects_corrupt_archives() {
    let a = Array::from_slice(&[1i64, 2, 3], &[3]).unwrap();
    let good = npz::to_bytes([("a", &a)], true).unwrap();
    expect_io(npz::from_bytes(b"", "e.npz"), "npz");
    expect_io(npz::from_bytes(b"PK\x03\x04garbage", "e.npz"), "npz");
    expect_io(npz::from_bytes(&good[..good.len() / 2], "cut.npz"), "npz");
    // A corrupt member is named.
    let bad_member = npz::to_bytes([("a", &a)], false).unwrap();
    let at = bad_member.windows(6).position(|w| w == b"\x93NUMPY").unwrap();
    let mut bad = bad_member.clone();
    bad[at + 1] = b'X';
    match npz::from_bytes(&bad, "bad.npz") {
        Err(Error::Io(m)) => assert!(m.contains("\"a.npy\"") || m.contains("CRC") || m.contains("npz"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn gguf_writes_what_the_reader_reads() {
    let f32s = Array::from_slice(&[1.5f32, -2.0, 3.25, 0.0, 5.0, 6.0], &[2, 3]).unwrap();
    let arrays = vec![
        ("f32", f32s.clone()),
        ("f16", ops::astype(&f32s, Dtype::F16).unwrap()),
        ("bf16", ops::astype(&f32s, Dtype::BF16).unwrap()),
        ("f64", ops::astype(&f32s, Dtype::F64).unwrap()),
        ("i8", ops::astype(&f32s, Dtype::I8).unwrap()),
        ("i16", ops::astype(&f32s, Dtype::I16).unwrap()),
        ("i32", ops::astype(&f32s, Dtype::I32).unwrap()),
        ("i64", ops::astype(&f32s, Dtype::I64).unwrap()),
        ("rank5", ops::reshape(&f32s, &[1, 2, 1, 3, 1]).unwrap()),
        ("t", ops::transpose(&f32s, &[]).unwrap()),
    ];
    let meta = vec![
        ("s".to_string(), Value::String("hello".into())),
        ("u8".to_string(), Value::U8(7)),
        ("f".to_string(), Value::F32(1.5)),
        ("list".to_string(), Value::Array(8, vec![Value::String("a".into()), Value::String("bc".into())])),
        ("ints".to_string(), Value::Array(11, vec![Value::I64(-1), Value::I64(1 << 40)])),
    ];
    let bytes = save_gguf_bytes(arrays.iter().map(|(n, a)| (*n, a)), &meta).unwrap();
    let g = Gguf::parse(bytes, "t.gguf").unwrap();
    assert_eq!(g.metadata(), &meta[..]);
    for (name, a) in &arrays {
        same(a, &g.array(name).unwrap());
    }
    // Unsigned arrays have no GGUF type; mixed-type arrays are refused.
    let u = ops::astype(&f32s, Dtype::U32).unwrap();
    assert!(matches!(save_gguf_bytes([("u", &u)], &[]), Err(Error::Dtype(_))));
    let mixed = vec![("m".to_string(), Value::Array(4, vec![Value::U32(1), Value::I8(2)]))];
    assert!(matches!(save_gguf_bytes([], &mixed), Err(Error::InvalidArgument(_))));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any corruption of a valid file (a byte changed, the file cut) is an
    /// error or a valid array, never a panic.
    #[test]
    fn corrupt_npy_and_npz_never_panic(pos in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let mut n = npy::to_bytes(&a).unwrap();
        let p = pos % n.len();
        n[p] = byte;
        if let Ok(x) = npy::from_bytes(&n, "p.npy") { let _ = x.eval(); }
        let _ = npy::from_bytes(&n[..cut.min(n.len())], "p.npy").map(|x| x.eval());
        let mut z = npz::to_bytes([("a", &a)], pos % 2 == 0).unwrap();
        let p = pos % z.len();
        z[p] = byte;
        if let Ok(v) = npz::from_bytes(&z, "p.npz") { for (_, x) in v { let _ = x.eval(); } }
        let _ = npz::from_bytes(&z[..cut.min(z.len())], "p.npz");
    }
}
