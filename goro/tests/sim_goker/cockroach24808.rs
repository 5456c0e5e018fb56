//! CockroachDB, the compactor: `Start` blocks on a full channel
//! (https://github.com/cockroachdb/cockroach/pull/24808).
//!
//! `Start` pokes the compactor by sending on `c.ch` (capacity 1) before it
//! starts the worker that receives from it. A suggestion that arrived
//! before `Start` has already filled the buffer, so the send blocks
//! forever and the worker never starts.
//!
//! Fix (upstream): the poke is a non-blocking send (`select` with
//! `default`): a full buffer already holds a wake-up.

use crate::go::Chan;
use goro::context::Context;
use goro::sync::WaitGroup;
use std::future::Future;
use std::sync::Arc;

struct Compactor {
    ch: Chan<()>,
}

struct Stopper {
    stop: WaitGroup,
    stopper: Chan<()>,
}

impl Stopper {
    fn run_worker<F, Fut>(self: &Arc<Self>, ctx: Context, f: F)
    where
        F: FnOnce(Context) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        self.stop.add(1);
        let s = self.clone();
        goro::spawn(async move {
            f(ctx).await;
            s.stop.done(); // defer s.stop.Done()
        });
    }

    fn should_stop(&self) -> &goro::chan::Receiver<()> {
        &self.stopper.rx
    }

    fn stop(&self) {
        self.stopper.close();
    }
}

impl Compactor {
    async fn start(self: &Arc<Self>, ctx: Context, stopper: &Arc<Stopper>, fixed: bool) {
        if fixed {
            goro::select! {
                send(self.ch.tx, ()) -> _ => {}
                default => {}
            }
        } else {
            self.ch.send(()).await;
        }
        let (c, s) = (self.clone(), stopper.clone());
        stopper.run_worker(ctx, move |_ctx| async move {
            loop {
                goro::select! {
                    recv(s.should_stop()) -> _ => return,
                    recv(c.ch.rx) -> _ => {}
                }
            }
        });
    }
}

async fn scenario(fixed: bool) {
    goro::spawn(async move {
        // G1
        let stopper = Arc::new(Stopper {
            stop: WaitGroup::new(),
            stopper: Chan::new(0),
        });
        let compactor = Arc::new(Compactor { ch: Chan::new(1) });
        compactor.ch.send(()).await;
        compactor
            .start(Context::background(), &stopper, fixed)
            .await;
        stopper.stop(); // defer stopper.Stop()
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
