//! Helpers shared by the `chan_*` tests (`use support::chan::*;`): a
//! deadline-bounded `within` and `block_on_within`, counting wakers,
//! one-shot polls and drop-counting values.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Every wait in these tests is bounded by this.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `f` on a fresh thread and returns its result, failing the test with
/// `what` if it has not finished within [`DEADLINE`].
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(v) => {
            handle.join().expect("thread finished");
            v
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: did not finish within {DEADLINE:?} (deadlock or lost wakeup?)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The closure panicked: surface its message.
            match handle.join() {
                Err(e) => std::panic::resume_unwind(e),
                Ok(()) => panic!("{what}: thread ended without a result"),
            }
        }
    }
}

/// `futures::executor::block_on(fut)` on a fresh thread, with [`within`]'s deadline.
pub fn block_on_within<F>(what: &str, fut: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    within(what, move || futures::executor::block_on(fut))
}

/// A waker that counts how often it was woken.
#[derive(Default)]
pub struct CountingWaker {
    pub wakes: AtomicUsize,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let c = Arc::new(CountingWaker::default());
    let w = Waker::from(c.clone());
    (c, w)
}

/// Polls `fut` once with `waker`.
pub fn poll_with<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// Polls `fut` once with a waker that does nothing.
pub fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    poll_with(fut, futures::task::noop_waker_ref())
}

/// A value that counts its drops, to check nothing is dropped twice or lost.
#[derive(Debug)]
pub struct Tracked {
    pub id: u32,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
    pub fn new(id: u32, drops: &Arc<AtomicUsize>) -> Tracked {
        Tracked {
            id,
            drops: drops.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs a future that must complete without ever waiting (every operation
/// in it is ready): polls it once and fails the test if it parked.
pub fn ready<F: Future>(what: &str, fut: F) -> F::Output {
    let mut fut = Box::pin(fut);
    match poll_once(&mut fut) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("{what}: expected to complete without waiting, but it parked"),
    }
}
