//! A concrete stream's queue: FIFO tasks run one at a time on the shared
//! worker pool, never by a thread of its own.
//!
//! Invariants:
//! - At most one *runner* per queue exists at a time (`running`), so tasks
//!   run one at a time, in the order they were pushed (docs/architecture.md rule 1).
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

use super::node::{DONE, ENQUEUED};
use crate::array::Array;
use crate::backend::{new_encoder, Encoder};
use crate::buffer::Data;
use crate::primitive::{OutSpec, Primitive};
use crate::stream::Stream;
use crate::sync::{lock_std as lock, wait_std as wait};
use crate::{Error, Result};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

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

struct Inner {
    tasks: VecDeque<Task>,
    /// The head task, taken out while it waits for an input.
    blocked: Option<Task>,
    running: bool,
    submitted: u64,
    completed: u64,
    sleepers: usize,
}

pub(crate) struct Queue {
    encoder: Box<dyn Encoder>,
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl Queue {
    pub(crate) fn new(stream: Stream) -> Result<Queue> {
        Ok(Queue {
            encoder: new_encoder(stream)?,
            inner: Mutex::new(Inner {
                tasks: VecDeque::new(),
                blocked: None,
                running: false,
                submitted: 0,
                completed: 0,
                sleepers: 0,
            }),
            cv: Condvar::new(),
        })
    }

    /// Appends `task`, marking its node ENQUEUED in the same critical section
    /// (lock order: queue, then node).
    pub(crate) fn push(self: &Arc<Self>, task: Task) {
        let mut g = lock(&self.inner);
        let limit = MAX_IN_FLIGHT.load(Ordering::Relaxed) as u64;
        while g.submitted - g.completed >= limit {
            g.sleepers += 1;
            g = wait(&self.cv, g);
            g.sleepers -= 1;
        }
        task.node.0.state.mark_enqueued();
        g.tasks.push_back(task);
        g.submitted += 1;
        if !g.running {
            g.running = true;
            drop(g);
            let q = self.clone();
            pool().spawn(move || q.run());
        }
    }

    /// The runner: executes tasks in order until the queue is empty, an
    /// input is not ready, or its turn is up (then it yields to other queues).
    fn run(self: Arc<Self>) {
        const TURN: usize = 64;
        for _ in 0..TURN {
            let task = {
                let mut g = lock(&self.inner);
                match g.blocked.take().or_else(|| g.tasks.pop_front()) {
                    Some(t) => t,
                    None => {
                        g.running = false;
                        return;
                    }
                }
            };
            if let Some(missing) = task.inputs.iter().find(|i| i.0.state.get() != DONE).cloned() {
                lock(&self.inner).blocked = Some(task);
                let q = self.clone();
                let restart = Box::new(move || pool().spawn(move || q.run()));
                match missing.0.state.on_done(restart) {
                    // The input's completion restarts this queue.
                    Ok(()) => return,
                    // Done in the meantime: pick the task up again.
                    Err(_) => continue,
                }
            }
            self.execute(task);
        }
        let q = self.clone();
        pool().spawn(move || q.run());
    }

    fn execute(&self, task: Task) {
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
                catch_unwind(AssertUnwindSafe(|| crate::backend::run(&*self.encoder, &prim, data, out)))
                    .unwrap_or_else(|p| Err(Error::Kernel(panic_message(&prim, p))))
            });
        node.0.state.complete(result);
        let mut g = lock(&self.inner);
        node.0.exec_position.store(g.completed, Ordering::Release);
        g.completed += 1;
        if g.sleepers > 0 {
            self.cv.notify_all();
        }
    }

    /// Blocks until every task pushed before the call has completed.
    pub(crate) fn synchronize(&self) -> Result<()> {
        let mut g = lock(&self.inner);
        let target = g.submitted;
        while g.completed < target {
            g.sleepers += 1;
            g = wait(&self.cv, g);
            g.sleepers -= 1;
        }
        drop(g);
        self.encoder.synchronize()
    }
}

fn panic_message(prim: &Primitive, p: Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("{} panicked: {msg}", prim.name())
}
