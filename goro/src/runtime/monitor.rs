//! What the runtime runs from the scheduler's monitor thread
//! ([`MonitorHooks`]): the likely-deadlock check once per idle period,
//! and, while the runtime is busy, following the machine's CPU limit
//! (`procs.rs`) and publishing metrics (`metrics.rs`, feature `metrics`).
//! The monitor itself (`sched/machine/sysmon.rs`) knows none of these.

use super::deadlock::{self, Detector};
use super::procs::Follow;
use crate::sched::machine::sysmon::MonitorHooks;
use crate::sched::Sched;
use std::sync::Arc;
use std::time::Duration;
#[cfg(feature = "metrics")]
use std::time::Instant;

pub(crate) struct RuntimeHooks {
    deadlock: Arc<Detector>,
    follow: Follow,
    #[cfg(feature = "metrics")]
    last_publish: Instant,
}

impl RuntimeHooks {
    pub(crate) fn new(deadlock: Arc<Detector>) -> RuntimeHooks {
        RuntimeHooks {
            deadlock,
            follow: Follow::new(),
            #[cfg(feature = "metrics")]
            last_publish: Instant::now(),
        }
    }
}

impl MonitorHooks for RuntimeHooks {
    fn idle_grace(&self) -> Option<Duration> {
        self.deadlock.grace()
    }

    fn idle(&mut self, sched: &Sched, idle_for: Duration) {
        deadlock::check(&self.deadlock, sched, idle_for);
    }

    fn busy_round(&mut self, sched: &Sched) {
        self.follow.tick(sched);
        #[cfg(feature = "metrics")]
        if self.last_publish.elapsed() >= Duration::from_secs(1) {
            self.last_publish = Instant::now();
            super::metrics::publish_sched(sched);
        }
    }
}
