//! Behaviour of `goro::sync::OnceCell`: one initializer, takeover after
//! cancellation or panic.
#![cfg(not(loom))]

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};

use futures::channel::oneshot;
use goro::sync::OnceCell;
use support::sync::{spawn, Probe};

#[test]
fn get_is_none_until_initialized() {
    let cell = OnceCell::new();
    assert_eq!(cell.get(), None);
    assert_eq!(cell.set(5), Ok(()));
    assert_eq!(cell.get(), Some(&5));
}

#[test]
fn set_on_an_initialized_cell_returns_the_value() {
    let cell = OnceCell::new();
    cell.set(String::from("first")).unwrap();
    assert_eq!(
        cell.set(String::from("second")),
        Err(String::from("second"))
    );
    assert_eq!(cell.get().unwrap(), "first");
}

#[test]
fn only_one_initializer_runs_among_many_threads() {
    const THREADS: usize = 8;
    let cell = Arc::new(OnceCell::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (cell, runs, start) = (cell.clone(), runs.clone(), start.clone());
            spawn(format!("initializer {t}"), move || {
                start.wait();
                let v = if t % 2 == 0 {
                    *cell.get_or_init_blocking(|| {
                        runs.fetch_add(1, SeqCst);
                        t
                    })
                } else {
                    *futures::executor::block_on(cell.get_or_init(|| async {
                        runs.fetch_add(1, SeqCst);
                        t
                    }))
                };
                v
            })
        })
        .collect();
    let values: Vec<_> = threads.into_iter().map(|t| t.join()).collect();
    assert_eq!(runs.load(SeqCst), 1, "more than one initializer ran");
    assert!(
        values.iter().all(|v| *v == values[0]),
        "callers saw different values: {values:?}"
    );
}

#[test]
fn waiters_get_the_value_of_the_running_initializer() {
    let cell = OnceCell::new();
    let (tx, rx) = oneshot::channel::<u32>();
    let mut first = Probe::new(cell.get_or_init(|| async { rx.await.unwrap() }));
    first.pending("the initializer waits for its input");
    let mut second =
        Probe::new(cell.get_or_init(|| async { panic!("a second initializer must not run") }));
    second.pending("another caller's initializer is running");
    tx.send(7).unwrap();
    assert_eq!(*first.ready("input arrived"), 7);
    assert_eq!(second.wakes(), 1, "waiters are woken when the value is set");
    assert_eq!(*second.ready("value set"), 7);
}

#[test]
fn dropped_initializer_lets_a_waiter_take_over() {
    let cell = OnceCell::new();
    let (_tx, rx) = oneshot::channel::<u32>();
    let mut first = Probe::new(cell.get_or_init(|| async { rx.await.unwrap() }));
    first.pending("initializer running");
    let mut second = Probe::new(cell.get_or_init(|| async { 2 }));
    second.pending("waits for the first");
    drop(first); // cancelled mid-initialization
    assert_eq!(
        second.wakes(),
        1,
        "the waiter must learn the initializer is gone"
    );
    assert_eq!(*second.ready("runs its own initializer"), 2);
    assert_eq!(cell.get(), Some(&2));
}

#[test]
fn panicking_initializer_lets_a_waiter_take_over() {
    let cell = OnceCell::new();
    let (tx, rx) = oneshot::channel::<()>();
    let mut first = Probe::new(cell.get_or_init(|| async {
        rx.await.unwrap();
        panic!("initializer failed")
    }));
    first.pending("initializer running");
    let mut second = Probe::new(cell.get_or_init(|| async { 3 }));
    second.pending("waits for the first");
    tx.send(()).unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| first.poll()));
    assert!(r.is_err(), "the initializer's panic reaches its caller");
    drop(first);
    assert_eq!(second.wakes(), 1);
    assert_eq!(*second.ready("takes over"), 3);
}

#[test]
fn value_is_dropped_with_the_cell_and_kept_by_into_inner() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let cell = OnceCell::new();
    assert!(cell.set(Counted(drops.clone())).is_ok());
    drop(cell);
    assert_eq!(drops.load(SeqCst), 1, "the value is dropped with the cell");
    let cell = OnceCell::new();
    assert!(cell.set(Counted(drops.clone())).is_ok());
    let v = cell.into_inner().expect("initialized");
    assert_eq!(drops.load(SeqCst), 1, "into_inner moves the value out");
    drop(v);
    assert_eq!(drops.load(SeqCst), 2);
    assert!(OnceCell::<Counted>::new().into_inner().is_none());
}

#[test]
fn get_or_init_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let cell = OnceCell::new();
    let fut = cell.get_or_init(|| async { 1 });
    assert_send(&fut);
    assert_eq!(*futures::executor::block_on(fut), 1);
}
