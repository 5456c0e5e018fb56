//! The modules of `goro/src` depend on each other only as
//! docs/ARCHITECTURE.md, "Layers", declares.
//!
//! The declared layers are read from that section itself: its first
//! `text` block has one line per top-level module, `module -> the modules
//! it may name` (a trailing `(...)` is a comment), and a line of names
//! without an arrow lists leaves. The block must name every module
//! `lib.rs` declares, and the graph it draws must have no cycle.
//!
//! Then every `.rs` file under `goro/src` (but the binaries of `src/bin/`,
//! crates of their own) is read with its comments, doc
//! comments and string literals blanked, and each path that reaches the
//! crate root is followed to the top-level module it names: `crate::a::x`
//! inline in code, `$crate::a` in macros, `use crate::{a, b::{c, d}}`
//! groups over any number of lines, and `super::...` chains that climb to
//! the root (counting inline `mod x { ... }` blocks and `#[path]` files).
//! A name `lib.rs` re-exports at the root (`crate::spawn`) counts as the
//! module it comes from, a `#[macro_export]` macro as the module that
//! defines it. Test modules count too: a test that reaches up the layers
//! breaks them as much as the code does.
//!
//! An edge the doc does not declare fails the test with the file, the line
//! and the edge, and says whether it goes up the layers (the target already
//! reaches the source, so it would close a cycle) or is only undeclared. A
//! legitimate new edge goes into the doc's block (and its diagram); one to
//! be removed later goes into [`KNOWN_EXCEPTIONS`] with its reason.
//!
//! An edge to `sched` says little: the scheduler is most of the crate. So
//! the section's second `text` block is a second list, the `sched` items
//! each layer above it may name (`chan -> sched::task::coop::{poll_proceed,
//! spend}`, a long list going on on indented lines), with `lib`, the crate
//! root, as a layer of its own: its re-exports are the public face of
//! `sched`. A reader learns from it what `chan` or `net` calls in the
//! scheduler without opening `sched/`, and a change that widens that
//! contract shows in review as a changed line of the doc. The same paths
//! are followed down to the item they name (`module_graph/surface.rs` says
//! how); one not on its layer's list fails the test with the file, the
//! line, the layer and the item, and the block as the code names `sched`
//! today is printed to copy from.
//!
//! The graph, any declared edge the code no longer uses and any listed
//! `sched` item no file names any more are printed:
//!
//! ```text
//! cargo test -p goro --test module_graph -- --nocapture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[path = "module_graph/paths.rs"]
mod paths;

#[path = "module_graph/surface.rs"]
mod surface;

use paths::{blank_comments_and_literals, root_names, tokens, tree_paths, Tok};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Edges the code has and the doc does not declare, each with the reason
/// it is tolerated: `(from, to, reason)`. Empty: the code keeps the
/// declared layers.
const KNOWN_EXCEPTIONS: &[(&str, &str, &str)] = &[];

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn src() -> PathBuf {
    manifest().join("src")
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// Every `.rs` file of the library under `dir`. `src/bin/` is left out:
/// each file there is a binary, a crate of its own that reaches goro only
/// through its public API (`goro::trace::...`), never through `crate::`.
fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p == src().join("bin") {
                continue;
            }
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

// ---------------------------------------------------------------------------
// The declared layers

/// The `n`th `text` block (from 1) of docs/ARCHITECTURE.md's "Layers"
/// section.
fn text_block<'a>(doc: &'a str, n: usize, what: &str) -> &'a str {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Layers\n"))
        .expect("docs/ARCHITECTURE.md has no \"## Layers\" section");
    section
        .split("```text\n")
        .nth(n)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| {
            panic!("docs/ARCHITECTURE.md, \"Layers\": no ```text block {n} with {what}")
        })
}

/// The first `text` block of docs/ARCHITECTURE.md's "Layers" section as a
/// graph.
fn declared_layers(doc: &str, mods: &BTreeSet<String>) -> Graph {
    let block = text_block(doc, 1, "the declared layers");
    let mut g = Graph::new();
    for line in block.lines() {
        let line = line.split('(').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        let (froms, tos): (Vec<&str>, Vec<&str>) = match line.split_once("->") {
            Some((a, b)) => (vec![a.trim()], b.split_whitespace().collect()),
            None => (line.split(',').map(str::trim).collect(), Vec::new()),
        };
        for m in froms.iter().chain(&tos) {
            assert!(
                mods.contains(*m),
                "docs/ARCHITECTURE.md, \"Layers\": `{m}` in `{line}` is not a module lib.rs declares"
            );
        }
        for from in froms {
            assert!(
                !g.contains_key(from),
                "docs/ARCHITECTURE.md, \"Layers\": `{from}` has two lines"
            );
            g.insert(
                from.to_string(),
                tos.iter().map(|t| t.to_string()).collect(),
            );
        }
    }
    for m in mods {
        assert!(
            g.contains_key(m),
            "docs/ARCHITECTURE.md, \"Layers\": module `{m}` has no line (a leaf goes on the line of leaves)"
        );
    }
    g
}

fn reaches(g: &Graph, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n) {
            stack.extend(g.get(n).into_iter().flatten().map(String::as_str));
        }
    }
    false
}

/// A cycle, if there is one (depth-first search).
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

/// What a name at the crate root can be.
struct Root {
    /// The top-level modules `lib.rs` declares.
    mods: BTreeSet<String>,
    /// A name `lib.rs` imports at the root, and the first segment of its
    /// path (a module, or another crate such as `goro_macros`).
    uses: BTreeMap<String, String>,
    /// A name `lib.rs` imports at the root, and its whole path
    /// (`spawn`: `sched::task::spawn::spawn`).
    reexports: BTreeMap<String, Vec<String>>,
    /// A `#[macro_export]` macro, and the top-level module defining it.
    macros: BTreeMap<String, String>,
    /// Items `lib.rs` defines itself (`__private`).
    own: BTreeSet<String>,
}

impl Root {
    fn read() -> Root {
        let lib = blank_comments_and_literals(&read(&src().join("lib.rs")));
        let toks = tokens(&lib);
        let mut root = Root {
            mods: BTreeSet::new(),
            uses: BTreeMap::new(),
            reexports: BTreeMap::new(),
            macros: BTreeMap::new(),
            own: BTreeSet::new(),
        };
        let mut braces = 0;
        let mut k = 0;
        while k < toks.len() {
            match &toks[k].0 {
                Tok::Open => braces += 1,
                Tok::Close => braces -= 1,
                Tok::Ident(kw) if braces == 0 && kw == "use" => {
                    let mut leaves = Vec::new();
                    k = tree_paths(&toks, k + 1, &[], &mut leaves);
                    for l in leaves {
                        let name = l.alias.as_ref().unwrap_or(l.path.last().unwrap());
                        assert!(
                            name != "*" && name != "self",
                            "lib.rs, line {}: a `use` the checker cannot read (a glob re-export?)",
                            l.line
                        );
                        root.uses.insert(name.clone(), l.path[0].clone());
                        root.reexports.insert(name.clone(), l.path);
                    }
                    continue;
                }
                Tok::Ident(kw)
                    if braces == 0
                        && matches!(
                            kw.as_str(),
                            "mod"
                                | "fn"
                                | "struct"
                                | "enum"
                                | "trait"
                                | "type"
                                | "const"
                                | "static"
                        ) =>
                {
                    if let Some((Tok::Ident(name), _)) = toks.get(k + 1) {
                        let declared_module = kw == "mod"
                            && matches!(toks.get(k + 2).map(|t| &t.0), Some(Tok::Other));
                        if declared_module {
                            root.mods.insert(name.clone()); // `mod x;`
                        } else {
                            root.own.insert(name.clone());
                        }
                    }
                }
                _ => {}
            }
            k += 1;
        }
        let mut files = Vec::new();
        rs_files(&src(), &mut files);
        for f in files {
            let text = read(&f);
            let mut exported = false;
            for l in text.lines() {
                let t = l.trim();
                if t.starts_with("#[macro_export") {
                    exported = true;
                } else if let Some(rest) = t.strip_prefix("macro_rules!").filter(|_| exported) {
                    let name = rest.trim().trim_end_matches('{').trim();
                    root.macros.insert(name.to_string(), top_module(&f));
                    exported = false;
                } else if !t.starts_with("#[") && !t.starts_with("//") {
                    exported = false;
                }
            }
        }
        root
    }

    /// The top-level module `crate::name` belongs to; `None` for the root
    /// itself or another crate; `Err` for a name the checker cannot place.
    fn resolve(&self, name: &str) -> Result<Option<String>, ()> {
        if self.mods.contains(name) {
            return Ok(Some(name.to_string()));
        }
        if let Some(m) = self.uses.get(name) {
            return Ok(self.mods.contains(m).then(|| m.clone()));
        }
        if let Some(m) = self.macros.get(name) {
            return Ok(Some(m.clone()));
        }
        if name == "self" || self.own.contains(name) {
            return Ok(None);
        }
        Err(())
    }
}

/// The top-level module a file under `goro/src` belongs to.
fn top_module(f: &Path) -> String {
    let rel = f.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// How many `super`s reach the crate root from each file's module:
/// `context.rs` and `chan/mod.rs` 1, `chan/select.rs` 2, and a file
/// included with `#[path = "..."] mod x;` one more than its includer.
fn depths(files: &[PathBuf]) -> BTreeMap<PathBuf, usize> {
    let mut d = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src()).unwrap();
        let n = rel.components().count();
        d.insert(f.clone(), if rel.ends_with("mod.rs") { n - 1 } else { n });
    }
    for f in files {
        for l in read(f).lines() {
            if let Some(p) = l.trim().strip_prefix("#[path = \"") {
                let target = f.parent().unwrap().join(p.trim_end_matches("\"]"));
                let depth = d[f] + 1;
                d.insert(target, depth);
            }
        }
    }
    d
}

/// One use of a top-level module by a file of another.
#[derive(Debug)]
struct Edge {
    file: String,
    line: usize,
    from: String,
    to: String,
}

/// The edges of one file, given its text, its top-level module and depth.
fn file_edges(
    root: &Root,
    file: &str,
    text: &str,
    me: &str,
    depth: usize,
) -> (Vec<Edge>, Vec<String>) {
    let mut edges = Vec::new();
    let mut unknown = Vec::new();
    for (name, line) in root_names(&blank_comments_and_literals(text), depth) {
        match root.resolve(&name) {
            Ok(Some(to)) if to != me => edges.push(Edge {
                file: file.to_string(),
                line,
                from: me.to_string(),
                to,
            }),
            Ok(_) => {}
            Err(()) => unknown.push(format!("{file}:{line}: crate::{name}")),
        }
    }
    (edges, unknown)
}

/// Every edge of `goro/src`.
fn edges(root: &Root) -> Vec<Edge> {
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    files.sort();
    let depth = depths(&files);
    let mut all = Vec::new();
    let mut unknown = Vec::new();
    for f in &files {
        let me = top_module(f);
        if me == "lib" {
            continue; // the root re-exports; it is above every module
        }
        let rel = f.strip_prefix(manifest().parent().unwrap()).unwrap();
        assert!(
            root.mods.contains(&me),
            "{} is not under a module lib.rs declares",
            rel.display()
        );
        let (e, u) = file_edges(root, &rel.display().to_string(), &read(f), &me, depth[f]);
        all.extend(e);
        unknown.extend(u);
    }
    assert!(
        unknown.is_empty(),
        "the layering checker cannot tell which module these names belong to \
         (teach Root::read in tests/module_graph.rs):\n{}",
        unknown.join("\n")
    );
    all
}

/// The message for each edge `declared` does not allow.
fn violations(declared: &Graph, edges: &[Edge]) -> Vec<String> {
    edges
        .iter()
        .filter(|e| !declared[&e.from].contains(&e.to))
        .filter(|e| {
            !KNOWN_EXCEPTIONS
                .iter()
                .any(|(f, t, _)| *f == e.from && *t == e.to)
        })
        .map(|e| {
            let kind = if reaches(declared, &e.to, &e.from) {
                format!("goes up the layers ({} is below {})", e.from, e.to)
            } else {
                "is not declared".to_string()
            };
            format!("{}:{}: {} -> {} {kind}", e.file, e.line, e.from, e.to)
        })
        .collect()
}

fn doc() -> String {
    read(&manifest().join("../docs/ARCHITECTURE.md"))
}

fn declared() -> Graph {
    declared_layers(&doc(), &Root::read().mods)
}

#[test]
fn declared_layers_have_no_cycle() {
    let g = declared();
    if let Some(c) = find_cycle(&g) {
        panic!(
            "docs/ARCHITECTURE.md, \"Layers\", declares a cycle: {}",
            c.join(" -> ")
        );
    }
}

#[test]
fn code_keeps_the_declared_layers() {
    let root = Root::read();
    let declared = declared();
    let edges = edges(&root);
    let mut g: Graph = root
        .mods
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for e in &edges {
        g.get_mut(&e.from).unwrap().insert(e.to.clone());
    }
    for (m, deps) in &g {
        let deps: Vec<_> = deps.iter().map(String::as_str).collect();
        println!("{m:8} -> {}", deps.join(" "));
    }
    for (m, deps) in &declared {
        for d in deps.difference(&g[m]) {
            println!("note: {m} -> {d} is declared and no file uses it");
        }
    }
    for (f, t, why) in KNOWN_EXCEPTIONS {
        println!("known exception: {f} -> {t}: {why}");
    }
    let bad = violations(&declared, &edges);
    assert!(
        bad.is_empty(),
        "edges that docs/ARCHITECTURE.md, \"Layers\", does not allow:\n{}\n\
         (add a legitimate edge to the doc's block; the graph is printed with --nocapture)",
        bad.join("\n")
    );
    assert!(find_cycle(&g).is_none());
}

#[test]
fn the_reader_finds_every_form_of_path() {
    let root = Root::read();
    let text = r##"
//! crate::net in a doc comment
use crate::{chan, time::{self, Sleep},
    sync::Mutex};
use crate::{stats::Stats as S, loom::{cell, Arc}};
fn f() {
    let _ = crate::net::TcpStream::connect; // crate::context in a comment
    let _ = "crate::runtime in a string";
    let _ = r#"crate::trace in a raw string"#;
    let _ = '"'; let _ = crate::spawn; let _: &'static str = "";
    /* crate::trace in a block comment */
    $crate::select!();
    pub(crate) fn g() {}
    let _ = super::super::rng::Rng::new;
}
mod tests {
    use super::super::Something; // the file's parent, not the root
}
"##;
    let (edges, unknown) = file_edges(&root, "f.rs", text, "sched", 2);
    let got: BTreeSet<_> = edges.iter().map(|e| (e.to.as_str(), e.line)).collect();
    let want: BTreeSet<_> = [
        ("chan", 3),
        ("time", 3),
        ("sync", 4),
        ("stats", 5),
        ("loom", 5),
        ("net", 7),
        // line 10: crate::spawn is sched's, the file's own module: no edge
        ("chan", 12), // select! is defined in chan/
        ("rng", 14),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    assert!(unknown.is_empty(), "{unknown:?}");
}

#[test]
fn a_planted_upward_edge_fails_naming_the_file() {
    let declared = declared();
    let planted = [
        Edge {
            file: "goro/src/sched/planted.rs".into(),
            line: 7,
            from: "sched".into(),
            to: "chan".into(),
        },
        Edge {
            file: "goro/src/stats.rs".into(),
            line: 9,
            from: "stats".into(),
            to: "rng".into(),
        },
        // A layer skipped: net is above chan (through time), but names
        // only what it declares.
        Edge {
            file: "goro/src/net/planted.rs".into(),
            line: 3,
            from: "net".into(),
            to: "chan".into(),
        },
    ];
    let bad = violations(&declared, &planted);
    assert_eq!(
        bad,
        [
            "goro/src/sched/planted.rs:7: sched -> chan goes up the layers (sched is below chan)",
            "goro/src/stats.rs:9: stats -> rng is not declared",
            "goro/src/net/planted.rs:3: net -> chan is not declared",
        ]
    );
}
