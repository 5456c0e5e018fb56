//! tokio's io traits on goro's sockets (feature `tokio-io`): code written
//! against them runs on goro's poller with no tokio runtime anywhere.
#![cfg(all(feature = "tokio-io", feature = "hyper"))]

use goro::net::{TcpListener, TcpStream};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

fn rt() -> goro::Runtime {
    goro::Runtime::builder().procs(2).build().unwrap()
}

/// Fails the test if `f` takes longer than `d` (each wait has a deadline).
async fn within<T>(d: Duration, f: impl std::future::Future<Output = T>) -> T {
    goro::time::timeout(d, f).await.expect("timed out")
}

#[test]
fn hyper_util_tokio_io_serves_http1_on_goro_without_a_tokio_runtime() {
    rt().block_on(async {
        assert!(
            tokio::runtime::Handle::try_current().is_err(),
            "no tokio runtime here"
        );
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = goro::spawn(async move {
            for _ in 0..2 {
                let (s, _) = l.accept().await.unwrap();
                goro::spawn(async move {
                    let svc = service_fn(|req: Request<Incoming>| async move {
                        assert!(tokio::runtime::Handle::try_current().is_err());
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        Ok::<_, Infallible>(Response::new(Full::new(body)))
                    });
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(s), svc)
                        .await
                        .unwrap();
                });
            }
        });
        for i in 0..2 {
            let c = TcpStream::connect(addr).await.unwrap();
            let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(c))
                .await
                .unwrap();
            goro::spawn(conn);
            let req = Request::post("/")
                .header("host", "x")
                .body(Full::new(Bytes::from(format!("echo {i}"))))
                .unwrap();
            let resp = within(Duration::from_secs(10), send.send_request(req))
                .await
                .unwrap();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, format!("echo {i}").as_bytes());
        }
        within(Duration::from_secs(10), server).await.unwrap();
    });
}

#[test]
fn halves_and_deadlines_work_through_the_tokio_traits() {
    rt().block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let (r, mut w) = s.into_split();
        let mut r = r;

        // Write through the owned write half, read on the client.
        let n = poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"ping"))
            .await
            .unwrap();
        assert_eq!(n, 4);
        let mut raw = [0u8; 8];
        let mut buf = ReadBuf::new(&mut raw);
        let mut cr = &c;
        while buf.filled().len() < 4 {
            within(
                Duration::from_secs(10),
                poll_fn(|cx| Pin::new(&mut cr).poll_read(cx, &mut buf)),
            )
            .await
            .unwrap();
        }
        assert_eq!(buf.filled(), b"ping");

        // A read deadline on the read half fails a read that would wait.
        r.set_read_deadline(Some(Instant::now() + Duration::from_millis(20)));
        let mut raw = [0u8; 8];
        let mut buf = ReadBuf::new(&mut raw);
        let e = within(
            Duration::from_secs(10),
            poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)),
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);

        // Shutting the write half down: the client reads end of file.
        poll_fn(|cx| Pin::new(&mut w).poll_shutdown(cx))
            .await
            .unwrap();
        let mut raw = [0u8; 8];
        let mut buf = ReadBuf::new(&mut raw);
        within(
            Duration::from_secs(10),
            poll_fn(|cx| Pin::new(&mut cr).poll_read(cx, &mut buf)),
        )
        .await
        .unwrap();
        assert!(buf.filled().is_empty());
    });
}
