//! A link: the rules for the traffic between two IP addresses of a
//! simulated network (`goro::sim::net` sets them).
//!
//! One [`Link`] per unordered pair of IPs, made with no latency, no loss,
//! open, on first use. Every pipe and datagram between the two addresses
//! holds the link itself (an `Arc`), not a copy of its rules, so a rule
//! changed while bytes are in flight applies to them: a `hold` keeps what
//! is already on the wire, a `release` lets it through.
//!
//! The rules, and what each does to TCP and to UDP:
//!
//! | rule | TCP | UDP |
//! |---|---|---|
//! | latency `d` | each write is readable `d` after it was written (in order: a write never overtakes the one before) | each datagram arrives `d` after it was sent |
//! | loss `p` | each write is late by one retransmission timeout ([`RTO`], 200 ms, Linux's minimum) with probability `p`: TCP loses no bytes | each datagram is dropped with probability `p` |
//! | partition | bytes and new connections wait until healed | dropped, also those in flight |
//! | hold | bytes and new connections wait until released, then arrive in order | kept until released, then delivered in order |
//!
//! A task that waits on a closed (partitioned or held) link leaves its
//! waker here; `heal` and `release` wake them all, and each looks again.
//!
//! # Rejected
//!
//! - Rules per ordered pair (asymmetric links): no test asked for them,
//!   and a pair of rules per pair of hosts is one more thing to get wrong
//!   when setting up a partition.
//! - A real retransmission model for TCP loss (backoff, a connection that
//!   times out): it would make the test's outcome depend on a timer zoo;
//!   a fixed late delivery keeps what a test usually wants to see (a slow
//!   request, not a lost one).

use crate::loom::Unpoison;
use std::sync::Mutex;
use std::task::Waker;
use std::time::Duration;

/// The delay a "lost" TCP write takes on a lossy link: Linux's minimum
/// retransmission timeout.
pub(crate) const RTO: u64 = 200_000_000;

/// The rules between two IP addresses.
pub(crate) struct Link {
    st: Mutex<LinkState>,
}

#[derive(Default)]
struct LinkState {
    /// One-way latency, in nanoseconds.
    latency: u64,
    /// The probability of a loss, 0 to 1.
    loss: f64,
    partitioned: bool,
    held: bool,
    /// Tasks waiting for the link to open again.
    waiters: Vec<Waker>,
}

impl Link {
    pub(crate) fn new() -> Link {
        Link {
            st: Mutex::new(LinkState::default()),
        }
    }

    /// One-way latency, in nanoseconds of the timer clock.
    pub(crate) fn latency(&self) -> u64 {
        self.st.lock().unpoison().latency
    }

    /// The loss probability.
    pub(crate) fn loss(&self) -> f64 {
        self.st.lock().unpoison().loss
    }

    pub(crate) fn partitioned(&self) -> bool {
        self.st.lock().unpoison().partitioned
    }

    pub(crate) fn held(&self) -> bool {
        self.st.lock().unpoison().held
    }

    /// Whether traffic may pass (neither partitioned nor held).
    pub(crate) fn open(&self) -> bool {
        let st = self.st.lock().unpoison();
        !st.partitioned && !st.held
    }

    /// Keeps `w` to wake when the link opens; `false` (keeping nothing) if
    /// it is open already.
    pub(crate) fn wait_open(&self, w: &Waker) -> bool {
        let mut st = self.st.lock().unpoison();
        if !st.partitioned && !st.held {
            return false;
        }
        if !st.waiters.iter().any(|x| x.will_wake(w)) {
            st.waiters.push(w.clone());
        }
        true
    }
}

/// The rules' setters, for `goro::sim::net` (absent under loom, which
/// builds no `goro::sim`).
#[cfg_attr(loom, allow(dead_code))]
impl Link {
    pub(crate) fn set_latency(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2);
        self.st.lock().unpoison().latency = ns;
    }

    pub(crate) fn set_loss(&self, p: f64) {
        self.st.lock().unpoison().loss = p;
    }

    pub(crate) fn set_partitioned(&self, on: bool) {
        let mut st = self.st.lock().unpoison();
        st.partitioned = on;
        self.wake_if_open(st);
    }

    pub(crate) fn set_held(&self, on: bool) {
        let mut st = self.st.lock().unpoison();
        st.held = on;
        self.wake_if_open(st);
    }

    fn wake_if_open(&self, mut st: std::sync::MutexGuard<'_, LinkState>) {
        if st.partitioned || st.held {
            return;
        }
        let waiters = std::mem::take(&mut st.waiters);
        drop(st);
        waiters.into_iter().for_each(Waker::wake);
    }
}

/// Waits until `link` is open (a connect across a partition or a hold).
pub(crate) async fn opened(link: &Link) {
    std::future::poll_fn(|cx| {
        if link.wait_open(cx.waker()) {
            crate::sched::task::meta::blocked_on(crate::sched::task::meta::Reason::NetWrite, 0);
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await
}
