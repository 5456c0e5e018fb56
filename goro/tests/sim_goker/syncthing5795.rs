//! Syncthing, the protocol's `rawConnection`: `Close` called from a
//! message handler waits for the dispatcher that is running the handler
//! (https://github.com/syncthing/syncthing/pull/5795).
//!
//! The dispatcher loop (G2) hands a `ClusterConfig` to the model, whose
//! handler calls `c.Close()`. `Close` closes `c.closed` and waits for
//! `dispatcherLoopStopped`, which only the dispatcher closes, after the
//! handler returns: G2 waits for itself, and G1, waiting for the
//! dispatcher to stop, leaks with it.
//!
//! Fix (upstream): `Close` does its closing in a new goroutine, since it
//! may be called from within the dispatcher loop.

use crate::go::{Chan, Func};
use goro::sync::OnceCell;
use std::sync::{Arc, OnceLock, Weak};

enum Message {
    ClusterConfig,
}

struct TestModel {
    cc_fn: OnceLock<Func>,
}

impl TestModel {
    async fn cluster_config(&self, _msg: Message) {
        if let Some(cc_fn) = self.cc_fn.get() {
            cc_fn().await;
        }
    }
}

struct RawConnection {
    receiver: Arc<TestModel>,
    inbox: Chan<Message>,
    dispatcher_loop_stopped: Chan<()>,
    closed: Chan<()>,
    close_once: OnceCell<()>,
}

impl RawConnection {
    fn start(self: &Arc<Self>) {
        let c = self.clone();
        goro::spawn(async move { c.dispatcher_loop().await }); // G2
    }

    async fn dispatcher_loop(&self) {
        loop {
            let msg = goro::select! {
                recv(self.inbox.rx) -> msg => msg.expect("inbox is never closed"),
                recv(self.closed.rx) -> _ => break,
            };
            match msg {
                Message::ClusterConfig => self.receiver.cluster_config(msg).await,
            }
        }
        self.dispatcher_loop_stopped.close(); // defer close(c.dispatcherLoopStopped)
    }

    /// As in the Go file: closes and waits in the caller's goroutine.
    async fn close(&self) {
        self.close_once
            .get_or_init(|| async {
                self.closed.close();
                let _ = self.dispatcher_loop_stopped.recv().await;
            })
            .await;
    }

    /// The fix: closes and waits in a goroutine of its own.
    fn close_fixed(self: &Arc<Self>) {
        let c = self.clone();
        goro::spawn(async move { c.close().await });
    }
}

async fn scenario(fixed: bool) {
    goro::spawn(async move {
        // G1
        let m = Arc::new(TestModel {
            cc_fn: OnceLock::new(),
        });
        let c = Arc::new(RawConnection {
            receiver: m.clone(),
            inbox: Chan::new(0),
            dispatcher_loop_stopped: Chan::new(0),
            closed: Chan::new(0),
            close_once: OnceCell::new(),
        });
        // m.ccFn = c.Close; weak, so that the model and the connection
        // do not keep each other alive.
        let weak: Weak<RawConnection> = Arc::downgrade(&c);
        let cc_fn: Func = Box::new(move || {
            let c = weak.upgrade();
            Box::pin(async move {
                if let Some(c) = c {
                    if fixed {
                        c.close_fixed();
                    } else {
                        c.close().await;
                    }
                }
            })
        });
        assert!(m.cc_fn.set(cc_fn).is_ok(), "ccFn is set once");
        c.start();
        c.inbox.send(Message::ClusterConfig).await;
        let _ = c.dispatcher_loop_stopped.recv().await;
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
