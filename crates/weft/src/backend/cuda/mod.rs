//! The CUDA backend: one file per primitive, named as in `backend/cpu/`.
//!
//! - [`device`]: one context per GPU (the primary context), loaded on first
//!   use; a missing driver is an error, never a panic.
//! - [`memory`]: [`CudaBuffer`], device memory from CUDA's stream-ordered
//!   pool, counted against weft's memory limit; host <-> device copies.
//! - [`kernel`]: CUDA C generated per (kernel, dtypes, layout class),
//!   compiled once with NVRTC and launched on a stream.
//! - [`CudaEncoder`]: one per concrete weft stream. It owns a CUDA stream and
//!   a cuBLAS handle. `run` *enqueues* the kernel and returns at once; the
//!   output buffer remembers its stream, and a reader on another stream (or
//!   the host) waits for it through an event. There is no lock shared by
//!   streams on the dispatch path: each encoder's state is its own.

mod arange;
mod astype;
mod binary;
mod concatenate;
mod copy;
pub(crate) mod device;
mod kernel;
mod matmul;
pub(crate) mod memory;
mod reduce;
mod select;
mod unary;

pub use memory::CudaBuffer;

use super::{Encoder, Ran};
use crate::buffer::{Buffer, Data};
use crate::dtype::Dtype;
use crate::primitive::{OutSpec, Primitive};
use crate::shape::Layout;
use crate::stream::Stream;
use crate::sync::lock;
use crate::{Error, Result};
use device::Gpu;
use memory::StreamHandle;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) use device::check_available;
pub(crate) use memory::to_host;

/// A GPU input as a kernel sees it: a device pointer to the array's first
/// element (the layout's offset applied) and the layout.
pub(crate) struct Operand {
    pub ptr: u64,
    pub layout: Layout,
    pub dtype: Dtype,
}

/// Runs primitives for one concrete weft stream on its own CUDA stream.
pub(crate) struct CudaEncoder {
    gpu: Arc<Gpu>,
    stream: Arc<StreamHandle>,
    /// Used by this encoder's queue only (one task at a time), so the lock
    /// is never contended; it exists because `Encoder::run` takes `&self`.
    state: Mutex<EncoderState>,
}

struct EncoderState {
    /// Kernels this stream has launched, by key: a hit needs no shared lock.
    kernels: HashMap<String, kernel::Function>,
    blas: Option<matmul::Blas>,
}

impl CudaEncoder {
    pub(crate) fn new(stream: Stream) -> Result<CudaEncoder> {
        let gpu = device::gpu(stream.device().index)?;
        let handle = StreamHandle::new(gpu.clone())?;
        Ok(CudaEncoder {
            gpu,
            stream: Arc::new(handle),
            state: Mutex::new(EncoderState { kernels: HashMap::new(), blas: None }),
        })
    }

    /// Makes `data` usable by a kernel on this stream: uploads host data
    /// (once per buffer), and orders this stream after the producer when the
    /// buffer was made on another stream.
    fn operand(&self, data: &Data) -> Result<(Operand, Arc<Buffer>)> {
        let (buffer, layout) = (&data.buffer, data.layout.clone());
        let dtype = buffer.dtype();
        let cuda = match &**buffer {
            Buffer::Cuda(b) => b,
            Buffer::Cpu(c) => {
                let b = memory::mirror(c, &self.stream)?;
                let ptr = b.ptr() + (layout.offset * dtype.size()) as u64;
                self.stream.wait_for(&b)?;
                // The mirror lives as long as the host buffer, which `data`
                // keeps alive until after `after_launch`.
                return Ok((Operand { ptr, layout, dtype }, buffer.clone()));
            }
        };
        if cuda.device() != self.gpu.index {
            return Err(Error::DeviceUnavailable(format!(
                "an input lives on gpu {} but this stream is on gpu {}",
                cuda.device(),
                self.gpu.index
            )));
        }
        self.stream.wait_for(cuda)?;
        let ptr = cuda.ptr() + (layout.offset * dtype.size()) as u64;
        Ok((Operand { ptr, layout, dtype }, buffer.clone()))
    }

    /// Tells each input made on another stream that this stream read it, so
    /// its memory is freed only after this stream has passed the read.
    fn after_launch(&self, inputs: &[Arc<Buffer>]) -> Result<()> {
        for b in inputs {
            let cuda = match &**b {
                Buffer::Cuda(c) => c,
                Buffer::Cpu(c) => match memory::existing_mirror(c) {
                    Some(m) => m,
                    None => continue,
                },
            };
            cuda.record_read(&self.stream)?;
        }
        Ok(())
    }

}

/// A kernel ready to launch on prepared operands.
type Kernel<'p> = Box<dyn FnOnce(&mut kernel::Launcher<'_>, &mut Option<matmul::Blas>, &[Operand]) -> Result<CudaBuffer> + 'p>;

/// Boxes a kernel closure (the bound gives the closure its signature).
fn kern<'p>(
    f: impl FnOnce(&mut kernel::Launcher<'_>, &mut Option<matmul::Blas>, &[Operand]) -> Result<CudaBuffer> + 'p,
) -> Kernel<'p> {
    Box::new(f)
}

/// `prim`'s CUDA kernel, or `None` when this backend has none (the
/// primitive then runs on the host: `backend::run`; docs/gpu.md lists them).
fn kernel_for<'p>(prim: &'p Primitive, out: OutSpec<'p>) -> Option<Kernel<'p>> {
    Some(match prim {
        Primitive::Unary(op) => kern(move |k, _, o| unary::unary(k, *op, &o[0], out)),
        Primitive::Binary(op) => kern(move |k, _, o| binary::binary(k, *op, &o[0], &o[1], out)),
        Primitive::Select => kern(move |k, _, o| select::select(k, &o[0], &o[1], &o[2], out)),
        Primitive::AsType => kern(move |k, _, o| astype::astype(k, &o[0], out)),
        Primitive::Reduce { op, axes } => kern(move |k, _, o| reduce::reduce(k, *op, axes, &o[0], out)),
        Primitive::ArgReduce { op, axis } => kern(move |k, _, o| reduce::arg_reduce(k, *op, *axis, &o[0], out)),
        Primitive::Matmul => kern(move |k, blas, o| matmul::matmul(k, blas, &o[0], &o[1], out)),
        Primitive::Reshape | Primitive::Copy => kern(move |k, _, o| copy::copy(k, &o[0])),
        Primitive::Concatenate { axis } => kern(move |k, _, o| concatenate::concatenate(k, *axis, o, out)),
        Primitive::Arange { start, step } => kern(move |k, _, _| arange::arange(k, *start, *step, out)),
        _ => return None,
    })
}

impl Encoder for CudaEncoder {
    fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Ran> {
        let Some(kernel) = kernel_for(prim, out) else {
            return Ok(Ran::NoKernel(inputs));
        };
        self.gpu.bind()?;
        let mut ops = Vec::with_capacity(inputs.len());
        let mut keep = Vec::with_capacity(inputs.len());
        for d in &inputs {
            let (op, b) = self.operand(d)?;
            ops.push(op);
            keep.push(b);
        }
        let buffer = {
            let mut st = lock(&self.state);
            let EncoderState { kernels, blas } = &mut *st;
            let mut k = kernel::Launcher { gpu: &self.gpu, stream: &self.stream, cache: kernels };
            kernel(&mut k, blas, &ops)?
        };
        if let Err(e) = self.after_launch(&keep) {
            // The kernel may still be reading `keep` (inputs of other
            // streams whose read was not recorded) and writing `buffer`:
            // free none of them before this stream has passed the launch
            // (docs/gpu.md, "Failures"). If even that cannot be known (a
            // sticky device error), leak them rather than free memory a
            // kernel may still touch.
            if self.stream.synchronize().is_err() {
                std::mem::forget(keep);
                std::mem::forget(buffer);
            }
            return Err(e);
        }
        Ok(Ran::Done(Data { buffer: Arc::new(Buffer::Cuda(buffer)), layout: Layout::contiguous(out.shape) }))
    }

    fn synchronize(&self) -> Result<()> {
        self.gpu.bind()?;
        self.stream.synchronize()
    }
}

/// A driver error as a weft error.
pub(crate) fn driver_err(what: &str, e: cudarc::driver::DriverError) -> Error {
    use cudarc::driver::sys::CUresult;
    if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Error::OutOfMemory {
            requested: 0,
            in_use: crate::buffer::active_memory(),
            limit: usize::MAX,
        };
    }
    Error::Kernel(format!("{what}: {e:?}"))
}
