//! What-if arithmetic on small fixtures whose numbers were computed by hand.
//!
//! The `bytes` encoding (one token per UTF-8 byte) makes every token figure a byte length, so
//! each expected number below is the length of a text one can write down. The texts are in the
//! comments.

// The fixture's `3.14159265358979` is a float with many digits, not a use of π.
#![allow(clippy::approx_constant)]

use mcp_budget_core::measure::{self, Kind, Options, Report, WhatIf};
use mcp_budget_core::tokens::Encoding;

fn bytes_opts() -> Options {
    Options {
        encodings: vec![Encoding::Bytes],
        top: 15,
    }
}

fn run(text: &str, expect_json: bool) -> Report {
    measure::measure(text, expect_json, &bytes_opts()).unwrap()
}

fn what_if<'a>(r: &'a Report, name: &str, precision: Option<u32>) -> &'a WhatIf {
    r.what_ifs
        .iter()
        .find(|w| w.name == name && w.precision == precision)
        .unwrap_or_else(|| panic!("no what-if {name} {precision:?} in {:#?}", r.what_ifs))
}

/// (tokens before, tokens after, saved %, changed) of a what-if, in the `bytes` encoding.
fn numbers(w: &WhatIf) -> (usize, usize, f64, usize) {
    (
        *w.tokens_before.get("bytes").unwrap(),
        *w.tokens_after.get("bytes").unwrap(),
        *w.saved_pct.get("bytes").unwrap(),
        w.changed,
    )
}

/// `json.dumps(DOC, indent=2) + "\n"`: 209 bytes. Its compact form (144 bytes):
/// `{"xs":[{"id":"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d","v":0.1234567},{"id":"00000000-0000-0000-0000-000000000001","v":2.5}],"pi":3.14159265358979}`
const DOC: &str = "{\n  \"xs\": [\n    {\n      \"id\": \"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d\",\n      \"v\": 0.1234567\n    },\n    {\n      \"id\": \"00000000-0000-0000-0000-000000000001\",\n      \"v\": 2.5\n    }\n  ],\n  \"pi\": 3.14159265358979\n}\n";

#[test]
fn size_row_and_estimate_error() {
    let r = run(DOC, true);
    assert_eq!(r.kind, Kind::Json);
    let s = r.whole().unwrap();
    assert_eq!(s.part, "document");
    assert_eq!((s.bytes, s.chars, s.chars4), (209, 209, 53));
    assert_eq!(*s.tokens.get("bytes").unwrap(), 209);
    // (53 - 209) / 209 = -74.641…%
    assert_eq!(*s.estimate_error_pct.get("bytes").unwrap(), -74.64);

    // Multi-byte text: 5 chars, 6 bytes; chars/4 = 2; (2 - 6) / 6 = -66.67%.
    let r = run("abcdé", false);
    assert_eq!(r.kind, Kind::Text);
    let s = r.whole().unwrap();
    assert_eq!((s.bytes, s.chars, s.chars4), (6, 5, 2));
    assert_eq!(*s.estimate_error_pct.get("bytes").unwrap(), -66.67);
}

#[test]
fn pretty_to_compact() {
    let r = run(DOC, true);
    // 209 -> 144: (209 - 144) / 209 = 31.10%.
    assert_eq!(numbers(what_if(&r, "compact", None)), (209, 144, 31.1, 1));
}

#[test]
fn floats_at_each_precision_with_max_error() {
    let r = run(DOC, true);
    // 4 digits: 0.1234567 -> 0.1235, 3.14159265358979 -> 3.142: 144 - 3 - 11 = 130.
    let w = what_if(&r, "floats", Some(4));
    assert_eq!(numbers(w), (144, 130, 9.72, 2));
    assert_eq!(w.max_abs_error, Some((3.14159265358979f64 - 3.142).abs()));
    // 6 digits: 0.123457, 3.14159: 144 - 1 - 9 = 134.
    let w = what_if(&r, "floats", Some(6));
    assert_eq!(numbers(w), (144, 134, 6.94, 2));
    assert_eq!(w.max_abs_error, Some((3.14159265358979f64 - 3.14159).abs()));
    // 9 digits: 0.1234567 already fits; 3.14159265: 144 - 6 = 138.
    let w = what_if(&r, "floats", Some(9));
    assert_eq!(numbers(w), (144, 138, 4.17, 1));
    assert_eq!(
        w.max_abs_error,
        Some((3.14159265358979f64 - 3.14159265).abs())
    );
    // 12 digits: 3.14159265359: 144 - 3 = 141.
    let w = what_if(&r, "floats", Some(12));
    assert_eq!(numbers(w), (144, 141, 2.08, 1));
    assert_eq!(
        w.max_abs_error,
        Some((3.14159265358979f64 - 3.14159265359).abs())
    );
}

#[test]
fn uuids_to_12_hex_prefix() {
    let r = run(DOC, true);
    // Two UUIDs of 36 chars become 12: 144 - 2 * 24 = 96; 48 / 144 = 33.33%.
    assert_eq!(
        numbers(what_if(&r, "uuid_prefix", None)),
        (144, 96, 33.33, 2)
    );
    // The proxy setting that applies it.
    assert_eq!(
        what_if(&r, "uuid_prefix", None).config_key,
        "uuid_prefix = true"
    );
    assert_eq!(what_if(&r, "floats", Some(6)).config_key, "precision = 6");

    // In plain text too: "run 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d done\n" (46 bytes) -> 22.
    let r = run("run 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d done\n", false);
    assert_eq!(r.what_ifs.len(), 1);
    assert_eq!(
        numbers(what_if(&r, "uuid_prefix", None)),
        (46, 22, 52.17, 1)
    );
}

#[test]
fn uniform_array_to_table() {
    let r = run(DOC, true);
    // {"xs":[2]{id,v}:⏎"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d",0.1234567⏎"00000000-0000-0000-0000-000000000001",2.5⏎,"pi":3.14159265358979}
    // = 132 bytes (UUIDs start with a digit, so they stay quoted).
    assert_eq!(numbers(what_if(&r, "table", None)), (144, 132, 8.33, 1));
}

#[test]
fn only_applicable_what_ifs_are_shown() {
    // Compact already, integers only, no UUID, no uniform array: nothing applies.
    let r = run(r#"{"a":[1,2,3],"b":{"c":"x"}}"#, true);
    assert!(r.what_ifs.is_empty(), "{:#?}", r.what_ifs);
    // Plain text without UUIDs: nothing applies.
    assert!(run("just words\n", false).what_ifs.is_empty());
}

#[test]
fn field_share_of_hand_fixture() {
    let r = run(DOC, true);
    let f = r.field_share.as_ref().unwrap();
    // Leaf texts: "xs": (5); "id":"…" (43) twice; "v":0.1234567 (13) and "v":2.5 (7);
    // "pi":3.14159265358979 (21). Total 5 + 86 + 20 + 21 = 132.
    assert_eq!(f.total_chars, 132);
    assert_eq!(f.paths, 4);
    let paths: Vec<(&str, usize, usize)> = f
        .rows
        .iter()
        .map(|r| (r.path.as_str(), r.count, r.chars))
        .collect();
    assert_eq!(
        paths,
        [
            ("$.xs[*].id", 2, 86),
            ("$.pi", 1, 21),
            ("$.xs[*].v", 2, 20),
            ("$.xs", 1, 5)
        ]
    );
    assert_eq!(f.rows[0].chars_pct, 65.15);
    assert_eq!(*f.rows[0].tokens_pct.get("bytes").unwrap(), 65.15);
}

/// everything.call2: `{"result":{"content":[{"type":"text","text":"{\"temperature\":36,…}"}],
/// "structuredContent":{"temperature":36,…}},"jsonrpc":"2.0","id":5}` + `\n` (239 bytes).
#[test]
fn structured_twin_dropped_from_the_line() {
    let line = include_str!("data/measure_everything_call2.rpc.json");
    let r = run(line, true);
    assert_eq!(r.kind, Kind::ToolsCall);
    let parts: Vec<(&str, usize)> = r.size.iter().map(|s| (s.part.as_str(), s.bytes)).collect();
    // The line without its newline; the one text item; the compact structuredContent.
    assert_eq!(
        parts,
        [
            ("line", 238),
            ("text_items", 68),
            ("structured_content", 68)
        ]
    );
    // Without `,"structuredContent":{…}` (89 bytes) the line is 149: 89 / 238 = 37.39%.
    assert_eq!(
        numbers(what_if(&r, "drop_structured_twin", None)),
        (238, 149, 37.39, 1)
    );
    // Field share comes from the model-visible JSON text.
    let f = r.field_share.as_ref().unwrap();
    assert_eq!(f.part, "text_items");
    assert_eq!(f.rows[0].path, "$.conditions");
}

#[test]
fn filesystem_twin_is_a_string_member() {
    // server-filesystem sends the text again as structuredContent.content.
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a b"}],"structuredContent":{"content":"a b"}}}"#;
    let r = run(line, true);
    let w = what_if(&r, "drop_structured_twin", None);
    let dropped = r#","structuredContent":{"content":"a b"}"#.len();
    assert_eq!(numbers(w).0 - numbers(w).1, dropped);
    // A structuredContent that says something else is no twin.
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a b"}],"structuredContent":{"content":"a c"}}}"#;
    assert!(run(line, true).what_ifs.is_empty());
}

#[test]
fn tools_list_costs_largest_first() {
    let line = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{}},{"name":"bb","description":"long","inputSchema":{}}]}}"#;
    let r = run(line, true);
    assert_eq!(r.kind, Kind::ToolsList);
    let t = r.tools.as_ref().unwrap();
    // {"name":"bb","description":"long","inputSchema":{}} = 51; {"name":"a","inputSchema":{}} = 29.
    let rows: Vec<(&str, usize)> = t
        .tools
        .iter()
        .map(|x| (x.name.as_str(), *x.tokens.get("bytes").unwrap()))
        .collect();
    assert_eq!(rows, [("bb", 51), ("a", 29)]);
    assert_eq!(*t.total.get("bytes").unwrap(), 80);
}

#[test]
fn errors_are_values_not_panics() {
    let o = bytes_opts();
    assert!(matches!(
        measure::measure_bytes(b"{\"a\":\xff}", true, &o),
        Err(measure::MeasureError::InvalidUtf8 { valid_up_to: 5 })
    ));
    assert!(matches!(
        measure::measure("{\"a\":", true, &o),
        Err(measure::MeasureError::InvalidJson { .. })
    ));
    // Not claimed to be JSON: measured as text.
    assert_eq!(
        measure::measure("{\"a\":", false, &o).unwrap().kind,
        Kind::Text
    );
    let none = Options {
        encodings: vec![],
        top: 1,
    };
    assert!(matches!(
        measure::measure("x", false, &none),
        Err(measure::MeasureError::NoEncoding)
    ));
}

#[test]
fn totals_sum_whole_rows_and_what_ifs() {
    let a = run(DOC, true);
    let b = run("run 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d done\n", false);
    let (size, what_ifs) = measure::totals(&[&a, &b]).unwrap();
    assert_eq!((size.part.as_str(), size.bytes), ("total", 209 + 46));
    let u = what_ifs.iter().find(|w| w.name == "uuid_prefix").unwrap();
    // (144 + 46) -> (96 + 22); 3 UUIDs.
    assert_eq!(numbers(u), (190, 118, 37.89, 3));
    assert_eq!(u.part, "all");
}
