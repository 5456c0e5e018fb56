//! One row's measurement ([`measure_row`]): every contender's runtime
//! built once, one warm-up run each, then N rounds of one run each in turn,
//! each run guarded by the deadline; then the runtimes shut down one by
//! one under a deadline of their own. The module comment of `harness.rs`
//! says why the runs are interleaved.

use super::build::{build_goro, build_tokio};
use super::counters::{goro_extras, per_op_counters};
use super::guard::guarded;
use super::{Contender, Kind, Measurement, Opts, Sample, Ui};
use crate::gobench::{GoBench, GoServer};
use crate::registry::{Body, Ctx, Drive, Placement, Workload};
use std::sync::Arc;
use std::time::Duration;

enum State {
    Goro(Arc<goro::Runtime>, Body),
    Tokio(Arc<tokio::runtime::Runtime>, Body),
    Go,
    GoServe(Arc<GoServer>, Drive),
    Off,
}

fn to_sample(out: crate::registry::RunOut) -> Sample {
    Sample {
        ops: out.ops,
        wall_ns: out.wall_ns,
        cpu_ns: out.cpu_ns,
        extra: out.extra,
    }
}

fn run_once(
    state: &State,
    w: &Workload,
    ctx: &Ctx,
    opts: &Opts,
    go: &GoBench,
    ui: &Ui,
) -> Result<Sample, String> {
    let procs = ctx.procs;
    match state {
        State::Goro(rt, body) => {
            let (rt, body, ctx) = (rt.clone(), body.clone(), ctx.clone());
            let placement = w.placement;
            guarded(opts.timeout, move || {
                let s0 = rt.stats();
                let r = match placement {
                    Placement::Spawned => rt.block_on(async move { goro::spawn(body(ctx)).await }),
                    // A panic in the main task resumes here (`run`), and
                    // `guarded` reports it.
                    Placement::Main => Ok(rt.run(body(ctx))),
                    Placement::Local => Ok(rt.block_on(body(ctx))),
                };
                let s1 = rt.stats();
                let mut s = to_sample(r.map_err(|e| e.to_string())?);
                goro_extras(&mut s, &s0, &s1, procs);
                Ok(s)
            })
        }
        State::Tokio(rt, body) => {
            let (rt, body, ctx) = (rt.clone(), body.clone(), ctx.clone());
            let placement = w.placement;
            guarded(opts.timeout, move || {
                let r = match placement {
                    Placement::Spawned => rt.block_on(async move { tokio::spawn(body(ctx)).await }),
                    // `#[tokio::main]`: the body polled on this thread.
                    Placement::Main | Placement::Local => Ok(rt.block_on(body(ctx))),
                };
                Ok(to_sample(r.map_err(|e| e.to_string())?))
            })
        }
        State::Go => {
            let (s, stderr) = go.run(&w.name, procs, opts.quick, opts.timeout)?;
            if !stderr.is_empty() {
                ui.note(&format!(
                    "{} procs={procs} go says: {}",
                    w.name,
                    stderr.replace('\n', " | ")
                ));
            }
            Ok(s)
        }
        State::GoServe(server, drive) => {
            let (server, drive, ctx) = (server.clone(), *drive, ctx.clone());
            guarded(opts.timeout, move || {
                let probe = || server.cpu();
                drive(server.addr, &ctx, Some(&probe)).map(to_sample)
            })
        }
        State::Off => Err("off".into()),
    }
}

/// Measures one row: `w` at `procs` for every contender, interleaved.
pub fn measure_row(
    w: &Workload,
    procs: usize,
    contenders: &[Contender],
    opts: &Opts,
    go: &GoBench,
    ui: &Ui,
) -> Vec<Measurement> {
    let mut ms: Vec<Measurement> = contenders
        .iter()
        .map(|c| Measurement {
            workload: w.name.clone(),
            procs,
            label: c.label.clone(),
            impl_name: c.impl_name(),
            policy: c.policy_spec.clone(),
            samples: Vec::new(),
            missing: None,
            error: None,
        })
        .collect();
    let mut states: Vec<State> = Vec::new();
    for (c, m) in contenders.iter().zip(ms.iter_mut()) {
        let st = match &c.kind {
            Kind::Goro(p) => match &w.goro {
                Err(note) => {
                    m.missing = Some(note.to_string());
                    State::Off
                }
                Ok(b) => match build_goro(procs, p, opts.find_cpu) {
                    Ok(rt) => State::Goro(rt, b.clone()),
                    Err(e) => {
                        m.error = Some(e);
                        State::Off
                    }
                },
            },
            Kind::Tokio => match &w.tokio {
                Err(note) => {
                    m.missing = Some(note.to_string());
                    State::Off
                }
                Ok(b) => match build_tokio(procs) {
                    Ok(rt) => State::Tokio(rt, b.clone()),
                    Err(e) => {
                        m.error = Some(e);
                        State::Off
                    }
                },
            },
            Kind::Go => match w
                .go_note
                .map(str::to_string)
                .or_else(|| go.missing(&w.name))
            {
                Some(note) => {
                    m.missing = Some(note);
                    State::Off
                }
                None => match w.go_drive {
                    None => State::Go,
                    Some(drive) => match go.serve(&w.name, procs) {
                        Ok(server) => State::GoServe(Arc::new(server), drive),
                        Err(e) => {
                            m.error = Some(e);
                            State::Off
                        }
                    },
                },
            },
        };
        if let Some(e) = &m.error {
            ui.note(&format!("{} procs={procs} {}: {e}", w.name, c.label));
        }
        states.push(st);
    }
    let ctx_for = |c: &Contender| Ctx {
        procs,
        quick: opts.quick,
        runtime: if matches!(c.kind, Kind::Tokio) {
            "tokio"
        } else {
            "goro"
        },
        policy: c.policy_spec.clone(),
    };

    // Warm-up (the Go twin warms up inside each invocation; a served one
    // is warmed up here like the Rust runtimes).
    for (i, c) in contenders.iter().enumerate() {
        ui.status(format!("{} procs={procs} {} warm-up", w.name, c.label));
        if matches!(
            states[i],
            State::Goro(..) | State::Tokio(..) | State::GoServe(..)
        ) {
            if let Err(e) = run_once(&states[i], w, &ctx_for(c), opts, go, ui) {
                ui.note(&format!(
                    "{} procs={procs} {}: warm-up failed: {e}",
                    w.name, c.label
                ));
                ms[i].error = Some(e);
                states[i] = State::Off;
            }
        }
        ui.step();
    }
    for r in 0..opts.runs {
        for (i, c) in contenders.iter().enumerate() {
            ui.status(format!(
                "{} procs={procs} {} run {}/{}",
                w.name,
                c.label,
                r + 1,
                opts.runs
            ));
            if !matches!(states[i], State::Off) {
                match run_once(&states[i], w, &ctx_for(c), opts, go, ui) {
                    Ok(mut s) => {
                        per_op_counters(&mut s);
                        ms[i].samples.push(s)
                    }
                    Err(e) => {
                        ui.note(&format!(
                            "{} procs={procs} {}: run {} failed: {e}",
                            w.name,
                            c.label,
                            r + 1
                        ));
                        ms[i].error = Some(e);
                        states[i] = State::Off;
                    }
                }
            }
            ui.step();
        }
    }
    // Shut the row's runtimes down one by one, each under a deadline: a
    // runtime that cannot stop must not hang the report, and it is that
    // column's failure (a hang at shutdown is a lost wakeup too), which
    // fails `run` and `compare`.
    for (i, st) in states.into_iter().enumerate() {
        if matches!(st, State::Off) {
            continue;
        }
        if let Err(e) = guarded(opts.timeout.min(SHUTDOWN_LIMIT), move || {
            drop(st);
            Ok(())
        }) {
            let e = format!("shutting the runtime down: {e}");
            ui.note(&format!(
                "{} procs={procs} {}: {e}",
                w.name, contenders[i].label
            ));
            ms[i].error.get_or_insert(e);
        }
    }
    ms
}

/// Longest a row's runtime (or served Go twin) may take to shut down (or
/// the run deadline, `--timeout`, when that is shorter).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(20);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::steps;
    use crate::registry::{body, Meter, RunOut};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Set to let the task stuck in its poll go (the test's cleanup).
    static RELEASE: AtomicBool = AtomicBool::new(false);
    /// Set by that task once its poll has begun.
    static STUCK: AtomicBool = AtomicBool::new(false);
    static CALLS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn a_runtime_that_hangs_at_shutdown_fails_its_column() {
        // The body's last call leaves a task in a poll that does not return
        // (until RELEASE): the runs complete, the runtime's drop then waits
        // for that thread.
        let w =
            Workload::new("hang_at_shutdown", "sched", "op", (1, 1)).goro(Ok(body(|_ctx| async {
                let m = Meter::start();
                if CALLS.fetch_add(1, Ordering::SeqCst) == 1 {
                    drop(goro::spawn(async {
                        STUCK.store(true, Ordering::SeqCst);
                        while !RELEASE.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }));
                    // Return only once the poll has begun: a shutdown
                    // before it would drop the task unpolled.
                    let deadline = std::time::Instant::now() + Duration::from_secs(10);
                    while !STUCK.load(Ordering::SeqCst) {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "the stuck task was not polled within 10 s"
                        );
                        goro::yield_now().await;
                    }
                }
                RunOut::new(1, m.stop())
            })));
        let contenders = [Contender {
            label: "goro".into(),
            kind: Kind::Goro(goro::Policy::default()),
            policy_spec: String::new(),
        }];
        let opts = Opts {
            runs: 1,
            quick: true,
            timeout: Duration::from_secs(2),
            find_cpu: false,
        };
        let go = GoBench {
            bin: None,
            names: Default::default(),
            note: Some("not in this test".into()),
            broken: false,
        };
        let ui = Ui::new(steps(1, &opts));
        let ms = measure_row(&w, 2, &contenders, &opts, &go, &ui);
        RELEASE.store(true, Ordering::SeqCst);
        assert_eq!(ms[0].samples.len(), 1, "the run itself completed: {ms:?}");
        let e = ms[0].error.as_deref().unwrap_or("no error");
        assert!(
            e.starts_with("shutting the runtime down: timed out after 2s"),
            "{e}"
        );
    }
}
