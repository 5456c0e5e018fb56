//! etcd, the lessor: `Renew` calls the checkpointer with `le.mu` held, and
//! the checkpointer takes `le.mu` again (https://github.com/etcd-io/etcd/pull/10492).
//!
//! `Renew` write-locks `le.mu` and calls `le.cp`; the checkpointer ends in
//! `le.Checkpoint()`, which write-locks `le.mu` once more. A `RWMutex` is
//! not reentrant: the goroutine blocks on itself.
//!
//! Fix: `Renew` reads the checkpointer under the lock and calls it after
//! releasing the lock.

use crate::go::Func;
use goro::sync::RwLock;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// `le.cp`: in Go a `func(ctx context.Context)` that ignores its context;
/// the port leaves the context out.
type Checkpointer = Arc<Func>;

struct LessorState {
    cp: Option<Checkpointer>,
    _checkpoint_interval: Duration,
}

struct Lessor {
    mu: RwLock<LessorState>,
}

impl Lessor {
    async fn checkpoint(&self) {
        let _g = self.mu.write().await; // the second lock
    }

    async fn set_checkpointer(&self, cp: Checkpointer) {
        self.mu.write().await.cp = Some(cp);
    }

    /// As in the Go file: the checkpointer runs under `le.mu`.
    async fn renew(&self) {
        let g = self.mu.write().await;
        if let Some(cp) = &g.cp {
            cp().await;
        }
        drop(g); // the deferred unlock
    }

    /// The fix: the checkpointer runs after `le.mu` is released.
    async fn renew_fixed(&self) {
        let cp = self.mu.write().await.cp.clone();
        if let Some(cp) = cp {
            cp().await;
        }
    }
}

async fn scenario(fixed: bool) {
    goro::spawn(async move {
        // G1
        let le = Arc::new(Lessor {
            mu: RwLock::new(LessorState {
                cp: None,
                _checkpoint_interval: Duration::ZERO,
            }),
        });
        // The Go closure captures `le`; a weak reference keeps the port
        // free of a reference cycle.
        let weak: Weak<Lessor> = Arc::downgrade(&le);
        let faker_checkpointer: Func = Box::new(move || {
            let le = weak.upgrade();
            Box::pin(async move {
                if let Some(le) = le {
                    le.checkpoint().await;
                }
            })
        });
        le.set_checkpointer(Arc::new(faker_checkpointer)).await;
        drop(le.mu.write().await); // le.mu.Lock(); le.mu.Unlock()
        if fixed {
            le.renew_fixed().await
        } else {
            le.renew().await
        }
    });
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the fix.
pub async fn fixed() {
    scenario(true).await
}
