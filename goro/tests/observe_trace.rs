//! The execution trace: start and stop, errors, the flight recorder's
//! bound, and the shape of what is written (a protobuf `Trace` whose
//! packets decode). `scripts/check-trace.sh` checks the contents with
//! Perfetto's own schema.

mod support;

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::perfetto::fields;
use support::within;

/// A writer into shared memory.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Decodes a trace: every top-level field is a packet (field 1), and the
/// slices begun and ended, instants and track descriptors are counted.
#[derive(Debug, Default)]
struct Summary {
    packets: usize,
    descriptors: usize,
    begins: usize,
    ends: usize,
    names: Vec<String>,
}

fn summarize(b: &[u8]) -> Summary {
    let mut s = Summary::default();
    for (num, v) in fields(b) {
        assert_eq!(num, 1, "a top-level field other than Trace.packet");
        let pkt = v.expect_err("a packet is length-delimited");
        s.packets += 1;
        for (f, v) in fields(pkt) {
            match (f, v) {
                (60, Err(_)) => s.descriptors += 1,
                (11, Err(te)) => {
                    for (g, v) in fields(te) {
                        match (g, v) {
                            (9, Ok(1)) => s.begins += 1,
                            (9, Ok(2)) => s.ends += 1,
                            (23, Err(name)) => s.names.push(String::from_utf8_lossy(name).into()),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
    s
}

fn work(rt: &goro::Runtime) {
    rt.block_on(async {
        let (tx, rx) = goro::chan::bounded::<u32>(0);
        let h = goro::spawn_named("receiver", async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        });
        for i in 0..100 {
            tx.send(i).await.unwrap();
        }
        drop(tx);
        assert_eq!(h.await.unwrap(), 4950);
        goro::time::sleep(Duration::from_millis(1)).await;
        // A wake for certain: the receiver above may find a sender
        // waiting each time and never park, but a sleeping task is woken.
        goro::spawn(goro::time::sleep(Duration::from_millis(1)))
            .await
            .unwrap();
        goro::spawn(async { goro::block_in_place(|| 1) })
            .await
            .unwrap();
        goro::spawn_blocking(|| 2).await.unwrap();
    });
}

#[test]
fn trace_start_and_stop_write_a_trace_of_packets() {
    within(Duration::from_secs(30), "a short traced run", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        let out = Shared::default();
        rt.trace_start(out.clone()).unwrap();
        work(&rt);
        rt.trace_stop().unwrap();
        let s = summarize(&out.0.lock().unwrap());
        assert!(
            s.descriptors >= 5,
            "process, groups, a P and a task track: {s:?}"
        );
        assert!(s.begins >= 10 && s.begins >= s.ends, "slices: {s:?}");
        for name in [
            "spawn",
            "wake",
            "block_in_place",
            "running on P",
            "timers",
            "destroyed",
        ] {
            assert!(
                s.names.iter().any(|n| n.starts_with(name)),
                "no event named {name:?} in {:?}",
                s.names
            );
        }
        assert!(
            s.names.iter().any(|n| n.contains("\"receiver\"")),
            "the named task's slices"
        );
    });
}

#[test]
fn a_second_start_and_a_stop_without_start_are_refused() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    let e = rt.trace_stop().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    rt.trace_start(io::sink()).unwrap();
    let e = rt.trace_start(io::sink()).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    let e = rt.flight_recorder(Duration::from_secs(1)).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    rt.trace_stop().unwrap();
    // Stopped: a new session may start, and stop again.
    rt.trace_start(io::sink()).unwrap();
    rt.trace_stop().unwrap();
}

#[test]
fn trace_stop_returns_the_writers_error() {
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    rt.trace_start(Broken).unwrap();
    work(&rt);
    let e = rt.trace_stop().unwrap_err();
    assert_eq!(e.to_string(), "disk full");
}

#[test]
fn flight_recorder_rejects_a_zero_window_and_a_tiny_bound() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    let e = rt.flight_recorder(Duration::ZERO).unwrap_err();
    assert!(e.to_string().contains("flight_recorder(0ns)"), "{e}");
    let e = rt
        .flight_recorder_with_limit(Duration::from_secs(1), 1000)
        .unwrap_err();
    assert!(e.to_string().contains("max_bytes(1000)"), "{e}");
}

#[test]
fn flight_recorder_snapshot_holds_the_recent_events() {
    within(
        Duration::from_secs(30),
        "a flight recorder snapshot",
        || {
            let rt = goro::Runtime::builder().procs(2).build().unwrap();
            let fr = rt.flight_recorder(Duration::from_secs(5)).unwrap();
            work(&rt);
            let mut out = Vec::new();
            fr.snapshot(&mut out).unwrap();
            let s = summarize(&out);
            assert!(
                s.names.iter().any(|n| n.contains("\"receiver\"")),
                "the named task: {s:?}"
            );
            drop(fr);
            // Dropped: tracing is off, and a new session may start.
            rt.trace_start(io::sink()).unwrap();
            rt.trace_stop().unwrap();
        },
    );
}

/// The flight recorder's memory bound holds with a million tasks spawned
/// (each one a handful of events: about 300 MB of events go through a
/// 4 MiB recorder).
#[test]
fn flight_recorder_memory_stays_bounded_over_a_million_tasks() {
    within(Duration::from_secs(300), "a million traced spawns", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        let fr = rt
            .flight_recorder_with_limit(Duration::from_secs(60), 4 << 20)
            .unwrap();
        let bound = fr.bound_bytes();
        let mut most = 0;
        for _ in 0..100 {
            rt.block_on(async {
                let hs: Vec<_> = (0..10_000).map(|i| goro::spawn(async move { i })).collect();
                for h in hs {
                    h.await.unwrap();
                }
            });
            most = most.max(fr.buffered_bytes());
            assert!(
                fr.buffered_bytes() <= bound,
                "the recorder holds {} bytes, over its bound of {bound}",
                fr.buffered_bytes()
            );
        }
        assert!(
            most > bound / 2,
            "the recorder never filled ({most} of {bound} bytes): the test proves nothing"
        );
        println!("a million tasks: the recorder held at most {most} bytes, bound {bound}");
        let mut out = Vec::new();
        fr.snapshot(&mut out).unwrap();
        assert!(summarize(&out).packets > 1000);
    });
}

#[test]
fn dropping_the_runtime_stops_and_flushes_a_running_trace() {
    within(
        Duration::from_secs(30),
        "a runtime dropped while tracing",
        || {
            let out = Shared::default();
            let rt = goro::Runtime::builder().procs(1).build().unwrap();
            rt.trace_start(out.clone()).unwrap();
            work(&rt);
            drop(rt);
            // The writer thread held the only other handle to the buffer.
            let s = summarize(&out.0.lock().unwrap());
            assert!(
                s.names.iter().any(|n| n == "spawn"),
                "flushed at drop: {s:?}"
            );
            assert_eq!(
                Arc::strong_count(&out.0),
                1,
                "the writer was dropped with its thread"
            );
        },
    );
}

/// A trace running while `set_procs` adds Ps the runtime did not start
/// with: their events go to the no-P buffer, and nothing panics.
#[test]
fn tracing_across_a_grow_of_the_ps() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    rt.trace_start(std::io::sink()).unwrap();
    assert_eq!(rt.set_procs(4).unwrap(), 1);
    let sum = rt.block_on(async {
        let hs: Vec<_> = (0..200u64)
            .map(|i| {
                goro::spawn(async move {
                    goro::yield_now().await;
                    i
                })
            })
            .collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, 199 * 200 / 2);
    rt.trace_stop().unwrap();
    let f = rt
        .flight_recorder(std::time::Duration::from_secs(1))
        .unwrap();
    assert_eq!(rt.set_procs(6).unwrap(), 4);
    rt.block_on(async {
        for _ in 0..100 {
            goro::spawn(async {}).await.unwrap();
        }
    });
    f.snapshot(std::io::sink()).unwrap();
}
