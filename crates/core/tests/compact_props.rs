//! Properties and vectors of the compact rounding serializer (issue 2 §2).

use mcp_budget_core::compact::{self, RoundingFormatter};
use mcp_budget_core::tokens::Encoding;
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{Map, Number, Value};

fn number(text: &str) -> Number {
    serde_json::from_str(text).expect("generated number text is JSON")
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("valid JSON")
}

fn is_integer_spelling(s: &str) -> bool {
    !s.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

// ---------------------------------------------------------------- vectors (issue 2 §2)

#[test]
fn vector_247_13061935179246_at_9_is_247_130619() {
    assert_eq!(
        compact::to_string(&parse("247.13061935179246"), 9),
        "247.130619"
    );
}

#[test]
fn vector_679_0625_at_9_is_exact() {
    assert_eq!(compact::to_string(&parse("679.0625"), 9), "679.0625");
}

#[test]
fn vector_1_5e_7_at_9_is_never_zero() {
    let out = compact::to_string(&parse("1.5e-7"), 9);
    assert_eq!(out, "1.5e-7");
    assert_eq!(out.parse::<f64>().ok(), Some(1.5e-7));
}

#[test]
fn vector_0_30000000000000004_at_9_is_0_3() {
    assert_eq!(compact::to_string(&parse("0.30000000000000004"), 9), "0.3");
}

#[test]
fn vector_0_0005258389771750028_at_9_is_0_000525838977() {
    assert_eq!(
        compact::to_string(&parse("0.0005258389771750028"), 9),
        "0.000525838977"
    );
}

#[test]
fn vector_679_0625_at_6_is_679_062() {
    assert_eq!(compact::to_string(&parse("679.0625"), 6), "679.062");
}

#[test]
fn vector_big_integers_survive_byte_for_byte() {
    for s in ["12345678901234567890", "-98765432109876543210"] {
        for precision in [0, 1, 6, 9, 17] {
            assert_eq!(compact::to_string(&parse(s), precision), s);
        }
    }
    let text = r#"{"a":12345678901234567890,"b":[-98765432109876543210,1.25]}"#;
    assert_eq!(compact::to_string(&parse(text), 9), text);
}

#[test]
fn vector_3_0_stays_a_float() {
    assert_eq!(compact::to_string(&parse("3.0"), 9), "3.0");
    let out = compact::to_string(&parse("1e3"), 9);
    assert!(!is_integer_spelling(&out), "{out} must look like a float");
    assert_eq!(out.parse::<f64>().ok(), Some(1000.0));
}

#[test]
fn vector_1e400_passes_unrounded() {
    // serde_json stores the exponent as `e+400`; rounding leaves that spelling alone.
    assert_eq!(compact::to_string(&parse("1e400"), 9), "1e+400");
    assert_eq!(compact::to_string(&parse("-1e400"), 9), "-1e+400");
}

#[test]
fn vector_xy_object_compacts_to_15_cl100k_tokens() {
    let v = parse(r#"{ "x": 247.13061935179246, "y": 679.0625 }"#);
    let out = compact::to_string(&v, 9);
    assert_eq!(out, r#"{"x":247.130619,"y":679.0625}"#);
    assert_eq!(Encoding::Cl100kBase.count(&out), 15);
    assert_eq!(Encoding::Cl100kBase.count(&compact::to_string(&v, 0)), 18);
}

#[test]
fn compact_keeps_key_order_and_string_escapes() {
    let text = "{\"z\":1,\"a\":\"line\\r\\n\\u0000\\\"q\\\" é 🚀\",\"m\":[true,null,{}],\"b\":[]}";
    let v = parse(text);
    assert_eq!(compact::to_string(&v, 9), text);
    assert_eq!(
        compact::to_string(&v, 9),
        serde_json::to_string(&v).expect("JSON")
    );
}

#[test]
fn to_writer_and_byte_len_agree_with_to_string() {
    let v = parse(r#"{"x":[0.1234567891234,"é",{"k":1e-9}]}"#);
    let mut buf = Vec::new();
    compact::to_writer(&mut buf, &v, 4).expect("Vec never fails");
    assert_eq!(
        String::from_utf8(buf).expect("UTF-8"),
        compact::to_string(&v, 4)
    );
    assert_eq!(
        compact::byte_len(&v, 4),
        compact::to_string(&v, 4).len() as u64
    );
}

#[test]
fn rounding_formatter_serializes_any_type() {
    #[derive(Serialize)]
    struct Row {
        id: u64,
        score: f64,
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, RoundingFormatter::default());
    vec![Row {
        id: 7,
        score: 0.1 + 0.2,
    }]
    .serialize(&mut ser)
    .expect("Vec");
    assert_eq!(String::from_utf8_lossy(&out), r#"[{"id":7,"score":0.3}]"#);
}

// ---------------------------------------------------------------- generators

/// `len` random decimal digits (regex-free: generation would otherwise dominate the run time).
fn digits(len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(0u8..10, len)
        .prop_map(|d| d.into_iter().map(|x| char::from(b'0' + x)).collect())
}

fn sign() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "-"])
}

/// Integer spellings: small, i64/u64 range, and far beyond.
fn integer_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|u| u.to_string()),
        (sign(), 1u8..10, digits(19..41)).prop_map(|(s, first, d)| format!("{s}{first}{d}")),
        Just("0".to_owned()),
        Just("-0".to_owned()),
    ]
}

/// Float spellings: any finite f64 in several spellings, random decimal texts with and
/// without exponents (including out-of-range ones), and known edge cases.
fn float_text() -> impl Strategy<Value = String> {
    let finite = any::<u64>()
        .prop_map(f64::from_bits)
        .prop_filter("finite", |x| x.is_finite());
    prop_oneof![
        finite.clone().prop_map(|x| format!("{x:?}")),
        finite.prop_map(|x| format!("{x:e}")),
        (any::<f32>().prop_filter("finite", |x| x.is_finite())).prop_map(|x| format!("{x:e}")),
        (
            sign(),
            prop_oneof![
                Just("0".to_owned()),
                (1u8..10, digits(0..13)).prop_map(|(f, d)| format!("{f}{d}"))
            ],
            digits(1..26)
        )
            .prop_map(|(s, i, f)| format!("{s}{i}.{f}")),
        (
            sign(),
            0u8..10,
            digits(0..21),
            prop::sample::select(vec!["e", "E", "e+", "e-", "E-"]),
            0u32..420
        )
            .prop_map(|(s, i, f, e, x)| {
                let frac = if f.is_empty() {
                    String::new()
                } else {
                    format!(".{f}")
                };
                format!("{s}{i}{frac}{e}{x}")
            }),
        prop::sample::select(vec![
            "0.0",
            "-0.0",
            "1.5e-7",
            "1e400",
            "-1e400",
            "1e-400",
            "3.0",
            "1e3",
            "2.2250738585072014e-308",
            "4.9e-324",
            "1.7976931348623157e308",
            "0.30000000000000004",
            "9.999999999e22",
            "0.0005258389771750028",
        ])
        .prop_map(str::to_owned),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let tricky = vec![
        'a', 'z', '\r', '\n', '"', '\\', '\u{0}', '\u{1f}', '\u{7f}', '\u{2028}', 'é', '東', '🚀',
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        integer_text().prop_map(|t| Value::Number(number(&t))),
        float_text().prop_map(|t| Value::Number(number(&t))),
        prop::collection::vec(any::<char>(), 0..16)
            .prop_map(|c| Value::String(c.into_iter().collect())),
        prop::collection::vec(prop::sample::select(tricky), 0..12)
            .prop_map(|c| Value::String(c.into_iter().collect())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop::collection::vec(any::<char>(), 0..8)
            .prop_map(|c| c.into_iter().collect::<String>());
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Walks `original` and `rounded` together: same shape, same keys in the same order, same
/// strings, integers byte for byte, and every number rounded within `precision`'s bound.
fn assert_same_shape(
    original: &Value,
    rounded: &Value,
    precision: u32,
) -> Result<(), TestCaseError> {
    match (original, rounded) {
        (Value::Object(a), Value::Object(b)) => {
            prop_assert!(a.keys().eq(b.keys()), "keys differ");
            for (x, y) in a.values().zip(b.values()) {
                assert_same_shape(x, y, precision)?;
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            prop_assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert_same_shape(x, y, precision)?;
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.to_string(), b.to_string());
            if is_integer_spelling(&a) {
                prop_assert_eq!(&a, &b, "an integer changed");
            } else {
                prop_assert!(!is_integer_spelling(&b), "float {} became integer {}", a, b);
                assert_within_bound(&a, &b, precision)?;
            }
        }
        (a, b) => prop_assert_eq!(a, b),
    }
    Ok(())
}

/// `rounded` is within relative error 10^(1-N)/2 of `original` (plus the f64 conversion's
/// own error), or is `original` unchanged.
fn assert_within_bound(original: &str, rounded: &str, precision: u32) -> Result<(), TestCaseError> {
    if original == rounded {
        return Ok(());
    }
    let x: f64 = original
        .parse()
        .map_err(|_| TestCaseError::fail("unparsable"))?;
    let r: f64 = rounded
        .parse()
        .map_err(|_| TestCaseError::fail("unparsable"))?;
    prop_assert!(
        x.is_normal() || x == 0.0,
        "{} should have passed unrounded",
        original
    );
    if x == 0.0 {
        prop_assert_eq!(r, 0.0);
        return Ok(());
    }
    let bound = if precision == 0 {
        0.0
    } else {
        0.5 * 10f64.powi(1 - precision as i32)
    };
    let rel = ((r - x) / x).abs();
    prop_assert!(
        rel <= bound * (1.0 + 1e-12) + 4.5e-16,
        "{} -> {} at {}: relative error {} > {}",
        original,
        rounded,
        precision,
        rel,
        bound
    );
    Ok(())
}

/// The number rule of the module docs, written the slow, obvious way (the implementation
/// before its decimal fast path): parse to the nearest `f64`, keep it when its shortest text
/// has at most N digits, else round with `{:.N-1e}` and parse back; print shortest.
fn reference_round(stored: &str, precision: u32) -> String {
    if is_integer_spelling(stored) {
        return stored.to_owned();
    }
    let Ok(x) = stored.parse::<f64>() else {
        return stored.to_owned();
    };
    let mantissa_nonzero = stored
        .split(['e', 'E'])
        .next()
        .is_some_and(|m| m.bytes().any(|b| matches!(b, b'1'..=b'9')));
    if !x.is_finite() || x.is_subnormal() || (x == 0.0 && mantissa_nonzero) {
        return stored.to_owned();
    }
    let shortest_len = format!("{:e}", x.abs())
        .split('e')
        .next()
        .map_or(0, |m| m.replace('.', "").len());
    if x == 0.0 || precision >= 17 || shortest_len <= precision as usize {
        return compact::format_float(x);
    }
    match format!("{:.*e}", precision as usize - 1, x).parse::<f64>() {
        Ok(r) if r.is_finite() => compact::format_float(r),
        _ => stored.to_owned(),
    }
}

// ---------------------------------------------------------------- properties

proptest! {
    #[test]
    fn output_always_parses_as_json(v in json_value(), precision in 0u32..=20) {
        let out = compact::to_string(&v, precision);
        let back: Result<Value, _> = serde_json::from_str(&out);
        prop_assert!(back.is_ok(), "not JSON: {}", out);
        prop_assert!(!out.contains('\n') && !out.starts_with(' '));
    }

    #[test]
    fn precision_zero_is_byte_equal_to_serde_json(v in json_value()) {
        let out = compact::to_string(&v, 0);
        prop_assert_eq!(&out, &serde_json::to_string(&v).expect("Value serializes"));
        prop_assert_eq!(&parse(&out), &v);
    }

    #[test]
    fn rounding_keeps_shape_integers_and_error_bound(v in json_value(), precision in 0u32..=20) {
        let out = compact::to_string(&v, precision);
        assert_same_shape(&v, &parse(&out), precision)?;
    }

    #[test]
    fn rounding_never_changes_integers(t in integer_text(), precision in 0u32..=20) {
        let v = Value::Number(number(&t));
        prop_assert_eq!(compact::to_string(&v, precision), t);
    }

    #[test]
    fn rounded_float_is_within_relative_error(t in float_text(), precision in 1u32..=20) {
        let stored = number(&t).to_string();
        let out = compact::round_number(&stored, precision);
        prop_assert!(serde_json::from_str::<Number>(&out).is_ok(), "not a JSON number: {}", out);
        prop_assert!(!is_integer_spelling(&out), "float {} became integer {}", stored, out);
        assert_within_bound(&stored, &out, precision)?;
    }

    #[test]
    fn rounding_matches_format_parse_back_shortest(
        x in any::<u64>().prop_map(f64::from_bits).prop_filter("normal", |x| x.is_normal()),
        precision in 1u32..=20,
    ) {
        // The reference rule of issue 2: round with `{:.*e}`, parse back, print shortest.
        let shortest_len = format!("{:e}", x.abs()).split('e').next().map_or(0, |m| m.replace('.', "").len());
        let reference = if shortest_len <= precision as usize {
            Some(x)
        } else {
            format!("{:.*e}", precision as usize - 1, x).parse::<f64>().ok().filter(|r| r.is_finite())
        };
        let source = format!("{x:e}");
        let stored = number(&source).to_string();
        let expected = reference.map_or(stored.clone(), compact::format_float);
        prop_assert_eq!(compact::round_number(&stored, precision).into_owned(), expected);
    }

    #[test]
    fn rounding_matches_reference_rule_on_any_spelling(
        source in prop_oneof![
            any::<u64>()
                .prop_map(f64::from_bits)
                .prop_filter("finite", |x| x.is_finite())
                .prop_flat_map(|x| (0usize..30).prop_map(move |k| format!("{:.*e}", k, x))),
            (sign(), 0usize..4, 1u8..10, digits(0..30), 1usize..32, 0i32..40)
                .prop_map(|(s, zeros, first, d, point, e)| {
                    let all = format!("{first}{d}");
                    let point = point.min(all.len());
                    let (int, frac) = all.split_at(point);
                    let (int, frac) = if zeros > 0 {
                        ("0".to_owned(), format!("{}{all}", "0".repeat(zeros - 1)))
                    } else {
                        (int.to_owned(), frac.to_owned())
                    };
                    let frac = if frac.is_empty() { frac } else { format!(".{frac}") };
                    format!("{s}{int}{frac}e{}", e - 20)
                }),
            float_text(),
        ],
        precision in 1u32..=17,
    ) {
        let stored = number(&source).to_string();
        prop_assert_eq!(
            compact::round_number(&stored, precision).into_owned(),
            reference_round(&stored, precision)
        );
    }

    #[test]
    fn rounding_is_idempotent(v in json_value(), precision in 0u32..=20) {
        let once = compact::to_string(&v, precision);
        let twice = compact::to_string(&parse(&once), precision);
        prop_assert_eq!(once, twice);
    }
}
