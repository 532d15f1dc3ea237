//! NumPy's `.npy` format: one array, a text header and its raw elements.
//!
//! A file is the magic `\x93NUMPY`, a version (`1.0`, `2.0` or `3.0`), the
//! header length (`u16` for 1.0, `u32` after), and the header: a Python
//! dict literal `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`
//! padded with spaces to a multiple of 64 bytes and ending in `\n`. The
//! elements follow, in C order (or Fortran order when `fortran_order`).
//!
//! Every weft dtype is written with NumPy's type string, except `bfloat16`,
//! which NumPy lacks: as MLX does, it is written as `'<V2'` (two raw bytes,
//! which NumPy reads as `void` items) and `'<V2'` reads back as `bfloat16`.
//!
//! A corrupt header is an [`Error::Io`] at once. A file whose data are
//! shorter than its header says loads, as in MLX, as an array whose
//! evaluation fails with that `Error::Io` (so does everything computed
//! from it).
//!
//! ```
//! use weft::{io::npy, Array};
//! let a = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
//! let bytes = npy::to_bytes(&a).unwrap();
//! let b = npy::from_bytes(&bytes, "<bytes>").unwrap();
//! assert_eq!(b.to_vec::<i32>().unwrap(), vec![1, 2, 3, 4]);
//! ```

use super::corrupt;
use crate::dtype::Dtype;
use crate::shape::MAX_NDIM;
use crate::{ops, Array, Error, Result};
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";
/// The header (from the magic on) is padded to a multiple of this.
const ALIGN: usize = 64;
/// NumPy refuses headers longer than this by default; so does weft.
const MAX_HEADER: usize = 1 << 20;

fn bad(origin: &str, what: impl std::fmt::Display) -> Error {
    corrupt(origin, "npy", what)
}

/// NumPy's type string for `dtype` (little-endian).
pub fn descr(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bool => "|b1",
        Dtype::U8 => "|u1",
        Dtype::U16 => "<u2",
        Dtype::U32 => "<u4",
        Dtype::U64 => "<u8",
        Dtype::I8 => "|i1",
        Dtype::I16 => "<i2",
        Dtype::I32 => "<i4",
        Dtype::I64 => "<i8",
        Dtype::F16 => "<f2",
        Dtype::BF16 => "<V2",
        Dtype::F32 => "<f4",
        Dtype::F64 => "<f8",
        Dtype::C64 => "<c8",
    }
}

/// The dtype of a NumPy type string, and whether its bytes are big-endian.
fn parse_descr(d: &str) -> std::result::Result<(Dtype, bool), String> {
    let (order, rest) = match d.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &d[1..]),
        _ => ('=', d),
    };
    let big = match order {
        '>' => true,
        '<' => false,
        _ => cfg!(target_endian = "big"),
    };
    let dtype = match rest {
        "b1" | "?" => Dtype::Bool,
        "u1" | "B" => Dtype::U8,
        "u2" => Dtype::U16,
        "u4" => Dtype::U32,
        "u8" => Dtype::U64,
        "i1" | "b" => Dtype::I8,
        "i2" => Dtype::I16,
        "i4" => Dtype::I32,
        "i8" => Dtype::I64,
        "f2" | "e" => Dtype::F16,
        "f4" | "f" => Dtype::F32,
        "f8" | "d" => Dtype::F64,
        "V2" => Dtype::BF16,
        "c8" | "F" => Dtype::C64,
        r if r.starts_with('c') => return Err(format!("weft's only complex dtype is complex64, not NumPy's {d:?}")),
        _ => return Err(format!("weft has no dtype for NumPy's {d:?}")),
    };
    Ok((dtype, big))
}

/// The header dict for `dtype` and `shape` in C order.
fn header(dtype: Dtype, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut h = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {dims}, }}", descr(dtype)).into_bytes();
    // magic + version + u16 length + header + '\n' is a multiple of ALIGN.
    let used = MAGIC.len() + 2 + 2 + h.len() + 1;
    h.resize(h.len() + (ALIGN - used % ALIGN) % ALIGN, b' ');
    h.push(b'\n');
    h
}

/// The bytes of a `.npy` file holding `a` (evaluating it).
pub fn to_bytes(a: &Array) -> Result<Vec<u8>> {
    let data = super::le_bytes(a)?;
    let h = header(a.dtype(), a.shape());
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + h.len() + data.len());
    out.extend_from_slice(MAGIC);
    if h.len() <= u16::MAX as usize {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    } else {
        // Only a very high rank overflows version 1.0's u16 length.
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&h);
    out.extend_from_slice(&data);
    Ok(out)
}

/// Writes `a` to a `.npy` file at `path` (the name is used as given).
pub fn save(path: impl AsRef<Path>, a: &Array) -> Result<()> {
    let path = path.as_ref();
    let bytes = to_bytes(a)?;
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Reads the `.npy` file at `path`.
pub fn load(path: impl AsRef<Path>) -> Result<Array> {
    let path = path.as_ref();
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Io(format!("{origin}: {e}")))?;
    from_bytes(&bytes, &origin)
}

/// The parsed header: dtype, byte order, shape, Fortran order.
struct Header {
    dtype: Dtype,
    big_endian: bool,
    shape: Vec<usize>,
    fortran: bool,
}

/// Reads a `.npy` file held in memory; `origin` names it in errors.
pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Array> {
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad(origin, "it does not start with the magic \\x93NUMPY"));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_bytes, utf8) = match (major, minor) {
        (1, 0) => (2, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        _ => return Err(bad(origin, format_args!("unknown format version {major}.{minor}"))),
    };
    let start = 8 + len_bytes;
    let Some(len_field) = bytes.get(8..start) else {
        return Err(bad(origin, "the file ends inside the header length"));
    };
    let hlen = len_field.iter().rev().fold(0usize, |acc, &b| (acc << 8) | b as usize);
    if hlen > MAX_HEADER {
        return Err(bad(origin, format_args!("the header is {hlen} bytes long (more than {MAX_HEADER})")));
    }
    let Some(text) = bytes.get(start..start + hlen) else {
        return Err(bad(origin, format_args!("the header is {hlen} bytes long, but the file ends before")));
    };
    let text = if utf8 { std::str::from_utf8(text).ok() } else { text.is_ascii().then(|| std::str::from_utf8(text).ok()).flatten() };
    let Some(text) = text else {
        return Err(bad(origin, "the header is not text"));
    };
    let h = parse_header(text).map_err(|m| bad(origin, m))?;
    let data = &bytes[start + hlen..];
    let n = crate::shape::check_shape(&h.shape, h.dtype.size())
        .map_err(|e| bad(origin, format_args!("shape {:?}: {e}", h.shape)))?;
    let nbytes = n * h.dtype.size();
    if data.len() < nbytes {
        // As in MLX, the array exists and its evaluation fails.
        let e = Error::Io(format!("{origin}: the file holds {} bytes of data, its header promises {nbytes}", data.len()));
        return Ok(Array::failed(&h.shape, h.dtype, e));
    }
    let data = &data[..nbytes];
    if !h.fortran || h.shape.len() < 2 {
        return super::from_bytes(data, h.dtype, &h.shape, h.big_endian);
    }
    // Fortran order: the elements of the transposed shape in C order.
    let reversed: Vec<usize> = h.shape.iter().rev().copied().collect();
    let t = super::from_bytes(data, h.dtype, &reversed, h.big_endian)?;
    ops::transpose(&t, &[])
}

/// A token of the header's Python literal.
#[derive(Debug, PartialEq)]
enum Tok {
    Str(String),
    Int(u64),
    Name(String),
    Punct(char),
}

fn tokens(s: &str) -> std::result::Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    while let Some(&c) = it.peek() {
        match c {
            c if c.is_whitespace() => {
                it.next();
            }
            '{' | '}' | '(' | ')' | '[' | ']' | ':' | ',' => {
                it.next();
                out.push(Tok::Punct(c));
            }
            '\'' | '"' => {
                it.next();
                let mut v = String::new();
                loop {
                    match it.next() {
                        Some(ch) if ch == c => break,
                        Some(ch) => v.push(ch),
                        None => return Err("a string in the header is not closed".into()),
                    }
                }
                out.push(Tok::Str(v));
            }
            '0'..='9' => {
                let mut v = 0u64;
                while let Some(&d) = it.peek() {
                    let Some(x) = d.to_digit(10) else { break };
                    v = v.checked_mul(10).and_then(|v| v.checked_add(x as u64)).ok_or("a dimension overflows")?;
                    it.next();
                }
                // Python 2 wrote longs as `3L`.
                if it.peek() == Some(&'L') {
                    it.next();
                }
                out.push(Tok::Int(v));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut v = String::new();
                while let Some(&d) = it.peek() {
                    if !(d.is_ascii_alphanumeric() || d == '_') {
                        break;
                    }
                    v.push(d);
                    it.next();
                }
                out.push(Tok::Name(v));
            }
            c => return Err(format!("unexpected {c:?} in the header")),
        }
    }
    Ok(out)
}

/// Parses `{'descr': ..., 'fortran_order': ..., 'shape': (...)}`.
fn parse_header(text: &str) -> std::result::Result<Header, String> {
    let toks = tokens(text)?;
    let mut i = 0;
    let expect = |i: &mut usize, c: char| -> std::result::Result<(), String> {
        match toks.get(*i) {
            Some(Tok::Punct(p)) if *p == c => {
                *i += 1;
                Ok(())
            }
            t => Err(format!("expected {c:?} in the header, found {t:?}")),
        }
    };
    expect(&mut i, '{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        match toks.get(i) {
            Some(Tok::Punct('}')) => break,
            Some(Tok::Str(key)) => {
                i += 1;
                expect(&mut i, ':')?;
                match key.as_str() {
                    "descr" => match toks.get(i) {
                        Some(Tok::Str(d)) => {
                            descr = Some(d.clone());
                            i += 1;
                        }
                        Some(Tok::Punct('[')) => return Err("structured dtypes are not supported".into()),
                        t => return Err(format!("'descr' is {t:?}, not a type string")),
                    },
                    "fortran_order" => match toks.get(i) {
                        Some(Tok::Name(b)) if b == "True" || b == "False" => {
                            fortran = Some(b == "True");
                            i += 1;
                        }
                        t => return Err(format!("'fortran_order' is {t:?}, not True or False")),
                    },
                    "shape" => {
                        expect(&mut i, '(')?;
                        let mut dims = Vec::new();
                        loop {
                            match toks.get(i) {
                                Some(Tok::Punct(')')) => {
                                    i += 1;
                                    break;
                                }
                                Some(Tok::Int(d)) => {
                                    if dims.len() >= MAX_NDIM {
                                        return Err(format!("the shape has more than {MAX_NDIM} dimensions"));
                                    }
                                    dims.push(usize::try_from(*d).map_err(|_| "a dimension overflows")?);
                                    i += 1;
                                    match toks.get(i) {
                                        Some(Tok::Punct(',')) => i += 1,
                                        Some(Tok::Punct(')')) => {}
                                        t => return Err(format!("unexpected {t:?} in the shape")),
                                    }
                                }
                                t => return Err(format!("unexpected {t:?} in the shape")),
                            }
                        }
                        shape = Some(dims);
                    }
                    k => return Err(format!("unknown header key {k:?}")),
                }
                match toks.get(i) {
                    Some(Tok::Punct(',')) => i += 1,
                    Some(Tok::Punct('}')) => {}
                    t => return Err(format!("unexpected {t:?} after a header value")),
                }
            }
            t => return Err(format!("unexpected {t:?} in the header")),
        }
    }
    let (Some(d), Some(fortran), Some(shape)) = (descr, fortran, shape) else {
        return Err("the header lacks 'descr', 'fortran_order' or 'shape'".into());
    };
    let (dtype, big_endian) = parse_descr(&d)?;
    Ok(Header { dtype, big_endian, shape, fortran })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_numpy_shaped() {
        for shape in [vec![], vec![3], vec![2, 3, 4]] {
            let h = header(Dtype::F32, &shape);
            assert_eq!((MAGIC.len() + 4 + h.len()) % ALIGN, 0);
            let p = parse_header(std::str::from_utf8(&h).unwrap()).unwrap();
            assert_eq!(p.shape, shape);
            assert_eq!(p.dtype, Dtype::F32);
        }
        assert!(std::str::from_utf8(&header(Dtype::I8, &[5])).unwrap().contains("'shape': (5,)"));
    }

    #[test]
    fn descr_round_trips_every_dtype() {
        for d in Dtype::ALL {
            assert_eq!(parse_descr(descr(d)).unwrap(), (d, false));
        }
        assert_eq!(parse_descr(">i4").unwrap(), (Dtype::I32, true));
        assert!(parse_descr("<c16").unwrap_err().contains("complex"));
        assert!(parse_descr("<U3").is_err());
    }
}
