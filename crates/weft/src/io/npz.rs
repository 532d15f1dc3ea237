//! NumPy's `.npz` format: a zip archive of `.npy` files, one per array,
//! named `<name>.npy`; stored ([`to_bytes`] with `compressed = false`, as
//! `numpy.savez`) or deflated (`numpy.savez_compressed`).
//!
//! A corrupt archive, or a corrupt member, is an [`Error::Io`] naming the
//! file and the member. A member's declared size is reserved against the
//! memory limit before it is inflated.
//!
//! ```
//! use weft::{io::npz, Array};
//! let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
//! let bytes = npz::to_bytes([("a", &a)], true).unwrap();
//! let back = npz::from_bytes(&bytes, "<bytes>").unwrap();
//! assert_eq!(back[0].0, "a");
//! assert_eq!(back[0].1.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
//! ```

use super::{corrupt, npy};
use crate::buffer::Reservation;
use crate::{Array, Error, Result};
use std::io::{Cursor, Read, Write};
use std::path::Path;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

/// The bytes of an `.npz` archive holding `arrays` (evaluated as needed),
/// in the order given; deflated when `compressed`.
pub fn to_bytes<'a>(arrays: impl IntoIterator<Item = (&'a str, &'a Array)>, compressed: bool) -> Result<Vec<u8>> {
    let err = |e: &dyn std::fmt::Display| Error::Io(format!("writing an npz archive: {e}"));
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let method = if compressed { CompressionMethod::Deflated } else { CompressionMethod::Stored };
    for (name, a) in arrays {
        let member = npy::to_bytes(a)?;
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .large_file(member.len() as u64 >= u32::MAX as u64);
        zip.start_file(format!("{name}.npy"), options).map_err(|e| err(&e))?;
        zip.write_all(&member).map_err(|e| err(&e))?;
    }
    Ok(zip.finish().map_err(|e| err(&e))?.into_inner())
}

/// Writes `arrays` to an `.npz` file at `path` (the name is used as given).
pub fn save<'a>(path: impl AsRef<Path>, arrays: impl IntoIterator<Item = (&'a str, &'a Array)>, compressed: bool) -> Result<()> {
    let path = path.as_ref();
    let bytes = to_bytes(arrays, compressed)?;
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Reads the `.npz` file at `path`: its arrays, by name, in archive order.
pub fn load(path: impl AsRef<Path>) -> Result<Vec<(String, Array)>> {
    let path = path.as_ref();
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Io(format!("{origin}: {e}")))?;
    from_bytes(&bytes, &origin)
}

/// Reads an `.npz` archive held in memory; `origin` names it in errors.
/// Members whose names do not end in `.npy` are skipped, as NumPy's
/// loader does not make arrays of them either.
pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Vec<(String, Array)>> {
    let bad = |what: &dyn std::fmt::Display| corrupt(origin, "npz", what);
    let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(|e| bad(&e))?;
    let mut out = Vec::with_capacity(zip.len());
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(|e| bad(&e))?;
        let name = member.name().map_err(|e| bad(&e))?.into_owned();
        let Some(stem) = name.strip_suffix(".npy") else { continue };
        let size = member.size();
        let Ok(size) = usize::try_from(size) else {
            return Err(bad(&format_args!("member {name:?} declares {size} bytes")));
        };
        // The declared size is held against the memory limit while the
        // member is inflated, and at most that much is read.
        let _reserved = Reservation::new(size)?;
        let mut data = Vec::new();
        data.try_reserve_exact(size).map_err(|_| Error::OutOfMemory {
            requested: size,
            in_use: crate::active_memory(),
            limit: usize::MAX,
        })?;
        (&mut member).take(size as u64).read_to_end(&mut data).map_err(|e| bad(&format_args!("member {name:?}: {e}")))?;
        let member_origin = format!("{origin} (member {name:?})");
        out.push((stem.to_string(), npy::from_bytes(&data, &member_origin)?));
    }
    Ok(out)
}
