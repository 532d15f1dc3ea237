//! The warmers' bookkeeping (`warm.rs`): how many CPU runners are active and
//! how many warmer *slots* are held, as a state machine of its own so that
//! loom checks it (crates/weft-loom compiles this file alone; the model
//! tests are at the bottom).
//!
//! Invariants:
//! - `warmers <= max` after every `claim`, and `warmers <= max + 1` at all
//!   times: a runner that a warmer picked up borrows that warmer's slot
//!   (`enter(true)`), which lets one more warmer be claimed, and gives it
//!   back when it ends (`leave(true)`); the warmer beneath then finds the
//!   surplus and leaves (`leave_if_surplus`). With `max = pool size - 1`,
//!   slots never exceed the pool.
//! - No active runner is left without a warmer: a runner claims after it
//!   counts itself active, and a leaving warmer looks for active runners
//!   after it gives its slot up (`release`). Each side's two steps are
//!   read-modify-writes on the two counters, so whichever of the two
//!   `warmers` updates comes second sees the other side's first step: the
//!   runner's claim finds the freed slot, or the warmer finds the runner
//!   and claims again. (`claim` writes even when it claims nothing so that
//!   this holds with acquire/release alone, which is what loom checks.)
//! - Slots are conserved: every claim is matched by one `release` or one
//!   successful `leave_if_surplus`, so once runners and warmers are gone
//!   `warmers` is 0.

use crate::sync::{AtomicUsize, Ordering};

/// Active CPU runners and held warmer slots (see the module docs).
pub(crate) struct Slots {
    active: AtomicUsize,
    warmers: AtomicUsize,
    /// The most slots held at once.
    peak: AtomicUsize,
}

impl Slots {
    pub(crate) fn new() -> Slots {
        Slots { active: AtomicUsize::new(0), warmers: AtomicUsize::new(0), peak: AtomicUsize::new(0) }
    }

    /// A runner starts; `lent`: the warmer beneath it on its thread lends
    /// it its slot for the run.
    pub(crate) fn enter(&self, lent: bool) {
        self.active.fetch_add(1, Ordering::SeqCst);
        if lent {
            self.warmers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// A runner ends; a lent slot comes back to its warmer.
    pub(crate) fn leave(&self, lent: bool) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        if lent {
            self.hold_one();
        }
    }

    /// Claims one slot if fewer than `max` are held: the caller then starts
    /// one warmer, which owns the slot.
    pub(crate) fn claim(&self, max: usize) -> bool {
        // Always a write (the same value when full): see the module docs.
        let n = self.warmers.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(if n < max { n + 1 } else { n }));
        let n = n.unwrap_or_else(|n| n);
        if n < max {
            self.peak.fetch_max(n + 1, Ordering::SeqCst);
        }
        n < max
    }

    /// Gives up the caller's slot if more than `max` are held.
    pub(crate) fn leave_if_surplus(&self, max: usize) -> bool {
        self.warmers.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n > max).then(|| n - 1)).is_ok()
    }

    /// A warmer gives up its slot. Returns whether a runner is active (its
    /// caller then claims again, so that the runner keeps a warmer).
    pub(crate) fn release(&self) -> bool {
        self.warmers.fetch_sub(1, Ordering::SeqCst);
        // A read-modify-write, for the same reason as in `claim`.
        self.active.fetch_add(0, Ordering::SeqCst) > 0
    }

    /// Whether a CPU runner is active now.
    pub(crate) fn any_active(&self) -> bool {
        self.active.load(Ordering::SeqCst) > 0
    }

    /// Slots held now, and the most held at once.
    pub(crate) fn held(&self) -> (usize, usize) {
        (self.warmers.load(Ordering::SeqCst), self.peak.load(Ordering::SeqCst))
    }

    fn hold_one(&self) {
        let n = self.warmers.fetch_add(1, Ordering::SeqCst);
        self.peak.fetch_max(n + 1, Ordering::SeqCst);
    }
}

/// Model checks: `RUSTFLAGS="--cfg loom" cargo test -p weft-loom --release`.
/// Threads play runners and warmers through the calls `warm.rs` makes; a
/// "spawned warmer" is a claim whose slot the test later releases.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A runner enters while the only warmer leaves (it saw no runner a
    /// moment ago): afterwards, with the runner still active, some slot is
    /// held (the runner claimed the freed one, or the warmer claimed again),
    /// and never more than `max`.
    #[test]
    fn a_runner_entering_as_the_last_warmer_leaves_keeps_a_warmer() {
        loom::model(|| {
            let s = Arc::new(Slots::new());
            assert!(s.claim(1)); // the warmer
            let s2 = s.clone();
            let runner = thread::spawn(move || {
                s2.enter(false);
                s2.claim(1)
            });
            let again = s.release() && s.claim(1);
            let claimed = runner.join().unwrap();
            let (held, peak) = s.held();
            assert!(s.any_active());
            assert_eq!(held, claimed as usize + again as usize, "slots lost or made up");
            assert!(held >= 1, "an active runner has no warmer");
            assert!(peak <= 1, "more than max slots: {peak}");
        });
    }

    /// A warmer lends its slot to the runner it picked up while another
    /// runner enters and claims; the lent slot comes back and the warmer
    /// leaves if it is surplus. Slots never pass `max + 1` (the pool), and
    /// after everyone leaves none is held.
    #[test]
    fn lent_slots_stay_within_the_pool_and_all_come_back() {
        loom::model(|| {
            const MAX: usize = 1;
            let s = Arc::new(Slots::new());
            assert!(s.claim(MAX)); // warmer W, about to pick up runner A
            let s2 = s.clone();
            let b = thread::spawn(move || {
                // Runner B on another thread: enters, claims, ends.
                s2.enter(false);
                let claimed = s2.claim(MAX);
                s2.leave(false);
                claimed
            });
            // W's thread: runner A borrows W's slot, claims one, ends.
            s.enter(true);
            let a_claimed = s.claim(MAX);
            s.leave(true);
            // W goes on, leaving if surplus, else when idle.
            if !s.leave_if_surplus(MAX) {
                s.release();
            }
            let b_claimed = b.join().unwrap();
            let (held, peak) = s.held();
            assert!(peak <= MAX + 1, "slots passed the pool: {peak}");
            assert_eq!(held, a_claimed as usize + b_claimed as usize, "slots lost or made up");
            // The warmers those claims started leave in turn.
            for _ in 0..held {
                s.release();
            }
            assert_eq!(s.held().0, 0);
            assert!(!s.any_active());
        });
    }
}
