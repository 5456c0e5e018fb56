//! Go's loud failures in `#[goro::main]`: a deadlock ends the process with
//! the report and status 2; under `panic = exit` so does a task's panic
//! that nobody joins, and by default the program goes on. Each case runs
//! this test binary again as a child process (an exit is process-wide).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "GORO_TEST_MAIN_EXIT_CHILD";

/// The child's exit code and stderr, and how long after it said "blocking"
/// it exited; fails the test if it has not exited within 20 s.
fn run_child(test: &str) -> (Option<i32>, String, Option<Duration>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("GORO_DEADLOCK")
        .env_remove("GORO_PANIC")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        // Stamps the moment "blocking" arrives, then reads to the end.
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        let mut blocked_at = None;
        while let Ok(1) = err.read(&mut byte) {
            buf.push(byte[0]);
            if blocked_at.is_none() && buf.ends_with(b"child blocking\n") {
                blocked_at = Some(Instant::now());
            }
        }
        (String::from_utf8_lossy(&buf).into_owned(), blocked_at)
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child of {test} did not exit within 20 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let exited = Instant::now();
    let (stderr, blocked_at) = reader.join().unwrap();
    (status.code(), stderr, blocked_at.map(|t| exited - t))
}

#[goro::main(procs = 2)]
async fn deadlocked_main() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    let (done_tx, done_rx) = goro::chan::bounded::<()>(0);
    goro::spawn_named("stuck-worker", async move {
        let _ = rx.recv().await;
        let _ = done_tx.send(()).await;
    });
    eprintln!("child blocking");
    let _ = done_rx.recv().await;
    unreachable!("nothing can wake main");
}

/// Go: `fatal error: all goroutines are asleep - deadlock!`, status 2.
#[test]
fn a_deadlocked_main_exits_2_with_the_report() {
    if std::env::var_os(CHILD).is_some() {
        return deadlocked_main();
    }
    let (code, stderr, after) = run_child("a_deadlocked_main_exits_2_with_the_report");
    assert_eq!(code, Some(2), "exit code; stderr:\n{stderr}");
    assert!(
        stderr.contains("fatal error: all tasks are asleep - deadlock!"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the main task (chan receive) and all 1 other tasks"),
        "{stderr}"
    );
    assert!(stderr.contains("named \"stuck-worker\""), "{stderr}");
    // The check waits out half a second of stillness (`#[goro::main]`'s
    // grace); 2 s is the deadline, not the expectation.
    let after = after.expect("the child said it was blocking");
    eprintln!("exited {after:?} after blocking");
    assert!(after < Duration::from_secs(2), "took {after:?}");
}

#[goro::main(procs = 2, panic = exit)]
async fn main_with_a_panicking_task() {
    goro::spawn(async { panic!("boom in a detached task") });
    // A timer is armed: no deadlock; only the panic can end the process.
    goro::time::sleep(Duration::from_secs(30)).await;
    unreachable!("the unjoined panic ends the process first");
}

/// `panic = exit`: Go's rule, a task's panic nobody joins ends the process
/// with status 2 after the panic hook's message.
#[test]
fn an_unjoined_panic_exits_2_under_panic_exit() {
    if std::env::var_os(CHILD).is_some() {
        return main_with_a_panicking_task();
    }
    let (code, stderr, _) = run_child("an_unjoined_panic_exits_2_under_panic_exit");
    assert_eq!(code, Some(2), "exit code; stderr:\n{stderr}");
    assert!(stderr.contains("boom in a detached task"), "{stderr}");
    assert!(
        stderr.contains("a task panicked and nobody joins it"),
        "{stderr}"
    );
}

#[goro::main(procs = 2)]
async fn main_that_goes_on() {
    /// Tells main the task has unwound.
    struct Tell(goro::chan::Sender<()>);
    impl Drop for Tell {
        fn drop(&mut self) {
            let _ = self.0.try_send(());
        }
    }
    let (tx, rx) = goro::chan::bounded::<()>(1);
    goro::spawn(async move {
        let _tell = Tell(tx);
        panic!("boom, and the program goes on");
    });
    rx.recv().await.unwrap();
    // Joined panics are the joiner's to handle under either policy.
    let joined = goro::spawn(async { panic!("joined boom") }).await;
    assert!(joined.unwrap_err().is_panic());
}

/// The default (`UnjoinedPanic::Continue`): the hook prints, main goes on
/// and the process exits 0.
#[test]
fn an_unjoined_panic_is_reported_and_main_goes_on_by_default() {
    if std::env::var_os(CHILD).is_some() {
        return main_that_goes_on();
    }
    let (code, stderr, _) = run_child("an_unjoined_panic_is_reported_and_main_goes_on_by_default");
    assert_eq!(code, Some(0), "exit code; stderr:\n{stderr}");
    assert!(stderr.contains("boom, and the program goes on"), "{stderr}");
}

/// Aborting a task that already panicked discards the panic on purpose:
/// not an unjoined one, even under `Exit`.
#[test]
fn aborting_a_panicked_task_is_not_an_unjoined_panic() {
    if std::env::var_os(CHILD).is_some() {
        let rt = goro::Runtime::builder()
            .procs(1)
            .unjoined_panic(goro::UnjoinedPanic::Exit)
            .build()
            .unwrap();
        rt.run(async {
            let h = goro::spawn(async { panic!("aborted boom") });
            while !h.is_finished() {
                goro::yield_now().await;
            }
            h.abort();
        });
        return;
    }
    let (code, stderr, _) = run_child("aborting_a_panicked_task_is_not_an_unjoined_panic");
    assert_eq!(code, Some(0), "exit code; stderr:\n{stderr}");
}
