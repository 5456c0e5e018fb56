//! The per-op counters a run adds to its [`Sample`]'s extras: goro's
//! scheduler counters (from `Runtime::stats` before and after the run) and
//! every column's voluntary context switches per op. They are what wall
//! time on a machine with fewer cores than procs cannot show.

use super::Sample;

/// The goro counters a run adds as extras: the share of wall × procs spent
/// in find-runnable's slow path and in steal passes (seed 002's measure),
/// and steals (task migrations) / runnext steals (steals of a lone task) /
/// parks / wakeups (threads unparked or started) / preemptions per op.
/// Seed 002's work measures, which wall time on a machine with fewer cores
/// than procs cannot show: per search (slow-path entry) the other Ps'
/// queues read (about a cache line each) and the steal attempts that took
/// nothing; searches per op; and the slow path's thread CPU time over the
/// process CPU time of the measured region. Counted over the whole run
/// (setup included), so per-op counts and the CPU share are slightly high
/// for workloads with
/// heavy setup.
pub(crate) fn goro_extras(s: &mut Sample, before: &goro::Stats, after: &goro::Stats, procs: usize) {
    let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
    let denom = (s.wall_ns as f64 * procs as f64).max(1.0);
    let ops = s.ops.max(1) as f64;
    let finds = d(after.find_runnable_calls, before.find_runnable_calls).max(1.0);
    s.extra.push((
        "inspected_per_find".into(),
        d(after.queues_inspected, before.queues_inspected) / finds,
    ));
    s.extra.push((
        "failed_steals_per_find".into(),
        d(after.steal_fails, before.steal_fails) / finds,
    ));
    s.extra.push((
        "finds_per_op".into(),
        d(after.find_runnable_calls, before.find_runnable_calls) / ops,
    ));
    if after.find_cpu_ns > 0 {
        // Only where measured (`Opts::find_cpu`), else the table shows 0%.
        s.extra.push((
            "find_cpu_share".into(),
            d(after.find_cpu_ns, before.find_cpu_ns) / (s.cpu_ns as f64).max(1.0),
        ));
    }
    s.extra.push((
        "find_runnable_share".into(),
        d(after.find_runnable_ns, before.find_runnable_ns) / denom,
    ));
    s.extra.push((
        "steal_share".into(),
        d(after.steal_ns, before.steal_ns) / denom,
    ));
    s.extra
        .push(("steals_per_op".into(), d(after.steals, before.steals) / ops));
    s.extra.push((
        "runnext_steals_per_op".into(),
        d(after.runnext_steals, before.runnext_steals) / ops,
    ));
    s.extra
        .push(("parks_per_op".into(), d(after.parks, before.parks) / ops));
    s.extra.push((
        "wakeups_per_op".into(),
        d(
            after.unparks + after.threads_started,
            before.unparks + before.threads_started,
        ) / ops,
    ));
    s.extra.push((
        "preemptions_per_op".into(),
        d(after.preemptions, before.preemptions) / ops,
    ));
    // Rounds of active spinning by threads looking for work (find-runnable
    // before it parks) or waiting for a busy P's lone task (`spins`).
    s.extra
        .push(("spins_per_op".into(), d(after.spins, before.spins) / ops));
}

/// The per-op counter every column has: voluntary context switches of the
/// process per op (`nvcsw` of the region's rusage: a thread that blocked in
/// the kernel, a futex wait that slept or a park), next to goro's own
/// `parks_per_op` and `wakeups_per_op`.
pub(crate) fn per_op_counters(s: &mut Sample) {
    let nvcsw = s.extra.iter().find(|(k, _)| k == "nvcsw").map(|(_, v)| *v);
    if let Some(n) = nvcsw {
        let per_op = n / s.ops.max(1) as f64;
        s.extra.push(("nvcsw_per_op".into(), per_op));
    }
}
