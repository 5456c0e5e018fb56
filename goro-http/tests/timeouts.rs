//! The TLS handshake's deadline, Go's `ReadTimeout`, and a streaming
//! response that is not idle, against real clients on 127.0.0.1. Every
//! wait has a deadline.

mod common;

use common::*;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

fn tls_server(
    builder: goro_http::Builder,
) -> (TestServer, rustls_pki_types::CertificateDer<'static>) {
    let (cert, key, der) = self_signed();
    let cfg = goro_http::tls::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    let gauge = Arc::new(Gauge::default());
    (start(builder.tls(cfg).build(), app(gauge)), der)
}

/// The first 64 bytes of a ClientHello whose record says 512 follow.
fn half_a_client_hello() -> Vec<u8> {
    let mut b = vec![0x16, 0x03, 0x01, 0x02, 0x00]; // handshake record, 512 bytes
    b.extend_from_slice(&[0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]); // ClientHello, TLS 1.2
    b.extend_from_slice(&[0x42; 53]); // random and more, cut short
    b
}

#[test]
fn the_tls_handshake_is_bounded_by_read_header_timeout() {
    let limit = Duration::from_millis(300);
    let (mut s, ca) = tls_server(goro_http::Server::builder().read_header_timeout(limit));
    let addr = s.addr;
    client(async move {
        // Half a ClientHello, then silence.
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(&half_a_client_hello()).await.unwrap();
        let (got, took) = read_to_close(&mut c).await;
        assert!(got.is_empty(), "no ServerHello for half a ClientHello");
        assert!(
            took >= limit - Duration::from_millis(50) && took < DEADLINE,
            "cut after {took:?}, limit {limit:?}"
        );
        // Connected, never a byte.
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (_, took) = read_to_close(&mut c).await;
        assert!(took < DEADLINE, "{took:?}");
        // A client that completes its handshake is served.
        let mut c = h1(tls_connect(addr, &ca, &[b"http/1.1"]).await).await;
        let (st, _, _) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!(st.as_u16(), 200);
    });
    s.stop();
}

#[test]
fn the_tls_handshake_has_the_shortest_timeout_set_as_go() {
    // Only a write timeout: no read deadline is armed at accept, yet the
    // handshake is bounded (Go's tlsHandshakeTimeout: the shortest of the
    // read-header, read and write timeouts).
    let limit = Duration::from_millis(300);
    let (mut s, _) = tls_server(goro_http::Server::builder().write_timeout(limit));
    let addr = s.addr;
    client(async move {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(&half_a_client_hello()).await.unwrap();
        let (_, took) = read_to_close(&mut c).await;
        assert!(
            took >= limit - Duration::from_millis(50) && took < DEADLINE,
            "cut after {took:?}, limit {limit:?}"
        );
    });
    s.stop();
}

#[test]
fn read_timeout_cuts_a_slow_request_body_but_not_a_slow_handler() {
    let rt = Duration::from_millis(300);
    let gauge = Arc::new(Gauge::default());
    let mut s = start(
        goro_http::Server::builder().read_timeout(rt).build(),
        app(gauge),
    );
    let addr = s.addr;
    client(async move {
        // A head promising 100 bytes of body, 10 sent, then silence: the
        // handler's body read fails and the connection closes.
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(
            b"POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"n\": 1   ",
        )
        .await
        .unwrap();
        let (got, took) = read_to_close(&mut c).await;
        assert!(
            took >= rt - Duration::from_millis(50) && took < DEADLINE,
            "cut after {took:?}, read timeout {rt:?}"
        );
        assert!(
            !got.starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&got)
        );

        // A handler slower than the read timeout, with its body read: served,
        // and the connection lives on for a second request.
        let mut c = h1(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        for _ in 0..2 {
            let (st, _, body) = read(c.send_request(get("/slow?ms=700")).await.unwrap()).await;
            assert_eq!((st.as_u16(), &body[..]), (200, &b"slow done"[..]));
        }
        // A download longer than the read timeout is not cut by it.
        let (st, _, body) = read(c.send_request(get("/stream?ms=100&n=8")).await.unwrap()).await;
        assert_eq!((st.as_u16(), body.len()), (200, 8 * 6));
    });
    s.stop();
}

#[test]
fn a_streaming_response_is_not_idle() {
    // Idle timeout 200 ms; a response whose body streams for 800 ms. Were
    // the connection idle once the head is out, the idle timer would shut
    // it down (GOAWAY) under the stream, and the request after it, sent at
    // once on the same connection, would fail.
    let (mut s, ca) =
        tls_server(goro_http::Server::builder().idle_timeout(Duration::from_millis(200)));
    let addr = s.addr;
    client(async move {
        for alpn in [&b"h2"[..], &b"http/1.1"[..]] {
            let io = tls_connect(addr, &ca, &[alpn]).await;
            let label = String::from_utf8_lossy(alpn).to_string();
            if alpn == b"h2" {
                let mut c = h2(io).await;
                let (st, _, body) =
                    read(c.send_request(get("/stream?ms=100&n=8")).await.unwrap()).await;
                assert_eq!((st.as_u16(), body.len()), (200, 48), "{label}");
                let r = c.send_request(get("/")).await;
                assert!(
                    r.is_ok(),
                    "{label}: the connection was shut down mid-stream"
                );
            } else {
                let mut c = h1(io).await;
                let (st, _, body) =
                    read(c.send_request(get("/stream?ms=100&n=8")).await.unwrap()).await;
                assert_eq!((st.as_u16(), body.len()), (200, 48), "{label}");
                let r = c.send_request(get("/")).await;
                assert!(
                    r.is_ok(),
                    "{label}: the connection was shut down mid-stream"
                );
            }
        }
    });
    s.stop();
}
