//! A concrete stream's queue: FIFO tasks run one at a time on the shared
//! worker pool, never by a thread of its own.
//!
//! Invariants (the bookkeeping behind them, who may run and when, is
//! `lane.rs`, model-checked with loom in crates/weft-loom):
//! - At most one *runner* per queue exists at a time (`Lane`'s `running`), so
//!   tasks run one at a time, in the order they were pushed (docs/architecture.md rule 1).
//! - A task is pushed only after every input's task was pushed somewhere
//!   (the scheduler waits for foreign inputs to be `ENQUEUED`). Hence the
//!   earliest-pushed unfinished task always has finished inputs and is at the
//!   head of its queue: some queue can always make progress, so a head task
//!   waiting on another stream (rule 6) never deadlocks.
//! - A head task whose inputs are not done is *parked* in `blocked`, and a
//!   callback on the missing input restarts the runner: no pool thread ever
//!   blocks on another stream.
//! - `submitted - completed` is the work in flight; `push` waits while it is
//!   at the limit (rule 8). Both counters move for failed tasks too.
//! - Fairness: a queue with work and no runner waits in `READY`, one FIFO
//!   that weft owns, for a pool thread; a runner whose turn is up goes to
//!   its back. Pool jobs are interchangeable *pickers* (one per entry) that
//!   each serve the oldest entry, so whatever order rayon runs its jobs in
//!   (its local deques are LIFO), streams get turns in the order they became
//!   ready: every stream with work runs within (ready streams ahead) x TURN
//!   tasks, whatever other threads submit (docs/architecture.md, "Queues").
//! - Panics: every task taken from `tasks` completes (its node gets a result
//!   and `completed` moves) even if the runner panics outside the kernel
//!   (`Finish`), and a panicking turn reschedules its queue, so no panic
//!   leaves a waiter waiting or a queue without a runner.

use super::node::{DONE, ENQUEUED};
use crate::array::Array;
use crate::backend::{new_encoder, Encoder};
use crate::buffer::Data;
use crate::primitive::{OutSpec, Primitive};
use crate::stream::Stream;
use super::lane::{Fifo, Lane};
use crate::error::{catch_silently, panic_message};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

/// Tasks a runner executes before its queue goes to the back of `READY`.
const TURN: usize = 64;

/// Queues that have work and wait for a pool thread, oldest first.
static READY: LazyLock<Fifo<Arc<Queue>>> = LazyLock::new(Fifo::new);

/// Puts `q` (whose `running` flag its caller set) at the back of the ready
/// FIFO and adds one picker to the pool for it.
fn schedule(q: Arc<Queue>) {
    READY.push_back(q);
    pool().spawn(pick);
}

/// A pool job: serves one turn of the oldest ready queue. There are as many
/// pickers as entries, so every entry is served.
fn pick() {
    let Some(q) = READY.pop_front() else { return };
    // While a CPU stream runs, the pool's other workers stay awake (warm.rs).
    let _active = q.cpu.then(super::warm::Active::enter);
    if catch_silently(|| q.clone().run()).is_err() {
        // The runner panicked outside a kernel (its task was completed by
        // `Finish`): the queue keeps its runner flag and gets a new turn.
        q.resume_after_panic();
    }
}

static MAX_IN_FLIGHT: AtomicUsize = AtomicUsize::new(1024);
static KERNELS_RUN: AtomicU64 = AtomicU64::new(0);

/// Sets how many tasks one stream may hold unfinished before `eval` waits
/// for it to drain. Returns the previous value.
pub fn set_max_in_flight(tasks: usize) -> usize {
    MAX_IN_FLIGHT.swap(tasks.max(1), Ordering::Relaxed)
}

/// Number of primitives run since start, across all streams (for tests and
/// profiling: with exactly-once claims it counts each node once).
pub fn kernels_run() -> u64 {
    KERNELS_RUN.load(Ordering::Relaxed)
}

/// The worker pool every queue runs on: one thread per core (or
/// `WEFT_NUM_THREADS`), created once.
pub(crate) fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::env::var("WEFT_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(0); // rayon's default: one per core
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("weft-worker-{i}"))
            // Kernels' panics are caught per task; this only guards the pool.
            .panic_handler(|_| {})
            .build()
            .expect("the weft worker pool starts")
    })
}

pub(crate) struct Task {
    pub node: Array,
    pub prim: Primitive,
    pub inputs: Vec<Array>,
}

pub(crate) struct Queue {
    encoder: Box<dyn Encoder>,
    /// The stream runs on the CPU (its kernels use the pool's threads).
    cpu: bool,
    lane: Lane<Task>,
}

impl Queue {
    pub(crate) fn new(stream: Stream) -> Result<Queue> {
        Ok(Queue { encoder: new_encoder(stream)?, cpu: stream.device().is_cpu(), lane: Lane::new() })
    }

    /// Appends `task`, marking its node ENQUEUED in the same critical section
    /// (lock order: queue, then node).
    pub(crate) fn push(self: &Arc<Self>, task: Task) {
        let limit = MAX_IN_FLIGHT.load(Ordering::Relaxed) as u64;
        if self.lane.push(task, limit, |t| t.node.0.state.mark_enqueued()) {
            schedule(self.clone());
        }
    }

    /// After a runner panicked: give the queue another turn if it has work.
    fn resume_after_panic(self: &Arc<Self>) {
        if self.lane.resume_after_panic() {
            schedule(self.clone());
        }
    }

    /// The runner: executes tasks in order until the queue is empty, an
    /// input is not ready, or its turn is up (then it yields to other queues).
    fn run(self: Arc<Self>) {
        for _ in 0..TURN {
            let Some(task) = self.lane.take() else { return };
            // From here until the task is parked or completed, a panic
            // completes its node with an error (`Finish`).
            let finish = Finish { queue: &self, node: Some(task.node.clone()) };
            if let Some(missing) = task.inputs.iter().find(|i| i.0.state.get() != DONE).cloned() {
                finish.disarm();
                self.lane.park(task);
                let q = self.clone();
                // The restart joins the back of the ready FIFO like any turn.
                let restart = Box::new(move || schedule(q));
                match missing.0.state.on_done(restart) {
                    // The input's completion restarts this queue.
                    Ok(()) => return,
                    // Done in the meantime: pick the task up again.
                    Err(_) => continue,
                }
            }
            self.execute(task, finish);
        }
        // Turn over: to the back of the FIFO, behind every stream waiting.
        schedule(self);
    }

    fn execute(&self, task: Task, finish: Finish<'_>) {
        let Task { node, prim, inputs } = task;
        debug_assert_eq!(node.0.state.get(), ENQUEUED);
        let data = inputs
            .iter()
            .map(|i| i.0.state.result().expect("input is done"))
            .collect::<Result<Vec<Data>>>();
        // Detach (rule 7): the task lets go of its input arrays before the
        // kernel runs. The kernel keeps their buffers alive through `data`
        // and frees them when done, before anyone can see the result, so an
        // eval that returns has already freed the intermediates it consumed.
        // An input no one else holds leaves its buffer referenced by `data`
        // alone, which a kernel may then reuse in place (slice_update).
        drop(inputs);
        let result = data
            .map_err(|e| match e {
                e @ Error::InputFailed(_) => e,
                e => Error::InputFailed(Arc::new(e)),
            })
            .and_then(|data| {
                KERNELS_RUN.fetch_add(1, Ordering::Relaxed);
                let out = OutSpec { shape: node.shape(), dtype: node.dtype() };
                // A kernel's panic is its node's error, returned to every
                // waiter and not also printed (docs/architecture.md, "Failures").
                catch_silently(|| crate::backend::run(&*self.encoder, &prim, data, out)).unwrap_or_else(|p| {
                    Err(Error::Kernel(format!("{} panicked: {}", prim.name(), panic_message(&*p))))
                })
            });
        drop(node);
        finish.complete(result);
    }

    /// Records `node`'s result and counts its task completed. The runner's
    /// handle on the node is let go inside the count (the closure owns it),
    /// so once `synchronize` sees the task counted, a result no one else
    /// holds is already freed (rule 7: nothing the queue ran stays alive
    /// behind it; rule 8: the count moves exactly once per task).
    fn complete(&self, node: Array, result: Result<Data>) {
        node.0.state.complete(result);
        self.lane.complete(move |position| {
            node.0.exec_position.store(position, Ordering::Release);
            drop(node);
        });
    }

    /// Blocks until every task pushed before the call has completed.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.lane.wait_drained();
        self.encoder.synchronize()
    }
}

/// Completes a task's node exactly once: with its result, or, if dropped
/// while armed (a panic in the runner between taking the task and its
/// completion), with `Error::Internal`, so the node's waiters wake and the
/// queue's counters stay right (rule 8).
struct Finish<'a> {
    queue: &'a Queue,
    node: Option<Array>,
}

impl Finish<'_> {
    fn complete(mut self, result: Result<Data>) {
        if let Some(node) = self.node.take() {
            self.queue.complete(node, result);
        }
    }

    /// The task was parked: it is not finished and will be taken again.
    fn disarm(mut self) {
        self.node = None;
    }
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            let e = Error::Internal(format!("the runner of {} panicked before it completed", node.stream()));
            self.queue.complete(node, Err(e));
        }
    }
}
