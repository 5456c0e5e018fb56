//! An axum service on goro over HTTPS, HTTP/2 and HTTP/1.1 (goro-http), with
//! a SQLite JSON API through sqlx and a route that calls another HTTP
//! service through reqwest (both tokio-bound, run through
//! `goro_http::compat`).
//!
//! Usage: `cargo run --release -p goro-http --example axum_app -- [--addr HOST:PORT] [--procs N] [--cert FILE --key FILE] [--plain] [--db FILE] [--upstream URL]`
//! then `curl -k --http2 https://127.0.0.1:8443/` or
//! `curl -k --http1.1 https://127.0.0.1:8443/json`.
//!
//! * `GET /` answers `Hello, World!` (the route the benchmarks hit);
//!   `GET /json` answers `{"message":"Hello, World!"}`.
//! * `POST /notes` with `{"text":"..."}` stores a note in SQLite and
//!   answers `201` with `{"id":N,"text":"..."}`; `GET /notes/{id}` answers
//!   it (or `404`); `GET /notes` the last 100. The database is the file of
//!   `--db`, else `axum_app.db` in a fresh temporary directory, created
//!   at start (sqlx, tokio-bound: through the compat layer).
//! * `GET /upstream` calls `--upstream URL` with reqwest (default: this
//!   server's own `/json` on loopback, trusting its certificate) and
//!   answers `{"status":200,"body":"..."}` (tokio-bound too: through the
//!   compat layer).
//! * TLS with the certificate and key of `--cert`/`--key` (PEM files), or
//!   else a self-signed certificate for `localhost` and `127.0.0.1` made at
//!   start with rcgen. ALPN offers `h2` and `http/1.1`. `--plain` serves
//!   clear text instead: HTTP/1.1, and HTTP/2 with prior knowledge
//!   (`curl --http2-prior-knowledge`).
//! * Go's `http.Server` limits: 5 s to finish the TLS handshake and send a
//!   request head, 10 s for a stalled response, 60 s idle; HTTP/2 at 250
//!   concurrent streams with hyper's rapid-reset guard.
//! * Ctrl-C (or SIGTERM) shuts down gracefully: no new connections,
//!   requests in flight get up to 10 s to finish.
//!
//! It prints `listening on https://HOST:PORT` (or `http://`) once it
//! accepts, so a script can start it with `--addr 127.0.0.1:0` and read
//! the port.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use goro::context::Context;
use goro_http::compat::{compat, TokioCompatLayer};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "axum_app";
const USAGE: &str =
    "Usage: axum_app [--addr HOST:PORT] [--procs N] [--cert FILE --key FILE] [--plain]
                [--db FILE] [--upstream URL]

  --addr HOST:PORT  address to listen on (default 127.0.0.1:8443; port 0
                    picks a free one; printed once ready)
  --procs N         goro Ps, 1 to 4096 (default: GORO_PROCS, else the CPUs)
  --cert FILE       PEM certificate chain (with --key; default: a
                    self-signed certificate made at start)
  --key FILE        PEM private key (PKCS#8, PKCS#1 or SEC1)
  --plain           no TLS: HTTP/1.1 and h2c in clear text
  --db FILE         SQLite database of /notes, created if missing
                    (default: axum_app.db in a new temporary directory)
  --upstream URL    what GET /upstream calls (default: this server's
                    own /json on loopback)
  -h, --help        this help";

struct Flags {
    addr: SocketAddr,
    procs: Option<usize>,
    cert_key: Option<(String, String)>,
    plain: bool,
    db: Option<PathBuf>,
    upstream: Option<reqwest::Url>,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("{NAME}: {msg}");
    std::process::exit(2)
}

fn parse_flags() -> Flags {
    let mut args = std::env::args().skip(1);
    let (mut addr, mut procs, mut cert, mut key, mut plain) =
        (String::from("127.0.0.1:8443"), None, None, None, false);
    let (mut db, mut upstream) = (None, None);
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
            "--db" => db = Some(PathBuf::from(value("FILE"))),
            "--upstream" => {
                let v = value("URL");
                upstream = match reqwest::Url::parse(&v) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
                    _ => fail(format!(
                        "--upstream {v:?}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8080/json"
                    )),
                }
            }
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
        db,
        upstream,
    }
}

#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

/// What the tokio-bound routes share.
#[derive(Clone)]
struct Shared {
    db: SqlitePool,
    http: reqwest::Client,
    upstream: reqwest::Url,
}

#[derive(serde::Deserialize)]
struct NewNote {
    text: String,
}

#[derive(serde::Serialize)]
struct Note {
    id: i64,
    text: String,
}

/// A handler's error: a status and a message, as JSON.
struct Fail(StatusCode, String);

impl axum::response::IntoResponse for Fail {
    fn into_response(self) -> axum::response::Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

fn internal(e: impl std::fmt::Display) -> Fail {
    Fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

async fn create_note(
    State(s): State<Shared>,
    Json(n): Json<NewNote>,
) -> Result<(StatusCode, Json<Note>), Fail> {
    let id = sqlx::query_scalar("INSERT INTO notes (text) VALUES (?) RETURNING id")
        .bind(&n.text)
        .fetch_one(&s.db)
        .await
        .map_err(internal)?;
    Ok((StatusCode::CREATED, Json(Note { id, text: n.text })))
}

async fn get_note(State(s): State<Shared>, Path(id): Path<i64>) -> Result<Json<Note>, Fail> {
    sqlx::query_as("SELECT id, text FROM notes WHERE id = ?")
        .bind(id)
        .fetch_optional(&s.db)
        .await
        .map_err(internal)?
        .map(|(id, text)| Json(Note { id, text }))
        .ok_or_else(|| Fail(StatusCode::NOT_FOUND, format!("no note {id}")))
}

async fn list_notes(State(s): State<Shared>) -> Result<Json<Vec<Note>>, Fail> {
    sqlx::query_as("SELECT id, text FROM notes ORDER BY id DESC LIMIT 100")
        .fetch_all(&s.db)
        .await
        .map(|rows| {
            Json(
                rows.into_iter()
                    .map(|(id, text)| Note { id, text })
                    .collect(),
            )
        })
        .map_err(internal)
}

async fn upstream(State(s): State<Shared>) -> Result<Json<serde_json::Value>, Fail> {
    let resp = s
        .http
        .get(s.upstream.clone())
        .send()
        .await
        .map_err(|e| Fail(StatusCode::BAD_GATEWAY, format!("{}: {e}", s.upstream)))?;
    let status = resp.status().as_u16();
    let body = resp
        .text()
        .await
        .map_err(|e| Fail(StatusCode::BAD_GATEWAY, format!("{}: {e}", s.upstream)))?;
    Ok(Json(serde_json::json!({ "status": status, "body": body })))
}

fn app(shared: Shared) -> Router {
    // sqlx and reqwest are tokio-bound: their routes run in the compat
    // layer's tokio context. The others run on goro alone.
    let tokio_bound = Router::new()
        .route("/notes", get(list_notes).post(create_note))
        .route("/notes/{id}", get(get_note))
        .route("/upstream", get(upstream))
        .route_layer(TokioCompatLayer::new())
        .with_state(shared);
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
        .merge(tokio_bound)
}

/// The SQLite database of `/notes`: `--db`, else a file in a new
/// temporary directory; created, with its table, if missing.
async fn open_db(flags: &Flags) -> SqlitePool {
    let path = flags.db.clone().unwrap_or_else(|| {
        let dir = std::env::temp_dir().join(format!("axum_app-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| fail(format!("creating {}: {e}", dir.display())));
        dir.join("axum_app.db")
    });
    let opts = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    let db = SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(opts)
        .await
        .unwrap_or_else(|e| fail(format!("--db {}: opening SQLite: {e}", path.display())));
    sqlx::query("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
        .execute(&db)
        .await
        .unwrap_or_else(|e| {
            fail(format!(
                "--db {}: creating the notes table: {e}",
                path.display()
            ))
        });
    eprintln!("{NAME}: notes in {}", path.display());
    db
}

/// The client of `/upstream`: it trusts the served certificate (made at
/// start, or `--cert`'s first) besides the usual roots.
fn http_client(cert_pem: Option<&[u8]>) -> reqwest::Client {
    let mut b = reqwest::Client::builder().timeout(Duration::from_secs(10));
    if let Some(pem) = cert_pem {
        match reqwest::Certificate::from_pem(pem) {
            Ok(c) => b = b.add_root_certificate(c),
            Err(e) => fail(format!("the served certificate as a client root: {e}")),
        }
    }
    b.build()
        .unwrap_or_else(|e| fail(format!("making the HTTP client: {e}")))
}

/// The TLS configuration and the certificate's PEM (`None` with
/// `--plain`).
fn tls_config(flags: &Flags) -> Option<(Arc<rustls::ServerConfig>, Vec<u8>)> {
    if flags.plain {
        return None;
    }
    let (cfg, pem) = match &flags.cert_key {
        Some((cert, key)) => (
            goro_http::tls::from_pem_files(cert, key),
            std::fs::read(cert).unwrap_or_default(),
        ),
        None => {
            let c =
                rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                    .unwrap_or_else(|e| fail(format!("making a self-signed certificate: {e}")));
            eprintln!("{NAME}: serving a self-signed certificate for localhost, 127.0.0.1");
            (
                goro_http::tls::from_pem(
                    c.cert.pem().as_bytes(),
                    c.key_pair.serialize_pem().as_bytes(),
                ),
                c.cert.pem().into_bytes(),
            )
        }
    };
    Some((cfg.unwrap_or_else(|e| fail(e)), pem))
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
    // Tracing off, said once for the process (a real service installs its
    // subscriber here). Without any, a crate that turns on tracing's `log`
    // fallback (sqlx does) sends every span's entry and exit through the
    // `log` crate: h2 enters its spans on each poll, and that was a sixth
    // of this server's instructions per HTTP/2 request.
    let _ = tracing::subscriber::set_global_default(tracing::subscriber::NoSubscriber::default());
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
    let (scheme, cert_pem) = if let Some((tls, pem)) = tls {
        server = server.tls(tls);
        ("https", Some(pem))
    } else {
        ("http", None)
    };
    let server = server.build();

    rt.block_on(async move {
        let l = goro::net::TcpListener::bind(flags.addr)
            .await
            .unwrap_or_else(|e| {
                eprintln!("{NAME}: listen on {}: {e}", flags.addr);
                std::process::exit(1);
            });
        let local = l.local_addr().expect("local address");
        let upstream = flags.upstream.clone().unwrap_or_else(|| {
            let mut own = local;
            if own.ip().is_unspecified() {
                own.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            reqwest::Url::parse(&format!("{scheme}://{own}/json")).expect("a URL")
        });
        // sqlx and reqwest need tokio's context even to start.
        let shared = compat(async {
            Shared {
                db: open_db(&flags).await,
                http: http_client(cert_pem.as_deref()),
                upstream,
            }
        })
        .await;
        println!("listening on {scheme}://{local}");
        let serving = goro::spawn({
            let server = server.clone();
            async move { server.serve(l, app(shared)).await }
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
