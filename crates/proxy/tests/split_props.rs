//! Properties of `relay::split` (a value read on two threads, cut inside a long string): a
//! value it reads is exactly the one `serde_json` reads in one pass, with the same end, on any
//! input (valid or mutated: bad escapes, lone surrogates, control characters, stray quotes);
//! the bytes are given back unchanged; and a value whose middle sits in a long escaped string
//! is read that way (the split is taken, not always refused).

use mcp_budget_proxy::relay::split::{Limits, value_at_with};
use proptest::prelude::*;
use serde_json::Value;

/// Cases per property: `PROPTEST_CASES` (CI: 10,000), else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

/// Small limits, so that short texts are cut and short strings count as long.
const LIMITS: Limits = Limits {
    min_bytes: 64,
    reach: 32,
    long_string: 16,
};

/// One piece of a string as written in JSON: a plain character or an escape.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z ]{1,6}",
        1 => "[é日😀]",
        2 => Just(r"\n".to_owned()),
        2 => Just(r#"\""#.to_owned()),
        1 => Just(r"\\".to_owned()),
        1 => Just(r"\/".to_owned()),
        1 => Just(r"\t".to_owned()),
        1 => Just(r"\u00e9".to_owned()),
        1 => Just(r"\ud83d\ude00".to_owned()),
        1 => Just(r"\u0001".to_owned()),
    ]
}

/// A string literal (quotes included) of `pieces` pieces.
fn string_of(pieces: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), pieces).prop_map(|p| format!("\"{}\"", p.concat()))
}

/// A small value: number, literal, short string, short array.
fn small() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i32>().prop_map(|n| n.to_string()),
        Just("1.5e3".to_owned()),
        Just("true".to_owned()),
        Just("null".to_owned()),
        string_of(0..4),
        prop::collection::vec(string_of(0..3), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
    ]
}

/// A result-like object: members with long and small values, keys short or long.
fn object() -> impl Strategy<Value = String> {
    let member = (
        prop_oneof![4 => string_of(1..3), 1 => string_of(8..20)],
        prop_oneof![2 => string_of(20..200), 2 => small()],
    );
    (prop::collection::vec(member, 1..5), any::<bool>()).prop_map(|(members, pretty)| {
        let sep = if pretty { ",\n  " } else { "," };
        let colon = if pretty { ": " } else { ":" };
        let inner: Vec<String> = members
            .into_iter()
            .map(|(k, v)| format!("{k}{colon}{v}"))
            .collect();
        format!("{{{}}}", inner.join(sep))
    })
}

/// A value, maybe inside a JSON-RPC envelope: the bytes and where the value starts.
fn input() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let value = prop_oneof![
        object(),
        prop::collection::vec(prop_oneof![object(), string_of(20..200), small()], 1..4)
            .prop_map(|v| format!("[{}]", v.join(", "))),
    ];
    (value, any::<bool>()).prop_map(|(v, wrap)| {
        if wrap {
            let head = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":";
            (format!("{head}{v}}}").into_bytes(), head.len())
        } else {
            (v.into_bytes(), 0)
        }
    })
}

/// Up to three edits: a byte replaced by one that matters to JSON, or removed.
fn mutated() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let edit = (
        any::<prop::sample::Index>(),
        prop::sample::select(vec![
            Some(b'"'),
            Some(b'\\'),
            Some(b'u'),
            Some(b'n'),
            Some(0x01),
            Some(b'}'),
            Some(b' '),
            None,
        ]),
    );
    (input(), prop::collection::vec(edit, 0..4)).prop_map(|((mut bytes, start), edits)| {
        for (at, byte) in edits {
            if bytes.len() <= start + 1 {
                break;
            }
            let i = start + at.index(bytes.len() - start);
            match byte {
                Some(b) => bytes[i] = b,
                None => {
                    bytes.remove(i);
                }
            }
        }
        (bytes, start)
    })
}

/// What one `serde_json` pass reads at `start`: the value and where it ends.
fn one_pass(bytes: &[u8], start: usize) -> Option<(Value, usize)> {
    let mut values = serde_json::Deserializer::from_slice(&bytes[start..]).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((value, start + values.byte_offset()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn a_value_read_in_two_is_the_value_read_in_one((bytes, start) in mutated()) {
        let mut work = bytes.clone();
        let got = value_at_with(&mut work, start, LIMITS);
        prop_assert_eq!(&work, &bytes, "the bytes are given back unchanged");
        if let Some((value, span)) = got {
            let one = one_pass(&bytes, start);
            prop_assert!(one.is_some(), "read in two, refused in one: {}", String::from_utf8_lossy(&bytes));
            let (whole, end) = one.unwrap_or_default();
            prop_assert_eq!(value, whole);
            prop_assert_eq!(span, start..end);
        }
    }

    #[test]
    fn a_long_escaped_string_at_the_middle_is_cut(
        before in small(),
        text in prop::collection::vec(("[a-z ]{0,12}", prop::sample::select(vec![r"\n", r#"\""#, r"\\", r"\t"])), 30..120),
        after in small(),
        pretty in any::<bool>(),
    ) {
        let text: String = text.into_iter().map(|(a, e)| format!("{a}{e}")).collect();
        let ws = if pretty { "\n  " } else { "" };
        let line = format!("{{{ws}\"a\": {before},{ws}\"text\": \"{text}\",{ws}\"b\": {after}}}");
        let mut work = line.clone().into_bytes();
        let got = value_at_with(&mut work, 0, LIMITS);
        prop_assert_eq!(&work, line.as_bytes());
        let (value, span) = got.ok_or_else(|| TestCaseError::fail(format!("not cut: {line}")))?;
        let whole: Value = serde_json::from_str(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(value, whole);
        prop_assert_eq!(span, 0..line.len());
    }
}

#[test]
fn a_twelve_megabyte_directory_tree_line_is_cut() {
    // The shape of server-filesystem's answer: the text, and its twin in structuredContent.
    let entry =
        "  {\n    \"name\": \"src\",\n    \"type\": \"directory\",\n    \"children\": []\n  },\n";
    let text = format!(
        "[\n{}  {{\"name\": \"end\"}}\n]",
        entry.repeat(12_000_000 / entry.len())
    );
    let line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": 4,
        "result": {"content": [{"type": "text", "text": text}], "structuredContent": {"content": text}}
    }))
    .unwrap_or_default();
    let start = line
        .windows(9)
        .position(|w| w == b"\"result\":")
        .map_or(0, |i| i + 9);
    let mut work = line.clone();
    let (value, span) = mcp_budget_proxy::relay::split::value_at(&mut work, start).expect("cut");
    assert_eq!(work, line);
    let (whole, end) = one_pass(&line, start).unwrap_or_default();
    assert_eq!(span, start..end);
    assert!(value == whole);
}
