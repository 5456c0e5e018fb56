//! tokio-bound clients in goro handlers through `goro_http::compat`: sqlx
//! (SQLite) and reqwest, each under 1,000 concurrent requests from a
//! reqwest client on a tokio runtime of the test's own, on 127.0.0.1.
//! Every wait has a deadline.

mod common;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use common::*;
use goro_http::compat::{compat, TokioCompatLayer};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use std::collections::HashSet;
use std::time::Duration;

const N: usize = 1000;

#[derive(Clone)]
struct Shared {
    db: SqlitePool,
    http: reqwest::Client,
    upstream: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Note {
    id: i64,
    text: String,
}

#[derive(serde::Deserialize)]
struct NewNote {
    text: String,
}

async fn create(State(s): State<Shared>, Json(n): Json<NewNote>) -> (StatusCode, Json<Note>) {
    let id = sqlx::query_scalar("INSERT INTO notes (text) VALUES (?) RETURNING id")
        .bind(&n.text)
        .fetch_one(&s.db)
        .await
        .expect("insert");
    (StatusCode::CREATED, Json(Note { id, text: n.text }))
}

async fn read_one(State(s): State<Shared>, Path(id): Path<i64>) -> Result<Json<Note>, StatusCode> {
    let row: Option<(i64, String)> = sqlx::query_as("SELECT id, text FROM notes WHERE id = ?")
        .bind(id)
        .fetch_optional(&s.db)
        .await
        .expect("select");
    row.map(|(id, text)| Json(Note { id, text }))
        .ok_or(StatusCode::NOT_FOUND)
}

async fn count(State(s): State<Shared>) -> String {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM notes")
        .fetch_one(&s.db)
        .await
        .expect("count");
    n.to_string()
}

/// Calls the server's own `/` with reqwest and answers what it got.
async fn upstream(State(s): State<Shared>) -> Result<String, (StatusCode, String)> {
    let resp = s
        .http
        .get(&s.upstream)
        .send()
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    let body = resp
        .text()
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    Ok(format!("upstream said: {body}"))
}

/// Raises the open-files limit to its hard limit: 1,000 client
/// connections, the 1,000 the server accepts, and the upstream calls' own.
fn more_files() {
    // SAFETY: getrlimit/setrlimit on a local, initialized struct.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// A server whose tokio-bound routes run under the compat layer, with its
/// database in a fresh temporary directory.
fn serve(name: &str) -> (TestServer, std::path::PathBuf) {
    more_files();
    let dir = std::env::temp_dir().join(format!("goro-http-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    let l = rt
        .block_on(goro::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = l.local_addr().unwrap();
    // sqlx and reqwest need the tokio context from their constructors on.
    let db_path = dir.join("notes.db");
    let shared = rt.block_on(compat(async move {
        let opts = SqliteConnectOptions::new()
            .filename(&db_path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(DEADLINE);
        let db = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .expect("open the database");
        sqlx::query("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
            .execute(&db)
            .await
            .unwrap();
        Shared {
            db,
            http: reqwest::Client::builder()
                .timeout(DEADLINE)
                .build()
                .unwrap(),
            upstream: format!("http://{addr}/"),
        }
    }));
    let app = Router::new()
        .route("/notes", axum::routing::post(create))
        .route("/notes/{id}", get(read_one))
        .route("/count", get(count))
        .route("/upstream", get(upstream))
        .route_layer(TokioCompatLayer::new())
        .with_state(shared)
        .route("/", get(|| async { "Hello, World!" }));
    let server = goro_http::Server::builder().build();
    let s = server.clone();
    let serving = rt.spawn(async move { s.serve(l, app).await });
    (
        TestServer {
            rt,
            server,
            addr,
            serving: Some(serving),
        },
        dir,
    )
}

/// The test's client: reqwest on a tokio runtime of its own, one HTTP/1.1
/// connection per request in flight.
fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn sqlx_handlers_under_1000_concurrent_requests() {
    let (mut s, dir) = serve("sqlx");
    let base = format!("http://{}", s.addr);
    client_runtime().block_on(async move {
        tokio::time::timeout(DEADLINE * 3, async move {
            let c = reqwest::Client::builder()
                .pool_max_idle_per_host(N)
                .build()
                .unwrap();
            // 1,000 inserts at once.
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..N {
                let (c, base) = (c.clone(), base.clone());
                tasks.spawn(async move {
                    let r = c
                        .post(format!("{base}/notes"))
                        .json(&serde_json::json!({ "text": format!("note {i}") }))
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("POST /notes #{i}: {e}"));
                    assert_eq!(r.status(), 201, "POST /notes #{i}");
                    let n: Note = r.json().await.unwrap();
                    assert_eq!(n.text, format!("note {i}"));
                    n.id
                });
            }
            let mut ids = HashSet::new();
            while let Some(id) = tasks.join_next().await {
                assert!(ids.insert(id.unwrap()), "an id given twice");
            }
            assert_eq!(ids.len(), N);
            // 1,000 reads at once, each of its note.
            let mut tasks = tokio::task::JoinSet::new();
            for id in ids {
                let (c, base) = (c.clone(), base.clone());
                tasks.spawn(async move {
                    let r = c
                        .get(format!("{base}/notes/{id}"))
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("GET /notes/{id}: {e}"));
                    assert_eq!(r.status(), 200, "GET /notes/{id}");
                    let n: Note = r.json().await.unwrap();
                    assert_eq!(n.id, id);
                });
            }
            while let Some(r) = tasks.join_next().await {
                r.unwrap();
            }
            let count = c.get(format!("{base}/count")).send().await.unwrap();
            assert_eq!(count.text().await.unwrap(), N.to_string());
            let missing = c.get(format!("{base}/notes/0")).send().await.unwrap();
            assert_eq!(missing.status(), 404);
        })
        .await
        .expect("1,000 inserts and 1,000 reads within the deadline");
    });
    s.stop();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn reqwest_handlers_under_1000_concurrent_requests() {
    let (mut s, dir) = serve("reqwest");
    let base = format!("http://{}", s.addr);
    client_runtime().block_on(async move {
        tokio::time::timeout(DEADLINE * 3, async move {
            let c = reqwest::Client::builder()
                .pool_max_idle_per_host(N)
                .build()
                .unwrap();
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..N {
                let (c, base) = (c.clone(), base.clone());
                tasks.spawn(async move {
                    let r = c
                        .get(format!("{base}/upstream"))
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("GET /upstream #{i}: {e}"));
                    let st = r.status();
                    let body = r.text().await.unwrap();
                    assert_eq!(
                        (st.as_u16(), &body[..]),
                        (200, "upstream said: Hello, World!"),
                        "GET /upstream #{i}"
                    );
                });
            }
            while let Some(r) = tasks.join_next().await {
                r.unwrap();
            }
        })
        .await
        .expect("1,000 upstream calls within the deadline");
    });
    s.stop();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tokio_timers_and_spawn_work_in_the_layer_and_in_compat() {
    let app: Router = Router::new()
        .route(
            "/sleepy",
            get(|| async {
                // A tokio timer and a task on the side runtime, from a goro
                // handler.
                tokio::time::sleep(Duration::from_millis(5)).await;
                tokio::spawn(async { 41 + 1 }).await.unwrap().to_string()
            }),
        )
        .route_layer(TokioCompatLayer::new());
    let mut s = start(goro_http::Server::builder().build(), app);
    let addr = s.addr;
    client(async move {
        let mut c = h1(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
        let (st, _, body) = read(c.send_request(common::get("/sleepy")).await.unwrap()).await;
        assert_eq!((st.as_u16(), &body[..]), (200, &b"42"[..]));
    });
    // And in a plain goro task, through `compat`.
    let got = s.rt.block_on(async {
        goro::time::timeout(
            DEADLINE,
            compat(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                7
            }),
        )
        .await
    });
    assert_eq!(got.expect("deadline"), 7);
    s.stop();
}
