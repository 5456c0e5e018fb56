//! Go's `testing/synctest` example `TestHTTPTransport100Continue`
//! (`src/testing/synctest/example_test.go`), ported to goro: an
//! `Expect: 100-continue` exchange checked step by step with
//! `goro::sim::wait()` where Go calls `synctest.Wait()`.
//!
//! Go's example tests the client side (`http.Transport` must not send the
//! body before the server's `100 Continue`) and plays the server by hand
//! over a `net.Pipe`, because "goroutines blocked on network I/O prevent a
//! synctest bubble from becoming idle". In a goro bubble sockets are
//! simulated and a task blocked on one is durably blocked, so the port
//! uses the real thing: goro-http (hyper) serves an axum app on a
//! `goro::net::TcpListener`, and the test plays the client by hand over a
//! `goro::net::TcpStream`, checking the server's side of the rule: it
//! sends `100 Continue` only when the handler asks for the body, and no
//! byte of the body reaches the handler before the client, having seen
//! the `100 Continue`, sends it.
//!
//! Each step's wait is `goro::sim::wait()`, which returns once every other
//! task is durably blocked; a wait that could never end ends the bubble
//! with a deadlock report instead of hanging the test.

use goro::context::Context;
use goro::net::{TcpListener, TcpStream};
use http_body_util::BodyExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Shared = Arc<Mutex<Vec<u8>>>;

fn text(b: &Shared) -> String {
    String::from_utf8_lossy(&b.lock().unwrap()).into_owned()
}

/// Serves `app` on 10.0.0.1:80; returns the server and its accept loop.
async fn serve(app: axum::Router) -> (goro_http::Server, goro::JoinHandle<std::io::Result<()>>) {
    let server = goro_http::Server::builder().build();
    let listener = TcpListener::bind("10.0.0.1:80").await.unwrap();
    let serving = goro::spawn({
        let server = server.clone();
        async move { server.serve(listener, app).await }
    });
    (server, serving)
}

/// Copies everything the server sends on `c` into `into` (Go's
/// `io.Copy(&gotBody, ...)`), until it closes the connection.
fn copy_responses(c: Arc<TcpStream>, into: Shared) -> goro::JoinHandle<()> {
    goro::spawn(async move {
        let mut buf = [0; 1024];
        while let Ok(n @ 1..) = c.read(&mut buf).await {
            into.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    })
}

/// Ends the exchange: the client closes its side, the server (seeing end
/// of file) closes the connection, and the server shuts down.
async fn finish(
    c: Arc<TcpStream>,
    reader: goro::JoinHandle<()>,
    server: goro_http::Server,
    serving: goro::JoinHandle<std::io::Result<()>>,
) {
    c.shutdown(std::net::Shutdown::Write).unwrap();
    reader.await.expect("the response reader");
    let (ctx, _cancel) = Context::with_timeout(&Context::background(), Duration::from_secs(5));
    server.shutdown(&ctx).await.expect("nothing left in flight");
    serving
        .await
        .unwrap()
        .expect("serve returns Ok after shutdown");
}

const HEAD: &[u8] = b"PUT / HTTP/1.1\r\nHost: test.tld\r\nExpect: 100-continue\r\n\
                      Content-Length: 12\r\n\r\n";
const BODY: &[u8] = b"request body";

#[test]
fn the_body_is_sent_and_read_only_after_100_continue() {
    let r = goro::sim::Builder::new().seed(1).procs(2).run(async {
        // The handler copies the request body, as it arrives, into a
        // buffer the test reads (Go's `go io.Copy(&gotBody, req.Body)`).
        let got_body: Shared = Arc::default();
        let app = axum::Router::new().route(
            "/",
            axum::routing::put({
                let got_body = got_body.clone();
                |mut body: axum::body::Body| async move {
                    while let Some(frame) = body.frame().await {
                        if let Ok(data) = frame.unwrap().into_data() {
                            got_body.lock().unwrap().extend_from_slice(&data);
                        }
                    }
                    "done"
                }
            }),
        );
        let (server, serving) = serve(app).await;
        let c = Arc::new(TcpStream::connect("10.0.0.1:80").await.unwrap());
        let from_server: Shared = Arc::default();
        let reader = copy_responses(c.clone(), from_server.clone());

        // Send the request headers only, then wait for every task to block.
        c.write_all(HEAD).await.unwrap();
        goro::sim::wait().await;
        assert_eq!(
            text(&from_server),
            "HTTP/1.1 100 Continue\r\n\r\n",
            "the server asks for the body once its handler reads it"
        );
        assert_eq!(
            text(&got_body),
            "",
            "before the client sends the body, the handler read none of it"
        );

        // Having seen "100 Continue", send the body.
        c.write_all(BODY).await.unwrap();
        goro::sim::wait().await;
        assert_eq!(text(&got_body), "request body", "after 100 Continue");
        let resp = text(&from_server);
        assert!(
            resp.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")
                && resp.ends_with("done"),
            "the final response follows the interim one: {resp:?}"
        );
        finish(c, reader, server, serving).await;
    });
    r.unwrap_or_else(|e| panic!("the bubble did not end cleanly: {e}"));
}

#[test]
fn a_handler_that_never_reads_the_body_gets_no_100_continue_sent() {
    let r = goro::sim::Builder::new().seed(2).procs(2).run(async {
        let app = axum::Router::new().route("/", axum::routing::put(|| async { "not interested" }));
        let (server, serving) = serve(app).await;
        let c = Arc::new(TcpStream::connect("10.0.0.1:80").await.unwrap());
        let from_server: Shared = Arc::default();
        let reader = copy_responses(c.clone(), from_server.clone());

        c.write_all(HEAD).await.unwrap();
        goro::sim::wait().await;
        let resp = text(&from_server);
        assert!(
            resp.starts_with("HTTP/1.1 200 OK\r\n") && resp.ends_with("not interested"),
            "the final response comes without a 100 Continue (the body is not wanted): {resp:?}"
        );
        finish(c, reader, server, serving).await;
    });
    r.unwrap_or_else(|e| panic!("the bubble did not end cleanly: {e}"));
}
