//! Keeping the pool's idle workers awake while CPU streams run.
//!
//! A CPU decode step is ~150 parallel kernels (matrix-vector products split
//! across the pool) separated by small serial ones (norms, rope, attention)
//! that the runner executes alone. Between two parallel kernels the other
//! workers run out of work and rayon puts them to sleep within a few
//! microseconds; waking a sleeping thread (a futex, and on a virtual
//! machine an idle vCPU) costs tens to hundreds of microseconds, about as
//! long as the parallel kernel itself, so two cores decoded only 1.25-1.35x
//! faster than one (docs/benchmarks.md).
//!
//! So while a CPU runner is active, up to `pool size - 1` *warmers* occupy
//! the other workers: a warmer is a pool job that keeps taking rayon work
//! (`rayon::yield_now`: a stolen half of a kernel, a picker, anything) and,
//! when there is none, yields the core to the OS (`std::thread::yield_now`,
//! which returns at once unless another thread wants that core). It leaves
//! once no CPU runner has been active for `WEFT_SPIN_US` microseconds
//! (default 1000: the gap between two evals of a decode loop).
//!
//! Invariants:
//! - A warmer never blocks and holds no lock: it only runs pool jobs, each to
//!   completion, so it cannot delay or deadlock any stream (docs/architecture.md
//!   rule 6); it is a job like any other, so the pool never loses a thread.
//! - At most `pool size - 1` warmers spin: a slot is claimed before a
//!   warmer is spawned (`Slots`, slots.rs, which states and loom-checks the
//!   counting). A warmer that picks up a runner (through `yield_now`)
//!   *lends* it its slot for the run, so that another worker warms
//!   meanwhile; the slot comes back when the runner ends if there is room,
//!   else the warmer leaves. So slots never exceed `pool size - 1`.
//! - A warmer never runs beneath a runner on its own thread's stack (a join
//!   waiting for a kernel's other half may take any pool job, a warmer
//!   too): it would hold that runner until the process went idle. It finds
//!   `RUNNING > 0` and leaves at once.
//! - A warmer never holds its thread's stack for more than `SLICE` at a
//!   time (plus the one pool job it may be executing). A warmer can also
//!   start beneath a kernel's half that this thread stole from another
//!   thread's runner (a join inside that half waits, and its wait takes the
//!   warmer); nothing on the stack says so, and the half cannot return, nor
//!   its runner end, until the warmer does. So a warmer returns after each
//!   slice, handing its slot to a successor job it spawns: the frames
//!   beneath it see their latch and go on, and the successor warms from
//!   wherever the pool runs it. (Without this a run hung: `tests/warm.rs`.)
//! - No warmer outlives its need by more than the linger time: one exits when
//!   no runner is active and the last one left at least `linger` ago, so an
//!   idle process burns no CPU. If a runner enters just as the last warmer
//!   leaves, one of the two starts a new warmer (slots.rs), so an active
//!   runner is not left without one.
//! - GPU streams' runners do not count: their kernels run on the device.
//!
//! `tests/warm.rs` checks the counts (`weft::warmers()`) and, with many
//! threads, the results; every other test runs with warmers on.

use super::slots::Slots;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// Active CPU runners and the warmers' slots.
static SLOTS: LazyLock<Slots> = LazyLock::new(Slots::new);
/// When the last CPU runner left, in nanoseconds since `EPOCH`.
static LAST_LEFT: AtomicU64 = AtomicU64::new(0);
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// How long warmers stay after the last CPU runner left (`WEFT_SPIN_US`);
/// zero turns warmers off.
fn linger() -> Duration {
    static LINGER: LazyLock<Duration> = LazyLock::new(|| {
        let us = std::env::var("WEFT_SPIN_US").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(1000);
        Duration::from_micros(us)
    });
    *LINGER
}

fn now() -> u64 {
    EPOCH.elapsed().as_nanos() as u64
}

thread_local! {
    /// CPU runners live on this thread's stack (nested runs count each).
    static RUNNING: Cell<u32> = const { Cell::new(0) };
    /// Whether the innermost warmer on this thread's stack holds its slot
    /// (false while it lends it to a runner it executes, `Active::enter`,
    /// and after the runner if the slot did not come back).
    static WARMING: Cell<bool> = const { Cell::new(false) };
}

/// Held by a CPU queue's runner while it executes tasks.
pub(crate) struct Active {
    /// The warmer beneath this runner on the thread's stack lent it its slot.
    lent: bool,
}

impl Active {
    pub(crate) fn enter() -> Active {
        RUNNING.with(|r| r.set(r.get() + 1));
        // A warmer that picked up this runner is no longer keeping another
        // core awake: it lends its slot so that another worker warms.
        let lent = WARMING.with(|w| w.replace(false));
        SLOTS.enter(lent);
        spawn_warmers();
        Active { lent }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        LAST_LEFT.store(now(), Ordering::SeqCst);
        // A lent slot goes back to the warmer beneath if there is room;
        // if not, that warmer finds `WARMING` false and leaves.
        if SLOTS.leave(self.lent, max_warmers()) {
            WARMING.with(|w| w.set(true));
        }
        RUNNING.with(|r| r.set(r.get() - 1));
    }
}

fn max_warmers() -> usize {
    if linger().is_zero() {
        0
    } else {
        super::queue::pool().current_num_threads().saturating_sub(1)
    }
}

/// Spawns warmers until every worker but one has one (or warmers are off).
fn spawn_warmers() {
    let max = max_warmers();
    while SLOTS.claim(max) {
        SPAWNED.fetch_add(1, Ordering::SeqCst);
        super::queue::pool().spawn(warm);
    }
}

/// How long one warmer job runs before it hands its slot to a successor
/// and returns (module docs: a warmer may sit above frames that wait for it).
const SLICE: Duration = Duration::from_micros(50);

/// The warmer job (see the module docs). It returns at once when it started
/// beneath a runner on this thread's stack (a join waiting for a kernel's
/// other half took it): that thread is awake anyway, and a warmer there
/// would hold the runner below it until the process went idle.
fn warm() {
    if RUNNING.with(|r| r.get()) > 0 {
        // Not respawned: this thread's join would take the new job at
        // once. The next runner to enter claims the slot again.
        SLOTS.release();
        return;
    }
    // A warmer further down this thread's stack (this one runs beneath a
    // kernel half it took) gets its flag back when this one returns.
    let outer = WARMING.with(|w| w.replace(true));
    let linger = linger().as_nanos() as u64;
    let start = Instant::now();
    let exit = loop {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            if !WARMING.with(|w| w.get()) {
                break Exit::SlotGone;
            }
        } else if !SLOTS.any_active() && now().saturating_sub(LAST_LEFT.load(Ordering::SeqCst)) >= linger {
            break Exit::Idle;
        } else {
            std::thread::yield_now();
        }
        if start.elapsed() >= SLICE {
            break Exit::Slice;
        }
    };
    WARMING.with(|w| w.set(outer));
    match exit {
        // A runner it lent the slot to could not give it back.
        Exit::SlotGone => {}
        // The slot passes to the successor (counts unchanged).
        Exit::Slice => super::queue::pool().spawn(warm),
        Exit::Idle => {
            // A runner that entered just as this warmer decided to leave
            // still gets warmers (slots.rs).
            if SLOTS.release() {
                spawn_warmers();
            }
        }
    }
}

/// Why a warmer job returns.
enum Exit {
    /// It lent its slot to a runner, which found no room to give it back.
    SlotGone,
    /// No CPU runner for the linger time: its slot goes.
    Idle,
    /// Its slice is up: a successor takes the slot.
    Slice,
}

/// Warmers spawned since start (a successor taking over a slot is not counted).
static SPAWNED: AtomicU64 = AtomicU64::new(0);

/// The pool's warmers (see `scheduler/warm.rs`), for tests and profiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Warmers {
    /// Warmers holding a slot now (0 once the process is idle).
    pub alive: usize,
    /// Warmers spawned since start.
    pub spawned: u64,
    /// The most slots held at once (at most `pool size - 1`).
    pub peak: usize,
}

/// The pool's warmer counts now.
pub fn warmers() -> Warmers {
    let (alive, peak) = SLOTS.held();
    Warmers { alive, spawned: SPAWNED.load(Ordering::SeqCst), peak }
}
