//! Kubernetes, the kubelet's status manager: `SetPodStatus` sends on
//! `podStatusChannel` while holding `podStatusesLock`
//! (https://github.com/kubernetes/kubernetes/pull/10182).
//!
//! The sync goroutine (G1) receives from the channel, then takes the lock
//! in `DeletePodStatus`. A second `SetPodStatus` (G3) that took the lock
//! first blocks on its send, which only G1 would receive: G1 waits for
//! the lock G3 holds, G3 for G1. Both leak.
//!
//! Fix: `SetPodStatus` updates the statuses under the lock and sends on
//! the channel after releasing it.

use crate::go::Chan;
use goro::sync::RwLock;
use std::sync::Arc;

struct StatusManager {
    pod_statuses_lock: RwLock<()>,
    pod_status_channel: Chan<bool>,
}

impl StatusManager {
    fn new() -> Arc<StatusManager> {
        Arc::new(StatusManager {
            pod_statuses_lock: RwLock::new(()),
            pod_status_channel: Chan::new(0),
        })
    }

    fn start(self: &Arc<Self>) {
        let s = self.clone();
        goro::spawn(async move {
            for _ in 0..2 {
                s.sync_batch().await;
            }
        });
    }

    async fn sync_batch(&self) {
        goro::yield_now().await; // runtime.Gosched()
        let _ = self.pod_status_channel.recv().await;
        self.delete_pod_status().await;
    }

    async fn delete_pod_status(&self) {
        let _g = self.pod_statuses_lock.write().await;
    }

    /// As in the Go file: sends with the lock held.
    async fn set_pod_status(&self) {
        let _g = self.pod_statuses_lock.write().await;
        self.pod_status_channel.send(true).await;
    }

    /// The fix: sends after releasing the lock.
    async fn set_pod_status_fixed(&self) {
        {
            let _g = self.pod_statuses_lock.write().await;
        }
        self.pod_status_channel.send(true).await;
    }
}

async fn scenario(fixed: bool) {
    let s = StatusManager::new();
    let (g1, g2, g3) = (s.clone(), s.clone(), s);
    goro::spawn(async move { g1.start() });
    for s in [g2, g3] {
        goro::spawn(async move {
            if fixed {
                s.set_pod_status_fixed().await
            } else {
                s.set_pod_status().await
            }
        });
    }
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the fix.
pub async fn fixed() {
    scenario(true).await
}
