//! Soak: every part of goro at once, at procs 1, 2, 4 and 8, for a bounded
//! time, with invariants checked while it runs and counts balanced at the end.
//!
//! Both tests are `#[ignore]`d (they run for seconds to minutes):
//!
//! ```text
//! cargo test --release -p goro --test soak -- --ignored soak_quick   # CI: ~3 s per procs setting
//! GORO_SOAK_SECS=30 cargo test --release -p goro --test soak -- --ignored soak
//! ```
//!
//! The filter `soak` matches both names, so the second command runs
//! `soak_quick` and then `soak` (the two never overlap: they share a lock,
//! since pools and their cycles are process-wide). `GORO_SOAK_SECS` is the
//! full run's duration per procs setting (default 30; the quick run ignores
//! it); `-- --ignored --exact soak` runs the full one alone.
//!
//! One runtime per procs setting runs these components concurrently:
//!
//! | component | what it does | checked |
//! |---|---|---|
//! | storm | trees of tasks spawning tasks, flat bursts that overflow the run queue, aborts | every join resolves with the right value; every task future is dropped once (spawned == finished) |
//! | ring | two rings of tasks over channels of capacity 0, 1 and 2, each node injecting numbered messages | each message comes back to its origin exactly once, in order, after a full lap |
//! | select | producers and consumers on one channel through `select!` with `after` timeouts, `default`, `timeout` | each (producer, number) received exactly once, none invented; no timeout fires early |
//! | context | trees of `with_cancel` / `with_timeout` / `with_deadline`, cancelled at random points | descendants are done when `cancel` returns; `DeadlineExceeded` never before the deadline; `Canceled` only under an explicit cancel |
//! | timers | `after_func` (some stopped), channel `Timer`s (some stopped, some reset), `sleep`, a `Ticker` | each fires at most once, never before its deadline; a stop that returned `true` means no fire |
//! | pool | tasks and `block_in_place` callers churn a `Pool` while a task forces `pool_cycle` | no value in two hands at once; made == dropped exactly at the end |
//! | tcp | echo clients and a server on 127.0.0.1, a read or write deadline on every operation, deadline probes | every byte comes back exactly; a probe times out, never before its deadline |
//!
//! A checker task on a `Ticker` re-checks the cross-component invariants
//! (counts never run backwards, never more finished than started, the ring
//! never holds more than its cap) while the rest runs. A violation is
//! recorded with its detail and stops the run; the test then fails listing
//! them. Every loop ends at the stop flag or, when winding down, at a drain
//! deadline; every wait has a deadline; a watchdog thread fails the test if
//! the runtime does not wind down in time (a lost wakeup hangs, it must not
//! hang CI). One line per procs setting with the operations each component
//! did goes to stderr.
//!
//! The components live in `soak/tasks.rs` (storm, ring, select) and
//! `soak/timed.rs` (context, timers, pool, tcp); this file holds the shared
//! state, the checker, the watchdog and the end-of-run balances.
#![cfg(not(loom))]

mod support;
#[path = "soak/tasks.rs"]
mod tasks;
#[path = "soak/timed.rs"]
mod timed;

use goro::chan::{self, RecvError};
use goro::context::{Context, ContextError};
use goro::net::{TcpListener, TcpStream};
use goro::sync::{pool::wait_reclaimed, pool_cycle, Pool};
use goro::time::{after, after_func, sleep, timeout, Ticker, Timer};
use std::collections::HashSet;
use std::future::Future;
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use support::pool::{Ledger, Tracked};
use tasks::*;
use timed::*;

/// The longest any single wait may take before it counts as a hang.
const OP_LIMIT: Duration = Duration::from_secs(30);
/// How long components may take to wind down after the stop flag.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// How long the watchdog waits, after setting the stop flag, for the
/// runtime to finish (past the drain limit, so a component's own message
/// comes first).
const GRACE: Duration = Duration::from_secs(90);
/// Select producers in all groups (see `run_runtime`).
const SELECT_PRODUCERS: u64 = 5;
/// Violations kept with their detail (all are counted).
const KEPT: usize = 32;

// ---------------------------------------------------------------------------
// Shared state: the stop flag, the violations, the counters.

#[derive(Default)]
struct Counters {
    // storm
    spawned: AtomicU64,
    finished: AtomicU64,
    joined: AtomicU64,
    aborted: AtomicU64,
    // ring
    ring_injected: AtomicU64,
    ring_delivered: AtomicU64,
    ring_hops: AtomicU64,
    // select
    sel_sent: AtomicU64,
    sel_received: AtomicU64,
    sel_timeouts: AtomicU64,
    sel_defaults: AtomicU64,
    // context
    ctx_trees: AtomicU64,
    ctx_nodes: AtomicU64,
    ctx_deadlines: AtomicU64,
    // timers
    timers_armed: AtomicU64,
    timers_fired: AtomicU64,
    timers_stopped: AtomicU64,
    sleeps: AtomicU64,
    ticks: AtomicU64,
    // pool
    pool_gets: AtomicU64,
    pool_cycles: AtomicU64,
    // tcp
    tcp_conns: AtomicU64,
    tcp_ops: AtomicU64,
    tcp_sent: AtomicU64,
    tcp_echoed: AtomicU64,
    tcp_server_bytes: AtomicU64,
    tcp_probes: AtomicU64,
    // checker
    checks: AtomicU64,
}

struct Soak {
    procs: usize,
    stop: AtomicBool,
    violations: AtomicUsize,
    kept: Mutex<Vec<String>>,
    c: Counters,
    /// Components still running (for the watchdog's message).
    running: Mutex<Vec<&'static str>>,
    ledger: Arc<Ledger>,
}

impl Soak {
    fn new(procs: usize) -> Arc<Soak> {
        Arc::new(Soak {
            procs,
            stop: AtomicBool::new(false),
            violations: AtomicUsize::new(0),
            kept: Mutex::new(Vec::new()),
            c: Counters::default(),
            running: Mutex::new(Vec::new()),
            ledger: Ledger::new(),
        })
    }

    fn stopped(&self) -> bool {
        self.stop.load(SeqCst)
    }

    /// Records a broken invariant and stops the run.
    fn violation(&self, what: String) {
        let n = self.violations.fetch_add(1, SeqCst);
        if n < KEPT {
            eprintln!("soak procs={}: VIOLATION: {what}", self.procs);
            self.kept.lock().unwrap().push(what);
        }
        self.stop.store(true, SeqCst);
    }

    fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.violation(what());
        }
    }

    /// `fut`, or a violation naming `what` if it takes longer than [`OP_LIMIT`].
    async fn bounded<F: Future>(&self, what: impl FnOnce() -> String, fut: F) -> Option<F::Output> {
        match timeout(OP_LIMIT, fut).await {
            Ok(v) => Some(v),
            Err(_) => {
                self.violation(format!("{} took longer than {OP_LIMIT:?}", what()));
                None
            }
        }
    }

    fn enter(&self, name: &'static str) {
        self.running.lock().unwrap().push(name);
    }

    fn leave(&self, name: &'static str) {
        let mut r = self.running.lock().unwrap();
        if let Some(i) = r.iter().position(|n| *n == name) {
            r.swap_remove(i);
        }
    }

    fn summary(&self) -> String {
        let c = &self.c;
        let g = |a: &AtomicU64| a.load(SeqCst);
        format!(
            "storm spawned={} joined={} aborted={} | ring msgs={} hops={} | select sent={} recv={} timeouts={} defaults={} | \
             ctx trees={} nodes={} deadlines={} | timers armed={} fired={} stopped={} sleeps={} ticks={} | \
             pool gets={} cycles={} made={} | tcp conns={} ops={} bytes={} probes={} | checks={}",
            g(&c.spawned),
            g(&c.joined),
            g(&c.aborted),
            g(&c.ring_delivered),
            g(&c.ring_hops),
            g(&c.sel_sent),
            g(&c.sel_received),
            g(&c.sel_timeouts),
            g(&c.sel_defaults),
            g(&c.ctx_trees),
            g(&c.ctx_nodes),
            g(&c.ctx_deadlines),
            g(&c.timers_armed),
            g(&c.timers_fired),
            g(&c.timers_stopped),
            g(&c.sleeps),
            g(&c.ticks),
            g(&c.pool_gets),
            g(&c.pool_cycles),
            self.ledger.made(),
            g(&c.tcp_conns),
            g(&c.tcp_ops),
            g(&c.tcp_echoed),
            g(&c.tcp_probes),
            g(&c.checks),
        )
    }
}

/// Once the stop flag is seen: the instant by which draining must be over.
struct Drain(Option<Instant>);

impl Drain {
    fn new() -> Drain {
        Drain(None)
    }

    /// Whether the drain deadline has passed (starting it at the first call
    /// after the stop flag).
    fn expired(&mut self, s: &Soak) -> bool {
        if !s.stopped() {
            return false;
        }
        let d = *self.0.get_or_insert_with(|| Instant::now() + DRAIN_LIMIT);
        Instant::now() >= d
    }
}

/// xorshift64*: cheap per-task randomness.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn micros(&mut self, max: u64) -> Duration {
        Duration::from_micros(self.below(max + 1))
    }
}

// ---------------------------------------------------------------------------
// The checker: cross-component invariants while everything runs.

async fn checker(s: Arc<Soak>) {
    let period = Duration::from_millis(5);
    let start = Instant::now();
    let tick = Ticker::new(period);
    let mut last_tick: Option<Instant> = None;
    let mut last = [0u64; 4];
    while !s.stopped() {
        match s
            .bounded(|| "waiting for a Ticker tick".into(), tick.rx().recv())
            .await
        {
            Some(Ok(at)) => {
                s.check(at >= start + period, || {
                    format!("first tick {:?} after start", at - start)
                });
                if let Some(prev) = last_tick {
                    s.check(at > prev, || {
                        format!("tick at {at:?} not after the previous one at {prev:?}")
                    });
                }
                last_tick = Some(at);
                s.c.ticks.fetch_add(1, SeqCst);
            }
            Some(Err(e)) => return s.violation(format!("Ticker channel failed: {e:?}")),
            None => return,
        }
        let c = &s.c;
        // Read the "after" side first: it must never exceed the "before" side.
        let finished = c.finished.load(SeqCst);
        let spawned = c.spawned.load(SeqCst);
        s.check(finished <= spawned, || {
            format!("storm: {finished} tasks finished of {spawned} spawned")
        });
        let delivered = c.ring_delivered.load(SeqCst);
        let injected = c.ring_injected.load(SeqCst);
        s.check(delivered <= injected, || {
            format!("ring: {delivered} delivered of {injected} injected")
        });
        // A producer counts its send after the select returns, so a receiver
        // may count first: at most one message per producer ahead.
        let received = c.sel_received.load(SeqCst);
        let sent = c.sel_sent.load(SeqCst);
        s.check(received <= sent + SELECT_PRODUCERS, || {
            format!("select: {received} received of {sent} sent")
        });
        let dropped = s.ledger.dropped();
        let made = s.ledger.made();
        s.check(dropped <= made, || {
            format!("pool: {dropped} values dropped of {made} made")
        });
        let echoed = c.tcp_echoed.load(SeqCst);
        let tsent = c.tcp_sent.load(SeqCst);
        s.check(echoed <= tsent, || {
            format!("tcp: {echoed} bytes echoed of {tsent} sent")
        });
        // Counters never run backwards.
        let now = [spawned, injected, sent, made as u64];
        s.check(now.iter().zip(&last).all(|(a, b)| a >= b), || {
            format!("a counter ran backwards: {last:?} -> {now:?}")
        });
        last = now;
        c.checks.fetch_add(1, SeqCst);
    }
    tick.stop();
}

// ---------------------------------------------------------------------------
// One procs setting.

/// Runs `fut` as a named component: registered while running.
fn component<F>(s: &Arc<Soak>, name: &'static str, fut: F) -> goro::JoinHandle<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    s.enter(name);
    let s = s.clone();
    goro::spawn(async move {
        fut.await;
        s.leave(name);
    })
}

fn run_runtime(s: Arc<Soak>) {
    let procs = s.procs;
    let rt = goro::Runtime::builder()
        .procs(procs)
        .build()
        .expect("runtime");
    let ledger = s.ledger.clone();
    let pool = Arc::new(Pool::new(move || ledger.make()));
    let p = pool.clone();
    let s2 = s.clone();
    rt.block_on(async move {
        let s = s2;
        let l = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = l.local_addr().expect("local_addr");
        let clients_done = Arc::new(AtomicBool::new(false));
        let mut hs = Vec::new();
        hs.push(component(&s, "checker", checker(s.clone())));
        hs.push(component(
            &s,
            "server",
            echo_server(s.clone(), l, clients_done.clone()),
        ));
        for i in 0..2 {
            hs.push(component(&s, "storm", storm(s.clone(), i)));
        }
        hs.push(component(&s, "ring", ring(s.clone(), 5, 100)));
        hs.push(component(&s, "ring", ring(s.clone(), 3 * procs + 2, 200)));
        // Producers: 2 + 3 = SELECT_PRODUCERS.
        hs.push(component(&s, "select", select_group(s.clone(), 1, 0, 2, 2)));
        hs.push(component(&s, "select", select_group(s.clone(), 2, 3, 3, 2)));
        for i in 0..2 {
            hs.push(component(&s, "context", contexts(s.clone(), i)));
            hs.push(component(&s, "timers", timers(s.clone(), i)));
        }
        for i in 0..2 * procs as u64 {
            hs.push(component(&s, "pool", pool_worker(s.clone(), p.clone(), i)));
        }
        hs.push(component(&s, "pool", pool_cycler(s.clone())));
        let clients: Vec<_> = (0..procs.min(4) as u64 + 1)
            .map(|i| component(&s, "tcp", echo_client(s.clone(), addr, i)))
            .collect();
        // Components run until the stop flag, then wind down within their
        // drain deadlines; a hang here is the watchdog's to report.
        for h in clients {
            if let Err(e) = h.await {
                s.violation(format!("echo client failed: {e}"));
            }
        }
        clients_done.store(true, SeqCst);
        for h in hs {
            if let Err(e) = h.await {
                s.violation(format!("component failed: {e}"));
            }
        }
    });
    // The runtime's threads (and its monitor's pool cycles) are gone before
    // the pool: nothing else holds it, so dropping it drops its values here.
    drop(rt);
    assert_eq!(Arc::strong_count(&pool), 1, "the pool has one owner left");
    drop(pool);
}

/// Runs one procs setting for `dur` under a watchdog; returns the summary.
fn soak_procs(procs: usize, dur: Duration) -> String {
    let s = Soak::new(procs);
    let (tx, rx) = mpsc::channel();
    let s2 = s.clone();
    let h = std::thread::Builder::new()
        .name(format!("soak-procs-{procs}"))
        .spawn(move || {
            run_runtime(s2);
            let _ = tx.send(());
        })
        .expect("spawn the soak thread");
    let t0 = Instant::now();
    // The run's length: the watchdog waits for the runtime, not for a clock.
    let early = rx.recv_timeout(dur);
    s.stop.store(true, SeqCst);
    let stopped_at = t0.elapsed();
    let outcome = match early {
        Ok(()) => Ok(()),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(()),
        Err(mpsc::RecvTimeoutError::Timeout) => match rx.recv_timeout(GRACE) {
            Ok(()) => Ok(()),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(()),
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "soak at procs={procs}: the runtime did not wind down within {GRACE:?} after the stop flag; \
                 still running: {:?}; violations: {:?}; progress: {}",
                s.running.lock().unwrap(),
                s.kept.lock().unwrap(),
                s.summary()
            ),
        },
    };
    if outcome.is_err() {
        if let Err(p) = h.join() {
            eprintln!(
                "soak procs={procs}: the runtime thread panicked; violations: {:?}",
                s.kept.lock().unwrap()
            );
            std::panic::resume_unwind(p);
        }
        unreachable!("the soak thread ended without reporting");
    }
    h.join().expect("soak thread");
    let wound_down = t0.elapsed() - stopped_at;

    // Values the cycles retired are dropped by the reclaimer thread.
    assert!(
        wait_reclaimed(OP_LIMIT),
        "soak procs={procs}: the pool reclaimer did not finish within {OP_LIMIT:?}"
    );
    let c = &s.c;
    let (made, dropped) = (s.ledger.made(), s.ledger.dropped());
    s.check(made == dropped && s.ledger.all_dropped(), || {
        format!("pool: {made} values made, {dropped} dropped")
    });
    s.check(s.ledger.double_drops() == 0, || {
        format!("pool: {} values dropped twice", s.ledger.double_drops())
    });
    let (spawned, finished) = (c.spawned.load(SeqCst), c.finished.load(SeqCst));
    s.check(spawned == finished, || {
        format!("storm: {spawned} tasks spawned, {finished} dropped")
    });
    let (joined, aborted) = (c.joined.load(SeqCst), c.aborted.load(SeqCst));
    s.check(spawned == joined + aborted, || {
        format!("storm: {spawned} tasks spawned, {joined} joined + {aborted} aborted")
    });
    let (inj, del) = (c.ring_injected.load(SeqCst), c.ring_delivered.load(SeqCst));
    s.check(inj == del, || {
        format!("ring: {inj} messages injected, {del} delivered")
    });
    let (sent, recv) = (c.sel_sent.load(SeqCst), c.sel_received.load(SeqCst));
    s.check(sent == recv, || {
        format!("select: {sent} messages sent, {recv} received")
    });
    let (tsent, techo, tsrv) = (
        c.tcp_sent.load(SeqCst),
        c.tcp_echoed.load(SeqCst),
        c.tcp_server_bytes.load(SeqCst),
    );
    s.check(tsent == techo && techo == tsrv, || {
        format!("tcp: {tsent} bytes sent, {techo} echoed back, {tsrv} through the server")
    });
    // Every component made progress (a starved one is a scheduler bug);
    // not asked of a run that a violation cut short.
    let cut_short = s.violations.load(SeqCst) > 0;
    let progress = [
        ("storm", c.joined.load(SeqCst)),
        ("ring", del),
        ("select", recv),
        ("context", c.ctx_trees.load(SeqCst)),
        ("timers", c.timers_fired.load(SeqCst)),
        ("pool", c.pool_gets.load(SeqCst)),
        ("tcp", c.tcp_ops.load(SeqCst)),
        ("checker", c.checks.load(SeqCst)),
    ];
    for (name, n) in progress {
        s.check(cut_short || n > 0, || {
            format!("{name} made no progress in {dur:?}")
        });
    }
    let summary = format!(
        "soak procs={procs} ran={stopped_at:.1?} wind-down={wound_down:.1?}: {}",
        s.summary()
    );
    eprintln!("{summary}");
    let n = s.violations.load(SeqCst);
    assert!(
        n == 0,
        "soak at procs={procs}: {n} invariant violations (first {KEPT} listed):\n  {}\n{summary}",
        s.kept.lock().unwrap().join("\n  ")
    );
    summary
}

/// Pools are process-wide: the two soaks never run at once.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn run_all(per_procs: Duration) {
    let _g = serial();
    // Two fds per connection, both ends in this process; a few connections.
    support::net::raise_fd_limit(1024);
    for procs in [1, 2, 4, 8] {
        soak_procs(procs, per_procs);
    }
}

/// The full soak: `GORO_SOAK_SECS` (default 30) per procs setting.
#[test]
#[ignore = "long: run with `cargo test --release -p goro --test soak -- --ignored soak`"]
fn soak() {
    let secs = match std::env::var("GORO_SOAK_SECS") {
        Err(_) => 30,
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if (1..=86_400).contains(&n) => n,
            _ => panic!("GORO_SOAK_SECS={v:?}: want whole seconds per procs setting, 1..=86400"),
        },
    };
    run_all(Duration::from_secs(secs));
}

/// The CI flavour: the same workload, 3 s per procs setting.
#[test]
#[ignore = "run in CI with `cargo test --release -p goro --test soak -- --ignored soak_quick`"]
fn soak_quick() {
    run_all(Duration::from_secs(3));
}
