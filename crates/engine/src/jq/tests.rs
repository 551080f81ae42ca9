use super::*;
use serde_json::json;

fn local(code: &str, input: &Value) -> Result<Vec<Value>, JqError> {
    run_local(code, input, DEFAULT_DEADLINE)
}

#[test]
fn outputs_in_order_and_numbers_keep_spelling() {
    let v: Value = serde_json::from_str(r#"{"a":[1, 2.50, 12345678901234567890123]}"#).unwrap();
    let out = local(".a[]", &v).unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(
        serde_json::to_string(&out[2]).unwrap(),
        "12345678901234567890123"
    );
    assert_eq!(
        local("del(.. | .x?)", &json!({"x":1,"y":{"x":2,"z":3}})).unwrap(),
        vec![json!({"y":{"z":3}})]
    );
    assert_eq!(
        local("[.[] | select(test(\"b\"))]", &json!(["ab", "cd"])).unwrap(),
        vec![json!(["ab"])]
    );
}

#[test]
fn syntax_and_runtime_errors_are_reported() {
    let e = local(".a[", &json!({})).unwrap_err();
    assert!(matches!(e, JqError::Syntax(_)), "{e}");
    let e = local("nosuchfilter", &json!({})).unwrap_err();
    assert!(e.to_string().contains("nosuchfilter"), "{e}");
    let e = local(".a + 1", &json!({"a":"x"})).unwrap_err();
    assert!(matches!(e, JqError::Runtime(_)), "{e}");
    assert!(check(".[] | .name").is_ok());
}

/// Everything that reaches outside the given value is gone or refused, in process too (the
/// `transform` rule): no exit, no environment, no file, no further input, no panic.
#[test]
fn the_function_set_reaches_nothing_outside_the_value() {
    // The environment is only read here; PATH is set in any test run.
    let path = std::env::var("PATH").unwrap_or_default();
    for code in [
        "halt",
        "\"bye\" | halt_error(7)",
        "halt_error",
        "env",
        "env.PATH",
        "$ENV",
        "$ENV.PATH",
        "$__loc__",
        "$__prog_args",
        "input",
        "inputs",
        "[inputs]",
        "import \"x\" as $y; $y",
        "import \"x\" as y; y::f",
        "include \"x\"; .",
        "include \"/etc/passwd\"; .",
        "get_search_list",
        "input_line_number",
    ] {
        match local(code, &json!({"k": 1})) {
            Err(JqError::Syntax(m) | JqError::Runtime(m)) => {
                assert!(!path.is_empty() && !m.contains(&path), "{code}: {m}");
            }
            other => panic!("{code}: {other:?}"),
        }
    }
    // Kept as no-ops, so filters written for jq still run.
    assert_eq!(
        local("debug | .k", &json!({"k": 1})).unwrap(),
        vec![json!(1)]
    );
    assert_eq!(
        local("stderr | .k", &json!({"k": 1})).unwrap(),
        vec![json!(1)]
    );
    assert_eq!(
        local("input_filename", &json!(1)).unwrap(),
        vec![json!(null)]
    );
}

#[test]
fn runaway_query_times_out_in_process() {
    let started = Instant::now();
    static ABANDONED_HERE: AtomicUsize = AtomicUsize::new(0);
    let e = run_local_text(
        "def f: f; f",
        "{}".to_owned(),
        Duration::from_millis(300),
        &ABANDONED_HERE,
    )
    .unwrap_err();
    assert!(matches!(e, JqError::TimedOut(_)), "{e}");
    assert!(e.to_string().contains("too long"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The abandoned thread does not hold up the next run.
    assert_eq!(local(".a", &json!({"a": 1})).unwrap(), vec![json!(1)]);
    assert_eq!(ABANDONED_HERE.load(Ordering::Relaxed), 1);
}

#[test]
fn runaway_in_process_queries_cannot_pile_up() {
    static ABANDONED_HERE: AtomicUsize = AtomicUsize::new(0);
    // A run that takes well over 1 ms, and then ends.
    let slow = "[range(2000000)] | length";
    let fast = Duration::from_millis(1);
    for _ in 0..MAX_ABANDONED {
        let e = run_local_text(slow, "null".to_owned(), fast, &ABANDONED_HERE).unwrap_err();
        assert!(matches!(e, JqError::TimedOut(_)), "{e}");
    }
    let e = run_local_text(".", "null".to_owned(), fast, &ABANDONED_HERE).unwrap_err();
    assert!(
        matches!(e, JqError::Overloaded(n) if n == MAX_ABANDONED),
        "{e}"
    );
    // The abandoned runs end, and are no longer counted.
    let started = Instant::now();
    while ABANDONED_HERE.load(Ordering::Relaxed) > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "abandoned runs never ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = run_local_text(".", "1".to_owned(), DEFAULT_DEADLINE, &ABANDONED_HERE).unwrap();
    assert_eq!(out, vec![json!(1)]);
}

#[test]
fn durations_read_as_seconds() {
    assert!(
        JqError::TimedOut(Duration::from_secs(10))
            .to_string()
            .contains("10 s")
    );
    assert!(
        JqError::TimedOut(Duration::from_millis(1500))
            .to_string()
            .contains("1.5 s")
    );
}

#[test]
fn python_literals_come_out_as_numbers_not_strings() {
    let input = mcp_budget_core::dialect::parse(br#"{"a":[NaN,Infinity,-Infinity]}"#)
        .unwrap()
        .value;
    let out = local(".a", &input).unwrap();
    assert_eq!(out, vec![input["a"].clone()]);
    assert_eq!(
        serde_json::to_string(&out[0]).unwrap(),
        "[NaN,Infinity,-Infinity]"
    );
    let out = local(".a[0]", &input).unwrap();
    assert_eq!(serde_json::to_string(&out[0]).unwrap(), "NaN");
}
