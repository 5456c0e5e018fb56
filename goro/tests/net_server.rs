//! What a server built like `examples/echo_server.rs` must hold to (the
//! same accept loop and handler, its 5 s read deadline scaled down):
//!
//! * 1,000 slow-loris clients, each trickling bytes slower than the read
//!   deadline, are each disconnected by it, while normal clients keep
//!   getting prompt answers;
//! * 1,000 idle keep-alive connections cost no CPU and wake nothing;
//! * running out of file descriptors makes the accept loop back off as
//!   Go's `net/http` does, and it serves again once descriptors are free.
//!
//! Its own test binary, and its tests run one at a time: one measures the
//! process's CPU time and another lowers its descriptor limit.

mod support;

use goro::net::{TcpListener, TcpStream};
use std::io::{self, Read as _, Write as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use support::net::{raise_fd_limit, read_exact, set_soft_fd_limit};
use support::{process_cpu, thread_state, threads_named, wait_until, wait_until_quiet, within};

/// Whole-test limit (these tests make thousands of connections on a
/// shared CI machine).
const LIMIT: Duration = Duration::from_secs(120);

fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The example's handler: a read deadline before every read, echo, close
/// on EOF, error or a passed deadline.
async fn echo(s: TcpStream, read_timeout: Duration) {
    let mut buf = vec![0; 4096];
    loop {
        s.set_read_deadline(Some(Instant::now() + read_timeout));
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        s.set_write_deadline(Some(Instant::now() + read_timeout));
        if s.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The example's accept loop. `on_backoff` sees each back-off delay.
async fn echo_server(
    l: TcpListener,
    read_timeout: Duration,
    on_backoff: impl FnMut(&io::Error, Duration) + Send + 'static,
) {
    let mut on_backoff = on_backoff;
    loop {
        let (s, _) = l
            .accept_with_backoff(&mut on_backoff)
            .await
            .expect("accept: only resource errors are expected, and those back off");
        goro::spawn(echo(s, read_timeout));
    }
}

/// Starts the echo server on `rt`; returns its address.
fn start_echo_server(
    rt: &goro::Runtime,
    read_timeout: Duration,
    on_backoff: impl FnMut(&io::Error, Duration) + Send + 'static,
) -> SocketAddr {
    let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = l.local_addr().unwrap();
    drop(rt.spawn(echo_server(l, read_timeout, on_backoff)));
    addr
}

fn log_backoff(e: &io::Error, d: Duration) {
    eprintln!("accept: {e}; retrying in {d:?}");
}

// ---------------------------------------------------------------------
// Slow loris

const SLOW_CLIENTS: usize = 1000;
/// The server's read deadline (the example's 5 s, scaled down).
const READ_TIMEOUT: Duration = Duration::from_millis(300);
/// A slow client's pause between bytes: slower than the deadline.
const SLOW_INTERVAL: Duration = Duration::from_millis(600);
/// Bytes a slow client sends on one connection before the test gives up
/// on the server ever cutting it.
const SLOW_MAX_BYTES: usize = 10;
/// Connections a slow client makes at most (it reconnects after each cut
/// until the normal clients are done).
const SLOW_MAX_ROUNDS: usize = 50;
/// How soon after its first byte a slow connection must be cut.
const CUT_BOUND: Duration = Duration::from_secs(5);
const NORMAL_CLIENTS: usize = 20;
const NORMAL_REQUESTS: usize = 20;
/// How soon every normal request must be answered.
const ANSWER_BOUND: Duration = Duration::from_secs(2);

/// One slow-loris connection: a byte every `SLOW_INTERVAL` until the
/// server disconnects it; the first byte is reported on `started`, if
/// given. Returns how long after the connection's first byte the
/// disconnection (EOF or reset) was seen.
async fn slow_loris_round(addr: SocketAddr, started: Option<&goro::chan::Sender<()>>) -> Duration {
    let s = TcpStream::connect(addr).await.expect("slow client connect");
    let mut first = None;
    let mut buf = [0; 64];
    for _ in 0..SLOW_MAX_BYTES {
        let sent_at = Instant::now();
        let first = *first.get_or_insert(sent_at);
        if s.write_all(b"x").await.is_err() {
            return first.elapsed(); // reset by the server
        }
        if let Some(started) = started.filter(|_| first == sent_at) {
            let _ = started.send(()).await;
        }
        // Take the echoes until the next byte is due, or the server leaves.
        s.set_read_deadline(Some(sent_at + SLOW_INTERVAL));
        loop {
            match s.read(&mut buf).await {
                Ok(0) => return first.elapsed(),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => break,
                Err(_) => return first.elapsed(), // reset
            }
        }
    }
    panic!("a slow client sent {SLOW_MAX_BYTES} bytes {SLOW_INTERVAL:?} apart and was never cut");
}

/// A slow-loris client: reconnects after each cut until `stop` (at least
/// once, at most `SLOW_MAX_ROUNDS` times); reports its first byte on
/// `started`. Returns the cut delays.
async fn slow_loris(
    addr: SocketAddr,
    started: goro::chan::Sender<()>,
    stop: Arc<AtomicBool>,
) -> Vec<Duration> {
    let mut cuts = vec![slow_loris_round(addr, Some(&started)).await];
    while cuts.len() < SLOW_MAX_ROUNDS && !stop.load(Ordering::SeqCst) {
        cuts.push(slow_loris_round(addr, None).await);
    }
    cuts
}

/// A normal client: `NORMAL_REQUESTS` echoes on one connection; returns the
/// slowest answer.
async fn normal_client(addr: SocketAddr, id: usize) -> Duration {
    let s = TcpStream::connect(addr)
        .await
        .expect("normal client connect");
    s.set_nodelay(true).unwrap();
    let mut worst = Duration::ZERO;
    for r in 0..NORMAL_REQUESTS {
        let msg = format!("client {id} request {r}\n");
        let t = Instant::now();
        s.set_deadline(Some(t + ANSWER_BOUND));
        s.write_all(msg.as_bytes())
            .await
            .expect("normal client write");
        let mut back = vec![0; msg.len()];
        if let Err(e) = read_exact(&s, &mut back).await {
            panic!("client {id} request {r}: not answered within {ANSWER_BOUND:?}: {e}");
        }
        assert_eq!(back, msg.as_bytes(), "client {id} request {r}: wrong echo");
        worst = worst.max(t.elapsed());
    }
    worst
}

#[test]
fn slow_loris_clients_are_cut_by_the_read_deadline_while_normal_clients_are_served() {
    let _serial = one_at_a_time();
    within(LIMIT, "slow loris", || {
        let limit = raise_fd_limit(2 * SLOW_CLIENTS as u64 + 4 * NORMAL_CLIENTS as u64 + 256);
        assert!(
            limit >= 2 * SLOW_CLIENTS as u64 + 256,
            "fd limit {limit} too low for {SLOW_CLIENTS} slow clients"
        );
        let server_rt = goro::Runtime::builder().procs(2).build().unwrap();
        let client_rt = goro::Runtime::builder().procs(2).build().unwrap();
        let addr = start_echo_server(&server_rt, READ_TIMEOUT, log_backoff);
        client_rt.block_on(async move {
            let stop = Arc::new(AtomicBool::new(false));
            let (started_tx, started_rx) = goro::chan::bounded(SLOW_CLIENTS);
            let slow: Vec<_> = (0..SLOW_CLIENTS)
                .map(|_| goro::spawn(slow_loris(addr, started_tx.clone(), stop.clone())))
                .collect();
            for i in 0..SLOW_CLIENTS {
                goro::time::timeout(Duration::from_secs(30), started_rx.recv())
                    .await
                    .unwrap_or_else(|_| panic!("only {i} of {SLOW_CLIENTS} slow clients connected within 30 s"))
                    .unwrap();
            }
            // The slow clients now keep coming back until `stop`.
            let normal: Vec<_> = (0..NORMAL_CLIENTS)
                .map(|id| goro::spawn(normal_client(addr, id)))
                .collect();
            let mut worst = Duration::ZERO;
            for (id, h) in normal.into_iter().enumerate() {
                let w = goro::time::timeout(Duration::from_secs(60), h)
                    .await
                    .unwrap_or_else(|_| panic!("normal client {id} did not finish within 60 s"))
                    .unwrap();
                worst = worst.max(w);
            }
            stop.store(true, Ordering::SeqCst);
            let mut cuts = Vec::new();
            for (i, h) in slow.into_iter().enumerate() {
                let c = goro::time::timeout(Duration::from_secs(60), h)
                    .await
                    .unwrap_or_else(|_| panic!("slow client {i} did not finish within 60 s"))
                    .unwrap();
                assert!(!c.is_empty(), "slow client {i} made no connection");
                cuts.extend(c);
            }
            cuts.sort();
            let (fastest, slowest) = (cuts[0], cuts[cuts.len() - 1]);
            eprintln!(
                "normal answers: worst {worst:?}; {} slow connections cut after {fastest:?} to {slowest:?} (median {:?})",
                cuts.len(),
                cuts[cuts.len() / 2]
            );
            assert!(worst <= ANSWER_BOUND, "a normal request took {worst:?}");
            assert!(
                fastest >= READ_TIMEOUT,
                "a slow connection was cut {fastest:?} after its first byte, before the {READ_TIMEOUT:?} deadline"
            );
            assert!(
                slowest <= CUT_BOUND,
                "a slow connection was cut only {slowest:?} after its first byte (deadline {READ_TIMEOUT:?})"
            );
        });
        drop(client_rt);
        drop(server_rt);
    });
}

// ---------------------------------------------------------------------
// Idle keep-alive connections

const IDLE_CONNS: usize = 1000;
/// The window over which nothing may happen.
const IDLE_WINDOW: Duration = Duration::from_secs(2);
/// Process CPU allowed in that window (measurement noise, the test thread).
const IDLE_CPU_BOUND: Duration = Duration::from_millis(20);

#[test]
fn a_server_with_1000_idle_keep_alive_connections_uses_no_cpu() {
    let _serial = one_at_a_time();
    within(LIMIT, "idle keep-alive connections", || {
        // The test's size is its name: with too low an fd limit it fails
        // and says so, rather than proving a smaller claim.
        let limit = raise_fd_limit(2 * IDLE_CONNS as u64 + 256);
        assert!(
            limit >= 2 * IDLE_CONNS as u64 + 256,
            "fd limit {limit} (soft, raised to the hard limit) is too low for \
             {IDLE_CONNS} idle connections (needs {}): raise the hard limit \
             (`ulimit -Hn`) to run this test",
            2 * IDLE_CONNS as u64 + 256
        );
        let conns = IDLE_CONNS;
        let server_rt = goro::Runtime::builder()
            .procs(2)
            .thread_name("idlesrv")
            .build()
            .unwrap();
        let client_rt = goro::Runtime::builder()
            .procs(2)
            .thread_name("idlecli")
            .build()
            .unwrap();
        // A read deadline far beyond the window: every server task waits
        // in a read with its deadline timer armed.
        let addr = start_echo_server(&server_rt, Duration::from_secs(120), log_backoff);
        // Each client makes one round trip, then keeps its connection open.
        let clients = client_rt.block_on(async move {
            let mut clients = Vec::with_capacity(conns);
            for i in 0..conns {
                let s = TcpStream::connect(addr).await.expect("connect");
                s.set_deadline(Some(Instant::now() + Duration::from_secs(10)));
                s.write_all(b"hello").await.unwrap();
                let mut back = [0; 5];
                read_exact(&s, &mut back)
                    .await
                    .unwrap_or_else(|e| panic!("connection {i}: no echo within 10 s: {e}"));
                s.set_deadline(None);
                clients.push(s);
            }
            clients
        });
        let rts = [&server_rt, &client_rt];
        let tids: Vec<u32> = ["idlesrv", "idlecli"]
            .iter()
            .flat_map(|p| threads_named(p))
            .collect();
        wait_until(
            Duration::from_secs(10),
            "every runtime thread asleep",
            || {
                rts.iter().all(|rt| rt.schedtrace().contains("idleprocs=2"))
                    && tids
                        .iter()
                        .all(|&t| thread_state(t).map(|s| s.0) == Some('S'))
            },
        );
        let snapshot = || {
            rts.iter()
                .map(|rt| {
                    let s = rt.stats();
                    (
                        s.parks,
                        s.unparks,
                        s.timer_sleeper_wakes,
                        s.netpolls,
                        s.tasks_polled,
                    )
                })
                .collect::<Vec<_>>()
        };
        // The monitors' last rounds: wait until a 50 ms window is quiet.
        wait_until_quiet(
            Duration::from_secs(10),
            "runtime threads stop waking",
            &snapshot,
        );
        let (stats0, cpu0) = (snapshot(), process_cpu());
        std::thread::sleep(IDLE_WINDOW);
        let (stats1, cpu1) = (snapshot(), process_cpu());
        let cpu = cpu1 - cpu0;
        eprintln!("{conns} idle connections: {cpu:?} of CPU over {IDLE_WINDOW:?}");
        assert!(
            cpu < IDLE_CPU_BOUND,
            "the process used {cpu:?} of CPU over {IDLE_WINDOW:?} with {conns} idle connections (bound {IDLE_CPU_BOUND:?})"
        );
        assert_eq!(
            stats0, stats1,
            "(parks, unparks, sleeper wakes, netpolls, polls) of [server, client] changed while idle"
        );
        drop(clients);
        drop(client_rt);
        drop(server_rt);
    });
}

// ---------------------------------------------------------------------
// Accept back-off

#[test]
fn the_accept_loop_backs_off_under_emfile_and_serves_again() {
    let _serial = one_at_a_time();
    within(LIMIT, "accept back-off", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let addr = start_echo_server(&rt, Duration::from_secs(30), move |e, d| {
            let _ = tx.send((e.raw_os_error(), d));
        });
        // Use up every descriptor under a lowered limit...
        let old = set_soft_fd_limit(512);
        let mut filler = Vec::new();
        loop {
            match std::fs::File::open("/dev/null") {
                Ok(f) => filler.push(f),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                    break;
                }
            }
            assert!(filler.len() < 512, "the limit did not take");
        }
        // ...but the one a client needs: it waits in the backlog (a plain
        // socket: the kernel completes the handshake without an accept),
        // and the server has no descriptor to accept it with.
        filler.pop();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        // The first failures back off 5, 10, 20, 40 ms: no busy loop.
        let mut delays = Vec::new();
        for i in 0..4 {
            let (errno, d) = rx
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("back-off {i} not reported within 10 s"));
            assert_eq!(errno, Some(libc::EMFILE), "back-off {i}");
            delays.push(d.as_millis());
        }
        assert_eq!(delays, [5, 10, 20, 40], "Go's back-off");
        // Descriptors free again: the queued client is served.
        drop(filler);
        set_soft_fd_limit(old);
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        client.write_all(b"ping").unwrap();
        let mut back = [0; 4];
        client
            .read_exact(&mut back)
            .expect("the server answers after the back-off, within 10 s");
        assert_eq!(&back, b"ping");
        drop(rt);
    });
}
