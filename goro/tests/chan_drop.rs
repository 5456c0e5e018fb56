//! A value whose `Drop` panics, left in a channel's buffer when the channel
//! goes: every value is still dropped, the first panic reaches the code that
//! dropped the channel, and the process is not aborted (a second panic
//! during the first one's unwind would abort it).

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::within;

const LIMIT: Duration = Duration::from_secs(30);

/// Counts its drop, then panics.
struct Bomb(Arc<AtomicUsize>);

impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a value's Drop panicked");
    }
}

/// A channel holding `n` bombs, and the counter of their drops.
fn loaded(
    n: usize,
) -> (
    goro::chan::Sender<Bomb>,
    goro::chan::Receiver<Bomb>,
    Arc<AtomicUsize>,
) {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::bounded::<Bomb>(n);
    for _ in 0..n {
        tx.try_send(Bomb(drops.clone()))
            .expect("room in the buffer");
    }
    (tx, rx, drops)
}

#[test]
fn panicking_drops_from_a_plain_thread_drop_every_value_and_panic_once() {
    let (tx, rx, drops) = loaded(3);
    let r = catch_unwind(AssertUnwindSafe(move || {
        drop(tx);
        drop(rx); // the last handle: the buffer goes
    }));
    assert!(r.is_err(), "the first Drop's panic reaches the caller");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "every buffered value is dropped"
    );
}

#[test]
fn panicking_drops_from_a_task_fail_that_task_only() {
    let drops = within(LIMIT, "a task dropping a channel of bombs", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (tx, rx, drops) = loaded(4);
            let h = goro::spawn(async move {
                drop(tx);
                drop(rx);
            });
            assert!(h.await.is_err(), "the task ends with the value's panic");
            // The runtime goes on running tasks.
            assert_eq!(goro::spawn(async { 7 }).await.unwrap(), 7);
            drops.load(Ordering::SeqCst)
        })
    });
    assert_eq!(drops, 4, "every buffered value is dropped");
}

#[test]
fn panicking_drops_while_already_unwinding_do_not_abort() {
    let (tx, rx, drops) = loaded(3);
    let r = catch_unwind(AssertUnwindSafe(move || {
        let _held = (tx, rx); // dropped by the unwind below
        panic!("the code holding the channel panicked first");
    }));
    let msg = r.unwrap_err();
    assert_eq!(
        msg.downcast_ref::<&str>().copied(),
        Some("the code holding the channel panicked first"),
        "the first panic is the one that propagates"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "every buffered value is dropped"
    );
}
