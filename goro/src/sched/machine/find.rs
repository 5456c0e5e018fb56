//! Finding the next task to run (Go's `findRunnable`).
//!
//! In Go's order, except that stealing comes before the network and the
//! network is also polled while the queue has work (both below):
//!
//! 1. this P's due timers (`timers.rs`), every few slices while the local
//!    queue has work and always once it is empty;
//! 2. every 61st slice, the global queue first, so that a P busy with its own
//!    local work still serves tasks injected from outside; and the network,
//!    if a poll is due, its wakes going to the tail of the local queue;
//! 3. the local queue (`runnext`, then the ring);
//! 4. the global queue, a batch;
//! 5. stealing, if this M is spinning or fewer than half the busy Ps spin
//!    (on the last pass also running idle or stuck Ps' due timers);
//! 6. a non-blocking netpoll, rate-limited, skipped without sockets or
//!    while another M polls (`net/poller.rs`); then a spinning M that
//!    found nothing backs off briefly (spin, then yield, per
//!    `Policy::spin`) and tries again from step 3 before giving up, if
//!    no other M is doing so (`snooze.rs`, `Policy::snoozers`);
//! 7. give the P back, stop spinning, and re-check every source (the idle
//!    side of the publish-fence-check pairing, see `idle.rs`); if something
//!    turned up, take an idle P and start over;
//! 8. park (the caller, `stopm`), one parked thread only until the
//!    earliest timer.
//!
//! Only the slow path (from step 4 on) is timed, for the
//! `find_runnable_ns` counter, so the fast path never reads the clock.
//! The slow path also counts itself (`find_runnable_calls`), the other
//! Ps' queues it reads (`queues_inspected`, here and in `steal.rs`) and,
//! when the runtime was built with `measure_find_cpu`, its thread CPU time
//! (`find_cpu_ns`). It ends before the park (step 8 is the caller's), so
//! parked time is not in it. Counts made after the P was given back go to
//! the shared block (`stats.rs`): that happens once per give-up, next to
//! the park's own shared count.
//!
//! # Stealing before the network
//!
//! Go polls the network before it steals ("only an optimization before we
//! resort to stealing"). With sockets that is unfair to tasks already
//! queued: a P that runs dry while another P still holds part of the last
//! poll's batch polls again and runs the *new* readiness (often the same
//! connections, answered a moment ago) while the older tasks wait behind
//! the other P's current one: in goro-bench's `tcp_echo` at procs 2 a
//! request that waits past the p99 sees several rounds of its client
//! thread's connections answered meanwhile, and the tail is longer than
//! tokio's (tokio's idle workers steal first and poll the network when they
//! park). Stealing first keeps the queued work ahead of new readiness:
//! little more than one round per slow wait (readings in BENCH_RESULTS.md,
//! "Design readings quoted from module docs"). It changes nothing without
//! sockets (the netpoll is then a no-op), and it adds no starvation of the
//! network: a P that always finds work to steal is in the same position as
//! one whose local queue never runs dry, which only the monitor's poll
//! serves (every 10 ms), in either order.
//!
//! # Polling while busy
//!
//! Go looks at the network only when a P runs dry (and its sysmon every
//! 10 ms). A server then works in rounds: a poll readies a batch, the P
//! runs it to the end, polls again. A request that arrives just after a
//! poll waits for the rest of the current round and then for its place in
//! the next: up to two rounds. Polling every [`FAIRNESS_TICK`] slices as
//! well (if due: the poller's rate limit still holds) puts new readiness at
//! the tail of the queue while the round runs, so a request waits only for
//! what was queued before it, at most about one round: a shorter tail for
//! the same order of service, measured as a lower p99 on goro-bench's
//! `http_hello` at procs 1 (BENCH_RESULTS.md, "Design readings quoted from
//! module docs"). Without sockets the check is one atomic load every 61
//! slices.

use crate::loom::{fence, Ordering};
use crate::sched::backoff::Snooze;
use crate::sched::context::own_queue;
use crate::sched::machine::Machine;
use crate::sched::task::Runnable;
use crate::stats::{bump, bump_shared, Counters};
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// Every this many slices the global queue is checked before the local one,
/// and the network is polled (if due, see `net/poller.rs`) with its wakes
/// joining the local queue's tail. Go polls the network only when a P runs
/// dry; the module docs say why goro does not wait that long (tokio's
/// `event_interval` is also 61).
const FAIRNESS_TICK: u64 = 61;

/// While the local queue has work, this P's timers are checked every this
/// many slices (and always when it runs dry): a check costs a clock read,
/// which with a few thousand tasks sleeping is a large share of
/// `sleep_fan`'s time when done on every slice (Go's choice; reading in
/// BENCH_RESULTS.md, "Design readings quoted from module docs"). A due
/// timer waits at most this many polls; tokio checks its timers every 61.
const TIMER_CHECK_TICK: u64 = 4;

impl Machine {
    /// Returns a task to run with the P still held (the bool: it inherits the
    /// time slice), or `None` after giving the P back. Inlined into the
    /// scheduler loop, its one caller (a call per task costs more than the
    /// loop it serves).
    #[inline]
    pub(crate) fn find_runnable(&mut self) -> Option<(Runnable, bool)> {
        let pid = loop {
            let mut pid = self.p();
            // A resize removed our P (resize.rs): one load per task.
            if pid >= self.sched.procs() {
                if !self.retire_own_p() {
                    return None;
                }
                pid = self.p();
            }
            let p = &self.sched.ps[pid];
            // Relaxed: schedtick is written only by this thread.
            let tick = p.schedtick.load(Ordering::Relaxed);
            // Timers and the netpoll run wakers, and a waker may give our
            // P away (`block_in_place`): after either, the P is read again
            // before the queue is touched as its owner (machine.rs,
            // "Holding a P"); if it changed, we start over with the one we
            // hold now, or without one report the P gone.
            if tick.is_multiple_of(TIMER_CHECK_TICK)
                && self.check_own_timers() // else in `find_slow` if the queue is dry
                && self.held() != Some(pid)
            {
                self.held()?;
                continue;
            }
            if tick.is_multiple_of(FAIRNESS_TICK) {
                if !self.sched.global.is_empty() {
                    if let Some((t, _)) = self.sched.global.take_batch(self.sched.procs(), 0, 1) {
                        bump(&self.sched.ps[pid].counters.global_tasks, 1);
                        return Some((t, false));
                    }
                }
                // The network too, if a poll is due: the wakes go to the
                // tail, what comes back is the queue's head.
                if let Some(t) = self.netpoll() {
                    return Some((t, false));
                }
                if self.held() != Some(pid) {
                    self.held()?;
                    continue;
                }
            }
            break pid;
        };
        let p = &self.sched.ps[pid];
        let skip_runnext = self.inherited >= crate::sched::machine::INHERIT_MAX;
        // SAFETY: P `pid` is in our context (read above, and again after
        // anything since that ran wakers); the handle serves one `get`.
        if let Some(found) = unsafe { own_queue(p) }.get(skip_runnext) {
            return Some(found);
        }
        let start = Instant::now();
        let found = self.find_slow();
        bump_shared(
            &self.sched.counters.find_runnable_ns,
            start.elapsed().as_nanos() as u64,
        );
        found
    }

    fn find_slow(&mut self) -> Option<(Runnable, bool)> {
        self.count(|c| &c.find_runnable_calls, 1);
        let cpu0 = self.sched.measure_find_cpu.then(thread_cpu_ns);
        let found = self.search();
        if let Some(t0) = cpu0 {
            self.count(|c| &c.find_cpu_ns, thread_cpu_ns().saturating_sub(t0));
        }
        found
    }

    /// Adds `n` to a counter of the P this M holds, or without one to the
    /// shared block.
    pub(crate) fn count(&self, which: impl Fn(&Counters) -> &AtomicU64, n: u64) {
        match self.held() {
            None => bump_shared(which(&self.sched.counters), n),
            Some(p) => bump(which(&self.sched.ps[p].counters), n),
        }
    }

    /// Steps 3 to 7 of the module docs.
    fn search(&mut self) -> Option<(Runnable, bool)> {
        let sched = self.sched.clone();
        let mut backoff = self.backoff();
        let mut snoozer = sched.idle.snooze.holder(sched.policy.snoozers);
        'top: loop {
            self.check_own_timers();
            let pid = self.p();
            let p = &sched.ps[pid];
            {
                // SAFETY: P `pid` is in our context (read after the timers
                // ran); the handle serves `get`, `free` and `put_batch`, and
                // in between only the global queue's lock is taken.
                let mut q = unsafe { own_queue(p) };
                if let Some(t) = q.get(false) {
                    return Some(t);
                }
                if let Some((t, rest)) =
                    sched.global.take_batch(sched.procs(), q.free(), usize::MAX)
                {
                    bump(&p.counters.global_batches, 1);
                    bump(&p.counters.global_tasks, 1 + rest.len() as u64);
                    q.put_batch(rest);
                    return Some((t, false));
                }
            }
            // Saturating: a grow may raise npidle before we read it.
            let busy = sched.procs().saturating_sub(sched.idle.npidle());
            let spin = self.spinning || 2 * sched.idle.nmspinning() < busy;
            if spin {
                self.become_spinning();
                if let Some(t) = self.steal_work() {
                    return Some((t, false));
                }
            }
            // After stealing: queued work before new readiness (module docs).
            if let Some(t) = self.netpoll() {
                return Some((t, false));
            }
            if spin && snoozer.may_look_again() {
                // Seed 000: look again for a few microseconds (spinning, then
                // yielding) before paying for a park and a later wake; one
                // M at a time (`snooze.rs`).
                match backoff.snooze() {
                    Snooze::Spun => {
                        bump(&p.counters.spins, 1);
                        continue 'top;
                    }
                    Snooze::Yielded => {
                        bump(&p.counters.yields, 1);
                        continue 'top;
                    }
                    Snooze::Done => {}
                }
            }
            snoozer.release();

            // Give up the P.
            let was_spinning = self.spinning;
            let pid = self.dropp();
            {
                let mut lists = sched.idle.lock();
                sched.pidleput(&mut lists, pid);
            }
            let watcher = was_spinning && sched.policy.runnext_wake == crate::RunnextWake::Watch;
            if was_spinning && !watcher {
                self.spinning = false;
                sched.idle.dec_spinning();
            }
            // SeqCst fence: the idle side of publish-fence-check. Any task
            // published before a publisher read our npidle/nmspinning
            // updates as "nobody to wake" is visible to the checks below.
            fence(Ordering::SeqCst);
            let mut local = if was_spinning {
                self.local_work()
            } else {
                LocalWork::None
            };
            if watcher {
                // Seed 004's hand-off (idle.rs): only busy Ps' `runnext`
                // tasks: stay spinning and park as the watcher (`stopm`).
                if local == LocalWork::Runnext && sched.global.is_empty() {
                    return None;
                }
                self.spinning = false;
                sched.idle.dec_spinning();
                fence(Ordering::SeqCst);
                if local == LocalWork::None {
                    local = self.local_work();
                }
            }
            let work = !sched.global.is_empty() || local != LocalWork::None;
            if work {
                if let Some(p) = sched.acquire_idle_p() {
                    self.acquirep(p);
                    self.become_spinning();
                    backoff = self.backoff();
                    continue 'top;
                }
            }
            return None;
        }
    }

    /// Go's `checkRunqsNoP`: is there a P with queued work, and is it more
    /// than a task in the `runnext` of a P whose owner will run it (not
    /// stuck)?
    fn local_work(&self) -> LocalWork {
        let sched = &self.sched;
        let skip = |i| sched.policy.idle_mask && sched.idle.is_idle(i);
        let mut found = LocalWork::None;
        let mut read = 0;
        // Active Ps only: a removed P's work is moved by its holder or
        // the monitor (resize.rs), not by a search.
        for (i, p) in sched.ps.iter().take(sched.procs()).enumerate() {
            if skip(i) {
                continue;
            }
            read += 1;
            if p.runq.is_empty() {
                continue;
            }
            // `len` counts the ring only (`is_empty` also sees `runnext`),
            // so this is not `!is_empty()`, whatever clippy's len_zero says.
            let in_ring = p.runq.len();
            if in_ring > 0 || p.is_stuck() {
                found = LocalWork::Ring;
                break;
            }
            found = LocalWork::Runnext;
        }
        self.count(|c| &c.queues_inspected, read);
        found
    }
}

/// This thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own; the clock id is
    // valid on every Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What a spinning M giving up its P finds in the other Ps' queues.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LocalWork {
    None,
    /// Only tasks in the `runnext` of running Ps.
    Runnext,
    /// Tasks in a ring, or in a stuck P's `runnext`.
    Ring,
}
