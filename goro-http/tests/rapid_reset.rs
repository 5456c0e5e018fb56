//! HTTP/2 rapid reset (CVE-2023-44487): a client that opens streams and
//! resets them at once is cut off, and does not tie the server up.

mod common;

use common::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

#[test]
fn rapid_reset_streams_get_goaway_and_others_are_still_served() {
    let gauge = Arc::new(Gauge::default());
    let mut s = start(goro_http::Server::builder().build(), app(gauge.clone()));
    let addr = s.addr;
    client(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut send, conn) = h2::client::handshake(tcp).await.unwrap();
        let conn = tokio::spawn(conn);
        let keep = send.clone(); // holds the connection open from our side
                                 // Open and reset streams as fast as the server lets us, each
                                 // asking for a handler that would sleep a minute.
        let mut opened = 0;
        for _ in 0..5000 {
            send = match send.ready().await {
                Ok(s) => s,
                Err(_) => break, // the server closed the connection
            };
            let req = http::Request::get("http://localhost/slow?ms=60000")
                .body(())
                .unwrap();
            match send.send_request(req, true) {
                Ok((_resp, mut stream)) => {
                    stream.send_reset(h2::Reason::CANCEL);
                    opened += 1;
                }
                Err(_) => break,
            }
        }
        // The server ends the connection (GOAWAY with ENHANCE_YOUR_CALM;
        // the client may see it as a broken pipe when its own writes of
        // the burst hit the closed socket first). The client still holds
        // a handle (`keep`), so the connection would otherwise stay open.
        let err = conn
            .await
            .unwrap()
            .expect_err("server closes the connection");
        assert!(
            err.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) || err.is_io(),
            "{err} after {opened} streams"
        );
        drop(keep);

        // Meanwhile a well-behaved client is served at once.
        let t0 = Instant::now();
        let mut c = h2(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        let (st, _, body) = read(c.send_request(get("/")).await.unwrap()).await;
        assert_eq!((st.as_u16(), &body[..]), (200, &b"Hello, World!"[..]));
        assert!(t0.elapsed() < DEADLINE);
    });
    // Reset streams leave no work behind: the handlers that did start
    // (none, or up to the 250 streams the server let in, depending on
    // whether the resets beat the server's accepts) were all dropped with
    // their streams, not left asleep for a minute.
    let t0 = Instant::now();
    while gauge.now.load(Ordering::SeqCst) > 0 {
        assert!(
            t0.elapsed() < DEADLINE,
            "{} handlers of reset streams still running ({} started)",
            gauge.now.load(Ordering::SeqCst),
            gauge.started.load(Ordering::SeqCst)
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.stop();
}
