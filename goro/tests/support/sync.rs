//! Helpers shared by the `sync_*` tests (`support::sync`): deadline-bounded
//! threads, manually polled futures with counting wakers, and `yield_now`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

/// How long any test waits for anything before it fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// A thread whose completion is awaited with [`DEADLINE`].
pub struct Deadlined<T> {
    what: String,
    rx: mpsc::Receiver<T>,
    handle: thread::JoinHandle<()>,
}

/// Runs `f` on a new thread; `what` names it in the failure message.
pub fn spawn<T, F>(what: impl Into<String>, f: F) -> Deadlined<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let what = what.into();
    let (tx, rx) = mpsc::channel();
    let handle = thread::Builder::new()
        .name(what.clone())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn test thread");
    Deadlined { what, rx, handle }
}

impl<T> Deadlined<T> {
    /// The thread's result; panics if it does not finish within [`DEADLINE`],
    /// and re-raises its panic if it panicked.
    pub fn join(self) -> T {
        match self.rx.recv_timeout(DEADLINE) {
            Ok(v) => {
                self.handle.join().expect("thread finished");
                v
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "{} did not finish within {:?} (deadlock or lost wake-up?)",
                    self.what, DEADLINE
                )
            }
            Err(RecvTimeoutError::Disconnected) => match self.handle.join() {
                Err(payload) => std::panic::resume_unwind(payload),
                Ok(()) => unreachable!("{} ended without a result", self.what),
            },
        }
    }
}

/// A waker that counts its wake-ups.
pub struct WakeCounter(AtomicUsize);

impl Wake for WakeCounter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker and the counter of its wake-ups.
pub fn counting_waker() -> (Waker, Arc<WakeCounter>) {
    let c = Arc::new(WakeCounter(AtomicUsize::new(0)));
    (Waker::from(c.clone()), c)
}

impl WakeCounter {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// One manually polled future with its own counting waker.
pub struct Probe<F: Future> {
    fut: Pin<Box<F>>,
    waker: Waker,
    wakes: Arc<WakeCounter>,
}

impl<F: Future> Probe<F> {
    pub fn new(fut: F) -> Probe<F> {
        let (waker, wakes) = counting_waker();
        Probe {
            fut: Box::pin(fut),
            waker,
            wakes,
        }
    }

    pub fn poll(&mut self) -> Poll<F::Output> {
        self.fut
            .as_mut()
            .poll(&mut Context::from_waker(&self.waker))
    }

    /// Polls and expects `Pending`; `what` explains the expectation.
    pub fn pending(&mut self, what: &str) {
        assert!(self.poll().is_pending(), "expected Pending: {what}");
    }

    /// Polls and expects `Ready`; `what` explains the expectation.
    pub fn ready(&mut self, what: &str) -> F::Output {
        match self.poll() {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("expected Ready: {what}"),
        }
    }

    pub fn wakes(&self) -> usize {
        self.wakes.count()
    }
}

/// A future that yields to the executor once.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}
