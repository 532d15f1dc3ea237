//! CUDA graphs: a fixed-shape program (a compiled function's trace,
//! `transforms/compile.rs`) captured once on a private stream and replayed
//! with one `cuGraphLaunch`, so a call costs a few driver calls instead of
//! one host round trip (allocation, launch, bookkeeping) per kernel.
//!
//! A [`CudaGraph`] owns:
//! - a private [`CudaEncoder`] (its own CUDA stream, kernel cache and cuBLAS
//!   handle), outside the stream pool: no other work can land in a capture;
//! - one *input slot* per input: a device buffer each call copies its input
//!   into before the launch;
//! - every buffer the captured kernels write (allocated outside stream order
//!   during the capture: `memory::alloc_fixed`; a kernel's temporary dropped
//!   during the capture keeps its memory in the stream's `captured` list),
//!   and every buffer they read (the constants of the trace), alive for the
//!   graph's life;
//! - the outputs' buffers, which each call copies into fresh buffers after the
//!   launch, so results never alias the graph's memory.
//!
//! Invariants:
//! - Calls are serialized by `call_lock`, held only while the copies and the
//!   launch are *enqueued* (never while they run): the slots are shared, and
//!   stream order on the graph's one stream makes call N's copy-out precede
//!   call N+1's copy-in. No call waits on any other stream's work except
//!   its inputs' producers, through events (docs/architecture.md rule 6).
//! - Nothing the graph references is freed while it may run: `Drop`
//!   synchronizes the stream first, and leaks the buffers if even that fails
//!   (a sticky device error), as the encoder does (docs/gpu.md, "Failures").
//! - Host fallbacks cannot be captured (they read device memory from the
//!   host): a trace with a primitive that has no CUDA kernel here is refused
//!   with an error naming it.

use super::memory::{self, CudaBuffer};
use super::{driver_err, CudaEncoder};
use crate::backend::{Encoder, Ran};
use crate::buffer::{Buffer, Data};
use crate::dtype::Dtype;
use crate::primitive::view::view_layout;
use crate::primitive::{OutSpec, Primitive};
use crate::shape::Layout;
use crate::stream::Stream;
use crate::sync::lock;
use crate::{Error, Result};
use cudarc::driver::sys;
use std::sync::{Arc, Mutex};

/// Runs the primitives of a program being captured (or warmed up) on the
/// graph's encoder.
pub(crate) struct Recorder<'a> {
    enc: &'a CudaEncoder,
}

impl Recorder<'_> {
    /// `prim` of `inputs` on the graph's stream: views answered in place,
    /// and a primitive with no CUDA kernel refused (a host fallback cannot
    /// be part of a graph).
    pub(crate) fn run(&self, prim: &Primitive, inputs: Vec<Data>, out: OutSpec<'_>) -> Result<Data> {
        if let Some(layout) = inputs.first().and_then(|i| view_layout(prim, &i.layout, out.shape)) {
            return Ok(Data { buffer: inputs[0].buffer.clone(), layout });
        }
        match self.enc.run(prim, inputs, out)? {
            Ran::Done(d) => Ok(d),
            Ran::NoKernel(_) => Err(Error::InvalidArgument(format!(
                "{} has no CUDA kernel for these inputs (it would run on the host), so it cannot be captured \
                 in a CUDA graph (docs/gpu.md lists the host fallbacks)",
                prim.name()
            ))),
        }
    }
}

/// The program a graph captures: given the recorder and the input slots,
/// computes the outputs, pushing every value it makes or reads into `keep`.
pub(crate) type Program<'p> = dyn FnMut(&Recorder<'_>, &[Data], &mut Vec<Data>) -> Result<Vec<Data>> + 'p;

/// A captured, instantiated CUDA graph with its input slots and outputs.
pub(crate) struct CudaGraph {
    enc: CudaEncoder,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// Input slots, in input order.
    slots: Vec<Data>,
    /// The outputs as the captured kernels leave them (contiguous).
    outputs: Vec<Data>,
    /// Every buffer the captured kernels read or write.
    keep: Vec<Data>,
    call_lock: Mutex<()>,
}

// SAFETY: the graph and its executable are driver objects usable from any
// thread with the context bound (every method binds it); launches are
// serialized by `call_lock`, and the graph is destroyed only in `Drop`.
unsafe impl Send for CudaGraph {}
// SAFETY: as above; `&self` methods take `call_lock` before touching the
// slots or launching.
unsafe impl Sync for CudaGraph {}

impl CudaGraph {
    /// Captures `program` on a private stream of `device`'s GPU, for inputs
    /// like `examples` (contiguous). The program runs twice: once as usual,
    /// to compile its kernels and check it, then under capture.
    pub(crate) fn capture(device: Stream, examples: &[Data], program: &mut Program<'_>) -> Result<CudaGraph> {
        let enc = CudaEncoder::new(device)?;
        enc.gpu.bind()?;
        let mut slots = Vec::with_capacity(examples.len());
        for x in examples {
            let buf = CudaBuffer::alloc(&enc.stream, x.buffer.dtype(), x.layout.numel())?;
            copy_in(&enc, &buf, x)?;
            slots.push(Data { buffer: Arc::new(Buffer::Cuda(buf)), layout: Layout::contiguous(&x.layout.shape) });
        }
        {
            let mut scratch = Vec::new();
            let outs = program(&Recorder { enc: &enc }, &slots, &mut scratch)?;
            drop(outs);
            drop(scratch);
        }
        enc.stream.synchronize()?;

        let raw = enc.stream.raw();
        // SAFETY: the stream is live and this encoder's alone; relaxed mode
        // lets the capture allocate (`cuMemAlloc`) and wait on host events.
        unsafe { sys::cuStreamBeginCapture_v2(raw, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED) }
            .result()
            .map_err(|e| driver_err("beginning a graph capture", e))?;
        enc.stream.set_capturing(true);
        let mut keep = Vec::new();
        // A panic must not leave the stream capturing: it is caught, the
        // capture ended, and the panic returned as an error.
        let recorded = crate::error::catch_silently(|| {
            let outs = program(&Recorder { enc: &enc }, &slots, &mut keep)?;
            // Outputs are copied out whole on each call: make them
            // contiguous device buffers (a constant output may be a host one).
            outs.into_iter()
                .map(|o| {
                    if o.layout.is_contiguous() && matches!(&*o.buffer, Buffer::Cuda(_)) {
                        return Ok(o);
                    }
                    let shape = o.layout.shape.clone();
                    let dtype = o.buffer.dtype();
                    keep.push(o.clone());
                    Recorder { enc: &enc }.run(&Primitive::Copy, vec![o], OutSpec { shape: &shape, dtype })
                })
                .collect::<Result<Vec<Data>>>()
        });
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: the capture was begun on this stream above; ending it is
        // required whatever happened in between.
        let ended = unsafe { sys::cuStreamEndCapture(raw, &mut graph) }.result();
        enc.stream.set_capturing(false);
        let outputs = match recorded {
            Ok(r) => r,
            Err(p) => Err(Error::Internal(format!(
                "capturing a CUDA graph panicked: {}",
                crate::error::panic_message(&*p)
            ))),
        };
        let destroy = |g: sys::CUgraph| {
            if !g.is_null() {
                // SAFETY: `g` came from cuStreamEndCapture and is destroyed once.
                let _ = unsafe { sys::cuGraphDestroy(g) };
            }
        };
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        let made = match (outputs, ended) {
            (Ok(o), Ok(())) => {
                // SAFETY: `graph` is the complete graph captured above.
                match unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }.result() {
                    Ok(()) => Ok(o),
                    Err(e) => Err(driver_err("instantiating a CUDA graph", e)),
                }
            }
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(driver_err("ending a graph capture", e)),
        };
        let outputs = match made {
            Ok(o) => o,
            Err(e) => {
                destroy(graph);
                // Nothing captured ever ran: the capture's memory is free to go.
                drop(keep);
                enc.stream.free_captured();
                return Err(e);
            }
        };
        Ok(CudaGraph { enc, graph, exec, slots, outputs, keep, call_lock: Mutex::new(()) })
    }

    /// One replay: copies `inputs` (shapes and dtypes of the slots, any
    /// device, contiguous) into the slots, launches the graph and copies the
    /// outputs into fresh buffers, all in order on the graph's stream.
    /// Returns when the work is enqueued.
    pub(crate) fn launch(&self, inputs: &[Data]) -> Result<Vec<Data>> {
        if inputs.len() != self.slots.len() {
            return Err(Error::InvalidArgument(format!("a CUDA graph of {} inputs called with {}", self.slots.len(), inputs.len())));
        }
        let _g = lock(&self.call_lock);
        self.enc.gpu.bind()?;
        for (slot, x) in self.slots.iter().zip(inputs) {
            let Buffer::Cuda(buf) = &*slot.buffer else { unreachable!("slots are device buffers") };
            copy_in(&self.enc, buf, x)?;
        }
        // SAFETY: the executable is live; everything it touches is owned by
        // `self` (kept until `Drop` has synchronized the stream).
        unsafe { sys::cuGraphLaunch(self.exec, self.enc.stream.raw()) }
            .result()
            .map_err(|e| driver_err("launching a CUDA graph", e))?;
        self.outputs
            .iter()
            .map(|o| {
                let (n, dtype) = (o.layout.numel(), o.buffer.dtype());
                let fresh = CudaBuffer::alloc(&self.enc.stream, dtype, n)?;
                let src = device_ptr(o)?;
                memory::copy_device(&self.enc.stream, fresh.ptr(), src, n * dtype.size())?;
                Ok(Data { buffer: Arc::new(Buffer::Cuda(fresh)), layout: Layout::contiguous(&o.layout.shape) })
            })
            .collect()
    }

    /// The outputs' shapes and dtypes.
    pub(crate) fn output_specs(&self) -> Vec<(Vec<usize>, Dtype)> {
        self.outputs.iter().map(|o| (o.layout.shape.clone(), o.buffer.dtype())).collect()
    }

    /// How many buffers the graph holds (slots, intermediates, constants).
    pub(crate) fn buffers(&self) -> usize {
        self.slots.len() + self.outputs.len() + self.keep.len()
    }
}

/// The device address of `d`'s first element (a device buffer).
fn device_ptr(d: &Data) -> Result<u64> {
    match &*d.buffer {
        Buffer::Cuda(b) => Ok(b.ptr() + (d.layout.offset * b.dtype().size()) as u64),
        Buffer::Cpu(_) => Err(Error::Internal("a captured output on the host".into())),
    }
}

/// Copies `x` (contiguous, `slot`'s element count and dtype) into `slot` on
/// the encoder's stream, after `x`'s producer.
fn copy_in(enc: &CudaEncoder, slot: &CudaBuffer, x: &Data) -> Result<()> {
    if !x.layout.is_contiguous() || x.layout.numel() != slot.len() || x.buffer.dtype() != slot.dtype() {
        return Err(Error::Internal("a CUDA graph input does not fit its slot".into()));
    }
    let (op, keep) = enc.operand(x)?;
    memory::copy_device(&enc.stream, slot.ptr(), op.ptr, slot.len() * slot.dtype().size())?;
    enc.after_launch(&[keep])
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let synced = self.enc.gpu.bind().is_ok() && self.enc.stream.synchronize().is_ok();
        // SAFETY: created in `capture`, destroyed once; no launch is pending
        // (synchronized above) or, if that failed, the driver keeps what a
        // pending launch needs until it completes.
        unsafe {
            let _ = sys::cuGraphExecDestroy(self.exec);
            let _ = sys::cuGraphDestroy(self.graph);
        }
        let (slots, outputs, keep) = (std::mem::take(&mut self.slots), std::mem::take(&mut self.outputs), std::mem::take(&mut self.keep));
        if !synced {
            // A kernel may still touch these: leak them rather than free
            // memory in use (docs/gpu.md, "Failures").
            std::mem::forget((slots, outputs, keep));
            self.enc.stream.leak_captured();
            return;
        }
        // Dropping the captured buffers hands their memory to the stream's
        // list; then all of it is freed at once.
        drop((slots, outputs, keep));
        self.enc.stream.free_captured();
    }
}
