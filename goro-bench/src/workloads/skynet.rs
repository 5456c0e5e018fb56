//! skynet (<https://github.com/atemerev/skynet>), in the sched group: a
//! 10-ary tree of tasks down to 10^6 leaves, each inner task summing its
//! children's numbers. Go and goro hand a child's result to its parent
//! over a rendezvous channel, tokio returns it through the child's
//! `JoinHandle`: each runtime's idiom ([`tokio_run`] says why).

use crate::registry::{body, Ctx, Measured, Meter, RunOut, Workload};
use goro::chan::{bounded, Sender};
use std::future::Future;
use std::pin::Pin;

/// The skynet row.
pub fn workload() -> Workload {
    Workload::new(
        "skynet",
        "sched",
        "one task of a 10-ary tree of 10^6 leaves (10^5 quick), each inner task summing its children's numbers",
        (
            skynet_tasks(SKYNET_LEAVES.0),
            skynet_tasks(SKYNET_LEAVES.1),
        ),
    )
    .goro(Ok(body(goro_run)))
    .tokio(Ok(body(tokio_run)))
}

/// skynet's leaves, normal and quick: 10^6 (6 levels below the root) and
/// 10^5 (5 levels).
const SKYNET_LEAVES: (u64, u64) = (1_000_000, 100_000);
/// skynet's fan-out: every inner task spawns this many children.
const SKYNET_DIV: u64 = 10;

/// The tasks of a skynet tree with `leaves` leaves (a power of
/// [`SKYNET_DIV`]): every level, root included; 1,111,111 for 10^6.
const fn skynet_tasks(leaves: u64) -> u64 {
    let (mut level, mut total) = (leaves, 0);
    while level > 1 {
        total += level;
        level /= SKYNET_DIV;
    }
    total + 1
}

/// skynet's common tail: checks the root's sum (the leaves' numbers
/// 0..leaves, so `leaves * (leaves - 1) / 2`: 499999500000 for 10^6) and
/// reports one op per task.
fn skynet_out(rt: &str, leaves: u64, sum: u64, meas: Measured) -> RunOut {
    let want = leaves * (leaves - 1) / 2;
    assert_eq!(sum, want, "skynet ({rt}): wrong sum at the root");
    RunOut::new(skynet_tasks(leaves), meas)
        .extra("leaves", leaves as f64)
        .extra("div", SKYNET_DIV as f64)
}

/// skynet (<https://github.com/atemerev/skynet>; Go twin `skynetRun`
/// and `skynet` in bench/go/sched.go), the original's Go program in
/// goro: a task spawns 10 children, each of them 10, down to the
/// leaves; leaf `num` sends `num` to its parent, an inner task sends
/// the sum of its 10 children's numbers. Each inner task makes one
/// rendezvous channel (capacity 0, Go's `make(chan int)`) that its
/// children send on and it receives from 10 times. The recursion
/// spawns itself, so the task's future is boxed
/// (`Pin<Box<dyn Future + Send>>`), as a Rust user writes it.
///
/// One op = one task spawned, run and ended (ns per task). The clock
/// runs from the root's spawn until the benchmark task receives the
/// root's sum, which is checked (0 + 1 + ... + leaves-1).
/// Ops: 1,111,111 tasks (10^6 leaves) normal, 111,111 (10^5) quick.
pub async fn goro_run(ctx: Ctx) -> RunOut {
    let leaves = ctx.size(SKYNET_LEAVES.0, SKYNET_LEAVES.1);
    let (c, rx) = bounded::<u64>(0);
    let m = Meter::start();
    goro::spawn(skynet(c, 0, leaves, SKYNET_DIV));
    let sum = rx.recv().await.expect("skynet (goro): the root never sent");
    let meas = m.stop();
    skynet_out("goro", leaves, sum, meas)
}

/// One skynet task: `func skynet(c chan int, num, size, div int)`.
fn skynet(
    c: Sender<u64>,
    num: u64,
    size: u64,
    div: u64,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if size == 1 {
            c.send(num).await.expect("skynet (goro): parent gone");
            return;
        }
        let (rc, rx) = bounded::<u64>(0);
        for i in 0..div {
            let sub_num = num + i * (size / div);
            goro::spawn(skynet(rc.clone(), sub_num, size / div, div));
        }
        let mut sum = 0;
        for _ in 0..div {
            sum += rx.recv().await.expect("skynet (goro): child gone");
        }
        c.send(sum).await.expect("skynet (goro): parent gone");
    })
}

/// skynet on tokio: the same tree (see [`goro_run`]), as a
/// tokio user writes it: a task returns its number, and a parent
/// `tokio::spawn`s its 10 children, keeps their `JoinHandle`s and
/// awaits each in turn, summing. Go's program uses a channel only
/// because a goroutine cannot return a value; a tokio task can, and
/// its `JoinHandle` is the one-shot rendezvous with its parent that the
/// channel stands for (the row's other idiomatic choice, a
/// `tokio::sync::mpsc` per parent, has no rendezvous and would cost a
/// channel allocation per inner task on top of the task's own output
/// slot). The future is boxed for the recursion, as on goro.
///
/// One op = one task spawned, run and ended. The clock runs from the
/// root's spawn until its `JoinHandle` returns the sum, which is
/// checked. Ops: 1,111,111 normal, 111,111 quick.
pub async fn tokio_run(ctx: Ctx) -> RunOut {
    let leaves = ctx.size(SKYNET_LEAVES.0, SKYNET_LEAVES.1);
    let m = Meter::start();
    let sum = tokio::spawn(tokio_skynet(0, leaves, SKYNET_DIV))
        .await
        .expect("skynet (tokio): the root failed");
    let meas = m.stop();
    skynet_out("tokio", leaves, sum, meas)
}

/// One skynet task: returns the sum of its leaves' numbers.
fn tokio_skynet(num: u64, size: u64, div: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let children: Vec<_> = (0..div)
            .map(|i| tokio::spawn(tokio_skynet(num + i * (size / div), size / div, div)))
            .collect();
        let mut sum = 0;
        for child in children {
            sum += child.await.expect("skynet (tokio): child failed");
        }
        sum
    })
}
