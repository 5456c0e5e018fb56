//! Soak components on time and I/O: contexts, timers, the pool, TCP echo.
//! (Part of `soak.rs`; see its header.)

use super::*;

// ---------------------------------------------------------------------------
// Contexts: trees cancelled at random points and by deadlines.

pub(super) struct Node {
    ctx: Context,
    cancel: goro::context::Cancel,
    parent: Option<usize>,
    /// Set before this node's `cancel` is called.
    explicit: AtomicBool,
}

impl Node {
    fn path<'a>(nodes: &'a [Node], mut i: usize) -> impl Iterator<Item = usize> + 'a {
        std::iter::from_fn(move || {
            let here = i;
            if here == usize::MAX {
                return None;
            }
            i = nodes[here].parent.unwrap_or(usize::MAX);
            Some(here)
        })
    }
}

/// Checks a done node: why it is done agrees with what happened to it and
/// its ancestors, and a deadline was not reported early.
pub(super) fn check_done(s: &Soak, nodes: &[Node], i: usize) {
    let n = &nodes[i];
    let err = n.ctx.err();
    let now = Instant::now();
    match err {
        None => s.violation(format!(
            "context node {i}: done channel closed but err() is None"
        )),
        Some(ContextError::DeadlineExceeded) => match n.ctx.deadline() {
            Some(d) => s.check(now >= d, || {
                format!(
                    "context node {i}: DeadlineExceeded {:?} before its deadline",
                    d - now
                )
            }),
            None => s.violation(format!(
                "context node {i}: DeadlineExceeded without a deadline"
            )),
        },
        Some(ContextError::Canceled) => {
            let why = Node::path(nodes, i).any(|j| nodes[j].explicit.load(SeqCst));
            s.check(why, || {
                format!("context node {i}: Canceled but nobody on its path cancelled it")
            });
        }
    }
}

pub(super) async fn contexts(s: Arc<Soak>, id: u64) {
    let mut rng = Rng::new(id + 7);
    let bg = Context::background();
    while !s.stopped() {
        s.c.ctx_trees.fetch_add(1, SeqCst);
        let mut nodes: Vec<Node> = Vec::new();
        let mut level = vec![usize::MAX];
        for _depth in 0..3 {
            let mut next = Vec::new();
            for &p in &level {
                for _ in 0..1 + rng.below(3) {
                    let parent = if p == usize::MAX { &bg } else { &nodes[p].ctx };
                    let (ctx, cancel) = match rng.below(3) {
                        0 => Context::with_cancel(parent),
                        1 => Context::with_timeout(parent, rng.micros(3000)),
                        _ => Context::with_deadline(parent, Instant::now() + rng.micros(3000)),
                    };
                    // A child's deadline is never later than its parent's.
                    if let (Some(pd), Some(cd)) = (parent.deadline(), ctx.deadline()) {
                        s.check(cd <= pd, || {
                            format!("context child deadline {cd:?} after its parent's {pd:?}")
                        });
                    } else if parent.deadline().is_some() {
                        s.violation("context child of a parent with a deadline has none".into());
                    }
                    // Not done early: a deadline error only past the deadline.
                    if let Some(ContextError::DeadlineExceeded) = ctx.err() {
                        let d = ctx.deadline().expect("a deadline");
                        let now = Instant::now();
                        s.check(now >= d, || {
                            format!("new context done {:?} before its deadline", d - now)
                        });
                    }
                    next.push(nodes.len());
                    nodes.push(Node {
                        ctx,
                        cancel,
                        parent: (p != usize::MAX).then_some(p),
                        explicit: AtomicBool::new(false),
                    });
                }
            }
            level = next;
        }
        s.c.ctx_nodes.fetch_add(nodes.len() as u64, SeqCst);
        let nodes = Arc::new(nodes);
        // Waiters on some nodes, woken by a cancel or a deadline.
        let waiters: Vec<_> = (0..nodes.len())
            .filter(|_| rng.below(2) == 0)
            .map(|i| {
                let (s, nodes) = (s.clone(), nodes.clone());
                goro::spawn(async move {
                    let done = nodes[i].ctx.done();
                    let woke = goro::select! {
                        recv(done) -> _ => true,
                        recv(after(OP_LIMIT)) -> _ => false,
                    };
                    if woke {
                        check_done(&s, &nodes, i);
                    } else {
                        s.violation(format!("context node {i}: never done within {OP_LIMIT:?}"));
                    }
                })
            })
            .collect();
        // Cancel a few nodes at random points; their subtrees are done when
        // `cancel` returns.
        for _ in 0..rng.below(3) {
            sleep(rng.micros(1500)).await;
            let i = rng.below(nodes.len() as u64) as usize;
            nodes[i].explicit.store(true, SeqCst);
            nodes[i].cancel.cancel();
            for j in 0..nodes.len() {
                if Node::path(&nodes, j).any(|k| k == i) {
                    let ok = nodes[j].ctx.err().is_some() && nodes[j].ctx.done().is_closed();
                    s.check(ok, || {
                        format!("context node {j} not done after its ancestor {i} was cancelled")
                    });
                }
            }
        }
        // Some trees are left to their deadlines, the rest cancelled at the root.
        if rng.below(2) == 0 {
            sleep(rng.micros(3000)).await;
        }
        for n in nodes.iter().filter(|n| n.parent.is_none()) {
            n.explicit.store(true, SeqCst);
            n.cancel.cancel();
        }
        for (i, n) in nodes.iter().enumerate() {
            s.check(n.ctx.err().is_some(), || {
                format!("context node {i} not done after its root was cancelled")
            });
            if n.ctx.err() == Some(ContextError::DeadlineExceeded) {
                s.c.ctx_deadlines.fetch_add(1, SeqCst);
            }
            check_done(&s, &nodes, i);
        }
        for w in waiters {
            if let Some(Err(e)) = s.bounded(|| "joining a context waiter".into(), w).await {
                s.violation(format!("context waiter failed: {e}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Timers: fire at most once, never early; stopped means never fired.

pub(super) struct TimerRec {
    scheduled: Instant,
    fires: AtomicU32,
    /// Set after `stop` returned `true`.
    stopped: AtomicBool,
}

pub(super) async fn timers(s: Arc<Soak>, id: u64) {
    let mut rng = Rng::new(id + 11);
    let mut funcs: Vec<(Arc<TimerRec>, Timer)> = Vec::new();
    while !s.stopped() {
        // A batch of after_func timers, some stopped.
        for _ in 0..8 {
            let d = rng.micros(3000);
            let rec = Arc::new(TimerRec {
                scheduled: Instant::now() + d,
                fires: AtomicU32::new(0),
                stopped: AtomicBool::new(false),
            });
            let (r, s2) = (rec.clone(), s.clone());
            let t = after_func(d, move || {
                let now = Instant::now();
                let k = r.fires.fetch_add(1, SeqCst);
                s2.c.timers_fired.fetch_add(1, SeqCst);
                s2.check(k == 0, || format!("after_func timer fired {} times", k + 1));
                s2.check(now >= r.scheduled, || {
                    format!("after_func timer fired {:?} early", r.scheduled - now)
                });
                s2.check(!r.stopped.load(SeqCst), || {
                    "after_func timer fired after stop returned true".into()
                });
            });
            s.c.timers_armed.fetch_add(1, SeqCst);
            funcs.push((rec, t));
        }
        for (rec, t) in funcs.iter().rev().take(8) {
            if rng.below(3) == 0 && t.stop() {
                rec.stopped.store(true, SeqCst);
                s.c.timers_stopped.fetch_add(1, SeqCst);
            }
        }
        // A channel timer: received once, or stopped and silent.
        let d = rng.micros(2000);
        let t0 = Instant::now();
        let t = Timer::new(d);
        s.c.timers_armed.fetch_add(1, SeqCst);
        if rng.below(3) == 0 && t.stop() {
            s.c.timers_stopped.fetch_add(1, SeqCst);
            s.check(t.rx().try_recv().is_err(), || {
                "a stopped Timer delivered a value".into()
            });
        } else {
            match s
                .bounded(|| "receiving from a Timer".into(), t.rx().recv())
                .await
            {
                Some(Ok(at)) => {
                    s.c.timers_fired.fetch_add(1, SeqCst);
                    check_not_early(&s, "Timer", t0, d, at);
                    s.check(t.rx().try_recv().is_err(), || {
                        "a Timer delivered twice".into()
                    });
                    s.check(!t.stop(), || {
                        "stop() returned true after the Timer's value was received".into()
                    });
                }
                Some(Err(e)) => s.violation(format!("Timer channel failed: {e:?}")),
                None => {}
            }
        }
        // A reset: a long timer brought forward fires once, after the new time.
        let t = Timer::new(Duration::from_secs(3600));
        let d = rng.micros(1000);
        let t0 = Instant::now();
        s.check(t.reset(d), || {
            "reset of a pending Timer returned false".into()
        });
        match s
            .bounded(|| "receiving from a reset Timer".into(), t.rx().recv())
            .await
        {
            Some(Ok(at)) => {
                s.c.timers_fired.fetch_add(1, SeqCst);
                check_not_early(&s, "reset Timer", t0, d, at);
            }
            Some(Err(e)) => s.violation(format!("reset Timer channel failed: {e:?}")),
            None => {}
        }
        // A sleep.
        let d = rng.micros(1000);
        let t0 = Instant::now();
        sleep(d).await;
        check_not_early(&s, "sleep", t0, d, Instant::now());
        s.c.sleeps.fetch_add(1, SeqCst);
        // Settle the after_func timers that fired, and the stopped ones
        // whose deadlines have passed (they must not have fired).
        let horizon = Instant::now();
        funcs.retain(|(rec, _)| {
            let (k, stopped) = (rec.fires.load(SeqCst), rec.stopped.load(SeqCst));
            if stopped && rec.scheduled < horizon {
                s.check(k == 0, || {
                    format!("stopped after_func timer fired {k} times")
                });
                return false;
            }
            k != 1
        });
        if funcs.len() > 10_000 {
            s.violation(format!("{} after_func timers pending", funcs.len()));
        }
    }
    // Wind down: every timer not stopped fires exactly once; stopped ones never.
    let deadline = Instant::now() + OP_LIMIT;
    loop {
        let waiting = funcs
            .iter()
            .filter(|(r, _)| !r.stopped.load(SeqCst) && r.fires.load(SeqCst) == 0)
            .count();
        if waiting == 0 {
            break;
        }
        if Instant::now() >= deadline {
            s.violation(format!("{waiting} after_func timers never fired"));
            break;
        }
        sleep(Duration::from_millis(1)).await;
    }
    for (r, _) in &funcs {
        let (k, stopped) = (r.fires.load(SeqCst), r.stopped.load(SeqCst));
        s.check(k == u32::from(!stopped), || {
            format!("after_func timer (stopped: {stopped}) fired {k} times")
        });
    }
}

// ---------------------------------------------------------------------------
// Pool: values in one hand at a time, made == dropped at the end.

pub(super) async fn pool_worker(s: Arc<Soak>, pool: Arc<Pool<Tracked>>, id: u64) {
    let mut rng = Rng::new(id + 13);
    let mut i = 0u64;
    while !s.stopped() {
        i += 1;
        if i.is_multiple_of(64) {
            // A caller without a P: through the pool's shared list.
            let p = pool.clone();
            goro::block_in_place(|| {
                let v = p.get().take();
                p.put(v.release());
            });
            s.c.pool_gets.fetch_add(1, SeqCst);
        }
        let held: Vec<Tracked> = (0..1 + rng.below(4)).map(|_| pool.get().take()).collect();
        s.c.pool_gets.fetch_add(held.len() as u64, SeqCst);
        if rng.below(3) == 0 {
            goro::yield_now().await;
        }
        for v in held {
            if rng.below(16) == 0 {
                drop(v.release()); // sometimes not given back
            } else {
                pool.put(v.release());
            }
        }
    }
}

pub(super) async fn pool_cycler(s: Arc<Soak>) {
    while !s.stopped() {
        sleep(Duration::from_millis(2)).await;
        pool_cycle();
        s.c.pool_cycles.fetch_add(1, SeqCst);
    }
}

// ---------------------------------------------------------------------------
// TCP echo with deadlines.

pub(super) fn soon() -> Option<Instant> {
    Some(Instant::now() + OP_LIMIT)
}

pub(super) async fn echo_server(s: Arc<Soak>, l: TcpListener, clients_done: Arc<AtomicBool>) {
    let mut handlers = Vec::new();
    loop {
        match timeout(Duration::from_millis(5), l.accept()).await {
            Ok(Ok((c, _))) => {
                let s = s.clone();
                handlers.push(goro::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    loop {
                        c.set_read_deadline(soon());
                        let n = match c.read(&mut buf).await {
                            Ok(0) => return,
                            Ok(n) => n,
                            Err(e) => return s.violation(format!("echo server read: {e}")),
                        };
                        c.set_write_deadline(soon());
                        if let Err(e) = c.write_all(&buf[..n]).await {
                            return s.violation(format!("echo server write: {e}"));
                        }
                        s.c.tcp_server_bytes.fetch_add(n as u64, SeqCst);
                    }
                }));
            }
            Ok(Err(e)) => s.violation(format!("accept: {e}")),
            Err(_) => {
                if clients_done.load(SeqCst) {
                    break;
                }
            }
        }
    }
    for h in handlers {
        if let Some(Err(e)) = s.bounded(|| "joining an echo handler".into(), h).await {
            s.violation(format!("echo handler failed: {e}"));
        }
    }
}

pub(super) fn payload(client: u64, seq: u64, len: usize) -> Vec<u8> {
    let mut x = Rng::new(client << 32 | seq);
    (0..len).map(|_| x.next() as u8).collect()
}

pub(super) async fn echo_client(s: Arc<Soak>, addr: std::net::SocketAddr, id: u64) {
    let mut rng = Rng::new(id + 17);
    let mut seq = 0u64;
    while !s.stopped() {
        let c = match s
            .bounded(|| "connect".into(), TcpStream::connect(addr))
            .await
        {
            Some(Ok(c)) => c,
            Some(Err(e)) => return s.violation(format!("connect: {e}")),
            None => return,
        };
        s.c.tcp_conns.fetch_add(1, SeqCst);
        let _ = c.set_nodelay(true);
        for _ in 0..1 + rng.below(40) {
            if s.stopped() {
                break;
            }
            if rng.below(16) == 0 {
                // Probe: a read nobody answers times out, not early.
                let wait = rng.micros(2000);
                let d = Instant::now() + wait;
                c.set_read_deadline(Some(d));
                match c.read(&mut [0u8; 16]).await {
                    Err(e) if e.kind() == ErrorKind::TimedOut => {
                        let now = Instant::now();
                        s.check(now >= d, || {
                            format!("read deadline reported {:?} early", d - now)
                        });
                    }
                    other => {
                        s.violation(format!("probe read past its deadline returned {other:?}"))
                    }
                }
                // A deadline already past fails a write at once, sending nothing.
                c.set_write_deadline(Some(Instant::now() - Duration::from_millis(1)));
                match c.write(b"never sent").await {
                    Err(e) if e.kind() == ErrorKind::TimedOut => {}
                    other => s.violation(format!("write past its deadline returned {other:?}")),
                }
                s.c.tcp_probes.fetch_add(1, SeqCst);
            }
            seq += 1;
            let len = 1 + rng.below(8192) as usize;
            let msg = payload(id, seq, len);
            c.set_write_deadline(soon());
            if let Err(e) = c.write_all(&msg).await {
                return s.violation(format!("echo client {id} write: {e}"));
            }
            s.c.tcp_sent.fetch_add(len as u64, SeqCst);
            let mut back = vec![0u8; len];
            c.set_read_deadline(soon());
            if let Err(e) = support::net::read_exact(&c, &mut back).await {
                return s.violation(format!("echo client {id} read: {e}"));
            }
            if back != msg {
                let at = back.iter().zip(&msg).position(|(a, b)| a != b);
                return s.violation(format!(
                    "echo client {id}: {len} bytes came back different (first at {at:?})"
                ));
            }
            s.c.tcp_echoed.fetch_add(len as u64, SeqCst);
            s.c.tcp_ops.fetch_add(1, SeqCst);
        }
        c.set_deadline(soon());
        if let Err(e) = c.shutdown(std::net::Shutdown::Write) {
            return s.violation(format!("shutdown: {e}"));
        }
        match c.read(&mut [0u8; 16]).await {
            Ok(0) => {}
            other => {
                return s.violation(format!(
                    "echo client {id}: after shutdown, read {other:?}, want EOF"
                ))
            }
        }
    }
}
