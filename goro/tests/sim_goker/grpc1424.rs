//! gRPC-Go, `DialContext`: the balancer watcher returns without closing
//! the channel its starter waits on (https://github.com/grpc/grpc-go/pull/1424).
//!
//! The dialing goroutine (G2) starts `lbWatcher` (G3) and waits on
//! `doneChan`. G3 ranges over the balancer's notifications until the
//! channel is closed, then returns without closing `doneChan`: G2 waits
//! forever.
//!
//! Fix (upstream): `lbWatcher` closes `doneChan` when it returns (`defer
//! close(doneChan)`).

use crate::go::Chan;
use goro::chan::Receiver;
use goro::sync::Mutex;
use std::sync::Arc;

struct RoundRobin {
    _mu: Mutex<()>,
    addr_ch: Chan<bool>,
}

impl RoundRobin {
    /// `Notify() <-chan bool`; `None` would be Go's nil channel.
    fn notify(&self) -> Option<&Receiver<bool>> {
        Some(&self.addr_ch.rx)
    }
}

struct AddrConn {
    mu: Mutex<()>,
}

impl AddrConn {
    async fn tear_down(&self) {
        let _g = self.mu.lock().await;
    }
}

struct ClientConn {
    balancer: RoundRobin,
    conns: Vec<Arc<AddrConn>>,
}

impl ClientConn {
    async fn lb_watcher(&self, done_chan: Chan<bool>, fixed: bool) {
        let notify = self.balancer.notify().expect("a round robin notifies");
        while let Ok(addr) = notify.recv().await {
            let _ = addr;
            let del: Vec<Arc<AddrConn>> = self.conns.to_vec();
            for c in del {
                c.tear_down().await;
            }
        }
        if fixed {
            done_chan.close(); // defer close(doneChan)
        }
    }
}

async fn dial_context(fixed: bool) {
    let cc = Arc::new(ClientConn {
        balancer: RoundRobin {
            _mu: Mutex::new(()),
            addr_ch: Chan::new(0),
        },
        conns: Vec::new(),
    });
    let wait_c: Chan<()> = Chan::new(1);
    let g2 = cc.clone();
    goro::spawn(async move {
        // G2
        if g2.balancer.notify().is_some() {
            let done_chan = Chan::new(0);
            let (g3, done) = (g2.clone(), done_chan.clone());
            goro::spawn(async move { g3.lb_watcher(done, fixed).await }); // G3
            let _ = done_chan.recv().await;
        }
        wait_c.close(); // defer close(waitC)
    });
    cc.balancer.addr_ch.close(); // close addrCh
}

/// The Go program's scenario, once.
pub async fn buggy() {
    goro::spawn(dial_context(false)); // G1
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    goro::spawn(dial_context(true)); // G1
}
