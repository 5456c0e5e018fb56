//! The memory group of goro-bench/README.md: what a runtime's tasks cost in
//! resident memory; the shape and op counts are those of
//! `bench/go/memory.go` (read side by side).
//!
//! One row, `parked_tasks`: Go's everyday memory bill, N tasks each parked
//! on its own rendezvous channel. Written once, generic over [`Rt`]: goro's
//! channel is `goro::chan::bounded(0)` (a rendezvous, as Go's `make(chan
//! int)`); tokio has no rendezvous channel, so its column uses
//! `tokio::sync::mpsc::channel(1)` as every other row does (`rt.rs`), which
//! allocates its first block of 32 slots when the channel is made: that is
//! part of what a tokio user pays for the nearest thing.

use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::{Goro, Latch, Rt, Tokio};

/// Registers the memory group.
pub fn register(v: &mut Vec<Workload>) {
    v.push(
        Workload::new(
            "parked_tasks",
            "memory",
            "one task spawned that parks on its own rendezvous channel (bytes_per_task: RSS growth per parked task)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(parked_tasks::<Goro>)))
        .tokio(Ok(body(parked_tasks::<Tokio>)))
        .show(&["bytes_per_task"]),
    );
}

/// parked_tasks (Go twin `parkedTasks` in bench/go/memory.go).
///
/// N tasks, each made as a Go programmer writes it: a rendezvous channel
/// (tokio: capacity 1), its sender kept in a vector, and a task that counts
/// down `started`, parks in a receive on the channel, and counts down
/// `done` once it has received the value. One op = one task spawned and
/// parked; the clock runs from the first spawn until all N have started
/// (counted down `started`; each then parks at once: at the RSS read at
/// most procs-1 of them may still be on their way into the receive).
/// Then every task is released by one send on its channel and the run
/// waits for all N to finish (`done`: a task whose value is lost never
/// counts down, and the run times out).
/// Ops: N = 1,000,000 normal, 100,000 quick.
///
/// `bytes_per_task` = (RSS with all N parked − RSS before the first
/// spawn) / N, RSS from `/proc/self/statm` (resident pages × page size),
/// as the twin reads it. It counts everything the N tasks hold: task
/// allocation, future, channel, waiter, the senders' vector (8 bytes per
/// task), the run queues' growth while they were spawned.
///
/// Method, and its error. goro and tokio run in this one process, one run
/// after another on runtimes kept for the whole row (warm-up, then the
/// runs, the columns interleaved), so every run but the first finds the
/// memory earlier runs freed still in glibc's arenas and reuses it without
/// a page fault: without a trim, later runs read 0-33 bytes per task. So
/// each run first calls `malloc_trim(0)` (glibc: consolidates the free
/// chunks of every arena and gives their whole pages back with
/// `MADV_DONTNEED`), then reads the baseline; the reused pages fault in
/// again and count. (The clock therefore also pays those page faults, as a
/// fresh process would; so does the Go twin's, after
/// `debug.FreeOSMemory()`.) What the trim cannot give back, and a later
/// run so reuses unseen: free space in pages still partly in use, and what
/// a runtime keeps from an earlier run (goro's global run queue keeps its
/// capacity: 8 bytes per task queued at once). Measured on the 2-core VM
/// (glibc 2.36, N = 1,000,000): tokio read 1,275-1,288 in every run, the
/// first of a process included (within 1%); goro 696-738 in the first run
/// on a fresh runtime and 634-700 in later runs (up to 8% lower, and the
/// first run's figure itself moves by ~6% with glibc's arena layout). Go's
/// runtime keeps every goroutine's `g` for reuse, which no trim undoes
/// (20% low in a second run), so its twin reports its process's first
/// run: see `bench/go/memory.go`. The rest of the error: the page
/// granularity (4 KiB / N: nothing), the ≤ procs-1 tasks not yet parked,
/// and the idle runtime of the other column in this process. Off glibc
/// there is no trim and later runs would read near 0.
async fn parked_tasks<R: Rt>(ctx: Ctx) -> RunOut {
    let n = ctx.size(1_000_000, 100_000) as usize;
    let started = Latch::new(n);
    let done = Latch::new(n);
    trim();
    let rss0 = rss_bytes();
    let mut senders = Vec::with_capacity(n);
    let m = Meter::start();
    for _ in 0..n {
        let (tx, mut rx) = R::bounded::<u64>(0);
        senders.push(tx);
        let (started, done) = (started.clone(), done.clone());
        R::spawn(async move {
            started.count_down();
            if R::recv(&mut rx).await == Some(1) {
                done.count_down();
            }
        });
    }
    started.wait().await;
    let meas = m.stop();
    let rss1 = rss_bytes();
    for tx in &senders {
        R::send(tx, 1)
            .await
            .expect("parked_tasks: a task's channel closed");
    }
    drop(senders);
    done.wait().await;
    let out = RunOut::new(n as u64, meas).extra("tasks", n as f64);
    match (rss0, rss1) {
        (Some(a), Some(b)) => out.extra("bytes_per_task", (b as f64 - a as f64) / n as f64),
        _ => out, // no /proc: no figure rather than a wrong one
    }
}

/// Gives the allocator's free pages back to the kernel (glibc's
/// `malloc_trim(0)`), so that memory a previous run freed counts again when
/// reused (see `parked_tasks`).
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The process's resident set in bytes: `/proc/self/statm`'s second field
/// (resident pages) × the page size; `None` where it cannot be read.
fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (page > 0).then(|| pages * page as u64)
}
