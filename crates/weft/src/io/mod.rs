//! Array files: NumPy's `.npy` and `.npz` ([`npy`], [`npz`]), `safetensors`
//! ([`load_safetensors`], [`save_safetensors`], with their metadata) and GGUF
//! ([`gguf`]: reading model files, writing arrays and metadata). Readers sit
//! above the core: they build arrays through the public API and return
//! errors for corrupt input, never panic.

pub mod gguf;
pub mod npy;
pub mod npz;
mod safetensors;

pub use self::safetensors::{
    load_safetensors, load_safetensors_bytes, load_safetensors_bytes_with_metadata, load_safetensors_with_metadata,
    save_safetensors, save_safetensors_bytes, save_safetensors_with_metadata, TensorsAndMetadata,
};

use crate::buffer::CpuElement;
use crate::dtype::Dtype;
use crate::{Array, Error, Result};
use half::{bf16, f16};

/// Little-endian bytes of `a`'s elements in row-major order (evaluating it).
pub(crate) fn le_bytes(a: &Array) -> Result<Vec<u8>> {
    fn le<T: CpuElement, const N: usize>(a: &Array, f: impl Fn(T) -> [u8; N]) -> Result<Vec<u8>> {
        Ok(a.to_vec::<T>()?.into_iter().flat_map(f).collect())
    }
    match a.dtype() {
        Dtype::Bool => le(a, |b: bool| [b as u8]),
        Dtype::U8 => le(a, |b: u8| [b]),
        Dtype::U16 => le(a, u16::to_le_bytes),
        Dtype::U32 => le(a, u32::to_le_bytes),
        Dtype::U64 => le(a, u64::to_le_bytes),
        Dtype::I8 => le(a, i8::to_le_bytes),
        Dtype::I16 => le(a, i16::to_le_bytes),
        Dtype::I32 => le(a, i32::to_le_bytes),
        Dtype::I64 => le(a, i64::to_le_bytes),
        Dtype::F16 => le(a, |x: f16| x.to_bits().to_le_bytes()),
        Dtype::BF16 => le(a, |x: bf16| x.to_bits().to_le_bytes()),
        Dtype::F32 => le(a, f32::to_le_bytes),
        Dtype::F64 => le(a, f64::to_le_bytes),
        Dtype::C64 => le(a, |z: crate::Complex64| {
            let (re, im) = (z.re().to_le_bytes(), z.im().to_le_bytes());
            [re[0], re[1], re[2], re[3], im[0], im[1], im[2], im[3]]
        }),
    }
}

/// An array of `dtype` and `shape` from its elements' bytes in row-major
/// order, little-endian (`big_endian` false) or big-endian. The byte count
/// must match the shape; the copy is reserved against the memory limit.
pub(crate) fn from_bytes(bytes: &[u8], dtype: Dtype, shape: &[usize], big_endian: bool) -> Result<Array> {
    // A complex element is two floats, each swapped on its own.
    let size = if dtype.is_complex() { dtype.size() / 2 } else { dtype.size() };
    if big_endian == cfg!(target_endian = "big") || size == 1 {
        return Array::from_bytes(bytes, dtype, shape);
    }
    let mut swapped = bytes.to_vec();
    for chunk in swapped.chunks_exact_mut(size) {
        chunk.reverse();
    }
    Array::from_bytes(&swapped, dtype, shape)
}

/// `Error::Io` naming what was read (`origin`) and the format it is not.
pub(crate) fn corrupt(origin: &str, format: &str, what: impl std::fmt::Display) -> Error {
    Error::Io(format!("{origin}: not a valid {format} file: {what}"))
}
