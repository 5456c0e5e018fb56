//! hyper's HTTP/1 server and client run on goro through `goro::net::hyper`:
//! keep-alive, the header read timeout on goro's timer, the write timeout
//! of `GoroIo`. Run with `cargo test -p goro --features hyper --test net_hyper`.
#![cfg(feature = "hyper")]

mod support;

use bytes::Bytes;
use goro::net::hyper::{GoroExecutor, GoroIo, GoroTimer};
use goro::net::{TcpListener, TcpStream};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::error::Error as _;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::net::LIMIT;
use support::within;

const HELLO: &[u8] = b"Hello, World!";

/// How the test server treats its connections.
#[derive(Clone, Copy)]
struct ServerConfig {
    header_read_timeout: Duration,
    write_timeout: Duration,
    /// The size of every response body (`HELLO` when 0).
    body_len: usize,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            header_read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            body_len: 0,
        }
    }
}

/// How one server connection ended: after how long, with what result.
type Ended = (Duration, Result<(), hyper::Error>);

/// What the server saw: connections accepted, and how each ended.
struct ServerLog {
    accepted: AtomicUsize,
    ended_tx: goro::chan::Sender<Ended>,
}

/// The examples' accept loop: accept with back-off, one task per
/// connection, hyper's HTTP/1 server on goro's IO and timer.
async fn serve(l: TcpListener, cfg: ServerConfig, log: Arc<ServerLog>) {
    let body = if cfg.body_len == 0 {
        Bytes::from_static(HELLO)
    } else {
        Bytes::from(vec![b'x'; cfg.body_len])
    };
    loop {
        let (stream, _) = l
            .accept_with_backoff(|e, d| eprintln!("accept: {e}; retrying in {d:?}"))
            .await
            .expect("accept");
        log.accepted.fetch_add(1, Ordering::SeqCst);
        let (log, body) = (log.clone(), body.clone());
        goro::spawn(async move {
            let t0 = Instant::now();
            let service = service_fn(move |_req: Request<Incoming>| {
                let body = body.clone();
                async move { Ok::<_, Infallible>(Response::new(Full::new(body))) }
            });
            let r = hyper::server::conn::http1::Builder::new()
                .timer(GoroTimer)
                .header_read_timeout(cfg.header_read_timeout)
                .keep_alive(true)
                .serve_connection(
                    GoroIo::new(stream).write_timeout(cfg.write_timeout),
                    service,
                )
                .await;
            let _ = log.ended_tx.send((t0.elapsed(), r)).await;
        });
    }
}

/// A server on a fresh port: its address, its log, and the receiver of
/// its connections' ends.
async fn start_server(
    cfg: ServerConfig,
) -> (SocketAddr, Arc<ServerLog>, goro::chan::Receiver<Ended>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (ended_tx, ended_rx) = goro::chan::bounded(64);
    let log = Arc::new(ServerLog {
        accepted: AtomicUsize::new(0),
        ended_tx,
    });
    goro::spawn(serve(l, cfg, log.clone()));
    (addr, log, ended_rx)
}

/// The next server connection to end, within `limit`; fails with `what`.
async fn next_ended(rx: &goro::chan::Receiver<Ended>, limit: Duration, what: &str) -> Ended {
    goro::time::timeout(limit, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("{what}: no server connection ended within {limit:?}"))
        .expect("the server is running")
}

/// Reads until EOF or an error; returns the bytes and how it ended.
async fn read_to_end(s: &TcpStream) -> (Vec<u8>, io::Result<()>) {
    let mut out = Vec::new();
    let mut buf = [0; 4096];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => return (out, Ok(())),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Err(e)),
        }
    }
}

#[test]
fn a_hyper_client_gets_hello_world_100_times_over_one_keep_alive_connection() {
    const REQUESTS: usize = 100;
    within(LIMIT, "hyper keep-alive round trips", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (addr, log, ended) = start_server(ServerConfig::default()).await;
            let stream = TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(GoroIo::new(stream))
                .await
                .expect("client handshake");
            let client_conn = goro::spawn(conn);
            for i in 0..REQUESTS {
                // hyper's client takes the next request once the connection
                // says it is ready for it.
                sender
                    .ready()
                    .await
                    .unwrap_or_else(|e| panic!("connection not ready for request {i}: {e}"));
                let req = Request::builder()
                    .uri("/")
                    .header("host", addr.to_string())
                    .body(Empty::<Bytes>::new())
                    .unwrap();
                let resp = sender
                    .send_request(req)
                    .await
                    .unwrap_or_else(|e| panic!("request {i}: {e}"));
                assert_eq!(resp.status(), StatusCode::OK, "request {i}");
                let body = resp.into_body().collect().await.unwrap().to_bytes();
                assert_eq!(&body[..], HELLO, "body of request {i}");
            }
            assert_eq!(
                log.accepted.load(Ordering::SeqCst),
                1,
                "all requests on one connection"
            );
            drop(sender); // the client closes; the server sees a clean EOF
            client_conn.await.unwrap().expect("client connection");
            let (_, r) = next_ended(&ended, Duration::from_secs(10), "client closed").await;
            assert!(r.is_ok(), "server connection: {r:?}");
        });
    });
}

#[test]
fn header_read_timeout_closes_a_connection_that_sends_no_request() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    within(LIMIT, "header read timeout", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (addr, _log, ended) = start_server(ServerConfig {
                header_read_timeout: TIMEOUT,
                ..ServerConfig::default()
            })
            .await;
            // A silent client, and one that stalls in the middle of its head.
            // (t0 before connecting: the server's timers start after it.)
            let t0 = Instant::now();
            let silent = TcpStream::connect(addr).await.unwrap();
            let partial = TcpStream::connect(addr).await.unwrap();
            partial
                .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
            for (name, s) in [("silent", &silent), ("partial head", &partial)] {
                s.set_read_deadline(Some(t0 + Duration::from_secs(10)));
                let (got, end) = read_to_end(s).await;
                let waited = t0.elapsed();
                assert!(
                    !matches!(&end, Err(e) if e.kind() == io::ErrorKind::TimedOut),
                    "{name}: the server did not close within 10 s"
                );
                assert!(
                    got.is_empty() || got.starts_with(b"HTTP/1.1 408"),
                    "{name}: unexpected reply {:?}",
                    String::from_utf8_lossy(&got)
                );
                assert!(
                    waited >= TIMEOUT,
                    "{name}: closed after {waited:?}, before the {TIMEOUT:?} timeout"
                );
            }
            for _ in 0..2 {
                let (took, r) = next_ended(&ended, Duration::from_secs(10), "timed out").await;
                let e = r.expect_err("a timed-out connection is an error");
                assert!(e.is_timeout(), "expected hyper's header timeout, got {e:?}");
                assert!(took >= TIMEOUT, "timed out after {took:?}");
            }
        });
    });
}

#[test]
fn header_read_timeout_closes_a_keep_alive_connection_left_idle() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    within(LIMIT, "idle keep-alive", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (addr, _log, _ended) = start_server(ServerConfig {
                header_read_timeout: TIMEOUT,
                ..ServerConfig::default()
            })
            .await;
            let s = TcpStream::connect(addr).await.unwrap();
            // Three requests within the timeout each: the connection lives.
            for i in 0..3 {
                s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await
                    .unwrap();
                let mut got = Vec::new();
                let mut buf = [0; 1024];
                while !got.ends_with(HELLO) {
                    s.set_read_deadline(Some(Instant::now() + Duration::from_secs(10)));
                    match s.read(&mut buf).await {
                        Ok(0) => panic!("request {i}: closed early"),
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) => panic!("request {i}: {e}"),
                    }
                }
                assert!(got.starts_with(b"HTTP/1.1 200"), "request {i}");
            }
            // Then silence: the server closes after the timeout.
            let t0 = Instant::now();
            s.set_read_deadline(Some(t0 + Duration::from_secs(10)));
            let (got, end) = read_to_end(&s).await;
            assert!(
                end.is_ok(),
                "the server did not close the idle connection: {end:?}"
            );
            assert!(
                got.is_empty() || got.starts_with(b"HTTP/1.1 408"),
                "{got:?}"
            );
            // The server's timer started as it finished the last response,
            // a moment before this client read it.
            let waited = t0.elapsed();
            assert!(waited >= TIMEOUT / 2, "closed after {waited:?}");
        });
    });
}

#[test]
fn write_timeout_cuts_a_client_that_stops_reading() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    within(LIMIT, "write timeout", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            // A body far larger than loopback's socket buffers.
            let (addr, _log, ended) = start_server(ServerConfig {
                write_timeout: TIMEOUT,
                body_len: 64 << 20,
                ..ServerConfig::default()
            })
            .await;
            let s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            // Never read: the server's writes stall, then time out.
            let (took, r) =
                next_ended(&ended, Duration::from_secs(20), "stalled response cut").await;
            let e = r.expect_err("a cut connection is an error");
            let io = e
                .source()
                .and_then(|s| s.downcast_ref::<io::Error>())
                .unwrap_or_else(|| panic!("expected an io error inside {e:?}"));
            assert_eq!(io.kind(), io::ErrorKind::TimedOut, "{e:?}");
            assert!(took >= TIMEOUT, "cut after {took:?}, before the timeout");
            drop(s);
        });
    });
}

#[test]
fn goro_timer_reset_moves_a_sleep_earlier_and_later() {
    use hyper::rt::Timer;
    within(LIMIT, "timer reset", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            let t0 = Instant::now();
            let mut s = GoroTimer.sleep(Duration::from_secs(3600));
            // Poll once so that its timer is armed, then move it earlier.
            assert!(futures::poll!(s.as_mut()).is_pending());
            GoroTimer.reset(&mut s, t0 + Duration::from_millis(20));
            s.as_mut().await;
            let first = t0.elapsed();
            assert!(first >= Duration::from_millis(20), "{first:?}");
            assert!(first < Duration::from_secs(60), "{first:?}");
            // An ended sleep reset to later waits again.
            let t1 = Instant::now();
            GoroTimer.reset(&mut s, t1 + Duration::from_millis(20));
            assert!(futures::poll!(s.as_mut()).is_pending(), "reset re-arms");
            s.as_mut().await;
            assert!(t1.elapsed() >= Duration::from_millis(20));
            // A deadline in the past is ready at once.
            GoroTimer.reset(&mut s, Instant::now() - Duration::from_millis(1));
            assert!(futures::poll!(s.as_mut()).is_ready());
        });
    });
}

#[test]
fn goro_executor_runs_what_hyper_hands_it() {
    fn execute<E: hyper::rt::Executor<F>, F>(e: &E, f: F) {
        e.execute(f);
    }
    within(LIMIT, "executor", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (tx, rx) = goro::chan::bounded(0);
            for i in 0..10 {
                let tx = tx.clone();
                execute(&GoroExecutor, async move { tx.send(i).await.unwrap() });
            }
            let mut got: Vec<i32> = Vec::new();
            for _ in 0..10 {
                got.push(
                    goro::time::timeout(Duration::from_secs(10), rx.recv())
                        .await
                        .expect("an executed task ran")
                        .unwrap(),
                );
            }
            got.sort();
            assert_eq!(got, (0..10).collect::<Vec<_>>());
        });
    });
}

// ---------------------------------------------------------------------
// Under load: slow-loris heads, idle keep-alive connections

/// The two tests with 1,000 connections take turns (descriptors).
fn one_heavy_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

const SLOW_CLIENTS: usize = 1000;
/// The server's header read timeout (the example's 5 s, scaled down).
const HEAD_TIMEOUT: Duration = Duration::from_millis(300);
/// A slow-loris client's pause between bytes of its head: *faster* than
/// the timeout, which a per-read deadline would never cut; hyper's header
/// timeout counts from the start of the head.
const TRICKLE: Duration = Duration::from_millis(100);
/// Bytes a slow client trickles before the test gives up on the server.
const TRICKLE_MAX_BYTES: usize = 50;

/// One slow-loris connection; returns how long after connecting the server
/// cut it. Reports on `started` once its head is under way.
async fn slow_head(addr: SocketAddr, started: Option<&goro::chan::Sender<()>>) -> Duration {
    let t0 = Instant::now();
    let s = TcpStream::connect(addr).await.expect("slow client connect");
    if s.write_all(b"GET / HTTP/1.1\r\nX-Slow: ").await.is_err() {
        return t0.elapsed();
    }
    if let Some(started) = started {
        let _ = started.send(()).await;
    }
    let mut buf = [0; 256];
    for _ in 0..TRICKLE_MAX_BYTES {
        if s.write_all(b"z").await.is_err() {
            return t0.elapsed(); // reset
        }
        // The pause before the next byte doubles as the watch for a cut.
        s.set_read_deadline(Some(Instant::now() + TRICKLE));
        loop {
            match s.read(&mut buf).await {
                Ok(0) => return t0.elapsed(),
                Ok(_) => {} // a 408, then EOF
                Err(e) if e.kind() == io::ErrorKind::TimedOut => break,
                Err(_) => return t0.elapsed(),
            }
        }
    }
    panic!("a slow head got {TRICKLE_MAX_BYTES} bytes through, {TRICKLE:?} apart, uncut");
}

#[test]
fn header_read_timeout_cuts_1000_slow_loris_heads_while_hyper_clients_are_served() {
    const NORMAL_CLIENTS: usize = 20;
    const NORMAL_REQUESTS: usize = 20;
    const ANSWER_BOUND: Duration = Duration::from_secs(2);
    const CUT_BOUND: Duration = Duration::from_secs(5);
    let _heavy = one_heavy_test_at_a_time();
    within(Duration::from_secs(120), "slow-loris heads", || {
        let limit = support::net::raise_fd_limit(2 * SLOW_CLIENTS as u64 + 256);
        assert!(
            limit >= 2 * SLOW_CLIENTS as u64 + 128,
            "fd limit {limit} too low"
        );
        let server_rt = goro::Runtime::builder().procs(2).build().unwrap();
        let client_rt = goro::Runtime::builder().procs(2).build().unwrap();
        let (addr, _log, _ended) = server_rt.block_on(start_server(ServerConfig {
            header_read_timeout: HEAD_TIMEOUT,
            ..ServerConfig::default()
        }));
        client_rt.block_on(async move {
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (started_tx, started_rx) = goro::chan::bounded(SLOW_CLIENTS);
            let slow: Vec<_> = (0..SLOW_CLIENTS)
                .map(|_| {
                    let (started, stop) = (started_tx.clone(), stop.clone());
                    goro::spawn(async move {
                        // Back again after each cut, until the normal
                        // clients are done (at most 50 connections).
                        let mut cuts = vec![slow_head(addr, Some(&started)).await];
                        while cuts.len() < 50 && !stop.load(Ordering::SeqCst) {
                            cuts.push(slow_head(addr, None).await);
                        }
                        cuts
                    })
                })
                .collect();
            for i in 0..SLOW_CLIENTS {
                goro::time::timeout(Duration::from_secs(30), started_rx.recv())
                    .await
                    .unwrap_or_else(|_| panic!("only {i} slow clients started within 30 s"))
                    .unwrap();
            }
            let normal: Vec<_> = (0..NORMAL_CLIENTS)
                .map(|id| {
                    goro::spawn(async move {
                        let s = TcpStream::connect(addr).await.expect("connect");
                        let (mut sender, conn) =
                            hyper::client::conn::http1::handshake(GoroIo::new(s))
                                .await
                                .expect("handshake");
                        goro::spawn(conn);
                        let mut worst = Duration::ZERO;
                        for r in 0..NORMAL_REQUESTS {
                            let t = Instant::now();
                            let req = Request::get("/")
                                .header("host", "x")
                                .body(Empty::<Bytes>::new())
                                .unwrap();
                            let round = async {
                                sender.ready().await?;
                                let resp = sender.send_request(req).await?;
                                resp.into_body().collect().await.map(|b| b.to_bytes())
                            };
                            let body = goro::time::timeout(ANSWER_BOUND, round)
                                .await
                                .unwrap_or_else(|_| {
                                    panic!("client {id} request {r}: no answer within {ANSWER_BOUND:?}")
                                })
                                .unwrap_or_else(|e| panic!("client {id} request {r}: {e}"));
                            assert_eq!(&body[..], HELLO);
                            worst = worst.max(t.elapsed());
                        }
                        worst
                    })
                })
                .collect();
            let mut worst = Duration::ZERO;
            for h in normal {
                worst = worst.max(h.await.unwrap());
            }
            stop.store(true, Ordering::SeqCst);
            let mut cuts = Vec::new();
            for (i, h) in slow.into_iter().enumerate() {
                cuts.extend(
                    goro::time::timeout(Duration::from_secs(60), h)
                        .await
                        .unwrap_or_else(|_| panic!("slow client {i} not done within 60 s"))
                        .unwrap(),
                );
            }
            cuts.sort();
            let (fastest, slowest) = (cuts[0], cuts[cuts.len() - 1]);
            eprintln!(
                "hyper: normal answers worst {worst:?}; {} slow heads cut after {fastest:?} to {slowest:?}",
                cuts.len()
            );
            assert!(worst <= ANSWER_BOUND, "a normal request took {worst:?}");
            assert!(fastest >= HEAD_TIMEOUT, "a slow head was cut after {fastest:?}");
            assert!(slowest <= CUT_BOUND, "a slow head was cut only after {slowest:?}");
        });
    });
}

#[test]
fn idle_hyper_keep_alive_connections_wake_nothing() {
    const CONNS: usize = 1000;
    let _heavy = one_heavy_test_at_a_time();
    within(Duration::from_secs(120), "idle hyper connections", || {
        let limit = support::net::raise_fd_limit(2 * CONNS as u64 + 256);
        let conns = CONNS.min((limit as usize).saturating_sub(256) / 2);
        assert!(conns >= 100, "fd limit {limit} too low for this test");
        let server_rt = goro::Runtime::builder()
            .procs(2)
            .thread_name("hidlesrv")
            .build()
            .unwrap();
        // Every connection waits for its next head with hyper's header
        // timer armed on goro's heaps, far beyond the window.
        let (addr, _log, _ended) = server_rt.block_on(start_server(ServerConfig {
            header_read_timeout: Duration::from_secs(120),
            ..ServerConfig::default()
        }));
        // Plain blocking clients: nothing of theirs runs on a runtime.
        let mut clients = Vec::with_capacity(conns);
        for i in 0..conns {
            use std::io::{Read as _, Write as _};
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut got = Vec::new();
            let mut buf = [0; 512];
            while !got.ends_with(HELLO) {
                match c.read(&mut buf) {
                    Ok(0) => panic!("connection {i} closed"),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) => panic!("connection {i}: no answer within 10 s: {e}"),
                }
            }
            clients.push(c);
        }
        let tids = support::threads_named("hidlesrv");
        support::wait_until(Duration::from_secs(10), "server threads asleep", || {
            server_rt.schedtrace().contains("idleprocs=2")
                && tids
                    .iter()
                    .all(|&t| support::thread_state(t).map(|s| s.0) == Some('S'))
        });
        let snapshot = || support::activity(&server_rt, &tids);
        support::wait_until_quiet(
            Duration::from_secs(10),
            "server threads stop waking",
            &snapshot,
        );
        let before = snapshot();
        std::thread::sleep(Duration::from_secs(1));
        assert_eq!(
            before,
            snapshot(),
            "(parks, unparks, sleeper wakes, netpolls, polls, context switches) changed \
             with {conns} idle hyper connections"
        );
        drop(clients);
    });
}
