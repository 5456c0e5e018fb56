//! Bounded waiting (seed 000: "don't burn CPU unnecessarily").
//!
//! Every wait inside the runtime goes through a [`Backoff`]: a few rounds of
//! active spinning (each a doubling burst of `pause` instructions), then a few
//! `sched_yield`s, then the caller parks. Active spinning is only worth it for
//! waits of about the cost of a context switch; once a wait runs several times
//! longer than expected, the thread being waited for is probably descheduled,
//! and spinning only steals its CPU. Under `SpinPolicy::Unbounded` (the
//! seed's "before") the wait spins without ever yielding.

use crate::sched::policy::SpinPolicy;

/// One wait's progress through spin → yield → park.
#[derive(Debug)]
pub(crate) struct Backoff {
    step: u32,
    policy: SpinPolicy,
}

/// What one `snooze` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Snooze {
    /// Spun a burst of `pause` instructions.
    Spun,
    /// Called `sched_yield`.
    Yielded,
    /// The budget is spent: park now.
    Done,
}

/// Cap on the doubling burst of `pause` instructions (2^6 = 64 pauses).
const MAX_BURST_SHIFT: u32 = 6;

/// Under `SpinPolicy::Unbounded`, rounds of pure spinning before a wait that
/// can park does so (about 100 µs: the "before" of seed 000 spun through a
/// whole wait, but an idle runtime must still go to sleep eventually).
pub(crate) const UNBOUNDED_ROUNDS: u32 = 2048;

impl Backoff {
    pub(crate) fn new(policy: SpinPolicy) -> Backoff {
        Backoff { step: 0, policy }
    }

    /// Waits a little and says how.
    pub(crate) fn snooze(&mut self) -> Snooze {
        let did = match self.policy {
            SpinPolicy::Bounded { spin, yield_ } => {
                if self.step < spin {
                    burst(self.step);
                    Snooze::Spun
                } else if self.step < spin + yield_ {
                    crate::loom::thread::yield_now();
                    Snooze::Yielded
                } else {
                    Snooze::Done
                }
            }
            SpinPolicy::Unbounded if self.step < UNBOUNDED_ROUNDS => {
                burst(self.step);
                Snooze::Spun
            }
            SpinPolicy::Unbounded => Snooze::Done,
        };
        self.step = self.step.saturating_add(1);
        did
    }
}

fn burst(step: u32) {
    for _ in 0..(1u32 << step.min(MAX_BURST_SHIFT)) {
        crate::loom::spin_loop();
    }
}
