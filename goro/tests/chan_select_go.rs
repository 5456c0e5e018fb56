//! Go's own select tests (`runtime/chan_test.go`), translated to goro at
//! Go's full iteration counts: `TestNonblockSelectRace` and
//! `TestNonblockSelectRace2` (on two plain threads and on two Ps),
//! `TestSelectStress` and `TestSelectFairness`.
//!
//! The non-blocking races check that a `select!` with `default` sees one
//! consistent moment across its channels: in each trial one of the two
//! channels is ready at every instant, so `default` is never right. Before
//! `try_select` locked every channel of the select at once, the
//! version failed 1 to 2,690 times in 100,000 trials (RELIABILITY.md).

mod support;

use goro::chan::try_select::{try_select, TryCase, TryRecvCase};
use goro::chan::{bounded, never, Receiver, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use support::within;

/// Every test here must finish within this (a hang is a lost wakeup or a
/// deadlock, never a slow machine: each takes seconds).
const LIMIT: Duration = Duration::from_secs(120);

/// Go's `n` for both non-blocking races.
const RACE_TRIALS: usize = 100_000;

/// The races run one at a time: each needs both CPUs of a small machine
/// for its two sides to overlap.
static ONE_RACE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Idle channels added to the widened races' select.
const IDLE: usize = 30;

/// [`IDLE`] channels that stay open and empty (their senders are kept).
fn idle_channels() -> (Vec<Sender<i32>>, Arc<Vec<Receiver<i32>>>) {
    let (tx, rx) = (0..IDLE).map(|_| bounded::<i32>(1)).unzip();
    (tx, Arc::new(rx))
}

/// The select under test: `true` if it took a channel case. With `idle`
/// (the widened race), `c1` and `c2` sit among [`IDLE`] channels that are
/// never ready, so that a select looking at one channel at a time spends
/// long enough between `c2` and `c1` for the other side to act in between:
/// the race Go's shape leaves to chance, made likely.
fn took_a_case(c1: &Receiver<i32>, c2: &Receiver<i32>, idle: Option<&[Receiver<i32>]>) -> bool {
    let Some(idle) = idle else {
        // A plain function (called on threads and in tasks): the
        // non-awaiting form.
        return goro::select_blocking! {
            recv(c1) -> _ => true,
            recv(c2) -> _ => true,
            default => false,
        };
    };
    let mut cases: [TryRecvCase<'_, i32>; IDLE + 2] = std::array::from_fn(|i| match i {
        0 => TryRecvCase::new(c2),
        i if i == IDLE + 1 => TryRecvCase::new(c1),
        i => TryRecvCase::new(&idle[i - 1]),
    });
    try_select(cases.each_mut().map(|c| c as &mut dyn TryCase)).is_some()
}

/// One trial's channels: `c1` holds a value; `c2` is buffered (race 1, fed
/// by a send) or a rendezvous channel (race 2, made ready by `close`).
fn trial_channels(close_c2: bool) -> (Sender<i32>, Receiver<i32>, Sender<i32>, Receiver<i32>) {
    let (t1, c1) = bounded::<i32>(1);
    let (t2, c2) = bounded::<i32>(if close_c2 { 0 } else { 1 });
    t1.try_send(1).unwrap();
    (t1, c1, t2, c2)
}

/// Makes `c2` ready (a value, or closed), then drains `c1` without waiting:
/// at every instant one of the two is ready. Starts `trial % 1024` loop
/// turns (a few nanoseconds each) after the select's side is let go, so
/// that over the trials the two sides meet at every offset within a few
/// microseconds, the window in which a select looking at one channel at a
/// time went wrong.
fn other_side(c1: &Receiver<i32>, t2: &Sender<i32>, close_c2: bool, trial: usize) {
    for i in 0..trial % 1024 {
        std::hint::black_box(i);
    }
    if close_c2 {
        t2.close();
    } else {
        t2.try_send(1).unwrap();
    }
    goro::select_blocking! {
        recv(c1) -> _ => {},
        default => {},
    }
}

/// Spins until `go` reaches `trial`: both sides of a trial start within a
/// cache-line transfer of each other, so the select's look at its channels
/// overlaps the other side's send and receive (Go gets the same overlap by
/// running the two goroutines in parallel).
fn wait_for_start(go: &AtomicUsize, trial: usize) {
    let deadline = Instant::now() + LIMIT;
    let mut spins = 0u32;
    while go.load(Ordering::Acquire) < trial {
        // Spin while the other side is likely on the other CPU; past that
        // (a loaded machine), give the CPU away instead of a time slice.
        spins += 1;
        if spins < 1 << 12 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        assert!(Instant::now() < deadline, "trial {trial} never started");
    }
}

/// The races on two plain threads: a helper thread runs the select while
/// this one runs the other side. Returns how many trials took `default`.
fn race_on_threads(close_c2: bool, widened: bool) -> usize {
    let (_idle_tx, idle) = idle_channels();
    let go = Arc::new(AtomicUsize::new(0));
    let ready = Arc::new(AtomicUsize::new(0));
    let (job_tx, job_rx) = mpsc::sync_channel::<(usize, Receiver<i32>, Receiver<i32>)>(1);
    let (res_tx, res_rx) = mpsc::sync_channel::<bool>(1);
    let helper = {
        let (go, ready, idle) = (go.clone(), ready.clone(), idle.clone());
        std::thread::spawn(move || {
            for (trial, c1, c2) in job_rx {
                ready.store(trial, Ordering::Release);
                wait_for_start(&go, trial);
                let idle = widened.then_some(&idle[..]);
                res_tx.send(took_a_case(&c1, &c2, idle)).unwrap();
            }
        })
    };
    let mut wrong = 0;
    for trial in 1..=RACE_TRIALS {
        let (_t1, c1, t2, c2) = trial_channels(close_c2);
        job_tx.send((trial, c1.clone(), c2)).unwrap();
        // The helper is awake and spinning: let both sides go.
        wait_for_start(&ready, trial);
        go.store(trial, Ordering::Release);
        other_side(&c1, &t2, close_c2, trial);
        if !res_rx.recv().unwrap() {
            wrong += 1;
        }
    }
    drop(job_tx);
    helper.join().unwrap();
    wrong
}

/// The races as Go writes them, at procs 2: a task per trial runs the
/// select while the spawning task runs the other side, both started
/// together as on threads.
fn race_on_ps(close_c2: bool, widened: bool) -> usize {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    let (_idle_tx, idle) = idle_channels();
    rt.block_on(async move {
        let go = Arc::new(AtomicUsize::new(0));
        let mut wrong = 0;
        for trial in 1..=RACE_TRIALS {
            let (_t1, c1, t2, c2) = trial_channels(close_c2);
            let (c1b, go2, idle) = (c1.clone(), go.clone(), idle.clone());
            let (ready_tx, ready_rx) = bounded::<()>(1);
            let h = goro::spawn(async move {
                ready_tx.send(()).await.unwrap();
                wait_for_start(&go2, trial);
                took_a_case(&c1b, &c2, widened.then_some(&idle[..]))
            });
            // The select's task is running (on the other P, or this one
            // once this task waits): start both sides together.
            ready_rx.recv().await.unwrap();
            go.store(trial, Ordering::Release);
            other_side(&c1, &t2, close_c2, trial);
            if !h.await.unwrap() {
                wrong += 1;
            }
        }
        wrong
    })
}

/// Runs one race (`race_on_threads` or `race_on_ps`) alone and fails if
/// any trial took `default`.
fn check_race(what: &str, race: fn(bool, bool) -> usize, close_c2: bool, widened: bool) {
    let _one = ONE_RACE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let wrong = within(LIMIT, what, move || race(close_c2, widened));
    assert_eq!(
        wrong, 0,
        "{what}: {wrong} of {RACE_TRIALS} selects took `default` although a channel was ready"
    );
}

#[test]
fn nonblock_select_race_on_two_threads() {
    check_race(
        "TestNonblockSelectRace on threads",
        race_on_threads,
        false,
        false,
    );
}

#[test]
fn nonblock_select_race_widened_on_two_threads() {
    check_race(
        "TestNonblockSelectRace widened on threads",
        race_on_threads,
        false,
        true,
    );
}

#[test]
fn nonblock_select_race_on_two_ps() {
    check_race("TestNonblockSelectRace on 2 Ps", race_on_ps, false, false);
}

#[test]
fn nonblock_select_race_widened_on_two_ps() {
    check_race(
        "TestNonblockSelectRace widened on 2 Ps",
        race_on_ps,
        false,
        true,
    );
}

#[test]
fn nonblock_select_race2_on_two_threads() {
    check_race(
        "TestNonblockSelectRace2 on threads",
        race_on_threads,
        true,
        false,
    );
}

#[test]
fn nonblock_select_race2_widened_on_two_threads() {
    check_race(
        "TestNonblockSelectRace2 widened on threads",
        race_on_threads,
        true,
        true,
    );
}

#[test]
fn nonblock_select_race2_on_two_ps() {
    check_race("TestNonblockSelectRace2 on 2 Ps", race_on_ps, true, false);
}

#[test]
fn nonblock_select_race2_widened_on_two_ps() {
    check_race(
        "TestNonblockSelectRace2 widened on 2 Ps",
        race_on_ps,
        true,
        true,
    );
}

/// Go's `TestSelectStress`: four channels (two rendezvous, capacities 2 and
/// 3), a sender and a receiver task per channel, plus one task that sends on
/// all four in one select and one that receives from all four in one
/// select, each switching a case off (Go: setting it to nil; goro: a channel
/// that can never be ready) once it has done its `N`. Nothing may deadlock.
#[test]
fn select_stress() {
    const N: usize = 100_000;
    within(LIMIT, "TestSelectStress", || {
        let rt = goro::Runtime::builder().procs(4).build().unwrap();
        rt.block_on(async {
            let chans: Vec<(Sender<u8>, Receiver<u8>)> =
                [0, 0, 2, 3].into_iter().map(bounded::<u8>).collect();
            let mut tasks = Vec::new();
            for (tx, rx) in &chans {
                let (tx, rx) = (tx.clone(), rx.clone());
                tasks.push(goro::spawn(async move {
                    for _ in 0..N {
                        tx.send(0).await.unwrap();
                    }
                }));
                tasks.push(goro::spawn(async move {
                    for _ in 0..N {
                        rx.recv().await.unwrap();
                    }
                }));
            }
            // A send case switched off: nobody ever receives from it.
            let (off_tx, _off_rx) = bounded::<u8>(0);
            let mut send_to: Vec<Sender<u8>> = chans.iter().map(|c| c.0.clone()).collect();
            tasks.push(goro::spawn(async move {
                let mut n = [0; 4];
                for _ in 0..4 * N {
                    let i = goro::select! {
                        send(send_to[3], 0) -> r => { r.unwrap(); 3 }
                        send(send_to[2], 0) -> r => { r.unwrap(); 2 }
                        send(send_to[0], 0) -> r => { r.unwrap(); 0 }
                        send(send_to[1], 0) -> r => { r.unwrap(); 1 }
                    };
                    n[i] += 1;
                    if n[i] == N {
                        send_to[i] = off_tx.clone();
                    }
                }
            }));
            let mut recv_from: Vec<Receiver<u8>> = chans.iter().map(|c| c.1.clone()).collect();
            tasks.push(goro::spawn(async move {
                let mut n = [0; 4];
                for _ in 0..4 * N {
                    let i = goro::select! {
                        recv(recv_from[0]) -> r => { r.unwrap(); 0 }
                        recv(recv_from[1]) -> r => { r.unwrap(); 1 }
                        recv(recv_from[2]) -> r => { r.unwrap(); 2 }
                        recv(recv_from[3]) -> r => { r.unwrap(); 3 }
                    };
                    n[i] += 1;
                    if n[i] == N {
                        recv_from[i] = never();
                    }
                }
            }));
            for t in tasks {
                t.await.unwrap();
            }
        });
    });
}

/// Go's `TestSelectFairness`: with two always-ready channels among four, a
/// select must pick each about half the time (within Go's 10 sigma).
#[test]
fn select_fairness() {
    const TRIALS: usize = 10_000;
    let (cnt1, cnt2) = within(LIMIT, "TestSelectFairness", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (t1, c1) = bounded::<u8>(TRIALS + 1);
            let (t2, c2) = bounded::<u8>(TRIALS + 1);
            for _ in 0..=TRIALS {
                t1.try_send(1).unwrap();
                t2.try_send(2).unwrap();
            }
            let (_t3, c3) = bounded::<u8>(0);
            let (_t4, c4) = bounded::<u8>(0);
            let (out_tx, out) = bounded::<u8>(0);
            let (done_tx, done) = bounded::<()>(0);
            let picker = goro::spawn(async move {
                loop {
                    let b = goro::select! {
                        recv(c3) -> b => b.unwrap(),
                        recv(c4) -> b => b.unwrap(),
                        recv(c1) -> b => b.unwrap(),
                        recv(c2) -> b => b.unwrap(),
                    };
                    goro::select! {
                        send(out_tx, b) -> r => r.unwrap(),
                        recv(done) -> _ => return,
                    }
                }
            });
            let (mut cnt1, mut cnt2) = (0usize, 0usize);
            for _ in 0..TRIALS {
                match out.recv().await.unwrap() {
                    1 => cnt1 += 1,
                    2 => cnt2 += 1,
                    b => panic!("unexpected value {b} on the channel"),
                }
            }
            done_tx.close();
            picker.await.unwrap();
            (cnt1, cnt2)
        })
    });
    let mean = TRIALS as f64 * 0.5;
    let stddev = (TRIALS as f64 * 0.5 * 0.5).sqrt();
    assert!(
        (cnt1 as f64 - mean).abs() <= 10.0 * stddev,
        "unfair select: in {TRIALS} trials, results were {cnt1}, {cnt2}"
    );
}
