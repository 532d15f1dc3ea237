//! Reading GGUF files (llama.cpp's model format, versions 2 and 3): the
//! metadata key/values, the tensor directory, and tensors dequantized into
//! [`Array`]s.
//!
//! A file is: the magic `GGUF`, a `u32` version, a `u64` tensor count, a
//! `u64` metadata count; the metadata (key string, `u32` value type, value);
//! the tensor infos (name, `u32` rank, `u64` dims innermost first, `u32`
//! ggml type, `u64` offset); padding to `general.alignment` (32 when
//! absent); then the tensor data, each tensor at its offset from there.
//! Everything is little-endian; a string is a `u64` length and UTF-8 bytes.
//!
//! Every count and length is checked against the bytes that remain before
//! anything is allocated, so a corrupt or truncated file is an
//! [`Error::Io`] saying what is wrong, never a panic or a huge allocation.
//!
//! ```no_run
//! let file = weft::io::gguf::Gguf::open("model.gguf").unwrap();
//! println!("{:?}", file.get_str("general.architecture"));
//! let w = file.tensor("token_embd.weight", weft::Dtype::F32).unwrap();
//! println!("{:?}", w.shape()); // [vocab, hidden]: dims reversed, outermost first
//! ```

mod quant;
mod write;

pub use quant::{quantize_blocks, GgmlType};
pub use write::{save_gguf, save_gguf_blocks, save_gguf_bytes, Blocks};

use crate::buffer::CpuBuffer;
use crate::ops::QuantizedMatrix;
use crate::{Array, Dtype, Error, Result};
use half::{bf16, f16};
use std::collections::HashMap;
use std::path::Path;

/// Alignment of the data section and of each tensor when the file does not say.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The highest tensor rank read: ggml's own tensors have at most 4 dims,
/// but GGUF does not limit them and MLX writes arrays of any rank.
const MAX_DIMS: u32 = crate::shape::MAX_NDIM as u32;
/// Arrays nested deeper than this are rejected (no real file nests at all).
const MAX_NESTING: usize = 8;

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// The element type's number, and the elements.
    Array(u32, Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// Any integer value that fits a `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any numeric value, as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            Value::I8(v) => Some(v.into()),
            Value::I16(v) => Some(v.into()),
            Value::I32(v) => Some(v.into()),
            Value::I64(v) => Some(v as f64),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(_, v) => Some(v),
            _ => None,
        }
    }
}

/// One entry of the tensor directory.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// Dimensions as GGUF stores them: innermost (fastest varying) first.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Offset from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// The array shape weft gives the tensor: `dims` reversed (row-major,
    /// outermost first), so a `[in, out]` GGUF matrix is a `[out, in]` array.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    pub fn numel(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Bytes of data, when the type's layout is known.
    pub fn nbytes(&self) -> Option<u64> {
        let (block, bytes) = self.ty.block()?;
        Some(self.numel() / block as u64 * bytes as u64)
    }
}

/// A parsed GGUF file: its metadata and tensor directory, with the file's
/// bytes kept to dequantize tensors from.
pub struct Gguf {
    version: u32,
    metadata: Vec<(String, Value)>,
    index: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
    alignment: u64,
    data_start: u64,
    bytes: Vec<u8>,
    origin: String,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Gguf({}, v{}, {} metadata, {} tensors)",
            self.origin,
            self.version,
            self.metadata.len(),
            self.tensors.len()
        )
    }
}

/// Reads little-endian fields from a byte slice; running past the end is an error.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    origin: &'a str,
}

impl<'a> Cursor<'a> {
    fn err(&self, what: impl std::fmt::Display) -> Error {
        Error::Io(format!("{}: not a valid GGUF file: {what} (at byte {})", self.origin, self.pos))
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.err(format_args!("{what} needs {n} bytes, {} remain", self.remaining())));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let b = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count of items each at least `min_bytes` long: larger than the
    /// remaining bytes can hold is an error, before anything is allocated.
    fn count(&mut self, what: &str, min_bytes: usize) -> Result<usize> {
        let n = self.u64(what)?;
        let fits = (self.remaining() / min_bytes.max(1)) as u64;
        if n > fits {
            return Err(self.err(format_args!("{what} is {n}, but {} bytes remain", self.remaining())));
        }
        Ok(n as usize)
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let n = self.count(what, 1)?;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.err(format_args!("{what} is not UTF-8")))
    }

    /// The smallest encoding of a value of type `ty` (to bound array counts).
    fn min_size(ty: u32) -> Option<usize> {
        Some(match ty {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4 | 5 | 6 => 4,
            10..=12 => 8,
            8 => 8,  // string: its length
            9 => 12, // array: element type and count
            _ => return None,
        })
    }

    fn value(&mut self, ty: u32, depth: usize) -> Result<Value> {
        Ok(match ty {
            0 => Value::U8(self.array::<1>("u8")?[0]),
            1 => Value::I8(self.array::<1>("i8")?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array("u16")?)),
            3 => Value::I16(i16::from_le_bytes(self.array("i16")?)),
            4 => Value::U32(self.u32("u32")?),
            5 => Value::I32(i32::from_le_bytes(self.array("i32")?)),
            6 => Value::F32(f32::from_le_bytes(self.array("f32")?)),
            7 => match self.array::<1>("bool")?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(self.err(format_args!("bool byte {b} is neither 0 nor 1"))),
            },
            8 => Value::String(self.string("string length")?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(self.err("arrays nested too deeply"));
                }
                let ety = self.u32("array element type")?;
                let Some(min) = Self::min_size(ety) else {
                    return Err(self.err(format_args!("unknown array element type {ety}")));
                };
                let n = self.count("array length", min)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(ety, depth + 1)?);
                }
                Value::Array(ety, items)
            }
            10 => Value::U64(self.u64("u64")?),
            11 => Value::I64(i64::from_le_bytes(self.array("i64")?)),
            12 => Value::F64(f64::from_le_bytes(self.array("f64")?)),
            t => return Err(self.err(format_args!("unknown metadata value type {t}"))),
        })
    }
}

impl Gguf {
    /// Reads and parses the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Gguf> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| Error::Io(format!("{origin}: {e}")))?;
        Gguf::parse(bytes, &origin)
    }

    /// Parses a whole GGUF file held in memory; `origin` names it in errors.
    pub fn parse(bytes: Vec<u8>, origin: &str) -> Result<Gguf> {
        let mut c = Cursor { bytes: &bytes, pos: 0, origin };
        let magic = c.array::<4>("the magic")?;
        if &magic != b"GGUF" {
            return Err(c.err(format_args!("the magic is {magic:?}, not \"GGUF\"")));
        }
        let version = c.u32("the version")?;
        match version {
            2 | 3 => {}
            1 => return Err(c.err("version 1 files are not supported (convert them to version 3)")),
            v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
                return Err(c.err("big-endian files are not supported"))
            }
            v => return Err(c.err(format_args!("unknown version {v}"))),
        }
        // Each tensor info takes at least 8 + 4 + 4 + 8 bytes; each key/value 8 + 4 + 1.
        let n_tensors = c.count("the tensor count", 24)?;
        let n_kv = c.count("the metadata count", 13)?;
        let mut metadata = Vec::with_capacity(n_kv);
        let mut index = HashMap::with_capacity(n_kv);
        for _ in 0..n_kv {
            let key = c.string("a metadata key length")?;
            let ty = c.u32("a metadata value type")?;
            let value = c.value(ty, 0)?;
            if index.insert(key.clone(), metadata.len()).is_some() {
                return Err(c.err(format_args!("metadata key {key:?} appears twice")));
            }
            metadata.push((key, value));
        }
        let alignment = match index.get("general.alignment").map(|&i| &metadata[i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(Value::U32(a)) if *a > 0 && a.is_power_of_two() => u64::from(*a),
            Some(v) => return Err(c.err(format_args!("general.alignment is {v:?}, not a power of two u32"))),
        };
        let mut tensors = Vec::with_capacity(n_tensors);
        let mut tensor_index = HashMap::with_capacity(n_tensors);
        for _ in 0..n_tensors {
            let name = c.string("a tensor name length")?;
            let n_dims = c.u32("a tensor rank")?;
            if n_dims > MAX_DIMS {
                return Err(c.err(format_args!("tensor {name:?} has rank {n_dims}, more than {MAX_DIMS}")));
            }
            let dims = (0..n_dims).map(|_| c.u64("a tensor dimension")).collect::<Result<Vec<_>>>()?;
            let ty = GgmlType::from_u32(c.u32("a tensor type")?);
            let offset = c.u64("a tensor offset")?;
            if offset % alignment != 0 {
                return Err(c.err(format_args!("tensor {name:?} offset {offset} is not a multiple of {alignment}")));
            }
            let info = TensorInfo { name, dims, ty, offset };
            if tensor_index.insert(info.name.clone(), tensors.len()).is_some() {
                return Err(c.err(format_args!("tensor {:?} appears twice", info.name)));
            }
            tensors.push(info);
        }
        let data_start = (c.pos as u64).next_multiple_of(alignment);
        let len = bytes.len() as u64;
        for t in &tensors {
            let numel = t.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
            let Some(numel) = numel.filter(|&n| n <= len.saturating_mul(8)) else {
                return Err(c.err(format_args!("tensor {:?} dims {:?} are absurd", t.name, t.dims)));
            };
            let Some((block, block_bytes)) = t.ty.block() else { continue };
            if t.dims.first().copied().unwrap_or(1) % block as u64 != 0 {
                return Err(c.err(format_args!(
                    "tensor {:?} ({}) innermost dimension {:?} is not a multiple of the block size {block}",
                    t.name,
                    t.ty.name(),
                    t.dims.first()
                )));
            }
            let nbytes = numel / block as u64 * block_bytes as u64;
            let end = data_start.checked_add(t.offset).and_then(|s| s.checked_add(nbytes));
            if end.is_none_or(|e| e > len) {
                return Err(c.err(format_args!(
                    "tensor {:?} ({} bytes at offset {}) runs past the end of the file ({len} bytes)",
                    t.name, nbytes, t.offset
                )));
            }
        }
        Ok(Gguf {
            version,
            metadata,
            index,
            tensors,
            tensor_index,
            alignment,
            data_start,
            origin: origin.to_string(),
            bytes,
        })
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Where the data section starts in the file.
    pub fn data_start(&self) -> u64 {
        self.data_start
    }

    /// The key/values, in file order.
    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.index.get(key).map(|&i| &self.metadata[i].1)
    }

    fn missing(&self, key: &str, what: &str) -> Error {
        Error::Io(format!("{}: metadata {key:?} is missing or not {what}", self.origin))
    }

    /// A string value, or an error naming the key.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        self.get(key).and_then(Value::as_str).ok_or_else(|| self.missing(key, "a string"))
    }

    /// An integer value, or an error naming the key.
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        self.get(key).and_then(Value::as_u64).ok_or_else(|| self.missing(key, "a non-negative integer"))
    }

    /// A numeric value, or an error naming the key.
    pub fn get_f64(&self, key: &str) -> Result<f64> {
        self.get(key).and_then(Value::as_f64).ok_or_else(|| self.missing(key, "a number"))
    }

    /// An array of strings, or an error naming the key.
    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>> {
        self.get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            .ok_or_else(|| self.missing(key, "an array of strings"))
    }

    /// The tensor directory, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// The raw bytes of a tensor (checked to lie in the file when parsed).
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let t = self.info_or_err(name)?;
        let Some(n) = t.nbytes() else {
            return Err(Error::Io(format!("{}: tensor {name:?} has type {}, whose layout weft does not know", self.origin, t.ty.name())));
        };
        let start = (self.data_start + t.offset) as usize;
        Ok(&self.bytes[start..start + n as usize])
    }

    fn info_or_err(&self, name: &str) -> Result<&TensorInfo> {
        self.tensor_info(name).ok_or_else(|| Error::Io(format!("{}: no tensor named {name:?}", self.origin)))
    }

    /// The tensor `name` as an array of its own type: float32, float16,
    /// bfloat16, float64 and the signed integers (GGML's `I8` .. `I64`)
    /// keep their dtype; the quantized types weft reads (`Q4_0`, `Q4_1`,
    /// `Q8_0`) are dequantized to float16, as MLX does for quantized
    /// formats it does not keep packed.
    pub fn array(&self, name: &str) -> Result<Array> {
        let t = self.info_or_err(name)?;
        let native = match t.ty {
            GgmlType::F32 => Some(Dtype::F32),
            GgmlType::F16 => Some(Dtype::F16),
            GgmlType::BF16 => Some(Dtype::BF16),
            GgmlType::Other(24) => Some(Dtype::I8),
            GgmlType::Other(25) => Some(Dtype::I16),
            GgmlType::Other(26) => Some(Dtype::I32),
            GgmlType::Other(27) => Some(Dtype::I64),
            GgmlType::Other(28) => Some(Dtype::F64),
            _ => None,
        };
        match native {
            Some(dtype) => super::from_bytes(self.tensor_bytes(name)?, dtype, &t.shape(), false),
            None => self.tensor(name, Dtype::F16),
        }
    }

    /// The 2-D tensor `name` kept quantized: a `Q4_0`, `Q4_1` or `Q8_0`
    /// tensor repacked losslessly into MLX's affine layout (group size 32,
    /// 4 or 8 bits, float16 scales and biases; see `quant::to_affine`), or a
    /// `Q4_K` (4 bits) or `Q5_K` (its 5-bit codes as 8 bits) tensor, with
    /// float32 scales and biases (`quant::k_to_affine`), so that
    /// `weft::ops::quantized_matmul` reads its codes directly and it is
    /// never expanded in memory. `None` for the types that are not block
    /// quantized that way (floats, and `Q6_K`, whose 16-element groups the
    /// affine kernels do not take: [`Gguf::tensor`] expands it).
    pub fn quantized(&self, name: &str) -> Result<Option<QuantizedMatrix>> {
        let t = self.info_or_err(name)?;
        let shape = t.shape();
        if shape.len() != 2 {
            return Ok(None);
        }
        let (rows, cols) = (shape[0], shape[1]);
        match t.ty {
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0 => quant::to_affine(t.ty, self.tensor_bytes(name)?).map(|a| a.matrix(rows, cols)),
            GgmlType::Q4_K | GgmlType::Q5_K => quant::k_to_affine(t.ty, self.tensor_bytes(name)?).map(|a| a.matrix(rows, cols)),
            _ => None,
        }
        .transpose()
    }

    /// The tensor `name` dequantized to `dtype` (`F32`, `F16` or `BF16`),
    /// with its dims reversed into a row-major shape ([`TensorInfo::shape`]).
    pub fn tensor(&self, name: &str, dtype: Dtype) -> Result<Array> {
        let t = self.info_or_err(name)?;
        if !t.ty.is_supported() {
            return Err(Error::Dtype(format!("tensor {name:?} has type {}, which weft cannot dequantize", t.ty.name())));
        }
        let bytes = self.tensor_bytes(name)?;
        let n = t.numel() as usize;
        let shape = t.shape();
        let mut f32s = Vec::new();
        f32s.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
            requested: n * 4,
            in_use: crate::active_memory(),
            limit: usize::MAX,
        })?;
        f32s.resize(n, 0.0f32);
        quant::dequantize(t.ty, bytes, &mut f32s);
        let buffer = match dtype {
            Dtype::F32 => CpuBuffer::from_vec(f32s)?,
            Dtype::F16 => CpuBuffer::from_vec(f32s.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>())?,
            Dtype::BF16 => CpuBuffer::from_vec(f32s.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())?,
            d => return Err(Error::Dtype(format!("GGUF tensors dequantize to float32, float16 or bfloat16, not {d}"))),
        };
        Ok(Array::from_data(crate::buffer::Data::cpu(buffer, &shape), dtype))
    }
}

impl<S: crate::buffer::CpuElement> quant::Affine<S> {
    /// The repacked `rows x cols` matrix as weft's affine quantized matrix
    /// (group size 32).
    fn matrix(self, rows: usize, cols: usize) -> Result<QuantizedMatrix> {
        let words = Array::from_vec(self.codes, &[rows, cols * self.bits as usize / 32])?;
        let scales = Array::from_vec(self.scales, &[rows, cols / 32])?;
        let biases = Array::from_vec(self.biases, &[rows, cols / 32])?;
        QuantizedMatrix::new(words, scales, biases, 32, self.bits)
    }
}
