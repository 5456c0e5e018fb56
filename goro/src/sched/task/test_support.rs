//! Bare tasks (no runtime) for unit-testing the queues.

use super::Runnable;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default, Clone)]
pub(crate) struct Log {
    pub(crate) ran: Arc<Mutex<Vec<usize>>>,
    dropped: Arc<AtomicUsize>,
}

impl Log {
    pub(crate) fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

struct CountDrop(Arc<AtomicUsize>);
impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A task that logs `id` when run and counts the drop of its future.
pub(crate) fn runnable(id: usize, log: &Log) -> Runnable {
    let ran = log.ran.clone();
    let guard = CountDrop(log.dropped.clone());
    let meta = crate::sched::task::meta::TaskMeta::new(
        std::panic::Location::caller(),
        None,
        None,
        crate::sched::task::meta::Parent::SPAWNER,
        1,
    );
    let (r, t) = super::raw::spawn(
        meta,
        move |_| async move {
            let _g = guard;
            ran.lock().unwrap().push(id);
        },
        |_r: Runnable, _| panic!("test task rescheduled"),
    );
    drop(t);
    r
}
