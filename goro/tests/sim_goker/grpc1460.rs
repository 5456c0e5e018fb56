//! gRPC-Go, the HTTP/2 client transport: `keepalive` waits for a stream
//! while holding the transport's lock
//! (https://github.com/grpc/grpc-go/pull/1460).
//!
//! With no active stream, `keepalive` (G1) blocks on `<-t.awakenKeepalive`
//! with `t.mu` held. `NewStream` (G2), which would wake it, first takes
//! `t.mu`: both leak.
//!
//! Fix (upstream): `keepalive` releases `t.mu` before it waits, and
//! `awakenKeepalive` gets a buffer of one, so `NewStream`'s non-blocking
//! send is not lost when `keepalive` is between the unlock and the
//! receive.

use crate::go::Chan;
use goro::sync::Mutex;
use std::sync::Arc;

struct Stream;

struct Http2Client {
    /// `t.mu` with the `activeStream` list it guards.
    mu: Mutex<Vec<Stream>>,
    awaken_keepalive: Chan<()>,
}

impl Http2Client {
    /// As in the Go file: waits with `t.mu` held.
    async fn keepalive(&self) {
        let g = self.mu.lock().await;
        if g.is_empty() {
            let _ = self.awaken_keepalive.recv().await;
            goro::yield_now().await; // runtime.Gosched()
            drop(g);
        } else {
            drop(g);
        }
    }

    /// The fix: waits after releasing `t.mu`.
    async fn keepalive_fixed(&self) {
        let g = self.mu.lock().await;
        if g.is_empty() {
            drop(g);
            let _ = self.awaken_keepalive.recv().await;
            goro::yield_now().await; // runtime.Gosched()
        } else {
            drop(g);
        }
    }

    async fn new_stream(&self) {
        let mut g = self.mu.lock().await;
        goro::yield_now().await; // runtime.Gosched()
        g.push(Stream);
        if g.len() == 1 {
            goro::select! {
                send(self.awaken_keepalive.tx, ()) -> _ => {}
                default => {}
            }
        }
        drop(g);
    }
}

async fn scenario(fixed: bool) {
    let client = Arc::new(Http2Client {
        mu: Mutex::new(Vec::new()),
        awaken_keepalive: Chan::new(usize::from(fixed)),
    });
    let (g1, g2) = (client.clone(), client);
    goro::spawn(async move {
        // G1
        if fixed {
            g1.keepalive_fixed().await
        } else {
            g1.keepalive().await
        }
    });
    goro::spawn(async move { g2.new_stream().await }); // G2
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
