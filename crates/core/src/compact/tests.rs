//! Tests of the compact writer ([`super`]): rounding to significant digits, spellings kept.

use super::*;

fn num(s: &str, precision: u32) -> String {
    let v: Value = serde_json::from_str(s).expect("test vector is JSON");
    to_string(&v, precision)
}

#[test]
fn issue_vectors_at_9() {
    assert_eq!(num("247.13061935179246", 9), "247.130619");
    assert_eq!(num("679.0625", 9), "679.0625");
    assert_eq!(num("1.5e-7", 9), "1.5e-7");
    assert_eq!(num("0.30000000000000004", 9), "0.3");
    assert_eq!(num("0.0005258389771750028", 9), "0.000525838977");
}

#[test]
fn issue_vector_at_6() {
    assert_eq!(num("679.0625", 6), "679.062");
}

#[test]
fn integers_pass_byte_for_byte() {
    for s in [
        "12345678901234567890",
        "-98765432109876543210",
        "0",
        "-0",
        "42",
    ] {
        assert_eq!(num(s, 9), s);
        assert_eq!(num(s, 1), s);
    }
}

#[test]
fn integral_floats_stay_floats() {
    assert_eq!(num("3.0", 9), "3.0");
    assert_eq!(num("-3.0", 9), "-3.0");
    assert_eq!(num("1e3", 9), "1000.0");
    assert_eq!(num("1E5", 9), "1e5");
    assert_eq!(num("0.0", 9), "0.0");
    assert_eq!(num("-0.0", 9), "-0.0");
    assert_eq!(num("0e10", 9), "0.0");
}

#[test]
fn numbers_outside_f64_pass_unrounded() {
    // serde_json's parser stores exponents as `e+N` / `e-N`: that is the source spelling.
    for (s, kept) in [
        ("1e400", "1e+400"),
        ("-1e400", "-1e+400"),
        ("1e-400", "1e-400"),
        ("-2.5E-999", "-2.5e-999"),
        ("4.9e-324", "4.9e-324"),
    ] {
        assert_eq!(num(s, 9), kept);
    }
    assert_eq!(num("1.7976931348623157e308", 9), "1.79769313e308");
    // Rounded to 1 digit it would be 2e308: past f64::MAX, so it passes unrounded.
    assert_eq!(num("1.7976931348623157e308", 1), "1.7976931348623157e+308");
}

#[test]
fn precision_zero_keeps_spelling() {
    let text = r#"{"a":1.50000,"b":2.5e-3,"c":0.30000000000000004,"d":[1e400,-0.0]}"#;
    let v: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(to_string(&v, 0), serde_json::to_string(&v).expect("JSON"));
    assert_eq!(
        to_string(&v, 0),
        r#"{"a":1.50000,"b":2.5e-3,"c":0.30000000000000004,"d":[1e+400,-0.0]}"#
    );
}

#[test]
fn shortest_spellings() {
    assert_eq!(format_float(1.5e-7), "1.5e-7");
    assert_eq!(format_float(1e21), "1e21");
    assert_eq!(format_float(1.25e100), "1.25e100");
    assert_eq!(format_float(-2.5e-300), "-2.5e-300");
    assert_eq!(format_float(12345.0), "12345.0");
    assert_eq!(format_float(0.5), "0.5");
    assert_eq!(format_float(100.0), "100.0");
}

#[test]
fn rust_floats_are_rounded_too() {
    #[derive(Serialize)]
    struct S {
        a: f64,
        b: f32,
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, RoundingFormatter::new(9));
    S {
        a: 247.130_619_351_792_46,
        b: 0.1,
    }
    .serialize(&mut ser)
    .expect("Vec writer");
    assert_eq!(String::from_utf8_lossy(&out), r#"{"a":247.130619,"b":0.1}"#);
}

/// The exact path alone (parse, `{:.N-1e}`), as `classify` was before `round_spelling`.
fn exact_path(number: &str, precision: u32) -> Option<(bool, Vec<u8>, i32)> {
    let x = number.parse::<f64>().ok()?;
    if !x.is_finite() || x.is_subnormal() || (x == 0.0 && mantissa_has_nonzero_digit(number)) {
        return None;
    }
    let d = round_digits(x, precision)?;
    Some((x.is_sign_negative(), d.as_bytes().to_vec(), d.exp))
}

fn check_spelling(number: &str, precision: u32) {
    if let Some((negative, d)) = round_spelling(number, precision) {
        assert_eq!(
            Some((negative, d.as_bytes().to_vec(), d.exp)),
            exact_path(number, precision),
            "{number} at {precision}"
        );
    }
}

#[test]
fn spelling_path_vectors_match_exact_path() {
    for s in [
        "247.13061935179246",
        "0.30000000000000004",
        "0.0005258389771750028",
        "679.0625",
        "1.5e-7",
        "-0.0",
        "0e10",
        "9.999999999e22",
        "99999999999999999999.9",
        "0.000999999999999999",
        "1.7976931348623157e+308",
        "2.2250738585072014e-308",
        "1e-300",
        "9.99999999999999999e-301",
        "123.456E+7",
    ] {
        for precision in 1..=17 {
            check_spelling(s, precision);
        }
    }
    let (_, d) = round_spelling("99999999999999999999.9", 9).expect("decided");
    assert_eq!((d.as_bytes(), d.exp), (&b"1"[..], 20));
    assert!(
        round_spelling("0.25", 1).is_none(),
        "near half-way: exact path"
    );
    assert!(round_spelling("0.2500000000000001", 1).is_none());
    assert!(round_spelling("0.2499999999999999", 1).is_none());
    assert!(round_spelling("0.249999999999998", 1).is_some());
    assert!(round_spelling("1.23456789500000012", 9).is_none());
    assert!(
        round_spelling("1e-400", 9).is_none(),
        "out of range: exact path"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(4096))]
    #[test]
    fn spelling_path_matches_exact_path_on_f64_texts(
        bits in proptest::prelude::any::<u64>(),
        extra in 0usize..30,
        precision in 1u32..=17,
    ) {
        let x = f64::from_bits(bits);
        if x.is_finite() {
            check_spelling(&format!("{x:e}"), precision);
            check_spelling(&format!("{x:?}"), precision);
            check_spelling(&format!("{:.*e}", extra, x), precision);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(4096))]
    #[test]
    fn spelling_path_matches_exact_path_near_half_way(
        precision in 1u32..=17,
        lead in 1u64..10,
        body in proptest::prelude::any::<u64>(),
        delta in -40i64..=40,
        extra in proptest::prelude::any::<u32>(),
        exp in -40i32..=40,
    ) {
        // N digits, then a 17 - N digit tail within 40 of half-way, then more digits.
        let m = 17u32.saturating_sub(precision);
        let keep = format!("{lead}{body:019}");
        let half = 5 * 10i64.pow(m.saturating_sub(1));
        let tail = if m == 0 { String::new() } else { format!("{:0w$}", (half + delta).max(0), w = m as usize) };
        let text = format!("{}.{}{tail}{extra}e{exp}", &keep[..1], &keep[1..precision as usize]);
        check_spelling(&text, precision);
    }
}

#[test]
fn counting_writer_counts_bytes() {
    let v: Value = serde_json::from_str(r#"{"x":247.13061935179246,"y":"é"}"#).expect("JSON");
    assert_eq!(byte_len(&v, 9), to_string(&v, 9).len() as u64);
    assert_eq!(
        byte_len(&v, 0),
        serde_json::to_string(&v).expect("JSON").len() as u64
    );
}
