//! An axum service on goro over HTTPS, HTTP/2 and HTTP/1.1 (goro-http).
//!
//! Usage: `cargo run --release -p goro-http --example axum_app -- [--addr HOST:PORT] [--procs N] [--cert FILE --key FILE] [--plain]`
//! then `curl -k --http2 https://127.0.0.1:8443/` or
//! `curl -k --http1.1 https://127.0.0.1:8443/json`.
//!
//! * `GET /` answers `Hello, World!` (the route the benchmarks hit);
//!   `GET /json` answers `{"message":"Hello, World!"}`.
//! * TLS with the certificate and key of `--cert`/`--key` (PEM files), or
//!   else a self-signed certificate for `localhost` and `127.0.0.1` made at
//!   start with rcgen. ALPN offers `h2` and `http/1.1`. `--plain` serves
//!   clear text instead: HTTP/1.1, and HTTP/2 with prior knowledge
//!   (`curl --http2-prior-knowledge`).
//! * Go's `http.Server` limits: 5 s to send a request head, 10 s for a
//!   stalled response, 60 s idle; HTTP/2 at 250 concurrent streams with
//!   hyper's rapid-reset guard.
//! * Ctrl-C (or SIGTERM) shuts down gracefully: no new connections,
//!   requests in flight get up to 10 s to finish.
//!
//! It prints `listening on https://HOST:PORT` (or `http://`) once it
//! accepts, so a script can start it with `--addr 127.0.0.1:0` and read
//! the port.
//!
//! Not yet here (issue 20's later parts): the SQLite route through sqlx
//! and the route that calls another service through reqwest, which need
//! the tokio compat layer.

use axum::routing::get;
use axum::{Json, Router};
use goro::context::Context;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "axum_app";
const USAGE: &str =
    "Usage: axum_app [--addr HOST:PORT] [--procs N] [--cert FILE --key FILE] [--plain]

  --addr HOST:PORT  address to listen on (default 127.0.0.1:8443; port 0
                    picks a free one; printed once ready)
  --procs N         goro Ps, 1 to 4096 (default: GORO_PROCS, else the CPUs)
  --cert FILE       PEM certificate chain (with --key; default: a
                    self-signed certificate made at start)
  --key FILE        PEM private key (PKCS#8, PKCS#1 or SEC1)
  --plain           no TLS: HTTP/1.1 and h2c in clear text
  -h, --help        this help";

struct Flags {
    addr: SocketAddr,
    procs: Option<usize>,
    cert_key: Option<(String, String)>,
    plain: bool,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("{NAME}: {msg}");
    std::process::exit(2)
}

fn parse_flags() -> Flags {
    let mut args = std::env::args().skip(1);
    let (mut addr, mut procs, mut cert, mut key, mut plain) =
        (String::from("127.0.0.1:8443"), None, None, None, false);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |form: &str| {
            inline.clone().or_else(|| args.next()).unwrap_or_else(|| {
                fail(format!("{flag}: missing its value, expected {flag} {form}"))
            })
        };
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{NAME}: an axum service on goro (HTTPS, HTTP/2)\n\n{USAGE}");
                std::process::exit(0);
            }
            "--addr" => addr = value("HOST:PORT"),
            "--procs" => {
                let v = value("N");
                procs = match v.parse::<usize>() {
                    Ok(n) if (1..=4096).contains(&n) => Some(n),
                    _ => fail(format!(
                        "--procs {v:?}: expected a whole number from 1 to 4096"
                    )),
                }
            }
            "--cert" => cert = Some(value("FILE")),
            "--key" => key = Some(value("FILE")),
            "--plain" => plain = true,
            _ => fail(format!("unknown argument {arg:?}\n{USAGE}")),
        }
    }
    let addr = addr
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| {
            fail(format!(
                "--addr {addr:?}: expected HOST:PORT, e.g. 127.0.0.1:8443"
            ))
        });
    let cert_key = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        _ => fail("--cert and --key go together"),
    };
    if plain && cert_key.is_some() {
        fail("--plain serves without TLS; drop --cert/--key or --plain");
    }
    Flags {
        addr,
        procs,
        cert_key,
        plain,
    }
}

#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

fn app() -> Router {
    Router::new()
        .route("/", get(|| async { "Hello, World!" }))
        .route(
            "/json",
            get(|| async {
                Json(Message {
                    message: "Hello, World!",
                })
            }),
        )
}

fn tls_config(flags: &Flags) -> Option<Arc<rustls::ServerConfig>> {
    if flags.plain {
        return None;
    }
    let cfg = match &flags.cert_key {
        Some((cert, key)) => goro_http::tls::from_pem_files(cert, key),
        None => {
            let c =
                rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                    .unwrap_or_else(|e| fail(format!("making a self-signed certificate: {e}")));
            eprintln!("{NAME}: serving a self-signed certificate for localhost, 127.0.0.1");
            goro_http::tls::from_pem(
                c.cert.pem().as_bytes(),
                c.key_pair.serialize_pem().as_bytes(),
            )
        }
    };
    Some(cfg.unwrap_or_else(|e| fail(e)))
}

/// A context cancelled on SIGINT or SIGTERM. The signals are blocked in
/// every thread (set before the runtime's threads start, which inherit
/// the mask) and taken by one thread of its own with `sigwait`, so no
/// handler runs on goro's threads.
fn interrupted() -> Context {
    let (ctx, cancel) = Context::with_cancel(&Context::background());
    // SAFETY: plain libc calls on a local, zeroed signal set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    std::thread::spawn(move || {
        let mut sig = 0;
        // SAFETY: `set` and `sig` are valid for the call.
        if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
            eprintln!("{NAME}: signal {sig}: shutting down (10 s for requests in flight)");
            cancel.cancel();
        }
    });
    ctx
}

fn main() {
    let flags = parse_flags();
    let tls = tls_config(&flags);
    let stop = interrupted(); // before the runtime's threads start
    let mut rt = goro::Runtime::builder();
    if let Some(n) = flags.procs {
        rt = rt.procs(n);
    }
    let rt = rt.build().unwrap_or_else(|e| fail(e));

    let mut server = goro_http::Server::builder()
        .read_header_timeout(Duration::from_secs(5))
        .write_timeout(Duration::from_secs(10))
        .idle_timeout(Duration::from_secs(60));
    let scheme = if let Some(tls) = tls {
        server = server.tls(tls);
        "https"
    } else {
        "http"
    };
    let server = server.build();

    rt.block_on(async move {
        let l = goro::net::TcpListener::bind(flags.addr)
            .await
            .unwrap_or_else(|e| {
                eprintln!("{NAME}: listen on {}: {e}", flags.addr);
                std::process::exit(1);
            });
        println!(
            "listening on {scheme}://{}",
            l.local_addr().expect("local address")
        );
        let serving = goro::spawn({
            let server = server.clone();
            async move { server.serve(l, app()).await }
        });
        let _ = stop.done().recv().await;
        let (ctx, _) = Context::with_timeout(&Context::background(), Duration::from_secs(10));
        match server.shutdown(&ctx).await {
            Ok(()) => eprintln!("{NAME}: shut down"),
            Err(e) => eprintln!("{NAME}: shut down, closing requests still in flight: {e:?}"),
        }
        if let Ok(Err(e)) = serving.await {
            eprintln!("{NAME}: accept: {e}");
            std::process::exit(1);
        }
    });
}
