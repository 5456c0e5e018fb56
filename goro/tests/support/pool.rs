//! Helpers shared by the `pool_*` and `faults_*` tests and the soak
//! (`support::pool`): values that count their making and dropping and
//! check that no value is in two hands or dropped twice.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Pools are process-wide and a cycle rotates every pool, so the tests of a
/// binary that count cycles run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Per-test ledger of values: made, dropped, and for each value whether it
/// is held by a caller right now and whether it has been dropped.
#[derive(Default)]
pub struct Ledger {
    pub made: AtomicUsize,
    pub dropped: AtomicUsize,
    /// Values dropped a second time (counted, not panicked on: a panic in
    /// `Drop` on the monitor thread would only reach stderr).
    pub double_drops: AtomicUsize,
    out: Mutex<Vec<Arc<Flags>>>,
}

#[derive(Default)]
struct Flags {
    held: AtomicBool,
    dropped: AtomicBool,
    /// When the value was last released (given back) and when dropped.
    released_at: Mutex<Option<Instant>>,
    dropped_at: Mutex<Option<Instant>>,
}

impl Ledger {
    pub fn new() -> Arc<Ledger> {
        Arc::new(Ledger::default())
    }

    /// A new value (what a pool's `new` returns). Like a pooled value, it
    /// is not held until the caller `take`s it.
    pub fn make(self: &Arc<Ledger>) -> Tracked {
        let id = self.made.fetch_add(1, SeqCst);
        let flags = Arc::new(Flags::default());
        self.out.lock().unwrap().push(flags.clone());
        Tracked {
            id,
            flags,
            ledger: self.clone(),
        }
    }

    pub fn made(&self) -> usize {
        self.made.load(SeqCst)
    }

    pub fn dropped(&self) -> usize {
        self.dropped.load(SeqCst)
    }

    /// Every value made has been dropped exactly once (double drops panic
    /// in `Drop`).
    pub fn all_dropped(&self) -> bool {
        self.out
            .lock()
            .unwrap()
            .iter()
            .all(|f| f.dropped.load(SeqCst))
            && self.made() == self.dropped()
    }

    pub fn double_drops(&self) -> usize {
        self.double_drops.load(SeqCst)
    }

    /// The shortest time a value stayed in a pool: from its last `release`
    /// (which the caller does before `put`) to its drop, over the values
    /// that were released and dropped. `None` if there are none.
    pub fn min_pooled_life(&self) -> Option<Duration> {
        self.out
            .lock()
            .unwrap()
            .iter()
            .filter_map(|f| {
                let r = (*f.released_at.lock().unwrap())?;
                let d = (*f.dropped_at.lock().unwrap())?;
                Some(d.saturating_duration_since(r))
            })
            .min()
    }
}

/// A pooled value that knows its ledger.
pub struct Tracked {
    pub id: usize,
    flags: Arc<Flags>,
    ledger: Arc<Ledger>,
}

impl Tracked {
    /// Marks the value as taken by a caller; panics if another caller holds it.
    pub fn take(self) -> Tracked {
        assert!(
            !self.flags.held.swap(true, SeqCst),
            "value {} handed to two callers at once",
            self.id
        );
        self
    }

    /// Marks the value as given back (call before `put`).
    pub fn release(self) -> Tracked {
        assert!(
            self.flags.held.swap(false, SeqCst),
            "value {} released twice",
            self.id
        );
        *self.flags.released_at.lock().unwrap() = Some(Instant::now());
        self
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        *self.flags.dropped_at.lock().unwrap() = Some(Instant::now());
        if self.flags.dropped.swap(true, SeqCst) {
            self.ledger.double_drops.fetch_add(1, SeqCst);
        } else {
            self.ledger.dropped.fetch_add(1, SeqCst);
        }
    }
}
