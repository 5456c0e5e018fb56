//! `GORO_DUMP_SIGNAL`: the dump on a signal, and the program keeps running.
//! The test runs itself as a child process (the signal is process-wide).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const CHILD: &str = "GORO_TEST_SIGNAL_CHILD";

/// This test binary re-run as a child that runs only `test` (with `env`),
/// and the lines of its stdout and stderr as they come.
struct Child {
    process: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Child {
    fn spawn(test: &str, env: &[(&str, &str)]) -> Child {
        let mut process = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture"])
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let out = BufReader::new(process.stdout.take().unwrap());
        let err = BufReader::new(process.stderr.take().unwrap());
        let tx2 = tx.clone();
        std::thread::spawn(move || out.lines().for_each(|l| drop(tx.send(l.unwrap()))));
        std::thread::spawn(move || err.lines().for_each(|l| drop(tx2.send(l.unwrap()))));
        Child {
            process,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (20 s at most) for a line containing `needle`.
    fn wait_for(&mut self, needle: &str) {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(20)) {
                Ok(l) => {
                    let hit = l.contains(needle);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!(
                    "no line with {needle:?} within 20 s; child said:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Tells the child to go on (a line on its stdin), then expects it to
    /// say "child still running" and exit 0.
    fn go_on_and_finish(mut self, after: &str) {
        use std::io::Write;
        writeln!(self.process.stdin.take().unwrap(), "go on").unwrap();
        self.wait_for("child still running");
        let status = self.process.wait().unwrap();
        assert!(
            status.success(),
            "the child failed after the {after}: {status}"
        );
    }
}

#[test]
fn sigusr1_prints_the_dump_and_the_program_goes_on() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let mut c = Child::spawn(
        "sigusr1_prints_the_dump_and_the_program_goes_on",
        &[(CHILD, "1"), ("GORO_DUMP_SIGNAL", "SIGUSR1")],
    );
    c.wait_for("child ready");
    let pid = c.process.id() as i32;
    // SAFETY: kill(2) on our own child's pid.
    let sent = unsafe { libc::kill(pid, libc::SIGUSR1) };
    assert_eq!(sent, 0, "kill(SIGUSR1) on the child failed");
    c.wait_for("50 tasks parked on chan receive");
    c.go_on_and_finish("dump");
}

fn child() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let workers: Vec<_> = (0..50)
        .map(|_| {
            let rx = rx.clone();
            rt.spawn_named("worker", async move { rx.recv().await })
        })
        .collect();
    // Ready once every worker has parked (the parent then expects them
    // parked in the dump the signal prints).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while rt.dump().counts().2 < 50 {
        assert!(
            std::time::Instant::now() < deadline,
            "workers did not park:\n{}",
            rt.dump()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("child ready");
    // Runs on until the parent has seen the dump and says so.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    drop(tx);
    rt.block_on(async {
        for w in workers {
            assert!(w.await.unwrap().is_err());
        }
    });
    println!("child still running");
}

const REPORT_CHILD: &str = "GORO_TEST_DEADLOCK_REPORT_CHILD";

/// `GORO_DEADLOCK=report` outside tests: the report goes to stderr and the
/// program keeps running (here a thread outside goro then ends the wait).
#[test]
fn goro_deadlock_report_prints_and_the_program_goes_on() {
    if std::env::var_os(REPORT_CHILD).is_some() {
        return report_child();
    }
    let mut c = Child::spawn(
        "goro_deadlock_report_prints_and_the_program_goes_on",
        &[(REPORT_CHILD, "1"), ("GORO_DEADLOCK", "report")],
    );
    c.wait_for("goro: likely deadlock: the block_on caller (chan receive)");
    c.wait_for("task parked on chan receive");
    c.go_on_and_finish("report");
}

fn report_child() {
    let rt = goro::Runtime::builder()
        .procs(2)
        .deadlock_grace(Duration::from_millis(50))
        .build()
        .unwrap();
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    // Two tasks waiting for each other, and the main future waiting on a
    // channel that only a thread outside goro will feed.
    let (a_tx, a_rx) = goro::chan::bounded::<u32>(0);
    let (b_tx, b_rx) = goro::chan::bounded::<u32>(0);
    rt.spawn(async move {
        let _ = a_rx.recv().await;
        drop(b_tx);
    });
    rt.spawn(async move {
        let _ = b_rx.recv().await;
        drop(a_tx);
    });
    let outside = std::thread::spawn(move || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        tx.send_blocking(1).unwrap();
    });
    assert_eq!(rt.block_on(async { rx.recv().await.unwrap() }), 1);
    outside.join().unwrap();
    println!("child still running");
}
