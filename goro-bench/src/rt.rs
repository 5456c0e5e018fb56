//! What a workload needs from a runtime, and the small runtime-agnostic
//! synchronisation it is built from.
//!
//! Workloads are written once, generic over [`Rt`] (spawn, yield, sleep, the
//! blocking pool and a bounded channel), and instantiated for goro and
//! tokio, so the two run literally the same code: generics monomorphise, so
//! `R::send(&tx, v)` on [`Goro`] is goro's own `tx.send(v)`. Workloads whose
//! measured operation is a runtime-specific idiom (a `select!`, a timer
//! handle) are written once per runtime, side by side in their group file.
//!
//! [`Latch`] (Go's `WaitGroup` used for "all done") and [`Gate`] (Go's
//! "closed channel as a start signal") are plain waker-based futures, so
//! they cost the same on every runtime and need no channel module.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The runtime operations a generic workload uses. Implemented by the
/// zero-sized [`Goro`] and [`Tokio`]; every call must happen inside a task
/// of that runtime.
///
/// The channel is the one a user of the runtime picks: goro's
/// `goro::chan::bounded` (Go's channel: multi-consumer, capacity 0 is a
/// rendezvous) and tokio's `tokio::sync::mpsc::channel` (one receiver, no
/// rendezvous: capacity 0 becomes 1). A generic workload therefore gives
/// each receiver to exactly one task and receives through `&mut`.
pub trait Rt: Send + Sync + 'static {
    /// The sending half of a bounded channel.
    type Tx<T: Send + 'static>: Clone + Send + Sync + 'static;
    /// The receiving half of a bounded channel (one owner).
    type Rx<T: Send + 'static>: Send + Sync + 'static;
    /// What a send on a closed channel returns.
    type SendError<T>: Debug;
    /// Whether [`Rt::close`] closes a channel that other senders still hold
    /// (Go's `close`: goro). tokio's mpsc closes only when its last sender
    /// is dropped, so a workload that must end tasks holding senders (a
    /// ring) sends them a stop value instead.
    const CAN_CLOSE: bool;

    /// Detached spawn (Go's `go f()`): the handle is dropped.
    fn spawn<F>(f: F)
    where
        F: Future<Output = ()> + Send + 'static;
    /// Go's `runtime.Gosched()`.
    fn yield_now() -> impl Future<Output = ()> + Send;
    /// The runtime's sleep (tokio's rounds up to its 1 ms timer tick).
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send;
    /// Runs `f` on the blocking pool and waits for it; how a workload idles
    /// for a while with every P free: a `thread::sleep` there is exact to
    /// tens of µs on both runtimes, where tokio's timers round up to 1 ms.
    fn run_blocking<R, F>(f: F) -> impl Future<Output = R> + Send
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static;

    /// A bounded channel of capacity `cap` (tokio: `cap.max(1)`).
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>);
    /// Sends `v`, waiting for room (or, goro at capacity 0, a receiver).
    fn send<T: Send + 'static>(
        tx: &Self::Tx<T>,
        v: T,
    ) -> impl Future<Output = Result<(), Self::SendError<T>>> + Send + '_;
    /// Receives a value; `None` once the channel is closed and empty.
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>)
        -> impl Future<Output = Option<T>> + Send + '_;
    /// Closes the channel for every holder where [`Rt::CAN_CLOSE`]; a no-op
    /// otherwise.
    fn close<T: Send + 'static>(tx: &Self::Tx<T>);
}

/// goro.
pub struct Goro;
/// tokio (multi-thread runtime).
pub struct Tokio;

impl Rt for Goro {
    type Tx<T: Send + 'static> = goro::chan::Sender<T>;
    type Rx<T: Send + 'static> = goro::chan::Receiver<T>;
    type SendError<T> = goro::chan::SendError<T>;
    const CAN_CLOSE: bool = true;

    fn spawn<F>(f: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(goro::spawn(f));
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        goro::yield_now()
    }
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        goro::time::sleep(d)
    }
    fn run_blocking<R, F>(f: F) -> impl Future<Output = R> + Send
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let h = goro::spawn_blocking(f);
        async move { h.await.expect("blocking task failed") }
    }

    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        goro::chan::bounded(cap)
    }
    fn send<T: Send + 'static>(
        tx: &Self::Tx<T>,
        v: T,
    ) -> impl Future<Output = Result<(), Self::SendError<T>>> + Send + '_ {
        tx.send(v)
    }
    fn recv<T: Send + 'static>(
        rx: &mut Self::Rx<T>,
    ) -> impl Future<Output = Option<T>> + Send + '_ {
        GoroRecv(rx.recv())
    }
    fn close<T: Send + 'static>(tx: &Self::Tx<T>) {
        tx.close();
    }
}

/// goro's receive future with its `Result` read as an `Option` (closed:
/// `None`, as tokio's). A plain wrapper rather than an `async` block, which
/// would add a state machine around every receive.
pub struct GoroRecv<'a, T>(goro::chan::RecvFuture<'a, T>);

impl<T> Future for GoroRecv<'_, T> {
    type Output = Option<T>;
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.0).poll(cx).map(Result::ok)
    }
}

impl Rt for Tokio {
    type Tx<T: Send + 'static> = tokio::sync::mpsc::Sender<T>;
    type Rx<T: Send + 'static> = tokio::sync::mpsc::Receiver<T>;
    type SendError<T> = tokio::sync::mpsc::error::SendError<T>;
    const CAN_CLOSE: bool = false;

    fn spawn<F>(f: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(tokio::spawn(f));
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
    fn run_blocking<R, F>(f: F) -> impl Future<Output = R> + Send
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let h = tokio::task::spawn_blocking(f);
        async move { h.await.expect("blocking task failed") }
    }

    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        tokio::sync::mpsc::channel(cap.max(1)) // no rendezvous: 0 becomes 1
    }
    fn send<T: Send + 'static>(
        tx: &Self::Tx<T>,
        v: T,
    ) -> impl Future<Output = Result<(), Self::SendError<T>>> + Send + '_ {
        tx.send(v)
    }
    fn recv<T: Send + 'static>(
        rx: &mut Self::Rx<T>,
    ) -> impl Future<Output = Option<T>> + Send + '_ {
        rx.recv()
    }
    fn close<T: Send + 'static>(_: &Self::Tx<T>) {}
}

/// A countdown with one waiter: `count_down` n times, `wait` returns when it
/// reaches zero (Go's `WaitGroup` as used by the twins).
#[derive(Clone)]
pub struct Latch(Arc<LatchInner>);

struct LatchInner {
    left: AtomicUsize,
    waker: Mutex<Option<Waker>>,
}

impl Latch {
    /// A latch that opens after `n` count-downs (`n == 0`: already open).
    pub fn new(n: usize) -> Latch {
        Latch(Arc::new(LatchInner {
            left: AtomicUsize::new(n),
            waker: Mutex::new(None),
        }))
    }

    /// One count-down; the last one wakes the waiter.
    pub fn count_down(&self) {
        // AcqRel: the last decrement sees every earlier one's writes and
        // publishes them to the waiter (Acquire load in `poll`).
        if self.0.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(w) = self.0.waker.lock().unwrap().take() {
                w.wake();
            }
        }
    }

    /// Waits until the count reaches zero.
    pub fn wait(&self) -> LatchWait<'_> {
        LatchWait(self)
    }
}

/// The future of [`Latch::wait`].
pub struct LatchWait<'a>(&'a Latch);

impl Future for LatchWait<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let inner = &self.0 .0;
        if inner.left.load(Ordering::Acquire) == 0 {
            return Poll::Ready(());
        }
        *inner.waker.lock().unwrap() = Some(cx.waker().clone());
        // Re-check after publishing the waker: the last count-down may have
        // run between the load above and the store.
        if inner.left.load(Ordering::Acquire) == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A start signal many tasks wait on (Go's `<-gate` on a channel that is
/// then closed).
#[derive(Clone, Default)]
pub struct Gate(Arc<Mutex<(bool, Vec<Waker>)>>);

impl Gate {
    /// Opens the gate and wakes every waiter.
    pub fn open(&self) {
        let wakers = {
            let mut g = self.0.lock().unwrap();
            g.0 = true;
            std::mem::take(&mut g.1)
        };
        for w in wakers {
            w.wake();
        }
    }

    /// Waits until the gate is open.
    pub fn wait(&self) -> GateWait<'_> {
        GateWait(self, false)
    }
}

/// The future of [`Gate::wait`].
pub struct GateWait<'a>(&'a Gate, bool);

impl Future for GateWait<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut g = self.0 .0.lock().unwrap();
        if g.0 {
            return Poll::Ready(());
        }
        if !self.1 {
            g.1.push(cx.waker().clone());
            drop(g);
            self.1 = true;
        }
        Poll::Pending
    }
}

/// Go's `newGang`: `n` tasks spawned during setup and parked on a start
/// gate, so spawning them is not measured.
pub struct Gang {
    gate: Gate,
    done: Latch,
}

impl Gang {
    /// Spawns `n` tasks running `body(i)` once the gate opens, and returns
    /// after all `n` are running (parked on the gate).
    pub async fn new<R, F, Fut>(n: usize, body: F) -> Gang
    where
        R: Rt,
        F: Fn(usize) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let gate = Gate::default();
        let ready = Latch::new(n);
        let done = Latch::new(n);
        for i in 0..n {
            let (gate, ready, done) = (gate.clone(), ready.clone(), done.clone());
            let fut = body(i);
            R::spawn(async move {
                ready.count_down();
                gate.wait().await;
                fut.await;
                done.count_down();
            });
        }
        ready.wait().await;
        Gang { gate, done }
    }

    /// Opens the gate.
    pub fn release(&self) {
        self.gate.open();
    }

    /// Waits until every body has returned.
    pub async fn wait(&self) {
        self.done.wait().await;
    }
}

/// A latency histogram with log-linear buckets (16 per power of two, so a
/// quantile is within ~6% of the true value), safe to record into from many
/// tasks at once.
pub struct Histogram {
    buckets: Vec<AtomicU64>,
}

const SUB: u32 = 4; // 2^4 sub-buckets per power of two

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: (0..(16 + 60 * 16)).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < 16 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros(); // >= 4
        let sub = (v >> (e - SUB)) & 15;
        16 + (e - SUB) as usize * 16 + sub as usize
    }

    fn value_of(i: usize) -> f64 {
        if i < 16 {
            return i as f64;
        }
        let e = (i - 16) / 16 + SUB as usize;
        let sub = ((i - 16) % 16) as u64;
        let lo = (16 + sub) << (e - SUB as usize);
        let width = 1u64 << (e - SUB as usize);
        lo as f64 + width as f64 / 2.0
    }

    /// Records one value in nanoseconds.
    pub fn record(&self, ns: u64) {
        let i = Self::index(ns).min(self.buckets.len() - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Records the time since `t`.
    pub fn record_since(&self, t: Instant) {
        self.record(t.elapsed().as_nanos() as u64);
    }

    /// The `q` quantile (0..=1) in nanoseconds; 0 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value_of(i);
            }
        }
        Self::value_of(counts.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bucket() {
        let h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 5000.0), (0.99, 9900.0), (0.999, 9990.0)] {
            let got = h.quantile(q);
            assert!(
                (got - want).abs() / want < 0.07,
                "q{q}: got {got}, want about {want}"
            );
        }
    }
}
