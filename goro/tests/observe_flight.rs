//! The always-on flight recorder (`Builder::flight_dir`, `GORO_FLIGHT`):
//! each trigger writes a snapshot into the directory by itself, the rate
//! limit holds, a snapshot converts with `goro::trace::to_perfetto` and
//! holds what triggered it, and bad settings are refused with the
//! accepted form (`sched/trace/auto.rs`).

mod support;

use goro::chan;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::perfetto::slices;

/// How long a test waits for a snapshot file before it fails.
const FILE_DEADLINE: Duration = Duration::from_secs(10);

/// A fresh, empty directory for one test, removed when dropped (after
/// the runtime, which is declared after it).
struct FlightDir(PathBuf);

impl FlightDir {
    fn new(name: &str) -> FlightDir {
        let d =
            std::env::temp_dir().join(format!("goro-flight-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        FlightDir(d)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for FlightDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The snapshot files in `dir` whose names end with `-{tag}.raw`.
fn snapshots(dir: &Path, tag: &str) -> Vec<PathBuf> {
    let suffix = format!("-{tag}.raw");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(&suffix))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Waits (up to [`FILE_DEADLINE`]) for a `tag` snapshot in `dir`.
fn wait_for_snapshot(dir: &Path, tag: &str) -> PathBuf {
    let deadline = Instant::now() + FILE_DEADLINE;
    loop {
        if let Some(p) = snapshots(dir, tag).into_iter().next() {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "no {tag} snapshot in {} within {FILE_DEADLINE:?}; files there: {:?}",
            dir.display(),
            std::fs::read_dir(dir).map(|r| r.count()).unwrap_or(0)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The snapshot converted to Perfetto's format.
fn perfetto(raw: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let f = std::fs::File::open(raw).unwrap();
    goro::trace::to_perfetto(f, &mut out)
        .unwrap_or_else(|e| panic!("{} does not convert: {e}", raw.display()));
    out
}

#[test]
fn a_stuck_poll_writes_a_snapshot_that_holds_its_slice() {
    let dir = FlightDir::new("stuck");
    let rt = goro::Runtime::builder()
        .procs(2)
        .flight_dir(dir.path())
        .stuck_poll_sink(|_| {}) // the report's text is stuck-poll tests' business
        .build()
        .unwrap();
    let id = rt.block_on(async {
        let h = goro::spawn_named("stall", async {
            // A poll that blocks its thread for 60 ms, past the 20 ms
            // threshold the recorder arms.
            std::thread::sleep(Duration::from_millis(60));
            goro::TaskId::current().unwrap()
        });
        h.await.unwrap()
    });
    let raw = wait_for_snapshot(dir.path(), "stuck");
    let trace = perfetto(&raw);
    let polls: Vec<_> = slices(&trace)
        .into_iter()
        .filter(|s| s.task == Some(id.as_u64()))
        .collect();
    assert!(
        polls.iter().any(|s| s
            .end
            .is_some_and(|e| e - s.begin >= Duration::from_millis(50).as_nanos() as u64)),
        "the snapshot {} has no finished poll of task {id} lasting 50 ms or more: {polls:?}",
        raw.display()
    );
}

/// The flight recorder's promise under load: a 50 ms stall in one
/// request's poll, while clients keep an HTTP/1.1 server busy, is in a
/// snapshot written within a second.
#[test]
fn a_stall_under_http_load_is_in_a_snapshot_within_a_second() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    const STALL: Duration = Duration::from_millis(50);
    let dir = FlightDir::new("http-stall");
    let rt = goro::Runtime::builder()
        .procs(2)
        .flight_dir(dir.path())
        .stuck_poll_sink(|_| {})
        .build()
        .unwrap();
    // When the stall began, and in which task.
    let stalled: Arc<Mutex<Option<(Instant, goro::TaskId)>>> = Arc::default();
    let served = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let listener = rt
        .block_on(goro::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (st, sv) = (stalled.clone(), served.clone());
    let server = rt.spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            let (st, sv) = (st.clone(), sv.clone());
            // Dropping the handle detaches the task, as in Go.
            drop(goro::spawn_named("http-conn", async move {
                let mut buf = [0u8; 512];
                let mut have = Vec::new();
                loop {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        if have.starts_with(b"GET /stall ") {
                            *st.lock().unwrap() =
                                Some((Instant::now(), goro::TaskId::current().unwrap()));
                            std::thread::sleep(STALL); // the stall: inside the poll
                        }
                        have.drain(..end + 4);
                        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
                        if conn.write_all(ok).await.is_err() {
                            return;
                        }
                        sv.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    });
    // Four keep-alive clients; the first asks for the stall once the
    // server has answered 2,000 requests, then all go on until stopped.
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let (stop, served) = (stop.clone(), served.clone());
            std::thread::spawn(move || {
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                c.set_nodelay(true).unwrap();
                let mut asked = i != 0;
                let mut buf = [0u8; 256];
                while !stop.load(Ordering::Relaxed) {
                    let path = if !asked && served.load(Ordering::Relaxed) >= 2_000 {
                        asked = true;
                        "/stall"
                    } else {
                        "/"
                    };
                    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
                    c.write_all(req.as_bytes()).unwrap();
                    let mut got = 0;
                    while !buf[..got].ends_with(b"hello") {
                        let n = c.read(&mut buf[got..]).unwrap();
                        assert!(n > 0, "the server closed a connection");
                        got += n;
                    }
                }
            })
        })
        .collect();
    let raw = wait_for_snapshot(dir.path(), "stuck");
    let written = Instant::now();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("a client thread panicked");
    }
    server.abort();
    let (began, id) = stalled.lock().unwrap().expect("the stall ran");
    let took = written - began;
    assert!(
        took <= Duration::from_secs(1),
        "the snapshot came {took:?} after the stall began (must: within 1 s)"
    );
    let polls: Vec<_> = slices(&perfetto(&raw))
        .into_iter()
        .filter(|s| s.task == Some(id.as_u64()))
        .collect();
    assert!(
        polls.iter().any(|s| s
            .end
            .is_some_and(|e| e - s.begin >= STALL.as_nanos() as u64)),
        "the snapshot {} has no poll of task {id} lasting {STALL:?}: {polls:?}",
        raw.display()
    );
    println!(
        "stall under load: snapshot {took:?} after the stall began, {} requests served",
        served.load(Ordering::Relaxed)
    );
}

#[test]
fn a_panicking_task_writes_a_snapshot() {
    let dir = FlightDir::new("panic");
    let rt = goro::Runtime::builder()
        .procs(1)
        .flight_dir(dir.path())
        .build()
        .unwrap();
    let r = rt.block_on(async { goro::spawn(async { panic!("planted: observe_flight") }).await });
    assert!(r.unwrap_err().is_panic());
    let raw = wait_for_snapshot(dir.path(), "panic");
    assert!(!perfetto(&raw).is_empty());
}

#[test]
fn the_deadlock_report_writes_a_snapshot() {
    let dir = FlightDir::new("deadlock");
    let rt = goro::Runtime::builder()
        .procs(1)
        .flight_dir(dir.path())
        .deadlock(goro::Deadlock::Fail)
        .deadlock_grace(Duration::from_millis(20))
        .build()
        .unwrap();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let (tx, rx) = chan::bounded::<u32>(0);
            let h = goro::spawn_named("stuck-sender", async move { tx.send(1).await });
            let _ = h.await;
            drop(rx);
        })
    }));
    assert!(
        failed.is_err(),
        "the deadlock check set to Fail fails block_on"
    );
    wait_for_snapshot(dir.path(), "deadlock");
}

#[test]
fn high_scheduling_latency_writes_a_snapshot() {
    let dir = FlightDir::new("latency");
    let rt = goro::Runtime::builder()
        .procs(1)
        .flight_dir(dir.path())
        .flight_latency(Some(Duration::from_millis(1)))
        .build()
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let d = dir.path().to_path_buf();
    let waiter = std::thread::spawn(move || {
        let p = wait_for_snapshot(&d, "latency");
        s.store(true, std::sync::atomic::Ordering::Relaxed);
        p
    });
    rt.block_on(async {
        // A hog that blocks its P for 2 ms per poll, and sleepers whose
        // timers fire meanwhile: every wake waits behind the hog.
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let stop = stop.clone();
            tasks.push(goro::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    goro::time::sleep(Duration::from_micros(500)).await;
                }
            }));
        }
        let stop = stop.clone();
        tasks.push(goro::spawn(async move {
            let deadline = Instant::now() + FILE_DEADLINE;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
                goro::yield_now().await;
            }
        }));
        for t in tasks {
            t.await.unwrap();
        }
    });
    let raw = waiter.join().expect("a latency snapshot");
    assert!(!perfetto(&raw).is_empty());
}

#[test]
fn snapshots_are_rate_limited_and_a_manual_one_is_not() {
    let dir = FlightDir::new("rate");
    let rt = goro::Runtime::builder()
        .procs(1)
        .flight_dir(dir.path())
        .flight_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..5 {
            let r = goro::spawn(async { panic!("planted: observe_flight") }).await;
            assert!(r.unwrap_err().is_panic());
        }
    });
    wait_for_snapshot(dir.path(), "panic");
    let manual = rt.flight_snapshot().unwrap();
    assert!(
        manual.to_string_lossy().ends_with("-manual.raw"),
        "{manual:?}"
    );
    assert!(!perfetto(&manual).is_empty());
    // The runtime's drop ends the recorder after any pending snapshot.
    drop(rt);
    assert_eq!(
        snapshots(dir.path(), "panic").len(),
        1,
        "five panics within the interval write one snapshot"
    );
}

#[test]
fn the_recorder_is_one_session_and_says_so() {
    let dir = FlightDir::new("busy");
    let rt = goro::Runtime::builder()
        .flight_dir(dir.path())
        .build()
        .unwrap();
    let e = rt.flight_recorder(Duration::from_secs(1)).unwrap_err();
    assert!(e.to_string().contains("already running"), "{e}");
    let plain = goro::Runtime::builder().build().unwrap();
    let e = plain.flight_snapshot().unwrap_err();
    assert!(e.to_string().contains("GORO_FLIGHT=dir"), "{e}");
}

#[test]
fn bad_settings_name_the_accepted_form() {
    let e = goro::Runtime::builder()
        .flight_dir(std::env::temp_dir())
        .flight_interval(Duration::ZERO)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("greater than zero"), "{e}");
    let e = goro::Runtime::builder()
        .flight_dir(std::env::temp_dir())
        .flight_latency(Some(Duration::from_nanos(5)))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("100us or more"), "{e}");
    // A file where the directory should be.
    let file = std::env::temp_dir().join(format!("goro-flight-test-{}-file", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    let e = goro::Runtime::builder()
        .flight_dir(&file)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("cannot create it"), "{e}");
    std::fs::remove_file(file).unwrap();
}

/// Set in the child process of `a_trace_variable_and_the_flight_recorder_are_refused_together`.
const CHILD: &str = "GORO_OBSERVE_FLIGHT_CHILD";

#[test]
fn a_trace_variable_and_the_flight_recorder_are_refused_together() {
    if let Some(trace) = std::env::var_os(CHILD) {
        // The child, with GORO_TRACE set: the builder names both and
        // creates no trace file.
        let dir = FlightDir::new("with-trace");
        let e = goro::Runtime::builder()
            .flight_dir(dir.path())
            .build()
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("GORO_TRACE and the flight recorder (Builder::flight_dir)")
                && msg.contains("accepted: one of them"),
            "{msg}"
        );
        assert!(!Path::new(&trace).exists(), "the trace file was created");
        return;
    }
    let trace =
        std::env::temp_dir().join(format!("goro-flight-test-{}.pftrace", std::process::id()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_trace_variable_and_the_flight_recorder_are_refused_together",
            "--test-threads=1",
        ])
        .env(CHILD, &trace)
        .env("GORO_TRACE", &trace)
        .env_remove("GORO_TRACE_RAW")
        .env_remove("GORO_FLIGHT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the child test has not exited within 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = child.wait_with_output().unwrap();
    assert!(
        status.success(),
        "the child failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
