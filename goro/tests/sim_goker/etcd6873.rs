//! etcd, the gRPC proxy's `watchBroadcasts`: `stop` waits for the update
//! goroutine while holding the lock that goroutine needs
//! (https://github.com/etcd-io/etcd/pull/6873).
//!
//! The update goroutine (G2) ranges over `updatec` and takes `wbs.mu` for
//! each update. `stop` (G3) takes `wbs.mu`, closes `updatec` and waits on
//! `donec` with the lock held; when G2 has just received an update, it
//! blocks on `wbs.mu` and never closes `donec`: both leak.
//!
//! Fix (upstream): `stop` releases `wbs.mu` after closing `updatec`, before
//! it waits on `donec`.

use crate::go::Chan;
use goro::sync::Mutex;
use std::sync::Arc;

struct WatchBroadcast;

struct WatchBroadcasts {
    mu: Mutex<()>,
    updatec: Chan<WatchBroadcast>,
    donec: Chan<()>,
}

impl WatchBroadcasts {
    fn new() -> Arc<WatchBroadcasts> {
        let wbs = Arc::new(WatchBroadcasts {
            mu: Mutex::new(()),
            updatec: Chan::new(1),
            donec: Chan::new(0),
        });
        let g2 = wbs.clone();
        goro::spawn(async move {
            // G2
            while let Some(wb) = g2.updatec.recv().await {
                g2.coalesce(wb).await;
            }
            g2.donec.close(); // defer close(wbs.donec)
        });
        wbs
    }

    async fn coalesce(&self, _wb: WatchBroadcast) {
        let _g = self.mu.lock().await;
    }

    /// As in the Go file: waits on `donec` with `mu` held.
    async fn stop(&self) {
        let _g = self.mu.lock().await;
        self.updatec.close();
        let _ = self.donec.recv().await;
    }

    /// The fix: waits on `donec` after releasing `mu`.
    async fn stop_fixed(&self) {
        {
            let _g = self.mu.lock().await;
            self.updatec.close();
        }
        let _ = self.donec.recv().await;
    }

    async fn update(&self, wb: WatchBroadcast) {
        goro::select! {
            send(self.updatec.tx, wb) -> _ => {}
            default => {}
        }
    }
}

async fn scenario(fixed: bool) {
    let wbs = WatchBroadcasts::new(); // G1
    wbs.update(WatchBroadcast).await;
    goro::spawn(async move {
        // G3
        if fixed {
            wbs.stop_fixed().await
        } else {
            wbs.stop().await
        }
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
