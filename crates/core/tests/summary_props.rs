//! Property tests of the structural summary and the elision envelope (issue 2 §4).

use mcp_budget_core::summary::{self, DEFAULT_SUMMARY_TOKENS};
use mcp_budget_core::{compact, tokens::Encoding};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn encoding() -> impl Strategy<Value = Encoding> {
    prop::sample::select(vec![
        Encoding::Cl100kBase,
        Encoding::O200kBase,
        Encoding::Bytes,
        Encoding::Chars4,
    ])
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|u| format!("-{u}{u}")),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| format!("{x:?}")),
        Just("1e400".to_owned()),
    ]
    .prop_map(|t| serde_json::from_str::<Number>(&t).map_or(Value::Null, Value::Number))
}

fn text(chars: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), chars).prop_map(|c| c.into_iter().collect())
}

/// Random JSON: deep nesting, long and unicode strings, and arrays of records whose keys and
/// categorical values repeat (as real tool output does). Regex-free: generation, not the
/// summary, would otherwise dominate the run time.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text(0..40).prop_map(Value::String),
        prop::sample::select(vec![
            "file",
            "directory",
            "error",
            "warn",
            "info",
            "3d",
            "2d"
        ])
        .prop_map(|s| Value::String(s.to_owned())),
        (
            prop::sample::select(vec!["a b ", "é東🚀", "\r\n", "\"\\", "word ", "\u{0}"]),
            0usize..200
        )
            .prop_map(|(s, n)| Value::String(s.repeat(n))),
    ];
    leaf.prop_recursive(6, 96, 12, |inner| {
        let key = prop_oneof![
            prop::sample::select(vec![
                "id", "name", "type", "level", "children", "x", "y", "layer", "tags", "meta"
            ])
            .prop_map(str::to_owned),
            text(0..12),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..10)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #[test]
    fn summary_fits_its_budget(v in json_value(), enc in encoding(), budget in 2usize..=400) {
        let s = summary::summarize(&v, &enc, budget);
        prop_assert!(s.is_object());
        // Callers compact with their precision: exact (0) or rounding (6 or more digits).
        for precision in [0, 6, 9, 17] {
            let text = compact::to_string(&s, precision);
            let n = enc.count(&text);
            prop_assert!(n <= budget, "{} tokens > {} at {}: {}", n, budget, precision, text);
        }
    }

    #[test]
    fn summary_is_deterministic(v in json_value(), enc in encoding()) {
        let s = summary::summarize(&v, &enc, DEFAULT_SUMMARY_TOKENS);
        prop_assert_eq!(&summary::summarize(&v.clone(), &enc, DEFAULT_SUMMARY_TOKENS), &s);
    }

    #[test]
    fn envelope_fits_its_budget(v in json_value(), enc in encoding(), budget in 60usize..=500) {
        let mut env = summary::elision_envelope(
            &v, 123_456, 40_000, &enc, "3fa9c2e1b07d", Some("3fa9c2e1b07d.1"),
            "Page 1: read_more {\"cursor\":\"3fa9c2e1b07d.1\"}.",
        );
        let fits = summary::fit_envelope(&mut env, &v, &enc, budget);
        if fits {
            let v = serde_json::to_value(&env).expect("envelope serializes");
            for text in [serde_json::to_string(&env).expect("serializes"), compact::to_string(&v, 9)] {
                prop_assert!(enc.count(&text) <= budget, "{} > {}: {}", enc.count(&text), budget, text);
            }
        } else {
            prop_assert_eq!(&env.preview, &Value::Object(Map::new()));
        }
        prop_assert!(env.elided);
    }
}
