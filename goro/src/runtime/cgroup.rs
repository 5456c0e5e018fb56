//! The CPU limit of the cgroups this process runs in (the container-aware
//! default `procs`).
//!
//! # Why
//!
//! A container is usually limited by a CPU *quota* (the CFS bandwidth
//! controller: `quota` microseconds of CPU time per `period`), not by the
//! CPUs it may run on: the affinity mask shows every CPU of the host. A
//! runtime that starts one P per CPU in a container limited to 2 CPUs on a
//! 64-CPU host runs 64 threads that the kernel throttles together as soon
//! as they have used 2 CPUs' worth of a period: every thread then stops
//! for the rest of the period, a latency cliff of up to a whole period
//! (100 ms by default). So the default `procs` is the smaller of the
//! affinity count and the limit, rounded up (Go 1.25 does the same).
//!
//! # What is read
//!
//! * `/proc/self/cgroup`: which cgroup the process is in, per hierarchy.
//!   A line is `id:controllers:path`; `0::path` is the unified (v2)
//!   hierarchy, a line whose controllers include `cpu` is the v1 CPU
//!   hierarchy.
//! * `/proc/self/mountinfo`: where each hierarchy is mounted (filesystem
//!   type `cgroup2`, or `cgroup` with `cpu` among its super options) and
//!   which cgroup of it the mount shows (its root field: in a container
//!   the mount usually shows the container's own cgroup as `/`).
//! * From the process's cgroup directory up to the mount point, at every
//!   level: v2 `cpu.max` (`max PERIOD` or `QUOTA PERIOD`), v1
//!   `cpu.cfs_quota_us` (`-1` for none) with `cpu.cfs_period_us`. A
//!   missing file is no limit at that level (the root cgroup has none).
//!
//! The effective limit is the tightest level's `quota / period`: a parent
//! limited to 1 CPU throttles a child that says `max`. Go reads only the
//! leaf (golang/go issue 81180), which misses such a parent; goro walks
//! the whole path, in both hierarchies (a hybrid host has both mounted),
//! and takes the smallest.
//!
//! Everything is read relative to a root directory (`/` in production), so
//! the tests build fixture trees in a temporary directory.
//!
//! # Errors
//!
//! A file that exists but does not have the accepted form is an error that
//! names the file and the form ([`CgroupError`]). The caller falls back to
//! the affinity count and keeps the error for
//! [`crate::Runtime::procs_source`]; nothing is printed.
//!
//! Rejected: reading `cpu.max` only at the leaf (Go's choice; misses a
//! tighter parent); `std::thread::available_parallelism` (it reads the
//! quota too, but says neither whether a limit applied nor why parsing
//! failed, and cannot be pointed at fixtures).

use std::fmt;
use std::path::{Path, PathBuf};

/// A CPU limit found in the cgroup hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuLimit {
    /// The limit in CPUs, rounded up (at least 1).
    pub cpus: usize,
    /// The directory whose files set it (the tightest level).
    pub dir: PathBuf,
}

/// A cgroup file that could not be read as the accepted form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupError {
    /// The file.
    pub file: PathBuf,
    /// What was wrong and what is accepted.
    pub what: String,
}

impl fmt::Display for CgroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "goro: {}: {}", self.file.display(), self.what)
    }
}

impl std::error::Error for CgroupError {}

fn err(file: &Path, what: impl Into<String>) -> CgroupError {
    CgroupError {
        file: file.to_path_buf(),
        what: what.into(),
    }
}

/// Reads `file`; `Ok(None)` if it does not exist.
fn read_opt(file: &Path) -> Result<Option<String>, CgroupError> {
    match std::fs::read_to_string(file) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(err(file, format!("cannot be read ({e})"))),
    }
}

/// Which hierarchy a cgroup directory belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// The CPU limit of the process whose `/proc` and `/sys` lie under `root`
/// (`/` for this process): `Ok(None)` when no level of either hierarchy
/// sets one (or no cgroup filesystem is mounted).
pub fn cpu_limit(root: &Path) -> Result<Option<CpuLimit>, CgroupError> {
    let cg_file = root.join("proc/self/cgroup");
    let Some(cgroups) = read_opt(&cg_file)? else {
        return Ok(None); // no cgroups (not Linux, or /proc not mounted)
    };
    let mi_file = root.join("proc/self/mountinfo");
    let mountinfo = read_opt(&mi_file)?.unwrap_or_default();
    let mut best: Option<CpuLimit> = None;
    for (version, path) in parse_cgroup(&cg_file, &cgroups)? {
        let Some((mount_root, mount_point)) = find_mount(&mi_file, &mountinfo, version)? else {
            continue;
        };
        // The cgroup path is relative to the hierarchy's root; the mount
        // shows the cgroup `mount_root` at `mount_point`.
        let rel = if mount_root == "/" {
            Some(path.as_str())
        } else {
            path.strip_prefix(mount_root.as_str())
                .filter(|r| r.is_empty() || r.starts_with('/'))
        };
        let Some(rel) = rel else {
            // The process's cgroup is outside what the mount shows (a
            // container that sees its parent's mount): nothing to read.
            continue;
        };
        let top = root.join(mount_point.trim_start_matches('/'));
        let mut dir = top.join(rel.trim_start_matches('/'));
        loop {
            if let Some(cpus) = level_limit(&dir, version)? {
                if best.as_ref().is_none_or(|b| cpus < b.cpus) {
                    best = Some(CpuLimit {
                        cpus,
                        dir: dir.clone(),
                    });
                }
            }
            if dir == top || !dir.pop() || !dir.starts_with(&top) {
                break;
            }
        }
    }
    Ok(best)
}

/// The `(version, path)` of every hierarchy that can limit the CPU: the
/// unified one and the v1 one with the `cpu` controller.
fn parse_cgroup(file: &Path, text: &str) -> Result<Vec<(Version, String)>, CgroupError> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(err(
                file,
                format!("line {line:?} is malformed: accepted ID:CONTROLLERS:PATH"),
            ));
        };
        if id.parse::<u32>().is_err() || !path.starts_with('/') {
            return Err(err(
                file,
                format!(
                    "line {line:?} is malformed: accepted ID:CONTROLLERS:PATH with a numeric ID and an absolute PATH"
                ),
            ));
        }
        if id == "0" && ctrls.is_empty() {
            out.push((Version::V2, path.to_string()));
        } else if ctrls.split(',').any(|c| c == "cpu") {
            out.push((Version::V1, path.to_string()));
        }
    }
    Ok(out)
}

/// The root and mount point of the hierarchy of `version` (for v1, the
/// one with the `cpu` controller), from mountinfo.
fn find_mount(
    file: &Path,
    text: &str,
    version: Version,
) -> Result<Option<(String, String)>, CgroupError> {
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(' ').collect();
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
        let sep = fields.iter().position(|f| *f == "-");
        let (Some(sep), true) = (sep, fields.len() >= 6) else {
            return Err(err(
                file,
                format!(
                    "line {line:?} is malformed: accepted ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS"
                ),
            ));
        };
        if sep < 6 || fields.len() < sep + 3 {
            return Err(err(
                file,
                format!(
                    "line {line:?} is malformed: accepted ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS"
                ),
            ));
        }
        let fstype = fields[sep + 1];
        let superopts = fields.get(sep + 3).copied().unwrap_or("");
        let found = match version {
            Version::V2 => fstype == "cgroup2",
            Version::V1 => fstype == "cgroup" && superopts.split(',').any(|o| o == "cpu"),
        };
        if found {
            return Ok(Some((unescape(fields[3]), unescape(fields[4]))));
        }
    }
    Ok(None)
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The limit set at one level, in CPUs rounded up; `None` for no limit.
fn level_limit(dir: &Path, version: Version) -> Result<Option<usize>, CgroupError> {
    match version {
        Version::V2 => {
            let file = dir.join("cpu.max");
            let Some(text) = read_opt(&file)? else {
                return Ok(None);
            };
            let accepted = "accepted \"max PERIOD\" or \"QUOTA PERIOD\" with integers QUOTA >= 1 and PERIOD >= 1";
            let mut it = text.split_whitespace();
            let (Some(q), Some(p), None) = (it.next(), it.next(), it.next()) else {
                return Err(err(
                    &file,
                    format!("{:?} is malformed: {accepted}", text.trim()),
                ));
            };
            let period: u64 = match p.parse() {
                Ok(p) if p >= 1 => p,
                _ => {
                    return Err(err(
                        &file,
                        format!("{:?} is malformed: {accepted}", text.trim()),
                    ))
                }
            };
            if q == "max" {
                return Ok(None);
            }
            match q.parse::<u64>() {
                Ok(quota) if quota >= 1 => Ok(Some(cpus(quota, period))),
                _ => Err(err(
                    &file,
                    format!("{:?} is malformed: {accepted}", text.trim()),
                )),
            }
        }
        Version::V1 => {
            let qfile = dir.join("cpu.cfs_quota_us");
            let Some(qtext) = read_opt(&qfile)? else {
                return Ok(None);
            };
            let quota: i64 = qtext.trim().parse().map_err(|_| {
                err(
                    &qfile,
                    format!(
                        "{:?} is malformed: accepted an integer (-1: no limit)",
                        qtext.trim()
                    ),
                )
            })?;
            if quota < 0 {
                if quota == -1 {
                    return Ok(None);
                }
                return Err(err(
                    &qfile,
                    format!("{quota} is malformed: accepted -1 (no limit) or a positive integer"),
                ));
            }
            if quota == 0 {
                return Err(err(
                    &qfile,
                    "0 is malformed: accepted -1 (no limit) or a positive integer",
                ));
            }
            let pfile = dir.join("cpu.cfs_period_us");
            let Some(ptext) = read_opt(&pfile)? else {
                return Err(err(
                    &pfile,
                    "is missing beside cpu.cfs_quota_us: accepted a positive integer",
                ));
            };
            match ptext.trim().parse::<u64>() {
                Ok(period) if period >= 1 => Ok(Some(cpus(quota as u64, period))),
                _ => Err(err(
                    &pfile,
                    format!(
                        "{:?} is malformed: accepted a positive integer",
                        ptext.trim()
                    ),
                )),
            }
        }
    }
}

/// `quota / period` rounded up, at least 1.
fn cpus(quota: u64, period: u64) -> usize {
    (quota.div_ceil(period)).max(1) as usize
}
