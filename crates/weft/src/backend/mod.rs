//! Backends run primitives. Each concrete stream owns an [`Encoder`] for its
//! device; a primitive's kernel is found under the same name in each backend
//! (`backend/cpu/matmul.rs`, `backend/cuda/matmul.rs`, ...).

pub mod cpu;
pub mod cuda;

use crate::buffer::Data;
use crate::device::{Device, DeviceType};
use crate::primitive::{OutSpec, Primitive};
use crate::stream::Stream;
use crate::{Error, Result};

/// Runs primitives for one concrete stream. Called by that stream's queue
/// only, one task at a time, in FIFO order: an encoder never sees two tasks
/// at once, so per-stream state needs no process-wide lock.
pub(crate) trait Encoder: Send + Sync {
    /// Computes `prim` of `inputs` (already complete, on this device).
    /// `inputs` are owned: a kernel may reuse a buffer that nothing else
    /// references (`Arc::try_unwrap` on it succeeds).
    fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Data>;

    /// Waits for device work this encoder started (a no-op on the CPU,
    /// where `run` returns when the work is done).
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

/// Fails with a clear error if `device` cannot be used in this process.
pub fn check_available(device: Device) -> Result<()> {
    match device.kind {
        DeviceType::Cpu => Ok(()),
        DeviceType::Gpu => cuda::check_available(device).map_err(|e| match e {
            Error::DeviceUnavailable(m) => Error::DeviceUnavailable(format!("{device}: {m}")),
            e => Error::DeviceUnavailable(format!("{device}: {e}")),
        }),
    }
}

/// `data` with its elements in host memory (a copy for device data;
/// waits for the kernel that wrote it). Callable from any thread.
pub(crate) fn host_data(data: &Data) -> Result<Data> {
    cuda::to_host(data)
}

pub(crate) fn new_encoder(stream: Stream) -> Result<Box<dyn Encoder>> {
    match stream.device().kind {
        DeviceType::Cpu => Ok(Box::new(cpu::CpuEncoder)),
        DeviceType::Gpu => Ok(Box::new(cuda::CudaEncoder::new(stream)?)),
    }
}
