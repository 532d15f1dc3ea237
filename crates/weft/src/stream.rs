//! Streams: FIFO queues of work on a device, usable from any thread.
//!
//! A [`Stream`] is a small `Copy` value naming a *concrete queue*: queue `i`
//! of a device's bounded pool. Queues are created on first use and live for
//! the process; when more streams are asked for than the pool holds, streams
//! share queues round-robin (sharing only adds ordering, never a race).
//!
//! Per thread (docs/architecture.md rule 3) there is a default stream for each device,
//! taken from the pool on first use, and a stack of scoped streams pushed by
//! [`with_stream`] / [`StreamGuard`]. A *thread-local* stream
//! ([`Stream::new_thread_local`]) names one queue per thread; ops resolve it
//! when they are built, so the array they make records a concrete queue and
//! can be evaluated from any thread later (rule 4).

use crate::device::{default_device, Device, DeviceType};
use crate::scheduler::queue::Queue;
use crate::{Error, Result};
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// Concrete queue `i` of the device's pool.
    Queue(u32),
    /// Resolved per thread to a concrete queue.
    ThreadLocal(u32),
}

/// A stream of work on a device. `Copy + Send + Sync`: any thread may build
/// ops on it, evaluate on it and synchronize it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stream {
    device: Device,
    kind: Kind,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = match self.device.kind {
            DeviceType::Cpu => "cpu",
            DeviceType::Gpu => "gpu",
        };
        match self.kind {
            Kind::Queue(i) => write!(f, "Stream({d}, {i})"),
            Kind::ThreadLocal(i) => write!(f, "Stream({d}, thread_local {i})"),
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Stream {
    /// A new stream on `device`: the pool's next queue.
    pub fn new(device: Device) -> Result<Stream> {
        let pool = pool(device)?;
        let s = Stream { device, kind: Kind::Queue(pool.next_index()) };
        s.queue()?;
        Ok(s)
    }

    /// A stream that is a different queue in each thread that uses it.
    pub fn new_thread_local(device: Device) -> Result<Stream> {
        pool(device)?;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        Ok(Stream { device, kind: Kind::ThreadLocal(NEXT.fetch_add(1, Ordering::Relaxed)) })
    }

    pub fn device(self) -> Device {
        self.device
    }

    /// The queue index (or, for a thread-local stream, its id).
    pub fn index(self) -> u32 {
        match self.kind {
            Kind::Queue(i) | Kind::ThreadLocal(i) => i,
        }
    }

    pub fn is_thread_local(self) -> bool {
        matches!(self.kind, Kind::ThreadLocal(_))
    }

    /// The concrete stream this names in the calling thread.
    pub fn resolve(self) -> Stream {
        match self.kind {
            Kind::Queue(_) => self,
            // Queue `(base + id) mod pool size`, with `base` one number per
            // (thread, device) taken round-robin from the pool on first use:
            // the same stream on the same thread always names the same queue,
            // different threads spread over the pool, and a thread that uses
            // a new thread-local stream per request stores nothing more (no
            // per-stream record to grow or scan).
            Kind::ThreadLocal(id) => THREAD.with(|t| {
                let Ok(p) = pool(self.device) else {
                    return Stream { device: self.device, kind: Kind::Queue(0) };
                };
                let mut t = t.borrow_mut();
                let base = match t.local_base.iter().find(|(d, _)| *d == self.device) {
                    Some(&(_, b)) => b,
                    None => {
                        let b = p.next_index();
                        t.local_base.push((self.device, b));
                        b
                    }
                };
                let q = ((base as u64 + id as u64) % p.queues.len() as u64) as u32;
                Stream { device: self.device, kind: Kind::Queue(q) }
            }),
        }
    }

    /// Blocks until everything submitted to this stream before the call has run.
    pub fn synchronize(self) -> Result<()> {
        self.resolve().queue()?.synchronize()
    }

    pub(crate) fn queue(self) -> Result<&'static Arc<Queue>> {
        let Kind::Queue(i) = self.resolve().kind else { unreachable!() };
        pool(self.device)?.queue(i)
    }
}

/// Per-thread stream state. Holds only `Copy` values: a thread that exits
/// leaves nothing behind but this small record, freed with the thread. Its
/// size is bounded by the devices used and the scopes open, whatever the
/// thread does (no entry per stream).
#[derive(Default)]
struct ThreadStreams {
    defaults: Vec<(Device, Stream)>,
    /// Open scopes, innermost last, each tagged with its guard's id.
    scoped: Vec<(u64, Stream)>,
    /// Per device, where this thread's thread-local streams start in the pool.
    local_base: Vec<(Device, u32)>,
}

thread_local! {
    static THREAD: RefCell<ThreadStreams> = RefCell::new(ThreadStreams::default());
}

/// The calling thread's default stream on `device`, assigned from the
/// device's pool on first use.
pub fn default_stream(device: Device) -> Stream {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(&(_, s)) = t.defaults.iter().find(|(d, _)| *d == device) {
            return s;
        }
        let i = pool(device).map(|p| p.next_index()).unwrap_or(0);
        let s = Stream { device, kind: Kind::Queue(i) };
        t.defaults.push((device, s));
        s
    })
}

/// Sets the calling thread's default stream for the stream's device.
pub fn set_default_stream(stream: Stream) {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        t.defaults.retain(|(d, _)| *d != stream.device);
        t.defaults.push((stream.device, stream));
    })
}

/// The stream ops built on this thread go to now (concrete): the innermost
/// scoped stream, else the default stream of the default device.
pub fn current_stream() -> Stream {
    let scoped = THREAD.with(|t| t.borrow().scoped.last().map(|&(_, s)| s));
    scoped.unwrap_or_else(|| default_stream(default_device())).resolve()
}

/// Runs `f` with `stream` as the calling thread's current stream.
///
/// ```
/// let s = weft::Stream::new(weft::Device::cpu()).unwrap();
/// let y = weft::with_stream(s, || weft::ops::full(&[2], 3.0f32)).unwrap();
/// assert_eq!(y.stream(), s);
/// ```
pub fn with_stream<R>(stream: Stream, f: impl FnOnce() -> R) -> R {
    let _g = StreamGuard::new(stream);
    f()
}

/// Makes a stream current on this thread until dropped. Not `Send`: it
/// belongs to the thread that made it.
///
/// Dropping a guard removes its own scope, wherever it sits: guards dropped
/// out of order (Python `with` blocks of interleaved asyncio tasks or
/// generators on one thread) leave every other open scope in place, and the
/// current stream is the innermost scope still open. In order, each drop
/// restores the stream current when its guard was made.
pub struct StreamGuard {
    id: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl StreamGuard {
    pub fn new(stream: Stream) -> StreamGuard {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        THREAD.with(|t| t.borrow_mut().scoped.push((id, stream)));
        StreamGuard { id, _not_send: std::marker::PhantomData }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        // `try_with`: a guard dropped during thread teardown has nothing to undo.
        let _ = THREAD.try_with(|t| {
            let mut t = t.borrow_mut();
            if let Some(i) = t.scoped.iter().rposition(|&(id, _)| id == self.id) {
                t.scoped.remove(i);
            }
        });
    }
}

/// Blocks until all work submitted to `stream` before the call has run.
pub fn synchronize(stream: Stream) -> Result<()> {
    stream.synchronize()
}

/// Synchronizes every queue that exists, on every device.
pub fn synchronize_all() -> Result<()> {
    for p in POOLS.iter().filter_map(|p| p.get()) {
        p.synchronize_all()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Pools of concrete queues.

const MAX_GPUS: usize = 16;
static POOLS: [OnceLock<Pool>; MAX_GPUS + 1] = [const { OnceLock::new() }; MAX_GPUS + 1];
static CPU_POOL_SIZE: AtomicUsize = AtomicUsize::new(0);
static GPU_POOL_SIZE: AtomicUsize = AtomicUsize::new(0);

/// Sets how many concrete queues each device of `kind` gets. Only takes
/// effect before the first stream of that kind is used.
pub fn set_stream_pool_size(kind: DeviceType, queues: usize) -> Result<()> {
    if queues == 0 {
        return Err(Error::InvalidArgument("a stream pool needs at least one queue".into()));
    }
    let (slot, size) = match kind {
        DeviceType::Cpu => (&POOLS[0], &CPU_POOL_SIZE),
        DeviceType::Gpu => (&POOLS[1], &GPU_POOL_SIZE),
    };
    if slot.get().is_some() {
        return Err(Error::InvalidArgument("the stream pool is already in use".into()));
    }
    size.store(queues, Ordering::Relaxed);
    Ok(())
}

struct Pool {
    device: Device,
    queues: Box<[OnceLock<Result<Arc<Queue>>>]>,
    next: AtomicU32,
}

impl Pool {
    fn next_index(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed) % self.queues.len() as u32
    }

    fn queue(&self, i: u32) -> Result<&Arc<Queue>> {
        let slot = self.queues.get(i as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("{} has no stream {i}", self.device))
        })?;
        slot.get_or_init(|| {
            let stream = Stream { device: self.device, kind: Kind::Queue(i) };
            Queue::new(stream).map(Arc::new)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    fn synchronize_all(&self) -> Result<()> {
        for q in self.queues.iter().filter_map(|q| q.get()) {
            if let Ok(q) = q {
                q.synchronize()?;
            }
        }
        Ok(())
    }
}

fn pool(device: Device) -> Result<&'static Pool> {
    let slot = match device.kind {
        DeviceType::Cpu if device.index == 0 => &POOLS[0],
        DeviceType::Gpu if (device.index as usize) < MAX_GPUS => &POOLS[1 + device.index as usize],
        _ => return Err(Error::DeviceUnavailable(format!("{device} does not exist"))),
    };
    if let Some(p) = slot.get() {
        return Ok(p);
    }
    crate::backend::check_available(device)?;
    Ok(slot.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let n = match device.kind {
            DeviceType::Cpu => match CPU_POOL_SIZE.load(Ordering::Relaxed) {
                0 => (4 * cores).clamp(8, 64),
                n => n,
            },
            DeviceType::Gpu => match GPU_POOL_SIZE.load(Ordering::Relaxed) {
                0 => 8,
                n => n,
            },
        };
        Pool { device, queues: (0..n).map(|_| OnceLock::new()).collect(), next: AtomicU32::new(0) }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards dropped out of order each remove their own scope (issue 10
    /// item 9): the old stack popped whatever was on top.
    #[test]
    fn out_of_order_guards_restore_their_own_scope() {
        let d = Device::cpu();
        let (s1, s2) = (Stream::new(d).unwrap(), Stream::new(d).unwrap());
        let before = current_stream();
        let g1 = StreamGuard::new(s1);
        let g2 = StreamGuard::new(s2);
        drop(g1); // exits first, though entered first
        assert_eq!(current_stream(), s2);
        drop(g2);
        assert_eq!(current_stream(), before);
    }

    /// A new thread-local stream per request leaves the thread's record the
    /// same size (issue 10 item 10), and each stream still resolves to one
    /// queue per thread.
    #[test]
    fn thread_local_streams_store_nothing_per_stream() {
        let d = Device::cpu();
        let first = Stream::new_thread_local(d).unwrap();
        let q = first.resolve();
        let size = || THREAD.with(|t| {
            let t = t.borrow();
            t.defaults.len() + t.scoped.len() + t.local_base.len()
        });
        let start = size();
        for _ in 0..10_000 {
            let s = Stream::new_thread_local(d).unwrap();
            assert_eq!(s.resolve(), s.resolve());
        }
        assert_eq!(size(), start);
        assert_eq!(first.resolve(), q);
        let other = std::thread::spawn(move || first.resolve()).join().unwrap();
        assert!(!other.is_thread_local());
    }
}
