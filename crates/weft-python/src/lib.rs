//! `weft.core`: Python bindings with mlx.core's API. Streams and arrays work
//! from any Python thread; the GIL is released while weft evaluates, waits
//! or copies array data.
//!
//! Layout: `array.rs` (the array class), `ops.rs` (module-level ops),
//! `math.rs` and `layout.rs` (the rest of mlx.core's functions),
//! `indexing.rs` (reads, writes, `a.at[...]`), `conv.rs` (convolutions, `as_strided`),
//! `convert.rs` (Python values <-> arrays), `device.rs`
//! (devices and streams), `runtime.rs` (eval, memory), `dtype.rs`,
//! `args.rs` (shared argument types), `errors.rs`, `repr.rs`; the submodules
//! `random.rs` (`weft.core.random`), `fast.rs` (`weft.core.fast`),
//! `linalg.rs` (`weft.core.linalg`) and `fft.rs` (`weft.core.fft`), and
//! `io.rs` (`load`, `save`, `savez`, `save_safetensors`, `save_gguf`),
//! `interop.rs` (buffer protocol, DLPack, `asarray`), `quantized.rs`
//! (quantization ops), `structured_mm.rs` (`gather_mm`, `block_masked_mm`, `segmented_mm`).

mod args;
mod array;
mod conv;
mod convert;
mod device;
mod dtype;
mod errors;
mod fast;
mod fft;
mod indexing;
mod interop;
mod io;
mod linalg;
mod layout;
mod math;
mod ops;
mod quantized;
mod random;
mod repr;
mod runtime;
mod structured_mm;
mod transforms;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "core")]
fn weft_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<array::PyArray>()?;
    m.add_class::<array::ArrayIterator>()?;
    m.add_class::<indexing::ArrayAt>()?;
    m.add_class::<indexing::ArrayAtItem>()?;
    dtype::register(m)?;
    device::register(m)?;
    ops::register(m)?;
    math::register(m)?;
    layout::register(m)?;
    conv::register(m)?;
    runtime::register(m)?;
    io::register(m)?;
    interop::register(m)?;
    random::register(m)?;
    fast::register(m)?;
    linalg::register(m)?;
    fft::register(m)?;
    quantized::register(m)?;
    structured_mm::register(m)?;
    transforms::register(m)?;
    Ok(())
}

/// Adds `sub` as `weft.core.<name>`, also in `sys.modules`, so that
/// `import weft.core.<name>` and `from weft.core import <name>` work.
pub(crate) fn add_submodule(parent: &Bound<'_, PyModule>, sub: &Bound<'_, PyModule>, name: &str) -> PyResult<()> {
    let full = format!("weft.core.{name}");
    sub.setattr("__name__", &full)?;
    parent.add_submodule(sub)?;
    parent.py().import("sys")?.getattr("modules")?.set_item(full, sub)?;
    Ok(())
}
