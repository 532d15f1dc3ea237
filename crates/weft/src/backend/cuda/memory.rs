//! Device memory and the events that order it across streams.
//!
//! A [`CudaBuffer`] is allocated with `cuMemAllocAsync` on the stream of the
//! kernel that writes it (its *producer*) and freed with `cuMemFreeAsync` on
//! that same stream. Rules that keep this sound when other streams and the
//! host read it:
//! - A reader on another stream first makes its stream wait on an event
//!   recorded on the producer after the write ([`StreamHandle::wait_for`]).
//!   The event is recorded lazily, on the first foreign read: recording later
//!   than the write only waits for more, never for less.
//! - After its kernel, the reader records an event on its own stream and
//!   leaves it with the buffer ([`CudaBuffer::record_read`]); the free waits
//!   on those events, so memory is never reused while another stream may
//!   still read it. One event per reader stream is kept (a later record on
//!   the same stream covers the earlier ones).
//! - The host waits on the producer's event before copying out.

use super::device::Gpu;
use super::driver_err;
use crate::buffer::{active_memory, CpuBuffer, CpuData, Data, Reservation};
use crate::dtype::Dtype;
use crate::sync::lock;
use crate::{Error, Result};
use cudarc::driver::{result, sys};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// A CUDA stream owned by one encoder (destroyed when the last buffer made
/// on it is gone).
pub(crate) struct StreamHandle {
    gpu: Arc<Gpu>,
    raw: sys::CUstream,
    /// Set while a CUDA graph is being captured on this stream
    /// (`graph.rs`). Then buffers are allocated outside the stream's order
    /// (`cuMemAlloc`, owned by the graph), foreign producers are waited on
    /// from the host rather than through a stream wait on an event recorded
    /// outside the capture, and reads are not recorded on foreign buffers
    /// (the graph keeps every buffer it reads alive and synchronizes its
    /// stream before letting them go).
    capturing: std::sync::atomic::AtomicBool,
    /// Memory allocated during a capture whose buffer was dropped: the graph
    /// still uses it, so it stays allocated (and counted) until the graph
    /// that owns this stream frees it ([`StreamHandle::free_captured`]).
    captured: Mutex<Vec<(u64, Reservation)>>,
}

// SAFETY: a CUstream may be used from any thread; the driver serializes
// submissions to one stream internally.
unsafe impl Send for StreamHandle {}
// SAFETY: as above.
unsafe impl Sync for StreamHandle {}

impl StreamHandle {
    pub(crate) fn new(gpu: Arc<Gpu>) -> Result<StreamHandle> {
        gpu.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| driver_err("creating a stream", e))?;
        Ok(StreamHandle { gpu, raw, capturing: std::sync::atomic::AtomicBool::new(false), captured: Mutex::new(Vec::new()) })
    }

    pub(crate) fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// Whether a graph capture is open on this stream.
    pub(crate) fn is_capturing(&self) -> bool {
        self.capturing.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Frees the memory of captured buffers dropped so far. The caller (a
    /// graph's `Drop`) has synchronized this stream, and no graph that may
    /// run again uses the memory.
    pub(crate) fn free_captured(&self) {
        let held = std::mem::take(&mut *lock(&self.captured));
        if held.is_empty() || self.gpu.bind().is_err() {
            return;
        }
        for (ptr, reservation) in held {
            // SAFETY: `ptr` came from cuMemAlloc during a capture on this
            // stream and is freed once (taken out of the list above); the
            // stream is synchronized, so no launch of the graph is pending.
            let _ = unsafe { sys::cuMemFree_v2(ptr) };
            drop(reservation);
        }
    }

    /// Forgets the captured memory without freeing it (a graph that could not
    /// synchronize its stream: a kernel may still use it).
    pub(crate) fn leak_captured(&self) {
        std::mem::forget(std::mem::take(&mut *lock(&self.captured)));
    }

    /// Opens or closes the capture mode of the fields' doc (`graph.rs`
    /// calls it around `cuStreamBeginCapture`/`cuStreamEndCapture`).
    pub(crate) fn set_capturing(&self, on: bool) {
        self.capturing.store(on, std::sync::atomic::Ordering::Release);
    }

    /// Orders work submitted to this stream from now on after `b`'s producer
    /// wrote it (nothing to do when that is this stream).
    pub(crate) fn wait_for(&self, b: &CudaBuffer) -> Result<()> {
        if std::ptr::eq(b.stream.as_ref(), self) {
            return Ok(());
        }
        if self.is_capturing() {
            // A captured graph may not wait on an event recorded outside
            // its capture: wait here, once, before the graph exists. Every
            // launch of the graph comes later, so later than the write.
            return b.wait_host();
        }
        let ev = b.ready()?;
        // SAFETY: both handles are live (the buffer holds its producer's
        // stream and the event); the context is bound by the caller.
        unsafe { result::stream::wait_event(self.raw, ev.0, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .map_err(|e| driver_err("waiting on an event", e))
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is live; the context is bound by the caller.
        unsafe { result::stream::synchronize(self.raw) }.map_err(|e| driver_err("synchronizing a stream", e))
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: no buffer refers to this stream any more (each holds
            // an Arc to it); pending work completes before the driver frees it.
            let _ = unsafe { result::stream::destroy(self.raw) };
        }
    }
}

/// A CUDA event (timing disabled).
pub(crate) struct Event(sys::CUevent);

// SAFETY: events may be recorded, waited on and destroyed from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    fn recorded_on(s: &StreamHandle) -> Result<Event> {
        let ev = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| driver_err("creating an event", e))?;
        let ev = Event(ev);
        ev.record(s)?;
        Ok(ev)
    }

    fn record(&self, s: &StreamHandle) -> Result<()> {
        // SAFETY: the event and the stream are live and of one context.
        unsafe { result::event::record(self.0, s.raw) }.map_err(|e| driver_err("recording an event", e))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event is live and owned by this value. Destroying an
        // event that a stream still waits on is allowed: the wait completes.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

/// Device memory holding one array's elements (or several views of them).
pub struct CudaBuffer {
    ptr: u64,
    len: usize,
    dtype: Dtype,
    /// The producer: the stream that wrote the buffer and will free it.
    stream: Arc<StreamHandle>,
    /// Recorded on the producer after the write, on first foreign use.
    ready: OnceLock<std::result::Result<Event, crate::Error>>,
    /// Per foreign reader stream, an event recorded after its latest read.
    readers: Mutex<Vec<(usize, Event)>>,
    /// Allocated with `cuMemAlloc` during a graph capture (outside stream
    /// order); dropping it hands the memory to its stream's `captured` list,
    /// which the graph frees after synchronizing (`graph.rs`).
    fixed: bool,
    _reservation: Reservation,
}

impl fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CudaBuffer({} x {}, gpu {})", self.len, self.dtype, self.device())
    }
}

impl CudaBuffer {
    /// `n` uninitialized elements, allocated in stream order on `stream`.
    pub(crate) fn alloc(stream: &Arc<StreamHandle>, dtype: Dtype, n: usize) -> Result<CudaBuffer> {
        let bytes = super::rows::checked_bytes(n, dtype.size())?;
        let reservation = Reservation::new(bytes)?;
        let fixed = stream.is_capturing();
        let ptr = match (bytes, fixed) {
            (0, _) => 0,
            (_, false) => alloc_bytes(stream, bytes)?,
            (_, true) => alloc_fixed(stream, bytes)?,
        };
        Ok(CudaBuffer {
            ptr,
            len: n,
            dtype,
            stream: stream.clone(),
            ready: OnceLock::new(),
            readers: Mutex::new(Vec::new()),
            fixed,
            _reservation: reservation,
        })
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The GPU index.
    pub fn device(&self) -> u32 {
        self.stream.gpu.index
    }

    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Whether `stream` made this buffer (and frees it).
    pub(crate) fn is_on(&self, stream: &StreamHandle) -> bool {
        std::ptr::eq(self.stream.as_ref(), stream)
    }

    /// Prepares the buffer to be written again in place by its producer
    /// stream: that stream waits for every read other streams enqueued of
    /// the old contents, and the next foreign reader gets a fresh event
    /// (recorded after the new write). `&mut self`: nothing else holds it.
    pub(crate) fn reuse(&mut self) -> Result<()> {
        let readers = std::mem::take(self.readers.get_mut().unwrap_or_else(|p| p.into_inner()));
        for (_, ev) in &readers {
            // SAFETY: stream and event are live; the context is bound by the caller.
            unsafe {
                result::stream::wait_event(self.stream.raw, ev.0, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
            }
            .map_err(|e| driver_err("waiting on an event", e))?;
        }
        self.ready = OnceLock::new();
        Ok(())
    }

    /// The event after the producer's write (recorded on first request).
    fn ready(&self) -> Result<&Event> {
        self.ready.get_or_init(|| Event::recorded_on(&self.stream)).as_ref().map_err(Clone::clone)
    }

    /// Notes that `reader` has just enqueued a read of this buffer.
    pub(crate) fn record_read(&self, reader: &StreamHandle) -> Result<()> {
        // A capturing reader keeps the buffer alive itself (field doc of
        // `StreamHandle::capturing`).
        if std::ptr::eq(self.stream.as_ref(), reader) || reader.is_capturing() {
            return Ok(());
        }
        let id = reader as *const StreamHandle as usize;
        let mut readers = lock(&self.readers);
        match readers.iter().find(|(r, _)| *r == id) {
            Some((_, ev)) => ev.record(reader),
            None => {
                readers.push((id, Event::recorded_on(reader)?));
                Ok(())
            }
        }
    }

    /// Blocks the calling thread until the producer's write is done.
    pub(crate) fn wait_host(&self) -> Result<()> {
        let ev = self.ready()?;
        // SAFETY: the event is live; the context is bound by the caller.
        unsafe { result::event::synchronize(ev.0) }.map_err(|e| driver_err("waiting for a kernel", e))
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ptr == 0 || self.stream.gpu.bind().is_err() {
            return;
        }
        if self.fixed {
            // Captured kernels read or write this memory at every launch of
            // the graph, whenever the buffer itself is dropped (a kernel's
            // temporary is dropped during the capture): the graph frees it.
            let reservation = std::mem::replace(&mut self._reservation, Reservation::empty());
            lock(&self.stream.captured).push((self.ptr, reservation));
            return;
        }
        let readers = std::mem::take(self.readers.get_mut().unwrap_or_else(|p| p.into_inner()));
        for (_, ev) in &readers {
            // SAFETY: stream and event are live. The free below is ordered
            // after every foreign read this way.
            let _ = unsafe {
                result::stream::wait_event(self.stream.raw, ev.0, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
            };
        }
        // SAFETY: `ptr` came from cuMemAllocAsync on this stream and is
        // freed once; every use of it is ordered before this point on the
        // stream (same-stream kernels by stream order, foreign reads by the
        // waits above, host reads completed before they returned).
        let _ = unsafe { result::free_async(self.ptr, self.stream.raw) };
    }
}

fn alloc_bytes(stream: &StreamHandle, bytes: usize) -> Result<u64> {
    let gpu = &stream.gpu;
    gpu.bind()?;
    // SAFETY: pool and stream belong to this device's bound context; the
    // memory is written by the kernel that asked for it before any read.
    let first = unsafe { result::mem_pool::alloc_async(gpu.pool, bytes, stream.raw) };
    match first {
        Ok(p) => Ok(p),
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            // Give cached free memory back to the driver and try once more.
            // SAFETY: trimming only releases memory not in use.
            let _ = unsafe { result::mem_pool::trim_to(gpu.pool, 0) };
            // SAFETY: as for the first attempt.
            unsafe { result::mem_pool::alloc_async(gpu.pool, bytes, stream.raw) }.map_err(|e| {
                if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                    Error::OutOfMemory { requested: bytes, in_use: active_memory(), limit: usize::MAX }
                } else {
                    driver_err("allocating device memory", e)
                }
            })
        }
        Err(e) => Err(driver_err("allocating device memory", e)),
    }
}

/// `bytes` of device memory outside any stream's order, for a graph being
/// captured (a stream-ordered allocation would become part of the graph).
fn alloc_fixed(stream: &StreamHandle, bytes: usize) -> Result<u64> {
    stream.gpu.bind()?;
    let mut ptr = 0u64;
    // SAFETY: `ptr` is a valid out-pointer; the context is bound above.
    let r = unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }.result();
    match r {
        Ok(()) => Ok(ptr),
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            Err(Error::OutOfMemory { requested: bytes, in_use: active_memory(), limit: usize::MAX })
        }
        Err(e) => Err(driver_err("allocating device memory", e)),
    }
}

/// Copies `bytes` bytes between device buffers in stream order on `stream`.
pub(crate) fn copy_device(stream: &StreamHandle, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller gives two ranges of `bytes` bytes inside live device
    // buffers of this stream's context, both kept alive until the copy has
    // run in stream order.
    unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream.raw).result() }
        .map_err(|e| driver_err("copying on the device", e))
}

// ---------------------------------------------------------------------------
// Host <-> device.

/// The device copy of a host buffer on `stream`'s GPU, uploaded on first use
/// and kept with the host buffer.
pub(crate) fn mirror<'a>(c: &'a CpuBuffer, stream: &Arc<StreamHandle>) -> Result<&'a CudaBuffer> {
    if let Some(m) = c.device_copy.get() {
        if m.device() == stream.gpu.index {
            return Ok(m);
        }
        return Err(Error::DeviceUnavailable("a host array is already mirrored on another GPU".into()));
    }
    let up = upload(c, stream)?;
    // Another stream may have uploaded it meanwhile; then ours is dropped
    // (freed on our stream after the copy, in stream order).
    let _ = c.device_copy.set(up);
    Ok(c.device_copy.get().expect("set above"))
}

/// The device copy, if one was made.
pub(crate) fn existing_mirror(c: &CpuBuffer) -> Option<&CudaBuffer> {
    c.device_copy.get()
}

fn upload(c: &CpuBuffer, stream: &Arc<StreamHandle>) -> Result<CudaBuffer> {
    let b = CudaBuffer::alloc(stream, c.dtype(), c.data.len())?;
    let bytes = b.len * b.dtype.size();
    if bytes == 0 {
        return Ok(b);
    }
    let src: *const u8 = match &c.data {
        CpuData::Bool(v) => v.as_ptr() as *const u8,
        CpuData::U8(v) => v.as_ptr(),
        CpuData::U16(v) => v.as_ptr() as *const u8,
        CpuData::U32(v) => v.as_ptr() as *const u8,
        CpuData::U64(v) => v.as_ptr() as *const u8,
        CpuData::I8(v) => v.as_ptr() as *const u8,
        CpuData::I16(v) => v.as_ptr() as *const u8,
        CpuData::I32(v) => v.as_ptr() as *const u8,
        CpuData::I64(v) => v.as_ptr() as *const u8,
        CpuData::F16(v) => v.as_ptr() as *const u8,
        CpuData::BF16(v) => v.as_ptr() as *const u8,
        CpuData::F32(v) => v.as_ptr() as *const u8,
        CpuData::F64(v) => v.as_ptr() as *const u8,
        CpuData::C64(v) => v.as_ptr() as *const u8,
    };
    if c.data.len() == 1 {
        // SAFETY: `src` points at the host buffer's one element, `bytes`
        // (1 to 8) bytes, alive for this call.
        let one = unsafe { std::slice::from_raw_parts(src, bytes) };
        set_element(b.ptr, one, stream)?;
        return Ok(b);
    }
    // SAFETY: `src` points at `bytes` bytes of the host buffer. From pageable
    // memory the driver stages the bytes before returning, so the host buffer
    // may go away afterwards; `b.ptr` has room for `bytes`.
    unsafe { sys::cuMemcpyHtoDAsync_v2(b.ptr, src as *const _, bytes, stream.raw).result() }
        .map_err(|e| driver_err("copying to the device", e))?;
    Ok(b)
}

/// Writes one element's bytes (`one`, 1, 2, 4 or 8 bytes) at `dst` with
/// memsets, in stream order. A scalar (a Python float next to an array, an
/// epsilon) is uploaded this way because a copy from pageable host memory
/// may first synchronize with the stream (CUDA's "API synchronization
/// behavior"), which would make each scalar wait for all earlier work on
/// the stream; a memset never waits and needs no staging.
fn set_element(dst: sys::CUdeviceptr, one: &[u8], stream: &Arc<StreamHandle>) -> Result<()> {
    let err = |e| driver_err("setting a scalar on the device", e);
    // SAFETY: (every arm) `dst` is a live device allocation of this stream's
    // context with room for `one.len()` bytes, aligned to the element size
    // (pool buffers are at least 256-byte aligned); memsets run in order on
    // `stream.raw` and read no host memory after they return.
    match *one {
        [v] => unsafe { sys::cuMemsetD8Async(dst, v, 1, stream.raw).result() }.map_err(err),
        [a, b] => unsafe { sys::cuMemsetD16Async(dst, u16::from_ne_bytes([a, b]), 1, stream.raw).result() }.map_err(err),
        [a, b, c, d] => unsafe { sys::cuMemsetD32Async(dst, u32::from_ne_bytes([a, b, c, d]), 1, stream.raw).result() }.map_err(err),
        [a, b, c, d, e, f, g, h] => {
            unsafe { sys::cuMemsetD32Async(dst, u32::from_ne_bytes([a, b, c, d]), 1, stream.raw).result() }.map_err(err)?;
            unsafe { sys::cuMemsetD32Async(dst + 4, u32::from_ne_bytes([e, f, g, h]), 1, stream.raw).result() }.map_err(err)
        }
        _ => {
            // No dtype has another size; copy as any other buffer would.
            // SAFETY: `one` is alive for the call; the driver stages pageable bytes before returning.
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, one.as_ptr() as *const _, one.len(), stream.raw).result() }
                .map_err(|e| driver_err("copying to the device", e))
        }
    }
}

/// `data` with its elements on the host: a CPU buffer as is; a GPU buffer
/// copied out (the span the layout covers), waiting for its producer first.
/// Callable from any thread.
pub(crate) fn to_host(data: &Data) -> Result<Data> {
    let b = match &*data.buffer {
        crate::buffer::Buffer::Cuda(b) => b,
        crate::buffer::Buffer::Cpu(_) => return Ok(data.clone()),
    };
    let l = &data.layout;
    let n = l.numel();
    // The span of buffer elements the layout touches.
    let (mut lo, mut hi) = (l.offset as isize, l.offset as isize);
    if n > 0 {
        for (&d, &s) in l.shape.iter().zip(&l.strides) {
            let ext = s * (d as isize - 1);
            if ext < 0 {
                lo += ext;
            } else {
                hi += ext;
            }
        }
    }
    let count = if n == 0 { 0 } else { (hi - lo + 1) as usize };
    b.stream.gpu.bind()?;
    b.wait_host()?;
    let src = b.ptr + (lo.max(0) as u64) * b.dtype.size() as u64;
    let bytes = count * b.dtype.size();
    let mut err = Ok(());
    macro_rules! copy_out {
        ($T:ty) => {
            CpuBuffer::build::<$T>(count, |v| {
                if bytes > 0 {
                    // SAFETY: `v` has capacity for `count` elements (`bytes`
                    // bytes); the device range lies inside the buffer, whose
                    // write is complete (waited above). Every byte is written
                    // before `set_len`, and all bit patterns copied are values
                    // the device wrote as this type (bool: 0 or 1).
                    let r = unsafe { sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut _, src, bytes).result() };
                    match r {
                        // SAFETY: the copy above filled all `count` elements.
                        Ok(()) => unsafe { v.set_len(count) },
                        Err(e) => {
                            err = Err(driver_err("copying to the host", e));
                            v.resize(count, <$T>::default());
                        }
                    }
                }
            })?
        };
    }
    let host = match b.dtype {
        Dtype::Bool => copy_out!(bool),
        Dtype::U8 => copy_out!(u8),
        Dtype::U16 => copy_out!(u16),
        Dtype::U32 => copy_out!(u32),
        Dtype::U64 => copy_out!(u64),
        Dtype::I8 => copy_out!(i8),
        Dtype::I16 => copy_out!(i16),
        Dtype::I32 => copy_out!(i32),
        Dtype::I64 => copy_out!(i64),
        Dtype::F16 => copy_out!(half::f16),
        Dtype::BF16 => copy_out!(half::bf16),
        Dtype::F32 => copy_out!(f32),
        Dtype::F64 => copy_out!(f64),
        Dtype::C64 => copy_out!(crate::Complex64),
    };
    err?;
    let layout = crate::shape::Layout {
        shape: l.shape.clone(),
        strides: l.strides.clone(),
        offset: (l.offset as isize - lo) as usize,
    };
    Ok(Data { buffer: Arc::new(crate::buffer::Buffer::Cpu(host)), layout })
}
