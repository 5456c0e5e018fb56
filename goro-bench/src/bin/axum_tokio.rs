//! The axum-on-tokio twin of the HTTP rows (scripts/http-bench.sh): the
//! same `GET /` as `examples/axum_app.rs`, served as an axum user on tokio
//! would: `axum::serve` in clear text (HTTP/1.1 and h2c), axum-server with
//! rustls over TLS (ALPN `h2`, `http/1.1`; the same rustls configuration,
//! ring provider and self-signed P-256 certificate as goro-http's).
//!
//! `TCP_NODELAY` is set on every connection, as Go's net/http and
//! goro-http do; axum's and axum-server's defaults leave Nagle's algorithm
//! on (axum documents `tap_io` for this, axum-server has
//! `NoDelayAcceptor`). `--nagle` keeps their defaults: under h2load's 10
//! streams per connection, Nagle merges responses into fewer packets, which
//! the comparison of runtimes should not count for one side only.
//!
//! Build: `cargo build --release -p goro-bench --features http --bin axum_tokio`.
//! Usage: `axum_tokio [--addr HOST:PORT] [--threads N] [--tls] [--nagle]`; prints
//! `listening on http(s)://ADDR`, serves until killed.

use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;

const USAGE: &str = "Usage: axum_tokio [--addr HOST:PORT] [--threads N] [--tls] [--nagle]

  --addr HOST:PORT  where to listen (default 127.0.0.1:0; printed)
  --threads N       tokio worker threads, 1 to 4096 (default: the CPUs)
  --tls             HTTPS with a self-signed certificate (axum-server, rustls)
  --nagle           leave TCP_NODELAY off (axum's and axum-server's default)";

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("axum_tokio: {msg}\n{USAGE}");
    std::process::exit(2)
}

fn main() {
    // Tracing off as in goro's example (`examples/axum_app.rs` says why).
    let _ = tracing::subscriber::set_global_default(tracing::subscriber::NoSubscriber::default());
    let mut args = std::env::args().skip(1);
    let (mut addr, mut threads, mut tls, mut nagle) =
        ("127.0.0.1:0".to_string(), None, false, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => {
                addr = args
                    .next()
                    .unwrap_or_else(|| fail("--addr: expected HOST:PORT"))
            }
            "--threads" => {
                let v = args.next().unwrap_or_default();
                threads = match v.parse::<usize>() {
                    Ok(n) if (1..=4096).contains(&n) => Some(n),
                    _ => fail(format!(
                        "--threads {v:?}: expected a whole number from 1 to 4096"
                    )),
                }
            }
            "--tls" => tls = true,
            "--nagle" => nagle = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => fail(format!("unknown argument {a:?}")),
        }
    }
    let addr: SocketAddr = addr.parse().unwrap_or_else(|_| {
        fail(format!(
            "--addr {addr:?}: expected HOST:PORT, e.g. 127.0.0.1:8443"
        ))
    });
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        rt.worker_threads(n);
    }
    let rt = rt.enable_all().build().expect("tokio runtime");
    let app = Router::new().route("/", get(|| async { "Hello, World!" }));
    rt.block_on(async move {
        let l = std::net::TcpListener::bind(addr)
            .unwrap_or_else(|e| fail(format!("listen on {addr}: {e}")));
        l.set_nonblocking(true).expect("nonblocking");
        let local = l.local_addr().expect("local address");
        if tls {
            let c =
                rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                    .expect("certificate");
            let cfg = goro_http::tls::from_pem(
                c.cert.pem().as_bytes(),
                c.key_pair.serialize_pem().as_bytes(),
            )
            .expect("TLS configuration");
            let cfg = axum_server::tls_rustls::RustlsConfig::from_config(cfg);
            println!("listening on https://{local}");
            let server = axum_server::from_tcp_rustls(l, cfg);
            let served = if nagle {
                server.serve(app.into_make_service()).await
            } else {
                server
                    .map(|a| a.acceptor(axum_server::accept::NoDelayAcceptor::new()))
                    .serve(app.into_make_service())
                    .await
            };
            served.expect("serve");
        } else {
            let l = tokio::net::TcpListener::from_std(l).expect("tokio listener");
            println!("listening on http://{local}");
            if nagle {
                axum::serve(l, app).await.expect("serve");
            } else {
                use axum::serve::ListenerExt;
                let l = l.tap_io(|s| {
                    let _ = s.set_nodelay(true);
                });
                axum::serve(l, app).await.expect("serve");
            }
        }
    });
}
