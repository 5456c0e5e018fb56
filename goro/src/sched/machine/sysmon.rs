//! The monitor thread (Go's `sysmon`).
//!
//! One thread per runtime, holding no P, that watches the others:
//!
//! * **Retake of a stuck poll.** goro cannot preempt a future. When a P's
//!   slice counter (`schedtick`) has not moved for [`SLICE`] while the P has
//!   queued work, its M is stuck in one long poll. The monitor cannot give
//!   the P to another thread (the stuck poll may still push to the P's ring,
//!   and the ring has one producer), so it marks the P `stuck` and calls
//!   `wakep`: thieves then take the P's `runnext` without pausing and drain
//!   its ring by repeated half-steals, and run its due timers. The owner
//!   clears the mark when its poll returns.
//! * **Network poll.** While some P is busy, the monitor polls the
//!   network if nobody has for 10 ms (`net/poller.rs`), so sockets are
//!   served even when every P runs tasks that never let it look.
//! * **Stuck-poll report.** With `Builder::stuck_poll` (or `GORO_STUCK`),
//!   a poll that runs past the threshold is reported once on stderr with
//!   its task and the native stack of its thread (`stuck.rs`). While a P
//!   is busy the monitor then sleeps at most a quarter of the threshold.
//! * **Flight recorder triggers.** With `GORO_FLIGHT`, the stuck-poll
//!   report and, once a second, the scheduling latency (the sampled
//!   wake-to-run histograms' p99) ask the recorder for a snapshot
//!   (`sched/trace/auto.rs`).
//! * **Schedule trace.** With `GORO_SCHEDTRACE=<ms>`, one line per interval
//!   on stderr in Go's `schedtrace` shape.
//! * **Pool cycles** (seed 003, the GC's part in Go): every `pool_cycle`
//!   interval, while some pool may hold values, the monitor rotates every
//!   pool's generations (`sync::pool::victim`). While the runtime is idle it
//!   does so at most twice (which empties primary and victim of what its
//!   tasks left) and then sleeps like an idle monitor does.
//!
//! Its sleep adapts as Go's does: 20 µs after a retake, doubling to 10 ms
//! while nothing happens. When every P is idle there is nothing to watch and
//! the monitor sleeps on a condition variable until a P is taken from the
//! idle list (`notify_busy`), so an idle runtime makes no wakeups at all.
//! With the likely-deadlock check on, it first sleeps one grace period
//! and checks (`runtime/deadlock.rs`), once per idle period. A period
//! ends at the next move of the idle-period clock (`Idle::activity`: a P
//! taken, a `block_on` caller parked anew), not only when the monitor
//! sees a busy P: the P may come and go while it is busy with the check.

use crate::loom::Unpoison;
use crate::loom::{AtomicBool, Condvar, Mutex, Ordering};
use crate::sched::machine::stuck::StuckWatch;
use crate::sched::processor::pool_hooks;
use crate::sched::timer::clock::instant_after;
use crate::sched::Sched;
use crate::stats::bump_shared;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A poll longer than this, with work queued behind it, gets its P marked
/// stuck (Go's `forcePreemptNS`).
pub(crate) const SLICE: Duration = Duration::from_millis(10);

const MIN_SLEEP: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(10);

pub(crate) struct Monitor {
    /// True while the monitor sleeps waiting for a P to become busy.
    idle_sleep: AtomicBool,
    lock: Mutex<bool>,
    cv: Condvar,
    schedtrace: Option<Duration>,
}

impl Monitor {
    pub(crate) fn new(schedtrace: Option<Duration>) -> Monitor {
        Monitor {
            idle_sleep: AtomicBool::new(false),
            lock: Mutex::new(false),
            cv: Condvar::new(),
            schedtrace,
        }
    }

    /// Called when a P leaves the idle list (or a new wait begins,
    /// `Sched::block_on_new_wait`): wakes the monitor if it sleeps.
    pub(crate) fn notify_busy(&self) {
        // SeqCst: pairs with the monitor's store of idle_sleep followed by
        // its re-check of npidle (the same publish-fence-check shape as the
        // worker wake protocol): either it sees the busy P or we see it asleep.
        if self.idle_sleep.load(Ordering::SeqCst) {
            self.kick();
        }
    }

    /// Wakes the monitor (busy P, or shutdown).
    pub(crate) fn kick(&self) {
        let mut woken = self.lock.lock().unpoison();
        *woken = true;
        drop(woken);
        self.cv.notify_one();
    }

    /// The idle sleep: for `d` (`None`: no timeout) or until kicked, unless
    /// a P is busy or the idle-period clock has moved past `period` since
    /// the monitor last looked. Publish-fence-check with the takers and
    /// the new waiters (`notify_busy`): the store of `idle_sleep` comes
    /// before the re-reads, their bump before their load of it, so either
    /// this sees the bump or they see the monitor asleep and kick it (loom
    /// model `loom_monitor_*`).
    pub(crate) fn sleep_while_idle(&self, sched: &Sched, period: u64, d: Option<Duration>) {
        self.idle_sleep.store(true, Ordering::SeqCst);
        if sched.idle.npidle() == sched.procs()
            && sched.idle.activity() == period
            && !sched.is_shutdown()
        {
            self.sleep(d);
        }
        self.idle_sleep.store(false, Ordering::SeqCst);
    }

    /// Sleeps for `d`, or until kicked; `None` for no timeout.
    fn sleep(&self, d: Option<Duration>) {
        let mut woken = self.lock.lock().unpoison();
        if !*woken {
            woken = match d {
                Some(d) => self.cv.wait_timeout(woken, d).unpoison().0,
                None => self.cv.wait(woken).unpoison(),
            };
        }
        *woken = false;
    }
}

/// What the layers above the scheduler run from the monitor; the runtime
/// implements it (`runtime/monitor.rs`) and hands it to [`monitor_main`].
pub(crate) trait MonitorHooks: Send {
    /// How long every P must stay idle before [`MonitorHooks::idle`] is
    /// called for that idle period; `None`: never.
    fn idle_grace(&self) -> Option<Duration>;
    /// Every P has been idle for `idle_for` (once per idle period).
    fn idle(&mut self, sched: &Sched, idle_for: Duration);
    /// A monitor round while some P is busy.
    fn busy_round(&mut self, sched: &Sched);
}

/// The monitor thread's body; `stuck` watches for stuck polls, if asked.
pub(crate) fn monitor_main(
    sched: Arc<Sched>,
    mut hooks: Box<dyn MonitorHooks>,
    mut stuck: Option<StuckWatch>,
) {
    let mon = &sched.monitor;
    let mut delay = MIN_SLEEP;
    let mut last_trace = Instant::now();
    // Pool hook: when the next pool cycle is due, and cycles done while idle.
    let mut pool_next = instant_after(Instant::now(), sched.pool_cycle);
    let mut idle_pool_cycles = 0u32;
    // The likely-deadlock check (runtime/deadlock.rs): since when every P
    // has been idle, and whether this idle period was checked (once each:
    // whatever could end it, a timer, a socket, a blocking call, makes the
    // runtime busy first or moves the idle-period clock past `period`,
    // `Idle::activity`: a P taken and given back between two looks, a new
    // `block_on` wait).
    let mut idle_since: Option<Instant> = None;
    let mut checked = false;
    let mut period = sched.idle.activity();
    // The flight recorder's latency trigger (`sched/trace/auto.rs`).
    let mut latency = crate::sched::trace::auto::LatencyWatch::new(&sched);
    loop {
        if sched.is_shutdown() {
            return;
        }
        let trace_due = mon.schedtrace.map(|iv| instant_after(last_trace, iv));
        let pool_due =
            if idle_pool_cycles < 2 && pool_hooks::hooks().is_some_and(|h| (h.any_values)()) {
                Some(pool_next)
            } else {
                // Nothing to cycle: the first values get a whole interval.
                pool_next = instant_after(Instant::now(), sched.pool_cycle);
                None
            };
        // A removed P still held by a busy M is work to watch (resize.rs).
        let idle = sched.idle.npidle() == sched.procs()
            && sched.global.is_empty()
            && sched.resize.held() == 0;
        let activity = if idle { sched.idle.activity() } else { period };
        if !idle || activity != period {
            idle_since = None;
            checked = false;
            period = activity;
        }
        let deadlock_due = match (idle, hooks.idle_grace(), checked) {
            (true, Some(grace), false) => Some(instant_after(
                *idle_since.get_or_insert_with(Instant::now),
                grace,
            )),
            _ => None,
        };
        let wake_at = [trace_due, pool_due, deadlock_due]
            .into_iter()
            .flatten()
            .min();
        if idle {
            // Everything is idle: sleep until a P is taken (or the trace or
            // a pool cycle is due).
            mon.sleep_while_idle(
                &sched,
                period,
                wake_at.map(|t| t.saturating_duration_since(Instant::now())),
            );
            delay = MIN_SLEEP;
            if let Some(w) = &mut stuck {
                w.forget();
            }
            if let Some(w) = &mut latency {
                w.forget(&sched);
            }
            // Observations from before the sleep say nothing about the polls
            // running now: start every P's clock afresh.
            let now = sched.now();
            for p in sched.ps.iter() {
                p.mon_tick
                    .store(p.schedtick.load(Ordering::Relaxed), Ordering::Relaxed);
                p.mon_when.store(now, Ordering::Relaxed);
            }
        } else {
            idle_pool_cycles = 0;
            let d = match wake_at {
                Some(t) => delay.min(t.saturating_duration_since(Instant::now())),
                None => delay,
            };
            let d = match &stuck {
                Some(w) => d.min(w.max_sleep()),
                None => d,
            };
            mon.sleep(Some(d));
        }
        if sched.is_shutdown() {
            return;
        }
        crate::sched::timer::clock::refresh_coarse();
        if let (Some(t), Some(since)) = (deadlock_due, idle_since) {
            if Instant::now() >= t {
                hooks.idle(&sched, since.elapsed());
                checked = true;
            }
        }
        if pool_due.is_some_and(|t| Instant::now() >= t) {
            crate::sched::trace::pool_cycle(&sched);
            if let Some(h) = pool_hooks::hooks() {
                pool_next = (h.cycle)(sched.pool_cycle, sched.policy.pool_victim);
            }
            if idle {
                idle_pool_cycles += 1;
            }
        }
        if !idle {
            // Nobody polled for a while (every P busy in long polls):
            // poll for them (Go's sysmon does; net/poller.rs).
            crate::sched::machine::netpoll::sysmon_poll(&sched);
            sched.sweep_retired();
            // Queue depths, for the metrics (runtime/metrics.rs).
            for p in sched.ps.iter().take(sched.procs()) {
                p.metrics.queue_depth.record(p.runq.len() as u64);
            }
            // Only while there is work, so an idle runtime still makes no
            // wakeups (Go does the same): following the machine's CPU
            // limit, publishing metrics.
            hooks.busy_round(&sched);
            if let Some(w) = &mut stuck {
                w.check(&sched);
            }
            if let Some(w) = &mut latency {
                w.check(&sched);
            }
        }
        let retook = retake(&sched);
        delay = if retook {
            MIN_SLEEP
        } else {
            (delay * 2).min(MAX_SLEEP)
        };
        if let Some(iv) = mon.schedtrace {
            if last_trace.elapsed() >= iv {
                last_trace = Instant::now();
                eprintln!("{}", schedtrace_line(&sched));
            }
        }
    }
}

/// Marks Ps stuck in one poll with work queued behind it; returns whether any.
fn retake(sched: &Sched) -> bool {
    let now = sched.now();
    let mut any = false;
    for (i, p) in sched.ps.iter().take(sched.procs()).enumerate() {
        if sched.idle.is_idle(i) {
            continue;
        }
        // Relaxed: mon_* are the monitor's own; schedtick is a progress
        // counter whose staleness only delays a retake by one round.
        let tick = p.schedtick.load(Ordering::Relaxed);
        if tick != p.mon_tick.load(Ordering::Relaxed) {
            p.mon_tick.store(tick, Ordering::Relaxed);
            p.mon_when.store(now, Ordering::Relaxed);
            continue;
        }
        let since = now.saturating_sub(p.mon_when.load(Ordering::Relaxed));
        let due_timers = p.timers.next_when() <= now;
        if since >= SLICE.as_nanos() as u64 && !p.is_stuck() && (!p.runq.is_empty() || due_timers) {
            p.stuck.store(true, Ordering::Release);
            bump_shared(&sched.counters.retakes, 1);
            any = true;
        }
    }
    if any {
        sched.wakep();
    }
    any
}

/// `SCHED 1004ms: procs=4 idleprocs=3 threads=6 spinningthreads=0 idlethreads=2 preemptions=17 procschanges=0 runqueue=0 [0 1 0 0]`
///
/// Go's shape, plus `preemptions` (goro's cooperative preemptions so far,
/// `coop.rs`), where Go's line has `needspinning`, and `procschanges`
/// (resizes so far, `resize.rs`). The queues are the active Ps'.
pub(crate) fn schedtrace_line(sched: &Sched) -> String {
    let idle_threads = sched.idle.lock().ms.len();
    let queues: Vec<String> = sched
        .ps
        .iter()
        .take(sched.procs())
        .map(|p| (p.runq.len() + usize::from(p.runq.has_runnext())).to_string())
        .collect();
    format!(
        "SCHED {}ms: procs={} idleprocs={} threads={} spinningthreads={} idlethreads={} preemptions={} procschanges={} runqueue={} [{}]",
        sched.start.elapsed().as_millis(),
        sched.procs(),
        sched.idle.npidle(),
        // +1: the monitor itself, as Go counts sysmon's M.
        sched.nthreads.load(Ordering::Relaxed) + 1,
        sched.idle.nmspinning(),
        idle_threads,
        sched
            .ps
            .iter()
            .map(|p| p.counters.preemptions.load(Ordering::Relaxed))
            .sum::<u64>(),
        sched.counters.procs_changes.load(Ordering::Relaxed),
        sched.global.len(),
        queues.join(" ")
    )
}
