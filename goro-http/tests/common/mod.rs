//! What the tests share: a goro server, a tokio client, certificates.
#![allow(dead_code)] // each test file uses its own part

use axum::routing::{get as route_get, post};
use axum::{extract::Query, Json, Router};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Every wait in these tests has this deadline, or a tighter one.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A goro runtime serving `app` with `server` on 127.0.0.1.
pub struct TestServer {
    pub rt: goro::Runtime,
    pub server: goro_http::Server,
    pub addr: SocketAddr,
    pub serving: Option<goro::JoinHandle<std::io::Result<()>>>,
}

pub fn start(server: goro_http::Server, app: Router) -> TestServer {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    let l = rt
        .block_on(goro::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = l.local_addr().unwrap();
    let s = server.clone();
    let serving = rt.spawn(async move { s.serve(l, app).await });
    TestServer {
        rt,
        server,
        addr,
        serving: Some(serving),
    }
}

impl TestServer {
    /// Shuts the server down (deadline: `DEADLINE`) and checks its accept
    /// loop returned `Ok`.
    pub fn stop(&mut self) {
        let server = self.server.clone();
        let serving = self.serving.take().unwrap();
        self.rt.block_on(async move {
            let (ctx, _) = goro::context::Context::with_timeout(
                &goro::context::Context::background(),
                DEADLINE,
            );
            server.shutdown(&ctx).await.unwrap();
            goro::time::timeout(DEADLINE, serving)
                .await
                .expect("serve returns after shutdown")
                .unwrap()
                .unwrap();
        });
    }
}

/// The size of `GET /big`'s body: far more than loopback's socket buffers.
pub const BIG: usize = 32 << 20;

/// Counts handlers in flight and the most seen at once.
#[derive(Default)]
pub struct Gauge {
    pub now: AtomicUsize,
    pub peak: AtomicUsize,
    pub started: AtomicUsize,
}

struct InFlight(Arc<Gauge>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(serde::Deserialize)]
pub struct SlowQuery {
    ms: u64,
}

#[derive(serde::Deserialize)]
pub struct StreamQuery {
    ms: u64,
    n: usize,
}

/// `GET /` → `Hello, World!`; `POST /json` echoes `{"n": n}` as
/// `{"n": n+1}`; `GET /big` sends `BIG` bytes; `GET /slow?ms=N` answers
/// after N ms (on goro's timers), counted in the gauge; `GET
/// /stream?ms=M&n=K` sends its head at once, then K chunks `chunk\n`, one
/// every M ms.
pub fn app(gauge: Arc<Gauge>) -> Router {
    Router::new()
        .route("/", route_get(|| async { "Hello, World!" }))
        .route(
            "/json",
            post(|Json(v): Json<serde_json_like::N>| async move {
                Json(serde_json_like::N { n: v.n + 1 })
            }),
        )
        .route("/big", route_get(|| async { vec![b'x'; BIG] }))
        .route(
            "/stream",
            route_get(|Query(q): Query<StreamQuery>| async move {
                let chunks = futures_util::stream::unfold(0, move |i| async move {
                    if i == q.n {
                        return None;
                    }
                    goro::time::sleep(Duration::from_millis(q.ms)).await;
                    Some((
                        Ok::<_, std::io::Error>(Bytes::from_static(b"chunk\n")),
                        i + 1,
                    ))
                });
                axum::body::Body::from_stream(chunks)
            }),
        )
        .route(
            "/slow",
            route_get(move |Query(q): Query<SlowQuery>| {
                let g = gauge.clone();
                async move {
                    g.started.fetch_add(1, Ordering::SeqCst);
                    let now = g.now.fetch_add(1, Ordering::SeqCst) + 1;
                    g.peak.fetch_max(now, Ordering::SeqCst);
                    // `now` counts down when the handler ends or is dropped.
                    let _in_flight = InFlight(g);
                    goro::time::sleep(Duration::from_millis(q.ms)).await;
                    "slow done"
                }
            }),
        )
}

pub mod serde_json_like {
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct N {
        pub n: i64,
    }
}

pub fn client_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `f` on the client's tokio runtime with the test's deadline.
pub fn client<F: std::future::Future>(f: F) -> F::Output {
    client_rt().block_on(async { tokio::time::timeout(DEADLINE, f).await.expect("deadline") })
}

/// A self-signed certificate for `localhost` (PEM cert, PEM key, DER).
pub fn self_signed() -> (String, String, CertificateDer<'static>) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    (
        c.cert.pem(),
        c.key_pair.serialize_pem(),
        c.cert.der().clone(),
    )
}

/// A TLS connection to `addr` trusting `ca`, offering `alpn`.
pub async fn tls_connect(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

/// An HTTP/1.1 client connection over `io`.
pub async fn h1<T>(io: T) -> http1::SendRequest<Full<Bytes>>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = http1::handshake(TokioIo::new(io)).await.unwrap();
    tokio::spawn(conn);
    send
}

/// An HTTP/2 client connection over `io` (prior knowledge in clear).
pub async fn h2<T>(io: T) -> http2::SendRequest<Full<Bytes>>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(conn);
    send
}

pub fn get(path: &str) -> hyper::Request<Full<Bytes>> {
    hyper::Request::get(format!("http://localhost{path}"))
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// Status, version and body of a response.
pub async fn read(
    resp: hyper::Response<hyper::body::Incoming>,
) -> (http::StatusCode, http::Version, Bytes) {
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (parts.status, parts.version, body)
}
