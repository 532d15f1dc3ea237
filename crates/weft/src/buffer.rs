//! Memory: typed CPU storage, and the accounting behind `set_memory_limit`.

use crate::dtype::{Dtype, Element};
use crate::{Error, Result};
use half::{bf16, f16};
use std::sync::atomic::{AtomicUsize, Ordering};

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Caps the bytes weft's buffers may hold at once. An allocation past it
/// fails the op that asked with [`Error::OutOfMemory`]; nothing else is
/// affected. Returns the previous limit.
pub fn set_memory_limit(bytes: usize) -> usize {
    LIMIT.swap(bytes, Ordering::SeqCst)
}

/// Bytes held by live buffers.
pub fn active_memory() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

/// The most bytes held at once since start (or the last reset).
pub fn peak_memory() -> usize {
    PEAK.load(Ordering::Relaxed)
}

pub fn reset_peak_memory() {
    PEAK.store(IN_USE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Hands host memory that freed buffers left with the allocator back to the
/// operating system, where the allocator can (glibc's `malloc_trim`, which
/// walks every thread's arena). weft keeps no buffer cache of its own, so
/// this is all `clear_cache` has to do; a server calls it when it goes idle,
/// so its resident memory returns to the idle level after a burst.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: malloc_trim takes no pointers and only locks glibc's own
        // arenas; it is thread-safe and valid at any time after start-up.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// A reservation of `bytes` against the limit, released on drop.
#[derive(Debug)]
pub struct Reservation(usize);

impl Reservation {
    /// A reservation of no bytes (a placeholder for one moved out).
    pub(crate) fn empty() -> Reservation {
        Reservation(0)
    }

    pub fn new(bytes: usize) -> Result<Reservation> {
        let limit = LIMIT.load(Ordering::Relaxed);
        // Invariant: IN_USE is the sum of all live reservations; the
        // fetch_update makes check-and-add one atomic step.
        let prev = IN_USE
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |cur| {
                cur.checked_add(bytes).filter(|&n| n <= limit)
            })
            .map_err(|cur| Error::OutOfMemory { requested: bytes, in_use: cur, limit })?;
        PEAK.fetch_max(prev + bytes, Ordering::Relaxed);
        Ok(Reservation(bytes))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        IN_USE.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// The one path for host allocations of elements (kernel outputs, copies,
/// reads, conversions): reserves `n` elements of `T` against the memory limit
/// *before* allocating, then asks the allocator without aborting on failure.
/// Either failure is [`Error::OutOfMemory`], never a crash. The reservation
/// is returned with the (empty, `n`-capacity) Vec: hold it while the memory
/// counts as weft's.
pub fn host_vec<T>(n: usize) -> Result<(Vec<T>, Reservation)> {
    let limit = || LIMIT.load(Ordering::Relaxed);
    let Some(bytes) = n.checked_mul(std::mem::size_of::<T>()) else {
        return Err(Error::OutOfMemory { requested: usize::MAX, in_use: active_memory(), limit: limit() });
    };
    let reservation = Reservation::new(bytes)?;
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        let in_use = active_memory().saturating_sub(bytes);
        return Err(Error::OutOfMemory { requested: bytes, in_use, limit: limit() });
    }
    Ok((v, reservation))
}

/// Host memory of one array (or of several views of it).
#[derive(Debug)]
pub struct CpuBuffer {
    pub data: CpuData,
    /// The copy a GPU stream uploaded when it first read this buffer; lives
    /// (and is counted) as long as the host buffer.
    pub(crate) device_copy: std::sync::OnceLock<crate::backend::cuda::CudaBuffer>,
    _reservation: Reservation,
}

/// The typed elements of a CPU buffer.
#[derive(Debug)]
pub enum CpuData {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<crate::Complex64>),
}

/// Access to the `Vec<T>` inside [`CpuData`] for each element type.
pub trait CpuElement: Element {
    fn wrap(v: Vec<Self>) -> CpuData;
    fn slice(d: &CpuData) -> Option<&[Self]>;
    fn slice_mut(d: &mut CpuData) -> Option<&mut [Self]>;
}

macro_rules! cpu_element {
    ($($t:ty => $v:ident),*) => {$(
        impl CpuElement for $t {
            fn wrap(v: Vec<Self>) -> CpuData { CpuData::$v(v) }
            fn slice(d: &CpuData) -> Option<&[Self]> {
                match d { CpuData::$v(v) => Some(v), _ => None }
            }
            fn slice_mut(d: &mut CpuData) -> Option<&mut [Self]> {
                match d { CpuData::$v(v) => Some(v), _ => None }
            }
        }
    )*};
}
cpu_element!(bool => Bool, u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
             f16 => F16, bf16 => BF16, f32 => F32, f64 => F64, crate::Complex64 => C64);

impl CpuData {
    pub fn dtype(&self) -> Dtype {
        match self {
            CpuData::Bool(_) => Dtype::Bool,
            CpuData::U8(_) => Dtype::U8,
            CpuData::U16(_) => Dtype::U16,
            CpuData::U32(_) => Dtype::U32,
            CpuData::U64(_) => Dtype::U64,
            CpuData::I8(_) => Dtype::I8,
            CpuData::I16(_) => Dtype::I16,
            CpuData::I32(_) => Dtype::I32,
            CpuData::I64(_) => Dtype::I64,
            CpuData::F16(_) => Dtype::F16,
            CpuData::BF16(_) => Dtype::BF16,
            CpuData::F32(_) => Dtype::F32,
            CpuData::F64(_) => Dtype::F64,
            CpuData::C64(_) => Dtype::C64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            CpuData::Bool(v) => v.len(),
            CpuData::U8(v) => v.len(),
            CpuData::U16(v) => v.len(),
            CpuData::U32(v) => v.len(),
            CpuData::U64(v) => v.len(),
            CpuData::I8(v) => v.len(),
            CpuData::I16(v) => v.len(),
            CpuData::I32(v) => v.len(),
            CpuData::I64(v) => v.len(),
            CpuData::F16(v) => v.len(),
            CpuData::BF16(v) => v.len(),
            CpuData::F32(v) => v.len(),
            CpuData::F64(v) => v.len(),
            CpuData::C64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl CpuBuffer {
    /// A buffer holding `v`, counted against the memory limit. For memory
    /// that exists already (the caller's); weft's own allocations go through
    /// [`CpuBuffer::build`], which reserves first.
    pub fn from_vec<T: CpuElement>(v: Vec<T>) -> Result<CpuBuffer> {
        let reservation = Reservation::new(v.len() * std::mem::size_of::<T>())?;
        Ok(CpuBuffer { data: T::wrap(v), device_copy: Default::default(), _reservation: reservation })
    }

    /// A buffer of `n` elements made by `fill`, which receives an empty Vec
    /// with room for `n` and must push exactly `n`. The reservation is taken
    /// before the allocation, so exceeding the limit never touches memory.
    pub fn build<T: CpuElement>(n: usize, fill: impl FnOnce(&mut Vec<T>)) -> Result<CpuBuffer> {
        let (mut v, reservation) = host_vec::<T>(n)?;
        fill(&mut v);
        debug_assert_eq!(v.len(), n);
        Ok(CpuBuffer { data: T::wrap(v), device_copy: Default::default(), _reservation: reservation })
    }

    /// [`CpuBuffer::build`] for a `fill` that may fail: its error is
    /// returned (the memory released); on success it must have pushed `n`.
    pub(crate) fn try_build<T: CpuElement>(n: usize, fill: impl FnOnce(&mut Vec<T>) -> Result<()>) -> Result<CpuBuffer> {
        let (mut v, reservation) = host_vec::<T>(n)?;
        fill(&mut v)?;
        if v.len() != n {
            return Err(Error::Internal(format!("a kernel wrote {} of {n} elements", v.len())));
        }
        Ok(CpuBuffer { data: T::wrap(v), device_copy: Default::default(), _reservation: reservation })
    }

    /// A buffer of `dtype` elements copied from native-endian `bytes` (a
    /// NumPy array's memory, a file's), reserving before allocating. Bool
    /// bytes other than 0 are read as true, as NumPy does; the copy holds
    /// only 0 and 1, the values Rust's `bool` may take.
    pub fn from_ne_bytes(dtype: Dtype, bytes: &[u8]) -> Result<CpuBuffer> {
        fn copy<T: CpuElement>(bytes: &[u8]) -> Result<CpuBuffer> {
            let size = std::mem::size_of::<T>();
            if bytes.len() % size != 0 {
                return Err(Error::Shape(format!("{} bytes do not hold whole {} elements", bytes.len(), T::DTYPE)));
            }
            let n = bytes.len() / size;
            CpuBuffer::build::<T>(n, |v| {
                // SAFETY: `v` has capacity for `n` elements (`build`), `bytes`
                // holds `n * size` bytes and does not overlap `v`, and every
                // bit pattern is a valid value of every element type but
                // bool, whose bytes `from_ne_bytes` made 0 or 1 first.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), n * size);
                    v.set_len(n);
                }
            })
        }
        if dtype == Dtype::Bool {
            return CpuBuffer::build::<bool>(bytes.len(), |v| v.extend(bytes.iter().map(|&b| b != 0)));
        }
        crate::with_dtype!(dtype, T => copy::<T>(bytes))
    }

    pub fn dtype(&self) -> Dtype {
        self.data.dtype()
    }

    /// The elements as `T`, or `None` when the buffer holds another type.
    pub fn try_slice<T: CpuElement>(&self) -> Option<&[T]> {
        T::slice(&self.data)
    }

    pub fn as_slice<T: CpuElement>(&self) -> &[T] {
        T::slice(&self.data).unwrap_or_else(|| {
            panic!("buffer holds {}, read as {}", self.data.dtype(), T::DTYPE)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_access() {
        let b = CpuBuffer::from_vec(vec![1.0f32; 1000]).unwrap();
        assert_eq!(b.as_slice::<f32>()[999], 1.0);
        assert_eq!(b.dtype(), Dtype::F32);
    }

    #[test]
    fn bool_bytes_are_normalized() {
        let b = CpuBuffer::from_ne_bytes(Dtype::Bool, &[2, 1, 0, 255]).unwrap();
        let v: Vec<u8> = b.as_slice::<bool>().iter().map(|&x| x as u8).collect();
        assert_eq!(v, vec![1, 1, 0, 1]);
    }

    #[test]
    fn host_vec_refuses_before_allocating() {
        assert!(matches!(host_vec::<f32>(usize::MAX / 2), Err(Error::OutOfMemory { .. })));
        // Past what the allocator can give: an error, not an abort.
        assert!(matches!(host_vec::<u8>(1 << 62), Err(Error::OutOfMemory { .. })));
    }

    /// Resident bytes of this process (Linux: /proc/self/statm's second field, in pages of 4 KiB).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn resident_bytes() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        statm.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 4096
    }

    /// Freed small blocks that the allocator keeps (a heap fragmented by a
    /// few live blocks cannot shrink from its top) go back to the OS.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn release_free_memory_returns_freed_pages() {
        const BLOCK: usize = 4000;
        const BLOCKS: usize = 24 << 10; // ~94 MiB in all
        // On a thread of its own, so the blocks live in one arena.
        std::thread::spawn(|| {
            let mut blocks: Vec<Vec<u8>> = (0..BLOCKS).map(|i| vec![i as u8 | 1; BLOCK]).collect();
            // Keep every 64th block: the freed space around them is all
            // inside the heap, where only a trim can release it.
            let kept: Vec<Vec<u8>> = blocks.iter_mut().step_by(64).map(std::mem::take).collect();
            drop(blocks);
            let before = resident_bytes();
            release_free_memory();
            let after = resident_bytes();
            assert!(kept.iter().all(|b| b[0] & 1 == 1));
            let released = before.saturating_sub(after);
            assert!(released > 48 << 20, "resident {before} -> {after} bytes: released only {released}");
        })
        .join()
        .unwrap();
    }
}

/// Device memory of any kind.
#[derive(Debug)]
pub enum Buffer {
    Cpu(CpuBuffer),
    /// Device memory written by a kernel on a GPU stream (see
    /// `backend/cuda/memory.rs` for how other streams and the host wait).
    Cuda(crate::backend::cuda::CudaBuffer),
}

impl Buffer {
    pub fn dtype(&self) -> Dtype {
        match self {
            Buffer::Cpu(b) => b.dtype(),
            Buffer::Cuda(b) => b.dtype(),
        }
    }

    pub fn as_cpu(&self) -> Option<&CpuBuffer> {
        match self {
            Buffer::Cpu(b) => Some(b),
            Buffer::Cuda(_) => None,
        }
    }
}

/// An evaluated array's data: a shared buffer and how the array (its shape,
/// strides and offset) sits in it.
#[derive(Clone, Debug)]
pub struct Data {
    pub buffer: std::sync::Arc<Buffer>,
    pub layout: crate::shape::Layout,
}

impl Data {
    /// Contiguous data of `shape` in a fresh CPU buffer.
    pub fn cpu(buffer: CpuBuffer, shape: &[usize]) -> Data {
        Data {
            buffer: std::sync::Arc::new(Buffer::Cpu(buffer)),
            layout: crate::shape::Layout::contiguous(shape),
        }
    }

    /// This data in host memory: itself for CPU data, a copy for device data
    /// (after waiting for the kernel that wrote it). Callable from any thread.
    pub fn to_host(&self) -> Result<Data> {
        match &*self.buffer {
            Buffer::Cpu(_) => Ok(self.clone()),
            Buffer::Cuda(_) => crate::backend::cuda::to_host(self),
        }
    }

    /// The elements in row-major order, in a new Vec (copied from the device
    /// first for device data). `T` must be the buffer's element type.
    pub fn to_vec<T: CpuElement>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.buffer.dtype() {
            return Err(Error::Dtype(format!("cannot read {} data as {}", self.buffer.dtype(), T::DTYPE)));
        }
        crate::backend::cpu::to_vec::<T>(&self.to_host()?)
    }

    /// The CPU buffer; kernels of the CPU backend only ever see CPU data.
    pub fn cpu_buffer(&self) -> &CpuBuffer {
        self.buffer.as_cpu().expect("CPU kernel given non-CPU data")
    }
}
