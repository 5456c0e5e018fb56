//! Bounded waiting (seed 000: "don't burn CPU unnecessarily").
//!
//! Every wait inside the runtime goes through a [`Backoff`]: a few rounds of
//! active spinning (each a doubling burst of `pause` instructions), then a few
//! `sched_yield`s, then the caller parks. Active spinning is only worth it for
//! waits of about the cost of a context switch; once a wait runs several times
//! longer than expected, the thread being waited for is probably descheduled,
//! and spinning only steals its CPU. Under `SpinPolicy::Unbounded` (the
//! seed's "before") the wait spins without ever yielding.

use crate::runtime::policy::SpinPolicy;

/// One wait's progress through spin → yield → park.
#[derive(Debug)]
pub(crate) struct Backoff {
    step: u32,
    policy: SpinPolicy,
}

/// Cap on the doubling burst of `pause` instructions (2^6 = 64 pauses).
const MAX_BURST_SHIFT: u32 = 6;

impl Backoff {
    pub(crate) fn new(policy: SpinPolicy) -> Backoff {
        Backoff { step: 0, policy }
    }

    /// Waits a little. Returns `false` once the budget is spent and the caller
    /// should park instead (never, under `Unbounded`: it only spins).
    pub(crate) fn snooze(&mut self) -> bool {
        match self.policy {
            SpinPolicy::Bounded { spin, yield_ } => {
                if self.step < spin {
                    burst(self.step);
                } else if self.step < spin + yield_ {
                    crate::loom::thread::yield_now();
                } else {
                    return false;
                }
            }
            SpinPolicy::Unbounded => burst(self.step),
        }
        self.step = self.step.saturating_add(1);
        true
    }

    /// Whether the spin-and-yield budget is spent (always `false` when unbounded).
    pub(crate) fn is_completed(&self) -> bool {
        match self.policy {
            SpinPolicy::Bounded { spin, yield_ } => self.step >= spin + yield_,
            SpinPolicy::Unbounded => false,
        }
    }

    /// How many rounds this wait took; recorded in stats.
    pub(crate) fn steps(&self) -> u32 {
        self.step
    }
}

fn burst(step: u32) {
    for _ in 0..(1u32 << step.min(MAX_BURST_SHIFT)) {
        crate::loom::spin_loop();
    }
}
