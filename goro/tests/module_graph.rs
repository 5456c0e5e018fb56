//! The layering of `goro/src` is a DAG (docs/ARCHITECTURE.md, "Layers").
//!
//! Reads every `.rs` file under `goro/src`, finds the top-level module it
//! belongs to (`sched`, `chan`, ... or the file itself for `loom.rs`), and
//! collects the top-level modules each one names through `crate::...` or
//! `$crate::...` on lines of code (comments and doc comments are skipped,
//! test modules are counted: a test that reaches up the layers is a cycle
//! too). A name that `lib.rs` re-exports at the crate root
//! (`crate::spawn`) counts as the module it comes from. Then it checks
//! that the graph has no cycle and prints it, so the layering in the
//! architecture document can be compared with what the code does:
//!
//! ```text
//! cargo test -p goro --test module_graph -- --nocapture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without comments: `//` to the end of a line (outside
/// string literals, good enough for this crate) and whole `//!`/`///` lines.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        let t = l.trim_start();
        if t.starts_with("//") {
            return None;
        }
        Some(match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
    })
}

/// Top-level module names and, for each name `lib.rs` re-exports at the
/// root, the module it comes from.
fn modules_and_root_names() -> (BTreeSet<String>, BTreeMap<String, String>) {
    let lib = fs::read_to_string(src().join("lib.rs")).expect("reading goro/src/lib.rs");
    let mut mods = BTreeSet::new();
    let mut names = BTreeMap::new();
    let mut stmt = String::new();
    for l in code_lines(&lib) {
        let t = l.trim();
        if let Some(rest) = t
            .strip_prefix("pub mod ")
            .or_else(|| t.strip_prefix("pub(crate) mod "))
            .or_else(|| t.strip_prefix("mod "))
        {
            mods.insert(rest.trim_end_matches(';').to_string());
        }
        if t.starts_with("pub use ") || !stmt.is_empty() {
            stmt.push_str(t);
            if t.ends_with(';') {
                let path = stmt.trim_start_matches("pub use ").trim_end_matches(';');
                let module = path.split("::").next().unwrap().to_string();
                let items = match path.find('{') {
                    Some(i) => path[i + 1..path.len() - 1].to_string(),
                    None => path.rsplit("::").next().unwrap().to_string(),
                };
                for item in items.split(',') {
                    let item = item.trim();
                    let name = item.rsplit(" as ").next().unwrap().trim();
                    if !name.is_empty() && module != "goro_macros" {
                        names.insert(name.to_string(), module.clone());
                    }
                }
                stmt.clear();
            }
        }
    }
    (mods, names)
}

fn graph() -> Graph {
    let root = src();
    let (mods, names) = modules_and_root_names();
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    let mut g = Graph::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let me = first.trim_end_matches(".rs").to_string();
        if me == "lib" {
            continue; // the root re-exports; it is above every module
        }
        assert!(
            mods.contains(&me),
            "{} is not under a module lib.rs declares",
            rel.display()
        );
        let text = fs::read_to_string(&f).unwrap();
        let deps = g.entry(me.clone()).or_default();
        for l in code_lines(&text) {
            for (i, _) in l.match_indices("crate::") {
                let name: String = l[i + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let target = if mods.contains(&name) {
                    name
                } else if let Some(m) = names.get(&name) {
                    m.clone()
                } else {
                    continue; // a macro or a crate-root item of lib.rs itself
                };
                if target != me {
                    deps.insert(target);
                }
            }
        }
    }
    g
}

/// A cycle through `from`, if there is one (depth-first search).
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        n: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, d, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn top_level_modules_form_a_dag() {
    let g = graph();
    for (m, deps) in &g {
        let deps: Vec<_> = deps.iter().map(String::as_str).collect();
        println!("{m:8} -> {}", deps.join(" "));
    }
    if let Some(c) = find_cycle(&g) {
        panic!(
            "the module graph of goro/src has a cycle: {} (see docs/ARCHITECTURE.md, \"Layers\"; \
             the graph is printed above with --nocapture)",
            c.join(" -> ")
        );
    }
}

#[test]
fn the_checker_finds_a_planted_cycle() {
    let mut g = graph();
    g.entry("sched".into()).or_default().insert("chan".into());
    g.entry("chan".into()).or_default().insert("sched".into());
    assert!(
        find_cycle(&g).is_some(),
        "a planted sched <-> chan cycle was not found"
    );
}
