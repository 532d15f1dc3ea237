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
mod conv;
mod copy;
pub(crate) mod device;
mod fused;
mod gather;
pub(crate) mod graph;
mod gather_axis;
mod kernel;
mod layer_norm;
mod logsumexp;
mod matmul;
pub(crate) mod memory;
mod quantized;
mod random_bits;
mod reduce;
mod rms_norm;
mod rope;
mod rows;
mod scan;
mod sdpa;
mod select;
mod slice_update;
mod softmax;
mod sort;
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

    /// `SliceUpdate`, in place when `a`'s buffer is this stream's, laid out
    /// as the output and referenced by nothing else (`slice_update.rs`).
    fn slice_update(&self, start: &[usize], step: &[isize], region: &[usize], mut inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Ran> {
        if inputs.len() != 2 {
            return Err(Error::Kernel(format!("SliceUpdate takes 2 inputs, got {}", inputs.len())));
        }
        self.gpu.bind()?;
        let update = inputs.pop().expect("two inputs");
        let mut a = inputs.pop().expect("two inputs");
        let n = crate::shape::numel(out.shape);
        let whole = a.layout.is_contiguous() && a.layout.offset == 0;
        // `get_mut` succeeds only for the last reference (weft keeps no weak
        // ones), so no array or pending task can read the old contents
        // except through the reader events `reuse` waits on.
        let mut in_place = None;
        if whole {
            if let Some(Buffer::Cuda(b)) = Arc::get_mut(&mut a.buffer) {
                if b.is_on(&self.stream) && b.len() == n && b.dtype() == out.dtype {
                    b.reuse()?;
                    in_place = Some(b.ptr());
                }
            }
        }
        let (u, ukeep) = self.operand(&update)?;
        let mut st = lock(&self.state);
        let mut k = kernel::Launcher { gpu: &self.gpu, stream: &self.stream, cache: &mut st.kernels };
        if let Some(ptr) = in_place {
            slice_update::write_region(&mut k, start, step, region, ptr, &u, out)?;
            drop(st);
            self.after_launch(&[ukeep])?;
            return Ok(Ran::Done(Data { buffer: a.buffer, layout: Layout::contiguous(out.shape) }));
        }
        let (src, akeep) = self.operand(&a)?;
        let buf = k.alloc(out.dtype, n)?;
        slice_update::copy_into(&mut k, &src, buf.ptr(), out)?;
        slice_update::write_region(&mut k, start, step, region, buf.ptr(), &u, out)?;
        drop(st);
        self.after_launch(&[akeep, ukeep])?;
        Ok(Ran::Done(Data { buffer: Arc::new(Buffer::Cuda(buf)), layout: Layout::contiguous(out.shape) }))
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

/// `prim`'s CUDA kernel for these inputs, or `None` when this backend has
/// none (the primitive then runs on the host: `backend::run`; docs/gpu.md
/// lists the cases: sorts of rows longer than `sort::MAX_ROW`, attention
/// with head sizes beyond `sdpa::MAX_D`/`MAX_DV`).
fn kernel_for<'p>(prim: &'p Primitive, inputs: &[Data], out: OutSpec<'p>) -> Option<Kernel<'p>> {
    // complex64 has no CUDA kernels yet: every primitive that reads or
    // makes it runs on the host (docs/gpu.md, "Host fallbacks").
    if out.dtype.is_complex() || inputs.iter().any(|d| d.buffer.dtype().is_complex()) {
        return None;
    }
    Some(match prim {
        // A chain with a complex64 step inside runs on the host, as the step would.
        Primitive::Fused(p) if p.steps().iter().any(|s| s.dtype.is_complex()) => return None,
        Primitive::Fused(p) => kern(move |k, _, o| fused::fused(k, p, o, out)),
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
        Primitive::Gather { axis } => kern(move |k, _, o| gather::gather(k, *axis, &o[0], &o[1], out)),
        Primitive::GatherAxis { axis } => kern(move |k, _, o| gather_axis::gather_axis(k, *axis, &o[0], &o[1], out)),
        Primitive::Softmax => kern(move |k, _, o| softmax::softmax(k, &o[0], out)),
        Primitive::LogSumExp => kern(move |k, _, o| logsumexp::logsumexp(k, &o[0], out)),
        Primitive::Scan { op, axis, reverse, inclusive } => {
            kern(move |k, _, o| scan::scan(k, *op, *axis, *reverse, *inclusive, &o[0], out))
        }
        Primitive::Sort | Primitive::ArgSort => {
            // Rows longer than shared memory holds sort on the host.
            if !sort::fits(*out.shape.last().unwrap_or(&1)) {
                return None;
            }
            let indices = matches!(prim, Primitive::ArgSort);
            kern(move |k, _, o| sort::sort(k, &o[0], out, indices))
        }
        Primitive::RandomBits => kern(move |k, _, o| random_bits::random_bits(k, &o[0], out)),
        Primitive::RmsNorm { eps } => kern(move |k, _, o| rms_norm::rms_norm(k, *eps, o, out)),
        Primitive::LayerNorm { eps, has_weight, has_bias } => {
            kern(move |k, _, o| layer_norm::layer_norm(k, *eps, *has_weight, *has_bias, o, out))
        }
        Primitive::Rope(p) => kern(move |k, _, o| rope::rope(k, p, &o[0], out)),
        Primitive::Sdpa { scale, causal } => {
            // Head sizes beyond the kernel's shared memory run on the host.
            let d = inputs.first().and_then(|q| q.layout.shape.get(3)).copied().unwrap_or(0);
            if !sdpa::fits(d, *out.shape.last().unwrap_or(&0)) {
                return None;
            }
            kern(move |k, _, o| sdpa::sdpa(k, *scale, *causal, o, out))
        }
        Primitive::Conv(p) => kern(move |k, _, o| conv::conv(k, p, &o[0], &o[1], out)),
        Primitive::Quantize { group_size, bits } => kern(move |k, _, o| quantized::quantize(k, *group_size, *bits, o, out)),
        Primitive::Dequantize { group_size, bits } => {
            kern(move |k, _, o| quantized::dequantize(k, *group_size, *bits, o, out))
        }
        // With int8 activations: no CUDA kernel (the host computes it).
        Primitive::QuantizedMatmul { group_size, bits, transpose, int8_activations: false } => {
            kern(move |k, _, o| quantized::quantized_matmul(k, *group_size, *bits, *transpose, o, out))
        }
        // complex64 (above): no CUDA kernels. SliceUpdate:
        // `CudaEncoder::slice_update` (it may write in place).
        _ => return None,
    })
}

impl Encoder for CudaEncoder {
    fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Ran> {
        if let Primitive::SliceUpdate { start, step, region } = prim {
            return self.slice_update(start, step, region, inputs, out);
        }
        let Some(kernel) = kernel_for(prim, &inputs, out) else {
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
