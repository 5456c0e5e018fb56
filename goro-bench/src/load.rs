//! The second copy of the process that `oversub` runs beside itself.
//!
//! `oversub` measures a workload while the cores are oversubscribed by a
//! second copy of the same program running the same workload on the same
//! runtime, procs and policy (seed 000: a runtime that burns CPU while it
//! waits steals it from the other process). The copy is this binary's hidden
//! `__load` subcommand: it runs the workload once (so it is warm), prints
//! `ready`, then runs it in a loop. It exits when its stdin closes (the
//! parent dropped the [`LoadChild`] or died), and after 120 s whatever
//! happens, so a stuck parent never leaves it behind for long.

use crate::registry::{self, Ctx};
use crate::rt::Rt;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Longest a load child lives.
const MAX_LIFE: Duration = Duration::from_secs(120);

/// A running second copy; dropping it kills it.
pub struct LoadChild {
    child: Child,
}

impl LoadChild {
    /// Starts the copy from inside a task (the start blocks for one warm-up
    /// run, so it goes to the blocking pool). Panics, failing the run with a
    /// clear message, when the copy cannot start.
    pub fn start_async<R: Rt>(
        ctx: &Ctx,
        workload: &'static str,
    ) -> impl Future<Output = LoadChild> + Send + 'static {
        let ctx = ctx.clone();
        async move {
            R::run_blocking(move || LoadChild::start(&ctx, workload))
                .await
                .unwrap_or_else(|e| panic!("oversub: cannot start the second copy: {e}"))
        }
    }

    fn start(ctx: &Ctx, workload: &str) -> Result<LoadChild, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut cmd = Command::new(exe);
        cmd.args(["__load", "--workload", workload, "--runtime", ctx.runtime])
            .args(["--procs", &ctx.procs.to_string()]);
        if !ctx.policy.is_empty() {
            cmd.args(["--policy", &ctx.policy]);
        }
        if ctx.quick {
            cmd.arg("--quick");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("reading its stdout: {e}"))?;
        if line.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "it exited before it was ready (said {:?})",
                line.trim()
            ));
        }
        Ok(LoadChild { child })
    }
}

impl Drop for LoadChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `__load` subcommand: run `workload` on `runtime` in a loop until
/// stdin closes (or 120 s pass).
pub fn load_main(workload: &str, runtime: &str, procs: usize, policy: &str, quick: bool) -> ! {
    std::thread::spawn(|| {
        let mut buf = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(0);
    });
    std::thread::spawn(|| {
        std::thread::sleep(MAX_LIFE);
        std::process::exit(0);
    });
    let fail = |msg: String| -> ! {
        eprintln!("goro-bench __load: {msg}");
        std::process::exit(1)
    };
    let reg = registry::all();
    let Some(w) = reg.iter().find(|w| w.name == workload) else {
        fail(format!("unknown workload {workload}"))
    };
    let ctx = Ctx {
        procs,
        quick,
        runtime: if runtime == "goro" { "goro" } else { "tokio" },
        policy: policy.to_string(),
    };
    let mut ready = false;
    let mut say_ready = || {
        if !ready {
            ready = true;
            println!("ready");
            let _ = std::io::stdout().flush();
        }
    };
    match runtime {
        "goro" => {
            let body = w.goro.clone().unwrap_or_else(|e| fail(e.to_string()));
            let p = goro::Policy::default()
                .with_overrides(if policy.is_empty() { "default" } else { policy })
                .unwrap_or_else(|e| fail(e.to_string()));
            let rt = goro::Runtime::builder()
                .procs(procs)
                .policy(p)
                .thread_name("gb-load")
                .build()
                .unwrap_or_else(|e| fail(e.to_string()));
            loop {
                let b = body.clone();
                let c = ctx.clone();
                if let Err(e) = rt.block_on(async move { goro::spawn(b(c)).await }) {
                    fail(e.to_string());
                }
                say_ready();
            }
        }
        "tokio" => {
            let body = w.tokio.clone().unwrap_or_else(|e| fail(e.to_string()));
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(procs)
                .enable_all()
                .build()
                .unwrap_or_else(|e| fail(e.to_string()));
            loop {
                let b = body.clone();
                let c = ctx.clone();
                if let Err(e) = rt.block_on(async move { tokio::spawn(b(c)).await }) {
                    fail(e.to_string());
                }
                say_ready();
            }
        }
        other => fail(format!("unknown runtime {other}")),
    }
}
