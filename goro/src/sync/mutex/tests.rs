//! The state word after exact sequences. They sit inside the crate because
//! they read the private state word; the integration tests in
//! `tests/sync_mutex.rs` check the same paths by behaviour only.

use super::clock::STARVATION_THRESHOLD;
use super::state::{LOCKED, ONE_WAITER, STARVING, WOKEN};
use super::Mutex;
use crate::loom::Ordering::SeqCst;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    Pin::new(f).poll(&mut Context::from_waker(&waker))
}

fn state<T>(m: &Mutex<T>) -> usize {
    m.state.load(SeqCst)
}

#[test]
fn queued_waiter_is_counted_and_uncounted_when_cancelled() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut f = m.lock();
    assert!(poll(&mut f).is_pending());
    assert_eq!(state(&m), LOCKED | ONE_WAITER);
    drop(f);
    assert_eq!(state(&m), LOCKED, "a cancelled waiter must leave the count");
    drop(g);
    assert_eq!(state(&m), 0);
}

#[test]
fn woken_waiter_holds_the_woken_role_until_it_runs_or_is_dropped() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut f = m.lock();
    assert!(poll(&mut f).is_pending());
    drop(g);
    assert_eq!(
        state(&m),
        WOKEN,
        "unlock uncounts the waiter it wakes and sets WOKEN"
    );
    drop(f);
    assert_eq!(state(&m), 0, "a dropped woken waiter gives up WOKEN");
}

#[test]
fn handoff_locks_on_the_waiters_behalf_and_ends_starvation_with_the_last_waiter() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut f = m.lock();
    assert!(poll(&mut f).is_pending());
    std::thread::sleep(STARVATION_THRESHOLD * 3); // the waiter's age is the input
    drop(g);
    let barger = m.try_lock().expect("normal mode");
    assert!(
        poll(&mut f).is_pending(),
        "lost after waiting past the threshold"
    );
    assert_eq!(state(&m), LOCKED | STARVING | ONE_WAITER);
    drop(barger);
    assert_eq!(
        state(&m),
        LOCKED,
        "handed off: locked for the waiter, last waiter ends starvation"
    );
    drop(f);
    assert_eq!(state(&m), 0, "a dropped owner-by-handoff unlocks");
}
