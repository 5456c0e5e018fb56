//! `GORO_TRACE` and `GORO_TRACE_RAW`: a streaming session for the whole
//! life of each runtime built while one is set, stopped when the runtime
//! drops, with the runtime's counters written beside it (for
//! `scripts/check-trace.py` to check the trace against them).

use super::session::{start_stream, stop_stream, Session, Sink};
use crate::sched::Sched;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Which file `GORO_TRACE` (or `GORO_TRACE_RAW`) names for the n-th
/// runtime of the process: the path itself for the first, `path.n` after
/// (unless it is a device or a pipe, which every runtime writes to).
static ENV_RUNTIMES: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Paths of runtimes traced through the environment, for the stats file
/// written when each stops.
pub(crate) struct EnvTrace {
    /// `GORO_TRACE` or `GORO_TRACE_RAW`.
    var: &'static str,
    pub(crate) path: std::path::PathBuf,
    /// Whether it is a regular file (a stats file goes beside it).
    regular: bool,
}

/// The variable's path, if it is set and not empty.
fn var(k: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(k)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
}

/// `GORO_TRACE=path` (Perfetto's format, converted when the runtime
/// drops) or `GORO_TRACE_RAW=path` (the raw form, as recorded): start
/// streaming to `path` now (at build).
/// Which of `GORO_TRACE` and `GORO_TRACE_RAW` is set, if either: a
/// runtime holds one session, so a flight recorder is refused beside it.
pub(crate) fn env_session_var() -> Option<&'static str> {
    ["GORO_TRACE", "GORO_TRACE_RAW"]
        .into_iter()
        .find(|v| var(v).is_some())
}

pub(crate) fn from_env(sched: &Arc<Sched>) -> io::Result<()> {
    let (var, path, raw) = match (var("GORO_TRACE"), var("GORO_TRACE_RAW")) {
        (None, None) => return Ok(()),
        (Some(_), Some(_)) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "GORO_TRACE and GORO_TRACE_RAW are both set: accepted one of them \
                 (GORO_TRACE=path writes Perfetto's format, GORO_TRACE_RAW=path the raw \
                 form that goro-trace converts)",
            ))
        }
        (Some(p), None) => ("GORO_TRACE", p, false),
        (None, Some(p)) => ("GORO_TRACE_RAW", p, true),
    };
    let counter = &ENV_RUNTIMES[usize::from(raw)];
    // A device or a pipe (`/dev/null`) takes every runtime's trace; a
    // regular file only the first one's.
    let regular = std::fs::metadata(&path).map_or(true, |m| m.file_type().is_file());
    // Counted once the file is made: a runtime that failed to build
    // takes no number. (Two runtimes built at the same moment may race
    // for one; `File::create` then truncates, as any reuse would.)
    let n = counter.load(Ordering::Relaxed);
    let path = if n == 0 || !regular {
        path
    } else {
        let mut s = path.into_os_string();
        s.push(format!(".{n}"));
        s.into()
    };
    let f = std::fs::File::create(&path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("{var}={}: cannot create the file: {e}", path.display()),
        )
    })?;
    counter.fetch_add(1, Ordering::Relaxed);
    let sink = if raw {
        Sink::Raw(Box::new(f))
    } else {
        Sink::Perfetto(Box::new(f))
    };
    start_stream(sched, sink)?;
    *sched.trace.env.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(EnvTrace { var, path, regular });
    Ok(())
}

/// At the end of `Runtime::drop`: stops a `trace_start` session left
/// running, and a `GORO_TRACE` or `GORO_TRACE_RAW` session (every
/// thread of the runtime has exited, so the trace is complete) and writes
/// the runtime's counters beside it, `path.stats.json`, for checking the
/// trace against them (`scripts/check-trace.py`).
pub(crate) fn runtime_dropped(sched: &Sched, stats: crate::Stats) {
    super::auto::stop(sched);
    let env = sched
        .trace
        .env
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let Some(env) = env else {
        // A `trace_start` never stopped: stop it now, so that its writer
        // is flushed and its thread (which holds the runtime) exits.
        let streaming = matches!(
            *sched
                .trace
                .session
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
            Some(Session::Stream { .. })
        );
        if streaming {
            if let Err(e) = stop_stream(sched) {
                eprintln!("goro: the trace started by trace_start failed: {e}");
            }
        }
        return;
    };
    if let Err(e) = stop_stream(sched) {
        eprintln!("goro: {}={}: {e}", env.var, env.path.display());
        return;
    }
    if !env.regular {
        return;
    }
    let mut p = env.path.into_os_string();
    p.push(".stats.json");
    if let Err(e) = std::fs::write(&p, stats_json(&stats)) {
        eprintln!(
            "goro: cannot write {}: {e}",
            std::path::Path::new(&p).display()
        );
    }
}

/// `Stats` as one JSON object, from its `Debug` form (`Stats { a: 1, .. }`).
fn stats_json(s: &crate::Stats) -> String {
    let dbg = format!("{s:?}");
    let inner = dbg
        .trim_start_matches("Stats")
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}');
    let fields: Vec<String> = inner
        .split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once(':')?;
            Some(format!("\"{}\": {}", k.trim(), v.trim()))
        })
        .collect();
    format!("{{{}}}\n", fields.join(", "))
}
