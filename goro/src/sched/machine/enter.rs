//! A thread entering a runtime without becoming one of its workers: a
//! `block_on` caller sets the thread's runtime for as long as it drives its
//! future, so what it spawns or wakes finds the runtime (through the global
//! queue: it holds no P).

use crate::sched::context::{held_id, CTX};
use crate::sched::Sched;
use std::sync::Arc;

/// Sets the thread's runtime for the life of the guard (a `block_on` caller).
pub(crate) struct EnterGuard {
    prev: *const Sched,
    _sched: Arc<Sched>,
}

impl EnterGuard {
    pub(crate) fn enter(sched: Arc<Sched>) -> EnterGuard {
        let prev = CTX.with(|c| c.sched.replace(Arc::as_ptr(&sched)));
        EnterGuard {
            prev,
            _sched: sched,
        }
    }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        CTX.with(|c| c.sched.set(self.prev));
    }
}

/// True if the current thread is a worker of some runtime (it holds or may
/// hold a P); blocking such a thread outside `block_in_place` stalls a P.
pub(crate) fn on_worker_thread() -> bool {
    CTX.try_with(|c| held_id(c).is_some()).unwrap_or(false)
}
