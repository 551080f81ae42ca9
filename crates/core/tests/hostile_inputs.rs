//! No panic on any input: arbitrary bytes and forged positions through the public API.
//! Cases per property come from the `PROPTEST_CASES` environment variable; inputs stay small
//! so 10,000 cases cost seconds.

use mcp_budget_core::paginate::{
    Document, PageInfo, Pager, Position, meta, parse_shown, reassemble_from_wire,
};
use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::{blob, compact, summary};
use proptest::prelude::*;
use serde_json::Value;

fn render_meta(index: usize, info: &PageInfo<'_>) -> String {
    let m = meta::build_meta(
        info,
        "3fa9c2e1b07d",
        index as u64 + 1,
        9_999,
        meta::HintTools::default(),
    );
    serde_json::to_string(&m).unwrap_or_default()
}

/// Any string of up to `max` chars (cheaper to generate than `any::<String>()`).
fn any_string(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter)
}

/// Follows every page of `doc`, asserting each one moves forward; returns the page count.
fn follow(doc: &Document, budget: usize) -> usize {
    let pager = Pager::new(Encoding::Cl100kBase, budget, 9);
    let limit = doc.render(9).len() + 2;
    let mut at = Position::start();
    let mut n = 0;
    loop {
        let page = pager
            .page(doc, &at, &mut |info| render_meta(n, info))
            .expect("positions from the pager are in range");
        n += 1;
        assert!(n <= limit, "paging does not end");
        match page.next {
            Some(next) => {
                assert_ne!(next, at, "a page made no progress");
                at = next;
            }
            None => return n,
        }
    }
}

/// Bytes that are often almost JSON: brackets, quotes, escapes, digits, NUL, newlines, UTF-8
/// fragments and lone-surrogate escapes.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{\"k\":".to_owned()),
        Just("}".to_owned()),
        Just(",".to_owned()),
        Just("\"\\ud800\"".to_owned()),
        Just("1e999999".to_owned()),
        Just("-0.0".to_owned()),
        Just("\0".to_owned()),
        Just("\r\n".to_owned()),
        Just("\n".to_owned()),
        Just("\u{2028}".to_owned()),
        Just("東京🚀".to_owned()),
        "[a-z ]{0,200}",
        any_string(64),
    ];
    prop::collection::vec(piece, 0..80).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn any_bytes_page_to_the_end(bytes in prop::collection::vec(any::<u8>(), 0..2000), budget in 256usize..2000) {
        let doc = Document::from_text(String::from_utf8_lossy(&bytes).into_owned());
        prop_assert!(follow(&doc, budget) >= 1);
    }

    #[test]
    fn almost_json_pages_to_the_end(text in hostile_text(), budget in 256usize..1200) {
        let doc = Document::from_text(text);
        prop_assert!(follow(&doc, budget) >= 1);
    }

    #[test]
    fn forged_positions_are_refused_or_paged(
        text in hostile_text(),
        kind in 0u8..3,
        steps in prop::collection::vec(prop_oneof![Just(u64::MAX), 0u64..50, any::<u64>()], 0..6),
    ) {
        let doc = Document::from_text(text);
        let hex: Vec<String> = steps.iter().map(|s| format!("{s:x}")).collect();
        let cursor = format!("{kind}.{}", hex.join("."));
        let pager = Pager::new(Encoding::Cl100kBase, 256, 9);
        if let Ok(at) = cursor.parse::<Position>() {
            // Refused (OutOfRange) or a page: never a panic.
            let _ = pager.page(&doc, &at, &mut |info| render_meta(1, info));
        }
    }

    #[test]
    fn forged_json_positions_are_refused_or_paged(
        steps in prop::collection::vec(prop_oneof![0usize..4, 0usize..300, Just(usize::MAX)], 0..6),
    ) {
        let long = "é東x".repeat(300);
        let doc = Document::Json(serde_json::json!(
            {"a": [1, {"b": long, "c": [[], {}, "s"]}], "d": long, "e": [long, 2.5]}
        ));
        let hex: Vec<String> = steps.iter().map(|s| format!("{s:x}")).collect();
        let cursor = format!("1.{}", hex.join("."));
        let pager = Pager::new(Encoding::Cl100kBase, 256, 9);
        if let Ok(at) = cursor.parse::<Position>() {
            let _ = pager.page(&doc, &at, &mut |info| render_meta(1, info));
        }
    }
}

/// Any JSON value up to a few levels deep, numbers spelled oddly.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just("1e999999"),
            Just("-0.0"),
            Just("5e-324"),
            Just("1.7976931348623157e308"),
            Just("123456789012345678901234567890"),
            Just("0.30000000000000004"),
        ]
        .prop_map(|n| serde_json::from_str::<Value>(n).unwrap_or(Value::Null)),
        any::<f64>().prop_map(Value::from),
        any_string(32).prop_map(Value::String),
        "[A-Za-z0-9+/=]{0,1500}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((any_string(8), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn image_headers_of_any_bytes_never_panic(
        magic in prop_oneof![
            Just(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
            Just(vec![0xFF, 0xD8, 0xFF]),
            Just(b"GIF89a".to_vec()),
            Just(b"RIFF\0\0\0\0WEBPVP8X".to_vec()),
            Just(b"RIFF\0\0\0\0WEBPVP8L".to_vec()),
            Just(Vec::new()),
        ],
        tail in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let bytes = [magic, tail].concat();
        let _ = blob::image_pixels(&bytes);
        prop_assert!(!blob::sniff_mime(&bytes).is_empty());
    }

    #[test]
    fn shown_locations_of_any_text_parse_or_are_refused(
        pages in prop::collection::vec(
            (json_value(), prop_oneof![
                any_string(40),
                "[$.\\[\\]'a-z0-9: ()]{0,60}",
                "\\$(\\.[a-z]|\\[[0-9]{1,2}(:[0-9]{1,2})?\\]|\\[chars [0-9]{1,3}\\]){0,5}( to end)?( \\(body is \\$(\\[[0-9]\\]|\\.[a-z]){0,3}\\))?",
            ]),
            1..5,
        ),
    ) {
        for (_, shown) in &pages {
            let _ = parse_shown(shown);
        }
        let wire: Vec<(Value, Option<&str>)> =
            pages.iter().map(|(v, s)| (v.clone(), Some(s.as_str()))).collect();
        let _ = reassemble_from_wire(&wire);
    }

    #[test]
    fn summaries_envelopes_and_blobs_of_any_value_never_panic(v in json_value(), max_tokens in 0usize..400) {
        let s = summary::summarize(&v, &Encoding::Cl100kBase, max_tokens);
        prop_assert!(s.is_object());
        let _ = blob::find_blobs(&v, 16);
        let mut w = v.clone();
        blob::replace_blobs(&mut w, 16, |_, bytes| Value::from(bytes.len()));
        let text = compact::to_string(&v, 9);
        prop_assert!(serde_json::from_str::<Value>(&text).is_ok(), "{}", text);
    }

    #[test]
    fn any_text_as_a_number_rounds_or_passes(
        number in prop_oneof![
            prop::collection::vec(prop::sample::select(&['0', '1', '9', 'e', 'E', '.', '+', '-'][..]), 0..40)
                .prop_map(String::from_iter),
            any_string(40),
        ],
        precision in 0u32..40,
    ) {
        let _ = compact::round_number(&number, precision);
        let _ = blob::decode(&number);
    }
}

/// A text position whose line number is forged to the largest value the cursor grammar allows
/// used to overflow `line + …` while building the page.
#[test]
fn forged_text_line_at_u64_max_is_refused() {
    let text: String = (0..400)
        .map(|i| format!("line {i} of a long text\n"))
        .collect();
    let doc = Document::Text(text);
    let pager = Pager::new(Encoding::Cl100kBase, 256, 9);
    for cursor in [
        "2.0.ffffffffffffffff.0",
        "2.0.1.ffffffffffffffff",
        "2.5.1.0",
        "2.10.7.0",
    ] {
        let at: Position = cursor.parse().expect("grammar allows it");
        let got = pager.page(&doc, &at, &mut |info| render_meta(1, info));
        assert!(
            got.is_err(),
            "{cursor} is not where a page of this text starts"
        );
    }
}
