//! # weft
//!
//! Lazy arrays with MLX's programming model (primitives, `eval`,
//! `async_eval`, devices and streams) whose streams and arrays work from any
//! thread: build a graph on one thread, evaluate it on another, feed one
//! stream from many threads, evaluate one graph from several at once.
//!
//! ```
//! use weft::{ops, Array, Device, Stream};
//! let s = Stream::new(Device::cpu()).unwrap();
//! let x = weft::with_stream(s, || ops::arange(0.0, 4.0, 1.0, weft::Dtype::F32)).unwrap();
//! let y = std::thread::spawn(move || (&x * &x).unwrap().to_vec::<f32>().unwrap())
//!     .join()
//!     .unwrap();
//! assert_eq!(y, vec![0.0, 1.0, 4.0, 9.0]);
//! ```
//!
//! Layout: `ops/` builds graphs, `primitive/` names what nodes compute,
//! `backend/cpu` runs them, `scheduler/` decides when, `stream.rs` says where.

pub mod array;
pub mod backend;
pub mod buffer;
mod complex;
pub mod device;
pub mod dot;
pub mod dtype;
pub mod io;
mod error;
pub mod ops;
pub mod primitive;
pub mod scheduler;
pub mod shape;
pub mod stream;
mod sync;
pub mod transforms;

pub use array::Array;
/// The `half` crate, whose `f16`/`bf16` are weft's 16-bit float elements.
pub use half;
pub use ops::{fast, linalg, random};
pub use buffer::{active_memory, peak_memory, release_free_memory, reset_peak_memory, set_memory_limit};
pub use device::{default_device, set_default_device, Device, DeviceType};
pub use complex::Complex64;
pub use dtype::Dtype;
pub use shape::Axes;
pub use error::{catch_panic, Error, Result};
pub use scheduler::{async_eval, eval, kernels_run, set_max_in_flight};
pub use scheduler::warm::{warmers, Warmers};
pub use stream::{
    current_stream, default_stream, set_default_stream, set_stream_pool_size, synchronize,
    synchronize_all, with_stream, Stream, StreamGuard,
};
