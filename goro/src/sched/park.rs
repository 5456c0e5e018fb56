//! How a worker thread (M) sleeps and is handed work (Go's `stopm`/`startm`
//! and `notesleep`/`notewakeup` on `m.park`).
//!
//! An idle M sits on the idle M list with its own `Parker`. Whoever wakes it
//! (`startm`) first takes it off the list under the idle lock, then hands it a
//! P (and says whether it should spin) through the parker. The handoff is a
//! value, not a flag: the sleeper cannot miss it, and a spurious wakeup of the
//! condition variable just re-checks the slot.
//!
//! A sleeping M uses a futex wait (via `Condvar`) with no timeout, so an idle
//! runtime makes no wakeups at all. Timers will bound the wait (issue: timers).

use crate::loom::{Condvar, Mutex};
use std::time::Duration;

/// What a parked M is woken with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handoff {
    /// Run with P `p`; `spinning` if the waker counted this M as spinning.
    P { p: usize, spinning: bool },
    /// The runtime is shutting down: exit the thread.
    Exit,
    /// (To the timer sleeper) a timer earlier than its deadline was armed.
    Recheck,
}

pub(crate) struct Parker {
    slot: Mutex<Option<Handoff>>,
    cv: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            slot: Mutex::new(None),
            cv: Condvar::new(),
        }
    }

    /// Hands `h` to the parked M and wakes it.
    pub(crate) fn unpark(&self, h: Handoff) {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match (*slot, h) {
            // A re-check never displaces a real handoff (that would lose a P).
            (Some(_), Handoff::Recheck) => return,
            // Exit overrides anything (shutdown: the P no longer matters);
            // a P handoff overrides a pending re-check.
            (None, _) | (Some(Handoff::Recheck), _) | (_, Handoff::Exit) => {}
            (Some(old), new) => panic!("goro: double handoff to one M ({old:?}, then {new:?})"),
        }
        *slot = Some(h);
        drop(slot);
        self.cv.notify_one();
    }

    /// Sleeps until handed something, or until `timeout` (if any) passes.
    pub(crate) fn park(&self, timeout: Option<Duration>) -> Option<Handoff> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(h) = slot.take() {
                return Some(h);
            }
            match timeout {
                None => slot = self.cv.wait(slot).unwrap_or_else(|e| e.into_inner()),
                #[cfg(not(loom))]
                Some(d) => {
                    let (s, res) = self
                        .cv
                        .wait_timeout(slot, d)
                        .unwrap_or_else(|e| e.into_inner());
                    slot = s;
                    if res.timed_out() {
                        return slot.take();
                    }
                }
                #[cfg(loom)]
                Some(_) => slot = self.cv.wait(slot).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}
