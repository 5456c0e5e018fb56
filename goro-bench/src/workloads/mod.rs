//! The workloads, one file per group of goro-bench/README.md (`sched.rs`,
//! `chan.rs`, `time.rs`, `pool.rs`, `sync.rs` (and `errgroup.rs`, its
//! errgroup_cancel row), `net.rs`; goro's side of the net group
//! is `net_goro.rs`; the time group's rows written once per runtime are in
//! `time_goro.rs` and `time_tokio.rs`; `guarantees.rs` holds the sched
//! group's scheduling-guarantee rows: spawn_busy, wake_busy, hog,
//! ping_pong_hog).
//!
//! # Adding a workload
//!
//! 1. In the group's file, write the body once, generic over
//!    [`Rt`](crate::rt::Rt) (spawn, yield, sleep, the blocking pool and a
//!    bounded channel, whose receiver has one owner): an `async fn`
//!    (or a function returning a future) taking [`Ctx`](crate::registry::Ctx)
//!    and returning [`RunOut`](crate::registry::RunOut). Set up first (spawn
//!    tasks parked on a [`Gang`](crate::rt::Gang), make channels), then
//!    `let m = Meter::start();` … the measured part … `let meas = m.stop();`,
//!    tear down so that no task outlives the call, and return
//!    `RunOut::new(ops, meas).extra("n", n)`. A header comment says what one
//!    op is, the shape, and the op counts, which must be those of the Go
//!    twin in `bench/go/<group>.go` (`ctx.size(normal, quick)`). Only an
//!    operation the runtimes spell differently (a `select!`, a timer
//!    handle) is written per runtime, in the file's `goro_side` and
//!    `tokio_side`, with a comment saying why.
//! 2. Register it in the file's `register`:
//!    `v.push(Workload::new(name, group, op, (normal, quick)).goro(Ok(body(f::<Goro>))).tokio(Ok(body(f::<Tokio>))))`,
//!    with `.seed("004")`, `.no_go("why")` when `bench/go` has no twin,
//!    `.fixed_procs(p)`, `.show(&["p99_ns"])` as needed. A workload whose Go
//!    twin is a server that goro-bench drives (the net group) registers the
//!    driver with `.go_served(drive)`.
//! 3. A new group: a new file here, `mod` + a call in [`register`] below, and
//!    (for `ab`) its seed's row in `ab.rs`.
//!
//! The Go column is filled whenever the Go twin's `-list` has the same name.

pub mod chan;
pub mod errgroup;
pub mod guarantees;
pub mod memory;
pub mod net;
pub mod net_goro;
pub mod pool;
pub mod sched;
pub mod skynet;
pub mod sync;
pub mod time;
pub mod time_goro;
pub mod time_tokio;

use crate::registry::Workload;

/// Registers every group, in goro-bench/README.md order.
pub fn register(v: &mut Vec<Workload>) {
    sched::register(v);
    guarantees::register(v);
    chan::register(v);
    time::register(v);
    pool::register(v);
    sync::register(v);
    errgroup::register(v);
    memory::register(v);
    net::register(v);
    if std::env::var_os("GORO_BENCH_FAULTS").is_some() {
        faults(v);
    }
}

/// Two deliberately broken workloads, registered only when
/// `GORO_BENCH_FAULTS` is set, to check that a panic and a hang each end
/// in one line while the rest of the report still prints:
/// `GORO_BENCH_FAULTS=1 goro-bench run fault,spawn_chain --timeout 2`.
fn faults(v: &mut Vec<Workload>) {
    use crate::registry::{body, Ctx, RunOut};
    use crate::rt::Latch;
    async fn panics(_: Ctx) -> RunOut {
        panic!("fault/panic panics on purpose")
    }
    async fn hangs(_: Ctx) -> RunOut {
        let never = Latch::new(1);
        never.wait().await;
        unreachable!()
    }
    v.push(
        Workload::new("fault/panic", "fault", "panics", (1, 1))
            .goro(Ok(body(panics)))
            .tokio(Ok(body(panics)))
            .no_go("test fault"),
    );
    v.push(
        Workload::new("fault/hang", "fault", "never finishes", (1, 1))
            .goro(Ok(body(hangs)))
            .tokio(Ok(body(hangs)))
            .no_go("test fault"),
    );
}

/// Tasks per P in the rows where many tasks contend for one thing
/// (`fan_in`'s senders, `mutex_contended`'s lockers): several per P, as
/// Go's `b.SetParallelism(4)` makes `RunParallel` start 4 goroutines per
/// P, so that more tasks are runnable than there are Ps and a blocked one
/// leaves others to run (Go's twin: `tasksPerP` in `bench/go/chan.go`).
pub const TASKS_PER_P: usize = 4;

/// The per-op counters the `fan_in` and `mutex_contended` rows print
/// under the row (`.show`): every column's voluntary context switches
/// (`nvcsw_per_op`, a thread that blocked in the kernel), and goro's
/// threads parked, threads woken and spin rounds per op
/// (`harness/counters.rs`, `goro_extras`, from `Runtime::stats`). Every
/// row's JSON has them.
pub const COUNTERS: &[&str] = &[
    "nvcsw_per_op",
    "parks_per_op",
    "wakeups_per_op",
    "spins_per_op",
];

/// Splits `total` ops over `workers` in whole batches of `batch` (Go's
/// `perWorker`): the batches per worker and the resulting op count.
pub fn per_worker(total: u64, workers: u64, batch: u64) -> (u64, u64) {
    let batches = (total / (workers * batch)).max(1);
    (batches, batches * workers * batch)
}
