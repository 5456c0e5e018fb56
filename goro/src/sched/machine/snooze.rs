//! One M at a time looks again for work (seed 000, [`Snoozers::One`]).
//!
//! An M that found nothing to run or steal does not park at once: it spins
//! and yields for a few microseconds and looks again (`find.rs`, step 6),
//! because a park and the wake that ends it cost more than that. The look
//! pays off for the first M that runs dry: work that turns up a moment
//! later is taken without a futex wake. Every further M looking at the same
//! time only adds a core spent reading the busy Ps' queues, and a thief
//! that takes each task a busy P bumps out of its `runnext` to another core,
//! where it fights over the lines of the channel or mutex that readied it.
//! With fifteen Ms looking again on 16 cores, fan-in spent 852 ns a value
//! where none looking took 260 (Go 332), and the contended rows four to
//! twelve times Go's CPU (BENCH_RESULTS.md, "16 cores at last").
//!
//! So the look is a token: an M takes it before its first look (one load,
//! then one compare-exchange if it looked free), keeps it while it looks again, and
//! gives it back when it finds work or gives up; an M that finds the token
//! taken gives its P back at once, as Go's `findRunnable` does after its
//! steal passes. The token only decides who looks longer; the publish,
//! fence, re-check pairing that keeps wakes from being lost runs after
//! every search the same way (`processor/idle.rs`), so a wrong answer
//! costs time, never a task. The loom model
//! `loom_snooze_one_m_looks_again_and_the_token_comes_back` holds the two
//! things it must: two Ms never look again together, and the token is free
//! once both are done.
//!
//! Rejected, on 2 cores at procs 2 (where at most one M looks again most
//! of the time, so the rows barely move, 2026-11-29): none looking again
//! (`spin=bounded:0:0`), which costs the hand-off rows about 1.5× (a
//! `ping_pong` hop then often pays a park and a futex wake).
//!
//! [`Snoozers::One`]: crate::Snoozers::One

use crate::loom::{AtomicBool, Ordering};
use crate::Snoozers;

/// The right to look again, one per runtime (in `Idle`).
pub(crate) struct SnoozeToken {
    taken: AtomicBool,
}

impl SnoozeToken {
    pub(crate) fn new() -> SnoozeToken {
        SnoozeToken {
            taken: AtomicBool::new(false),
        }
    }

    /// A search's hold on the token: none yet.
    pub(crate) fn holder(&self, policy: Snoozers) -> Snoozer<'_> {
        Snoozer {
            token: self,
            all: policy == Snoozers::All,
            held: false,
        }
    }
}

/// One search's hold on the [`SnoozeToken`]; gives it back when dropped.
pub(crate) struct Snoozer<'a> {
    token: &'a SnoozeToken,
    /// [`Snoozers::All`]: every M may look again; the token is not used.
    all: bool,
    held: bool,
}

impl Snoozer<'_> {
    /// Whether this M may look again: it holds the token, takes it now, or
    /// the policy lets every M look.
    #[inline]
    pub(crate) fn may_look_again(&mut self) -> bool {
        if self.all {
            return true;
        }
        if !self.held {
            // A load first: an M that finds it taken leaves the line shared.
            // Acquire: the previous holder's looks happen before ours. A
            // compare-exchange, not a swap: a loser writes nothing (and
            // loom 0.7 lets a store slip inside a swap, tokio-rs/loom#254,
            // which fails the model with a swap that is correct).
            self.held = !self.token.taken.load(Ordering::Relaxed)
                && self
                    .token
                    .taken
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok();
        }
        self.held
    }

    /// Gives the token back (the look ended: work found, or giving up).
    #[inline]
    pub(crate) fn release(&mut self) {
        if self.held {
            self.held = false;
            // Release: pairs with the next holder's Acquire compare-exchange.
            self.token.taken.store(false, Ordering::Release);
        }
    }
}

impl Drop for Snoozer<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_to_one_holder_and_comes_back_on_drop() {
        let t = SnoozeToken::new();
        let mut a = t.holder(Snoozers::One);
        let mut b = t.holder(Snoozers::One);
        assert!(a.may_look_again(), "a free token is taken");
        assert!(a.may_look_again(), "its holder keeps it");
        assert!(!b.may_look_again(), "a taken token is refused");
        drop(a);
        assert!(b.may_look_again(), "a dropped holder gave it back");
        b.release();
        assert!(!t.taken.load(Ordering::Relaxed), "released");
    }

    #[test]
    fn under_all_every_m_looks_again_and_the_token_stays_free() {
        let t = SnoozeToken::new();
        let mut a = t.holder(Snoozers::All);
        let mut b = t.holder(Snoozers::All);
        assert!(a.may_look_again() && b.may_look_again());
        assert!(!t.taken.load(Ordering::Relaxed));
    }
}
