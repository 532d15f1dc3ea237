//! The life of one graph node, as a small state machine shared by every
//! thread that evaluates, waits on or consumes it.
//!
//! ```text
//!   PENDING --try_claim (one CAS winner)--> CLAIMED --mark_enqueued--> ENQUEUED --complete--> DONE
//!   (constants are born DONE)
//! ```
//!
//! Invariants:
//! - `state` only moves forward. Exactly one thread wins `try_claim`; only
//!   that thread (the node's *owner*) calls `mark_enqueued`, and only the
//!   stream that runs the node calls `complete`, once (docs/architecture.md rule 5).
//! - `ENQUEUED` and `DONE` are stored while holding `inner`, and waiters check
//!   the state while holding `inner`, so no wake-up is lost.
//! - `inner.result` is `Some` exactly when the state is `DONE`; it never
//!   changes after that.
//! - Callbacks registered with `on_done` run exactly once: by `complete`, or
//!   never if `on_done` answered that the node was already done (then the
//!   caller carries on itself).

use crate::sync::{lock, wait, AtomicU8, Condvar, Mutex, Ordering};

pub(crate) const PENDING: u8 = 0;
pub(crate) const CLAIMED: u8 = 1;
pub(crate) const ENQUEUED: u8 = 2;
pub(crate) const DONE: u8 = 3;

pub(crate) type Callback = Box<dyn FnOnce() + Send>;

struct Inner<T> {
    result: Option<T>,
    callbacks: Vec<Callback>,
    /// Threads blocked on `cv`; `notify_all` is skipped when there are none.
    sleepers: usize,
}

pub(crate) struct NodeState<T> {
    state: AtomicU8,
    inner: Mutex<Inner<T>>,
    cv: Condvar,
}

impl<T: Clone> NodeState<T> {
    pub(crate) fn pending() -> Self {
        Self::with(PENDING, None)
    }

    pub(crate) fn done(result: T) -> Self {
        Self::with(DONE, Some(result))
    }

    fn with(state: u8, result: Option<T>) -> Self {
        NodeState {
            state: AtomicU8::new(state),
            inner: Mutex::new(Inner { result, callbacks: Vec::new(), sleepers: 0 }),
            cv: Condvar::new(),
        }
    }

    pub(crate) fn get(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// PENDING -> CLAIMED. True for exactly one caller.
    pub(crate) fn try_claim(&self) -> bool {
        self.state
            .compare_exchange(PENDING, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// CLAIMED -> ENQUEUED, by the owner, once the node's task sits in its
    /// stream's queue (or is about to, under that queue's lock).
    pub(crate) fn mark_enqueued(&self) {
        let g = lock(&self.inner);
        debug_assert_eq!(self.state.load(Ordering::Relaxed), CLAIMED);
        self.state.store(ENQUEUED, Ordering::Release);
        if g.sleepers > 0 {
            self.cv.notify_all();
        }
    }

    /// Sets the result and wakes everyone waiting: sleeping threads and
    /// registered callbacks (run here, after the lock is released).
    pub(crate) fn complete(&self, result: T) {
        let callbacks = {
            let mut g = lock(&self.inner);
            debug_assert_ne!(self.state.load(Ordering::Relaxed), DONE);
            g.result = Some(result);
            self.state.store(DONE, Ordering::Release);
            if g.sleepers > 0 {
                self.cv.notify_all();
            }
            std::mem::take(&mut g.callbacks)
        };
        for cb in callbacks {
            cb();
        }
    }

    /// Blocks until the state is at least `target`.
    pub(crate) fn wait_for(&self, target: u8) {
        if self.get() >= target {
            return;
        }
        let mut g = lock(&self.inner);
        while self.state.load(Ordering::Acquire) < target {
            g.sleepers += 1;
            g = wait(&self.cv, g);
            g.sleepers -= 1;
        }
    }

    /// Blocks until DONE and returns the result.
    pub(crate) fn wait_result(&self) -> T {
        self.wait_for(DONE);
        self.result().expect("DONE node has a result")
    }

    /// The result, if DONE.
    pub(crate) fn result(&self) -> Option<T> {
        if self.get() != DONE {
            return None;
        }
        lock(&self.inner).result.clone()
    }

    /// Runs `cb` when the node is DONE. Returns `Err(cb)` without
    /// registering if it is DONE already.
    pub(crate) fn on_done(&self, cb: Callback) -> Result<(), Callback> {
        let mut g = lock(&self.inner);
        if self.state.load(Ordering::Acquire) == DONE {
            return Err(cb);
        }
        g.callbacks.push(cb);
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn one_claim_wins_and_waiters_see_the_result() {
        for _ in 0..200 {
            let n = Arc::new(NodeState::<u32>::pending());
            let wins = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let (n, wins) = (n.clone(), wins.clone());
                    std::thread::spawn(move || {
                        if n.try_claim() {
                            wins.fetch_add(1, Ordering::SeqCst);
                            n.mark_enqueued();
                            n.complete(7);
                        }
                        n.wait_result()
                    })
                })
                .collect();
            for h in hs {
                assert_eq!(h.join().unwrap(), 7);
            }
            assert_eq!(wins.load(Ordering::SeqCst), 1);
        }
    }
}

/// Model checks of the state machine: run with
/// `RUSTFLAGS="--cfg loom" cargo test -p weft-loom --release`
/// (crates/weft-loom compiles this file on its own).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicUsize;
    use loom::sync::Arc;
    use loom::thread;

    /// Two evals race to claim one node: exactly one wins, runs it, and
    /// the other sees the result after waiting.
    #[test]
    fn claim_is_exclusive_and_waiters_see_the_result() {
        loom::model(|| {
            let n = Arc::new(NodeState::<u32>::pending());
            let runs = Arc::new(AtomicUsize::new(0));
            let eval = |n: Arc<NodeState<u32>>, runs: Arc<AtomicUsize>| {
                move || {
                    if n.try_claim() {
                        runs.fetch_add(1, Ordering::SeqCst);
                        n.mark_enqueued();
                        n.complete(42);
                    }
                    n.wait_result()
                }
            };
            let t = thread::spawn(eval(n.clone(), runs.clone()));
            let mine = eval(n.clone(), runs.clone())();
            assert_eq!(t.join().unwrap(), 42);
            assert_eq!(mine, 42);
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        });
    }

    /// A consumer on another stream registers a callback while the producer
    /// completes: the callback runs exactly once, or registration reports the
    /// node done — never both, never neither (no lost wake-up).
    #[test]
    fn on_done_never_loses_a_wakeup() {
        loom::model(|| {
            let n = Arc::new(NodeState::<u32>::pending());
            assert!(n.try_claim());
            n.mark_enqueued();
            let fired = Arc::new(AtomicUsize::new(0));
            let producer = {
                let n = n.clone();
                thread::spawn(move || n.complete(7))
            };
            let f = fired.clone();
            let registered = n.on_done(Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            }));
            producer.join().unwrap();
            let expected = if registered.is_ok() { 1 } else { 0 };
            assert_eq!(fired.load(Ordering::SeqCst), expected);
            assert_eq!(n.result(), Some(7));
        });
    }

    /// A thread waiting for a foreign node to be enqueued wakes once the
    /// owner enqueues it.
    #[test]
    fn wait_for_enqueued_wakes() {
        loom::model(|| {
            let n = Arc::new(NodeState::<u32>::pending());
            assert!(n.try_claim());
            let waiter = {
                let n = n.clone();
                thread::spawn(move || {
                    n.wait_for(ENQUEUED);
                    assert!(n.get() >= ENQUEUED);
                })
            };
            n.mark_enqueued();
            waiter.join().unwrap();
            n.complete(1);
            assert_eq!(n.wait_result(), 1);
        });
    }
}
