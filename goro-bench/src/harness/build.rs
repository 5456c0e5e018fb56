//! Building a row's runtimes: goro with the contender's policy, tokio's
//! multi-thread runtime, each with `procs` workers and its threads named
//! `gb-*` (the panic hook, `guard.rs`, keeps their panics quiet). Built
//! once per row and shared by its runs.

use std::sync::Arc;

pub(crate) fn build_goro(
    procs: usize,
    policy: &goro::Policy,
    find_cpu: bool,
) -> Result<Arc<goro::Runtime>, String> {
    goro::Runtime::builder()
        .procs(procs)
        .policy(policy.clone())
        .thread_name("gb-goro")
        .measure_find_cpu(find_cpu) // find_cpu_share (Opts::find_cpu)
        .build()
        .map(Arc::new)
        .map_err(|e| format!("cannot build the goro runtime: {e}"))
}

pub(crate) fn build_tokio(procs: usize) -> Result<Arc<tokio::runtime::Runtime>, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_all()
        .thread_name("gb-tokio")
        .build()
        .map(Arc::new)
        .map_err(|e| format!("cannot build the tokio runtime: {e}"))
}
