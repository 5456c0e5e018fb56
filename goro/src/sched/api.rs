//! What the layers above may ask of a scheduler: start its monitor, shut
//! it down, count `block_on` callers, and read (never write) its state.
//! `Sched`'s fields are private to `sched`; these methods are the whole
//! surface the runtime, the pool, the poller and the reports see.

use super::{machine, processor, task};
use super::{Handoff, Policy, Sched};
use crate::loom::{Ordering, Unpoison};
use crate::stats::Counters;
use std::sync::Arc;

impl Sched {
    /// Starts the monitor thread, which runs `hooks` for the layers above
    /// and reports polls longer than `stuck_poll` (to `stuck_sink`, else
    /// stderr; `machine/stuck.rs`).
    pub(crate) fn start_monitor(
        self: &Arc<Self>,
        hooks: Box<dyn machine::sysmon::MonitorHooks>,
        stuck_poll: Option<std::time::Duration>,
        stuck_sink: Option<machine::stuck::Sink>,
    ) -> std::io::Result<()> {
        let s = self.clone();
        let t = std::thread::Builder::new()
            .name(format!("{}-monitor", self.thread_name))
            .spawn(move || {
                let stuck = machine::stuck::StuckWatch::new(stuck_poll, stuck_sink);
                machine::sysmon::monitor_main(s, hooks, stuck)
            })?;
        *self.monitor_thread.lock().unpoison() = Some(t);
        Ok(())
    }

    /// Stops the runtime (its owner is being dropped): stops the monitor
    /// and every worker thread, then drops every unfinished task's future:
    /// timers first (they hold wakers and callbacks), then queued tasks,
    /// then parked ones (woken into a scheduler that now discards them).
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.monitor.kick();
        if let Some(m) = self.monitor_thread.lock().unpoison().take() {
            let _ = m.join();
        }
        // Running Ms see the flag at the top of their loop and exit through
        // `stopm`, which checks it under the idle lock; parked Ms are woken
        // here under that same lock, so none can fall asleep unseen. New
        // threads may start until every M has seen the flag: keep joining
        // until the thread list stays empty.
        let me = std::thread::current().id();
        loop {
            for m in self.idle.lock().ms.drain(..) {
                m.unpark(Handoff::Exit);
            }
            let batch = std::mem::take(&mut *self.threads.lock().unpoison());
            if batch.is_empty() {
                break;
            }
            for t in batch {
                // Dropped from inside one of our own tasks: we cannot join
                // ourselves; this thread exits when the task returns.
                if t.thread().id() != me {
                    let _ = t.join();
                }
            }
        }
        self.blocking.shutdown();
        self.drain_timers();
        let mut queued = self.global.drain();
        for p in self.ps.iter() {
            queued.extend(p.runq.steal_all());
        }
        drop(queued);
        let mut parked = Vec::new();
        self.tasks.take_held(|meta| {
            // SAFETY: the table handed back the reference the task added
            // at its first park (`raw::held::add`); it becomes the waker's.
            parked.push(unsafe { task::raw::held::waker(meta) });
        });
        for w in parked {
            // `schedule` sees the shutdown flag and drops the Runnable,
            // which cancels the task and drops its future.
            w.wake();
        }
    }

    /// `block_on` callers: (polling, parked).
    pub(crate) fn block_on_reason(&self) -> task::meta::Reason {
        // Relaxed: a report's snapshot.
        task::meta::Reason::from_u8(self.block_on_reason.load(Ordering::Relaxed))
    }

    pub(crate) fn set_block_on_reason(&self, r: task::meta::Reason) {
        self.block_on_reason.store(r as u8, Ordering::Relaxed);
    }

    /// A `block_on` caller starts (`true`) or stops (`false`) polling its
    /// future: counted for the dump.
    pub(crate) fn block_on_polling(&self, entering: bool) {
        // Relaxed: a count for reports (`block_on_callers`).
        if entering {
            self.block_on_polling.fetch_add(1, Ordering::Relaxed);
        } else {
            self.block_on_polling.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// A `block_on` caller is about to park while the deadlock check is
    /// on: a new idle period begins, and a monitor asleep for good (its
    /// last period checked) must wake to arm the check again.
    pub(crate) fn block_on_new_wait(&self) {
        self.idle.new_wait();
        self.monitor.notify_busy();
    }

    /// A polling `block_on` caller parks (`true`) or wakes (`false`).
    pub(crate) fn block_on_parked(&self, parking: bool) {
        // SeqCst: the deadlock check reads these counts after the idle
        // lists (`runtime/deadlock.rs`).
        if parking {
            self.block_on_parked.fetch_add(1, Ordering::SeqCst);
            self.block_on_polling.fetch_sub(1, Ordering::SeqCst);
        } else {
            self.block_on_polling.fetch_add(1, Ordering::SeqCst);
            self.block_on_parked.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether every P is idle with no queued work (the deadlock check's
    /// first test, read before the `block_on` counts).
    pub(crate) fn all_idle(&self) -> bool {
        self.idle.npidle() == self.procs() && self.global.is_empty() && self.resize.held() == 0
    }

    /// Whether nothing outside the tasks could wake one: no timer armed,
    /// no socket registered, no blocking call running.
    pub(crate) fn no_outside_wakers(&self) -> bool {
        // Spare sleep timers and zombies wake nobody: settle them first so
        // that only live entries count.
        let queues =
            || std::iter::once(&self.global_timers).chain(self.ps.iter().map(|p| &p.timers));
        queues().for_each(|q| q.settle());
        let timers = queues().map(|q| q.len()).sum::<usize>();
        timers == 0 && self.netpoll.active().is_none() && !self.blocking.busy()
    }

    /// The policy in force.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The prefix of the runtime's thread names (its label in reports).
    pub(crate) fn thread_name(&self) -> &str {
        &self.thread_name
    }

    /// Every live task (read-only: the dump, the deadlock check, metrics).
    pub(crate) fn tasks(&self) -> &task::table::TaskTable {
        &self.tasks
    }

    /// Every P ever made, active ones first (`0..procs`).
    pub(crate) fn all_ps(&self) -> &processor::allp::AllP {
        &self.ps
    }

    /// The counters of events that happen without a P.
    pub(crate) fn shared_counters(&self) -> &Counters {
        &self.counters
    }

    /// The network poller's slot (`machine/netpoll.rs`).
    pub(crate) fn netpoll(&self) -> &machine::netpoll::NetpollSlot {
        &self.netpoll
    }

    /// Whether the monitor follows the machine's CPU limit (`processor/resize.rs`).
    pub(crate) fn follows_procs(&self) -> bool {
        // Relaxed: a flag read once a monitor round.
        self.resize.follow.load(Ordering::Relaxed)
    }

    pub(crate) fn set_follow_procs(&self, on: bool) {
        // Relaxed: set before the monitor starts, or read a round late.
        self.resize.follow.store(on, Ordering::Relaxed);
    }

    /// The sim bubble this scheduler is, if it is one (`sim/`).
    pub(crate) fn sim(&self) -> Option<&super::sim::Bubble> {
        self.sim.as_ref()
    }

    pub(crate) fn block_on_callers(&self) -> (usize, usize) {
        // Relaxed: counts for a report, a moment old at worst.
        (
            self.block_on_polling.load(Ordering::Relaxed),
            self.block_on_parked.load(Ordering::Relaxed),
        )
    }
}
