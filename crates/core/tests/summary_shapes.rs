//! Exact summaries of small inputs, snapshots of the summaries of recorded MCP responses, and
//! the elision envelope (issue 2 §4).

use mcp_budget_core::summary::{self, DEFAULT_SUMMARY_TOKENS};
use mcp_budget_core::{compact, tokens::Encoding};
use serde_json::Value;

/// Copies of `shared/fixtures` (see `tests/data/`).
const DIRECTORY_TREE: &str = include_str!("data/directory_tree.pretty.json");
const TINY_IMAGE_RPC: &str = include_str!("data/tiny_image.rpc.json");
const FS_TOOLS_RPC: &str = include_str!("data/fs_tools.rpc.json");
const ANNOTATED_MESSAGE_RPC: &str = include_str!("data/annotated_message.rpc.json");

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("test input is JSON")
}

/// The summary's compact text, checked against its budget.
fn summarize(text: &str, max_tokens: usize) -> String {
    let out = compact::to_string(
        &summary::summarize(&parse(text), &Encoding::Cl100kBase, max_tokens),
        0,
    );
    assert!(Encoding::Cl100kBase.count(&out) <= max_tokens, "{out}");
    out
}

const RECORDS: &str = r#"[
  {"id":1,"type":"file","level":"info","size":10},
  {"id":2,"type":"dir","level":"warn"},
  {"id":3,"type":"file","level":"info","size":30.5},
  {"id":4,"type":"file","level":"error","size":2}
]"#;

#[test]
fn array_of_records_counts_categories_and_numbers() {
    assert_eq!(
        summarize(RECORDS, DEFAULT_SUMMARY_TOKENS),
        concat!(
            r#"{"type":"array","len":4,"items":{"type":"object","fields":{"#,
            r#""id":{"type":"number","min":1,"max":4,"mean":2.5},"#,
            r#""type":{"type":"string","chars":{"min":3,"max":4},"counts":{"file":3,"dir":1}},"#,
            r#""level":{"type":"string","chars":{"min":4,"max":5},"counts":{"info":2,"warn":1,"error":1}},"#,
            r#""size":{"type":"number","present":3,"min":2,"max":30.5,"mean":14.1667}}}}"#
        )
    );
}

#[test]
fn array_of_records_degrades_to_key_frequencies_then_length() {
    assert_eq!(
        summarize(RECORDS, 40),
        r#"{"type":"array","len":4,"items":{"type":"object","keys":{"id":4,"type":4,"level":4,"size":3}}}"#
    );
    assert_eq!(summarize(RECORDS, 12), r#"{"type":"array","len":4}"#);
    assert_eq!(summarize(RECORDS, 4), "{}");
}

const SCENE: &str = r#"{"entities":[
  {"id":12,"name":"Island","parentId":null,"layer":"3d","traits":["Transform","Renderable3D"]},
  {"id":13,"name":"Sea","parentId":12,"layer":"3d","traits":[]},
  {"id":14,"name":"HUD","parentId":null,"layer":"2d","traits":["Transform"]}
],"total":3,"byType":{"mesh":2,"ui":1}}"#;

#[test]
fn object_shows_top_level_keys_nested_arrays_and_mixed_types() {
    assert_eq!(
        summarize(SCENE, DEFAULT_SUMMARY_TOKENS),
        concat!(
            r#"{"type":"object","keys":3,"fields":{"entities":{"type":"array","len":3,"items":"#,
            r#"{"type":"object","fields":{"id":{"type":"number","min":12,"max":14,"mean":13.0},"#,
            r#""name":{"type":"string","chars":{"min":3,"max":6},"distinct":3},"#,
            r#""parentId":{"types":{"number":1,"null":2},"value":12},"#,
            r#""layer":{"type":"string","chars":{"min":2,"max":2},"counts":{"3d":2,"2d":1}},"#,
            r#""traits":{"type":"array","len":{"min":0,"max":2,"total":3},"items":"#,
            r#"{"type":"string","chars":{"min":9,"max":12},"counts":{"Transform":2,"Renderable3D":1}}}}}},"#,
            r#""total":{"type":"number","value":3},"#,
            r#""byType":{"type":"object","keys":2,"fields":{"mesh":{"type":"number","value":2},"ui":{"type":"number","value":1}}}}}"#
        )
    );
    assert_eq!(
        summarize(SCENE, 40),
        r#"{"type":"object","keys":["entities","total","byType"]}"#
    );
}

#[test]
fn strings_show_length_in_chars_and_short_values() {
    assert_eq!(
        summarize(
            r#"{"log":"a\nb\nc","ok":true,"note":"this string is longer than forty characters, so no value","city":"東京"}"#,
            DEFAULT_SUMMARY_TOKENS
        ),
        concat!(
            r#"{"type":"object","keys":4,"fields":{"log":{"type":"string","chars":5,"value":"a\nb\nc"},"#,
            r#""ok":{"type":"bool","value":true},"note":{"type":"string","chars":56},"#,
            r#""city":{"type":"string","chars":2,"value":"東京"}}}"#
        )
    );
}

#[test]
fn small_and_empty_values() {
    assert_eq!(summarize("[]", 300), r#"{"type":"array","len":0}"#);
    assert_eq!(summarize("{}", 300), r#"{"type":"object","keys":0}"#);
    assert_eq!(summarize("null", 300), r#"{"type":"null"}"#);
    assert_eq!(
        summarize("1e400", 300),
        r#"{"type":"number","value":1e+400}"#
    );
    assert_eq!(
        summarize("[[1,2],[3],[]]", 300),
        r#"{"type":"array","len":3,"items":{"type":"array","len":{"min":0,"max":2,"total":3},"items":{"type":"number","min":1,"max":3,"mean":2.0}}}"#
    );
    assert_eq!(
        summarize("[true,false,true]", 300),
        r#"{"type":"array","len":3,"items":{"type":"bool","true":2,"false":1}}"#
    );
}

#[test]
fn high_cardinality_strings_report_distinct_count() {
    let names: Vec<String> = (0..100).map(|i| format!("n{}", i % 70)).collect();
    let text = serde_json::to_string(&names).expect("JSON");
    assert_eq!(
        summarize(&text, 300),
        r#"{"type":"array","len":100,"items":{"type":"string","chars":{"min":2,"max":3},"distinct":"65+"}}"#
    );
}

#[test]
fn wide_objects_show_the_first_fields_and_count_the_rest() {
    let wide: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("k{i}"), Value::from(i)))
        .collect();
    let out = compact::to_string(
        &summary::summarize(&Value::Object(wide), &Encoding::Cl100kBase, 300),
        0,
    );
    assert!(
        out.starts_with(
            r#"{"type":"object","keys":100,"fields":{"k0":{"type":"number","value":0},"#
        ),
        "{out}"
    );
    assert!(
        out.ends_with(r#""k15":{"type":"number","value":15}},"more_fields":84}"#),
        "{out}"
    );
}

#[test]
fn huge_objects_count_every_key() {
    let huge: serde_json::Map<String, Value> = (0..10_000)
        .map(|i| (format!("k{i}"), Value::from(i)))
        .collect();
    let out = compact::to_string(
        &summary::summarize(&Value::Object(huge), &Encoding::Cl100kBase, 60),
        0,
    );
    assert!(
        out.starts_with(r#"{"type":"object","keys":10000,"#),
        "{out}"
    );
    assert!(out.ends_with(r#","more_fields":9995}"#), "{out}");
}

#[test]
fn summaries_of_recorded_responses() {
    for (name, text) in [
        ("directory_tree", DIRECTORY_TREE),
        ("tiny_image", TINY_IMAGE_RPC),
        ("fs_tools", FS_TOOLS_RPC),
        ("annotated_message", ANNOTATED_MESSAGE_RPC),
    ] {
        for budget in [DEFAULT_SUMMARY_TOKENS, 60] {
            insta::assert_snapshot!(format!("{name}_{budget}"), summarize(text, budget));
        }
    }
}

#[test]
fn elision_envelope_of_directory_tree() {
    let v = parse(DIRECTORY_TREE);
    let rendered = compact::to_string(&v, 9);
    let tokens = Encoding::Cl100kBase.count(&rendered) as u64;
    let mut env = summary::elision_envelope(
        &v,
        rendered.len() as u64,
        tokens,
        &Encoding::Cl100kBase,
        "3fa9c2e1b07d",
        Some("3fa9c2e1b07d.1"),
        "Page 1: read_more {\"cursor\":\"3fa9c2e1b07d.1\"}.",
    );
    assert!(env.elided);
    assert_eq!(env.bytes, rendered.len() as u64);
    assert_eq!(
        env.preview,
        summary::summarize(&v, &Encoding::Cl100kBase, DEFAULT_SUMMARY_TOKENS)
    );
    insta::assert_snapshot!(
        "envelope_directory_tree",
        serde_json::to_string(&env).expect("JSON")
    );

    assert!(summary::fit_envelope(
        &mut env,
        &v,
        &Encoding::Cl100kBase,
        120
    ));
    let text = serde_json::to_string(&env).expect("JSON");
    assert!(Encoding::Cl100kBase.count(&text) <= 120, "{text}");
    assert_ne!(
        env.preview,
        Value::Object(Default::default()),
        "some preview fits in 120"
    );

    assert!(!summary::fit_envelope(
        &mut env,
        &v,
        &Encoding::Cl100kBase,
        10
    ));
    assert_eq!(env.preview, Value::Object(Default::default()));
}
