//! Reading and writing arrays: the `safetensors` format.
//!
//! A corrupt or truncated file is an [`Error::Io`] naming the file and what
//! is wrong with it, never a panic.

use crate::buffer::CpuElement;
use crate::dtype::Dtype;
use crate::{Array, Error, Result};
use half::{bf16, f16};
use ::safetensors::tensor::{Dtype as StDtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::path::Path;

fn corrupt(origin: &str, what: impl std::fmt::Display) -> Error {
    Error::Io(format!("{origin}: not a valid safetensors file: {what}"))
}

/// Loads every tensor of a `.safetensors` file, by name. The file is
/// memory-mapped and each tensor copied once into its array.
///
/// ```no_run
/// let weights = weft::io::load_safetensors("model.safetensors").unwrap();
/// println!("{:?}", weights["embeddings.word_embeddings.weight"].shape());
/// ```
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<HashMap<String, Array>> {
    let path = path.as_ref();
    let origin = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::Io(format!("{origin}: {e}")))?;
    let len = file.metadata().map_err(|e| Error::Io(format!("{origin}: {e}")))?.len();
    if len == 0 {
        return Err(corrupt(&origin, "the file is empty"));
    }
    // SAFETY: the map is only read, and only inside this call (every tensor
    // is copied out before it is dropped). Another process truncating or
    // rewriting the file meanwhile would change what is read (or fault),
    // the caveat of every memory-mapped reader; weft never writes to it.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::Io(format!("{origin}: {e}")))?;
    load_from(&map, &origin)
}

/// Loads every tensor of a safetensors file held in memory.
pub fn load_safetensors_bytes(bytes: &[u8]) -> Result<HashMap<String, Array>> {
    load_from(bytes, "<bytes>")
}

/// Arrays by name, and string key/values.
pub type TensorsAndMetadata = (HashMap<String, Array>, HashMap<String, String>);

/// The tensors of the `.safetensors` file at `path` (memory-mapped, as
/// [`load_safetensors`] reads it) and the string key/values of its
/// `__metadata__` (empty when it has none).
pub fn load_safetensors_with_metadata(path: impl AsRef<Path>) -> Result<TensorsAndMetadata> {
    let path = path.as_ref();
    let origin = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::Io(format!("{origin}: {e}")))?;
    if file.metadata().map_err(|e| Error::Io(format!("{origin}: {e}")))?.len() == 0 {
        return Err(corrupt(&origin, "the file is empty"));
    }
    // SAFETY: as in `load_safetensors`: the map is only read, and every
    // tensor is copied out before it is dropped.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::Io(format!("{origin}: {e}")))?;
    load_safetensors_bytes_with_metadata(&map, &origin)
}

/// [`load_safetensors_with_metadata`] of a file held in memory; `origin`
/// names it in errors.
pub fn load_safetensors_bytes_with_metadata(bytes: &[u8], origin: &str) -> Result<TensorsAndMetadata> {
    let tensors = load_from(bytes, origin)?;
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| corrupt(origin, e))?;
    Ok((tensors, meta.metadata().clone().unwrap_or_default()))
}

fn load_from(bytes: &[u8], origin: &str) -> Result<HashMap<String, Array>> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| corrupt(origin, e))?;
    let mut out = HashMap::new();
    for (name, view) in st.tensors() {
        let a = to_array(&view).map_err(|e| match e {
            Error::Io(m) | Error::Dtype(m) | Error::Shape(m) => corrupt(origin, format!("tensor {name:?}: {m}")),
            e => e,
        })?;
        out.insert(name, a);
    }
    Ok(out)
}

fn decode<T: CpuElement, const N: usize>(bytes: &[u8], shape: &[usize], f: impl Fn([u8; N]) -> T) -> Result<Array> {
    let v: Vec<T> = bytes
        .chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks_exact yields N bytes")))
        .collect();
    Array::from_vec(v, shape)
}

fn to_array(view: &TensorView<'_>) -> Result<Array> {
    let shape = view.shape();
    let bytes = view.data();
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let dtype = dtype_of(view.dtype())?;
    if n.and_then(|n| n.checked_mul(dtype.size())) != Some(bytes.len()) {
        return Err(Error::Shape(format!("shape {shape:?} of {dtype} does not match its {} bytes", bytes.len())));
    }
    match dtype {
        Dtype::Bool => decode(bytes, shape, |[b]: [u8; 1]| b != 0),
        Dtype::U8 => decode(bytes, shape, |[b]: [u8; 1]| b),
        Dtype::U16 => decode(bytes, shape, u16::from_le_bytes),
        Dtype::U32 => decode(bytes, shape, u32::from_le_bytes),
        Dtype::U64 => decode(bytes, shape, u64::from_le_bytes),
        Dtype::I8 => decode(bytes, shape, i8::from_le_bytes),
        Dtype::I16 => decode(bytes, shape, i16::from_le_bytes),
        Dtype::I32 => decode(bytes, shape, i32::from_le_bytes),
        Dtype::I64 => decode(bytes, shape, i64::from_le_bytes),
        Dtype::F16 => decode(bytes, shape, |b| f16::from_bits(u16::from_le_bytes(b))),
        Dtype::BF16 => decode(bytes, shape, |b| bf16::from_bits(u16::from_le_bytes(b))),
        Dtype::F32 => decode(bytes, shape, f32::from_le_bytes),
        Dtype::F64 => decode(bytes, shape, f64::from_le_bytes),
        Dtype::C64 => decode(bytes, shape, |b: [u8; 8]| {
            let part = |i: usize| f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            crate::Complex64::new(part(0), part(4))
        }),
    }
}

fn dtype_of(d: StDtype) -> Result<Dtype> {
    Ok(match d {
        StDtype::BOOL => Dtype::Bool,
        StDtype::U8 => Dtype::U8,
        StDtype::U16 => Dtype::U16,
        StDtype::U32 => Dtype::U32,
        StDtype::U64 => Dtype::U64,
        StDtype::I8 => Dtype::I8,
        StDtype::I16 => Dtype::I16,
        StDtype::I32 => Dtype::I32,
        StDtype::I64 => Dtype::I64,
        StDtype::F16 => Dtype::F16,
        StDtype::BF16 => Dtype::BF16,
        StDtype::F32 => Dtype::F32,
        StDtype::F64 => Dtype::F64,
        StDtype::C64 => Dtype::C64,
        // 8-bit floats have no weft dtype: their bytes load as uint8, as
        // in MLX (`from_fp8` decodes them).
        StDtype::F8_E4M3 | StDtype::F8_E5M2 => Dtype::U8,
        other => return Err(Error::Dtype(format!("weft has no dtype for safetensors {other:?}"))),
    })
}

fn st_dtype(d: Dtype) -> StDtype {
    match d {
        Dtype::Bool => StDtype::BOOL,
        Dtype::U8 => StDtype::U8,
        Dtype::U16 => StDtype::U16,
        Dtype::U32 => StDtype::U32,
        Dtype::U64 => StDtype::U64,
        Dtype::I8 => StDtype::I8,
        Dtype::I16 => StDtype::I16,
        Dtype::I32 => StDtype::I32,
        Dtype::I64 => StDtype::I64,
        Dtype::F16 => StDtype::F16,
        Dtype::BF16 => StDtype::BF16,
        Dtype::F32 => StDtype::F32,
        Dtype::F64 => StDtype::F64,
        Dtype::C64 => StDtype::C64,
    }
}

/// The bytes of a safetensors file holding `tensors` (evaluated as needed).
pub fn save_safetensors_bytes<'a>(tensors: impl IntoIterator<Item = (&'a str, &'a Array)>) -> Result<Vec<u8>> {
    save_safetensors_with_metadata(tensors, None)
}

/// The bytes of a safetensors file holding `tensors` and, when given, the
/// string key/values `metadata` (its `__metadata__`).
pub fn save_safetensors_with_metadata<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Array)>,
    metadata: Option<HashMap<String, String>>,
) -> Result<Vec<u8>> {
    let mut owned = Vec::new();
    for (name, a) in tensors {
        owned.push((name.to_string(), a.dtype(), a.shape().to_vec(), super::le_bytes(a)?));
    }
    let views = owned
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(st_dtype(*dtype), shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| Error::Io(format!("tensor {name:?}: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize(views, metadata).map_err(|e| Error::Io(format!("writing safetensors: {e}")))
}

/// Writes `tensors` to a `.safetensors` file.
///
/// ```
/// use weft::{io, Array};
/// let path = std::env::temp_dir().join("weft-doc-example.safetensors");
/// let w = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// io::save_safetensors(&path, [("w", &w)]).unwrap();
/// let back = io::load_safetensors(&path).unwrap();
/// assert_eq!(back["w"].to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
/// # std::fs::remove_file(&path).ok();
/// ```
pub fn save_safetensors<'a>(path: impl AsRef<Path>, tensors: impl IntoIterator<Item = (&'a str, &'a Array)>) -> Result<()> {
    let bytes = save_safetensors_bytes(tensors)?;
    let path = path.as_ref();
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}
