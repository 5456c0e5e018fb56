//! The default number of Ps from the cgroup CPU limit, against
//! fixture trees built in a temporary directory: v1, v2, a tighter
//! parent, `max`, a hybrid host, and malformed files (an error naming the
//! file and the accepted form, and the affinity count as the fallback).

use goro::runtime::cgroup::cpu_limit;
use goro::runtime::procs::{MachineProcs, ProcsSource};
use std::path::{Path, PathBuf};

/// A fresh fixture root with the given files (path relative to the root,
/// content).
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("goro-cgroup-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    root
}

const V2_MOUNT: &str = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
const V1_MOUNT: &str =
    "22 21 0:20 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n\
                        23 21 0:21 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n";

fn limit(root: &Path) -> Option<usize> {
    cpu_limit(root).expect("parses").map(|l| l.cpus)
}

#[test]
fn v2_quota_over_period_is_rounded_up() {
    let root = tree(
        "v2",
        &[
            ("proc/self/cgroup", "0::/app\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/app/cpu.max", "150000 100000\n"),
        ],
    );
    let l = cpu_limit(&root).unwrap().unwrap();
    assert_eq!(l.cpus, 2, "1.5 CPUs round up to 2");
    assert_eq!(l.dir, root.join("sys/fs/cgroup/app"));
}

#[test]
fn v2_max_is_no_limit() {
    let root = tree(
        "v2max",
        &[
            ("proc/self/cgroup", "0::/app\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/app/cpu.max", "max 100000\n"),
        ],
    );
    assert_eq!(limit(&root), None);
}

#[test]
fn v2_a_tighter_parent_wins_over_the_leaf() {
    let root = tree(
        "v2nested",
        &[
            ("proc/self/cgroup", "0::/kubepods/pod1/app\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/kubepods/pod1/app/cpu.max", "max 100000\n"),
            ("sys/fs/cgroup/kubepods/pod1/cpu.max", "50000 100000\n"),
            ("sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n"),
        ],
    );
    let l = cpu_limit(&root).unwrap().unwrap();
    assert_eq!(l.cpus, 1, "the pod's half CPU, rounded up");
    assert_eq!(l.dir, root.join("sys/fs/cgroup/kubepods/pod1"));
}

#[test]
fn v1_quota_and_period_with_a_tighter_parent() {
    let root = tree(
        "v1",
        &[
            (
                "proc/self/cgroup",
                "5:memory:/a/b\n4:cpu,cpuacct:/a/b\n0::/\n",
            ),
            ("proc/self/mountinfo", V1_MOUNT),
            ("sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_quota_us", "-1\n"),
            (
                "sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_period_us",
                "100000\n",
            ),
            ("sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us", "300000\n"),
            ("sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us", "100000\n"),
        ],
    );
    assert_eq!(limit(&root), Some(3));
}

#[test]
fn v1_minus_one_everywhere_is_no_limit() {
    let root = tree(
        "v1none",
        &[
            ("proc/self/cgroup", "4:cpu,cpuacct:/a\n"),
            ("proc/self/mountinfo", V1_MOUNT),
            ("sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us", "-1\n"),
            ("sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us", "100000\n"),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"),
        ],
    );
    assert_eq!(limit(&root), None);
}

#[test]
fn a_mount_of_the_containers_own_cgroup_maps_the_path() {
    // In a container the mount's root field is the container's cgroup and
    // /proc/self/cgroup names the full path under the host's hierarchy.
    let root = tree(
        "v2ns",
        &[
            ("proc/self/cgroup", "0::/docker/abc/sub\n"),
            (
                "proc/self/mountinfo",
                "30 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
            ),
            ("sys/fs/cgroup/sub/cpu.max", "max 100000\n"),
            ("sys/fs/cgroup/cpu.max", "200000 100000\n"),
        ],
    );
    assert_eq!(limit(&root), Some(2));
}

#[test]
fn a_hybrid_host_takes_the_smaller_of_v1_and_v2() {
    let mounts = format!("{V1_MOUNT}{V2_MOUNT}").replace(
        "/sys/fs/cgroup rw,nosuid - cgroup2",
        "/sys/fs/cgroup/unified rw,nosuid - cgroup2",
    );
    let root = tree(
        "hybrid",
        &[
            ("proc/self/cgroup", "4:cpu,cpuacct:/x\n0::/x\n"),
            ("proc/self/mountinfo", &mounts),
            ("sys/fs/cgroup/cpu,cpuacct/x/cpu.cfs_quota_us", "400000\n"),
            ("sys/fs/cgroup/cpu,cpuacct/x/cpu.cfs_period_us", "100000\n"),
            ("sys/fs/cgroup/unified/x/cpu.max", "200000 100000\n"),
        ],
    );
    assert_eq!(limit(&root), Some(2));
}

#[test]
fn no_cgroup_files_is_no_limit() {
    let root = tree("none", &[]);
    assert_eq!(limit(&root), None);
}

fn malformed(name: &str, files: &[(&str, &str)], file: &str, form: &str) {
    let root = tree(name, files);
    let e = cpu_limit(&root).expect_err("malformed");
    assert_eq!(e.file, root.join(file), "the error names the file");
    let msg = e.to_string();
    assert!(
        msg.contains(form),
        "the error names the accepted form: {msg}"
    );
    // The default falls back to the affinity count, keeping the reason.
    let m = MachineProcs {
        affinity: 3,
        cgroup: Err(e),
    };
    assert_eq!(m.procs(), 3);
}

#[test]
fn malformed_cpu_max_is_an_error_and_the_affinity_count_applies() {
    malformed(
        "bad-cpumax",
        &[
            ("proc/self/cgroup", "0::/app\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/app/cpu.max", "lots 100000\n"),
        ],
        "sys/fs/cgroup/app/cpu.max",
        "accepted \"max PERIOD\" or \"QUOTA PERIOD\"",
    );
    malformed(
        "bad-period",
        &[
            ("proc/self/cgroup", "0::/app\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/app/cpu.max", "max 0\n"),
        ],
        "sys/fs/cgroup/app/cpu.max",
        "PERIOD >= 1",
    );
}

#[test]
fn malformed_v1_files_are_errors() {
    malformed(
        "bad-quota",
        &[
            ("proc/self/cgroup", "4:cpu:/a\n"),
            (
                "proc/self/mountinfo",
                V1_MOUNT.replace("cpu,cpuacct", "cpu").as_str(),
            ),
            ("sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "fast\n"),
            ("sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n"),
        ],
        "sys/fs/cgroup/cpu/a/cpu.cfs_quota_us",
        "accepted an integer (-1: no limit)",
    );
    malformed(
        "missing-period",
        &[
            ("proc/self/cgroup", "4:cpu:/a\n"),
            (
                "proc/self/mountinfo",
                V1_MOUNT.replace("cpu,cpuacct", "cpu").as_str(),
            ),
            ("sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "50000\n"),
        ],
        "sys/fs/cgroup/cpu/a/cpu.cfs_period_us",
        "accepted a positive integer",
    );
}

#[test]
fn malformed_proc_files_are_errors() {
    malformed(
        "bad-cgroup",
        &[
            ("proc/self/cgroup", "garbage\n"),
            ("proc/self/mountinfo", V2_MOUNT),
        ],
        "proc/self/cgroup",
        "accepted ID:CONTROLLERS:PATH",
    );
    malformed(
        "bad-mountinfo",
        &[
            ("proc/self/cgroup", "0::/\n"),
            ("proc/self/mountinfo", "1 2 3\n"),
        ],
        "proc/self/mountinfo",
        "accepted ID PARENT MAJ:MIN ROOT MOUNTPOINT",
    );
}

#[test]
fn the_limit_lowers_the_affinity_count_but_never_below_one() {
    let root = tree(
        "small",
        &[
            ("proc/self/cgroup", "0::/app\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/app/cpu.max", "1000 100000\n"),
        ],
    );
    let m = MachineProcs {
        affinity: 8,
        cgroup: cpu_limit(&root),
    };
    assert_eq!(m.procs(), 1, "1% of a CPU is 1 P");
    let m = MachineProcs {
        affinity: 2,
        cgroup: Ok(None),
    };
    assert_eq!(m.procs(), 2);
}

#[test]
fn the_source_says_where_procs_came_from() {
    let rt = goro::Runtime::builder().procs(3).build().unwrap();
    assert_eq!(rt.procs_source(), &ProcsSource::Builder);
    assert!(!rt.follows_procs(), "a number set by hand is not followed");
    if std::env::var_os("GORO_PROCS").is_none() && std::env::var_os("GORO_UPDATE_PROCS").is_none() {
        let rt = goro::Runtime::new().unwrap();
        match rt.procs_source() {
            ProcsSource::Machine(m) => assert_eq!(rt.procs(), m.procs()),
            other => panic!("the default comes from the machine, got {other:?}"),
        }
        assert!(rt.follows_procs(), "the machine's default is followed");
    }
}
