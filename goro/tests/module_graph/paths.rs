//! Reading Rust source just well enough to follow its paths to the crate
//! root, for `tests/module_graph.rs`: comments and literals blanked, a
//! few kinds of token, and the paths that start at `crate`, `$crate` or
//! enough `super`s, with `use` groups: their first segment (the module
//! a path reaches, [`root_names`]) or the whole path down to the item it
//! names ([`root_paths`], [`tree_paths`]).

/// `text` with comments (line, block, doc) and the insides of string and
/// char literals replaced by spaces; newlines are kept, so lines still
/// count. Lifetimes and labels stay (a `'` not closed two characters on).
pub fn blank_comments_and_literals(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r'))) && !(i > 0 && ident(b[i - 1])) && {
            let s = i + 1 + usize::from(c == 'b');
            let h = b[s..].iter().take_while(|&&x| x == '#').count();
            b.get(s + h) == Some(&'"')
        } {
            // A raw string: r"...", r#"..."#, br"...".
            let s = i + 1 + usize::from(c == 'b');
            let hashes = b[s..].iter().take_while(|&&x| x == '#').count();
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = s + hashes + 1;
            let end = (body..b.len())
                .find(|&k| b[k..].starts_with(&close))
                .map_or(b.len(), |k| k + close.len());
            for &x in &b[i..end] {
                blank(&mut out, x);
            }
            i = end;
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal: '\n', '\'', '\u{..}'.
            let end = (i + 3..b.len())
                .find(|&k| b[k] == '\'')
                .map_or(b.len(), |k| k + 1);
            for &x in &b[i..end] {
                blank(&mut out, x);
            }
            i = end;
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Comma,
    /// `*`, for a glob in a `use` tree.
    Star,
    Other,
}

/// The tokens of blanked code, each with its line (1-based).
pub fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(b[s..i].iter().collect()), line));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else {
            let t = match c {
                ':' if b.get(i + 1) == Some(&':') => {
                    i += 1;
                    Tok::Sep
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                _ => Tok::Other,
            };
            out.push((t, line));
            i += 1;
        }
    }
    out
}

fn is(t: Option<&(Tok, usize)>, name: &str) -> bool {
    matches!(t, Some((Tok::Ident(n), _)) if n == name)
}

fn is_sep(t: Option<&(Tok, usize)>) -> bool {
    matches!(t, Some((Tok::Sep, _)))
}

/// The first segment of each item of the group whose `{` is at `open`:
/// `{a, b::{c, d}, e as f}` gives `a`, `b`, `e`, with their lines.
fn group_heads(toks: &[(Tok, usize)], open: usize) -> Vec<(String, usize)> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = false;
    for (t, line) in &toks[open..] {
        match t {
            Tok::Open => {
                depth += 1;
                item_start = depth == 1;
            }
            Tok::Close => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Tok::Comma if depth == 1 => item_start = true,
            Tok::Ident(n) if depth == 1 && item_start => {
                heads.push((n.clone(), *line));
                item_start = false;
            }
            _ if depth == 1 => item_start = false,
            _ => {}
        }
    }
    heads
}

/// Where each path in `toks` that starts at the crate root has its first
/// segment after the root (an index into `toks`): `crate::a`, `$crate::a`,
/// `crate::{a, b}` and `super::...::a` where the `super`s climb `depth`
/// levels, the depth of the file's module (`1` for `chan/mod.rs` or
/// `context.rs`), plus one per open inline `mod`.
fn root_starts(toks: &[(Tok, usize)], depth: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut braces = 0usize;
    let mut inline_mods: Vec<usize> = Vec::new();
    for i in 0..toks.len() {
        match &toks[i].0 {
            Tok::Open => {
                if i >= 2 && is(toks.get(i - 2), "mod") && matches!(toks[i - 1].0, Tok::Ident(_)) {
                    inline_mods.push(braces);
                }
                braces += 1;
            }
            Tok::Close => {
                braces = braces.saturating_sub(1);
                if inline_mods.last() == Some(&braces) {
                    inline_mods.pop();
                }
            }
            _ => {}
        }
        let Tok::Ident(first) = &toks[i].0 else {
            continue;
        };
        if i > 0 && is_sep(toks.get(i - 1)) {
            continue; // inside a path, not at its start
        }
        let mut j = i;
        if first == "crate" {
            if !is_sep(toks.get(j + 1)) {
                continue; // `pub(crate)`
            }
            j += 2;
        } else if first == "self" || first == "super" {
            if first == "self" && is_sep(toks.get(j + 1)) {
                j += 2;
            }
            let mut ups = 0;
            while is(toks.get(j), "super") && is_sep(toks.get(j + 1)) {
                ups += 1;
                j += 2;
            }
            if ups == 0 || ups < depth + inline_mods.len() {
                continue; // stays inside the file's top-level module
            }
        } else {
            continue;
        }
        starts.push(j);
    }
    starts
}

/// The names each path in `code` takes at the crate root, with their
/// lines (see [`root_starts`] for the paths that count).
pub fn root_names(code: &str, depth: usize) -> Vec<(String, usize)> {
    let toks = tokens(code);
    let mut names = Vec::new();
    for j in root_starts(&toks, depth) {
        match toks.get(j) {
            Some((Tok::Ident(n), line)) => names.push((n.clone(), *line)),
            Some((Tok::Open, _)) => names.extend(group_heads(&toks, j)),
            _ => {}
        }
    }
    names
}

/// One path a `use` tree or an inline path names.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    /// Its segments, down to the item: `a::b::f`, `a::b::Type` (not the
    /// `::new` after it), `a::b` for `a::b::{self}`, `a::b::*` for a glob.
    pub path: Vec<String>,
    /// The name it is brought in as, where `as` renames it.
    pub alias: Option<String>,
    /// The line of its last segment.
    pub line: usize,
}

/// The whole path of each path in `code` that starts at the crate root
/// (see [`root_starts`]), without the root: [`tree_paths`] of each.
pub fn root_paths(code: &str, depth: usize) -> Vec<Leaf> {
    let toks = tokens(code);
    let mut out = Vec::new();
    for j in root_starts(&toks, depth) {
        tree_paths(&toks, j, &[], &mut out);
    }
    out
}

/// The leaves of the `use` tree (or the inline path) at `k`, each with
/// `prefix` before it: `a::{b, c::{D, e as f}, g::{self, *}}` gives
/// `a::b`, `a::c::D`, `a::c::e` (as `f`), `a::g` and `a::g::*`. A path
/// stops at its first segment that starts with a capital, the item (a
/// type, trait or constant; what follows is its method or variant), and
/// at a turbofish. Returns the index after the tree.
pub fn tree_paths(
    toks: &[(Tok, usize)],
    mut k: usize,
    prefix: &[String],
    out: &mut Vec<Leaf>,
) -> usize {
    let mut path = prefix.to_vec();
    let mut item = path
        .last()
        .is_some_and(|s| s.starts_with(char::is_uppercase));
    let mut line = toks.get(k).map_or(0, |t| t.1);
    loop {
        match toks.get(k) {
            Some((Tok::Ident(n), l)) => {
                if !(item || n == "self" && !path.is_empty()) {
                    path.push(n.clone());
                    line = *l;
                    item = n.starts_with(char::is_uppercase);
                }
                if is_sep(toks.get(k + 1)) {
                    k += 2;
                    continue;
                }
                let mut alias = None;
                k += 1;
                if is(toks.get(k), "as") {
                    if let Some((Tok::Ident(a), _)) = toks.get(k + 1) {
                        alias = Some(a.clone());
                    }
                    k += 2;
                }
                out.push(Leaf { path, alias, line });
                return k;
            }
            Some((Tok::Star, l)) => {
                if !item {
                    path.push("*".into());
                    line = *l;
                }
                out.push(Leaf {
                    path,
                    alias: None,
                    line,
                });
                return k + 1;
            }
            Some((Tok::Open, _)) => {
                k += 1;
                while !matches!(toks.get(k).map(|t| &t.0), Some(Tok::Close) | None) {
                    let before = k;
                    k = tree_paths(toks, k, &path, out);
                    if matches!(toks.get(k).map(|t| &t.0), Some(Tok::Comma)) || k == before {
                        k += 1;
                    }
                }
                return k + 1;
            }
            _ => {
                if path.len() > prefix.len() {
                    out.push(Leaf {
                        path,
                        alias: None,
                        line,
                    }); // `a::f::<T>`
                }
                return k;
            }
        }
    }
}
