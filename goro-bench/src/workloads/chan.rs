//! The chan group of goro-bench/README.md, after Go's runtime/chan_test.go
//! benchmarks; shapes and op counts are those of `bench/go/chan.go` (read
//! side by side). P below is procs.
//!
//! tokio's side, for the one-receiver rows (`chan_uncontended`,
//! `select_uncontended`): `tokio::sync::mpsc::channel(cap.max(1))` (tokio
//! has no rendezvous channel, so capacity 0 becomes 1) and `tokio::select!`.
//!
//! Where Go and goro have several tasks receiving from one channel
//! (`chan_contended`, `chan_prodcons`, `select_contended`), mpsc's single
//! receiver would have to sit behind an `Arc<tokio::sync::Mutex<_>>`,
//! locked per receive; a tokio user needing many consumers picks an MPMC
//! crate instead, so the tokio column there is one ([`tokio_mpmc`]), the
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

use super::per_worker;
use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::Goro;
use crate::rt::{Gang, Tokio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// C in Go's ChanUncontended/ChanContended: sends per burst.
const CHAN_BATCH: u64 = 100;
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
        .goro(Ok(body(goro_side::chan_uncontended)))
        .tokio(Ok(body(tokio_side::chan_uncontended))),
    );
    v.push(
        Workload::new(
            "chan_contended",
            "chan",
            "one send+receive on one channel of capacity 100*P shared by P tasks",
            (5_000_000, 500_000),
        )
        .goro(Ok(body(goro_side::chan_contended)))
        .tokio(Ok(body(tokio_mpmc::chan_contended::<tokio_mpmc::Kanal>))),
    );
    for cap in [0usize, 10, 100] {
        v.push(
            Workload::new(format!("chan_prodcons/cap={cap}"), "chan", format!("one message from P producers to P consumers over one channel of capacity {cap}"), (2_000_000, 200_000))
                .goro(Ok(body(move |c| goro_side::chan_prodcons(c, cap))))
                .tokio(Ok(body(move |c| tokio_mpmc::chan_prodcons::<tokio_mpmc::Kanal>(c, cap)))),
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
            .tokio(Ok(body(tokio_mpmc::select_contended::<tokio_mpmc::AsyncChannel>))),
    );
}

/// Measures a released gang and reports `ops`.
async fn run_gang(g: Gang, ops: u64) -> RunOut {
    let m = Meter::start();
    g.release();
    g.wait().await;
    RunOut::new(ops, m.stop())
}

mod goro_side {
    use super::*;
    use goro::chan::bounded;

    /// chan_uncontended (Go: BenchmarkChanUncontended).
    ///
    /// P tasks, each with its own channel of capacity 100 (made after the
    /// start gate, as in Go). Each does K rounds of 100 sends then 100
    /// receives (never blocks). K = total/(P*100). One op = one send plus one
    /// receive. Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a
    /// multiple of P*100).
    pub async fn chan_uncontended(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), p, CHAN_BATCH);
        let g = Gang::new::<Goro, _, _>(ctx.procs, move |_| async move {
            let (tx, rx) = bounded::<u64>(CHAN_BATCH as usize);
            for _ in 0..k {
                for _ in 0..CHAN_BATCH {
                    tx.send(0).await.unwrap();
                }
                for _ in 0..CHAN_BATCH {
                    rx.recv().await.unwrap();
                }
            }
        })
        .await;
        run_gang(g, ops)
            .await
            .extra("goroutines", p as f64)
            .extra("cap", CHAN_BATCH as f64)
    }

    /// chan_contended (Go: BenchmarkChanContended).
    ///
    /// One channel of capacity 100*P shared by P tasks, each doing K rounds
    /// of 100 sends then 100 receives; the capacity covers every task's
    /// burst, so nothing blocks and the cost is contention on the channel.
    /// One op = one send plus one receive. Ops: 5,000,000 normal, 500,000
    /// quick (rounded down to a multiple of P*100).
    pub async fn chan_contended(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(5_000_000, 500_000), p, CHAN_BATCH);
        let (tx, rx) = bounded::<u64>((CHAN_BATCH * p) as usize);
        let g = Gang::new::<Goro, _, _>(ctx.procs, move |_| {
            let (tx, rx) = (tx.clone(), rx.clone());
            async move {
                for _ in 0..k {
                    for _ in 0..CHAN_BATCH {
                        tx.send(0).await.unwrap();
                    }
                    for _ in 0..CHAN_BATCH {
                        rx.recv().await.unwrap();
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
    /// (Go: `left.Add(-1) >= 0`; here `left.fetch_sub(1) > 0`) and sends 1000 ones until none are
    /// left, then sends one 0 (a stop sentinel). A consumer receives until it
    /// gets a 0. One op = one message (sentinels not counted). All 2P tasks
    /// are parked before the clock starts. Ops: 2,000,000 normal, 200,000 quick.
    pub async fn chan_prodcons(ctx: Ctx, cap: usize) -> RunOut {
        let batches = ctx.size(2_000_000, 200_000) / PRODCONS_BATCH;
        let (tx, rx) = bounded::<u64>(cap);
        let left = Arc::new(AtomicI64::new(batches as i64));
        let g = Gang::new::<Goro, _, _>(2 * ctx.procs, move |i| {
            let (tx, rx, left) = (tx.clone(), rx.clone(), left.clone());
            async move {
                if i % 2 == 0 {
                    while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                        for _ in 0..PRODCONS_BATCH {
                            tx.send(1).await.unwrap();
                        }
                    }
                    tx.send(0).await.unwrap();
                    return;
                }
                while rx.recv().await.unwrap() != 0 {}
            }
        })
        .await;
        run_gang(g, batches * PRODCONS_BATCH)
            .await
            .extra("producers", ctx.procs as f64)
            .extra("consumers", ctx.procs as f64)
            .extra("cap", cap as f64)
    }

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

    /// chan_uncontended: the goro shape (see there) with `mpsc::channel(100)`.
    pub async fn chan_uncontended(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), p, CHAN_BATCH);
        let g = Gang::new::<Tokio, _, _>(ctx.procs, move |_| async move {
            let (tx, mut rx) = mpsc::channel::<u64>(CHAN_BATCH as usize);
            for _ in 0..k {
                for _ in 0..CHAN_BATCH {
                    tx.send(0).await.unwrap();
                }
                for _ in 0..CHAN_BATCH {
                    rx.recv().await.unwrap();
                }
            }
        })
        .await;
        run_gang(g, ops)
            .await
            .extra("goroutines", p as f64)
            .extra("cap", CHAN_BATCH as f64)
    }

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
}

/// tokio's MPMC column: the multi-consumer rows on an MPMC channel crate
/// driven by tokio, as a tokio user needing many receivers would write them.
mod tokio_mpmc {
    use super::*;
    use std::future::Future;

    /// A bounded MPMC channel with cloneable async ends.
    pub trait Mpmc: 'static {
        type Tx: Clone + Send + Sync + 'static;
        type Rx: Clone + Send + Sync + 'static;
        fn bounded(cap: usize) -> (Self::Tx, Self::Rx);
        fn send(tx: &Self::Tx, v: u64) -> impl Future<Output = ()> + Send + '_;
        fn recv(rx: &Self::Rx) -> impl Future<Output = Option<u64>> + Send + '_;
    }

    pub struct AsyncChannel;
    impl Mpmc for AsyncChannel {
        type Tx = async_channel::Sender<u64>;
        type Rx = async_channel::Receiver<u64>;
        fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
            async_channel::bounded(cap.max(1)) // no rendezvous: 0 becomes 1
        }
        async fn send(tx: &Self::Tx, v: u64) {
            tx.send(v).await.unwrap()
        }
        async fn recv(rx: &Self::Rx) -> Option<u64> {
            rx.recv().await.ok()
        }
    }

    pub struct Kanal;
    impl Mpmc for Kanal {
        type Tx = kanal::AsyncSender<u64>;
        type Rx = kanal::AsyncReceiver<u64>;
        fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
            kanal::bounded_async(cap) // 0: a rendezvous channel, as Go's
        }
        async fn send(tx: &Self::Tx, v: u64) {
            tx.send(v).await.unwrap()
        }
        async fn recv(rx: &Self::Rx) -> Option<u64> {
            rx.recv().await.ok()
        }
    }

    /// chan_contended: the goro shape with one MPMC channel of 100*P.
    pub async fn chan_contended<C: Mpmc>(ctx: Ctx) -> RunOut {
        let p = ctx.procs as u64;
        let (k, ops) = per_worker(ctx.size(5_000_000, 500_000), p, CHAN_BATCH);
        let (tx, rx) = C::bounded((CHAN_BATCH * p) as usize);
        let g = Gang::new::<Tokio, _, _>(ctx.procs, move |_| {
            let (tx, rx) = (tx.clone(), rx.clone());
            async move {
                for _ in 0..k {
                    for _ in 0..CHAN_BATCH {
                        C::send(&tx, 0).await;
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

    /// chan_prodcons: the goro shape on one MPMC channel of `cap` (kanal:
    /// 0 is a rendezvous channel).
    pub async fn chan_prodcons<C: Mpmc>(ctx: Ctx, cap: usize) -> RunOut {
        let batches = ctx.size(2_000_000, 200_000) / PRODCONS_BATCH;
        let (tx, rx) = C::bounded(cap);
        let left = Arc::new(AtomicI64::new(batches as i64));
        let g = Gang::new::<Tokio, _, _>(2 * ctx.procs, move |i| {
            let (tx, rx, left) = (tx.clone(), rx.clone(), left.clone());
            async move {
                if i % 2 == 0 {
                    while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                        for _ in 0..PRODCONS_BATCH {
                            C::send(&tx, 1).await;
                        }
                    }
                    C::send(&tx, 0).await;
                    return;
                }
                loop {
                    if C::recv(&rx).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
            }
        })
        .await;
        run_gang(g, batches * PRODCONS_BATCH)
            .await
            .extra("producers", ctx.procs as f64)
            .extra("consumers", ctx.procs as f64)
            .extra("cap", cap as f64)
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
                            _ = C::send(&t1, 0) => {}
                            _ = C::send(&t2, 0) => {}
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
