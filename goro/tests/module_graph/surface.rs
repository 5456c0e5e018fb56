//! The second list of docs/ARCHITECTURE.md, "Layers": which items of
//! `sched` each layer above it may name, for `tests/module_graph.rs`.
//!
//! The list is the doc's second `text` block: `layer -> paths`, the paths
//! written as a `use` tree would be (`sched::task::coop::{poll_proceed,
//! spend}`), any number of them, on the layer's line and on the indented
//! lines after it. A layer is a top-level module that declares `-> sched`
//! in the first block, or `lib`, the crate root (`lib.rs`, whose
//! re-exports are the public face of `sched`).
//!
//! What a layer names is read as the first list's edges are, down to the
//! item: `crate::sched::timer::TimerInner::new()` names
//! `sched::timer::TimerInner`, `crate::sched::timer::clock::now()`
//! `sched::timer::clock::now`, `use crate::sched::timer::clock` the module
//! `sched::timer::clock` (its items used inline after it are not followed),
//! a glob `sched::timer::*`. A name `lib.rs` re-exports at the root counts
//! as the `sched` item it comes from (`crate::spawn` is
//! `sched::task::spawn::spawn`); in `lib.rs`, its own `pub use sched::...`
//! count for `lib`. An item must be listed as it is named: listing a
//! module does not list what is in it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::paths::{blank_comments_and_literals, root_paths, tokens, tree_paths, Leaf, Tok};
use super::{
    declared, depths, doc, manifest, read, rs_files, src, text_block, top_module, Graph, Root,
};

/// Each layer above `sched`, and the `sched` items it may name.
pub type Surface = BTreeMap<String, BTreeSet<String>>;

/// The second `text` block of docs/ARCHITECTURE.md's "Layers" section.
/// `layers` is the first block's graph: a layer listed here must be `lib`
/// or a module that declares `-> sched` there.
pub fn declared_surface(doc: &str, layers: &Graph) -> Surface {
    let block = text_block(doc, 2, "the sched items each layer may name");
    let here = "docs/ARCHITECTURE.md, \"Layers\", second block";
    let mut text: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        let l = line.split('(').next().unwrap();
        if l.trim().is_empty() {
            continue;
        }
        if let Some((layer, rest)) = l.split_once("->") {
            let layer = layer.trim();
            assert!(
                layer == "lib" || layers.get(layer).is_some_and(|d| d.contains("sched")),
                "{here}: `{layer}` is not lib or a module that declares `-> sched` in the first block"
            );
            assert!(
                text.iter().all(|(l, _)| l != layer),
                "{here}: `{layer}` has two lines (a long list goes on indented lines after it)"
            );
            text.push((layer.to_string(), rest.to_string()));
        } else {
            assert!(
                line.starts_with(char::is_whitespace) && !text.is_empty(),
                "{here}: `{line}` has no `layer ->` and is not indented under one"
            );
            let last = text.last_mut().unwrap();
            last.1.push('\n');
            last.1.push_str(l);
        }
    }
    let mut surface = Surface::new();
    for (layer, list) in text {
        let toks = tokens(&list);
        let mut leaves = Vec::new();
        let mut k = 0;
        while k < toks.len() {
            let before = k;
            k = tree_paths(&toks, k, &[], &mut leaves);
            if matches!(toks.get(k).map(|t| &t.0), Some(Tok::Comma)) || k == before {
                k += 1;
            }
        }
        let items = surface.entry(layer.clone()).or_default();
        for l in leaves {
            assert!(
                l.path[0] == "sched" && l.alias.is_none(),
                "{here}: `{}` on {layer}'s list is not a path `sched::...`",
                l.path.join("::")
            );
            items.insert(l.path.join("::"));
        }
    }
    surface
}

/// One `sched` item named by a file above it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    pub file: String,
    pub line: usize,
    pub layer: String,
    pub item: String,
}

/// `path` with the root name it starts with replaced by what `lib.rs`
/// re-exports under that name, if it is a `sched` item; `None` for a path
/// outside `sched`.
fn in_sched(root: &Root, path: &[String]) -> Option<Vec<String>> {
    let mut full = match root.reexports.get(&path[0]) {
        Some(p) if path[0] != "sched" => p.clone(),
        _ => vec![path[0].clone()],
    };
    if full[0] != "sched" {
        return None;
    }
    for seg in &path[1..] {
        if full.last().unwrap().starts_with(char::is_uppercase) {
            break; // `crate::Policy::default` names `Policy`
        }
        full.push(seg.clone());
    }
    Some(full)
}

/// The `sched` items a file of `layer` names, given its text and depth
/// (as for the first list; `lib.rs` is layer `lib`).
pub fn file_uses(root: &Root, file: &str, text: &str, layer: &str, depth: usize) -> Vec<Use> {
    let code = blank_comments_and_literals(text);
    let mut leaves: Vec<Leaf> = root_paths(&code, depth);
    if layer == "lib" {
        // The crate root's own `use sched::...`, without `crate::`.
        let toks = tokens(&code);
        let mut braces = 0;
        let mut k = 0;
        while k < toks.len() {
            match &toks[k].0 {
                Tok::Open => braces += 1,
                Tok::Close => braces -= 1,
                Tok::Ident(kw) if braces == 0 && kw == "use" => {
                    k = tree_paths(&toks, k + 1, &[], &mut leaves);
                    continue;
                }
                _ => {}
            }
            k += 1;
        }
    }
    let mut uses: Vec<Use> = leaves
        .iter()
        .filter_map(|l| {
            Some(Use {
                file: file.to_string(),
                line: l.line,
                layer: layer.to_string(),
                item: in_sched(root, &l.path)?.join("::"),
            })
        })
        .collect();
    uses.sort();
    uses.dedup();
    uses
}

/// Every `sched` item named from outside `goro/src/sched/`.
pub fn uses(root: &Root) -> Vec<Use> {
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    files.sort();
    let depth = depths(&files);
    let sched = src().join("sched");
    let mut all = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(&sched)) {
        let rel: PathBuf = f.strip_prefix(manifest().parent().unwrap()).unwrap().into();
        let layer = top_module(f);
        all.extend(file_uses(
            root,
            &rel.display().to_string(),
            &read(f),
            &layer,
            depth[f],
        ));
    }
    all
}

/// The message for each use `surface` does not list.
pub fn violations(surface: &Surface, uses: &[Use]) -> Vec<String> {
    uses.iter()
        .filter(|u| !surface.get(&u.layer).is_some_and(|s| s.contains(&u.item)))
        .map(|u| {
            let why = if surface.contains_key(&u.layer) {
                format!("not on {}'s list", u.layer)
            } else {
                format!("{} has no list", u.layer)
            };
            format!(
                "{}:{}: {} names {} ({why})",
                u.file, u.line, u.layer, u.item
            )
        })
        .collect()
}

/// The second block as the code names `sched` today: one line per
/// module whose items a layer names, the layer on the first, a line
/// longer than 80 characters wrapped inside its braces.
pub fn block(uses: &[Use]) -> String {
    // In byte order: a glob, then types and constants, then the rest.
    let mut named: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for u in uses {
        let (parent, item) = u.item.rsplit_once("::").unwrap_or(("", &u.item));
        named
            .entry(&u.layer)
            .or_default()
            .entry(parent)
            .or_default()
            .insert(item);
    }
    let width = named.keys().map(|l| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (layer, parents) in named {
        for (i, (parent, items)) in parents.iter().enumerate() {
            let mut line = if i == 0 {
                format!("{layer:width$} -> {parent}::")
            } else {
                format!("{}{parent}::", " ".repeat(width + 4))
            };
            let items: Vec<&str> = items.iter().copied().collect();
            if let [one] = items.as_slice() {
                out.push_str(&format!("{line}{one}\n"));
                continue;
            }
            line.push('{');
            let indent = line.len();
            for (k, item) in items.iter().enumerate() {
                let sep = if k + 1 == items.len() { "}" } else { "," };
                if line.len() > indent && line.len() + 1 + item.len() + sep.len() > 80 {
                    out.push_str(line.trim_end());
                    out.push('\n');
                    line = " ".repeat(indent);
                }
                line.push_str(item);
                line.push_str(sep);
                line.push(' ');
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The tests of the second list

#[test]
fn upper_layers_name_only_their_listed_sched_items() {
    let root = Root::read();
    let surface = declared_surface(&doc(), &declared());
    let uses = uses(&root);
    let mut named: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for u in &uses {
        named.entry(&u.layer).or_default().insert(&u.item);
    }
    for (layer, items) in &named {
        println!("{layer:8} names {} items of sched", items.len());
    }
    let mut stale = 0;
    for (layer, items) in &surface {
        for i in items {
            if !named
                .get(layer.as_str())
                .is_some_and(|n| n.contains(i.as_str()))
            {
                println!("note: {i} is on {layer}'s list and no file of {layer} names it");
                stale += 1;
            }
        }
    }
    let bad = violations(&surface, &uses);
    if !bad.is_empty() || stale > 0 {
        println!(
            "the second block as the code names sched today:\n{}",
            block(&uses)
        );
    }
    assert!(
        bad.is_empty(),
        "sched items that docs/ARCHITECTURE.md, \"Layers\", does not list for the layer naming them:\n{}\n\
         (add one that belongs to the layer's surface to the doc's second block; \
         --nocapture prints the block as the code names sched today)",
        bad.join("\n")
    );
}

#[test]
fn the_reader_finds_every_sched_item_named() {
    let root = Root::read();
    let text = r##"
use crate::sched::{task::{meta::{blocked_on, Reason as R}, coop},
    timer::TimerInner};
use crate::sched::timer::{self, *};
fn f() {
    crate::sched::Sched::shutdown(s); // crate::sched::runq in a comment
    let _ = "crate::sched::runq in a string";
    let _ = crate::sched::timer::clock::now();
    $crate::sched::task::coop::spend();
    let _ = crate::spawn(async {});
    let _ = crate::Policy::default();
    let _ = crate::coop::consume_budget;
    let _ = super::super::sched::backoff::Backoff::new;
    let _ = crate::chan::bounded::<u8>;
    let _ = super::sched::not_the_root;
}
"##;
    let got: Vec<_> = file_uses(&root, "f.rs", text, "chan", 2)
        .into_iter()
        .map(|u| (u.item, u.line))
        .collect();
    let want = [
        ("sched::task::meta::blocked_on", 2),
        ("sched::task::meta::Reason", 2),
        ("sched::task::coop", 2),
        ("sched::timer::TimerInner", 3),
        ("sched::timer", 4),
        ("sched::timer::*", 4),
        ("sched::Sched", 6),
        ("sched::timer::clock::now", 8),
        ("sched::task::coop::spend", 9),
        ("sched::task::spawn::spawn", 10),
        ("sched::policy::Policy", 11),
        ("sched::task::coop::consume_budget", 12),
        ("sched::backoff::Backoff", 13),
    ];
    let mut want: Vec<_> = want.iter().map(|(i, l)| (i.to_string(), *l)).collect();
    want.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    let mut got = got;
    got.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    assert_eq!(got, want);

    // The crate root re-exports without `crate::`.
    let lib = file_uses(
        &root,
        "goro/src/lib.rs",
        &read(&src().join("lib.rs")),
        "lib",
        1,
    );
    let lib: BTreeSet<_> = lib.iter().map(|u| u.item.as_str()).collect();
    for i in [
        "sched::task::coop",
        "sched::task::meta::Reason",
        "sched::task::spawn::spawn",
    ] {
        assert!(lib.contains(i), "{i} not among lib.rs's {lib:?}");
    }
}

#[test]
fn a_planted_unlisted_sched_item_fails_naming_file_line_layer_and_item() {
    let root = Root::read();
    let surface = declared_surface(&doc(), &declared());
    let planted = "//! A planted file of chan.
use crate::sched::task::coop::poll_proceed;
use crate::sched::runq::Local;
fn f() {
    crate::sched::task::coop::spend();
    let _ = crate::sched::machine::find::find_runnable;
}
";
    let uses = file_uses(&root, "goro/src/chan/planted.rs", planted, "chan", 2);
    assert_eq!(
        violations(&surface, &uses),
        [
            "goro/src/chan/planted.rs:3: chan names sched::runq::Local (not on chan's list)",
            "goro/src/chan/planted.rs:6: chan names sched::machine::find::find_runnable (not on chan's list)",
        ]
    );
    let uses = file_uses(&root, "goro/src/rng.rs", planted, "rng", 1);
    assert!(violations(&surface, &uses).contains(
        &"goro/src/rng.rs:3: rng names sched::runq::Local (rng has no list)".to_string()
    ));
}
