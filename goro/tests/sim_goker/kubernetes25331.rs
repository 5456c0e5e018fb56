//! Kubernetes, the etcd3 watcher's `watchChan`: an error result nobody
//! reads leaks the watch goroutine
//! (https://github.com/kubernetes/kubernetes/pull/25331).
//!
//! `Stop` (G2) sends an error on `errChan`. `run` (G1) receives it,
//! cancels the context itself and sends the error result on the
//! unbuffered `resultChan`, which nobody receives once the watcher is
//! stopped: G1 blocks forever.
//!
//! Fix (upstream): `run` no longer cancels the context, and sends the
//! result in a `select` beside `ctx.Done()`, so the user's cancel in
//! `Stop` releases it.

use crate::go::Chan;
use goro::context::{Cancel, Context};
use std::sync::Arc;

struct WatchChan {
    ctx: Context,
    cancel: Cancel,
    result_chan: Chan<bool>,
    err_chan: Chan<String>,
}

impl WatchChan {
    fn new() -> Arc<WatchChan> {
        let (ctx, cancel) = Context::with_cancel(&Context::background());
        Arc::new(WatchChan {
            ctx,
            cancel,
            result_chan: Chan::new(0),
            err_chan: Chan::new(0),
        })
    }

    async fn stop(&self) {
        self.err_chan.send("Error".to_string()).await;
        self.cancel.cancel();
    }

    /// As in the Go file.
    async fn run(&self) {
        goro::select! {
            recv(self.err_chan.rx) -> err => {
                let err_result = !err.expect("errChan is never closed").is_empty();
                self.cancel.cancel(); // removed in the fix
                self.result_chan.send(err_result).await;
            }
            recv(self.ctx.done()) -> _ => {}
        }
    }

    /// The fix.
    async fn run_fixed(&self) {
        goro::select! {
            recv(self.err_chan.rx) -> err => {
                let err_result = !err.expect("errChan is never closed").is_empty();
                goro::select! {
                    send(self.result_chan.tx, err_result) -> _ => {}
                    recv(self.ctx.done()) -> _ => {} // the user has given up the results
                }
            }
            recv(self.ctx.done()) -> _ => {}
        }
    }
}

async fn scenario(fixed: bool) {
    let wc = WatchChan::new();
    let (g1, g2) = (wc.clone(), wc);
    goro::spawn(async move {
        // G1
        if fixed {
            g1.run_fixed().await
        } else {
            g1.run().await
        }
    });
    goro::spawn(async move { g2.stop().await }); // G2
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
