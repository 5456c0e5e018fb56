//! Moby, the container health monitor: `CloseMonitorChannel` sends on
//! `stop` while the container's lock is held
//! (https://github.com/moby/moby/pull/28462).
//!
//! `StateChanged` (G2) locks the container and sends on the unbuffered
//! `stop`, which only the monitor (G1) receives. The monitor polls `stop`
//! between probes, and each probe result takes the container's lock: a
//! monitor that is handling a probe waits for G2's lock while G2 waits
//! for it to receive. Both leak.
//!
//! Fix (upstream): `CloseMonitorChannel` closes `stop` (and forgets it)
//! instead of sending on it, which never blocks.

use crate::go::Chan;
use goro::chan::Receiver;
use goro::sync::Mutex;
use std::sync::Arc;

struct Health {
    stop: Option<Chan<()>>,
}

impl Health {
    fn open_monitor_channel(&self) -> Option<Receiver<()>> {
        self.stop.as_ref().map(|s| s.rx.clone())
    }

    /// As in the Go file: a send, which waits for the monitor.
    async fn close_monitor_channel(&mut self) {
        if let Some(stop) = &self.stop {
            stop.send(()).await;
        }
    }

    /// The fix: a close, which does not wait.
    fn close_monitor_channel_fixed(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.close();
        }
    }
}

/// `Container` embeds a `sync.Mutex` that guards its state, here the
/// health record.
struct Container {
    mu: Mutex<Health>,
}

struct Daemon {
    container: Arc<Container>,
}

impl Daemon {
    async fn state_changed(&self, fixed: bool) {
        let c = &self.container;
        let mut g = c.mu.lock().await;
        // updateHealthMonitorElseBranch
        if fixed {
            g.close_monitor_channel_fixed();
        } else {
            g.close_monitor_channel().await;
        }
        drop(g); // defer c.Unlock()
    }
}

async fn monitor(c: Arc<Container>, stop: Receiver<()>) {
    loop {
        goro::select! {
            recv(stop) -> _ => return,
            default => handle_probe_result(&c).await,
        }
    }
}

async fn handle_probe_result(c: &Container) {
    goro::yield_now().await; // runtime.Gosched()
    let _g = c.mu.lock().await;
}

async fn scenario(fixed: bool) {
    let c = Arc::new(Container {
        mu: Mutex::new(Health {
            stop: Some(Chan::new(0)),
        }),
    });
    let d = Arc::new(Daemon {
        container: c.clone(),
    });
    // Go reads `c.State.Health` here without the lock: nothing else runs yet.
    let stop =
        c.mu.try_lock()
            .expect("nothing else holds the new container")
            .open_monitor_channel()
            .expect("a new container has a monitor channel");
    goro::spawn(monitor(c, stop)); // G1
    goro::spawn(async move { d.state_changed(fixed).await }); // G2
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
