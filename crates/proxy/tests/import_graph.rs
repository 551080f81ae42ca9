//! The import graph of the workspace's library crates, drawn from the source (issue 35): one
//! node per file, one edge per path that names another file's module (`use crate::a::b`,
//! `super::x`, `child::y` after `mod child;`, in `use` lines and in code alike; comments,
//! strings and inline `#[cfg(test)] mod … { … }` blocks left out, test-only files too). Its
//! circles (strongly connected components of more than one file) are what issue 35 removed:
//! `no_import_circles` fails on any, naming its files (issue 35 allows two files at most; the
//! house has none, so a new one needs a reason written here first). The graph is printed
//! (`cargo nextest run -p mcp-budget-proxy import_graph --no-capture`), circles first.
//!
//! A path resolves to the longest prefix of its segments that is a module of a file of the
//! same crate (`crate::boundary::store::Entry` → `boundary/store/mod.rs`); a path into another
//! crate (`mcp_budget_core::…`) is not an edge of this graph (crates depend one way by Cargo's
//! own rule).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's files: module path (segments under the crate root) → file, relative to `src`.
struct Crate {
    name: &'static str,
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Code of each file (comments, strings and inline test modules removed).
    code: BTreeMap<PathBuf, String>,
    /// Child modules each file declares (`mod x;`), not under `#[cfg(test)]`.
    children: BTreeMap<PathBuf, Vec<String>>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(name: &'static str, src: &Path) -> Crate {
    let mut c = Crate {
        name,
        modules: BTreeMap::new(),
        code: BTreeMap::new(),
        children: BTreeMap::new(),
    };
    let root = if src.join("lib.rs").exists() {
        "lib.rs"
    } else {
        "main.rs"
    };
    walk_module(&mut c, src, Path::new(root), Vec::new());
    c
}

/// Adds the file `rel` (module `path`) and, recursively, the child modules it declares.
fn walk_module(c: &mut Crate, src: &Path, rel: &Path, path: Vec<String>) {
    let Ok(text) = std::fs::read_to_string(src.join(rel)) else {
        return;
    };
    let code = strip(&text);
    let (children, test_only) = declared_modules(&code);
    let code = inline_modules_resolved(&without_inline_test_modules(&code));
    let kept: Vec<String> = children
        .into_iter()
        .filter(|ch| !test_only.contains(ch))
        .collect();
    let dir = child_dir(rel);
    for child in &kept {
        let as_file = dir.join(format!("{child}.rs"));
        let as_dir = dir.join(child).join("mod.rs");
        let file = if src.join(&as_file).exists() {
            as_file
        } else if src.join(&as_dir).exists() {
            as_dir
        } else {
            continue; // an inline `mod x { … }` or a #[path] module: part of this file
        };
        let mut p = path.clone();
        p.push(child.clone());
        walk_module(c, src, &file, p);
    }
    c.children.insert(rel.to_path_buf(), kept);
    c.modules.insert(path, rel.to_path_buf());
    c.code.insert(rel.to_path_buf(), code);
}

/// The directory a file's child modules live in (`a.rs` → `a/`, `a/mod.rs` → `a/`,
/// `lib.rs` → `.`).
fn child_dir(rel: &Path) -> PathBuf {
    let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
    match rel.file_name().and_then(|f| f.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => parent,
        Some(f) => parent.join(f.trim_end_matches(".rs")),
        None => parent,
    }
}

/// `text` with comments and string/char literals blanked (kept as spaces, so positions of
/// code stay put).
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_before(&b, i) {
            // A raw string r"…" / r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a): only the former is
            // skipped.
            if next == Some('\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// Child modules declared as `mod x;` (any visibility), and those of them under
/// `#[cfg(test)]`.
fn declared_modules(code: &str) -> (Vec<String>, BTreeSet<String>) {
    let mut all = Vec::new();
    let mut test_only = BTreeSet::new();
    let mut test_attr = false;
    for line in code.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if test_cfg_len(t).is_some() {
            test_attr = true;
            continue;
        }
        if t.starts_with("#[") {
            continue; // other attributes keep a pending cfg(test)
        }
        let rest = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        if let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            let name = name.trim().to_owned();
            if test_attr {
                test_only.insert(name.clone());
            }
            all.push(name);
        }
        test_attr = false;
    }
    (all, test_only)
}

/// The length (bytes) of the test-only `cfg` attribute `s` starts with: `#[cfg(test)]` or
/// `#[cfg(all(test, …))]` (strings are already stripped, so its first `]` ends it).
fn test_cfg_len(s: &str) -> Option<usize> {
    if s.starts_with("#[cfg(test)]") {
        Some("#[cfg(test)]".len())
    } else if s.starts_with("#[cfg(all(test,") || s.starts_with("#[cfg(all(test)") {
        s.find(']').map(|k| k + 1)
    } else {
        None
    }
}

/// Where the next test-only `cfg` attribute starts in `s`, and its length (bytes).
fn next_test_cfg(s: &str) -> Option<(usize, usize)> {
    s.match_indices("#[cfg(")
        .find_map(|(at, _)| test_cfg_len(&s[at..]).map(|len| (at, len)))
}

/// `code` without `#[cfg(test)] mod name { … }` blocks (or `#[cfg(all(test, …))]` ones).
fn without_inline_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some((at, len)) = next_test_cfg(rest) {
        let after = &rest[at + len..];
        let trimmed = after.trim_start();
        let is_block = trimmed
            .strip_prefix("mod ")
            .and_then(|r| r.find(['{', ';']).map(|k| r.as_bytes()[k] == b'{'))
            .unwrap_or(false);
        if !is_block {
            out.push_str(&rest[..at + len]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        let open = after.find('{').unwrap_or(after.len());
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end.min(after.len())..];
    }
    out.push_str(rest);
    out
}

/// `code` with the `super` that starts a path inside an inline `mod name { … }` block
/// written `self`: there it names the file's own module, not its parent (`mod sweeper { use
/// super::*; }` in `store/mod.rs` imports from `store`). One level: a `super::super` in a
/// block nested in another is read as the file's parent (none in our source).
fn inline_modules_resolved(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = code.to_owned().into_bytes();
    // Depth of inline module blocks at each brace level: a stack of "is a module block".
    let mut stack: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !is_ident(b[i - 1] as char);
        if word_start && code[i..].starts_with("mod ") {
            let rest = &code[i + 4..];
            let name_len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
            let after = rest[name_len..].trim_start();
            if name_len > 0 && after.starts_with('{') {
                let open = i + 4 + name_len + (rest.len() - name_len - after.len());
                stack.push(true);
                i = open + 1;
                continue;
            }
        }
        match b[i] {
            b'{' => stack.push(false),
            b'}' => {
                stack.pop();
            }
            _ => {}
        }
        let in_module_block = stack.iter().any(|m| *m);
        if in_module_block && word_start && code[i..].starts_with("super") {
            let chain_start = !code[..i].trim_end().ends_with("::");
            let whole_word = !code[i + 5..].starts_with(is_ident);
            if chain_start && whole_word {
                out[i..i + 5].copy_from_slice(b"self ");
            }
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| code.to_owned())
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path in `code` that starts with `crate`, `super`, `self` or one of `children`,
/// expanded (`use a::{b, c::d}` → `a::b`, `a::c::d`), as segments.
fn paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && (is_ident(chars[i - 1]) || prev_is_colons(&chars, i))) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let starts_path =
            matches!(word.as_str(), "crate" | "super" | "self") || children.contains(&word);
        if !starts_path || !colons_at(&chars, i) {
            continue;
        }
        let mut found = Vec::new();
        i = path_tail(&chars, i, vec![word], &mut found);
        out.extend(found);
    }
    out
}

fn prev_is_colons(chars: &[char], i: usize) -> bool {
    i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':'
}

fn colons_at(chars: &[char], mut i: usize) -> bool {
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':')
}

fn skip_ws(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    i
}

/// Reads `::seg::seg…` or `::{…}` after `prefix`, pushing every full path to `found`; returns
/// the index after it.
fn path_tail(
    chars: &[char],
    mut i: usize,
    prefix: Vec<String>,
    found: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix;
    loop {
        if !colons_at(chars, i) {
            found.push(path);
            return i;
        }
        i = skip_ws(chars, i) + 2;
        i = skip_ws(chars, i);
        match chars.get(i) {
            Some('{') => {
                i += 1;
                loop {
                    i = skip_ws(chars, i);
                    match chars.get(i) {
                        None => return i,
                        Some('}') => return i + 1,
                        Some(',') => i += 1,
                        Some(c) if is_ident(*c) => {
                            let s = i;
                            while i < chars.len() && is_ident(chars[i]) {
                                i += 1;
                            }
                            let word: String = chars[s..i].iter().collect();
                            let mut p = path.clone();
                            if word != "self" {
                                p.push(word);
                            }
                            i = skip_as(chars, path_tail(chars, i, p, found));
                        }
                        Some('*') => {
                            found.push(path.clone());
                            i += 1;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            Some('*') => {
                found.push(path);
                return i + 1;
            }
            Some(c) if is_ident(*c) => {
                let s = i;
                while i < chars.len() && is_ident(chars[i]) {
                    i += 1;
                }
                path.push(chars[s..i].iter().collect());
            }
            _ => {
                found.push(path);
                return i;
            }
        }
    }
}

/// The index after `as name` at `i` (after spaces), or after the spaces when there is none
/// (`use a::{b as c, d}`: `c` names no module).
fn skip_as(chars: &[char], i: usize) -> usize {
    let i = skip_ws(chars, i);
    let is_as = chars.get(i) == Some(&'a')
        && chars.get(i + 1) == Some(&'s')
        && chars.get(i + 2).is_some_and(|c| c.is_whitespace());
    if !is_as {
        return i;
    }
    let mut j = skip_ws(chars, i + 2);
    while j < chars.len() && is_ident(chars[j]) {
        j += 1;
    }
    skip_ws(chars, j)
}

/// The edges of one crate: file → files it names.
fn edges(c: &Crate) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let by_file: BTreeMap<&PathBuf, &Vec<String>> = c.modules.iter().map(|(m, f)| (f, m)).collect();
    let mut out: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, code) in &c.code {
        let me = by_file[file];
        let children = &c.children[file];
        let targets = out.entry(file.clone()).or_default();
        for p in paths(code, children) {
            let Some(abs) = absolute(me, &p) else {
                continue;
            };
            // The longest prefix that is a file's module.
            for n in (0..=abs.len()).rev() {
                if let Some(f) = c.modules.get(&abs[..n]) {
                    if f != file {
                        targets.insert(f.clone());
                    }
                    break;
                }
            }
        }
    }
    out
}

/// `path` as segments from the crate root, seen from module `me`.
fn absolute(me: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = me.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => {} // a child module of `me`
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Tarjan's strongly connected components.
fn circles(g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct T<'a> {
        g: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        on: BTreeSet<&'a PathBuf>,
        stack: Vec<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a PathBuf) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    t.out
}

fn crates() -> Vec<Crate> {
    let root = workspace().join("crates");
    vec![
        load("mcp-budget-core", &root.join("core/src")),
        load("mcp-budget-engine", &root.join("engine/src")),
        load("mcp-budget-proxy", &root.join("proxy/src")),
        load("mcp-budget-fixture", &root.join("fixture/src")),
        load("mcp-budget-rmcp", &root.join("rmcp/src")),
        load("mcp-budget", &root.join("cli/src")),
    ]
}

/// No crate has an import circle. Once the boundary was one circle of 43 files (every stage
/// added methods to the one `Boundary` and called its siblings; `config` reached up into
/// `boundary`, `relay` and `jq`), and 86 files sat in circles: boundary 43, relay 15, core 19
/// (`measure` 9, `paginate` 6, `table` 4), the binary 13 (`wrap` 8), the proxy's `mux` 4,
/// `serve` 4 and `jq` 3, the fixture's 3.
#[test]
fn no_import_circles() {
    let mut all = Vec::new();
    for c in crates() {
        let g = edges(&c);
        let n_edges: usize = g.values().map(BTreeSet::len).sum();
        let found = circles(&g);
        println!(
            "{}: {} files, {} edges, {} circles",
            c.name,
            g.len(),
            n_edges,
            found.len()
        );
        for comp in &found {
            let names: Vec<String> = comp.iter().map(|p| p.display().to_string()).collect();
            println!("  circle of {}: {}", comp.len(), names.join(", "));
            all.push(format!("{}: {}", c.name, names.join(" <-> ")));
        }
        for (file, to) in &g {
            if to.is_empty() {
                continue;
            }
            let names: Vec<String> = to.iter().map(|p| p.display().to_string()).collect();
            println!("  {} -> {}", file.display(), names.join(", "));
        }
    }
    assert!(
        all.is_empty(),
        "import circles (stages must import one way; see the graph above): {all:#?}"
    );
}

/// The scanner on a small crate of its own: edges from `use` lines (groups, `super`, child
/// modules) and from paths in code; comments, strings and inline test modules ignored.
#[test]
fn scanner_finds_the_edges_and_the_circle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write(
        "lib.rs",
        "pub mod a;\nmod b;\n#[cfg(test)]\nmod t;\n#[cfg(all(test, unix))]\nmod u;\n",
    );
    write(
        "a/mod.rs",
        "mod c;\nuse c::X;\n// use crate::b::Y;\nfn f() { let s = \"crate::b::Z\"; }\n",
    );
    write(
        "a/c.rs",
        "use super::{super::b::{self, Q}, D};\nuse crate::{b as bee};\npub struct X;\n",
    );
    write(
        "b.rs",
        "pub fn g() { crate::a::f(); }\nmod inner { use super::g; }\n#[cfg(test)]\nmod tests { use crate::a::c::X; }\n\
         #[cfg(all(test, feature = \"x\"))]\nmod more { use crate::a::c::X; }\n",
    );
    write("t.rs", "use crate::a::c::X;\n");
    write("u.rs", "use crate::a::c::X;\n");
    let c = load("t", src);
    let g = edges(&c);
    let p = PathBuf::from;
    assert!(!g.contains_key(&p("t.rs")), "test-only files are left out");
    assert!(
        !g.contains_key(&p("u.rs")),
        "so are files under cfg(all(test, …))"
    );
    assert_eq!(g[&p("a/mod.rs")], BTreeSet::from([p("a/c.rs")]));
    assert_eq!(g[&p("a/c.rs")], BTreeSet::from([p("b.rs"), p("a/mod.rs")]));
    // `super` in the inline `mod inner` names b's own module, not the crate root; the inline
    // test modules (`cfg(test)`, `cfg(all(test, …))`) add no edge.
    assert_eq!(g[&p("b.rs")], BTreeSet::from([p("a/mod.rs")]));
    let found = circles(&g);
    assert_eq!(found, vec![vec![p("a/c.rs"), p("a/mod.rs"), p("b.rs")]]);
}
