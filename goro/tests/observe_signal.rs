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
        .args(["--exact", "sigusr1_prints_the_dump_and_the_program_goes_on", "--nocapture"])
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
    std::thread::spawn(move || BufReader::new(out).lines().for_each(|l| drop(tx.send(l.unwrap()))));
    std::thread::spawn(move || BufReader::new(err).lines().for_each(|l| drop(tx2.send(l.unwrap()))));
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
            Err(_) => panic!("no line with {needle:?} within 20 s; child said:\n{}", seen.join("\n")),
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
    assert!(status.success(), "the child failed after the dump: {status}");
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
        assert!(std::time::Instant::now() < deadline, "workers did not park:\n{}", rt.dump());
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
