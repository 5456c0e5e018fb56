//! A runtime with 1,000 idle connections sleeps: no thread wakes, the one
//! thread in the poller stays there. (Its own test binary, so no other
//! test's threads or sockets add activity.)

mod support;

use goro::net::{TcpListener, TcpStream};
use std::time::Duration;
use support::net::{raise_fd_limit, LIMIT};
use support::{activity, thread_state, threads_named, wait_until, wait_until_quiet, within};

const CONNS: usize = 1000;

#[test]
fn a_runtime_with_1000_idle_connections_does_not_wake() {
    within(LIMIT, "idle connections", || {
        let limit = raise_fd_limit(2 * CONNS as u64 + 256);
        let conns = CONNS.min((limit as usize).saturating_sub(256) / 2);
        let rt = goro::Runtime::builder()
            .procs(4)
            .thread_name("netidle")
            .build()
            .unwrap();
        // Every connection has a task parked in a read on each end.
        let (tx, rx) = std::sync::mpsc::channel();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            for _ in 0..conns {
                let c = TcpStream::connect(addr).await.unwrap();
                let (s, _) = l.accept().await.unwrap();
                for sock in [c, s] {
                    let tx = tx.clone();
                    goro::spawn(async move {
                        let r = sock.read(&mut [0; 16]).await;
                        let _ = tx.send(r.map_err(|e| e.kind()));
                    });
                }
            }
        });
        let tids = threads_named("netidle");
        wait_until(
            Duration::from_secs(10),
            "every runtime thread asleep",
            || {
                rt.schedtrace().contains("idleprocs=4")
                    && tids
                        .iter()
                        .all(|&t| thread_state(t).map(|s| s.0) == Some('S'))
            },
        );
        // Wait until nothing moves over a 50 ms window (the monitor's last
        // rounds), then watch a longer one.
        let snapshot = || activity(&rt, &tids);
        wait_until_quiet(
            Duration::from_secs(10),
            "runtime threads stop waking",
            &snapshot,
        );
        let before = snapshot();
        std::thread::sleep(Duration::from_secs(1));
        let after = snapshot();
        assert_eq!(
            before, after,
            "(parks, unparks, sleeper wakes, netpolls, polls, context switches) changed while idle"
        );
        assert!(rx.try_recv().is_err(), "an idle read returned");
        let st = rt.stats();
        assert!(st.netpolls > 0, "the poller was used: {st:?}");
        drop(rt); // shutdown with 2,000 tasks parked on sockets
    });
}
