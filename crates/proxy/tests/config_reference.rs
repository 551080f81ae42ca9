//! `docs/reference/config.md` documents every key the config file accepts, and no other.
//!
//! The accepted keys come from the serde structs themselves, not from a list kept by hand: every
//! table of [`ConfigFile`] denies unknown fields, so parsing `<table>.__probe__ = 1` fails with
//! serde's "unknown field `__probe__`, expected one of `a`, `b` …", which names the table's
//! keys. Each key is probed in turn: a table is walked into, a map of tables
//! (`[tools.<name>]`) is walked into under the name `<name>`, anything else is a key. A key
//! added to a struct without a row in the page (or a row left after its key went) fails here.

use std::collections::BTreeSet;
use std::path::Path;

use mcp_budget_proxy::config::ConfigFile;

const PAGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/reference/config.md"
);
const PROBE: &str = "__probe__";

/// The TOML dotted key of a path, each segment quoted (`<name>` is a valid quoted key).
fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(".")
}

/// The error of parsing `<path>.__probe__ = 1`, or `None` when it parses.
fn probe(path: &[String]) -> Option<String> {
    let mut full = path.to_vec();
    full.push(PROBE.to_owned());
    let text = format!("{} = 1\n", dotted(&full));
    ConfigFile::parse(&text, Path::new("probe.toml"))
        .err()
        .map(|e| e.to_string())
}

/// The field names serde lists after "unknown field `__probe__`".
fn fields_named(message: &str) -> Option<Vec<String>> {
    let rest = message
        .split(&format!("unknown field `{PROBE}`, expected "))
        .nth(1)?;
    let list = rest.split('\n').next().unwrap_or("");
    let list = list.strip_prefix("one of ").unwrap_or(list);
    Some(
        list.split(", ")
            .filter_map(|f| {
                f.trim()
                    .strip_prefix('`')?
                    .split('`')
                    .next()
                    .map(str::to_owned)
            })
            .collect(),
    )
}

/// Every key under `path`, dotted (`tools.<name>.max_tokens`), into `out`.
fn walk(path: Vec<String>, out: &mut BTreeSet<String>) {
    let message = probe(&path).unwrap_or_else(|| {
        panic!(
            "`{}.{PROBE} = 1` parsed: a table that takes any key?",
            path.join(".")
        )
    });
    if let Some(fields) = fields_named(&message) {
        assert!(!fields.is_empty(), "no fields named in {message:?}");
        for field in fields {
            let mut next = path.clone();
            next.push(field);
            walk(next, out);
        }
    } else if message.contains("expected struct") {
        // A map of tables: the probe was taken as an entry's (wrong-typed) value.
        let mut next = path.clone();
        next.push("<name>".to_owned());
        walk(next, out);
    } else {
        assert!(!path.is_empty(), "the top level is not a table: {message}");
        out.insert(path.join("."));
    }
}

/// The keys the page documents: the first cell of each table row, in backticks.
fn documented(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_config_reference_documents_every_key_and_no_other() {
    let mut accepted = BTreeSet::new();
    walk(Vec::new(), &mut accepted);
    // The walk itself must find keys of every depth, or it checks nothing.
    for known in [
        "defaults.max_tokens",
        "tools.<name>.transform",
        "servers.<name>.oauth.scope",
    ] {
        assert!(
            accepted.contains(known),
            "the probe walk missed {known}: {accepted:?}"
        );
    }
    let page = std::fs::read_to_string(PAGE).expect("docs/reference/config.md");
    let documented = documented(&page);
    let missing: Vec<_> = accepted.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/reference/config.md is out of step with the config structs \
         (crates/engine/src/config.rs, config/*.rs):\n  keys without a row: {missing:?}\n  \
         rows of keys the config does not accept: {extra:?}"
    );
}

#[test]
fn the_probe_reads_serdes_unknown_field_message() {
    let message = probe(&["cache".to_owned()]).expect("an unknown key is an error");
    assert_eq!(
        fields_named(&message),
        Some(vec![
            "bytes".to_owned(),
            "ttl_secs".to_owned(),
            "dir".to_owned()
        ]),
        "{message}"
    );
}
