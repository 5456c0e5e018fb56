//! Channels under the real scheduler: tasks passing a token round a ring, ping-pong,
//! select, and wakes landing in `runnext`.

mod support;

use std::time::Duration;
use support::within;

/// n tasks in a ring over rendezvous channels pass a token `hops` times.
fn ring(procs: usize, n: usize, hops: u64, cap: usize) -> u64 {
    let rt = goro::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(async move {
        let (first_tx, mut prev_rx) = goro::chan::bounded::<u64>(cap);
        let mut handles = Vec::new();
        for _ in 1..n {
            let (tx, rx) = goro::chan::bounded::<u64>(cap);
            let inbox = std::mem::replace(&mut prev_rx, rx);
            handles.push(goro::spawn(async move {
                while let Ok(v) = inbox.recv().await {
                    if tx.send(v + 1).await.is_err() {
                        break;
                    }
                }
            }));
        }
        // The last link closes the ring back to the first sender.
        let last_rx = prev_rx;
        first_tx.send(0).await.unwrap();
        let mut got = 0;
        while got < hops {
            got = last_rx.recv().await.unwrap();
            if got + n as u64 > hops {
                break;
            }
            first_tx.send(got + 1).await.unwrap();
        }
        drop(first_tx);
        for h in handles {
            h.await.unwrap();
        }
        got
    })
}

#[test]
fn a_million_messages_through_a_ring_of_1000_tasks_at_procs_1_2_4() {
    for procs in [1, 2, 4] {
        let hops = within(
            Duration::from_secs(120),
            &format!("1e6 hops, ring of 1000, procs={procs}"),
            move || ring(procs, 1000, 1_000_000, 0),
        );
        assert!(
            hops >= 1_000_000 - 1000,
            "ring at procs={procs} stopped early at {hops}"
        );
    }
}

#[test]
fn buffered_ring_completes_at_procs_1_2_4() {
    for procs in [1, 2, 4] {
        within(
            Duration::from_secs(60),
            &format!("buffered ring procs={procs}"),
            move || ring(procs, 100, 100_000, 1),
        );
    }
}

#[test]
fn ping_pong_wakes_go_to_runnext() {
    within(Duration::from_secs(60), "ping-pong", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (ping_tx, ping_rx) = goro::chan::bounded::<u32>(0);
            let (pong_tx, pong_rx) = goro::chan::bounded::<u32>(0);
            let echo = goro::spawn(async move {
                while let Ok(v) = ping_rx.recv().await {
                    pong_tx.send(v).await.unwrap();
                }
            });
            goro::spawn(async move {
                for i in 0..10_000 {
                    ping_tx.send(i).await.unwrap();
                    assert_eq!(pong_rx.recv().await.unwrap(), i);
                }
            })
            .await
            .unwrap();
            echo.await.unwrap();
        });
        let s = rt.stats();
        assert!(
            s.runnext_hits > 10_000,
            "wakes between the pair run from runnext: {s:?}"
        );
    });
}

#[test]
fn select_between_tasks_on_several_procs_delivers_everything_once() {
    for procs in [1, 2, 4] {
        within(
            Duration::from_secs(60),
            &format!("select fan-in procs={procs}"),
            move || {
                let rt = goro::Runtime::builder().procs(procs).build().unwrap();
                let got = rt.block_on(async {
                let (a_tx, a_rx) = goro::chan::bounded::<u64>(0);
                let (b_tx, b_rx) = goro::chan::bounded::<u64>(4);
                let pa = goro::spawn(async move {
                    for i in 0..5000 {
                        a_tx.send(i).await.unwrap();
                    }
                });
                let pb = goro::spawn(async move {
                    for i in 0..5000 {
                        b_tx.send(i).await.unwrap();
                    }
                });
                // Every value, per channel, in the order received: each
                // channel has one sender, so exactly once means exactly
                // 0..5000 in order (a sum would hide a duplicate that
                // makes up for a loss).
                let (mut a_got, mut b_got) = (Vec::new(), Vec::new());
                let mut open = 2;
                let (mut a_open, mut b_open) = (true, true);
                while open > 0 {
                    if a_open && b_open {
                        goro::select! {
                            recv(a_rx) -> m => match m { Ok(v) => a_got.push(v), Err(_) => { a_open = false; open -= 1; } },
                            recv(b_rx) -> m => match m { Ok(v) => b_got.push(v), Err(_) => { b_open = false; open -= 1; } },
                        }
                    } else if a_open {
                        match a_rx.recv().await { Ok(v) => a_got.push(v), Err(_) => { a_open = false; open -= 1; } }
                    } else {
                        match b_rx.recv().await { Ok(v) => b_got.push(v), Err(_) => { b_open = false; open -= 1; } }
                    }
                }
                pa.await.unwrap();
                pb.await.unwrap();
                (a_got, b_got)
            });
                let want: Vec<u64> = (0..5000).collect();
                for (name, got) in [("a (rendezvous)", &got.0), ("b (cap 4)", &got.1)] {
                    if *got != want {
                        let first_bad = got.iter().zip(&want).position(|(g, w)| g != w);
                        panic!(
                            "procs={procs}: channel {name} delivered {} values, not 0..5000 once each in order; first difference at index {first_bad:?}",
                            got.len()
                        );
                    }
                }
            },
        );
    }
}
