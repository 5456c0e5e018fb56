//! One waiting side of a simulated socket (a pipe's reader or writer, a
//! listener's accept, a UDP socket's receive): its waker, its deadline
//! (Go's rules, as `net/deadline.rs` states them) and the one timer that
//! wakes it.
//!
//! A side waits for two kinds of thing: another task (a write, a read that
//! frees room, a close), which wakes the stored waker, and a moment (bytes
//! in flight becoming due, the deadline passing), which a goro [`Sleep`]
//! kept here wakes. One sleep per side is enough: it is set to the earlier
//! of the two moments each time the side parks, and dropped when the
//! operation completes, so a finished read leaves no timer armed to move a
//! bubble's clock or to keep a deadlock from being seen.
//!
//! Two tasks may wait on one side (two readers of one stream): both are
//! woken by another task's event, but the timer wakes the last to park,
//! and the other looks again at the next event. Sockets are read by one
//! task at a time in practice (hyper, goro-http), so one timer is kept
//! rather than one per waiter.
//!
//! # Rejected
//!
//! - A task per connection that moves due bytes from "in flight" to
//!   "readable": it would be a task the bubble sees as runnable, to
//!   schedule and to wait for, for work the reader can do itself when it
//!   wakes.
//! - An `after_func` timer per deadline, as the real path arms
//!   (`net/deadline.rs`): a deadline set and never waited on would arm a
//!   timer that moves the virtual clock to it for nothing. Here a deadline
//!   costs a timer only while someone waits.

use crate::sched::task::meta::{blocked_on, Reason};
use crate::sched::timer::clock;
use crate::sched::timer::NEVER;
use crate::time::Sleep;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

/// A waiting side: wakers, deadline, timer.
#[derive(Default)]
pub(crate) struct Side {
    /// The tasks waiting (usually one; two tasks may read one stream).
    wakers: Vec<Waker>,
    sleep: Option<Sleep>,
    /// The deadline on the timer clock; 0: none.
    deadline: u64,
}

impl Side {
    /// Whether the deadline has passed (Go: the operation fails at once).
    pub(crate) fn expired(&self) -> bool {
        self.deadline != 0 && self.deadline <= clock::now()
    }

    /// Sets the deadline (`None`: none) and wakes the waiting tasks, which
    /// look again: it fails if the new one has passed, else waits on.
    pub(crate) fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline.map_or(0, clock::when_of);
        self.wake();
    }

    /// Wakes the waiting tasks, if any.
    pub(crate) fn wake(&mut self) {
        std::mem::take(&mut self.wakers)
            .into_iter()
            .for_each(Waker::wake);
    }

    /// The operation completed: the side's timer goes.
    pub(crate) fn done(&mut self) {
        self.sleep = None;
    }

    /// Parks the task of `cx` until a wake, the deadline, or `at` (when
    /// something in flight becomes due; `NEVER`: nothing is), naming
    /// `reason` for the dump. Returns `false` if a moment has already
    /// come (the caller looks again instead of returning `Pending`).
    pub(crate) fn park(&mut self, cx: &mut Context<'_>, at: u64, reason: Reason) -> bool {
        if !self.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            self.wakers.push(cx.waker().clone());
        }
        let deadline = if self.deadline == 0 {
            NEVER
        } else {
            self.deadline
        };
        let at = at.min(deadline);
        if at == NEVER {
            self.sleep = None;
        } else {
            let when = clock::instant_of(at);
            match &mut self.sleep {
                Some(s) if s.deadline() == Some(when) => {}
                Some(s) => s.reset(when),
                None => self.sleep = Some(crate::time::sleep_until(when)),
            }
            let s = self.sleep.as_mut().expect("set above");
            if Pin::new(s).poll(cx).is_ready() {
                self.sleep = None;
                return false;
            }
        }
        blocked_on(reason, self.deadline);
        true
    }
}
