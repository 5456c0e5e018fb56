//! Reading Rust source just well enough to follow its paths to the crate
//! root, for `tests/module_graph.rs`: comments and literals blanked, a
//! few kinds of token, and the paths that start at `crate`, `$crate` or
//! enough `super`s, with `use` groups.

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

/// The names each path in `code` takes at the crate root, with their
/// lines: `crate::a`, `$crate::a`, `crate::{a, b}` and `super::...::a`
/// where the `super`s climb `depth` levels, the depth of the file's module
/// (`1` for `chan/mod.rs` or `context.rs`), plus one per open inline `mod`.
pub fn root_names(code: &str, depth: usize) -> Vec<(String, usize)> {
    let toks = tokens(code);
    let mut names = Vec::new();
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
        match toks.get(j) {
            Some((Tok::Ident(n), line)) => names.push((n.clone(), *line)),
            Some((Tok::Open, _)) => names.extend(group_heads(&toks, j)),
            _ => {}
        }
    }
    names
}

/// The leaf names a `use` tree at `k` brings in (`a::{b, c as d}` gives
/// `b`, `d`), for the re-exports of `lib.rs`.
pub fn use_leaves(toks: &[(Tok, usize)], mut k: usize, out: &mut Vec<String>) -> usize {
    loop {
        match toks.get(k).map(|t| &t.0) {
            Some(Tok::Ident(n)) => {
                if is_sep(toks.get(k + 1)) {
                    k += 2;
                } else if is(toks.get(k + 1), "as") {
                    if let Some((Tok::Ident(alias), _)) = toks.get(k + 2) {
                        out.push(alias.clone());
                    }
                    return k + 3;
                } else {
                    out.push(n.clone());
                    return k + 1;
                }
            }
            Some(Tok::Open) => {
                k += 1;
                while !matches!(toks.get(k).map(|t| &t.0), Some(Tok::Close) | None) {
                    k = use_leaves(toks, k, out);
                    if matches!(toks.get(k).map(|t| &t.0), Some(Tok::Comma)) {
                        k += 1;
                    }
                }
                return k + 1;
            }
            other => panic!(
                "lib.rs: a `use` the checker cannot read (a glob re-export?) at {other:?}, line {}",
                toks.get(k).map_or(0, |t| t.1)
            ),
        }
    }
}
