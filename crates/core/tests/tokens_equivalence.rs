//! Our token counts (bpe-openai behind [`Encoding`]) equal a second, independent implementation
//! (tiktoken-rs, the Rust port of OpenAI's tiktoken) over a varied corpus: real MCP payloads,
//! prose with CJK and emoji, base64, whitespace runs, CRLF, code, and random strings.
//!
//! tiktoken-rs is compared with `encode_ordinary`: special tokens like `<|endoftext|>` are plain
//! text for us, as they are in a tool result.
//!
//! Random strings stay short (at most ~200 chars): tiktoken-rs is quadratic on long whitespace
//! runs, and the property must stay fast at `PROPTEST_CASES=10000`.

use mcp_budget_core::tokens::Encoding;
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

/// Real JSON recorded from MCP servers (copies of `shared/fixtures`, see `tests/data/`).
const FIXTURES: &[(&str, &str)] = &[
    (
        "directory_tree.pretty.json",
        include_str!("data/directory_tree.pretty.json"),
    ),
    (
        "tiny_image.rpc.json",
        include_str!("data/tiny_image.rpc.json"),
    ),
    (
        "annotated_message.rpc.json",
        include_str!("data/annotated_message.rpc.json"),
    ),
    ("fs_tools.rpc.json", include_str!("data/fs_tools.rpc.json")),
];

/// Hand-picked texts that exercise the pre-tokenizer's corners.
const SAMPLES: &[&str] = &[
    "",
    " ",
    "\n",
    "\r\n",
    "Hello, world!",
    "Résumé — naïve café 東京 🚀",
    // CJK prose, emoji with ZWJ sequences and skin tones, flags, combining marks.
    "東京は日本の首都です。今日はいい天気ですね！ 我们明天去北京。한국어 문장도 있습니다.",
    "👨‍👩‍👧‍👦 family, 👍🏽 thumbs, 🇯🇵🇫🇷 flags, e\u{301} combining, \u{200b}zero width",
    "Ünïcödé ÀÉÎÕÜ ß ẞ ﬁ ligature Ωmega ΣΊΣΥΦΟΣ кириллица עברית العربية हिन्दी",
    // Contractions are a separate regex branch, case-insensitive.
    "I'm sure you'll see they've DONE IT'S job, we'd've THEY'RE 'S 'T",
    // Whitespace runs, tabs, CRLF, trailing spaces, form feed, U+2028/2029, NBSP.
    "a    b\t\t\tc\r\n\r\n   d   \n\n\n    e    ",
    "line one\r\nline two\r\n\r\n\tindented\r\n   \r\n",
    "\u{c}form feed\u{2028}line sep\u{2029}para sep\u{a0}nbsp\u{3000}ideographic space",
    "                                                                                ",
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
    // Numbers: digits group by three; floats, exponents, negatives, long integers.
    "12345678901234567890 -98765432109876543210 247.13061935179246 1.5e-7 0.30000000000000004",
    "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d deadbeefcafebabe 0x7fffffff",
    // Base64 and a data: URI.
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAGXRFWHRTb2Z0d2FyZQBBZG9iZSBJbWFnZVJlYWR5ccllPAAAA==",
    "data:image/png;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7",
    // Code.
    "fn main() {\n    let v: Vec<u8> = (0..10).map(|i| i * 2).collect();\n    println!(\"{v:?}\");\n}\n",
    "def f(x):\r\n\treturn {'a': [1, 2, 3], \"b\": None}  # comment\r\n",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id DESC LIMIT 10;",
    // Special-token spellings are ordinary text.
    "<|endoftext|> <|fim_prefix|> <|im_start|>user",
    // Punctuation runs and paths.
    "!!!???...,,,;;;::: ---=== ***&&& /usr/local/bin/../lib//x.so C:\\Windows\\System32",
    "{\"a\":{\"b\":{\"c\":[[[[[]]]]]}},\"d\":\"\\u00e9\\n\\t\\\"\"}",
];

fn reference(encoding: &Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        other => panic!("no reference implementation for {other}"),
    }
}

const BPE_ENCODINGS: [Encoding; 2] = [Encoding::Cl100kBase, Encoding::O200kBase];

/// Asserts that `count`, `count_till_limit` and `fits` all agree with tiktoken-rs on `text`.
fn assert_equivalent(encoding: &Encoding, label: &str, text: &str) {
    let expected = reference(encoding).encode_ordinary(text).len();
    let ours = encoding.count(text);
    assert_eq!(
        ours, expected,
        "{encoding} count of {label}: ours {ours}, tiktoken-rs {expected}"
    );
    assert_limits_agree(encoding, label, text, expected);
}

/// `count_till_limit` returns the count exactly at the limit and `None` one below it; `fits`
/// says the same. Also checks a limit far below (early exit) and far above.
fn assert_limits_agree(encoding: &Encoding, label: &str, text: &str, count: usize) {
    assert_eq!(
        encoding.count_till_limit(text, count),
        Some(count),
        "{encoding} count_till_limit at the count, {label}"
    );
    assert_eq!(
        encoding.count_till_limit(text, count + 1000),
        Some(count),
        "{encoding} count_till_limit above the count, {label}"
    );
    assert!(encoding.fits(text, count), "{encoding} fits, {label}");
    if count > 0 {
        assert_eq!(
            encoding.count_till_limit(text, count - 1),
            None,
            "{encoding} count_till_limit one below, {label}"
        );
        assert!(
            !encoding.fits(text, count - 1),
            "{encoding} fits one below, {label}"
        );
        assert_eq!(
            encoding.count_till_limit(text, count / 2),
            None,
            "{encoding} count_till_limit at half, {label}"
        );
    }
}

#[test]
fn counts_equal_tiktoken_rs_on_real_mcp_json() {
    for encoding in &BPE_ENCODINGS {
        for (name, text) in FIXTURES {
            assert_equivalent(encoding, name, text);
            // A compact re-serialization of the same value: the shape the proxy emits.
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
                let compact = serde_json::to_string(&value).expect("a Value serializes");
                assert_equivalent(encoding, &format!("compact {name}"), &compact);
            }
        }
    }
}

#[test]
fn counts_equal_tiktoken_rs_on_samples() {
    for encoding in &BPE_ENCODINGS {
        for (i, text) in SAMPLES.iter().enumerate() {
            assert_equivalent(encoding, &format!("sample {i}"), text);
        }
    }
}

#[test]
fn counts_equal_tiktoken_rs_on_all_samples_joined() {
    // Joining changes the pieces at the seams: CRLF next to spaces, digits next to digits.
    for sep in ["", "\n", "\r\n", " ", "  \t"] {
        let joined = SAMPLES.join(sep);
        for encoding in &BPE_ENCODINGS {
            assert_equivalent(encoding, &format!("samples joined by {sep:?}"), &joined);
        }
    }
}

#[test]
fn counts_equal_tiktoken_rs_on_moderate_whitespace_runs() {
    // Long enough to span many pre-tokenizer pieces, short enough for tiktoken-rs.
    let texts = [
        " ".repeat(2000),
        "\t".repeat(500) + "x",
        "\r\n".repeat(700),
        format!("a{}b", " ".repeat(1500)),
        " \n".repeat(600),
        "x".repeat(5000),
        "9".repeat(1001),
        "🚀".repeat(300),
        "東".repeat(999),
    ];
    for encoding in &BPE_ENCODINGS {
        for text in &texts {
            let head: String = text.chars().take(2).collect();
            let label = format!("{} bytes starting {head:?}", text.len());
            assert_equivalent(encoding, &label, text);
        }
    }
}

/// Characters drawn from the classes that the pre-tokenizer regexes distinguish.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::char::range('a', 'z'),
        2 => prop::char::range('A', 'Z'),
        2 => prop::char::range('0', '9'),
        3 => prop::sample::select(vec![' ', ' ', '\n', '\r', '\t', '\u{b}', '\u{c}', '\u{a0}', '\u{2028}', '\u{3000}']),
        2 => prop::sample::select(vec!['\'', '"', '{', '}', '[', ']', ':', ',', '.', '-', '_', '/', '\\', '+', '=', '!', '?', '<', '|', '>']),
        1 => prop::char::range('\u{3040}', '\u{30ff}'),
        1 => prop::char::range('\u{4e00}', '\u{4fff}'),
        1 => prop::char::range('\u{1f300}', '\u{1f64f}'),
        1 => prop::sample::select(vec!['\u{301}', '\u{200d}', '\u{fe0f}', 'é', 'ß', 'Ω', 'ж', 'ע', 'ع', 'ह']),
        1 => any::<char>(),
    ]
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..200).prop_map(|cs| cs.into_iter().collect())
}

/// Words and separators, so contractions, number groups and `'s` suffixes show up often.
fn wordy_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z]{1,8}",
        "'(s|t|re|ve|m|ll|d|S|T|RE|VE|M|LL|D)",
        "[0-9]{1,7}",
        "[ \t\r\n]{1,6}",
        "[.,;:!?{}\\[\\]\"/-]{1,3}",
        "[\u{4e00}-\u{4e20}]{1,4}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|ps| {
        let mut s: String = ps.concat();
        // Keep the ~200 char bound of the module docs.
        while s.chars().count() > 200 {
            s.pop();
        }
        s
    })
}

/// Small JSON values (objects, arrays, strings, numbers with long mantissas), the shape the
/// proxy emits once compacted.
fn small_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        tricky_string().prop_map(|s| Value::String(s.chars().take(24).collect())),
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_]{1,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn counts_equal_tiktoken_rs_on_random_compact_json(value in small_json()) {
        let text = serde_json::to_string(&value).expect("a Value serializes");
        for encoding in &BPE_ENCODINGS {
            let expected = reference(encoding).encode_ordinary(&text).len();
            prop_assert_eq!(encoding.count(&text), expected, "{} {}", encoding, text);
            assert_limits_agree(encoding, "compact json", &text, expected);
        }
    }

    #[test]
    fn counts_equal_tiktoken_rs_on_random_strings(text in tricky_string()) {
        for encoding in &BPE_ENCODINGS {
            let expected = reference(encoding).encode_ordinary(&text).len();
            prop_assert_eq!(encoding.count(&text), expected, "{} {:?}", encoding, text);
            assert_limits_agree(encoding, "random string", &text, expected);
        }
    }

    #[test]
    fn counts_equal_tiktoken_rs_on_random_word_soup(text in wordy_string()) {
        for encoding in &BPE_ENCODINGS {
            let expected = reference(encoding).encode_ordinary(&text).len();
            prop_assert_eq!(encoding.count(&text), expected, "{} {:?}", encoding, text);
            assert_limits_agree(encoding, "word soup", &text, expected);
        }
    }

    #[test]
    fn count_till_limit_agrees_with_count_at_any_limit(text in tricky_string(), limit in 0usize..120) {
        for encoding in [Encoding::Cl100kBase, Encoding::O200kBase, Encoding::Chars4, Encoding::Bytes] {
            let count = encoding.count(&text);
            let expected = (count <= limit).then_some(count);
            prop_assert_eq!(encoding.count_till_limit(&text, limit), expected, "{} {:?}", encoding, text);
            prop_assert_eq!(encoding.fits(&text, limit), count <= limit, "{} {:?}", encoding, text);
        }
    }
}
