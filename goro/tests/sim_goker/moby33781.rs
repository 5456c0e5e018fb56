//! Moby, the container health monitor: stopping the monitor during a
//! probe leaks the probe's goroutine (https://github.com/moby/moby/pull/33781).
//!
//! Each probe runs in a goroutine (G3) that reports on the unbuffered
//! `results`. When `stop` arrives while the monitor (G1) waits for the
//! probe, the monitor cancels the probe and returns without receiving its
//! result: G3 blocks on its send forever.
//!
//! Fix (upstream): after cancelling the probe, the monitor waits for its
//! result before returning (`<-results`), as it already did on a probe
//! timeout.

use crate::go::Chan;
use goro::context::Context;
use std::time::Duration;

async fn monitor(stop: Chan<bool>, fixed: bool) {
    let probe_interval = Duration::from_millis(1);
    let probe_timeout = Duration::from_millis(1);
    loop {
        goro::select! {
            recv(stop.rx) -> _ => return,
            recv(goro::time::after(probe_interval)) -> _ => {
                let results = Chan::new(0);
                let (ctx, cancel_probe) =
                    Context::with_timeout(&Context::background(), probe_timeout);
                let probe = results.clone();
                goro::spawn(async move {
                    // G3
                    probe.send(true).await;
                    probe.close();
                });
                goro::select! {
                    recv(stop.rx) -> _ => {
                        cancel_probe.cancel();
                        if fixed {
                            let _ = results.recv().await; // drained here
                        }
                        return;
                    }
                    recv(results.rx) -> _ => cancel_probe.cancel(),
                    recv(ctx.done()) -> _ => {
                        cancel_probe.cancel();
                        let _ = results.recv().await;
                    }
                }
            }
        }
    }
}

async fn scenario(fixed: bool) {
    // The Go program starts one pair per `i` in 0..100, G2 sleeping `i`
    // milliseconds; one run is the pair for `i = 1`, whose stop arrives
    // at the first probe.
    let i = 1;
    let stop = Chan::new(0);
    goro::spawn(monitor(stop.clone(), fixed)); // G1
    goro::spawn(async move {
        // G2
        goro::time::sleep(Duration::from_millis(i)).await;
        stop.send(true).await;
    });
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
