//! No code or doc in the repository points at an issue by its number.
//!
//! The project's issue tracker is not part of the repository, so a
//! reference such as "issue N", "(issue N)" or "since issue N" points
//! nowhere for a reader of the repository alone, and means less each time
//! the tracker moves on. Write the fact it stands for instead: a date ("on
//! 2026-11-25"), what changed, or the target itself ("the goal is a p99
//! at most 1 ms"); history belongs in commit bodies, numbers in
//! BENCH_RESULTS.md with their raw files.
//!
//! Walks the repository from its root over `.rs`, `.md`, `.sh`, `.py` and
//! `.go` files (and the CI script, [`EXTRA`]), skipping hidden
//! directories, build output (`target`, or any directory holding Cargo's
//! `CACHEDIR.TAG`) and `bench/results/`, which holds raw logs as they were
//! written. A line fails when it has the word "issue" or "issues" (any
//! case) followed by a number, with or without `#` and spaces between,
//! unless one of the [`UPSTREAM`] markers comes before it on the same
//! line: an issue of another project (Go's, tokio's, Rust's) is a fact
//! about that project, and stays.

use std::fs;
use std::path::{Path, PathBuf};

/// A reference whose line has one of these before it is another
/// project's issue, each with why it may stay.
const UPSTREAM: &[(&str, &str)] = &[
    (
        "golang/go",
        "Go's tracker: where goro follows or departs from Go's runtime",
    ),
    (
        "rust-lang/",
        "Rust's trackers: compiler and standard library behaviour",
    ),
    (
        "tokio",
        "tokio's tracker: the peer the benchmarks compare with",
    ),
    (
        "hyper",
        "hyper's tracker: the HTTP library goro::net::hyper adapts",
    ),
];

/// File extensions the walk reads.
const EXTENSIONS: &[&str] = &["rs", "md", "sh", "py", "go"];

/// Files outside the walk's reach (a hidden directory, no extension) that
/// are code all the same, relative to the repository root.
const EXTRA: &[&str] = &[".ci/run"];

/// Directories, relative to the repository root, that the walk skips with
/// their reason.
const SKIPPED: &[(&str, &str)] = &[(
    "bench/results",
    "raw outputs and notes kept as they were written",
)];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("goro's manifest directory has a parent")
        .to_path_buf()
}

/// `p` relative to `root`, `/`-separated.
fn rel(root: &Path, p: &Path) -> String {
    let r = p.strip_prefix(root).unwrap();
    let parts: Vec<_> = r.iter().map(|c| c.to_string_lossy()).collect();
    parts.join("/")
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("CACHEDIR.TAG").exists() {
        return; // a Cargo target directory, whatever its name
    }
    if SKIPPED.iter().any(|(d, _)| rel(root, dir) == *d) {
        return;
    }
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy();
        if p.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(root, &p, out);
            }
        } else if p
            .extension()
            .is_some_and(|x| EXTENSIONS.iter().any(|e| x == *e))
        {
            out.push(p);
        }
    }
}

/// The byte offset of each internal issue reference in `line`: the word
/// "issue" or "issues" (any case), then optional spaces, an optional `#`
/// and optional spaces, then a digit; none where an [`UPSTREAM`] marker
/// comes earlier on the line.
fn references(line: &str) -> Vec<usize> {
    let lower = line.to_ascii_lowercase();
    let b = lower.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let blank = |b: &[u8], mut i: usize| {
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        i
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(k) = lower[from..].find("issue") {
        let at = from + k;
        from = at + 1;
        if at > 0 && word(b[at - 1]) {
            continue; // part of a longer word
        }
        let mut i = at + "issue".len();
        if i < b.len() && b[i] == b's' {
            i += 1;
        }
        i = blank(b, i);
        if i < b.len() && b[i] == b'#' {
            i = blank(b, i + 1);
        }
        if i < b.len() && b[i].is_ascii_digit() {
            let upstream = UPSTREAM.iter().any(|(m, _)| line[..at].contains(m));
            if !upstream {
                found.push(at);
            }
        }
    }
    found
}

/// Every internal issue reference in the repository, as `file:line: text`.
fn offenders() -> (Vec<String>, Vec<String>) {
    let root = repo();
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.extend(EXTRA.iter().map(|f| root.join(f)));
    let mut names: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for f in &files {
        let bytes = fs::read(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        let text = String::from_utf8_lossy(&bytes);
        let name = rel(&root, f);
        for (n, line) in text.lines().enumerate() {
            if !references(line).is_empty() {
                out.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
        names.push(name);
    }
    out.sort();
    (names, out)
}

#[test]
fn no_code_or_doc_points_at_an_issue_by_number() {
    let (files, found) = offenders();
    for must in [
        "goro/src/lib.rs",
        "BENCH_RESULTS.md",
        "scripts/check-results.sh",
    ] {
        assert!(
            files.iter().any(|f| f == must),
            "the walk from {} did not find {must}",
            repo().display()
        );
    }
    assert!(
        !files.iter().any(|f| f.starts_with("bench/results/")),
        "the walk read bench/results/, which it skips"
    );
    assert!(
        found.is_empty(),
        "internal issue references (the tracker is not in the repository): write \
         the fact instead (a date, what changed, the target itself), or, for another \
         project's issue, name the project before it (UPSTREAM in \
         goro/tests/timeless.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_matcher_finds_each_form_and_spares_upstream_ones() {
    // Built at run time so that this file holds no reference itself.
    let w = "issue";
    let cap = "Issue";
    for hit in [
        format!("since {w} 34"),
        format!("({w} 18)"),
        format!("{cap} 20's first check"),
        format!("{w}s 14 and 15"),
        format!("{w} #7"),
        format!("{w}# 7"),
        format!("{w}\t3"),
        format!("{w}12").to_uppercase(),
    ] {
        assert_eq!(references(&hit).len(), 1, "not found in {hit:?}");
    }
    for miss in [
        format!("golang/go {w} 81180"),
        format!("tokio {w} 1879"),
        format!("rust-lang/rust {w} 12345"),
        format!("the {w}'s goal"),
        format!("an {w} with the clock"),
        format!("t{w} 5"),
        format!("{w}_5"),
    ] {
        assert!(references(&miss).is_empty(), "found in {miss:?}");
    }
    // A marker counts only before the reference.
    assert_eq!(references(&format!("{w} 5, unlike tokio")).len(), 1);
}
