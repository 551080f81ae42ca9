//! Invariants of `measure` over random inputs: no panic on any text or bytes, the field share
//! partitions the compact text's leaf characters, and what-ifs only ever shrink by what they
//! remove (checked with the `bytes` encoding, where tokens are bytes).

use mcp_budget_core::measure::{self, Kind, Options};
use mcp_budget_core::tokens::Encoding;
use proptest::prelude::*;
use serde_json::{Map, Value};

fn opts(encodings: Vec<Encoding>) -> Options {
    Options {
        encodings,
        top: usize::MAX,
    }
}

/// Random JSON values: numbers with float and integer spellings, strings with UUIDs and
/// non-ASCII text, nested arrays (sometimes uniform arrays of objects) and objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| Value::Number(i.into())),
        (-1e6f64..1e6).prop_map(|f| serde_json::from_str(&format!("{f:?}")).unwrap()),
        "[a-z é東🚀,\"\\\\]{0,12}".prop_map(Value::String),
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_ ]{1,6}", inner.clone()), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            // A uniform array of objects: same keys, scalar values.
            (1usize..4, 2usize..5, any::<u32>()).prop_map(|(cols, rows, seed)| {
                Value::Array(
                    (0..rows)
                        .map(|r| {
                            Value::Object(
                                (0..cols)
                                    .map(|c| {
                                        (format!("k{c}"), Value::from(seed as usize + r * 7 + c))
                                    })
                                    .collect(),
                            )
                        })
                        .collect(),
                )
            }),
        ]
    })
}

/// Number of `{` `}` `[` `]` `,` and `:`-free punctuation the compact writer puts between leaf
/// texts: two brackets per non-empty container and a comma between members.
fn punctuation(v: &Value) -> usize {
    match v {
        Value::Array(a) if !a.is_empty() => {
            2 + (a.len() - 1) + a.iter().map(punctuation).sum::<usize>()
        }
        Value::Object(o) if !o.is_empty() => {
            2 + (o.len() - 1) + o.values().map(punctuation).sum::<usize>()
        }
        _ => 0,
    }
}

proptest! {
    #[test]
    fn measure_never_panics_on_any_text(text in "\\PC{0,200}", expect_json in any::<bool>()) {
        let o = opts(vec![Encoding::Cl100kBase, Encoding::Chars4]);
        match measure::measure(&text, expect_json, &o) {
            Ok(r) => prop_assert_eq!(r.whole().map(|w| w.bytes), Some(if r.kind == Kind::Text || r.kind == Kind::Json { text.len() } else { text.trim_end_matches(['\n', '\r']).len() })),
            Err(e) => prop_assert!(expect_json, "only JSON files can fail: {e}"),
        }
    }

    #[test]
    fn measure_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let o = opts(vec![Encoding::O200kBase]);
        let r = measure::measure_bytes(&bytes, false, &o);
        prop_assert_eq!(r.is_ok(), std::str::from_utf8(&bytes).is_ok());
    }

    #[test]
    fn field_share_partitions_the_leaf_chars(v in json_value()) {
        let compact = serde_json::to_string(&v).unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let r = measure::measure(&pretty, true, &opts(vec![Encoding::Bytes])).unwrap();
        let f = r.field_share.unwrap();
        // Leaf texts and punctuation cover the compact text exactly.
        prop_assert_eq!(f.total_chars + punctuation(&v), compact.chars().count());
        prop_assert_eq!(f.rows.iter().map(|r| r.chars).sum::<usize>(), f.total_chars);
        prop_assert_eq!(f.rows.len(), f.paths);
        // Sorted by tokens, largest first.
        prop_assert!(f.rows.windows(2).all(|w| w[0].tokens.first() >= w[1].tokens.first()));
    }

    #[test]
    fn what_ifs_remove_exactly_what_they_say(v in json_value()) {
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let compact = serde_json::to_string(&v).unwrap();
        let r = measure::measure(&pretty, true, &opts(vec![Encoding::Bytes])).unwrap();
        for w in &r.what_ifs {
            let before = *w.tokens_before.first().unwrap();
            let after = *w.tokens_after.first().unwrap();
            prop_assert!(w.changed > 0, "{} applies but changed nothing", w.name);
            match w.name.as_str() {
                "compact" => prop_assert_eq!((before, after), (pretty.len(), compact.len())),
                // Each UUID loses 24 bytes (36 -> 12).
                "uuid_prefix" => prop_assert_eq!(before - after, 24 * w.changed),
                "floats" => {
                    prop_assert_eq!(before, compact.len());
                    prop_assert!(w.max_abs_error.is_some_and(|e| e.is_finite() && e >= 0.0));
                }
                "table" => prop_assert_eq!(before, compact.len()),
                other => prop_assert!(false, "unexpected what-if {other}"),
            }
        }
    }
}
