//! etcd, raft's `node`: `Status()` racing `Stop()` leaks the caller of
//! `Status` (https://github.com/etcd-io/etcd/pull/6857).
//!
//! `Status` hands a reply channel to the node's `run` loop over the
//! unbuffered `n.status`. When `run`'s `select` takes `n.stop` first, `run`
//! returns, and nobody will ever receive on `n.status`: `Status` blocks
//! on its send forever.
//!
//! Fix (upstream): `Status` selects on `n.done` beside the send, and gives
//! up once the node has stopped.

use crate::go::Chan;
use std::sync::Arc;

struct Status;

struct Node {
    status: Chan<Chan<Status>>,
    stop: Chan<()>,
    done: Chan<()>,
}

impl Node {
    fn new() -> Arc<Node> {
        Arc::new(Node {
            status: Chan::new(0),
            stop: Chan::new(0),
            done: Chan::new(0),
        })
    }

    /// As in the Go file: the send on `n.status` has no way out.
    async fn status(&self) -> Status {
        let c = Chan::new(0);
        self.status.send(c.clone()).await;
        c.recv().await.expect("run replies before it returns")
    }

    /// The fix: a stopped node answers with an empty status.
    async fn status_fixed(&self) -> Status {
        let c = Chan::new(0);
        goro::select! {
            send(self.status.tx, c.clone()) -> _ => {
                c.recv().await.expect("run replies before it returns")
            }
            recv(self.done.rx) -> _ => Status,
        }
    }

    async fn run(&self) {
        loop {
            goro::select! {
                recv(self.status.rx) -> c => {
                    c.expect("n.status is never closed").send(Status).await
                }
                recv(self.stop.rx) -> _ => {
                    self.done.close();
                    return;
                }
            }
        }
    }

    async fn stop(&self) {
        goro::select! {
            send(self.stop.tx, ()) -> _ => {}
            recv(self.done.rx) -> _ => return,
        }
        let _ = self.done.recv().await;
    }
}

async fn scenario(fixed: bool) {
    let n = Node::new();
    let (g1, g2, g3) = (n.clone(), n.clone(), n);
    goro::spawn(async move { g1.run().await }); // G1
    goro::spawn(async move {
        // G2
        let _ = if fixed {
            g2.status_fixed().await
        } else {
            g2.status().await
        };
    });
    goro::spawn(async move { g3.stop().await }); // G3
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
