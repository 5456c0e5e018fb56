//! `GORO_DUMP_SIGNAL`: the dump on a signal, and the program keeps running.
//! The test runs itself as a child process (the signal is process-wide).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const CHILD: &str = "GORO_TEST_SIGNAL_CHILD";

#[test]
fn sigusr1_prints_the_dump_and_the_program_goes_on() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigusr1_prints_the_dump_and_the_program_goes_on",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("GORO_DUMP_SIGNAL", "SIGUSR1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let (out, err) = (c.stdout.take().unwrap(), c.stderr.take().unwrap());
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .for_each(|l| drop(tx.send(l.unwrap())))
    });
    std::thread::spawn(move || {
        BufReader::new(err)
            .lines()
            .for_each(|l| drop(tx2.send(l.unwrap())))
    });
    let mut seen = Vec::new();
    let mut wait_for = |needle: &str| loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) => {
                let hit = l.contains(needle);
                seen.push(l);
                if hit {
                    return;
                }
            }
            Err(_) => panic!(
                "no line with {needle:?} within 20 s; child said:\n{}",
                seen.join("\n")
            ),
        }
    };
    wait_for("child ready");
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(c.id() as i32, libc::SIGUSR1) }, 0);
    wait_for("50 tasks parked on chan receive");
    use std::io::Write;
    writeln!(c.stdin.take().unwrap(), "go on").unwrap();
    wait_for("child still running");
    let status = c.wait().unwrap();
    assert!(
        status.success(),
        "the child failed after the dump: {status}"
    );
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
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "goro_deadlock_report_prints_and_the_program_goes_on",
            "--nocapture",
        ])
        .env(REPORT_CHILD, "1")
        .env("GORO_DEADLOCK", "report")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let (out, err) = (c.stdout.take().unwrap(), c.stderr.take().unwrap());
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .for_each(|l| drop(tx.send(l.unwrap())))
    });
    std::thread::spawn(move || {
        BufReader::new(err)
            .lines()
            .for_each(|l| drop(tx2.send(l.unwrap())))
    });
    let mut seen = Vec::new();
    let mut wait_for = |needle: &str| loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) => {
                let hit = l.contains(needle);
                seen.push(l);
                if hit {
                    return;
                }
            }
            Err(_) => panic!(
                "no line with {needle:?} within 20 s; child said:\n{}",
                seen.join("\n")
            ),
        }
    };
    wait_for("goro: likely deadlock: the block_on caller (chan receive)");
    wait_for("task parked on chan receive");
    use std::io::Write;
    writeln!(c.stdin.take().unwrap(), "go on").unwrap();
    wait_for("child still running");
    let status = c.wait().unwrap();
    assert!(
        status.success(),
        "the child failed after the report: {status}"
    );
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
