//! Every real-token figure of a measurement equals tiktoken-rs (an independent implementation)
//! on the same text, rebuilt here from the input without the measure module.
//!
//! Inputs: recorded MCP responses (a `tools/call` line with a pretty-printed JSON text and its
//! `structuredContent` twin, a compact one, a `tools/list`) and a document with floats and
//! UUIDs. Leaf texts of the field share are re-derived here from the attribution rule.

use std::collections::HashMap;

use mcp_budget_core::compact;
use mcp_budget_core::measure::{self, Options, PerEncoding, Report};
use serde_json::Value;
use tiktoken_rs::CoreBPE;

const FS_CALL: &str = include_str!("data/measure_fs_call1.rpc.json");
const EVERYTHING_CALL: &str = include_str!("data/measure_everything_call2.rpc.json");
const FS_TOOLS: &str = include_str!("data/fs_tools.rpc.json");
const DOC: &str = "{\n  \"entities\": [\n    {\"guid\": \"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d\", \"x\": 247.13061935179246, \"name\": \"Island\"},\n    {\"guid\": \"9a4d4e7b-3f2b-8c1e-8c2f-1d5e6a7b8c9d\", \"x\": 679.0625, \"name\": \"Résumé 東京 🚀\"}\n  ],\n  \"note\": \"naïve café\"\n}\n";

fn refs() -> [(&'static str, &'static CoreBPE); 2] {
    [
        ("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
        ("o200k_base", tiktoken_rs::o200k_base_singleton()),
    ]
}

fn tk(bpe: &CoreBPE, text: &str) -> usize {
    bpe.encode_ordinary(text).len()
}

fn run(text: &str) -> Report {
    measure::measure(text, true, &Options::default()).unwrap()
}

/// Asserts `got` equals `f(bpe)` for both encodings.
fn check(what: &str, got: &PerEncoding<usize>, f: impl Fn(&CoreBPE) -> usize) {
    for (name, bpe) in refs() {
        assert_eq!(got.get(name), Some(&f(bpe)), "{what} ({name})");
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn result(v: &Value) -> &Value {
    v.get("result").unwrap_or(v)
}

/// The `text` items of a tools/call line.
fn text_items(line: &Value) -> Vec<String> {
    result(line)["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Leaf texts per path by the attribution rule of the field share (fields.rs docs).
fn leaves(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    let leaf = |v: &Value| match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => true,
    };
    match v {
        Value::Object(o) if !o.is_empty() => {
            for (k, e) in o {
                let is_ident = k
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
                let p = if is_ident {
                    format!("{path}.{k}")
                } else {
                    format!("{path}[{}]", serde_json::to_string(k).unwrap())
                };
                let key = format!("{}:", serde_json::to_string(k).unwrap());
                if leaf(e) {
                    out.push((p, key + &serde_json::to_string(e).unwrap()));
                } else {
                    out.push((p.clone(), key));
                    leaves(e, &p, out);
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let p = format!("{path}[*]");
            for e in a {
                if leaf(e) {
                    out.push((p.clone(), serde_json::to_string(e).unwrap()));
                } else {
                    leaves(e, &p, out);
                }
            }
        }
        other => out.push((path.to_owned(), serde_json::to_string(other).unwrap())),
    }
}

fn check_field_share(r: &Report, values: &[&Value]) {
    let f = r.field_share.as_ref().unwrap();
    let mut all = Vec::new();
    for v in values {
        leaves(v, "$", &mut all);
    }
    for (name, bpe) in refs() {
        let mut per_path: HashMap<&str, usize> = HashMap::new();
        for (p, t) in &all {
            *per_path.entry(p).or_default() += tk(bpe, t);
        }
        let total: usize = per_path.values().sum();
        assert_eq!(
            f.total_tokens.get(name),
            Some(&total),
            "field total ({name})"
        );
        for row in &f.rows {
            assert_eq!(
                row.tokens.get(name),
                per_path.get(row.path.as_str()),
                "{} ({name})",
                row.path
            );
        }
    }
    assert_eq!(
        f.total_chars,
        all.iter().map(|(_, t)| t.chars().count()).sum::<usize>()
    );
}

#[test]
fn tools_call_line_with_pretty_text_and_twin() {
    let r = run(FS_CALL);
    let line = FS_CALL.trim_end_matches('\n');
    let v = parse(line);
    let items = text_items(&v);
    check("line", &r.size[0].tokens, |b| tk(b, line));
    check("text_items", &r.size[1].tokens, |b| {
        items.iter().map(|t| tk(b, t)).sum()
    });
    let sc = serde_json::to_string(&result(&v)["structuredContent"]).unwrap();
    check("structured_content", &r.size[2].tokens, |b| tk(b, &sc));

    let compact_items: Vec<String> = items
        .iter()
        .map(|t| serde_json::to_string(&parse(t)).unwrap())
        .collect();
    let w = r.what_ifs.iter().find(|w| w.name == "compact").unwrap();
    check("compact before", &w.tokens_before, |b| {
        items.iter().map(|t| tk(b, t)).sum()
    });
    check("compact after", &w.tokens_after, |b| {
        compact_items.iter().map(|t| tk(b, t)).sum()
    });

    let mut without = v.clone();
    without["result"]
        .as_object_mut()
        .unwrap()
        .shift_remove("structuredContent");
    let without = serde_json::to_string(&without).unwrap();
    let w = r
        .what_ifs
        .iter()
        .find(|w| w.name == "drop_structured_twin")
        .unwrap();
    check("twin after", &w.tokens_after, |b| tk(b, &without));

    let values: Vec<Value> = items.iter().map(|t| parse(t)).collect();
    check_field_share(&r, &values.iter().collect::<Vec<_>>());
}

#[test]
fn compact_tools_call_line() {
    let r = run(EVERYTHING_CALL);
    let v = parse(EVERYTHING_CALL);
    let items = text_items(&v);
    check("text_items", &r.size[1].tokens, |b| {
        items.iter().map(|t| tk(b, t)).sum()
    });
    let values: Vec<Value> = items.iter().map(|t| parse(t)).collect();
    check_field_share(&r, &values.iter().collect::<Vec<_>>());
}

#[test]
fn tools_list_per_tool_and_total() {
    let r = run(FS_TOOLS);
    let v = parse(FS_TOOLS);
    let tools = result(&v)["tools"].as_array().unwrap();
    let t = r.tools.as_ref().unwrap();
    assert_eq!(t.tools.len(), tools.len());
    for (name, bpe) in refs() {
        let mut expected: Vec<(String, usize)> = tools
            .iter()
            .map(|d| {
                (
                    d["name"].as_str().unwrap().to_owned(),
                    tk(bpe, &serde_json::to_string(d).unwrap()),
                )
            })
            .collect();
        let total: usize = expected.iter().map(|e| e.1).sum();
        assert_eq!(t.total.get(name), Some(&total));
        for row in &t.tools {
            let i = expected.iter().position(|e| e.0 == row.name).unwrap();
            assert_eq!(
                row.tokens.get(name),
                Some(&expected.remove(i).1),
                "{} ({name})",
                row.name
            );
        }
    }
    check("line", &r.size[0].tokens, |b| {
        tk(b, FS_TOOLS.trim_end_matches('\n'))
    });
    check_field_share(&r, &[&v]);
}

#[test]
fn document_with_floats_and_uuids() {
    let r = run(DOC);
    let v = parse(DOC);
    check("document", &r.size[0].tokens, |b| tk(b, DOC));
    let exact = serde_json::to_string(&v).unwrap();
    for w in &r.what_ifs {
        let after = match (w.name.as_str(), w.precision) {
            ("compact", _) => exact.clone(),
            ("floats", Some(p)) => compact::to_string(&v, p),
            ("uuid_prefix", _) => exact
                .replace("3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d", "3f2b8c1e9a4d")
                .replace("9a4d4e7b-3f2b-8c1e-8c2f-1d5e6a7b8c9d", "9a4d4e7b3f2b"),
            ("table", _) => "{\"entities\":[2]{guid,x,name}:\n\"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d\",247.13061935179246,Island\n\"9a4d4e7b-3f2b-8c1e-8c2f-1d5e6a7b8c9d\",679.0625,Résumé 東京 🚀\n,\"note\":\"naïve café\"}".to_owned(),
            other => panic!("unexpected what-if {other:?}"),
        };
        check(&w.name, &w.tokens_after, |b| tk(b, &after));
        if w.name != "compact" {
            check(&w.name, &w.tokens_before, |b| tk(b, &exact));
        }
    }
    let names: Vec<&str> = r.what_ifs.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "compact",
            "floats",
            "floats",
            "floats",
            "floats",
            "uuid_prefix",
            "table"
        ],
        "247.13061935179246 (17 digits) rounds at 4, 6, 9 and 12: {:#?}",
        r.what_ifs
    );
    check_field_share(&r, &[&v]);
}
