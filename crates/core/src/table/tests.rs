use serde_json::{Value, json};

use super::*;
use crate::tokens::Encoding;

fn always(v: &Value) -> Encoded {
    encode(v, When::Always)
}

fn round_trip(v: &Value) {
    let e = always(v);
    let back = decode(&e.text).unwrap_or_else(|err| panic!("{err} in {:?}", e.text));
    assert_eq!(
        serde_json::to_string(&back).ok(),
        serde_json::to_string(v).ok(),
        "{:?}",
        e.text
    );
}

#[test]
fn doc_example_holds() {
    let v = json!({"dir":[{"name":"a","type":"file"},{"name":"b","type":"directory","children":
        [{"name":"7up","type":"file"}]}]});
    let e = always(&v);
    assert_eq!(
        e.text,
        "{\"dir\":[2]{name,type,children}:\na,file\nb,directory,[1]{name,type}:\n \"7up\",file\n}"
    );
    assert_eq!(e.tables, 2);
    round_trip(&v);
}

#[test]
fn cells_are_quoted_when_they_would_read_otherwise() {
    let v: Value = serde_json::from_str(
        r#"[{"k":"","x y":true},{"k":"a,b","x y":null},{"k":" a","x y":"-1"},
            {"k":"true","x y":"q\""},{"k":"ok:1","x y":"é"},{"k":"NaN","x y":"[1]{a}:"},
            {"k":"line\nbreak","x y":"{"},{"k":"Infinity","x y":"tab\t"}]"#,
    )
    .unwrap();
    let e = always(&v);
    assert_eq!(
        e.text,
        "[8]{k,x y}:\n\"\",true\n\"a,b\",null\n\" a\",\"-1\"\n\"true\",\"q\\\"\"\nok:1,é\n\
         \"NaN\",\"[1]{a}:\"\n\"line\\nbreak\",\"{\"\n\"Infinity\",\"tab\\t\"\n"
    );
    round_trip(&v);
    // Keys with header separators are JSON strings.
    let v = json!([{"a}":1,"":2,"b,c":3},{"a}":4}]);
    assert_eq!(always(&v).text, "[2]{\"a}\",\"\",\"b,c\"}:\n1,2,3\n4\n");
    round_trip(&v);
}

#[test]
fn missing_keys_mixed_types_and_spellings_come_back() {
    let v: Result<Value, _> = serde_json::from_str(
        r#"[{"a":1.50,"b":[1,"x"],"c":{"d":null}},{"b":-0,"c":"s"},{"a":1e5},{},
            {"c":[{"z":1}],"a":[]}]"#,
    );
    // `{"c":..,"a":..}` has its keys out of header order: not a table (its `c` is).
    let v = v.unwrap();
    let e = always(&v);
    assert_eq!(e.tables, 1);
    assert!(e.text.starts_with(r#"[{"a":1.50,"#), "{}", e.text);
    round_trip(&v);
    let v: Value = serde_json::from_str(
        r#"[{"a":1.50,"b":[1,"x"],"c":{"d":null}},{"b":-0,"c":"s"},{"a":1e5},{"a":2,"b":3,"c":[{"z":1}]}]"#,
    )
    .unwrap();
    let e = always(&v);
    assert_eq!(
        e.text,
        "[4]{a,b,c}:\n1.50,[1,\"x\"],{\"d\":null}\n,-0,s\n1e+5\n2,3,[1]{z}:\n 1\n"
    );
    round_trip(&v);
}

#[test]
fn keys_new_in_later_rows_join_the_header_in_order() {
    let v = json!([{"a":1,"c":3},{"a":1,"b":2,"c":3},{"b":2,"d":4}]);
    let e = always(&v);
    assert!(e.text.starts_with("[3]{a,b,c,d}:\n"), "{}", e.text);
    round_trip(&v);
}

#[test]
fn sparse_arrays_and_arrays_of_scalars_stay_json() {
    let v = json!([{"a":1},{"b":2},{"c":3}]);
    assert_eq!(always(&v).tables, 0);
    assert_eq!(always(&v).text, r#"[{"a":1},{"b":2},{"c":3}]"#);
    let v = json!({"x":[1,2],"y":[{"a":1},2]});
    assert_eq!(always(&v).text, r#"{"x":[1,2],"y":[{"a":1},2]}"#);
}

#[test]
fn auto_keeps_json_where_tables_do_not_save() {
    let enc = Encoding::Cl100kBase;
    let when = When::Saves {
        encoding: &enc,
        percent: AUTO_MIN_SAVING_PERCENT,
    };
    // One short row: no saving.
    let v = json!({"r":[{"a":1}]});
    assert_eq!(encode(&v, when).tables, 0);
    // Many rows: a table.
    let rows: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "name": format!("n{i}"), "kind": "file"}))
        .collect();
    let v = json!({"r": rows});
    let e = encode(&v, when);
    assert_eq!(e.tables, 1);
    let plain = enc.count(&crate::compact::to_string(&v, 0));
    assert!(enc.count(&e.text) * 10 <= plain * 9);
    assert_eq!(decode(&e.text), Ok(v));
}

#[test]
fn decode_reads_plain_json_and_python_literals() {
    assert_eq!(decode(r#"{"a":[1,2]}"#), Ok(json!({"a":[1,2]})));
    let v = decode("[2]{x}:\nNaN\n-Infinity\n").unwrap();
    assert_eq!(
        v[0]["x"],
        Value::Number(crate::dialect::Literal::NaN.number())
    );
    assert_eq!(
        v[1]["x"],
        Value::Number(crate::dialect::Literal::NegInfinity.number())
    );
}

#[test]
fn decode_rejects_malformed_tables() {
    for bad in [
        "[2]{a}:\n1\n",          // a row short
        "[1]{a}:\n1,2\n",        // more cells than keys
        "[1]{a}:\n1",            // no newline ending the row
        "[1]{a}:\n01\n",         // not a number
        "[1]{}:\n\n",            // no key
        "[1]{a}:\n[1]{b}:\n",    // a sub-table without its row
        "[1]{a}:\n[1]{b}:\n2\n", // a sub-row not indented
        "{\"a\":[1]{b}:\n1\n",   // object not closed
    ] {
        assert!(decode(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn deep_values_are_written_plain_and_read_back() {
    let mut v = json!([{"a":1},{"a":2}]);
    for _ in 0..(MAX_DEPTH + 5) {
        v = json!([v]);
    }
    let e = always(&v);
    assert_eq!(e.tables, 0);
    assert_eq!(decode(&e.text).ok().as_ref(), Some(&v));
}
