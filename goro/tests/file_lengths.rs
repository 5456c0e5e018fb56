//! No `.rs` file in the workspace is over 600 lines unless it is on
//! [`ALLOWED`] with its reason (CONTRIBUTING.md, "One concept per file").
//!
//! Walks the whole workspace from the repository root (every crate's
//! `src/`, `tests/`, `examples/` and `benches/`, and the shared
//! `examples/`), skipping hidden directories and build output (`target`,
//! or any directory holding Cargo's `CACHEDIR.TAG`). A file that grows past
//! the limit fails the test with its name and length: split it, or, if it
//! is one concept, say why in its header and add it here. An entry whose
//! file is gone or back under the limit fails too, so the list only
//! shrinks.

use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a file may have without a reason.
const LIMIT: usize = 600;

/// The files over [`LIMIT`] today, relative to the repository root, each
/// with why it is still one file.
const ALLOWED: &[(&str, &str)] = &[
    (
        "goro-bench/src/compare.rs",
        "one concept: compare's default rows and ratio caveats; about a third is the tests that pin those lists",
    ),
    (
        "goro/src/chan/select.rs",
        "one concept: select!'s cases and their one wait (Select, RecvCase, SendCase); a fifth of it is the protocol's header",
    ),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("goro's manifest directory has a parent")
        .to_path_buf()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("CACHEDIR.TAG").exists() {
        return; // a Cargo target directory, whatever its name
    }
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy();
        if p.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rs_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// Every `.rs` file of the workspace with its line count, by path relative
/// to the repository root (`/`-separated).
fn lengths() -> Vec<(String, usize)> {
    let root = repo();
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    let mut out: Vec<_> = files
        .iter()
        .map(|f| {
            let text =
                fs::read_to_string(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
            let rel = f.strip_prefix(&root).unwrap();
            let rel: Vec<_> = rel.iter().map(|c| c.to_string_lossy()).collect();
            (rel.join("/"), text.lines().count())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn no_file_is_over_the_limit_without_a_reason() {
    let all = lengths();
    assert!(
        all.iter().any(|(f, _)| f == "goro/src/lib.rs"),
        "the walk from {} did not find goro/src/lib.rs",
        repo().display()
    );
    let over: Vec<String> = all
        .iter()
        .filter(|(f, n)| *n > LIMIT && !ALLOWED.iter().any(|(a, _)| a == f))
        .map(|(f, n)| format!("{f}: {n} lines"))
        .collect();
    assert!(
        over.is_empty(),
        "files over {LIMIT} lines (CONTRIBUTING.md, \"One concept per file\"): split each, or \
         say in its header why it is one concept and add it to ALLOWED in \
         goro/tests/file_lengths.rs with the reason:\n{}",
        over.join("\n")
    );
}

#[test]
fn every_allowed_file_is_still_over_the_limit() {
    let all = lengths();
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter_map(|(a, _)| match all.iter().find(|(f, _)| f == a) {
            None => Some(format!("{a}: no such file")),
            Some((_, n)) if *n <= LIMIT => Some(format!("{a}: {n} lines")),
            Some(_) => None,
        })
        .collect();
    assert!(
        stale.is_empty(),
        "entries of ALLOWED in goro/tests/file_lengths.rs to remove (the file is gone or no \
         longer over {LIMIT} lines):\n{}",
        stale.join("\n")
    );
}
