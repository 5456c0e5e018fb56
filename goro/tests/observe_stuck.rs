//! The stuck-poll report (`sched/machine/stuck.rs`, `stack.rs`): a poll
//! that runs past the threshold is reported once, with its task, its
//! spawn site, its P, and the native stack of its thread, whose frames
//! name what blocks it: a `std::thread::sleep`, a CPU loop in the user's
//! function, a `std::sync::Mutex` held by another thread. A shorter poll
//! is not reported. `GORO_STUCK` and `#[goro::test]`'s default are
//! checked in a child process (the environment is process-wide, and the
//! default report goes to stderr).
//!
//! Reports are collected through the builder's test hook
//! (`Builder::stuck_poll_sink`). The CPU and mutex cases hold the poll
//! until the report has arrived, so a slow machine delays them instead of
//! failing them; every wait has a deadline.

mod support;

use std::io::Read;
use std::panic::Location;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const THRESHOLD: Duration = Duration::from_millis(20);
const DEADLINE: Duration = Duration::from_secs(10);

/// The reports a runtime's sink received, with a wait for the first.
#[derive(Clone, Default)]
struct Reports(Arc<(Mutex<Vec<String>>, Condvar)>);

impl Reports {
    fn sink(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let me = self.clone();
        move |r: &str| {
            let (list, cv) = &*me.0;
            list.lock().unwrap().push(r.to_owned());
            cv.notify_all();
        }
    }

    /// The first report; fails the test if none came within [`DEADLINE`].
    fn first(&self, what: &str) -> String {
        let (list, cv) = &*self.0;
        let got = cv
            .wait_timeout_while(list.lock().unwrap(), DEADLINE, |l| l.is_empty())
            .unwrap()
            .0;
        assert!(
            !got.is_empty(),
            "no stuck-poll report within {DEADLINE:?} for {what}"
        );
        got[0].clone()
    }

    fn all(&self) -> Vec<String> {
        self.0 .0.lock().unwrap().clone()
    }
}

fn runtime(threshold: Duration, reports: &Reports) -> goro::Runtime {
    goro::Runtime::builder()
        .procs(2)
        .stuck_poll(Some(threshold))
        .stuck_poll_sink(reports.sink())
        .build()
        .unwrap()
}

/// Spawns `fut` named `name` on `rt`; returns its handle and spawn site.
#[track_caller]
fn spawn_at<F>(
    rt: &goro::Runtime,
    name: &str,
    fut: F,
) -> (goro::JoinHandle<F::Output>, &'static Location<'static>)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    (rt.spawn_named(name, fut), Location::caller())
}

/// Joins `h` on `rt` within [`DEADLINE`]; gives the runtime back.
fn join<T: Send + 'static>(rt: goro::Runtime, h: goro::JoinHandle<T>, what: &str) -> goro::Runtime {
    support::within(DEADLINE, what, move || {
        rt.block_on(h).expect("the stuck task finishes");
        rt
    })
}

/// Checks the report's first line names task `id`, `name` and `site`,
/// and a running time of at least the threshold; returns its frames.
fn check_first_line(report: &str, id: goro::TaskId, name: &str, site: &Location<'_>) -> String {
    let (first, frames) = report.split_once('\n').expect("a report has lines");
    let head = format!("goro: stuck poll: task {id} \"{name}\" spawned at {site}, on P ");
    assert!(
        first.starts_with(&head),
        "first line {first:?}, expected it to start with {head:?}"
    );
    let ms: u64 = first
        .rsplit_once("running for ")
        .and_then(|(_, t)| t.strip_suffix("ms"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no `running for <n>ms` at the end of {first:?}"));
    assert!(
        ms >= THRESHOLD.as_millis() as u64,
        "reported at {ms}ms, before the {THRESHOLD:?} threshold: {first:?}"
    );
    frames.to_owned()
}

fn assert_frame(frames: &str, what: &str, names: impl Fn(&str) -> bool) {
    assert!(
        frames.lines().any(&names),
        "no frame naming {what} in the stack:\n{frames}"
    );
}

#[test]
fn a_poll_in_thread_sleep_is_reported_with_the_sleep_frame() {
    let reports = Reports::default();
    let rt = runtime(THRESHOLD, &reports);
    let (h, site) = spawn_at(&rt, "sleeper", async {
        std::thread::sleep(Duration::from_millis(200));
    });
    let id = h.id();
    let rt = join(rt, h, "the sleeping task");
    let report = reports.first("a 200 ms std::thread::sleep");
    let frames = check_first_line(&report, id, "sleeper", site);
    assert_frame(&frames, "the sleep", |l| {
        l.contains("std::thread::sleep") || l.contains("nanosleep")
    });
    // The poll lasted ten thresholds: still one report.
    assert_eq!(rt.stats().stuck_polls, 1, "one report per stuck poll");
}

/// The user's function, named in the stack: it spins until released.
#[inline(never)]
fn spin_until_released(release: &AtomicBool) -> u64 {
    let deadline = Instant::now() + DEADLINE;
    let mut x = 0u64;
    while !release.load(Ordering::Relaxed) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(
            Instant::now() < deadline,
            "the test never released the spinning task"
        );
    }
    x
}

#[test]
fn a_cpu_loop_is_reported_with_the_users_function() {
    let reports = Reports::default();
    let rt = runtime(THRESHOLD, &reports);
    let release = Arc::new(AtomicBool::new(false));
    let r = release.clone();
    let (h, site) = spawn_at(&rt, "spinner", async move {
        spin_until_released(&r);
    });
    let id = h.id();
    let report = reports.first("a CPU loop");
    release.store(true, Ordering::Relaxed);
    let rt = join(rt, h, "the spinning task");
    let frames = check_first_line(&report, id, "spinner", site);
    assert_frame(&frames, "spin_until_released", |l| {
        l.contains("observe_stuck::spin_until_released")
    });
    assert_eq!(rt.stats().stuck_polls, 1, "one report per stuck poll");
}

#[test]
fn a_poll_blocked_on_a_std_mutex_is_reported_with_the_lock_frame() {
    let reports = Reports::default();
    let rt = runtime(THRESHOLD, &reports);
    let lock = Arc::new(Mutex::new(0u32));
    // Another std thread holds the lock until the report has arrived.
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            let _g = lock.lock().unwrap();
            held_tx.send(()).unwrap();
            release_rx
                .recv_timeout(DEADLINE)
                .expect("the test releases the lock");
        })
    };
    held_rx
        .recv_timeout(DEADLINE)
        .expect("the holder thread takes the lock");
    let l = lock.clone();
    let (h, site) = spawn_at(&rt, "locker", async move {
        *l.lock().unwrap() += 1;
    });
    let id = h.id();
    let report = reports.first("a poll blocked on a std Mutex");
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let rt = join(rt, h, "the locking task");
    assert_eq!(
        *lock.lock().unwrap(),
        1,
        "the task took the lock in the end"
    );
    let frames = check_first_line(&report, id, "locker", site);
    assert_frame(&frames, "the mutex lock", |l| {
        (l.contains("Mutex") && l.contains("lock")) || l.contains("futex")
    });
    assert_eq!(rt.stats().stuck_polls, 1, "one report per stuck poll");
}

/// A writer into shared memory, for the trace.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_stuck_poll_shows_in_the_execution_trace() {
    let reports = Reports::default();
    let rt = runtime(THRESHOLD, &reports);
    let out = Shared::default();
    rt.trace_start(out.clone()).unwrap();
    let release = Arc::new(AtomicBool::new(false));
    let r = release.clone();
    let (h, _) = spawn_at(&rt, "traced", async move {
        spin_until_released(&r);
    });
    reports.first("a CPU loop, traced");
    release.store(true, Ordering::Relaxed);
    let rt = join(rt, h, "the spinning task");
    rt.trace_stop().unwrap();
    let bytes = out.0.lock().unwrap();
    assert!(
        bytes.windows(10).any(|w| w == b"stuck poll"),
        "no \"stuck poll\" event in the {} bytes of the trace",
        bytes.len()
    );
}

#[test]
fn polls_shorter_than_the_threshold_are_not_reported() {
    let reports = Reports::default();
    // Polls of 2 ms against 100 ms: a margin no scheduling delay of a
    // poll on a loaded machine comes near.
    let rt = runtime(Duration::from_millis(100), &reports);
    let (h, _) = spawn_at(&rt, "short polls", async {
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(2));
            goro::yield_now().await;
        }
    });
    let rt = join(rt, h, "the task of short polls");
    assert!(
        rt.stats().tasks_polled >= 50,
        "the task polled 50 times: {:?}",
        rt.stats()
    );
    assert_eq!(rt.stats().stuck_polls, 0, "reports: {:?}", reports.all());
    assert!(reports.all().is_empty(), "{:?}", reports.all());
}

// ---- the environment and #[goro::test], in a child process ----

const CHILD: &str = "GORO_TEST_OBSERVE_STUCK_CHILD";

/// Runs this binary's test `test` alone with `GORO_STUCK` = `value`;
/// returns its stderr, failing if it has not exited within 20 s.
fn run_child(test: &str, value: Option<&str>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("GORO_STUCK")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(v) = value {
        cmd.env("GORO_STUCK", v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child of {test} (GORO_STUCK={value:?}) did not exit within 20 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = reader.join().unwrap();
    assert!(
        status.success(),
        "child {test} (GORO_STUCK={value:?}) failed:\n{stderr}"
    );
    stderr
}

/// In the child: builds a runtime by hand (`stuck_poll` off unless
/// `GORO_STUCK` says otherwise) or says why it could not, and runs one
/// 200 ms sleep in a poll.
fn child_env_run() {
    match goro::Runtime::builder().procs(2).build() {
        Err(e) => eprintln!("build error: {e}"),
        Ok(rt) => {
            rt.block_on(async {
                goro::spawn_named("env-sleeper", async {
                    std::thread::sleep(Duration::from_millis(200));
                })
                .await
                .unwrap()
            });
            eprintln!("stuck_polls={}", rt.stats().stuck_polls);
        }
    }
}

#[test]
fn goro_stuck_turns_the_report_on_and_off_and_names_the_accepted_forms() {
    if std::env::var_os(CHILD).is_some() {
        return child_env_run();
    }
    let me = "goro_stuck_turns_the_report_on_and_off_and_names_the_accepted_forms";
    for on in ["20ms", " 20ms ", "20000us", "1s"] {
        let err = run_child(me, Some(on));
        if on == "1s" {
            // A 200 ms poll is under a 1 s threshold.
            assert!(err.contains("stuck_polls=0"), "GORO_STUCK={on:?}:\n{err}");
            continue;
        }
        assert!(
            err.contains("goro: stuck poll: task ") && err.contains("\"env-sleeper\""),
            "GORO_STUCK={on:?} turns the report on, to stderr:\n{err}"
        );
        assert!(err.contains("stuck_polls=1"), "GORO_STUCK={on:?}:\n{err}");
    }
    for off in [None, Some("off"), Some("0")] {
        let err = run_child(me, off);
        assert!(
            err.contains("stuck_polls=0") && !err.contains("goro: stuck poll"),
            "GORO_STUCK={off:?}: no report:\n{err}"
        );
    }
    for bad in ["soon", "20", "-5ms", "20 ms", "50us", "1h", ""] {
        let err = run_child(me, Some(bad));
        assert!(
            err.contains(&format!(
                "build error: GORO_STUCK='{bad}' is invalid: accepted off, 0"
            )) && err.contains("100us or more")
                && err.contains("20ms"),
            "GORO_STUCK={bad:?} names the variable, the value and the accepted forms:\n{err}"
        );
    }
}

#[test]
fn stuck_poll_rejects_a_threshold_under_100us_naming_the_accepted_range() {
    for d in [Duration::ZERO, Duration::from_micros(99)] {
        let e = goro::Runtime::builder()
            .procs(1)
            .stuck_poll(Some(d))
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("stuck_poll(Some({d:?}))")) && msg.contains("100us or more"),
            "{msg}"
        );
    }
}

/// `#[goro::test]` reports a poll stuck for 20 ms, on stderr.
#[goro::test]
async fn goro_test_reports_a_stuck_poll_by_default() {
    if std::env::var_os(CHILD).is_some() {
        goro::spawn_named("test-sleeper", async {
            std::thread::sleep(Duration::from_millis(200));
        })
        .await
        .unwrap();
        return;
    }
    let err = goro::spawn_blocking(|| run_child("goro_test_reports_a_stuck_poll_by_default", None))
        .await
        .unwrap();
    assert!(
        err.contains("goro: stuck poll: task ") && err.contains("\"test-sleeper\""),
        "#[goro::test] reports the stuck poll on stderr:\n{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains("std::thread::sleep") || l.contains("nanosleep")),
        "with the sleep in its stack:\n{err}"
    );
}
