//! `uuid_prefix`'s promise as a property (issue 33 §2): for any results with UUIDs (JSON text,
//! pretty or compact, plain text, structuredContent; one page or many; prefixes that collide
//! within a result or across results) and any later call that passes back a prefix the client
//! was shown — as a whole string value, inside a string, or as an object key — the server is
//! sent the full UUID, or the call is answered `ambiguous_id`; never the bare prefix.

mod boundary_util;

use boundary_util::*;
use mcp_budget_core::uuid::{PREFIX_LEN, prefix_starts};
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::boundary::args_rewrite::Rewrite;
use mcp_budget_proxy::config::{ConfigFile, Settings};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A UUID from 48 bits of prefix and 80 more, lowercase or uppercase.
fn uuid(prefix: u64, rest: u128, upper: bool) -> String {
    let hex = format!(
        "{:012x}{:020x}",
        prefix & 0xffff_ffff_ffff,
        rest & ((1u128 << 80) - 1)
    );
    let s = format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    );
    if upper { s.to_uppercase() } else { s }
}

/// One result's UUIDs: `(prefix, rest, upper)`; a prefix drawn from a small pool collides.
fn uuids() -> impl Strategy<Value = Vec<(u64, u128, bool)>> {
    prop::collection::vec(
        (
            prop_oneof![3 => any::<u64>(), 1 => 0u64..4],
            any::<u128>(),
            prop::bool::weighted(0.1),
        ),
        1..40,
    )
}

/// How the result carries its UUIDs.
#[derive(Debug, Clone, Copy)]
enum Carrier {
    PrettyJson,
    CompactJson,
    PlainText,
    Structured,
}

fn carrier() -> impl Strategy<Value = Carrier> {
    prop_oneof![
        Just(Carrier::PrettyJson),
        Just(Carrier::CompactJson),
        Just(Carrier::PlainText),
        Just(Carrier::Structured),
    ]
}

fn result_of(ids: &[String], carrier: Carrier) -> Value {
    let entities: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| json!({"id": id, "name": format!("entity {i}"), "note": format!("parent {id}.")}))
        .collect();
    let doc = json!({"entities": entities});
    match carrier {
        Carrier::PrettyJson => {
            json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&doc).unwrap()}]})
        }
        Carrier::CompactJson => json!({"content": [{"type": "text", "text": doc.to_string()}]}),
        Carrier::PlainText => {
            let lines: Vec<String> = ids.iter().map(|id| format!("- {id} open")).collect();
            json!({"content": [{"type": "text", "text": lines.join("\n")}]})
        }
        Carrier::Structured => json!({"content": [{"type": "text", "text": doc.to_string()}],
                                      "structuredContent": doc}),
    }
}

/// Every 12-hex run the client is shown in `pages` (the meta items, whose response ids are 12
/// hex digits too, left out), lowercase.
fn shown_prefixes(pages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for page in pages {
        let mut items = texts(page);
        if meta(page).is_some() {
            items.pop();
        }
        if let Some(sc) = page.get("structuredContent") {
            let mut sc = sc.clone();
            if let Some(o) = sc.as_object_mut() {
                o.remove("mcp-budget");
            }
            items.push(sc.to_string());
        }
        for text in items {
            for start in prefix_starts(&text) {
                let p = text[start..start + PREFIX_LEN].to_ascii_lowercase();
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

fn arguments_with(prefix: &str, position: u8) -> Value {
    match position % 3 {
        0 => json!({"id": prefix}),
        1 => json!({"query": format!("details of {prefix}, please")}),
        _ => json!({"map": {prefix: true}}),
    }
}

/// Whether `v` holds `prefix` (any case) as a bare 12-hex run anywhere (strings and keys).
fn holds_bare(v: &Value, prefix: &str) -> bool {
    let bare =
        |s: &str| prefix_starts(s).any(|i| s[i..i + PREFIX_LEN].eq_ignore_ascii_case(prefix));
    match v {
        Value::String(s) => bare(s),
        Value::Array(a) => a.iter().any(|x| holds_bare(x, prefix)),
        Value::Object(o) => o.iter().any(|(k, x)| bare(k) || holds_bare(x, prefix)),
        _ => false,
    }
}

fn boundary_with_uuids(budget: usize, blobs: &tempfile::TempDir) -> Boundary {
    Boundary::new(Settings {
        max_tokens: Some(budget),
        // `[defaults] uuid_prefix = true`, as the user set it.
        file: Some(
            ConfigFile::parse(
                "[defaults]\nuuid_prefix = true\n",
                std::path::Path::new("t.toml"),
            )
            .unwrap(),
        ),
        blob_dir: Some(blobs.path().join("blobs")),
        jq_worker: jq_worker(),
        ..Settings::default()
    })
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_shown_prefix_reaches_the_server_as_its_uuid_or_is_ambiguous(
        first in uuids(),
        second in uuids(),
        carriers in (carrier(), carrier()),
        budget in prop_oneof![Just(300usize), Just(2_000), Just(20_000)],
        positions in prop::collection::vec(any::<u8>(), 8),
    ) {
        let blobs = tempfile::tempdir().unwrap();
        let b = boundary_with_uuids(budget, &blobs);
        let mut all_ids = Vec::new();
        let mut shown = Vec::new();
        for (ids, carrier) in [(&first, carriers.0), (&second, carriers.1)] {
            let ids: Vec<String> = ids.iter().map(|&(p, r, u)| uuid(p, r, u)).collect();
            let page1 = b.shape_call_result("list_entities", result_of(&ids, carrier), 0);
            let pages = follow(&b, page1, budget);
            for p in shown_prefixes(&pages) {
                if !shown.contains(&p) {
                    shown.push(p);
                }
            }
            all_ids.extend(ids);
        }
        // Not vacuous: a UUID whose prefix no other UUID of the first result has is shown
        // shortened (page 1 holds at least one entity).
        let lone = first.iter().any(|&(p, _, _)| {
            first.iter().filter(|&&(q, _, _)| q & 0xffff_ffff_ffff == p & 0xffff_ffff_ffff).count() == 1
        });
        prop_assert!(!lone || !shown.is_empty(), "nothing was shortened");
        for (n, prefix) in shown.iter().enumerate() {
            let args = arguments_with(prefix, positions[n % positions.len()]);
            match b.rewrite_call("get_entity", args.clone()) {
                Rewrite::Arguments(new) => {
                    prop_assert!(!holds_bare(&new, prefix), "bare {prefix} still in {new}");
                    let text = new.to_string().to_ascii_lowercase();
                    prop_assert!(
                        all_ids.iter().any(|id| id.to_ascii_lowercase().replace('-', "")
                            .starts_with(prefix.as_str()) && text.contains(&id.to_ascii_lowercase())),
                        "{prefix} expanded to no UUID of the results: {new}"
                    );
                }
                Rewrite::Answer(answer) => {
                    prop_assert!(texts(&answer).concat().contains("ambiguous_id"), "{answer}");
                }
                Rewrite::Forward => prop_assert!(false, "{prefix} forwarded bare: {args}"),
            }
        }
    }
}
