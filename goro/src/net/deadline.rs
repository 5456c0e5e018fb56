//! Read and write deadlines (Go's `SetReadDeadline`, `SetWriteDeadline`,
//! `SetDeadline`).
//!
//! A deadline is an absolute time per direction, kept in the socket's
//! readiness record (`scheduled_io.rs`). Go's rules:
//!
//! * an operation in a direction whose deadline has passed fails at once
//!   with `TimedOut`, even if the socket is ready;
//! * an operation waiting when the deadline passes fails then;
//! * moving the deadline into the future, or clearing it, makes the
//!   direction usable again (the socket is not damaged by a timeout).
//!
//! The first two are decided by comparing the deadline with the clock when
//! an operation polls, so nothing has to be marked expired. What needs a
//! timer is waking the tasks already waiting: each direction owns one
//! internal `after_func`-style timer (`Action::Func`, run inline by
//! whichever P fires it; goro's per-P timers, seed 001), made on first use
//! and re-armed on every change. Its callback holds only a weak reference
//! to the record and wakes the waiters only if the deadline it finds has
//! passed, so a callback that races a move of the deadline is harmless.
//! A deadline set in the past wakes the waiters directly.
//!
//! # Rejected
//!
//! - Wrapping each operation in `time::timeout` (tokio's way): it cannot
//!   express a deadline that outlives one operation, set from another task,
//!   that also fails operations that have not started, as Go's does; and it
//!   arms a timer per operation instead of per deadline change.
//! - A sequence number per arming to discard stale callbacks (Go's
//!   `rseq`/`wseq`): comparing the current deadline with the clock says the
//!   same thing.

use crate::net::poller::Registration;
use crate::net::scheduled_io::{Direction, ScheduledIo};
use crate::sched::machine::netpoll::wake_all;
use crate::sched::timer::clock;
use crate::sched::timer::{Action, Callback, TimerInner, NEVER};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// Sets `dir`'s deadline of `reg` (`None`: no deadline).
pub(crate) fn set(reg: &Registration, dir: Direction, deadline: Option<Instant>) {
    let when = deadline.map_or(0, clock::when_of);
    let mut wake = Vec::new();
    {
        let mut st = reg.io.lock();
        st.halves[dir.index()].deadline = when;
        if when == 0 || when == NEVER {
            stop(&mut st.halves[dir.index()].timer);
        } else if when <= clock::now() {
            // Already passed: waiting operations fail now.
            stop(&mut st.halves[dir.index()].timer);
            ScheduledIo::take_waiters(&mut st, dir, &mut wake);
        } else {
            let half = &mut st.halves[dir.index()];
            if half.timer.is_none() {
                half.timer = new_timer(reg, dir);
            }
            // Armed under the record's lock so that two racing calls arm
            // the timer in the order they set the deadline. The timer's
            // callback never runs under a timer lock, so the lock order
            // record → timer cannot deadlock with it.
            if let Some(t) = &half.timer {
                crate::sched::timer::check::arm_timer(t, when, 0);
            }
        }
    }
    wake_all(&mut wake);
}

fn stop(timer: &mut Option<Arc<TimerInner>>) {
    if let Some(t) = timer {
        crate::sched::timer::check::arm_timer(t, 0, 0);
    }
}

/// The deadline timer of one direction, on the queue of the calling
/// thread's P (or any P of the socket's runtime). `None` if the runtime is
/// gone: deadlines are then still checked when operations poll.
fn new_timer(reg: &Registration, dir: Direction) -> Option<Arc<TimerInner>> {
    let sched = reg.sched.upgrade()?;
    let io: Weak<ScheduledIo> = Arc::downgrade(&reg.io);
    let f: Box<dyn Fn() + Send + Sync> = Box::new(move || {
        if let Some(io) = io.upgrade() {
            let mut out = Vec::new();
            io.take_expired(dir, &mut out);
            wake_all(&mut out);
        }
    });
    let home = sched.arm_queue().0.clone();
    Some(TimerInner::new(
        Action::Func { spawn: false },
        Callback::Boxed(f),
        home,
    ))
}
