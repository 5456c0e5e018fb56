//! goro-http against real clients (hyper's, on a tokio runtime of the
//! test's own), on 127.0.0.1. Every wait has a deadline.

mod common;

use common::*;
use goro::context::{Context, ContextError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn plain(builder: goro_http::Builder) -> (TestServer, Arc<Gauge>) {
    let gauge = Arc::new(Gauge::default());
    (start(builder.build(), app(gauge.clone())), gauge)
}

fn tls(
    builder: goro_http::Builder,
) -> (
    TestServer,
    Arc<Gauge>,
    rustls_pki_types::CertificateDer<'static>,
) {
    let (cert, key, der) = self_signed();
    let cfg = goro_http::tls::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    let gauge = Arc::new(Gauge::default());
    (
        start(builder.tls(cfg).build(), app(gauge.clone())),
        gauge,
        der,
    )
}

/// Reads until the server closes the connection (or errors); returns what
/// came and how long it took.
async fn read_to_close<T: tokio::io::AsyncRead + Unpin>(io: &mut T) -> (Vec<u8>, Duration) {
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return (got, t0.elapsed()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn http1_and_h2c_round_trips() {
    let (mut s, _) = plain(goro_http::Server::builder());
    let addr = s.addr;
    client(async move {
        let mut c = h1(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        let (st, v, body) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!((st.as_u16(), v), (200, http::Version::HTTP_11));
        assert_eq!(body, "Hello, World!");
        // Keep-alive: a second request on the same connection, with JSON.
        let req = hyper::Request::post("http://localhost/json")
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(r#"{"n":41}"#)))
            .unwrap();
        let (st, _, body) = read(c.send_request(req).await.unwrap()).await;
        assert_eq!((st.as_u16(), &body[..]), (200, &br#"{"n":42}"#[..]));

        let mut c = h2(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        let (st, v, body) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!((st.as_u16(), v), (200, http::Version::HTTP_2));
        assert_eq!(body, "Hello, World!");
    });
    s.stop();
}

#[test]
fn tls_alpn_picks_h2_or_http1() {
    let (mut s, _, ca) = tls(goro_http::Server::builder());
    let addr = s.addr;
    client(async move {
        let io = tls_connect(addr, &ca, &[b"h2", b"http/1.1"]).await;
        assert_eq!(io.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let mut c = h2(io).await;
        let (st, v, body) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!(
            (st.as_u16(), v, &body[..]),
            (200, http::Version::HTTP_2, &b"Hello, World!"[..])
        );

        let io = tls_connect(addr, &ca, &[b"http/1.1"]).await;
        assert_eq!(io.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        let mut c = h1(io).await;
        let (st, v, _) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!((st.as_u16(), v), (200, http::Version::HTTP_11));

        // No ALPN at all: HTTP/1.1, as Go.
        let io = tls_connect(addr, &ca, &[]).await;
        assert_eq!(io.get_ref().1.alpn_protocol(), None);
        let mut c = h1(io).await;
        let (st, _, body) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!((st.as_u16(), &body[..]), (200, &b"Hello, World!"[..]));
    });
    s.stop();
}

#[test]
fn a_hundred_streams_multiplex_on_one_h2_tls_connection() {
    let (mut s, gauge, ca) = tls(goro_http::Server::builder());
    let addr = s.addr;
    let t0 = Instant::now();
    client(async move {
        let c = h2(tls_connect(addr, &ca, &[b"h2"]).await).await;
        let mut reqs = Vec::new();
        for _ in 0..100 {
            let mut c = c.clone();
            reqs.push(tokio::spawn(async move {
                read(c.send_request(get("/slow?ms=1000")).await.unwrap()).await
            }));
        }
        for r in reqs {
            let (st, v, body) = r.await.unwrap();
            assert_eq!(
                (st.as_u16(), v, &body[..]),
                (200, http::Version::HTTP_2, &b"slow done"[..])
            );
        }
    });
    // One connection, 100 handlers asleep at once: multiplexed, not queued.
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 100);
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    s.stop();
}

#[test]
fn graceful_shutdown_finishes_in_flight_and_refuses_new() {
    let (s, gauge) = plain(goro_http::Server::builder());
    let addr = s.addr;
    let crt = client_rt();
    // A slow request in flight, on HTTP/1 and on HTTP/2.
    let (slow1, slow2) =
        crt.block_on(async {
            let mut c1 = h1(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
            let mut c2 = h2(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
            let a = tokio::spawn(async move {
                read(c1.send_request(get("/slow?ms=800")).await.unwrap()).await
            });
            let b = tokio::spawn(async move {
                read(c2.send_request(get("/slow?ms=800")).await.unwrap()).await
            });
            let t0 = Instant::now();
            while gauge.started.load(Ordering::SeqCst) < 2 {
                assert!(t0.elapsed() < DEADLINE, "handlers never started");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (a, b)
        });
    // Shut down on goro; the accept loop returns at once.
    let server = s.server.clone();
    let shutdown = s.rt.spawn(async move {
        let (ctx, _) = Context::with_timeout(&Context::background(), DEADLINE);
        server.shutdown(&ctx).await
    });
    let serving = s.serving;
    s.rt.block_on(async {
        goro::time::timeout(DEADLINE, serving.unwrap())
            .await
            .expect("accept loop returns")
            .unwrap()
            .unwrap();
    });
    crt.block_on(async {
        tokio::time::timeout(DEADLINE, async {
            // New connections are refused: the listener is closed.
            let e = tokio::net::TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
            // The in-flight requests finish.
            for r in [slow1, slow2] {
                let (st, _, body) = r.await.unwrap();
                assert_eq!((st.as_u16(), &body[..]), (200, &b"slow done"[..]));
            }
        })
        .await
        .expect("deadline");
    });
    let r =
        s.rt.block_on(async { goro::time::timeout(DEADLINE, shutdown).await });
    assert_eq!(r.expect("shutdown returns").unwrap(), Ok(()));
}

#[test]
#[allow(clippy::async_yields_async)] // hands the request's task out
fn shutdown_closes_what_is_left_when_its_context_is_done() {
    let (s, gauge) = plain(goro_http::Server::builder());
    let addr = s.addr;
    let crt = client_rt();
    let slow = crt.block_on(async {
        let mut c = h1(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        let a = tokio::spawn(async move { c.send_request(get("/slow?ms=60000")).await });
        let t0 = Instant::now();
        while gauge.started.load(Ordering::SeqCst) < 1 {
            assert!(t0.elapsed() < DEADLINE, "handler never started");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        a
    });
    let server = s.server.clone();
    let r = s.rt.block_on(async move {
        let (ctx, _) = Context::with_timeout(&Context::background(), Duration::from_millis(100));
        goro::time::timeout(DEADLINE, server.shutdown(&ctx)).await
    });
    assert_eq!(
        r.expect("shutdown returns"),
        Err(ContextError::DeadlineExceeded)
    );
    crt.block_on(async {
        let r = tokio::time::timeout(DEADLINE, slow)
            .await
            .expect("deadline")
            .unwrap();
        assert!(r.is_err(), "the connection was closed under the request");
    });
}

#[test]
fn oversized_header_gets_431() {
    let (mut s, _) = plain(goro_http::Server::builder().max_header_bytes(16 << 10));
    let addr = s.addr;
    client(async move {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let big = "a".repeat(64 << 10);
        let req = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n");
        // The server may answer and close before taking all of it.
        let _ = c.write_all(req.as_bytes()).await;
        let (resp, _) = read_to_close(&mut c).await;
        let resp = String::from_utf8_lossy(&resp);
        assert!(resp.starts_with("HTTP/1.1 431"), "{resp}");

        // A head within the limit is served.
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let ok = "a".repeat(8 << 10);
        let req = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Ok: {ok}\r\nConnection: close\r\n\r\n");
        c.write_all(req.as_bytes()).await.unwrap();
        let (resp, _) = read_to_close(&mut c).await;
        assert!(resp.starts_with(b"HTTP/1.1 200"));
    });
    s.stop();
}

#[test]
fn read_header_timeout_cuts_slow_loris_in_clear_and_over_tls() {
    let rht = Duration::from_millis(300);
    let (mut p, _) = plain(goro_http::Server::builder().read_header_timeout(rht));
    let (mut t, _, ca) = tls(goro_http::Server::builder().read_header_timeout(rht));
    let (paddr, taddr) = (p.addr, t.addr);
    client(async move {
        // Half a request head, then nothing.
        let mut c = tokio::net::TcpStream::connect(paddr).await.unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        let (_, took) = read_to_close(&mut c).await;
        assert!(
            took >= rht - Duration::from_millis(50) && took < DEADLINE,
            "{took:?}"
        );

        // Connected, never a byte (protocol detection waits): cut too.
        let mut c = tokio::net::TcpStream::connect(paddr).await.unwrap();
        let (got, took) = read_to_close(&mut c).await;
        assert!(got.is_empty() && took < DEADLINE);

        // h2c preface, then nothing: no first request, cut.
        let mut c = tokio::net::TcpStream::connect(paddr).await.unwrap();
        c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        let (_, took) = read_to_close(&mut c).await;
        assert!(took < DEADLINE);

        // Over TLS: the handshake, then half a head.
        let mut c = tls_connect(taddr, &ca, &[b"http/1.1"]).await;
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        let (_, took) = read_to_close(&mut c).await;
        assert!(took < DEADLINE, "{took:?}");

        // TCP connected, TLS never started: cut.
        let mut c = tokio::net::TcpStream::connect(taddr).await.unwrap();
        let (got, took) = read_to_close(&mut c).await;
        assert!(got.is_empty() && took < DEADLINE);

        // A well-behaved client is served, and keeps its connection past
        // the first request's deadline (it is cleared at the request).
        let mut c = h1(tls_connect(taddr, &ca, &[b"http/1.1"]).await).await;
        let (st, _, _) = read(c.send_request(get("/slow?ms=500")).await.unwrap()).await;
        assert_eq!(st.as_u16(), 200);
    });
    p.stop();
    t.stop();
}

#[test]
fn idle_timeout_closes_an_idle_h2_connection() {
    let (mut s, _) = plain(goro_http::Server::builder().idle_timeout(Duration::from_millis(200)));
    let addr = s.addr;
    client(async move {
        let (mut send, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tokio::net::TcpStream::connect(addr).await.unwrap()),
        )
        .await
        .unwrap();
        let conn = tokio::spawn(conn);
        let (st, _, _) = read(send.send_request(get("/slow?ms=400")).await.unwrap()).await;
        assert_eq!(
            st.as_u16(),
            200,
            "a request longer than the idle timeout is not cut"
        );
        // Then idle: the server sends GOAWAY and closes; the client's
        // connection future ends.
        let t0 = Instant::now();
        conn.await.unwrap().unwrap();
        assert!(t0.elapsed() < DEADLINE);
    });
    s.stop();
}

#[test]
fn bad_pem_errors_name_the_file_and_the_form() {
    let dir = std::env::temp_dir().join(format!("goro-http-pem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key, _) = self_signed();
    let (cert_f, key_f, junk_f) = (
        dir.join("cert.pem"),
        dir.join("key.pem"),
        dir.join("junk.pem"),
    );
    std::fs::write(&cert_f, &cert).unwrap();
    std::fs::write(&key_f, &key).unwrap();
    std::fs::write(&junk_f, "hello, not PEM\n").unwrap();

    assert!(goro_http::tls::from_pem_files(&cert_f, &key_f).is_ok());

    let e = goro_http::tls::from_pem_files(&junk_f, &key_f)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&*junk_f.to_string_lossy()) && e.contains("BEGIN CERTIFICATE"),
        "{e}"
    );

    // The certificate given as the key: no key block in it.
    let e = goro_http::tls::from_pem_files(&cert_f, &cert_f)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("private key file") && e.contains("BEGIN PRIVATE KEY"),
        "{e}"
    );

    let e = goro_http::tls::from_pem_files(dir.join("missing.pem"), &key_f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.pem"), "{e}");

    // A key of another certificate.
    let (_, other_key, _) = self_signed();
    std::fs::write(&junk_f, other_key).unwrap();
    let e = goro_http::tls::from_pem_files(&cert_f, &junk_f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not fit"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn close_ends_in_flight_requests_at_once() {
    let (s, gauge) = plain(goro_http::Server::builder());
    let addr = s.addr;
    let crt = client_rt();
    let slow = crt.block_on(async {
        let mut c = h2(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        let a = tokio::spawn(async move { c.send_request(get("/slow?ms=60000")).await.is_err() });
        let t0 = Instant::now();
        while gauge.started.load(Ordering::SeqCst) < 1 {
            assert!(t0.elapsed() < DEADLINE, "handler never started");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (a,)
    });
    let server = s.server.clone();
    let t0 = Instant::now();
    s.rt.block_on(async move { goro::time::timeout(DEADLINE, server.close()).await })
        .expect("close returns");
    assert!(t0.elapsed() < DEADLINE);
    crt.block_on(async {
        let failed = tokio::time::timeout(DEADLINE, slow.0)
            .await
            .expect("deadline")
            .unwrap();
        assert!(failed, "the request's connection was closed");
        let e = tokio::net::TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    });
}

#[test]
fn write_timeout_cuts_a_client_that_stops_reading_in_clear_and_over_tls() {
    let wt = Duration::from_millis(200);
    let (mut p, _) = plain(goro_http::Server::builder().write_timeout(wt));
    let (mut t, _, ca) = tls(goro_http::Server::builder().write_timeout(wt));
    let (paddr, taddr) = (p.addr, t.addr);
    /// Asks for the big body, reads none of it for a while, then reads
    /// what is left: the server must have given up part way.
    async fn stall<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut io: T) {
        io.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (got, _) = read_to_close(&mut io).await;
        assert!(got.starts_with(b"HTTP/1.1 200"));
        assert!(got.len() < BIG, "got all {} bytes: not cut", got.len());
    }
    client(async move {
        stall(tokio::net::TcpStream::connect(paddr).await.unwrap()).await;
        stall(tls_connect(taddr, &ca, &[b"http/1.1"]).await).await;
    });
    p.stop();
    t.stop();
}
