//! HTTP/1.1 and HTTP/2 for tower services (axum's `Router`) on goro, with
//! TLS: Go's `http.Server`.
//!
//! ```no_run
//! # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
//! let app = axum::Router::new().route("/", axum::routing::get(|| async { "Hello, World!" }));
//! let listener = goro::net::TcpListener::bind("127.0.0.1:8443").await?;
//! let tls = goro_http::tls::from_pem_files("cert.pem", "key.pem").unwrap();
//! goro_http::Server::builder()
//!     .tls(tls)
//!     .read_header_timeout(std::time::Duration::from_secs(5))
//!     .build()
//!     .serve(listener, app)
//!     .await
//! # }).unwrap();
//! ```
//!
//! # Design
//!
//! Nothing here is a runtime. hyper's connection state machines do the
//! HTTP; goro does everything a runtime does for them:
//!
//! * **Connections.** [`Server::serve`] accepts with goro's
//!   `accept_with_backoff` (Go's back-off on `EMFILE`) and runs each
//!   connection as one goro task. In clear text hyper-util's
//!   `server::conn::auto` reads the first bytes and picks HTTP/1.1 or
//!   HTTP/2 with prior knowledge (h2c); over TLS, ALPN picks (`h2`, else
//!   HTTP/1.1), as Go's server does.
//! * **IO.** A connection reads and writes through goro's own
//!   `GoroIo` (`goro::net::hyper`), waiting on goro's poller. TLS is
//!   tokio-rustls over the same `GoroIo`, through tokio's io *traits*
//!   (goro's `tokio-io` feature) and a small adapter to hyper's; the
//!   `tokio` crate is compiled with no runtime feature, and no tokio
//!   runtime is started or needed.
//! * **Executor and timer.** goro's `GoroExecutor` (HTTP/2 runs each
//!   stream's handler as its own goro task) and `GoroTimer` (goro's
//!   per-P timer heaps) for hyper's timeouts and keep-alives.
//! * **Services.** Any tower `Service<Request<Incoming>>` that is `Clone`
//!   (axum's `Router` is); each connection gets a clone, each request a
//!   clone of that (as axum's own `serve` does).
//!
//! Go's `http.Server` limits, and how each is done:
//!
//! | Go | here | how |
//! |---|---|---|
//! | `ReadHeaderTimeout` | [`Builder::read_header_timeout`] | the socket's read deadline from accept to the first request (covers protocol detection), then hyper's `header_read_timeout` for each HTTP/1 request head |
//! | `ReadTimeout` | [`Builder::read_timeout`] | HTTP/1: the socket's read deadline from a request's head to its response (hyper in half-close mode meanwhile) |
//! | TLS handshake timeout | the shortest of the three above and `WriteTimeout` | a timer around the whole handshake |
//! | `WriteTimeout` | [`Builder::write_timeout`] | `GoroIo::write_timeout`: a stalled write burst is cut (Go's is one deadline per response) |
//! | `IdleTimeout` | [`Builder::idle_timeout`] | a timer per connection; no request in flight (a response counts until its body is sent) for the timeout shuts it down gracefully |
//! | `MaxHeaderBytes` | [`Builder::max_header_bytes`] | HTTP/1: hyper's read buffer limit, answering 431; HTTP/2: `SETTINGS_MAX_HEADER_LIST_SIZE` |
//! | `http2.Server.MaxConcurrentStreams` | [`Builder::max_concurrent_streams`] | h2's setting |
//! | rapid reset (CVE-2023-44487) | [`Builder::max_pending_accept_reset_streams`], [`Builder::max_local_error_reset_streams`] | h2's guards |
//! | `Shutdown(ctx)` | [`Server::shutdown`] with a `goro::context::Context` | stop accepting, graceful shutdown of each connection, wait; close the rest when the context is done |
//! | `Close()` | [`Server::close`] | close everything now |
//!
//! # tokio-bound crates in handlers
//!
//! With the feature `tokio-compat`, `goro_http::compat` lends handlers a tokio
//! context (async-compat's runtime on one side thread), so reqwest, sqlx
//! and other crates that need tokio's reactor, timers or `spawn` work in
//! them: `Router::route_layer(goro_http::compat::TokioCompatLayer::new())` on the
//! routes that need it.
//!
//! # Not done
//!
//! * `ReadTimeout` on HTTP/2: a per-socket deadline would cut every
//!   stream of the connection; bound a stream's body in its handler.
//! * A header timeout for HTTP/2 requests after the first (h2 has none;
//!   `idle_timeout` and [`Builder::http2_keep_alive`] bound idle and dead
//!   connections).
//!
//! # Rejected
//!
//! - hyper-util's `TokioIo`, `TokioExecutor` and `TokioTimer`: behind its
//!   `tokio` feature, which compiles tokio's runtime in; goro has its own
//!   executor and timer, and the TLS adapter is forty lines (`io.rs`).
//! - hyper-util's `GracefulShutdown`: it cannot also close a connection
//!   when it goes idle or when the shutdown context runs out; each
//!   connection task instead watches the server's stop and kill contexts
//!   and its idle timer itself, and the server counts its connections with
//!   a channel every task holds a sender of (closed when the last is gone).
//! - Detecting HTTP/2 by reading the preface under TLS: ALPN has already
//!   said, and Go's server trusts it too.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "tokio-compat")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio-compat")))]
pub mod compat;
mod io;
mod server;
pub mod tls;

pub use server::{Builder, Server};
