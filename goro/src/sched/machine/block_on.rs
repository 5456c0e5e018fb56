//! Running a future to completion on a thread that is not polling tasks:
//! the engine of every `*_blocking` method (`recv_blocking`,
//! `select_blocking!`, ...). On a worker thread the wait goes through
//! [`crate::block_in_place`], so the P is handed to another thread instead
//! of stalling its queue; elsewhere the thread parks between polls.

use std::future::Future;
use std::task::Waker;
use std::time::Instant;

/// Runs `fut` to completion on the calling thread, parking the thread between
/// polls; the engine of every `*_blocking` method. On a worker thread the
/// wait goes through [`crate::block_in_place`], so the P is handed to another
/// thread instead of stalling its queue. Under `cfg(loom)` it parks through
/// loom, so blocking waits are part of the model.
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    block_on_until(fut, None).expect("no deadline to pass")
}

/// [`block_on`] that gives up at `deadline`: `None` if `fut` had not
/// completed by then (it is dropped, so a cancel-safe future leaves nothing
/// behind). Under `cfg(loom)` a deadline passes as soon as `fut` is pending:
/// loom has no clock.
pub(crate) fn block_on_until<F: Future>(fut: F, deadline: Option<Instant>) -> Option<F::Output> {
    // A bubble's one thread polls every task: parking it would park them
    // all, and nothing could wake it.
    #[cfg(not(loom))]
    if crate::sched::context::sim_now() != 0 {
        panic!(
            "goro: a blocking call (a *_blocking method, block_on) inside a goro::sim bubble \
             would stop every task of the bubble: await the async form instead"
        );
    }
    #[cfg(not(loom))]
    if crate::sched::machine::enter::on_worker_thread() {
        return crate::block_in_place(|| park_on(fut, deadline));
    }
    park_on(fut, deadline)
}

fn park_on<F: Future>(fut: F, deadline: Option<Instant>) -> Option<F::Output> {
    #[cfg(loom)]
    use loom::thread::{self, Thread};
    use std::task::{Context, Poll, Wake};
    #[cfg(not(loom))]
    use std::thread::{self, Thread};

    struct Unparker(Thread);
    impl Wake for Unparker {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(std::sync::Arc::new(Unparker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return Some(out);
        }
        // A wake between the poll and here leaves the unpark token set, so
        // this returns at once; a spurious return only costs a poll.
        match deadline {
            None => thread::park(),
            #[cfg(not(loom))]
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => thread::park_timeout(left),
                _ => return None,
            },
            #[cfg(loom)]
            Some(_) => return None,
        }
    }
}
