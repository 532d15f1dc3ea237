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

use super::Encoder;
use crate::buffer::{Buffer, Data};
use crate::dtype::Dtype;
use crate::primitive::view::view_layout;
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

    fn launch(&self, prim: &Primitive, ops: &[Operand], out: OutSpec<'_>) -> Result<CudaBuffer> {
        let mut st = lock(&self.state);
        let EncoderState { kernels, blas } = &mut *st;
        let mut k = kernel::Launcher { gpu: &self.gpu, stream: &self.stream, cache: kernels };
        match prim {
            Primitive::Unary(op) => unary::unary(&mut k, *op, &ops[0], out),
            Primitive::Binary(op) => binary::binary(&mut k, *op, &ops[0], &ops[1], out),
            Primitive::Select => select::select(&mut k, &ops[0], &ops[1], &ops[2], out),
            Primitive::AsType => astype::astype(&mut k, &ops[0], out),
            Primitive::Reduce { op, axes } => reduce::reduce(&mut k, *op, axes, &ops[0], out),
            Primitive::ArgReduce { op, axis } => reduce::arg_reduce(&mut k, *op, *axis, &ops[0], out),
            Primitive::Matmul => matmul::matmul(&mut k, blas, &ops[0], &ops[1], out),
            Primitive::Reshape | Primitive::Copy => copy::copy(&mut k, &ops[0]),
            Primitive::Concatenate { axis } => concatenate::concatenate(&mut k, *axis, ops, out),
            Primitive::Arange { start, step } => arange::arange(&mut k, *start, *step, out),
            Primitive::Transpose { .. } | Primitive::BroadcastTo | Primitive::Slice { .. } => {
                unreachable!("views always view")
            }
            _ => unreachable!("{} has no CUDA kernel; run() sends it to the host", prim.name()),
        }
    }
}

impl Encoder for CudaEncoder {
    fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Data> {
        if let Some(layout) = inputs.first().and_then(|i| view_layout(prim, &i.layout, out.shape)) {
            return Ok(Data { buffer: inputs[0].buffer.clone(), layout });
        }
        if !has_kernel(prim) {
            // Primitives without a CUDA kernel yet (the transformer ops) run
            // on the host: the CPU encoder reads GPU inputs back, and GPU
            // consumers upload the result like any host constant.
            return crate::backend::cpu::CpuEncoder.run(prim, inputs, out);
        }
        self.gpu.bind()?;
        let mut ops = Vec::with_capacity(inputs.len());
        let mut keep = Vec::with_capacity(inputs.len());
        for d in &inputs {
            let (op, b) = self.operand(d)?;
            ops.push(op);
            keep.push(b);
        }
        let buffer = self.launch(prim, &ops, out)?;
        self.after_launch(&keep)?;
        Ok(Data { buffer: Arc::new(Buffer::Cuda(buffer)), layout: Layout::contiguous(out.shape) })
    }

    fn synchronize(&self) -> Result<()> {
        self.gpu.bind()?;
        self.stream.synchronize()
    }
}

/// Whether `prim` has a CUDA kernel in this backend.
fn has_kernel(prim: &Primitive) -> bool {
    matches!(
        prim,
        Primitive::Unary(_)
            | Primitive::Binary(_)
            | Primitive::Select
            | Primitive::AsType
            | Primitive::Reduce { .. }
            | Primitive::ArgReduce { .. }
            | Primitive::Matmul
            | Primitive::Reshape
            | Primitive::Copy
            | Primitive::Concatenate { .. }
            | Primitive::Arange { .. }
            | Primitive::Transpose { .. }
            | Primitive::BroadcastTo
            | Primitive::Slice { .. }
    )
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
