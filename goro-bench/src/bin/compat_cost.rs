//! What `goro_http::compat` costs a tokio-bound client: the same reqwest
//! GETs on loopback from a goro task through the compat layer and from a
//! task on tokio, interleaved (tokio, goro, tokio, goro, ...).
//!
//! Build: `cargo build --release -p goro-bench --features http --bin compat_cost`.
//! Usage: `compat_cost [--procs N] [--rounds R] [--requests N] [--conc C]`
//!
//! The server is this program again (`--serve`), a child process: axum on
//! a one-worker tokio runtime answering `GET /` with `Hello, World!`, so
//! the client's process CPU (getrusage) is the client's alone. Each round
//! runs, per column, `--requests` GETs one at a time on one keep-alive
//! connection (latency: mean, p50, p99) and then `--requests` GETs from
//! `--conc` tasks at once (req/s), with a fresh `reqwest::Client` made in
//! the column's context. goro's column runs `--procs` Ps; tokio's a
//! multi-thread runtime of `--procs` workers. Prints one line per round
//! and column, then the medians and the ratios goro/tokio.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "Usage: compat_cost [--procs N] [--rounds R] [--requests N] [--conc C]";

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("compat_cost: {msg}\n{USAGE}");
    std::process::exit(2)
}

fn cpu_ns() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[derive(Clone, Copy, Default)]
struct Round {
    seq_mean_us: f64,
    seq_p50_us: f64,
    seq_p99_us: f64,
    seq_cpu_us: f64,
    conc_rps: f64,
    conc_cpu_us: f64,
}

/// One-at-a-time GETs, then `conc` tasks at once; `spawn` runs a future on
/// the column's runtime and hands back its join.
async fn measure<S, J>(url: Arc<str>, n: usize, conc: usize, spawn: S) -> Round
where
    S: Fn(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) -> J,
    J: std::future::Future<Output = ()>,
{
    let client = reqwest::Client::new();
    let get = |c: reqwest::Client, url: Arc<str>| async move {
        let r = c.get(&*url).send().await.expect("GET");
        assert!(r.status().is_success());
        let b = r.bytes().await.expect("body");
        assert_eq!(&b[..], b"Hello, World!");
    };
    get(client.clone(), url.clone()).await; // connect
    let mut lat = Vec::with_capacity(n);
    let (c0, t0) = (cpu_ns(), Instant::now());
    for _ in 0..n {
        let t = Instant::now();
        get(client.clone(), url.clone()).await;
        lat.push(t.elapsed().as_nanos() as f64 / 1e3);
    }
    let seq_wall = t0.elapsed().as_nanos() as f64 / 1e3;
    let seq_cpu = (cpu_ns() - c0) as f64 / 1e3;
    lat.sort_by(f64::total_cmp);
    let (c1, t1) = (cpu_ns(), Instant::now());
    let mut joins = Vec::new();
    for _ in 0..conc {
        let (c, url) = (client.clone(), url.clone());
        let per = n / conc;
        joins.push(spawn(Box::pin(async move {
            for _ in 0..per {
                get(c.clone(), url.clone()).await;
            }
        })));
    }
    for j in joins {
        j.await;
    }
    let conc_wall = t1.elapsed().as_secs_f64();
    let conc_cpu = (cpu_ns() - c1) as f64 / 1e3;
    let done = (n / conc * conc) as f64;
    Round {
        seq_mean_us: seq_wall / n as f64,
        seq_p50_us: lat[n / 2],
        seq_p99_us: lat[n * 99 / 100],
        seq_cpu_us: seq_cpu / n as f64,
        conc_rps: done / conc_wall,
        conc_cpu_us: conc_cpu / done,
    }
}

fn serve() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("listening on http://{}", l.local_addr().unwrap());
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "Hello, World!" }));
        axum::serve(l, app).await.expect("serve");
    });
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut procs, mut rounds, mut n, mut conc) = (1usize, 5usize, 5000usize, 32usize);
    while let Some(a) = args.next() {
        let mut num = |lo: usize| {
            let v = args.next().unwrap_or_default();
            match v.parse::<usize>() {
                Ok(x) if x >= lo => x,
                _ => fail(format!("{a} {v:?}: expected a whole number, at least {lo}")),
            }
        };
        match a.as_str() {
            "--serve" => return serve(),
            "--procs" => procs = num(1),
            "--rounds" => rounds = num(1),
            "--requests" => n = num(100),
            "--conc" => conc = num(1),
            "-h" | "--help" => return println!("{USAGE}"),
            _ => fail(format!("unknown argument {a:?}")),
        }
    }
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg("--serve")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the server's address");
    let url: Arc<str> = format!("{}/", line.trim().trim_start_matches("listening on ")).into();

    let goro_rt = goro::Runtime::builder().procs(procs).build().expect("goro");
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_all()
        .build()
        .expect("tokio");
    println!(
        "compat_cost: reqwest GET {url} ({n} one at a time, then {n} from {conc} tasks), procs {procs}, {rounds} rounds"
    );
    println!("round column   seq_mean_us seq_p50_us seq_p99_us seq_cpu_us/req conc_req/s conc_cpu_us/req");
    let mut cols: [Vec<Round>; 2] = [Vec::new(), Vec::new()];
    // A warm-up round of each, not counted.
    for round in 0..=rounds {
        let t = tokio_rt.block_on(measure(url.clone(), n, conc, |f| {
            let j = tokio::spawn(f);
            async move { j.await.unwrap() }
        }));
        let g = goro_rt.block_on(goro_http::compat::compat(measure(
            url.clone(),
            n,
            conc,
            |f| {
                let j = goro::spawn(goro_http::compat::compat(f));
                async move { j.await.unwrap() }
            },
        )));
        for (name, r, i) in [("tokio", t, 0), ("goro+compat", g, 1)] {
            println!(
                "{}     {name:<12} {:>8.1} {:>10.1} {:>10.1} {:>14.1} {:>10.0} {:>15.1}",
                if round == 0 {
                    "warm".to_string()
                } else {
                    round.to_string()
                },
                r.seq_mean_us,
                r.seq_p50_us,
                r.seq_p99_us,
                r.seq_cpu_us,
                r.conc_rps,
                r.conc_cpu_us
            );
            if round > 0 {
                cols[i].push(r);
            }
        }
    }
    let med = |i: usize, f: fn(&Round) -> f64| median(cols[i].iter().map(f).collect());
    println!("medians over {rounds} rounds:");
    type Metric = (&'static str, fn(&Round) -> f64);
    let rows: [Metric; 6] = [
        ("seq_mean_us", |r| r.seq_mean_us),
        ("seq_p50_us", |r| r.seq_p50_us),
        ("seq_p99_us", |r| r.seq_p99_us),
        ("seq_cpu_us/req", |r| r.seq_cpu_us),
        ("conc_req/s", |r| r.conc_rps),
        ("conc_cpu_us/req", |r| r.conc_cpu_us),
    ];
    for (name, f) in rows {
        let (t, g) = (med(0, f), med(1, f));
        println!(
            "  {name:<16} tokio {t:>10.1}  goro+compat {g:>10.1}  goro/tokio {:.2}",
            g / t
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(10));
}
