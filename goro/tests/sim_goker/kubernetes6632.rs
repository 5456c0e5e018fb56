//! Kubernetes (spdystream's `idleAwareFramer`, vendored): closing the
//! connection while a frame is being written leaks both goroutines
//! (https://github.com/kubernetes/kubernetes/pull/6632).
//!
//! `WriteFrame` (G2) holds `writeLock` while it sends on the unbuffered
//! `resetChan`. On `closeChan`, `monitor` (G1) takes `writeLock` to close
//! `resetChan`; once G2 holds the lock, nobody will receive its send, and
//! G1 waits for the lock forever.
//!
//! Fix (upstream): before taking `writeLock`, `monitor` starts a goroutine
//! that drains `resetChan` until it is closed, so a writer blocked on it
//! completes and releases the lock.

use crate::go::Chan;
use goro::sync::Mutex;
use std::sync::Arc;

struct Connection {
    close_chan: Chan<bool>,
}

struct IdleAwareFramer {
    /// The channel `monitor` copies at its start (`var resetChan = i.resetChan`).
    reset_chan: Chan<bool>,
    /// `writeLock`, with the `i.resetChan` field it guards (`None` is nil).
    write_lock: Mutex<Option<Chan<bool>>>,
    conn: Connection,
}

impl IdleAwareFramer {
    fn new() -> Arc<IdleAwareFramer> {
        let reset_chan = Chan::new(0);
        Arc::new(IdleAwareFramer {
            reset_chan: reset_chan.clone(),
            write_lock: Mutex::new(Some(reset_chan)),
            conn: Connection {
                close_chan: Chan::new(0),
            },
        })
    }

    async fn monitor(&self, fixed: bool) {
        let reset_chan = &self.reset_chan;
        // Go's `for { select { case <-i.conn.closeChan: ...; break Loop } }`:
        // a loop whose one case leaves it, so one receive.
        let _ = self.conn.close_chan.recv().await;
        if fixed {
            let drain = reset_chan.clone();
            goro::spawn(async move { while drain.recv().await.is_some() {} });
        }
        let mut g = self.write_lock.lock().await;
        reset_chan.close();
        *g = None;
        drop(g);
    }

    async fn write_frame(&self) {
        let g = self.write_lock.lock().await;
        let Some(reset_chan) = &*g else {
            return;
        };
        reset_chan.send(true).await;
    }
}

async fn scenario(fixed: bool) {
    let i = IdleAwareFramer::new();
    let (helper, g1, g2) = (i.clone(), i.clone(), i);
    goro::spawn(async move { helper.conn.close_chan.send(true).await }); // helper
    goro::spawn(async move { g1.monitor(fixed).await }); // G1
    goro::spawn(async move { g2.write_frame().await }); // G2
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
