//! The Go column: building `bench/go` and running one measured run of it.
//!
//! The twin is built once with `go build -o target/goro-bench-go .` in
//! `bench/go` (rebuilt only when a `.go` file or `go.mod` is newer than the
//! binary), asked for its workload names with `-list`, and run as
//! `goro-bench-go -workload W -procs P -runs 1 [-quick]` per measured run.
//! Each invocation does its own unmeasured warm-up run before the measured
//! one, so the harness adds no separate Go warm-up. Its one JSON line carries
//! the run's ops, `extra.wall_ns` and `extra.cpu_ns` (process CPU by
//! getrusage, like ours) and further extras.
//!
//! A workload whose twin is a server (the net group) runs differently: the
//! twin is started once per row as `goro-bench-go -serve W -procs P`
//! ([`GoBench::serve`]); it listens on an ephemeral loopback port, prints
//! `listening ADDR` on stdout, and then answers each `cpu` line on its stdin
//! with `cpu CPU_NS NVCSW NIVCSW` (its getrusage), until its stdin closes.
//! goro-bench drives it with its own load generator (`netload.rs`).
//!
//! `GORO_BENCH_GO_BIN=PATH` names a twin built elsewhere (`go build` in
//! `bench/go`) and skips the build: for a machine without Go, such as a
//! larger one the binaries are copied to for a scaling run.
//!
//! Without `go` on PATH, [`GoBench::note`] says so in one line and the Go
//! column stays empty; nothing else fails. When the toolchain is there (or
//! `GORO_BENCH_GO_BIN` names a twin) but the twin does not build or does not
//! list its workloads, the column is empty too and [`GoBench::broken`] is
//! set: `run` and `compare` then exit 1, since a Go column that silently
//! vanished would read as "no Go here".

use crate::harness::Sample;
use crate::netload::Cpu;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Longest a `-serve` twin may take to say where it listens, and to answer
/// a `cpu` line.
const SERVE_WAIT: Duration = Duration::from_secs(10);

/// The Go twin, when usable.
pub struct GoBench {
    /// The built binary.
    pub bin: Option<PathBuf>,
    /// Workload names its `-list` prints.
    pub names: HashSet<String>,
    /// Why there is no Go column (one line), when there is none.
    pub note: Option<String>,
    /// The toolchain (or a named prebuilt twin) is there but unusable: the
    /// build or `-list` failed. Not set when `go` is simply not on PATH.
    pub broken: bool,
}

fn go_dir() -> PathBuf {
    match std::env::var_os("GORO_BENCH_GO_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/go"),
    }
}

fn on_path(exe: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(exe).is_file()))
        .unwrap_or(false)
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn stale(dir: &Path, bin: &Path) -> bool {
    let Some(built) = mtime(bin) else { return true };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        let src = p.extension().is_some_and(|x| x == "go")
            || p.file_name()
                .is_some_and(|n| n == "go.mod" || n == "go.sum");
        src && mtime(&p).is_some_and(|t| t > built)
    })
}

impl GoBench {
    /// Finds or builds the twin. Never fails: problems become `note`.
    pub fn prepare() -> GoBench {
        let none = |note: String, broken: bool| GoBench {
            bin: None,
            names: HashSet::new(),
            note: Some(note),
            broken,
        };
        let prebuilt = std::env::var_os("GORO_BENCH_GO_BIN").map(PathBuf::from);
        let bin = match prebuilt {
            Some(bin) if bin.is_file() => bin,
            Some(bin) => {
                return none(
                    format!(
                        "go: GORO_BENCH_GO_BIN={} is not a file (expected a binary built by \
                         `go build` in bench/go); the go column is left empty",
                        bin.display()
                    ),
                    true,
                )
            }
            None => match Self::build() {
                Ok(bin) => bin,
                Err((note, broken)) => return none(note, broken),
            },
        };
        let names = match Command::new(&bin)
            .arg("-list")
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split('\t').next())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            _ => {
                return none(
                    format!(
                        "go: {} -list failed; the go column is left empty",
                        bin.display()
                    ),
                    true,
                )
            }
        };
        GoBench {
            bin: Some(bin),
            names,
            note: None,
            broken: false,
        }
    }

    /// Builds `bench/go` into `target/goro-bench-go` when a source is newer
    /// than the binary; the error is the one-line note for the table and
    /// whether the toolchain was there ([`GoBench::broken`]).
    fn build() -> Result<PathBuf, (String, bool)> {
        let dir = go_dir();
        if !on_path("go") {
            return Err(("go: not on PATH; the go column is left empty".into(), false));
        }
        Self::build_with_go(dir).map_err(|note| (note, true))
    }

    /// [`GoBench::build`] once `go` is known to be on PATH.
    fn build_with_go(dir: PathBuf) -> Result<PathBuf, String> {
        let dir = match dir.canonicalize() {
            Ok(d) => d,
            Err(e) => {
                return Err(format!(
                    "go: twin sources not found at {} ({e}); the go column is left empty",
                    dir.display()
                ))
            }
        };
        let root = dir.parent().and_then(Path::parent).unwrap_or(&dir);
        let bin = root.join("target").join("goro-bench-go");
        if stale(&dir, &bin) {
            let _ = std::fs::create_dir_all(root.join("target"));
            let out = Command::new("go")
                .arg("build")
                .arg("-o")
                .arg(&bin)
                .arg(".")
                .current_dir(&dir)
                .stdin(Stdio::null())
                .output();
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    let err = String::from_utf8_lossy(&o.stderr);
                    let first = err.lines().next().unwrap_or("").trim().to_string();
                    return Err(format!(
                        "go: building bench/go failed ({first}); the go column is left empty"
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "go: cannot run go build ({e}); the go column is left empty"
                    ))
                }
            }
        }
        Ok(bin)
    }

    /// Why `workload` has no Go column, or `None` when it has one.
    pub fn missing(&self, workload: &str) -> Option<String> {
        if let Some(n) = &self.note {
            return Some(n.clone());
        }
        (!self.names.contains(workload)).then(|| "no Go twin in bench/go".to_string())
    }

    /// One measured run (the child does its own warm-up first). Returns the
    /// sample and whatever the child said on stderr. A run over `timeout`
    /// is killed.
    pub fn run(
        &self,
        workload: &str,
        procs: usize,
        quick: bool,
        timeout: Duration,
    ) -> Result<(Sample, String), String> {
        let bin = self.bin.as_ref().ok_or("go twin not built")?;
        let mut cmd = Command::new(bin);
        cmd.args([
            "-workload",
            workload,
            "-procs",
            &procs.to_string(),
            "-runs",
            "1",
        ]);
        if quick {
            cmd.arg("-quick");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let pid = child.id() as libc::pid_t;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match rx.recv_timeout(timeout) {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => return Err(format!("waiting for the go twin: {e}")),
            Err(_) => {
                // SAFETY: kill(2) on the pid of our own child, which has not
                // been reaped yet (its waiter thread has not returned).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                let _ = rx.recv();
                return Err(format!(
                    "timed out after {}s (go child killed)",
                    timeout.as_secs()
                ));
            }
        };
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if !out.status.success() {
            let last = stderr.lines().last().unwrap_or("").to_string();
            return Err(format!("go twin failed ({}): {last}", out.status));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with('{'))
            .ok_or("go twin printed no JSON line")?;
        Ok((parse_line(line)?, stderr))
    }
}

/// A running `goro-bench-go -serve` child: the Go server of one row.
/// Dropping it closes its stdin, kills it and reaps it.
pub struct GoServer {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
    io: Mutex<ServerIo>,
    stderr: Arc<Mutex<String>>,
}

struct ServerIo {
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Disconnected once the stderr reader has read everything.
    stderr_done: mpsc::Receiver<()>,
}

impl GoBench {
    /// Starts the twin serving `workload` at `procs` (GOMAXPROCS) and waits
    /// (at most 10 s) for its address.
    pub fn serve(&self, workload: &str, procs: usize) -> Result<GoServer, String> {
        let bin = self.bin.as_ref().ok_or("go twin not built")?;
        let mut child = Command::new(bin)
            .args(["-serve", workload, "-procs", &procs.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { return };
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        // The child's stderr is kept (the last 4 KiB) for error messages,
        // not shown: it would break the progress bar.
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().expect("piped stderr");
        let keep = stderr.clone();
        let (done_tx, stderr_done) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _done = done_tx;
            let mut buf = [0u8; 1024];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
                k.push_str(&String::from_utf8_lossy(&buf[..n]));
                if k.len() > 4096 {
                    let cut = k.len() - 4096;
                    let cut = (cut..k.len()).find(|&i| k.is_char_boundary(i)).unwrap_or(0);
                    k.drain(..cut);
                }
            }
        });
        let stdin = child.stdin.take();
        let mut server = GoServer {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            child,
            io: Mutex::new(ServerIo {
                stdin,
                lines,
                stderr_done,
            }),
            stderr,
        };
        let line = server.line()?;
        server.addr = line
            .strip_prefix("listening ")
            .and_then(|a| a.trim().parse().ok())
            .ok_or_else(|| format!("go twin -serve said {line:?}, not \"listening ADDR\""))?;
        Ok(server)
    }
}

impl GoServer {
    /// The child's next stdout line, or why there is none (with the last
    /// line it wrote on stderr).
    fn line(&self) -> Result<String, String> {
        let io = self.io.lock().unwrap_or_else(|e| e.into_inner());
        io.lines.recv_timeout(SERVE_WAIT).map_err(|e| {
            let why = match e {
                mpsc::RecvTimeoutError::Timeout => {
                    format!("no answer within {}s", SERVE_WAIT.as_secs())
                }
                mpsc::RecvTimeoutError::Disconnected => {
                    // Its last words may still be in the stderr pipe.
                    let _ = io.stderr_done.recv_timeout(Duration::from_secs(1));
                    "it exited".to_string()
                }
            };
            let err = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
            let last = err.lines().last().unwrap_or("").trim();
            if last.is_empty() {
                format!("go twin -serve: {why}")
            } else {
                format!("go twin -serve: {why}: {last}")
            }
        })
    }

    /// The server process's CPU counters now.
    pub fn cpu(&self) -> Result<Cpu, String> {
        {
            let mut io = self.io.lock().unwrap_or_else(|e| e.into_inner());
            let stdin = io.stdin.as_mut().ok_or("go twin -serve: stdin closed")?;
            stdin
                .write_all(b"cpu\n")
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("go twin -serve: writing to it: {e}"))?;
        }
        let line = self.line()?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<i64>().ok());
        match (f.first(), num(1), num(2), num(3)) {
            (Some(&"cpu"), Some(c), Some(v), Some(iv)) => Ok(Cpu {
                cpu_ns: c.max(0) as u64,
                nvcsw: v,
                nivcsw: iv,
            }),
            _ => Err(format!(
                "go twin -serve said {line:?}, not \"cpu CPU_NS NVCSW NIVCSW\""
            )),
        }
    }
}

impl Drop for GoServer {
    fn drop(&mut self) {
        self.io.get_mut().unwrap_or_else(|e| e.into_inner()).stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line of the twin's output (bench/go/README.md, "Output").
#[derive(serde::Deserialize)]
struct GoRecord {
    ops: u64,
    ns_per_op: f64,
    cpu_ns_per_op: f64,
    #[serde(default)]
    extra: serde_json::Map<String, serde_json::Value>,
}

/// Parses one line of the twin's output into a sample: the raw totals
/// `extra.wall_ns` / `extra.cpu_ns` when present (exact), else the rounded
/// per-op figures times ops; every other numeric extra is kept.
pub fn parse_line(line: &str) -> Result<Sample, String> {
    let r: GoRecord =
        serde_json::from_str(line).map_err(|e| format!("bad JSON from go twin: {e}"))?;
    let raw = |k: &str| r.extra.get(k).and_then(serde_json::Value::as_f64);
    let wall = raw("wall_ns").unwrap_or(r.ns_per_op * r.ops as f64);
    let cpu = raw("cpu_ns").unwrap_or(r.cpu_ns_per_op * r.ops as f64);
    let extra = r
        .extra
        .iter()
        .filter(|(k, _)| k.as_str() != "wall_ns" && k.as_str() != "cpu_ns")
        .filter_map(|(k, x)| x.as_f64().map(|f| (k.clone(), f)))
        .collect();
    Ok(Sample {
        ops: r.ops,
        wall_ns: wall as u64,
        cpu_ns: cpu as u64,
        extra,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_the_readme_line() {
        let line = r#"{"workload":"ring/n=100","procs":2,"impl":"go","ops":1000000,"ns_per_op":181.46,"cpu_ns_per_op":203.05,"extra":{"allocs_per_op":0,"bytes_per_op":0.01,"cap":0,"cpu_ns":203047000,"gc_cycles":0,"n":100,"nivcsw":1362,"nvcsw":2692,"wall_ns":181464409}}"#;
        let s = super::parse_line(line).unwrap();
        assert_eq!(s.ops, 1_000_000);
        assert_eq!(s.wall_ns, 181_464_409);
        assert_eq!(s.cpu_ns, 203_047_000);
        assert!(s.extra.iter().any(|(k, v)| k == "n" && *v == 100.0));
    }
}
