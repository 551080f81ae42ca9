//! [`Encoding::additive_at`]: wherever it says a text's count splits, it does. Checked against
//! the library's own count of the whole and of both parts, for both OpenAI encodings, on
//! random texts built from the characters that decide where the pre-tokenizer cuts (newlines,
//! CR, spaces, tabs, NBSP, `/`, quotes, punctuation, digits, letters, contractions, non-Latin
//! letters), on hand-picked corners, and on the real fixtures (compact JSON too); and the per-thread memo of
//! piece counts ([`Encoding::count`]) against bpe-openai's count.

use mcp_budget_core::tokens::Encoding;
use proptest::prelude::*;

const ENCODINGS: [Encoding; 2] = [Encoding::Cl100kBase, Encoding::O200kBase];

/// The library's own count (no memo).
fn library(enc: &Encoding, text: &str) -> usize {
    match enc {
        Encoding::Cl100kBase => bpe_openai::cl100k_base().count(text),
        _ => bpe_openai::o200k_base().count(text),
    }
}

/// Every position `additive_at` accepts really splits the count.
fn check_all_cuts(text: &str) -> Result<(), TestCaseError> {
    for enc in &ENCODINGS {
        let whole = library(enc, text);
        prop_assert_eq!(enc.count(text), whole, "memo count of {:?}", text);
        for at in 0..=text.len() {
            if !text.is_char_boundary(at) || !enc.additive_at(text, at) {
                continue;
            }
            let (a, b) = text.split_at(at);
            prop_assert_eq!(
                library(enc, a) + library(enc, b),
                whole,
                "{} splits {:?} at {}",
                enc.name(),
                text,
                at
            );
        }
    }
    Ok(())
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("\n".to_owned()),
        2 => Just("\r\n".to_owned()),
        3 => Just(" ".to_owned()),
        1 => Just("  ".to_owned()),
        1 => Just("\t".to_owned()),
        1 => Just("\u{a0}".to_owned()),
        1 => Just("\u{3000}".to_owned()),
        2 => Just("/".to_owned()),
        // JSON's quotes: a `"` after a letter or digit is a cut.
        3 => Just("\"".to_owned()),
        2 => prop::sample::select(vec![".", ",", ":", "{", "}", "\"", "-", "'", "#", "*"])
            .prop_map(str::to_owned),
        1 => prop::sample::select(vec!["'s", "'ll", "'T", "'re"]).prop_map(str::to_owned),
        2 => "[0-9]{1,5}",
        4 => "[a-zA-Z]{1,6}",
        1 => prop::sample::select(vec!["東京", "é", "Ω", "кот", "🚀"]).prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn additive_cuts_split_the_count(parts in prop::collection::vec(piece(), 0..40)) {
        check_all_cuts(&parts.concat())?;
    }
}

#[test]
fn corners_and_fixtures() {
    for text in [
        "a\nb",
        "a\n b",
        "a\n\nb",
        "a.\n/b",
        "a.\n\n/b",
        "a \n  b",
        "x:\n\t\tif y\n",
        "a\r\nb\r\n c",
        "end\n",
        "a\n   \nb",
        "a\n\u{a0}b",
        "commit 1\nAuthor: A <a@b>\n\n    msg\n\ncommit 2\n",
        include_str!("data/directory_tree.pretty.json"),
        r#"{"name":"file_1.txt","type":"file","size":1024,"children":[{"a":"b2"}],"x":"it's"}"#,
        r#"["aé","a'","a's","A"," a","x1","Ω","1.5e3","","東京"]"#,
    ] {
        check_all_cuts(text).unwrap();
    }
    // A compact directory tree: a `"` after a letter or digit ends most keys and values.
    let tree: serde_json::Value =
        serde_json::from_str(include_str!("data/directory_tree.pretty.json")).unwrap();
    let compact = tree.to_string();
    let head = &compact[..compact.floor_char_boundary(3000)];
    check_all_cuts(head).unwrap();
}

#[test]
fn the_rule_says_yes_where_it_should() {
    let e = Encoding::Cl100kBase;
    assert!(e.additive_at("a\nb", 2));
    assert!(e.additive_at("a\n  b", 2));
    assert!(!e.additive_at("a\n\nb", 2), "a newline run is one piece");
    assert!(
        !e.additive_at("a.\n/b", 3),
        "o200k takes `/` after punctuation+newline"
    );
    assert!(!e.additive_at("a\n  ", 2), "a trailing whitespace run");
    assert!(!e.additive_at("ab", 1), "not a line start");
    assert!(e.additive_at(r#"{"a":"b"}"#, 3), "a quote after a letter");
    assert!(e.additive_at(r#"[7,"x9"]"#, 6), "a quote after a digit");
    assert!(!e.additive_at(r#"{"a":""}"#, 6), "a quote after a quote");
    assert!(
        !e.additive_at(r#"["é"]"#, 4),
        "a quote after a non-ASCII letter"
    );
    assert!(!Encoding::Chars4.additive_at("a\nb", 2));
}
