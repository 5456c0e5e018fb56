//! The global run queue (Go's `sched.runq`).
//!
//! A mutex-protected FIFO for tasks that have no P to go to: tasks spawned or
//! woken from threads that hold no P, and the overflow of full local rings.
//! Ps take from it in batches (`min(128, len, len/procs + 1)`, bounded by the
//! room in their ring) and check it first every 61st slice so that it is
//! never starved by local work. The length is mirrored in an atomic so the
//! common "is it empty?" check takes no lock.

use crate::loom::Unpoison;
use crate::loom::{AtomicUsize, Mutex, Ordering};
use crate::sched::task::Runnable;
use std::collections::VecDeque;

pub(crate) struct GlobalQueue {
    q: Mutex<VecDeque<Runnable>>,
    len: AtomicUsize,
}

/// Most tasks one P takes from the global queue at once.
pub(crate) const GLOBAL_BATCH_MAX: usize = 128;

impl GlobalQueue {
    pub(crate) fn new() -> GlobalQueue {
        GlobalQueue {
            q: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// The length, without the lock. SeqCst: read on the idle side of the
    /// wake protocol (see `idle.rs`), after the fence.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::SeqCst)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn push(&self, task: Runnable) {
        let mut q = self.q.lock().unpoison();
        q.push_back(task);
        self.len.store(q.len(), Ordering::SeqCst);
    }

    pub(crate) fn push_batch(&self, tasks: Vec<Runnable>) {
        let mut q = self.q.lock().unpoison();
        q.extend(tasks);
        self.len.store(q.len(), Ordering::SeqCst);
    }

    /// Go's `globrunqget`: takes a batch for one of `procs` Ps with `room`
    /// free slots; returns the first task to run and the rest for the ring.
    pub(crate) fn take_batch(
        &self,
        procs: usize,
        room: usize,
        max: usize,
    ) -> Option<(Runnable, Vec<Runnable>)> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.q.lock().unpoison();
        let len = q.len();
        if len == 0 {
            return None;
        }
        let n = len
            .min(len / procs + 1)
            .min(GLOBAL_BATCH_MAX)
            .min(room + 1)
            .min(max)
            .max(1);
        let first = q.pop_front()?;
        let rest: Vec<Runnable> = q.drain(..n - 1).collect();
        self.len.store(q.len(), Ordering::SeqCst);
        Some((first, rest))
    }

    pub(crate) fn drain(&self) -> Vec<Runnable> {
        let mut q = self.q.lock().unpoison();
        self.len.store(0, Ordering::SeqCst);
        q.drain(..).collect()
    }
}
