//! The chan group of goro-bench/README.md, after Go's runtime/chan_test.go
//! benchmarks; shapes and op counts are those of `bench/go/chan.go` (read
//! side by side). P below is procs.
//!
//! The channel rows are written once, generic over the runtime ([`Rt`]) and,
//! where several tasks receive from one channel, over that channel
//! ([`Mpmc`]); the select rows once per runtime, as `goro::select!` and
//! `tokio::select!` are different operations.
//!
//! tokio's side, for the one-receiver rows (`chan_uncontended`,
//! `select_uncontended`): `tokio::sync::mpsc::channel(cap.max(1))` (tokio
//! has no rendezvous channel, so capacity 0 becomes 1) and `tokio::select!`.
//!
//! Where Go and goro have several tasks receiving from one channel
//! (`chan_contended`, `chan_prodcons`, `select_contended`), mpsc's single
//! receiver would have to sit behind an `Arc<tokio::sync::Mutex<_>>`,
//! locked per receive; a tokio user needing many consumers picks an MPMC
//! crate instead, so the tokio column there is one ([`Mpmc`]), the
//! fastest of async-channel 2, flume 0.12 and kanal 0.1 measured on tokio
//! on the 2-core VM (2026-11-25, quick op counts, 5 runs x 2 rounds,
//! ns/op at procs=2; mutex-rx = the old `Mutex<Receiver>` column):
//!
//! | row | mutex-rx | async-channel | flume | kanal |
//! |---|---|---|---|---|
//! | chan_contended | 154-188 | 42-52 | 27-47 | 13-21 |
//! | chan_prodcons/cap=0 (cap 1) | 174-227 | 216-491 | 110-139 | 51-58 |
//! | chan_prodcons/cap=10 | 97-161 | 90-114 | 41 | 25-44 |
//! | chan_prodcons/cap=100 | 76-81 | 54-80 | 39-135 | 14-16 |
//! | select_contended | 320-394 | 271-414 | hangs | hangs at p2 |
//!
//! kanal is the fastest wherever it works, so `chan_contended` and
//! `chan_prodcons` use kanal (`bounded_async(cap)`, 0 a rendezvous channel
//! as Go's). `select_contended` races send and receive futures in
//! `tokio::select!`, which needs cancel-safe futures; kanal's and flume's
//! are not (the runs hung), async-channel's are, so that row uses
//! async-channel (capacity 1: it has no rendezvous).

use super::{per_worker, COUNTERS, TASKS_PER_P};
use crate::registry::{body, Ctx, Meter, Placement, RunOut, Workload};
use crate::rt::{Gang, Goro, Rt, Tokio};
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// C in Go's ChanUncontended/ChanContended: sends per burst.
const CHAN_BATCH: u64 = 100;
/// The capacity of fan_in's one channel (Go: `fanInCap`).
const FAN_IN_CAP: usize = 16;

/// CallsPerSched in Go's benchmarkChanProdCons.
const PRODCONS_BATCH: u64 = 1000;

/// Registers the chan group.
pub fn register(v: &mut Vec<Workload>) {
    v.push(
        Workload::new(
            "chan_uncontended",
            "chan",
            "one send+receive on a task's own channel of capacity 100 (P tasks)",
            (10_000_000, 1_000_000),
        )
        .goro(Ok(body(chan_uncontended::<Goro>)))
        .tokio(Ok(body(chan_uncontended::<Tokio>))),
    );
    v.push(
        Workload::new(
            "chan_contended",
            "chan",
            "one send+receive on one channel of capacity 100*P shared by P tasks",
            (5_000_000, 500_000),
        )
        .goro(Ok(body(chan_contended::<Goro, GoroChan>)))
        .tokio(Ok(body(chan_contended::<Tokio, Kanal>))),
    );
    for cap in [0usize, 10, 100] {
        v.push(
            Workload::new(format!("chan_prodcons/cap={cap}"), "chan", format!("one message from P producers to P consumers over one channel of capacity {cap}"), (2_000_000, 200_000))
                .goro(Ok(body(move |c| chan_prodcons::<Goro, GoroChan>(c, cap))))
                .tokio(Ok(body(move |c| chan_prodcons::<Tokio, Kanal>(c, cap)))),
        );
    }
    for (name, placement, collector) in [
        (
            "fan_in/main",
            Placement::Main,
            "the main task (goro Runtime::run; tokio block_on; Go's benchmark goroutine)",
        ),
        ("fan_in/spawned", Placement::Spawned, "a spawned task"),
        (
            "fan_in/local",
            Placement::Local,
            "goro's block_on outside every P (the old #[goro::main]); tokio and Go as fan_in/main",
        ),
    ] {
        v.push(
            Workload::new(
                name,
                "chan",
                format!("one u64 received by one collector from 4*P senders over one channel of capacity {FAN_IN_CAP}; the collector is {collector}"),
                (2_000_000, 200_000),
            )
            .placement(placement)
            .goro(Ok(body(fan_in::<Goro>)))
            .tokio(Ok(body(fan_in::<Tokio>)))
            .show(COUNTERS),
        );
    }
    v.push(
        Workload::new("select_uncontended", "chan", "one 2-case select receive plus one send, on a task's own two channels of capacity 1 (P tasks)", (5_000_000, 500_000))
            .goro(Ok(body(goro_side::select_uncontended)))
            .tokio(Ok(body(tokio_side::select_uncontended))),
    );
    v.push(
        Workload::new("select_contended", "chan", "one message through 2 shared unbuffered channels, P select-senders to P select-receivers", (500_000, 50_000))
            .goro(Ok(body(goro_side::select_contended)))
            .tokio(Ok(body(tokio_side::select_contended::<AsyncChannel>))),
    );
}

/// Measures a released gang and reports `ops`.
async fn run_gang(g: Gang, ops: u64) -> RunOut {
    let m = Meter::start();
    g.release();
    g.wait().await;
    RunOut::new(ops, m.stop())
}

// ---------------------------------------------------------------------------
// The same code on goro and tokio.
// ---------------------------------------------------------------------------

/// chan_uncontended (Go: BenchmarkChanUncontended).
///
/// P tasks, each with its own channel of capacity 100 (made after the
/// start gate, as in Go). Each does K rounds of 100 sends then 100
/// receives (never blocks). K = total/(P*100). One op = one send plus one
/// receive. Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a
/// multiple of P*100).
async fn chan_uncontended<R: Rt>(ctx: Ctx) -> RunOut {
    let p = ctx.procs as u64;
    let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), p, CHAN_BATCH);
    let g = Gang::new::<R, _, _>(ctx.procs, move |_| async move {
        let (tx, mut rx) = R::bounded::<u64>(CHAN_BATCH as usize);
        for _ in 0..k {
            for _ in 0..CHAN_BATCH {
                R::send(&tx, 0).await.unwrap();
            }
            for _ in 0..CHAN_BATCH {
                R::recv(&mut rx).await.unwrap();
            }
        }
    })
    .await;
    run_gang(g, ops)
        .await
        .extra("goroutines", p as f64)
        .extra("cap", CHAN_BATCH as f64)
}

/// A bounded multi-consumer channel of `u64` with cloneable async ends: the
/// channel of the rows where several tasks receive from one channel. goro's
/// is its own (`goro::chan`); tokio's column uses an MPMC crate (the module
/// comment says which and why).
///
/// Each method hands back the crate's own future, so a measured send or
/// receive is exactly that crate's.
pub trait Mpmc: 'static {
    /// The sending half.
    type Tx: Clone + Send + Sync + 'static;
    /// The receiving half (cloneable: many consumers).
    type Rx: Clone + Send + Sync + 'static;
    /// What a send on a closed channel returns.
    type SendError: Debug;
    /// What a receive on a closed, empty channel returns.
    type RecvError: Debug;
    /// A channel of capacity `cap`.
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx);
    /// Sends `v`.
    fn send(tx: &Self::Tx, v: u64)
        -> impl Future<Output = Result<(), Self::SendError>> + Send + '_;
    /// Receives a value.
    fn recv(rx: &Self::Rx) -> impl Future<Output = Result<u64, Self::RecvError>> + Send + '_;
}

/// `goro::chan::bounded` (0: a rendezvous channel).
pub struct GoroChan;
impl Mpmc for GoroChan {
    type Tx = goro::chan::Sender<u64>;
    type Rx = goro::chan::Receiver<u64>;
    type SendError = goro::chan::SendError<u64>;
    type RecvError = goro::chan::RecvError;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        goro::chan::bounded(cap)
    }
    fn send(
        tx: &Self::Tx,
        v: u64,
    ) -> impl Future<Output = Result<(), Self::SendError>> + Send + '_ {
        tx.send(v)
    }
    fn recv(rx: &Self::Rx) -> impl Future<Output = Result<u64, Self::RecvError>> + Send + '_ {
        rx.recv()
    }
}

/// async-channel on tokio.
pub struct AsyncChannel;
impl Mpmc for AsyncChannel {
    type Tx = async_channel::Sender<u64>;
    type Rx = async_channel::Receiver<u64>;
    type SendError = async_channel::SendError<u64>;
    type RecvError = async_channel::RecvError;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        async_channel::bounded(cap.max(1)) // no rendezvous: 0 becomes 1
    }
    fn send(
        tx: &Self::Tx,
        v: u64,
    ) -> impl Future<Output = Result<(), Self::SendError>> + Send + '_ {
        tx.send(v)
    }
    fn recv(rx: &Self::Rx) -> impl Future<Output = Result<u64, Self::RecvError>> + Send + '_ {
        rx.recv()
    }
}

/// kanal on tokio.
pub struct Kanal;
impl Mpmc for Kanal {
    type Tx = kanal::AsyncSender<u64>;
    type Rx = kanal::AsyncReceiver<u64>;
    type SendError = kanal::SendError;
    type RecvError = kanal::ReceiveError;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        kanal::bounded_async(cap) // 0: a rendezvous channel, as Go's
    }
    fn send(
        tx: &Self::Tx,
        v: u64,
    ) -> impl Future<Output = Result<(), Self::SendError>> + Send + '_ {
        tx.send(v)
    }
    fn recv(rx: &Self::Rx) -> impl Future<Output = Result<u64, Self::RecvError>> + Send + '_ {
        rx.recv()
    }
}

/// chan_contended (Go: BenchmarkChanContended).
///
/// One channel of capacity 100*P shared by P tasks, each doing K rounds
/// of 100 sends then 100 receives; the capacity covers every task's
/// burst, so nothing blocks and the cost is contention on the channel.
/// One op = one send plus one receive. Ops: 5,000,000 normal, 500,000
/// quick (rounded down to a multiple of P*100).
async fn chan_contended<R: Rt, C: Mpmc>(ctx: Ctx) -> RunOut {
    let p = ctx.procs as u64;
    let (k, ops) = per_worker(ctx.size(5_000_000, 500_000), p, CHAN_BATCH);
    let (tx, rx) = C::bounded((CHAN_BATCH * p) as usize);
    let g = Gang::new::<R, _, _>(ctx.procs, move |_| {
        let (tx, rx) = (tx.clone(), rx.clone());
        async move {
            for _ in 0..k {
                for _ in 0..CHAN_BATCH {
                    C::send(&tx, 0).await.unwrap();
                }
                for _ in 0..CHAN_BATCH {
                    C::recv(&rx).await.unwrap();
                }
            }
        }
    })
    .await;
    run_gang(g, ops)
        .await
        .extra("goroutines", p as f64)
        .extra("cap", (CHAN_BATCH * p) as f64)
}

/// chan_prodcons/cap=c (Go: BenchmarkChanProdCons0/10/100, localWork = 0).
///
/// One channel of capacity c; P producers and P consumers. A shared
/// atomic counts the 1000-message batches left; a producer takes a batch
/// (Go: `left.Add(-1) >= 0`; here `left.fetch_sub(1) > 0`) and sends 1000
/// ones until none are left, then sends one 0 (a stop sentinel). A
/// consumer receives until it gets a 0 (or finds the channel closed). One
/// op = one message (sentinels not counted). All 2P tasks are parked
/// before the clock starts. Ops: 2,000,000 normal, 200,000 quick.
async fn chan_prodcons<R: Rt, C: Mpmc>(ctx: Ctx, cap: usize) -> RunOut {
    let batches = ctx.size(2_000_000, 200_000) / PRODCONS_BATCH;
    let (tx, rx) = C::bounded(cap);
    let left = Arc::new(AtomicI64::new(batches as i64));
    let g = Gang::new::<R, _, _>(2 * ctx.procs, move |i| {
        let (tx, rx, left) = (tx.clone(), rx.clone(), left.clone());
        async move {
            if i % 2 == 0 {
                while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                    for _ in 0..PRODCONS_BATCH {
                        C::send(&tx, 1).await.unwrap();
                    }
                }
                C::send(&tx, 0).await.unwrap();
                return;
            }
            while C::recv(&rx).await.unwrap_or(0) != 0 {}
        }
    })
    .await;
    run_gang(g, batches * PRODCONS_BATCH)
        .await
        .extra("producers", ctx.procs as f64)
        .extra("consumers", ctx.procs as f64)
        .extra("cap", cap as f64)
}

/// fan_in/main, fan_in/spawned, fan_in/local (Go: the fan-in stage of a
/// pipeline, results gathered from workers; Go's test suite has no
/// benchmark of this shape, the nearest is BenchmarkChanProdCons with one
/// consumer).
///
/// W = 4*P senders (`TASKS_PER_P`), parked on a gang before the clock,
/// each sending the values 1..=K (`u64`) on ONE shared channel of capacity
/// 16 to ONE collector, the body itself, which receives W*K values and sums
/// them. K = total/W. The capacity is below W even at P=1, so the senders
/// fill the channel and block, and the collector's receives wake them:
/// one op is a hand-off through a mostly full channel with a sender's wake
/// behind it. On tokio the channel is `tokio::sync::mpsc` (one receiver).
/// The three rows run this same body and differ only in where the
/// collector runs ([`Placement`]): `main` as the runtime's main task (goro
/// `Runtime::run`, as `#[goro::main]`; tokio `block_on`, as
/// `#[tokio::main]`; Go the benchmark goroutine, which is Go's main),
/// `spawned` as a spawned task, `local` polled by goro's `block_on` on the
/// calling thread outside every P (`#[goro::main(local)]`, the old
/// `#[goro::main]`; tokio's and Go's columns run their `main` program
/// again, their only main, so the row compares the old goro main with
/// theirs). Checked: the sum is W*K(K+1)/2.
/// One op = one value received. Ops: 2,000,000 normal, 200,000 quick
/// (rounded down to a multiple of W).
async fn fan_in<R: Rt>(ctx: Ctx) -> RunOut {
    let w = (TASKS_PER_P * ctx.procs) as u64;
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), w, 1);
    let (tx, mut rx) = R::bounded::<u64>(FAN_IN_CAP);
    let g = Gang::new::<R, _, _>(w as usize, move |_| {
        let tx = tx.clone();
        async move {
            for v in 1..=k {
                R::send(&tx, v).await.expect("fan_in: send failed");
            }
        }
    })
    .await;
    let m = Meter::start();
    g.release();
    let mut sum = 0u64;
    for _ in 0..ops {
        sum += R::recv(&mut rx)
            .await
            .expect("fan_in: channel closed early");
    }
    let meas = m.stop();
    g.wait().await;
    assert_eq!(
        sum,
        w * (k * (k + 1) / 2),
        "fan_in: wrong sum of the values received"
    );
    RunOut::new(ops, meas)
        .extra("senders", w as f64)
        .extra("cap", FAN_IN_CAP as f64)
}

// ---------------------------------------------------------------------------
// The select rows, once per runtime: goro::select! and tokio::select! differ,
// and the select is the operation measured.
// ---------------------------------------------------------------------------

mod goro_side {
    use super::*;
    use goro::chan::bounded;

    /// select_uncontended (Go: BenchmarkSelectUncontended).
    ///
    /// P tasks, each with its own two channels c1, c2 of capacity 1; c1
    /// starts holding a value. Each does K iterations of
    /// `select { recv(c1) => c2.send(0), recv(c2) => c1.send(0) }`, so the
    /// value bounces and nothing blocks. K = total/P. One op = one 2-case
    /// select that receives plus one send. Ops: 5,000,000 normal, 500,000
    /// quick (rounded down to a multiple of P).
    pub async fn select_uncontended(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(5_000_000, 500_000), p, 1);
        let g = Gang::new::<Goro, _, _>(ctx.procs, move |_| async move {
            let (t1, r1) = bounded::<u64>(1);
            let (t2, r2) = bounded::<u64>(1);
            t1.send(0).await.unwrap();
            for _ in 0..k {
                goro::select! {
                    recv(r1) -> _v => { t2.send(0).await.unwrap(); }
                    recv(r2) -> _v => { t1.send(0).await.unwrap(); }
                }
            }
        })
        .await;
        run_gang(g, ops).await.extra("goroutines", p as f64)
    }

    /// select_contended (Go: BenchmarkSelectSyncContended with 2 channels
    /// and counted partners).
    ///
    /// Two unbuffered channels shared by everyone. P receivers each do K
    /// times `select { recv(c1), recv(c2) }`; P senders each do K times
    /// `select { send(c1, 0), send(c2, 0) }`. K = total/P. One op = one
    /// message (one rendezvous between a selecting sender and a selecting
    /// receiver). Ops: 500,000 normal, 50,000 quick (rounded down to a
    /// multiple of P).
    pub async fn select_contended(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(500_000, 50_000), p, 1);
        let (t1, r1) = bounded::<u64>(0);
        let (t2, r2) = bounded::<u64>(0);
        let g = Gang::new::<Goro, _, _>(2 * ctx.procs, move |i| {
            let (t1, r1, t2, r2) = (t1.clone(), r1.clone(), t2.clone(), r2.clone());
            async move {
                if i % 2 == 0 {
                    for _ in 0..k {
                        goro::select! {
                            send(t1, 0) -> r => { r.unwrap(); }
                            send(t2, 0) -> r => { r.unwrap(); }
                        }
                    }
                    return;
                }
                for _ in 0..k {
                    goro::select! {
                        recv(r1) -> m => { m.unwrap(); }
                        recv(r2) -> m => { m.unwrap(); }
                    }
                }
            }
        })
        .await;
        run_gang(g, ops)
            .await
            .extra("senders", p as f64)
            .extra("receivers", p as f64)
    }
}

mod tokio_side {
    use super::*;
    use tokio::sync::mpsc;

    /// select_uncontended: the goro shape with two `mpsc::channel(1)` per
    /// task and `tokio::select!` (which also picks among ready branches at
    /// random).
    pub async fn select_uncontended(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(5_000_000, 500_000), p, 1);
        let g = Gang::new::<Tokio, _, _>(ctx.procs, move |_| async move {
            let (t1, mut r1) = mpsc::channel::<u64>(1);
            let (t2, mut r2) = mpsc::channel::<u64>(1);
            t1.send(0).await.unwrap();
            for _ in 0..k {
                tokio::select! {
                    Some(_) = r1.recv() => { t2.send(0).await.unwrap(); }
                    Some(_) = r2.recv() => { t1.send(0).await.unwrap(); }
                }
            }
        })
        .await;
        run_gang(g, ops).await.extra("goroutines", p as f64)
    }

    /// select_contended: the goro shape on two MPMC channels of capacity 1
    /// (Go's are unbuffered; async-channel has no rendezvous), with
    /// `tokio::select!` over the send and the receive futures. It needs
    /// futures that are cancel-safe: a losing branch's send must not have
    /// sent, nor its receive taken, a message. async-channel's are; with
    /// kanal and flume this shape hung (measured 2026-11-25: every
    /// flume run and kanal's at procs=2 timed out at 60 s), as a dropped
    /// send or receive future can still complete its hand-off.
    pub async fn select_contended<C: Mpmc>(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(500_000, 50_000), p, 1);
        let (t1, r1) = C::bounded(1);
        let (t2, r2) = C::bounded(1);
        let g = Gang::new::<Tokio, _, _>(2 * ctx.procs, move |i| {
            let (t1, r1, t2, r2) = (t1.clone(), r1.clone(), t2.clone(), r2.clone());
            async move {
                if i % 2 == 0 {
                    for _ in 0..k {
                        tokio::select! {
                            r = C::send(&t1, 0) => { r.unwrap(); }
                            r = C::send(&t2, 0) => { r.unwrap(); }
                        }
                    }
                    return;
                }
                for _ in 0..k {
                    tokio::select! {
                        m = C::recv(&r1) => { m.unwrap(); }
                        m = C::recv(&r2) => { m.unwrap(); }
                    }
                }
            }
        })
        .await;
        run_gang(g, ops)
            .await
            .extra("senders", p as f64)
            .extra("receivers", p as f64)
    }
}
