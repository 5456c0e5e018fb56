//! Faults at shutdown: the runtime dropped while tasks are parked on every
//! kind of wait goro has. The drop completes, every task's future is
//! dropped once, and so is every value held by a channel, lock, cell or
//! pool. The tasks and the waits they park on are spawned by
//! `park_everywhere`, which records where each one parked (`Sites`).
//!
//! Covered elsewhere (not repeated here): a thousand parked and
//! always-runnable tasks dropped at shutdown with the threads gone
//! (`sched_shutdown::dropping_a_runtime_stops_threads_and_drops_every_unfinished_future`).
#![cfg(not(loom))]

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::faults::{all_dropped_once, at_procs, Guard, WAIT};
use support::pool::{Ledger, Tracked};
use support::wait_until;

// --------------------------------------------------------------------------
// Shutdown with tasks parked on every kind of wait
// --------------------------------------------------------------------------

/// Hands out the guards of the tasks under test and records where each one
/// parked.
#[derive(Clone, Default)]
struct Sites {
    spawned: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    reached: Arc<Mutex<Vec<&'static str>>>,
}

/// Owned by one task's future: counts the future's drop.
struct Site {
    _guard: Guard,
    reached: Arc<Mutex<Vec<&'static str>>>,
}

impl Sites {
    fn enter(&self) -> Site {
        self.spawned.fetch_add(1, SeqCst);
        Site {
            _guard: Guard(self.dropped.clone()),
            reached: self.reached.clone(),
        }
    }
    fn reached(&self) -> Vec<&'static str> {
        self.reached.lock().unwrap().clone()
    }
}

impl Site {
    /// Marks that the task is about to wait on `what`.
    fn at(&self, what: &'static str) {
        self.reached.lock().unwrap().push(what);
    }
}

const HOUR: Duration = Duration::from_secs(3600);

/// Spawns one task parked on each kind of wait goro has; returns how many
/// `Site::at` marks to expect.
async fn park_everywhere(sites: Sites, ledger: Arc<Ledger>, release: Arc<AtomicBool>) -> usize {
    use goro::chan::bounded;
    use goro::sync::{Mutex as GMutex, OnceCell, RwLock, Semaphore, WaitGroup};
    let mut marks = 0;
    let mut spawn = |f: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>| {
        marks += 1;
        drop(goro::spawn(f));
    };

    // Channels: a send on a full buffer, a send with no receiver, a recv.
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let (tx, rx) = bounded::<Tracked>(2);
        tx.try_send(l.make()).map_err(|_| ()).unwrap();
        tx.try_send(l.make()).map_err(|_| ()).unwrap();
        let _rx = rx;
        s.at("chan send (full buffer)");
        let _ = tx.send(l.make()).await;
    }));
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let (tx, _rx) = bounded::<Tracked>(0);
        s.at("chan send (unbuffered)");
        let _ = tx.send(l.make()).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let (_tx, rx) = bounded::<Tracked>(1);
        s.at("chan recv");
        let _ = rx.recv().await;
    }));
    // select! over two receives and a send.
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let (_ta, ra) = bounded::<Tracked>(0);
        let (_tb, rb) = bounded::<Tracked>(4);
        let (tc, _rc) = bounded::<Tracked>(1);
        tc.try_send(l.make()).map_err(|_| ()).unwrap();
        let v = l.make();
        s.at("select! (recv, recv, send)");
        goro::select! {
            recv(ra) -> _ => {},
            recv(rb) -> _ => {},
            send(tc, v) -> _ => {},
        }
    }));

    // Mutex, RwLock (a reader behind a writer, a writer behind a reader).
    let m = Arc::new(GMutex::new(ledger.make()));
    let (ready_tx, ready_rx) = bounded::<()>(0);
    let (s, mm) = (sites.enter(), m.clone());
    spawn(Box::pin(async move {
        let _g = mm.lock().await;
        s.at("holding a Mutex");
        let _ = ready_tx.send(()).await;
        std::future::pending::<()>().await
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let _ = ready_rx.recv().await;
        s.at("Mutex::lock");
        let _g = m.lock().await;
    }));
    for writer_first in [true, false] {
        let rw = Arc::new(RwLock::new(ledger.make()));
        let (ready_tx, ready_rx) = bounded::<()>(0);
        let (s, r) = (sites.enter(), rw.clone());
        spawn(Box::pin(async move {
            if writer_first {
                let _g = r.write().await;
                s.at("holding an RwLock write");
                let _ = ready_tx.send(()).await;
                std::future::pending::<()>().await
            } else {
                let _g = r.read().await;
                s.at("holding an RwLock read");
                let _ = ready_tx.send(()).await;
                std::future::pending::<()>().await
            }
        }));
        let s = sites.enter();
        spawn(Box::pin(async move {
            let _ = ready_rx.recv().await;
            if writer_first {
                s.at("RwLock::read");
                let _g = rw.read().await;
            } else {
                s.at("RwLock::write");
                let _g = rw.write().await;
            }
        }));
    }

    // WaitGroup, Semaphore, OnceCell (an initializer running, a waiter).
    let s = sites.enter();
    spawn(Box::pin(async move {
        let wg = WaitGroup::new();
        wg.add(1);
        s.at("WaitGroup::wait");
        wg.wait().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let sem = Semaphore::new(0);
        s.at("Semaphore::acquire");
        let _p = sem.acquire().await;
    }));
    let cell = Arc::new(OnceCell::<Tracked>::new());
    let (ready_tx, ready_rx) = bounded::<()>(0);
    let (s, c, l) = (sites.enter(), cell.clone(), ledger.clone());
    spawn(Box::pin(async move {
        c.get_or_init(|| async move {
            s.at("OnceCell init in progress");
            let _ = ready_tx.send(()).await;
            std::future::pending::<()>().await;
            l.make()
        })
        .await;
    }));
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let _ = ready_rx.recv().await;
        s.at("OnceCell::get_or_init behind an initializer");
        cell.get_or_init(|| async move { l.make() }).await;
    }));

    // Time: sleep, Timer, after, Ticker, timeout, contexts.
    let s = sites.enter();
    spawn(Box::pin(async move {
        s.at("sleep");
        goro::time::sleep(HOUR).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let t = goro::time::Timer::new(HOUR);
        s.at("Timer channel");
        let _ = t.rx().recv().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let rx = goro::time::after(HOUR);
        s.at("after channel");
        let _ = rx.recv().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let t = goro::time::Ticker::new(HOUR);
        s.at("Ticker channel");
        let _ = t.rx().recv().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        s.at("timeout");
        let _ = goro::time::timeout(HOUR, std::future::pending::<()>()).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let bg = goro::context::Context::background();
        let (ctx, _cancel) = goro::context::Context::with_cancel(&bg);
        let (ctx2, _cancel2) = goro::context::Context::with_timeout(&ctx, HOUR);
        s.at("Context::done");
        goro::select! {
            recv(ctx.done()) -> _ => {},
            recv(ctx2.done()) -> _ => {},
        }
    }));
    // An armed after_func whose callback owns a value, its Timer dropped:
    // only the timer heap holds it (as in Go, dropping a Timer does not
    // stop it).
    let (l, cb_guard) = (ledger.make(), sites.enter());
    drop(goro::time::after_func(HOUR, move || {
        let _ = (&l, &cb_guard);
    }));

    // Net: accept, read, recv_from.
    let s = sites.enter();
    spawn(Box::pin(async move {
        let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        s.at("TcpListener::accept");
        let _ = l.accept().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = goro::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        let (srv, _) = l.accept().await.unwrap();
        let _c = c;
        s.at("TcpStream::read");
        let mut buf = [0u8; 16];
        let _ = srv.read(&mut buf).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let u = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        s.at("UdpSocket::recv_from");
        let mut buf = [0u8; 16];
        let _ = u.recv_from(&mut buf).await;
    }));

    // A JoinHandle of another parked task, and of a running blocking closure.
    let (s, inner) = (sites.enter(), sites.enter());
    spawn(Box::pin(async move {
        let h = goro::spawn(async move {
            inner.at("pending (awaited by another task)");
            std::future::pending::<()>().await
        });
        s.at("JoinHandle of a parked task");
        let _ = h.await;
    }));
    let (s, l, r) = (sites.enter(), ledger.clone(), release.clone());
    spawn(Box::pin(async move {
        let v = l.make();
        let h = goro::spawn_blocking(move || {
            let _v = v;
            wait_until(WAIT, "released (spawn_blocking)", || r.load(SeqCst));
        });
        s.at("JoinHandle of spawn_blocking");
        let _ = h.await;
    }));

    // block_in_place in progress: the drop waits for the closure.
    let (s, l, r) = (sites.enter(), ledger.clone(), release.clone());
    spawn(Box::pin(async move {
        let _v = l.make();
        s.at("block_in_place");
        goro::block_in_place(|| {
            wait_until(WAIT, "released (block_in_place)", || r.load(SeqCst));
        });
        std::future::pending::<()>().await
    }));

    // A pool holding values, owned by a parked task.
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let l2 = l.clone();
        let pool = goro::sync::Pool::new(move || l2.make());
        let vals: Vec<_> = (0..5).map(|_| pool.get()).collect();
        for v in vals {
            pool.put(v);
        }
        s.at("pending while owning a Pool");
        std::future::pending::<()>().await
    }));

    // One mark per spawned closure, plus the inner task's, minus the
    // after_func guard (no task).
    marks + 1
}

/// Dropping a runtime while tasks are parked on every kind of wait (channel
/// send on a full buffer and unbuffered, recv, `select!`, Mutex, RwLock read
/// and write, WaitGroup, Semaphore, OnceCell init in progress and its
/// waiter, sleep, Timer, after, Ticker, timeout, contexts, TCP accept and
/// read, UDP recv_from, a JoinHandle of a parked task and of a running
/// `spawn_blocking`, `block_in_place` in progress, a task owning a Pool)
/// completes within a deadline (a watchdog thread), drops every task's
/// future and the `after_func` callback once, and every value held by a
/// channel, lock, cell or pool exactly once.
#[test]
fn shutdown_with_tasks_parked_on_every_kind_of_wait_drops_everything_once() {
    at_procs(&[1, 3], "shutdown", |procs, rt| {
        let sites = Sites::default();
        let ledger = Ledger::new();
        let release = Arc::new(AtomicBool::new(false));
        let (s, l, r) = (sites.clone(), ledger.clone(), release.clone());
        let marks = rt.block_on(park_everywhere(s, l, r));
        wait_until(WAIT, "every task reached its wait", || {
            sites.reached().len() == marks
        });
        // Parked, not just about to: nothing runnable anywhere (the
        // block_in_place thread holds no P).
        wait_until(WAIT, "the runtime is idle", || {
            let t = rt.schedtrace();
            t.contains(&format!("idleprocs={procs} "))
                && t.contains("runqueue=0 ")
                && t.contains("spinningthreads=0 ")
        });
        let spawned = sites.spawned.load(SeqCst);
        assert_eq!(
            sites.dropped.load(SeqCst),
            0,
            "nothing dropped before shutdown"
        );

        // The block_in_place closure returns once the drop has begun or
        // just before: either way the drop must wait for it.
        release.store(true, SeqCst);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let dropper = std::thread::spawn(move || {
            drop(rt);
            let _ = done_tx.send(());
        });
        done_rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("dropping the runtime did not complete within {WAIT:?}"));
        dropper.join().unwrap();
        assert_eq!(
            sites.dropped.load(SeqCst),
            spawned,
            "every future (and the after_func callback) dropped, once; parked at {:?}",
            sites.reached()
        );
        // A dropped pool's values and the spawn_blocking closure's go
        // a moment later (reclaimer thread, blocking thread).
        assert!(
            goro::sync::pool::wait_reclaimed(WAIT),
            "pool values reclaimed"
        );
        wait_until(WAIT, "every value dropped", || {
            ledger.dropped() == ledger.made()
        });
        all_dropped_once(&ledger, ledger.made(), "values held by parked tasks");
    });
}
