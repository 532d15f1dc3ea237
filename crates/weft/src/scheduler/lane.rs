//! The bookkeeping of one concrete stream's queue, apart from what runs a
//! task, so the loom model checks (crates/weft-loom) explore it with the
//! very code `queue.rs` runs. `queue.rs` owns the pool, the ready FIFO's
//! pickers and the kernels; this file owns who may run and when.
//!
//! ```text
//!   push ──> tasks ──take──> (runner) ──complete──> completed += 1
//!              ^               │ input not done
//!              └─── blocked <──┘ park; the input's completion reschedules
//! ```
//!
//! Invariants (docs/architecture.md rules 1 and 8):
//! - `running` is true exactly while one runner exists or is scheduled. It is
//!   set by the `push` that finds it false (that caller schedules the runner)
//!   and cleared only by `take` finding no task, in the same critical section
//!   that saw the queue empty: a task pushed after that sees `running` false
//!   and schedules a new runner, so no task is left without one.
//! - Tasks are taken in push order; a parked (`blocked`) task is the head and
//!   is taken before any later one, so a stream runs its tasks in order.
//! - `submitted - completed` is the work in flight; `push` waits while it is
//!   at the limit. `complete` moves `completed` for failed tasks too, and
//!   wakes sleepers, so a waiter in `push` or `synchronize` always wakes.

use crate::sync::{lock, wait, Condvar, Mutex};
use std::collections::VecDeque;

struct State<T> {
    tasks: VecDeque<T>,
    /// The head task, taken out while it waits for an input.
    blocked: Option<T>,
    running: bool,
    submitted: u64,
    completed: u64,
    /// Threads blocked on `cv` (in `push` or `synchronize`).
    sleepers: usize,
}

pub(crate) struct Lane<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
}

impl<T> Lane<T> {
    pub(crate) fn new() -> Self {
        Lane {
            state: Mutex::new(State {
                tasks: VecDeque::new(),
                blocked: None,
                running: false,
                submitted: 0,
                completed: 0,
                sleepers: 0,
            }),
            cv: Condvar::new(),
        }
    }

    /// Appends `task` once fewer than `limit` tasks are in flight, calling
    /// `on_push(&task)` in the same critical section (the scheduler marks the
    /// node ENQUEUED there: lock order lane, then node). Returns true when the
    /// lane had no runner: the caller must schedule one.
    pub(crate) fn push(&self, task: T, limit: u64, on_push: impl FnOnce(&T)) -> bool {
        let mut g = lock(&self.state);
        while g.submitted - g.completed >= limit.max(1) {
            g.sleepers += 1;
            g = wait(&self.cv, g);
            g.sleepers -= 1;
        }
        on_push(&task);
        g.tasks.push_back(task);
        g.submitted += 1;
        !std::mem::replace(&mut g.running, true)
    }

    /// The runner's next task: the parked head first, then the oldest. `None`
    /// ends the runner (`running` cleared in the same critical section).
    pub(crate) fn take(&self) -> Option<T> {
        let mut g = lock(&self.state);
        let next = g.blocked.take().or_else(|| g.tasks.pop_front());
        if next.is_none() {
            g.running = false;
        }
        next
    }

    /// Puts the head task back while it waits for an input; the runner stays
    /// (`running` remains true) until whoever restarts it calls `take`.
    pub(crate) fn park(&self, task: T) {
        let mut g = lock(&self.state);
        debug_assert!(g.blocked.is_none(), "one parked task per lane");
        g.blocked = Some(task);
    }

    /// Counts one taken task finished (with any result), first handing
    /// `record` its position in the lane's execution order, in the same
    /// critical section: whoever sees the count moved sees what was recorded.
    pub(crate) fn complete(&self, record: impl FnOnce(u64)) {
        let mut g = lock(&self.state);
        record(g.completed);
        g.completed += 1;
        if g.sleepers > 0 {
            self.cv.notify_all();
        }
    }

    /// Blocks until every task pushed before the call has completed.
    pub(crate) fn wait_drained(&self) {
        let mut g = lock(&self.state);
        let target = g.submitted;
        while g.completed < target {
            g.sleepers += 1;
            g = wait(&self.cv, g);
            g.sleepers -= 1;
        }
    }

    /// After a runner panicked outside a kernel: true when the lane still has
    /// work and the caller must schedule it again; false when it is idle now.
    pub(crate) fn resume_after_panic(&self) -> bool {
        let mut g = lock(&self.state);
        let work = g.blocked.is_some() || !g.tasks.is_empty();
        if !work {
            g.running = false;
        }
        work
    }
}

/// Lanes waiting for a pool thread, oldest first: the FIFO that makes turns
/// fair whatever order the pool runs its jobs in (docs/architecture.md,
/// "Queues").
pub(crate) struct Fifo<Q> {
    ready: Mutex<VecDeque<Q>>,
}

impl<Q> Fifo<Q> {
    pub(crate) fn new() -> Self {
        Fifo { ready: Mutex::new(VecDeque::new()) }
    }

    pub(crate) fn push_back(&self, q: Q) {
        lock(&self.ready).push_back(q);
    }

    pub(crate) fn pop_front(&self) -> Option<Q> {
        lock(&self.ready).pop_front()
    }
}

/// Model checks: `RUSTFLAGS="--cfg loom" cargo test -p weft-loom --release`
/// (crates/weft-loom compiles this file, with node.rs, on its own).
///
/// The model's pool is a job list served by one or two worker threads; `schedule`
/// pushes a lane on the FIFO and one picker job, exactly as queue.rs does,
/// and the runner takes, parks and completes as queue.rs's `run` does, with
/// `TURN` small so turn-overs happen inside the model.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::super::node::{NodeState, DONE, ENQUEUED};
    use super::*;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    const TURN: usize = 1;

    /// Explores every interleaving with up to three preemptions, loom's usual
    /// bound: unbounded, the pool model's state space takes hours, and the
    /// bugs these races can hide need two (a push between a check and a set).
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(f);
    }

    struct Task {
        lane: usize,
        seq: usize,
        node: Arc<NodeState<u32>>,
        /// A node on another lane this task reads (rule 6).
        input: Option<Arc<NodeState<u32>>>,
    }

    struct Pool {
        jobs: Mutex<(usize, bool)>, // (pickers waiting to run, shut down)
        cv: Condvar,
    }

    struct World {
        lanes: Vec<Lane<Task>>,
        fifo: Fifo<usize>,
        pool: Pool,
        /// Per lane: a runner is executing (at most one, rule 1).
        active: Vec<AtomicBool>,
        /// Per lane: the next sequence number expected (push order, rule 1).
        next_seq: Vec<AtomicUsize>,
    }

    impl World {
        fn new(lanes: usize) -> Arc<World> {
            Arc::new(World {
                lanes: (0..lanes).map(|_| Lane::new()).collect(),
                fifo: Fifo::new(),
                pool: Pool { jobs: Mutex::new((0, false)), cv: Condvar::new() },
                active: (0..lanes).map(|_| AtomicBool::new(false)).collect(),
                next_seq: (0..lanes).map(|_| AtomicUsize::new(0)).collect(),
            })
        }

        fn schedule(w: &Arc<World>, lane: usize) {
            w.fifo.push_back(lane);
            let mut g = lock(&w.pool.jobs);
            g.0 += 1;
            w.pool.cv.notify_one();
        }

        fn push(w: &Arc<World>, task: Task, limit: u64) {
            let lane = task.lane;
            if w.lanes[lane].push(task, limit, |t| t.node.mark_enqueued()) {
                World::schedule(w, lane);
            }
        }

        /// One picker: serves one turn of the oldest ready lane.
        fn pick(w: &Arc<World>) {
            let Some(lane) = w.fifo.pop_front() else { return };
            assert!(!w.active[lane].swap(true, Ordering::SeqCst), "two runners on lane {lane}");
            let l = &w.lanes[lane];
            for _ in 0..TURN {
                // `take` finding nothing ends this runner inside the lane's
                // lock, and a push may start the next one at once: this
                // runner counts as gone from just before it looks.
                w.active[lane].store(false, Ordering::SeqCst);
                let Some(task) = l.take() else { return };
                assert!(!w.active[lane].swap(true, Ordering::SeqCst), "two runners on lane {lane}");
                if let Some(input) = task.input.clone().filter(|i| i.get() != DONE) {
                    l.park(task);
                    w.active[lane].store(false, Ordering::SeqCst);
                    let w2 = w.clone();
                    match input.on_done(Box::new(move || World::schedule(&w2, lane))) {
                        Ok(()) => return,
                        // Done meanwhile: the runner carries on itself
                        // (queue.rs: `continue`; the turn counts it).
                        Err(_) => {
                            assert!(!w.active[lane].swap(true, Ordering::SeqCst), "two runners on lane {lane}");
                            continue;
                        }
                    }
                }
                let seq = w.next_seq[lane].fetch_add(1, Ordering::SeqCst);
                assert_eq!(task.seq, seq, "lane {lane} ran out of order");
                if let Some(i) = &task.input {
                    assert_eq!(i.get(), DONE, "a task ran before its input");
                }
                task.node.complete(task.seq as u32);
                l.complete(|_| ());
            }
            w.active[lane].store(false, Ordering::SeqCst);
            World::schedule(w, lane);
        }

        /// A pool thread: runs picker jobs until shut down.
        fn worker(w: Arc<World>) {
            loop {
                let mut g = lock(&w.pool.jobs);
                while g.0 == 0 && !g.1 {
                    g = wait(&w.pool.cv, g);
                }
                if g.0 == 0 {
                    return;
                }
                g.0 -= 1;
                drop(g);
                World::pick(&w);
            }
        }

        /// Starts `n` pool threads; [`Workers::stop`] shuts them down.
        fn start_workers(w: &Arc<World>, n: usize) -> Workers {
            let threads = (0..n)
                .map(|_| {
                    let w = w.clone();
                    thread::spawn(move || World::worker(w))
                })
                .collect();
            Workers { world: w.clone(), threads }
        }
    }

    struct Workers {
        world: Arc<World>,
        threads: Vec<thread::JoinHandle<()>>,
    }

    impl Workers {
        /// Shuts the pool down and joins its threads (each returns once no
        /// picker job is left).
        fn stop(self) {
            lock(&self.world.pool.jobs).1 = true;
            self.world.pool.cv.notify_all();
            for t in self.threads {
                t.join().unwrap();
            }
        }
    }

    fn task(lane: usize, seq: usize, input: Option<Arc<NodeState<u32>>>) -> (Task, Arc<NodeState<u32>>) {
        let node = Arc::new(NodeState::pending());
        assert!(node.try_claim());
        (Task { lane, seq, node: node.clone(), input }, node)
    }

    /// Two threads push onto one lane while the pool runs it: every task
    /// runs once, in order, by one runner at a time, and `wait_drained`
    /// returns only when all of them are done (no lost runner, no lost
    /// wake-up).
    #[test]
    fn one_lane_two_producers_in_order() {
        model(|| {
            let w = World::new(1);
            // Two pool threads, so two runners of one lane could overlap.
            let workers = World::start_workers(&w, 2);
            // One producer at a time per lane holds the order (each thread's
            // pushes are sequenced by the lane's lock): sequence numbers are
            // handed out under a lock the model shares.
            let seq = Arc::new(Mutex::new(0usize));
            let producer = |w: Arc<World>, seq: Arc<Mutex<usize>>| {
                move || {
                    let mut g = lock(&seq);
                    let (t, n) = task(0, *g, None);
                    World::push(&w, t, 8);
                    *g += 1;
                    drop(g);
                    n
                }
            };
            let other = thread::spawn(producer(w.clone(), seq.clone()));
            let mine = producer(w.clone(), seq.clone())();
            let theirs = other.join().unwrap();
            w.lanes[0].wait_drained();
            assert_eq!(mine.get(), DONE);
            assert_eq!(theirs.get(), DONE);
            workers.stop();
        });
    }

    /// A task on lane 1 reads a node of lane 0 pushed after it (the runner
    /// parks it), with the in-flight limit at 1, so the producer of lane 1
    /// also blocks in `push`: both lanes finish, in order, with one pool
    /// thread (the parked lane never holds it).
    #[test]
    fn parked_head_waits_for_another_lane_without_a_thread() {
        model(|| {
            let w = World::new(2);
            let worker = World::start_workers(&w, 1);
            let (a, a_node) = task(0, 0, None);
            let (b, b_node) = task(1, 0, Some(a_node.clone()));
            let (c, c_node) = task(1, 1, None);
            let producer = thread::spawn({
                let w = w.clone();
                move || {
                    World::push(&w, b, 1);
                    World::push(&w, c, 1); // waits until b has run
                }
            });
            World::push(&w, a, 1);
            producer.join().unwrap();
            w.lanes[1].wait_drained();
            w.lanes[0].wait_drained();
            assert_eq!(a_node.get(), DONE);
            assert_eq!(b_node.get(), DONE);
            assert_eq!(c_node.get(), DONE);
            worker.stop();
        });
    }

    /// A runner that panicked after its turn began: `resume_after_panic`
    /// either reschedules the lane (work left) or clears `running`, so a
    /// task pushed concurrently always gets a runner.
    #[test]
    fn resume_after_panic_never_strands_a_task() {
        model(|| {
            let w = World::new(1);
            let (t0, n0) = task(0, 0, None);
            assert!(w.lanes[0].push(t0, 8, |t| t.node.mark_enqueued()));
            // The runner takes and completes t0, then "panics" before it
            // looked at the lane again.
            let t = w.lanes[0].take().unwrap();
            t.node.complete(0);
            w.lanes[0].complete(|_| ());
            w.next_seq[0].store(1, Ordering::SeqCst);
            let producer = thread::spawn({
                let w = w.clone();
                move || {
                    let (t1, n1) = task(0, 1, None);
                    World::push(&w, t1, 8);
                    n1
                }
            });
            if w.lanes[0].resume_after_panic() {
                World::schedule(&w, 0);
            }
            let n1 = producer.join().unwrap();
            let worker = World::start_workers(&w, 1);
            w.lanes[0].wait_drained();
            assert_eq!(n0.get(), DONE);
            assert_eq!(n1.get(), DONE);
            worker.stop();
        });
    }

    /// The claim-then-wait ordering of `scheduler/mod.rs`'s `async_eval`: two
    /// evals of one node race; the one that loses the claim waits until the
    /// winner has pushed it (ENQUEUED) before it returns (issue 10 item 8), so
    /// draining the lane afterwards (`synchronize`) always covers the node.
    #[test]
    fn async_eval_of_a_foreign_claim_is_covered_by_synchronize() {
        model(|| {
            let w = World::new(1);
            let worker = World::start_workers(&w, 1);
            let node = Arc::new(NodeState::<u32>::pending());
            let async_eval = |w: Arc<World>, node: Arc<NodeState<u32>>| {
                move || {
                    if node.try_claim() {
                        World::push(&w, Task { lane: 0, seq: 0, node: node.clone(), input: None }, 8);
                    }
                    node.wait_for(ENQUEUED);
                }
            };
            let other = thread::spawn(async_eval(w.clone(), node.clone()));
            async_eval(w.clone(), node.clone())();
            w.lanes[0].wait_drained();
            assert_eq!(node.get(), DONE, "synchronize returned before a node async_eval had returned for");
            other.join().unwrap();
            worker.stop();
        });
    }
}
