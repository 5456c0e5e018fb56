//! The checks shared by the `faults_*` tests (`support::faults`), built on
//! the parent module's `wait_until` and `within` and [`super::pool`]'s
//! `Ledger` and `Tracked`.
//!
//! After each fault the runtime must still be whole: every P runs a task at
//! once (none was lost with a dead worker thread), timers fire, channels
//! work, and every value made was dropped exactly once. What a user sees of
//! a swallowed panic is the panic hook's report, so the hook is recorded
//! here too; the runtimes' threads are named `faults` so that report can be
//! traced to a worker thread.

use super::pool::{Ledger, Tracked};
use super::{wait_until, within};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

pub const LIMIT: Duration = Duration::from_secs(60);
pub const WAIT: Duration = Duration::from_secs(30);

pub fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder()
        .procs(procs)
        .thread_name("faults")
        // Only explicit cycles in this binary (pools are process-wide).
        .pool_cycle(Duration::from_secs(3600))
        .build()
        .expect("runtime starts")
}

/// Runs `scenario` once per entry of `procs`, each on a fresh runtime with
/// that many Ps, within [`LIMIT`]; `what` names the scenario in a timeout.
pub fn at_procs(
    procs: &[usize],
    what: &str,
    scenario: impl Fn(usize, goro::Runtime) + Clone + Send + 'static,
) {
    for &n in procs {
        let f = scenario.clone();
        within(LIMIT, &format!("{what} at procs={n}"), move || f(n, rt(n)));
    }
}

// --------------------------------------------------------------------------
// What the user sees of a swallowed panic: the panic hook's report.
// --------------------------------------------------------------------------

/// Panics seen by the process's panic hook: (thread name, message).
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Installs (once) a hook that records each panic, then prints it as the
/// default hook does.
pub fn record_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let thread = std::thread::current().name().unwrap_or("").to_string();
            PANICS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((thread, msg));
            prev(info);
        }));
    });
}

/// The names of the threads on which a panic whose message contains
/// `marker` was reported.
pub fn reported(marker: &str) -> Vec<String> {
    PANICS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(_, m)| m.contains(marker))
        .map(|(t, _)| t.clone())
        .collect()
}

// --------------------------------------------------------------------------
// Values and guards
// --------------------------------------------------------------------------

/// Counts its drops.
pub struct Guard(pub Arc<AtomicUsize>);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A tracked value whose `Drop` panics (with `msg`) when armed; its
/// `Tracked` is still dropped as the panic unwinds.
pub struct Bomb {
    _value: Tracked,
    armed: Option<&'static str>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        if let Some(msg) = self.armed {
            panic!("{msg}");
        }
    }
}

pub fn bomb(ledger: &Arc<Ledger>, armed: Option<&'static str>) -> Bomb {
    Bomb {
        _value: ledger.make(),
        armed,
    }
}

pub fn all_dropped_once(ledger: &Ledger, n: usize, what: &str) {
    assert_eq!(ledger.made(), n, "{what}: values made");
    assert_eq!(
        ledger.double_drops(),
        0,
        "{what}: a value was dropped twice"
    );
    assert!(
        ledger.all_dropped(),
        "{what}: {} of {} values dropped",
        ledger.dropped(),
        ledger.made()
    );
}

// --------------------------------------------------------------------------
// The runtime is whole
// --------------------------------------------------------------------------

/// Every P runs a task at the same moment (a P lost with a dead worker
/// thread would leave one task unable to start), a sleep, an `after` and a
/// `Timer` fire, and an unbuffered channel hands a value over.
pub fn assert_usable(rt: &goro::Runtime, after: &str) {
    let procs = rt.procs();
    let after = after.to_string();
    rt.block_on(async move {
        let arrived = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..procs)
            .map(|_| {
                let (a, what) = (arrived.clone(), after.clone());
                goro::spawn(async move {
                    a.fetch_add(1, SeqCst);
                    // Holds this P until every P has a task: needs them all.
                    wait_until(
                        WAIT,
                        &format!("after {what}: all {procs} Ps run a task at once"),
                        || a.load(SeqCst) >= procs,
                    );
                })
            })
            .collect();
        for h in hs {
            h.await.expect("a task on every P");
        }
        let timers = goro::spawn(async {
            goro::time::sleep(Duration::from_millis(1)).await;
            goro::time::after(Duration::from_millis(1))
                .recv()
                .await
                .expect("after fires");
            let t = goro::time::Timer::new(Duration::from_millis(1));
            t.rx().recv().await.expect("a Timer fires");
        });
        goro::time::timeout(WAIT, timers)
            .await
            .unwrap_or_else(|_| panic!("after {after}: timers did not fire within {WAIT:?}"))
            .expect("timer task");
        let (tx, rx) = goro::chan::bounded::<u32>(0);
        let sender = goro::spawn(async move { tx.send(7).await });
        assert_eq!(
            rx.recv().await,
            Ok(7),
            "after {after}: a channel hands over"
        );
        sender.await.unwrap().unwrap();
    });
}
