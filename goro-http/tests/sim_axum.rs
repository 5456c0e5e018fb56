//! An axum app served by goro-http inside a `goro::sim` bubble, over the
//! simulated network, with hyper's client on goro's IO adapter: a slow
//! handler and a client timeout, settled in virtual time.
//!
//! The handler sleeps 30 s and the client gives up after 10 s: in the
//! bubble the timeout fires at exactly 10 s of virtual time; hyper's
//! client then closes the connection (a response it no longer waits for
//! makes it unusable), and hyper's server, seeing the client leave in the
//! middle of a request, drops the handler at that same instant (Go's
//! server cancels the request's context). The shutdown that follows
//! finds nothing in flight and returns at once, and the whole run takes
//! milliseconds of wall time.
//! The bubble itself is the wait's bound: a wait that could never end is
//! reported as a deadlock, not a hang.

use bytes::Bytes;
use goro::context::{Context, ContextError};
use goro::net::hyper::GoroIo;
use goro::net::{TcpListener, TcpStream};
use http_body_util::Empty;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The run's wall-time bound, in debug and release builds alike: the run
/// takes about 1 ms in a debug build and well under that in release (the
/// bubble never sleeps: 40 s of virtual time are jumps of its clock).
const WALL_BOUND: Duration = Duration::from_millis(100);

/// What the bubble saw: the client's wait, when the handler was dropped,
/// and the shutdown's outcome.
#[derive(Debug)]
struct Seen {
    client_waited: Duration,
    timed_out: bool,
    handler_dropped_after: Option<Duration>,
    shutdown: Result<(), ContextError>,
    shutdown_took: Duration,
}

/// Records the virtual time at which it is dropped.
struct DropClock(Arc<Mutex<Option<Instant>>>);

impl Drop for DropClock {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(goro::time::now());
    }
}

async fn slow_handler_and_client_timeout() -> Seen {
    let dropped = Arc::new(Mutex::new(None));
    let app = axum::Router::new().route(
        "/slow",
        axum::routing::get({
            let dropped = dropped.clone();
            || async move {
                let _clock = DropClock(dropped);
                goro::time::sleep(Duration::from_secs(30)).await;
                "too late"
            }
        }),
    );
    let server = goro_http::Server::builder().build();
    let listener = TcpListener::bind("10.0.0.1:80").await.unwrap();
    let serving = goro::spawn({
        let server = server.clone();
        async move { server.serve(listener, app).await }
    });

    let stream = TcpStream::connect("10.0.0.1:80").await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(GoroIo::new(stream))
        .await
        .expect("the HTTP/1 handshake (nothing is sent yet)");
    let client_conn = goro::spawn(conn);

    let t0 = goro::time::now();
    let req = http::Request::get("http://10.0.0.1/slow")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let r = goro::time::timeout(Duration::from_secs(10), sender.send_request(req)).await;
    let client_waited = goro::time::now() - t0;

    // Go's `srv.Shutdown(ctx)`: nothing is in flight any more.
    let t1 = goro::time::now();
    let (ctx, _cancel) = Context::with_timeout(&Context::background(), Duration::from_secs(5));
    let shutdown = server.shutdown(&ctx).await;
    let shutdown_took = goro::time::now() - t1;
    drop(sender);
    serving
        .await
        .expect("the accept loop's task")
        .expect("serve returns Ok after shutdown");
    // The server closed the connection: the client's side ends too.
    let _ = client_conn.await.expect("the client connection's task");
    let handler_dropped_at = *dropped.lock().unwrap();
    Seen {
        client_waited,
        timed_out: r.is_err(),
        handler_dropped_after: handler_dropped_at.map(|t| t - t0),
        shutdown,
        shutdown_took,
    }
}

#[test]
fn a_client_timeout_fires_at_exactly_10s_of_virtual_time_in_milliseconds_of_wall_time() {
    let wall = Instant::now();
    let r = goro::sim::Builder::new()
        .seed(1)
        .procs(2)
        .run(slow_handler_and_client_timeout());
    let wall = wall.elapsed();
    let seen = r.unwrap_or_else(|e| panic!("the bubble did not end cleanly: {e}"));
    assert!(
        seen.timed_out,
        "the 30 s handler answered within 10 s: {seen:?}"
    );
    assert_eq!(seen.client_waited, Duration::from_secs(10), "{seen:?}");
    assert_eq!(
        seen.handler_dropped_after,
        Some(Duration::from_secs(10)),
        "the server drops the handler when the client leaves: {seen:?}"
    );
    assert_eq!(seen.shutdown, Ok(()), "nothing left in flight: {seen:?}");
    assert_eq!(seen.shutdown_took, Duration::ZERO, "{seen:?}");
    eprintln!(
        "sim_axum: wall time {wall:?} ({} build)",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    assert!(
        wall < WALL_BOUND,
        "the bubble took {wall:?} of wall time (bound {WALL_BOUND:?})"
    );
}

#[test]
fn the_same_seed_serves_the_same_schedule_twice() {
    let r = goro::sim::Builder::new()
        .seed(7)
        .procs(4)
        .run_twice(slow_handler_and_client_timeout);
    let seen = r.unwrap_or_else(|e| panic!("two runs of one seed differ, or one failed: {e}"));
    assert_eq!(seen.client_waited, Duration::from_secs(10));
}

/// The server's own deadlines read the bubble's clock: a client that sends
/// nothing is cut off at exactly the read-header timeout.
#[test]
fn the_read_header_timeout_fires_at_exactly_its_virtual_instant() {
    let r = goro::sim::Builder::new().seed(3).procs(2).run(async {
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "hi" }));
        let server = goro_http::Server::builder()
            .read_header_timeout(Duration::from_secs(5))
            .build();
        let listener = TcpListener::bind("10.0.0.1:80").await.unwrap();
        let serving = goro::spawn({
            let server = server.clone();
            async move { server.serve(listener, app).await }
        });
        // Let the clock run first: a deadline taken from the real clock
        // would now lie in the bubble's past and fire at once.
        goro::time::sleep(Duration::from_secs(60)).await;
        let stream = TcpStream::connect("10.0.0.1:80").await.unwrap();
        let t0 = goro::time::now();
        let mut buf = [0u8; 64];
        let n = stream.read(&mut buf).await.unwrap_or(0);
        let cut_after = goro::time::now() - t0;
        let (ctx, _cancel) = Context::with_timeout(&Context::background(), Duration::from_secs(1));
        server.shutdown(&ctx).await.unwrap();
        serving.await.unwrap().unwrap();
        (n, cut_after)
    });
    let (_, cut_after) = r.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cut_after, Duration::from_secs(5));
}
