//! How reliably the stuck-poll report names the frame that blocks, and how
//! soon: each case (a poll in `std::thread::sleep`, a CPU loop in an
//! `#[inline(never)]` user function, a poll blocked on a
//! `std::sync::Mutex` held by another thread; each 200 ms) runs `--trials`
//! times (100) on a runtime with a 20 ms threshold (`--threshold-ms`), and
//! the program prints, per case, how many reports named the right frame,
//! how many arrived within twice the threshold of the poll's start, and
//! how many did both, with the latencies and one report in full.
//!
//! The latency is measured end to end: from the moment the poll's body
//! starts to the moment the report reaches the sink, so it includes the
//! stack walk and naming the frames. Naming reads the binary's debug
//! information the first time, which can take a second: one warm-up
//! report comes first and is shown apart.
//!
//! ```sh
//! cargo run -p goro --example stuck_trials
//! cargo run -p goro --release --example stuck_trials -- --trials 100
//! ```

use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(200);
const DEADLINE: Duration = Duration::from_secs(10);

/// A report and when it arrived.
type Arrived = (String, Instant);

/// The reports received, each with when it arrived.
#[derive(Clone, Default)]
struct Reports(Arc<(Mutex<Vec<Arrived>>, Condvar)>);

impl Reports {
    fn sink(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let me = self.clone();
        move |r: &str| {
            let (list, cv) = &*me.0;
            list.lock().unwrap().push((r.to_owned(), Instant::now()));
            cv.notify_all();
        }
    }

    /// Takes the next report, waiting up to [`DEADLINE`].
    fn take(&self) -> Option<Arrived> {
        let (list, cv) = &*self.0;
        let mut l = cv
            .wait_timeout_while(list.lock().unwrap(), DEADLINE, |l| l.is_empty())
            .unwrap()
            .0;
        (!l.is_empty()).then(|| l.remove(0))
    }

    fn clear(&self) -> usize {
        let mut l = self.0 .0.lock().unwrap();
        let n = l.len();
        l.clear();
        n
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Case {
    Sleep,
    Cpu,
    Mutex,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Sleep => "std::thread::sleep(200ms)",
            Case::Cpu => "200 ms CPU loop in spin_for",
            Case::Mutex => "std::sync::Mutex held 200 ms by another thread",
        }
    }

    /// Whether a frame line names what blocks this case.
    fn names_the_cause(self, line: &str) -> bool {
        match self {
            Case::Sleep => line.contains("std::thread::sleep") || line.contains("nanosleep"),
            Case::Cpu => line.contains("stuck_trials::spin_for"),
            Case::Mutex => {
                (line.contains("Mutex") && line.contains("lock")) || line.contains("futex")
            }
        }
    }
}

/// The user's function: spins for `d`.
#[inline(never)]
fn spin_for(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }
    x
}

/// Runs one trial of `case`; returns the report and its latency from the
/// poll's start, or `None` if no report came.
fn trial(rt: &goro::Runtime, reports: &Reports, case: Case) -> Option<(String, Duration)> {
    let started = Arc::new(Mutex::new(None::<Instant>));
    let st = started.clone();
    let mark = move || *st.lock().unwrap() = Some(Instant::now());
    let mut holder = None;
    let h = match case {
        Case::Sleep => rt.spawn_named("sleeper", async move {
            mark();
            std::thread::sleep(POLL);
        }),
        Case::Cpu => rt.spawn_named("spinner", async move {
            mark();
            std::hint::black_box(spin_for(POLL));
        }),
        Case::Mutex => {
            // Another thread holds the lock from before the poll until
            // 200 ms after the poll began.
            let lock = Arc::new(Mutex::new(0u32));
            let (held_tx, held_rx) = mpsc::channel();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let l = lock.clone();
            holder = Some(std::thread::spawn(move || {
                let _g = l.lock().unwrap();
                held_tx.send(()).unwrap();
                go_rx.recv_timeout(DEADLINE).expect("the task started");
                std::thread::sleep(POLL);
            }));
            held_rx.recv_timeout(DEADLINE).expect("the holder locked");
            rt.spawn_named("locker", async move {
                mark();
                let _ = go_tx.send(());
                *lock.lock().unwrap() += 1;
            })
        }
    };
    rt.block_on(h).unwrap();
    if let Some(t) = holder {
        t.join().unwrap();
    }
    let (text, at) = reports.take()?;
    let start = started.lock().unwrap().expect("the poll started");
    Some((text, at.saturating_duration_since(start)))
}

fn main() {
    let mut trials = 100usize;
    let mut threshold_ms = 20u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--trials" => trials = v.parse().expect("--trials takes a number"),
            "--threshold-ms" => threshold_ms = v.parse().expect("--threshold-ms takes a number"),
            _ => panic!("unknown argument {a:?}: accepted --trials N, --threshold-ms N"),
        }
    }
    let threshold = Duration::from_millis(threshold_ms);
    let reports = Reports::default();
    let rt = goro::Runtime::builder()
        .procs(2)
        .stuck_poll(Some(threshold))
        .stuck_poll_sink(reports.sink())
        .build()
        .unwrap();
    println!(
        "stuck_trials: {trials} trials per case, threshold {threshold:?}, polls of {POLL:?}, procs 2, {} build",
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    match trial(&rt, &reports, Case::Sleep) {
        Some((_, lat)) => {
            println!("warm-up report (reads the debug info): {lat:?} after the poll began")
        }
        None => println!("warm-up: no report"),
    }
    for case in [Case::Sleep, Case::Cpu, Case::Mutex] {
        let (mut named, mut in_time, mut both, mut missing) = (0, 0, 0, 0);
        let mut lats = Vec::new();
        let mut sample = None;
        let mut extra = 0;
        let mut misses = Vec::new();
        for i in 0..trials {
            match trial(&rt, &reports, case) {
                None => missing += 1,
                Some((text, lat)) => {
                    let ok_frame = text.lines().skip(1).any(|l| case.names_the_cause(l));
                    let ok_time = lat <= threshold * 2;
                    named += usize::from(ok_frame);
                    in_time += usize::from(ok_time);
                    both += usize::from(ok_frame && ok_time);
                    lats.push(lat);
                    if !(ok_frame && ok_time) && misses.len() < 3 {
                        misses.push(format!("trial {i}: {lat:?}\n{text}"));
                    }
                    if sample.is_none() && ok_frame {
                        sample = Some(text);
                    }
                }
            }
            // A second report for the same poll would be a bug.
            extra += reports.clear();
        }
        lats.sort();
        let pct = |q: f64| {
            lats.get(((lats.len() as f64 - 1.0) * q).round() as usize)
                .map_or("-".to_string(), |d| {
                    format!("{:.1}ms", d.as_secs_f64() * 1e3)
                })
        };
        println!();
        println!("case: {}", case.name());
        println!(
            "  named the right frame within 2x the threshold ({:?}): {both} of {trials}",
            threshold * 2
        );
        println!("  named the right frame: {named} of {trials}; within 2x: {in_time} of {trials}; no report: {missing}; extra reports: {extra}");
        println!(
            "  latency from the poll's start to the report: min {} median {} p95 {} max {}",
            pct(0.0),
            pct(0.5),
            pct(0.95),
            pct(1.0)
        );
        if let Some(s) = sample {
            println!("  one report:");
            for l in s.lines() {
                println!("    {l}");
            }
        }
        for m in misses {
            println!("  a miss: {m}");
        }
    }
    println!();
    println!("stats: stuck_polls={}", rt.stats().stuck_polls);
}
