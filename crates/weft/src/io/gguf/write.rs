//! Writing GGUF files (version 3): arrays as tensors of their own type
//! (float32, float16, bfloat16, float64, int8 .. int64), or tensors given as
//! their blocks (`Blocks`: any type whose layout weft knows, the quantized
//! ones included), and metadata key/values, laid out as `mod.rs` describes
//! and `Gguf::parse` reads.

use super::{Value, DEFAULT_ALIGNMENT};
use crate::{Array, Dtype, Error, Result};
use std::path::Path;

/// GGML's number for the tensor type of `dtype`.
fn ggml_type(dtype: Dtype) -> Result<u32> {
    Ok(match dtype {
        Dtype::F32 => 0,
        Dtype::F16 => 1,
        Dtype::I8 => 24,
        Dtype::I16 => 25,
        Dtype::I32 => 26,
        Dtype::I64 => 27,
        Dtype::F64 => 28,
        Dtype::BF16 => 30,
        d => return Err(Error::Dtype(format!("GGUF has no tensor type for {d} (it stores floats and signed integers)"))),
    })
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// GGUF's number for a value's type.
fn value_type(v: &Value) -> u32 {
    match v {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(..) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

fn put_value(out: &mut Vec<u8>, v: &Value) -> Result<()> {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.extend(x.to_le_bytes()),
        Value::U16(x) => out.extend(x.to_le_bytes()),
        Value::I16(x) => out.extend(x.to_le_bytes()),
        Value::U32(x) => out.extend(x.to_le_bytes()),
        Value::I32(x) => out.extend(x.to_le_bytes()),
        Value::F32(x) => out.extend(x.to_le_bytes()),
        Value::Bool(x) => out.push(*x as u8),
        Value::String(s) => put_str(out, s),
        Value::Array(ty, items) => {
            if let Some(bad) = items.iter().find(|i| value_type(i) != *ty) {
                return Err(Error::InvalidArgument(format!("a GGUF array of type {ty} holds {bad:?}")));
            }
            out.extend(ty.to_le_bytes());
            out.extend((items.len() as u64).to_le_bytes());
            for i in items {
                put_value(out, i)?;
            }
        }
        Value::U64(x) => out.extend(x.to_le_bytes()),
        Value::I64(x) => out.extend(x.to_le_bytes()),
        Value::F64(x) => out.extend(x.to_le_bytes()),
    }
    Ok(())
}

/// The bytes of a GGUF file holding `tensors` (evaluated as needed; each
/// array's shape is stored innermost first, as GGUF wants) and `metadata`.
pub fn save_gguf_bytes<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Array)>,
    metadata: &[(String, Value)],
) -> Result<Vec<u8>> {
    let blocks = tensors
        .into_iter()
        .map(|(name, a)| Ok(Blocks { name: name.to_string(), ty: ggml_type(a.dtype())?, shape: a.shape().to_vec(), bytes: crate::io::le_bytes(a)? }))
        .collect::<Result<Vec<_>>>()?;
    save_gguf_blocks(&blocks, metadata)
}

/// A tensor as the bytes GGUF stores for it: `bytes` are whole blocks of
/// GGML type `ty` (a float type, or a block-quantized one such as `Q4_K`
/// from [`quantize_blocks`](super::quantize_blocks)) for a row-major `shape`.
pub struct Blocks {
    pub name: String,
    /// GGML's number for the type ([`GgmlType::to_u32`](super::GgmlType::to_u32)).
    pub ty: u32,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

/// The bytes of a GGUF file holding `tensors` as given (each checked
/// against its type's block size) and `metadata`.
pub fn save_gguf_blocks(tensors: &[Blocks], metadata: &[(String, Value)]) -> Result<Vec<u8>> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((metadata.len() as u64).to_le_bytes());
    for (key, v) in metadata {
        put_str(&mut out, key);
        out.extend(value_type(v).to_le_bytes());
        put_value(&mut out, v)?;
    }
    let mut offset = 0u64;
    let mut offsets = Vec::with_capacity(tensors.len());
    for t in tensors {
        let ty = super::GgmlType::from_u32(t.ty);
        let (block, block_bytes) =
            ty.block().ok_or_else(|| Error::Dtype(format!("GGUF tensor {:?}: weft does not know the layout of {}", t.name, ty.name())))?;
        let bytes = t.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).and_then(|n| (n / block).checked_mul(block_bytes));
        let Some(bytes) = bytes else {
            return Err(Error::Shape(format!("GGUF tensor {:?}: shape {:?} holds more elements than memory can", t.name, t.shape)));
        };
        if t.shape.last().is_some_and(|&c| c % block != 0) || bytes != t.bytes.len() {
            return Err(Error::Shape(format!(
                "GGUF tensor {:?}: {} bytes of {} for shape {:?}",
                t.name,
                t.bytes.len(),
                ty.name(),
                t.shape
            )));
        }
        put_str(&mut out, &t.name);
        out.extend((t.shape.len() as u32).to_le_bytes());
        for &d in t.shape.iter().rev() {
            out.extend((d as u64).to_le_bytes());
        }
        out.extend(t.ty.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offsets.push(offset);
        offset = (offset + t.bytes.len() as u64).next_multiple_of(DEFAULT_ALIGNMENT);
    }
    let data_start = (out.len() as u64).next_multiple_of(DEFAULT_ALIGNMENT);
    for (t, off) in tensors.iter().zip(offsets) {
        out.resize((data_start + off) as usize, 0);
        out.extend(&t.bytes);
    }
    Ok(out)
}

/// Writes `tensors` and `metadata` to a GGUF file at `path`.
///
/// ```
/// use weft::io::gguf::{save_gguf, Gguf, Value};
/// use weft::Array;
/// let path = std::env::temp_dir().join("weft-doc-example.gguf");
/// let w = Array::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
/// save_gguf(&path, [("w", &w)], &[("name".into(), Value::String("demo".into()))]).unwrap();
/// let back = Gguf::open(&path).unwrap();
/// assert_eq!(back.get_str("name").unwrap(), "demo");
/// assert_eq!(back.array("w").unwrap().to_vec::<i32>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
/// # std::fs::remove_file(&path).ok();
/// ```
pub fn save_gguf<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (&'a str, &'a Array)>,
    metadata: &[(String, Value)],
) -> Result<()> {
    let path = path.as_ref();
    let bytes = save_gguf_bytes(tensors, metadata)?;
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}
