//! Moby, devmapper's `DeviceSet`: `cleanupDeletedDevices` returns early
//! with the lock still held (https://github.com/moby/moby/pull/17176).
//!
//! With no deleted devices, `cleanupDeletedDevices` returns without
//! `devices.Unlock()`. The next goroutine to lock the device set blocks
//! forever; the test gives up after `time.After(1ms)` and leaks it.
//!
//! Fix (upstream): unlock on the early return too.

use crate::go::Chan;
use goro::sync::Mutex;
use std::sync::Arc;
use std::time::Duration;

struct DeviceSet {
    /// The embedded `sync.Mutex`, with the field it guards.
    mu: Mutex<DeviceSetState>,
}

struct DeviceSetState {
    nr_deleted_devices: i32,
}

impl DeviceSet {
    /// As in the Go file: the early return keeps the lock.
    async fn cleanup_deleted_devices(&self) -> Result<(), &'static str> {
        let g = self.mu.lock().await;
        if g.nr_deleted_devices == 0 {
            // Missing devices.Unlock(): the guard is forgotten, so the
            // mutex stays locked, as Go's does.
            std::mem::forget(g);
            return Ok(());
        }
        drop(g);
        Err("Error")
    }

    /// The fix: unlocks on every return.
    async fn cleanup_deleted_devices_fixed(&self) -> Result<(), &'static str> {
        let g = self.mu.lock().await;
        if g.nr_deleted_devices == 0 {
            drop(g);
            return Ok(());
        }
        drop(g);
        Err("Error")
    }
}

async fn test_devmapper_lock_released_device_deletion(fixed: bool) {
    let ds = Arc::new(DeviceSet {
        mu: Mutex::new(DeviceSetState {
            nr_deleted_devices: 0,
        }),
    });
    let _ = if fixed {
        ds.cleanup_deleted_devices_fixed().await
    } else {
        ds.cleanup_deleted_devices().await
    };
    let done_chan = Chan::new(0);
    let (g, done) = (ds.clone(), done_chan.clone());
    goro::spawn(async move {
        let _g = g.mu.lock().await;
        done.send(true).await;
    });
    goro::select! {
        recv(goro::time::after(Duration::from_millis(1))) -> _ => {}
        recv(done_chan.rx) -> _ => {}
    }
}

/// The Go program's scenario, once.
pub async fn buggy() {
    goro::spawn(test_devmapper_lock_released_device_deletion(false));
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    goro::spawn(test_devmapper_lock_released_device_deletion(true));
}
