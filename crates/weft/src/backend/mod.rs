//! Backends run primitives. Each concrete stream owns an [`Encoder`] for its
//! device; a primitive's kernel is found under the same name in each backend
//! (`backend/cpu/matmul.rs`, `backend/cuda/matmul.rs`, ...).

pub mod cpu;
pub mod cuda;

use crate::buffer::Data;
use crate::device::{Device, DeviceType};
use crate::primitive::view::view_layout;
use crate::primitive::{OutSpec, Primitive};
use crate::stream::Stream;
use crate::{Error, Result};

/// What an encoder did with a primitive.
pub(crate) enum Ran {
    /// The output.
    Done(Data),
    /// This backend has no kernel for the primitive; the inputs come back
    /// untouched, and [`run`] computes it on the host.
    NoKernel(Vec<Data>),
}

/// Runs primitives for one concrete stream. Called by that stream's queue
/// only (through [`run`]), one task at a time, in FIFO order: an encoder
/// never sees two tasks at once, so per-stream state needs no process-wide
/// lock.
pub(crate) trait Encoder: Send + Sync {
    /// Computes `prim` of `inputs` (already complete), or answers
    /// [`Ran::NoKernel`]. Views never reach an encoder: [`run`] answers them.
    /// `inputs` are owned: a kernel may reuse a buffer that nothing else
    /// references (`Arc::try_unwrap` on it succeeds).
    fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Ran>;

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

/// Computes `prim` of `inputs` for a stream whose encoder is `encoder`: the
/// one place that answers views (the output shares its input's buffer under
/// a new layout, on every backend) and that sends a primitive a backend has
/// no kernel for to the host (the CPU encoder reads device inputs back;
/// device consumers upload the result like any host array).
pub(crate) fn run(encoder: &dyn Encoder, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Data> {
    if let Some(layout) = inputs.first().and_then(|i| view_layout(prim, &i.layout, out.shape)) {
        return Ok(Data { buffer: inputs[0].buffer.clone(), layout });
    }
    let inputs = match encoder.run(prim, inputs, out)? {
        Ran::Done(d) => return Ok(d),
        Ran::NoKernel(inputs) => inputs,
    };
    match cpu::CpuEncoder.run(prim, inputs, out)? {
        Ran::Done(d) => Ok(d),
        Ran::NoKernel(_) => Err(Error::Kernel(format!("no backend has a kernel for {}", prim.name()))),
    }
}

pub(crate) fn new_encoder(stream: Stream) -> Result<Box<dyn Encoder>> {
    match stream.device().kind {
        DeviceType::Cpu => Ok(Box::new(cpu::CpuEncoder)),
        DeviceType::Gpu => Ok(Box::new(cuda::CudaEncoder::new(stream)?)),
    }
}
