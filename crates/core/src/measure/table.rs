//! The header-plus-rows table encoding (TOON-like) of uniform arrays of objects.
//!
//! Only a what-if: mcp-budget never emits it. The output is the compact JSON of the value in
//! which every *uniform array* is written as a table instead of a JSON array.
//!
//! **Uniform array**: a JSON array of at least 2 elements, each a non-empty object, all with the
//! same keys in the same order, and every member value a scalar (string, number, `true`,
//! `false`, `null`). Arrays that are not uniform stay JSON arrays; uniform arrays nested inside
//! them (or inside objects) are still encoded.
//!
//! **Table** of N rows with keys k1…kM:
//! ```text
//! [N]{k1,…,kM}:⏎row1⏎row2⏎…⏎rowN⏎
//! ```
//! (⏎ = `\n`). A row is the M cells of one element, in key order, joined by `,`. The table ends
//! with the newline after its Nth row; the JSON around it goes on right after.
//!
//! **Cells**: numbers keep their spelling; `true`, `false`, `null` as in JSON; a string is
//! written bare when it is *safe* and JSON-quoted otherwise. Safe = non-empty, no `,` `"` `\`
//! and no control character, no leading or trailing whitespace, not `true`/`false`/`null`, and
//! not starting with a digit or `-` (so it cannot read as a number). Header keys follow the same
//! rule and additionally must not contain `{` `}` `[` `]` `:`.
//!
//! Example: `{"e":[{"id":1,"name":"a b"},{"id":2,"name":"7up"}]}` →
//! `{"e":[2]{id,name}:⏎1,a b⏎2,"7up"⏎}`.

use serde_json::Value;

/// The table encoding of `value` and the number of arrays written as tables.
pub(crate) fn encode(value: &Value) -> (String, usize) {
    let mut out = String::new();
    let mut n = 0;
    write(value, &mut out, &mut n);
    (out, n)
}

/// Whether `a` is a uniform array (module docs).
pub(crate) fn is_uniform(a: &[Value]) -> bool {
    if a.len() < 2 {
        return false;
    }
    let Some(Value::Object(first)) = a.first() else {
        return false;
    };
    if first.is_empty() {
        return false;
    }
    a.iter().all(|e| match e {
        Value::Object(o) => {
            o.len() == first.len()
                && o.keys().zip(first.keys()).all(|(x, y)| x == y)
                && o.values().all(is_scalar)
        }
        _ => false,
    })
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn write(v: &Value, out: &mut String, n: &mut usize) {
    match v {
        Value::Array(a) if is_uniform(a) => {
            *n += 1;
            write_table(a, out);
        }
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(e, out, n);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, e)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(k, out);
                out.push(':');
                write(e, out, n);
            }
            out.push('}');
        }
        scalar => push_scalar(scalar, out),
    }
}

fn write_table(a: &[Value], out: &mut String) {
    out.push('[');
    out.push_str(&a.len().to_string());
    out.push_str("]{");
    if let Some(Value::Object(first)) = a.first() {
        for (i, k) in first.keys().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if is_safe(k) && !k.contains(['{', '}', '[', ']', ':']) {
                out.push_str(k);
            } else {
                push_json_string(k, out);
            }
        }
    }
    out.push_str("}:\n");
    for e in a {
        if let Value::Object(o) = e {
            for (i, cell) in o.values().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match cell {
                    Value::String(s) if is_safe(s) => out.push_str(s),
                    other => push_scalar(other, out),
                }
            }
        }
        out.push('\n');
    }
}

/// Safe to write bare (module docs).
fn is_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let last = s.chars().next_back().unwrap_or(first);
    !(first.is_whitespace()
        || last.is_whitespace()
        || first.is_ascii_digit()
        || first == '-'
        || matches!(s, "true" | "false" | "null")
        || s.chars()
            .any(|c| matches!(c, ',' | '"' | '\\') || c.is_control()))
}

fn push_scalar(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => push_json_string(s, out),
        // Numbers keep their source spelling (arbitrary_precision).
        Value::Number(x) => out.push_str(&x.to_string()),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
        // Not reached for scalars; keep total anyway.
        other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

fn push_json_string(s: &str, out: &mut String) {
    // serde_json's escaping, so the non-table parts equal serde_json's compact output.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(json: &str) -> (String, usize) {
        encode(&serde_json::from_str(json).unwrap())
    }

    #[test]
    fn doc_example_holds() {
        assert_eq!(
            enc(r#"{"e":[{"id":1,"name":"a b"},{"id":2,"name":"7up"}]}"#),
            ("{\"e\":[2]{id,name}:\n1,a b\n2,\"7up\"\n}".to_owned(), 1)
        );
    }

    #[test]
    fn non_uniform_arrays_stay_json_and_keep_spelling() {
        let src = r#"[{"a":1.50},{"b":2}, [1,2], {"a":{"x":1}}]"#;
        let (t, n) = enc(src);
        assert_eq!(n, 0);
        assert_eq!(t, r#"[{"a":1.50},{"b":2},[1,2],{"a":{"x":1}}]"#);
        // Same keys in another order: not uniform.
        assert_eq!(enc(r#"[{"a":1,"b":2},{"b":2,"a":1}]"#).1, 0);
        // A single element: not a table.
        assert_eq!(enc(r#"[{"a":1}]"#).1, 0);
    }

    #[test]
    fn cells_are_quoted_when_unsafe() {
        let (t, n) = enc(
            r#"[{"k":"","x y":true},{"k":"a,b","x y":null},{"k":" a","x y":"-1"},{"k":"true","x y":"q\""},{"k":"ok:1","x y":"é"}]"#,
        );
        assert_eq!(n, 1);
        assert_eq!(
            t,
            "[5]{k,x y}:\n\"\",true\n\"a,b\",null\n\" a\",\"-1\"\n\"true\",\"q\\\"\"\nok:1,é\n"
        );
        // A key with a brace is quoted in the header.
        assert_eq!(enc(r#"[{"a}":1},{"a}":2}]"#).0, "[2]{\"a}\"}:\n1\n2\n");
    }

    #[test]
    fn nested_uniform_arrays_are_tables_too() {
        let (t, n) = enc(r#"{"g":[{"rows":[{"a":1},{"a":2}]},{"rows":[]}]}"#);
        assert_eq!(n, 1);
        assert_eq!(t, "{\"g\":[{\"rows\":[2]{a}:\n1\n2\n},{\"rows\":[]}]}");
    }
}
