//! Syncthing, NAT mappings: `clearAddresses` read-locks the mapping it has
//! already write-locked (https://github.com/syncthing/syncthing/pull/4829).
//!
//! `clearAddresses` holds `m.mut` for writing and calls `notify`, which
//! takes `m.mut` for reading. An `RWMutex` is not reentrant: the goroutine
//! blocks on itself (and holds the service's lock meanwhile).
//!
//! Fix (upstream): `clearAddresses` releases `m.mut` before it notifies.

use goro::sync::RwLock;
use std::collections::BTreeMap;
use std::sync::Arc;

type Address = i32;

struct Mapping {
    /// `mut` with the `extAddresses` it guards (ordered, so that a run
    /// does not depend on a hash map's order).
    mu: RwLock<BTreeMap<String, Address>>,
}

impl Mapping {
    /// As in the Go file: notifies with `m.mut` held.
    async fn clear_addresses(&self) {
        let mut g = self.mu.write().await;
        let removed: Vec<Address> = std::mem::take(&mut *g).into_values().collect();
        if !removed.is_empty() {
            self.notify(&[], &removed).await;
        }
        drop(g);
    }

    /// The fix: notifies after releasing `m.mut`.
    async fn clear_addresses_fixed(&self) {
        let mut g = self.mu.write().await;
        let removed: Vec<Address> = std::mem::take(&mut *g).into_values().collect();
        drop(g);
        if !removed.is_empty() {
            self.notify(&[], &removed).await;
        }
    }

    async fn notify(&self, _added: &[Address], _removed: &[Address]) {
        let _g = self.mu.read().await;
    }
}

struct Service {
    /// `mut` with the `mappings` it guards.
    mu: RwLock<Vec<Arc<Mapping>>>,
}

impl Service {
    async fn new_mapping(&self) -> Arc<Mapping> {
        let mapping = Arc::new(Mapping {
            mu: RwLock::new(BTreeMap::new()),
        });
        self.mu.write().await.push(mapping.clone());
        mapping
    }

    async fn remove_mapping(&self, mapping: &Arc<Mapping>, fixed: bool) {
        let g = self.mu.write().await;
        for existing in g.iter() {
            if Arc::ptr_eq(existing, mapping) {
                if fixed {
                    mapping.clear_addresses_fixed().await;
                } else {
                    mapping.clear_addresses().await;
                }
            }
        }
        drop(g); // defer s.mut.Unlock()
    }
}

async fn scenario(fixed: bool) {
    goro::spawn(async move {
        // G1
        let nat_svc = Service {
            mu: RwLock::new(Vec::new()),
        };
        let m = nat_svc.new_mapping().await;
        // Go writes `m.extAddresses` without the lock: nothing else runs yet.
        m.mu.try_write()
            .expect("nothing else holds the new mapping")
            .insert("test".to_string(), 0);
        nat_svc.remove_mapping(&m, fixed).await;
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
