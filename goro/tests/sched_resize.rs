//! `Runtime::set_procs` while tasks run: a resize from 8 to 1
//! and back to 8, several times, under a ring of tasks, timers armed from
//! tasks and from outside, a pool and TCP echo, with every message
//! delivered once, every timer fired once and never early, and every
//! pooled value dropped once.

mod support;

use goro::net::{TcpListener, TcpStream};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::net::read_exact;
use support::{wait_until, within};

const LIMIT: Duration = Duration::from_secs(60);

/// A pooled value that counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn set_procs_rejects_out_of_range_with_the_accepted_range() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    for bad in [0, goro::runtime::MAX_PROCS + 1] {
        let e = rt.set_procs(bad).expect_err("out of range");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("set_procs({bad})")) && msg.contains("1..=4096"),
            "the error names the value and the range: {msg}"
        );
    }
    assert_eq!(rt.procs(), 2, "a rejected value changes nothing");
}

#[test]
fn set_procs_returns_the_previous_value_and_counts_changes() {
    let rt = goro::Runtime::builder().procs(3).build().unwrap();
    assert_eq!(rt.set_procs(5).unwrap(), 3);
    assert_eq!(rt.set_procs(5).unwrap(), 5, "same value: no change");
    assert_eq!(rt.set_procs(1).unwrap(), 5);
    let s = rt.stats();
    assert_eq!(s.procs, 1);
    assert_eq!(s.procs_changes, 2);
    assert!(rt.schedtrace().contains("procs=1 "), "{}", rt.schedtrace());
    assert!(
        rt.schedtrace().contains("procschanges=2"),
        "{}",
        rt.schedtrace()
    );
    assert!(!rt.follows_procs(), "a set_procs stops following");
}

#[test]
fn a_task_may_remove_its_own_p() {
    let rt = goro::Runtime::builder().procs(4).build().unwrap();
    let rt = Arc::new(rt);
    let r = rt.clone();
    let v = within(
        LIMIT,
        "a task that shrinks the runtime it runs on",
        move || {
            let r2 = r.clone();
            r.block_on(async move {
                let hs: Vec<_> = (0..16)
                    .map(|i| {
                        let r3 = r2.clone();
                        goro::spawn(async move {
                            if i == 7 {
                                r3.set_procs(1).unwrap();
                            }
                            goro::yield_now().await;
                            i
                        })
                    })
                    .collect();
                let mut sum = 0;
                for h in hs {
                    sum += h.await.unwrap();
                }
                sum
            })
        },
    );
    assert_eq!(v, (0..16).sum::<i32>());
    assert_eq!(rt.procs(), 1);
}

#[test]
fn resize_8_to_1_and_back_keeps_every_message_timer_and_pooled_value() {
    let rt = Arc::new(goro::Runtime::builder().procs(8).build().unwrap());

    // The ring: RING tasks, each forwarding what it receives to the next;
    // TOKENS tokens go around, counting their hops, until `stop_ring`,
    // then each leaves for `done` with its count.
    const RING: usize = 16;
    const TOKENS: u64 = 64;
    let hops = Arc::new(AtomicU64::new(0));
    let stop_ring = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = goro::chan::unbounded::<(u64, u32)>();
    let mut txs = Vec::new();
    let mut rxs = Vec::new();
    for _ in 0..RING {
        let (tx, rx) = goro::chan::bounded::<(u64, u32)>(4);
        txs.push(tx);
        rxs.push(rx);
    }
    for (i, rx) in rxs.into_iter().enumerate() {
        let next = txs[(i + 1) % RING].clone();
        let done = done_tx.clone();
        let hops = hops.clone();
        let stop = stop_ring.clone();
        rt.spawn(async move {
            while let Ok((id, n)) = rx.recv().await {
                hops.fetch_add(1, Ordering::Relaxed);
                if stop.load(Ordering::Relaxed) {
                    done.send((id, n + 1)).await.unwrap();
                } else if next.send((id, n + 1)).await.is_err() {
                    return;
                }
            }
        });
    }
    drop(done_tx);

    // Timers: armed from tasks (on whatever P runs them) and from this
    // thread (no P: round-robin over the Ps), each recording its fires.
    const TIMERS: usize = 400;
    let fires: Arc<Vec<AtomicUsize>> = Arc::new((0..TIMERS).map(|_| AtomicUsize::new(0)).collect());
    let early = Arc::new(AtomicUsize::new(0));
    let arm = {
        let fires = fires.clone();
        let early = early.clone();
        move |i: usize| {
            let d = Duration::from_millis(1 + (i as u64 * 7) % 300);
            let deadline = Instant::now() + d;
            let fires = fires.clone();
            let early = early.clone();
            goro::time::after_func(d, move || {
                if Instant::now() < deadline {
                    early.fetch_add(1, Ordering::SeqCst);
                }
                fires[i].fetch_add(1, Ordering::SeqCst);
            })
        }
    };
    // Armed in chunks around every resize (below): half from tasks, half
    // from block_on's thread, which belongs to the runtime but holds no P.
    let mut outside_timers = Vec::new();
    let mut inside = Vec::new();
    let mut next_timer = 0;
    let mut arm_chunk = |rt: &goro::Runtime| {
        for _ in 0..TIMERS / 16 {
            let i = next_timer;
            next_timer += 1;
            let arm = arm.clone();
            inside.push(rt.spawn(async move {
                goro::yield_now().await;
                drop(arm(i)); // the handle is not needed
            }));
        }
        rt.block_on(async {
            for _ in 0..TIMERS / 16 {
                outside_timers.push(arm(next_timer));
                next_timer += 1;
            }
        });
    };

    // The pool: tasks take and put back values that count their drops.
    let created = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicUsize::new(0));
    let pool = {
        let created = created.clone();
        let dropped = dropped.clone();
        Arc::new(goro::sync::Pool::new(move || {
            created.fetch_add(1, Ordering::SeqCst);
            Counted(dropped.clone())
        }))
    };
    let stop_pool = Arc::new(AtomicBool::new(false));
    let pool_users: Vec<_> = (0..8)
        .map(|_| {
            let pool = pool.clone();
            let stop = stop_pool.clone();
            rt.spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let a = pool.get();
                    let b = pool.get();
                    goro::yield_now().await;
                    pool.put(a);
                    pool.put(b);
                    n += 1;
                }
                n
            })
        })
        .collect();

    // TCP echo: a server and clients checking every echoed message.
    let echoed = Arc::new(AtomicU64::new(0));
    let stop_echo = Arc::new(AtomicBool::new(false));
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = rt.spawn(async move {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        addr_tx.send(l.local_addr().unwrap()).unwrap();
        let mut hs = Vec::new();
        for _ in 0..8 {
            let (s, _) = l.accept().await.expect("accept");
            hs.push(goro::spawn(async move {
                let mut buf = [0u8; 256];
                loop {
                    match s.read(&mut buf).await.expect("server read") {
                        0 => return,
                        n => s.write_all(&buf[..n]).await.expect("server write"),
                    }
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    let addr = addr_rx.recv_timeout(LIMIT).expect("the server's address");
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let echoed = echoed.clone();
            let stop = stop_echo.clone();
            rt.spawn(async move {
                let s = TcpStream::connect(addr).await.expect("connect");
                s.set_nodelay(true).unwrap();
                let mut r = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let msg = format!("client {c} message {r:08}");
                    s.write_all(msg.as_bytes()).await.expect("client write");
                    let mut back = vec![0; msg.len()];
                    read_exact(&s, &mut back).await.expect("client read");
                    assert_eq!(back, msg.as_bytes(), "client {c}'s echo {r}");
                    echoed.fetch_add(1, Ordering::Relaxed);
                    r += 1;
                }
                s.shutdown(std::net::Shutdown::Write).unwrap();
                r
            })
        })
        .collect();

    // Start the tokens, then resize 8 -> 1 -> 8 while everything runs,
    // waiting each time for every workload to make progress.
    for id in 0..TOKENS {
        txs[(id as usize) % RING].send_blocking((id, 0)).unwrap();
    }
    let progress = |what: &str| {
        let (h0, e0) = (hops.load(Ordering::Relaxed), echoed.load(Ordering::Relaxed));
        wait_until(LIMIT, what, || {
            hops.load(Ordering::Relaxed) > h0 + 200 && echoed.load(Ordering::Relaxed) > e0 + 20
        });
    };
    for round in 0..4 {
        arm_chunk(&rt);
        progress("the ring and the echo progress at procs 8");
        assert_eq!(rt.set_procs(1).unwrap(), 8, "round {round}");
        arm_chunk(&rt);
        progress("the ring and the echo progress at procs 1");
        assert_eq!(rt.set_procs(8).unwrap(), 1, "round {round}");
    }
    assert_eq!(rt.stats().procs_changes, 8);

    // Every token comes back once, and the hops the tokens counted are
    // the hops the ring made: none lost, none repeated.
    stop_ring.store(true, Ordering::Relaxed);
    let (got, counted) = within(LIMIT, "every ring token comes back", move || {
        let mut seen = HashSet::new();
        let mut counted = 0u64;
        for _ in 0..TOKENS {
            let (id, n) = done_rx.recv_blocking().expect("a token");
            assert!(seen.insert(id), "token {id} delivered twice");
            counted += u64::from(n);
        }
        (seen, counted)
    });
    assert_eq!(got.len() as u64, TOKENS);
    assert_eq!(
        hops.load(Ordering::Relaxed),
        counted,
        "no hop lost or repeated"
    );
    drop(txs);

    // Every timer fires once, none early.
    for h in inside {
        rt.block_on(h).unwrap();
    }
    wait_until(LIMIT, "every timer fires", || {
        fires.iter().all(|f| f.load(Ordering::SeqCst) >= 1)
    });
    for (i, f) in fires.iter().enumerate() {
        assert_eq!(f.load(Ordering::SeqCst), 1, "timer {i} fired once");
    }
    assert_eq!(
        early.load(Ordering::SeqCst),
        0,
        "no timer fired before its deadline"
    );

    // The echo: every message was checked by its client.
    stop_echo.store(true, Ordering::Relaxed);
    for c in clients {
        assert!(rt.block_on(c).unwrap() > 0, "every client was echoed");
    }
    rt.block_on(server).unwrap();

    // The pool: every value ever made is dropped exactly once.
    stop_pool.store(true, Ordering::Relaxed);
    for u in pool_users {
        rt.block_on(u).unwrap();
    }
    drop(pool);
    drop(outside_timers);
    let rt = Arc::into_inner(rt).expect("the last handle");
    drop(rt);
    assert!(
        goro::sync::pool::wait_reclaimed(LIMIT),
        "the pool's storage is reclaimed"
    );
    wait_until(LIMIT, "every pooled value is dropped", || {
        dropped.load(Ordering::SeqCst) >= created.load(Ordering::SeqCst)
    });
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        created.load(Ordering::SeqCst),
        "each pooled value dropped once"
    );
}
