//! Stress: wakes from tasks and from plain threads, at procs 1..8, looking
//! for lost wakeups (a lost wakeup hangs, and the deadline fails the test).

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use support::within;

/// A one-shot flag with a waker: the smallest thing a task can park on.
#[derive(Default)]
struct Flag {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Flag {
    fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }
    fn wait(self: &Arc<Self>) -> impl Future<Output = ()> {
        let f = self.clone();
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            if f.set.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *f.waker.lock().unwrap() = Some(cx.waker().clone());
            if f.set.load(Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

#[test]
fn chains_of_wakes_between_tasks_never_lose_one() {
    for procs in [1, 2, 4, 8] {
        within(
            Duration::from_secs(60),
            &format!("wake chains at procs={procs}"),
            move || {
                let rt = goro::Runtime::builder().procs(procs).build().unwrap();
                for _round in 0..20 {
                    rt.block_on(async {
                        // 200 tasks, each waits for its flag and then sets the next.
                        let flags: Vec<Arc<Flag>> =
                            (0..201).map(|_| Arc::new(Flag::default())).collect();
                        let hs: Vec<_> = (0..200)
                            .map(|i| {
                                let (mine, next) = (flags[i].clone(), flags[i + 1].clone());
                                goro::spawn(async move {
                                    mine.wait().await;
                                    next.set();
                                })
                            })
                            .collect();
                        flags[0].set();
                        flags[200].wait().await;
                        for h in hs {
                            h.await.unwrap();
                        }
                    });
                }
            },
        );
    }
}

#[test]
fn wakes_from_plain_threads_reach_parked_tasks() {
    for procs in [1, 2, 4] {
        within(
            Duration::from_secs(60),
            &format!("foreign wakes at procs={procs}"),
            move || {
                let rt = goro::Runtime::builder().procs(procs).build().unwrap();
                let done = Arc::new(AtomicUsize::new(0));
                let flags: Vec<Arc<Flag>> = (0..2000).map(|_| Arc::new(Flag::default())).collect();
                let hs: Vec<_> = flags
                    .iter()
                    .map(|f| {
                        let (f, d) = (f.clone(), done.clone());
                        rt.spawn(async move {
                            f.wait().await;
                            d.fetch_add(1, Ordering::SeqCst);
                        })
                    })
                    .collect();
                // Four plain threads set the flags, racing with the tasks parking.
                let setters: Vec<_> = flags
                    .chunks(500)
                    .map(|c| {
                        let c: Vec<_> = c.to_vec();
                        std::thread::spawn(move || c.iter().for_each(|f| f.set()))
                    })
                    .collect();
                for s in setters {
                    s.join().unwrap();
                }
                rt.block_on(async {
                    for h in hs {
                        h.await.unwrap();
                    }
                });
                assert_eq!(done.load(Ordering::SeqCst), 2000);
            },
        );
    }
}

#[test]
fn spawn_storm_from_many_tasks_overflows_to_global_and_completes() {
    for procs in [1, 2, 4, 8] {
        within(
            Duration::from_secs(60),
            &format!("spawn storm at procs={procs}"),
            move || {
                let rt = goro::Runtime::builder().procs(procs).build().unwrap();
                let count = Arc::new(AtomicUsize::new(0));
                let c = count.clone();
                rt.block_on(async move {
                    let hs: Vec<_> = (0..16)
                        .map(|_| {
                            let c = c.clone();
                            goro::spawn(async move {
                                // 1000 spawns without yielding: the ring overflows.
                                let inner: Vec<_> = (0..1000)
                                    .map(|_| {
                                        let c = c.clone();
                                        goro::spawn(async move {
                                            c.fetch_add(1, Ordering::Relaxed);
                                        })
                                    })
                                    .collect();
                                for h in inner {
                                    h.await.unwrap();
                                }
                            })
                        })
                        .collect();
                    for h in hs {
                        h.await.unwrap();
                    }
                });
                assert_eq!(count.load(Ordering::SeqCst), 16_000);
                assert!(
                    rt.stats().runq_overflows > 0,
                    "the storm overflowed a ring: {:?}",
                    rt.stats()
                );
            },
        );
    }
}
