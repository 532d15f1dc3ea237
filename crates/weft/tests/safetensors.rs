//! safetensors: round trips of every dtype, and corrupted files (random
//! truncations and byte flips) that load as an error or a valid result,
//! never a panic.

use half::{bf16, f16};
use proptest::prelude::*;
use weft::{io, Array, Dtype, Error};

fn sample() -> Vec<(&'static str, Array)> {
    vec![
        ("f32", Array::from_slice(&[1.5f32, -2.25, 3.0, 1e-20, f32::MAX, -0.0], &[2, 3]).unwrap()),
        ("f64", Array::from_slice(&[std::f64::consts::PI, -1e300], &[2]).unwrap()),
        ("f16", Array::from_slice(&[f16::from_f32(0.5), f16::from_f32(-65504.0)], &[1, 2]).unwrap()),
        ("bf16", Array::from_slice(&[bf16::from_f32(1.0e10), bf16::from_f32(-3.0)], &[2, 1]).unwrap()),
        ("i64", Array::from_slice(&[i64::MIN, 7, i64::MAX], &[3]).unwrap()),
        ("i32", Array::from_slice(&[-5i32, 6], &[2]).unwrap()),
        ("u32", Array::from_slice(&[u32::MAX], &[1]).unwrap()),
        ("u8", Array::from_slice(&[0u8, 255, 9, 10], &[2, 2]).unwrap()),
        ("bool", Array::from_slice(&[true, false, true], &[3]).unwrap()),
        ("scalar", Array::scalar(42.0f32)),
        ("empty", Array::from_slice::<f32>(&[], &[0, 4]).unwrap()),
    ]
}

fn sample_bytes() -> Vec<u8> {
    let s = sample();
    io::save_safetensors_bytes(s.iter().map(|(n, a)| (*n, a))).unwrap()
}

#[test]
fn round_trip_every_dtype() {
    let path = std::env::temp_dir().join(format!("weft-roundtrip-{}.safetensors", std::process::id()));
    let s = sample();
    io::save_safetensors(&path, s.iter().map(|(n, a)| (*n, a))).unwrap();
    let back = io::load_safetensors(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(back.len(), s.len());
    for (name, a) in &s {
        let b = &back[*name];
        assert_eq!(b.shape(), a.shape(), "{name}");
        assert_eq!(b.dtype(), a.dtype(), "{name}");
        let (x, y) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
        assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()), "{name}: {x:?} vs {y:?}");
    }
    assert_eq!(back["i64"].to_vec::<i64>().unwrap(), vec![i64::MIN, 7, i64::MAX]);
    assert_eq!(back["bf16"].dtype(), Dtype::BF16);
}

#[test]
fn bad_files_are_errors() {
    let dir = std::env::temp_dir();
    let missing = io::load_safetensors(dir.join("weft-no-such-file.safetensors")).unwrap_err();
    assert!(matches!(missing, weft::Error::Io(_)), "{missing}");
    let bytes = sample_bytes();
    let path = dir.join(format!("weft-truncated-{}.safetensors", std::process::id()));
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let e = io::load_safetensors(&path).unwrap_err();
    std::fs::write(&path, b"").unwrap();
    let empty = io::load_safetensors(&path).unwrap_err();
    std::fs::remove_file(&path).ok();
    assert!(e.to_string().contains("weft-truncated"), "{e}");
    assert!(empty.to_string().contains("empty"), "{empty}");
    // A header claiming more bytes than the file has.
    let mut huge = bytes.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    let res = io::load_safetensors_bytes(&huge);
    assert!(matches!(res, Err(Error::Io(_))), "{res:?}");
}

/// Loading must end in `Ok` with consistent arrays, or in an `Err`.
fn load_checked(bytes: &[u8]) {
    if let Ok(tensors) = io::load_safetensors_bytes(bytes) {
        for a in tensors.values() {
            assert_eq!(a.to_f64_vec().unwrap().len(), a.size());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn truncated_files_never_panic(cut in 0usize..2000) {
        let bytes = sample_bytes();
        let cut = cut % bytes.len();
        let res = io::load_safetensors_bytes(&bytes[..cut]);
    prop_assert!(matches!(res, Err(Error::Io(_))), "{res:?}");
    }

    #[test]
    fn flipped_bytes_never_panic(flips in proptest::collection::vec((0usize..4000, 1u8..=255), 1..6)) {
        let mut bytes = sample_bytes();
        let n = bytes.len();
        for (pos, x) in flips {
            bytes[pos % n] ^= x;
        }
        load_checked(&bytes);
    }

    #[test]
    fn header_garbage_never_panics(header in proptest::collection::vec(any::<u8>(), 0..300), tail in 0usize..64) {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(&header);
        bytes.extend(std::iter::repeat_n(0u8, tail));
        load_checked(&bytes);
    }
}
