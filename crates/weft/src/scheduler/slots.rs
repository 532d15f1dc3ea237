//! The warmers' bookkeeping (`warm.rs`): how many CPU runners are active and
//! how many warmer *slots* are held, as a state machine of its own so that
//! loom checks it (crates/weft-loom compiles this file alone; the model
//! tests are at the bottom).
//!
//! Invariants:
//! - `warmers <= max` at all times: it grows only by `claim`, which adds
//!   one only while fewer than `max` are held. A runner that a warmer picked
//!   up borrows that warmer's slot (`enter(true)`), which lets another
//!   warmer be claimed meanwhile; when the runner ends (`leave(true)`) the
//!   slot comes back by a `claim`, so if `max` are held by then it does not
//!   come back and the warmer beneath leaves. (Returning it unconditionally
//!   and letting the warmer find the surplus let several lent slots come
//!   back at once: `tests/warm.rs` saw 4 slots on a pool of 3.)
//! - No active runner is left without a warmer: a runner claims after it
//!   counts itself active, and a leaving warmer looks for active runners
//!   after it gives its slot up (`release`). Each side's two steps are
//!   read-modify-writes on the two counters, so whichever of the two
//!   `warmers` updates comes second sees the other side's first step: the
//!   runner's claim finds the freed slot, or the warmer finds the runner
//!   and claims again. (`claim` writes even when it claims nothing so that
//!   this holds with acquire/release alone, which is what loom checks.)
//! - Slots are conserved: every claim is matched by one `release`, or by a
//!   lend whose slot did not come back, so once runners and warmers are
//!   gone `warmers` is 0.

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

    /// A runner ends. Returns whether a lent slot came back to the warmer
    /// beneath (only while fewer than `max` are held; if not, that warmer
    /// has no slot and leaves).
    pub(crate) fn leave(&self, lent: bool, max: usize) -> bool {
        self.active.fetch_sub(1, Ordering::SeqCst);
        lent && self.claim(max)
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

    /// Two warmers each lend their slot to a runner they picked up; each
    /// runner claims one meanwhile, and the lent slots come back if there is
    /// room (both at once was the case that once made 4 slots on a pool of
    /// 3). Slots never pass `max`, and after everyone leaves none is held.
    #[test]
    fn lent_slots_stay_within_max_and_all_come_back() {
        loom::model(|| {
            const MAX: usize = 2;
            let s = Arc::new(Slots::new());
            // Warmers V and W, each about to pick up a runner.
            assert!(s.claim(MAX) && s.claim(MAX));
            let lender = |s: Arc<Slots>| {
                move || {
                    // A runner borrows the warmer's slot, claims one, ends;
                    // the warmer gives its slot up if it came back.
                    s.enter(true);
                    let claimed = s.claim(MAX);
                    if s.leave(true, MAX) {
                        s.release();
                    }
                    claimed
                }
            };
            let v = thread::spawn(lender(s.clone()));
            let w_claimed = lender(s.clone())();
            let claimed = [v.join().unwrap(), w_claimed].iter().filter(|&&c| c).count();
            let (held, peak) = s.held();
            assert!(peak <= MAX, "more than max slots: {peak}");
            assert_eq!(held, claimed, "slots lost or made up");
            // The warmers those claims started leave in turn.
            for _ in 0..held {
                s.release();
            }
            assert_eq!(s.held().0, 0);
            assert!(!s.any_active());
        });
    }
}
