//! Moby, the plugin manager's `init`: `WaitGroup.Wait` inside the loop
//! that starts the goroutines it waits for
//! (https://github.com/moby/moby/pull/25384).
//!
//! `init` adds one to the group per plugin, then starts one goroutine per
//! plugin and calls `group.Wait()` after each start. After the first
//! goroutine's `Done` the counter is still one: the first `Wait` never
//! returns, and the second goroutine is never started.
//!
//! Fix (upstream): `group.Wait()` moves after the loop.

use goro::sync::WaitGroup;
use std::sync::Arc;

struct Plugin;

struct Manager {
    plugins: Vec<Arc<Plugin>>,
}

impl Manager {
    /// As in the Go file: waits inside the loop.
    async fn init(&self) {
        let group = Arc::new(WaitGroup::new());
        group.add(self.plugins.len() as isize);
        for p in &self.plugins {
            let (p, g) = (p.clone(), group.clone());
            goro::spawn(async move {
                let _p = p;
                g.done(); // defer group.Done()
            });
            group.wait().await; // blocks here
        }
    }

    /// The fix: waits once, after starting every goroutine.
    async fn init_fixed(&self) {
        let group = Arc::new(WaitGroup::new());
        group.add(self.plugins.len() as isize);
        for p in &self.plugins {
            let (p, g) = (p.clone(), group.clone());
            goro::spawn(async move {
                let _p = p;
                g.done(); // defer group.Done()
            });
        }
        group.wait().await;
    }
}

async fn scenario(fixed: bool) {
    goro::spawn(async move {
        let pm = Arc::new(Manager {
            plugins: vec![Arc::new(Plugin), Arc::new(Plugin)],
        });
        goro::spawn(async move {
            if fixed {
                pm.init_fixed().await
            } else {
                pm.init().await
            }
        });
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
