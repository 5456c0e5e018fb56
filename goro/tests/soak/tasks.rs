//! Soak components on tasks and channels: spawn storms, rings, `select!`.
//! (Part of `soak.rs`; see its header.)

use super::*;

// ---------------------------------------------------------------------------
// Storm: tasks spawning tasks.

/// Counts a task as spawned when made and as finished when its future is
/// dropped (completed or aborted).
pub(super) struct TaskGuard(Arc<Soak>);

impl TaskGuard {
    fn new(s: &Arc<Soak>) -> TaskGuard {
        s.c.spawned.fetch_add(1, SeqCst);
        TaskGuard(s.clone())
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.c.finished.fetch_add(1, SeqCst);
    }
}

/// A tree of `depth` levels, each node spawning `width` children and
/// returning the size of its subtree.
pub(super) fn tree(
    s: Arc<Soak>,
    depth: u32,
    width: u64,
    seed: u64,
) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if depth == 0 {
            if seed.is_multiple_of(3) {
                goro::yield_now().await;
            }
            return 1;
        }
        let hs: Vec<_> = (0..width)
            .map(|i| {
                let g = TaskGuard::new(&s);
                let sub = tree(
                    s.clone(),
                    depth - 1,
                    width,
                    seed.wrapping_mul(31).wrapping_add(i),
                );
                goro::spawn(async move {
                    let _g = g;
                    sub.await
                })
            })
            .collect();
        let mut n = 1;
        for h in hs {
            match s.bounded(|| "joining a storm task".into(), h).await {
                Some(Ok(k)) => {
                    s.c.joined.fetch_add(1, SeqCst);
                    n += k;
                }
                Some(Err(e)) => s.violation(format!("storm task failed: {e}")),
                None => {}
            }
        }
        n
    })
}

pub(super) async fn storm(s: Arc<Soak>, id: u64) {
    let mut rng = Rng::new(id + 1);
    let mut round = 0u64;
    while !s.stopped() {
        round += 1;
        let width = 2 + rng.below(4);
        let depth = 1 + rng.below(3) as u32;
        let got = tree(s.clone(), depth, width, rng.next()).await;
        let want = (0..=depth).map(|d| width.pow(d)).sum::<u64>();
        s.check(got == want || s.stopped() && got < want, || {
            format!("storm tree depth {depth} width {width}: {got} nodes joined, want {want}")
        });
        if round.is_multiple_of(8) {
            // A flat burst without yielding: overflows the local run queue.
            let hs: Vec<_> = (0..300u64)
                .map(|i| {
                    let g = TaskGuard::new(&s);
                    goro::spawn(async move {
                        let _g = g;
                        i
                    })
                })
                .collect();
            for (i, h) in hs.into_iter().enumerate() {
                match s.bounded(|| "joining a burst task".into(), h).await {
                    Some(Ok(v)) => {
                        s.c.joined.fetch_add(1, SeqCst);
                        s.check(v == i as u64, || format!("burst task {i} returned {v}"));
                    }
                    Some(Err(e)) => s.violation(format!("burst task {i} failed: {e}")),
                    None => {}
                }
            }
        }
        if round.is_multiple_of(4) {
            // Abort a task parked on a channel nobody sends on.
            let (tx, rx) = chan::bounded::<u8>(0);
            let g = TaskGuard::new(&s);
            let h = goro::spawn(async move {
                let _g = g;
                rx.recv().await
            });
            if rng.below(2) == 0 {
                goro::yield_now().await; // sometimes let it park first
            }
            h.abort();
            match s.bounded(|| "joining an aborted task".into(), h).await {
                Some(Err(e)) if e.is_cancelled() => {
                    s.c.aborted.fetch_add(1, SeqCst);
                }
                Some(r) => s.violation(format!(
                    "aborted task resolved with {r:?}, want a cancelled JoinError"
                )),
                None => {}
            }
            drop(tx);
        }
    }
}

// ---------------------------------------------------------------------------
// Ring: numbered messages around rings of tasks.

#[derive(Debug, Clone, Copy)]
pub(super) struct Msg {
    origin: usize,
    seq: u64,
    hops: usize,
}

pub(super) async fn ring(s: Arc<Soak>, n: usize, seed: u64) {
    let chans: Vec<_> = (0..n).map(|i| chan::bounded::<Msg>(i % 3)).collect();
    // Fewer messages in flight than nodes: some node is always free to
    // receive, so the ring cannot deadlock with every node sending.
    let inflight = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..n)
        .map(|me| {
            let rx = chans[me].1.clone();
            let tx = chans[(me + 1) % n].0.clone();
            let (s, inflight) = (s.clone(), inflight.clone());
            goro::spawn(ring_node(s, me, n, rx, tx, inflight, seed + me as u64))
        })
        .collect();
    drop(chans);
    let mut injected = vec![0; n];
    let mut delivered = vec![0; n];
    // Nodes run until the stop flag and then drain (bounded by their drain
    // deadline); a hang here is the watchdog's to report.
    for (me, h) in hs.into_iter().enumerate() {
        match h.await {
            Ok((i, d)) => (injected[me], delivered[me]) = (i, d),
            Err(e) => s.violation(format!("ring node {me} failed: {e}")),
        }
    }
    s.check(injected == delivered, || {
        format!("ring of {n}: injected {injected:?} but delivered {delivered:?}")
    });
    let left = inflight.load(SeqCst);
    s.check(left == 0, || {
        format!("ring of {n}: {left} messages still in flight at the end")
    });
}

pub(super) async fn ring_node(
    s: Arc<Soak>,
    me: usize,
    n: usize,
    rx: chan::Receiver<Msg>,
    tx: chan::Sender<Msg>,
    inflight: Arc<AtomicUsize>,
    seed: u64,
) -> (u64, u64) {
    let mut rng = Rng::new(seed);
    let (mut next_seq, mut expect) = (0u64, 0u64);
    let mut drain = Drain::new();
    loop {
        // Inject: count first, then check the flag (both SeqCst), so a node
        // that saw the flag and an empty ring knows no message can follow.
        let prev = inflight.fetch_add(1, SeqCst);
        if prev < n - 1 && !s.stopped() && rng.below(2) == 0 {
            let m = Msg {
                origin: me,
                seq: next_seq,
                hops: 1,
            };
            next_seq += 1;
            s.c.ring_injected.fetch_add(1, SeqCst);
            match s
                .bounded(|| format!("ring node {me} injecting"), tx.send(m))
                .await
            {
                Some(Ok(())) => {}
                Some(Err(_)) => s.violation(format!("ring node {me}: next node's channel closed")),
                None => return (next_seq, expect),
            }
        } else {
            inflight.fetch_sub(1, SeqCst);
        }
        let wait = Duration::from_millis(2);
        match timeout(wait, rx.recv()).await {
            Ok(Ok(m)) if m.origin == me => {
                s.check(m.hops == n && m.seq == expect, || {
                    format!(
                        "ring of {n}, node {me}: got back {m:?}, want seq {expect} after {n} hops"
                    )
                });
                expect = m.seq + 1;
                inflight.fetch_sub(1, SeqCst);
                s.c.ring_delivered.fetch_add(1, SeqCst);
            }
            Ok(Ok(m)) => {
                s.check(m.hops < n, || {
                    format!("ring of {n}, node {me}: {m:?} went past its origin")
                });
                s.c.ring_hops.fetch_add(1, SeqCst);
                let fwd = Msg {
                    hops: m.hops + 1,
                    ..m
                };
                match s
                    .bounded(|| format!("ring node {me} forwarding"), tx.send(fwd))
                    .await
                {
                    Some(Ok(())) => {}
                    Some(Err(_)) => {
                        s.violation(format!("ring node {me}: next node's channel closed"))
                    }
                    None => return (next_seq, expect),
                }
            }
            Ok(Err(RecvError)) => {
                // The previous node dropped its sender: it saw the ring
                // empty after the stop flag, and so must we.
                let k = inflight.load(SeqCst);
                s.check(s.stopped() && k == 0, || {
                    format!("ring node {me}: channel closed under it with {k} messages in flight")
                });
                return (next_seq, expect);
            }
            Err(_elapsed) => {
                if s.stopped() && inflight.load(SeqCst) == 0 {
                    return (next_seq, expect);
                }
                if drain.expired(&s) {
                    let k = inflight.load(SeqCst);
                    s.violation(format!(
                        "ring of {n}, node {me}: {k} messages never came back"
                    ));
                    return (next_seq, expect);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Select: producers and consumers with timeouts on both sides.

pub(super) fn check_not_early(s: &Soak, what: &str, start: Instant, d: Duration, fired: Instant) {
    let now = Instant::now();
    s.check(fired >= start + d && now >= start + d, || {
        format!(
            "{what}: a {d:?} timeout fired {:?} after it was set",
            fired.min(now) - start
        )
    });
}

pub(super) async fn select_group(
    s: Arc<Soak>,
    group: u64,
    cap: usize,
    producers: usize,
    consumers: usize,
) {
    let (tx, rx) = chan::bounded::<(usize, u64)>(cap);
    let seen: Arc<Vec<Mutex<HashSet<u64>>>> =
        Arc::new((0..producers).map(|_| Mutex::new(HashSet::new())).collect());
    let ps: Vec<_> = (0..producers)
        .map(|p| {
            let (s, tx) = (s.clone(), tx.clone());
            goro::spawn(async move {
                let mut rng = Rng::new(group * 100 + p as u64);
                let mut seq = 0u64;
                while !s.stopped() {
                    let d = rng.micros(400);
                    let t0 = Instant::now();
                    goro::select! {
                        send(tx, (p, seq)) -> r => match r {
                            Ok(()) => {
                                seq += 1;
                                s.c.sel_sent.fetch_add(1, SeqCst);
                            }
                            Err(_) => s.violation(format!("select producer {p}: channel closed")),
                        },
                        recv(after(d)) -> t => {
                            // The value was not sent: the same number goes again.
                            check_not_early(&s, "select send timeout", t0, d, t.unwrap_or(t0));
                            s.c.sel_timeouts.fetch_add(1, SeqCst);
                        },
                    }
                }
                seq
            })
        })
        .collect();
    let cs: Vec<_> = (0..consumers)
        .map(|c| {
            let (s, rx, seen) = (s.clone(), rx.clone(), seen.clone());
            goro::spawn(async move {
                let mut rng = Rng::new(group * 1000 + c as u64);
                let mut drain = Drain::new();
                let record = |m: (usize, u64)| {
                    let fresh = seen[m.0].lock().unwrap().insert(m.1);
                    s.check(fresh, || format!("select: message {m:?} received twice"));
                    s.c.sel_received.fetch_add(1, SeqCst);
                };
                loop {
                    if drain.expired(&s) {
                        s.violation(format!(
                            "select consumer {c}: channel not closed while draining"
                        ));
                        return;
                    }
                    let d = rng.micros(600);
                    let t0 = Instant::now();
                    let got = match rng.below(8) {
                        0 => goro::select! {
                            recv(rx) -> m => Some(m),
                            default => {
                                s.c.sel_defaults.fetch_add(1, SeqCst);
                                None
                            },
                        },
                        1 => match timeout(d, rx.recv()).await {
                            Ok(m) => Some(m),
                            Err(_) => {
                                check_not_early(&s, "select timeout()", t0, d, Instant::now());
                                s.c.sel_timeouts.fetch_add(1, SeqCst);
                                None
                            }
                        },
                        _ => goro::select! {
                            recv(rx) -> m => Some(m),
                            recv(after(d)) -> t => {
                                check_not_early(&s, "select recv timeout", t0, d, t.unwrap_or(t0));
                                s.c.sel_timeouts.fetch_add(1, SeqCst);
                                None
                            },
                        },
                    };
                    match got {
                        Some(Ok(m)) => record(m),
                        Some(Err(RecvError)) => return, // closed and drained
                        None => {}
                    }
                }
            })
        })
        .collect();
    drop(rx);
    let mut sent = vec![0u64; producers];
    // Producers run until the stop flag; consumers until the channel is
    // closed and drained (or their drain deadline). A hang is the watchdog's.
    for (p, h) in ps.into_iter().enumerate() {
        match h.await {
            Ok(n) => sent[p] = n,
            Err(e) => s.violation(format!("select producer {p} failed: {e}")),
        }
    }
    tx.close();
    for (c, h) in cs.into_iter().enumerate() {
        if let Err(e) = h.await {
            s.violation(format!("select consumer {c} failed: {e}"));
        }
    }
    for (p, &n) in sent.iter().enumerate() {
        let got = seen[p].lock().unwrap();
        let max = got.iter().max().copied();
        s.check(got.len() as u64 == n && max.is_none_or(|m| m < n), || {
            format!(
                "select group {group}, producer {p}: sent {n}, received {} distinct (max {max:?})",
                got.len()
            )
        });
    }
}
