//! UUIDs → a fixed 12-hex prefix, by the rule of [`crate::uuid`] (what the proxy's
//! `uuid_prefix = true` does to results).

use serde_json::{Map, Value};

use crate::uuid::{UUID_LEN, is_uuid_at};

/// `text` with every UUID replaced by its 12-hex prefix, and how many were replaced; `None`
/// when there is none (the common case costs no allocation).
pub(crate) fn shorten_in(text: &str) -> Option<(String, usize)> {
    let b = text.as_bytes();
    if b.len() < UUID_LEN {
        return None;
    }
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already handled
    let mut n = 0;
    let mut i = 0;
    while i + UUID_LEN <= b.len() {
        if is_uuid_at(b, i) {
            // Every byte of a match is ASCII, so `i` and `i + 36` are char boundaries.
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..i]);
            let w = &text[i..i + UUID_LEN];
            o.extend(
                w[..8]
                    .chars()
                    .chain(w[9..13].chars())
                    .map(|c| c.to_ascii_lowercase()),
            );
            n += 1;
            i += UUID_LEN;
            copied = i;
        } else {
            i += 1;
        }
    }
    out.map(|mut o| {
        o.push_str(&text[copied..]);
        (o, n)
    })
}

/// `value` with the UUIDs in every string and every object key shortened, and how many were.
pub(crate) fn shorten_value(value: &Value) -> (Value, usize) {
    let mut n = 0;
    let v = walk(value, &mut n);
    (v, n)
}

fn shorten_string(s: &str, n: &mut usize) -> String {
    match shorten_in(s) {
        Some((t, k)) => {
            *n += k;
            t
        }
        None => s.to_owned(),
    }
}

fn walk(value: &Value, n: &mut usize) -> Value {
    match value {
        Value::String(s) => Value::String(shorten_string(s, n)),
        Value::Array(a) => Value::Array(a.iter().map(|v| walk(v, n)).collect()),
        Value::Object(o) => {
            let mut m = Map::with_capacity(o.len());
            for (k, v) in o {
                let k = shorten_string(k, n);
                let v = walk(v, n);
                m.insert(k, v);
            }
            Value::Object(m)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_uuids_with_lowercase_12_hex_prefix() {
        let (t, n) = shorten_in("id 3F2B8C1E-9A4D-4E7B-8C2F-1D5E6A7B8C9D, urn:uuid:00000000-0000-0000-0000-000000000001.")
            .unwrap();
        assert_eq!(t, "id 3f2b8c1e9a4d, urn:uuid:000000000000.");
        assert_eq!(n, 2);
    }

    #[test]
    fn leaves_embedded_hex_runs_and_near_misses_alone() {
        assert_eq!(shorten_in("x3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d"), None);
        assert_eq!(shorten_in("3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9dz"), None);
        assert_eq!(shorten_in("3f2b8c1e-9a4d-4e7b-8c2f_1d5e6a7b8c9d"), None);
        assert_eq!(shorten_in("short"), None);
        // Multi-byte text around a UUID keeps its characters.
        let (t, _) = shorten_in("é3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d東").unwrap();
        assert_eq!(t, "é3f2b8c1e9a4d東");
    }

    #[test]
    fn shortens_keys_and_values() {
        let v: Value = serde_json::from_str(
            r#"{"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d":["3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9e",1]}"#,
        )
        .unwrap();
        let (v, n) = shorten_value(&v);
        assert_eq!(n, 2);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"3f2b8c1e9a4d":["3f2b8c1e9a4d",1]}"#
        );
    }
}
