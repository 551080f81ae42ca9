//! The head of a JSON text ([`mcp_budget_core::head`]) is the document cut along its open
//! chain, and the whole text agrees with it exactly when it is strict JSON with no key
//! repeated on that chain. Cases come from `PROPTEST_CASES` (CI runs 10,000).

use mcp_budget_core::head::halves::Halves;
use mcp_budget_core::head::{head, rest_agrees};
use proptest::prelude::*;
use serde_json::{Value, json};

/// `doc` cut along `last`: at each level the children up to `last[i]`, the last of them cut
/// further, down to the deepest level, whose kept children are whole.
fn cut_along(doc: &Value, last: &[usize]) -> Value {
    let Some((&i, rest)) = last.split_first() else {
        return doc.clone();
    };
    let keep = |k: usize, c: &Value| {
        if k == i {
            cut_along(c, rest)
        } else {
            c.clone()
        }
    };
    match doc {
        Value::Array(a) => Value::Array(
            a.iter()
                .take(i + 1)
                .enumerate()
                .map(|(k, c)| keep(k, c))
                .collect(),
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .take(i + 1)
                .enumerate()
                .map(|(k, (key, c))| (key.clone(), keep(k, c)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn doc() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        "[a-z,\\[\\]{}\"\\\\:\n\t é€]{0,10}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z,\\]\"]{1,4}", inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .prop_filter("a container root", |v| v.is_array() || v.is_object())
}

/// One edit of a JSON text: a character put in, one taken out, or a line written twice (which
/// repeats a key, or a member of an array).
#[derive(Debug, Clone)]
enum Edit {
    Insert(prop::sample::Index, char),
    Remove(prop::sample::Index),
    Twice(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (
            any::<prop::sample::Index>(),
            prop::sample::select(vec![
                ',', '"', ']', '}', '[', '{', ':', '\n', '\\', 'x', '1', ' '
            ]),
        )
            .prop_map(|(at, c)| Edit::Insert(at, c)),
        any::<prop::sample::Index>().prop_map(Edit::Remove),
        any::<prop::sample::Index>().prop_map(Edit::Twice),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let mut out = text.to_string();
    match edit {
        Edit::Insert(at, c) => out.insert(bounds[at.index(bounds.len())], *c),
        Edit::Remove(at) => {
            out.remove(bounds[at.index(bounds.len())]);
        }
        Edit::Twice(at) => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let k = at.index(lines.len());
            out = lines[..=k].concat() + lines[k] + &lines[k + 1..].concat();
        }
    }
    out
}

proptest! {
    /// Cut in two anywhere `Halves` finds a cut, a text (pretty JSON, perhaps edited into
    /// something else) gets the answer the whole read gives: kept or refused alike.
    #[test]
    fn the_halves_answer_as_the_whole_read_does(
        v in doc(),
        edit in prop::option::of(edit()),
        min in 0usize..300,
        nears in prop::collection::vec(any::<prop::sample::Index>(), 6),
    ) {
        let mut text = serde_json::to_string_pretty(&v).unwrap();
        if let Some(edit) = &edit {
            text = apply(&text, edit);
        }
        let Some(h) = head(&text, text.len() * min / 1000) else {
            return Ok(());
        };
        let whole = rest_agrees(&text, &h.last);
        for (k, near) in nears.iter().enumerate() {
            // Half the cuts past the head's cut (where the answer is the whole read's), half
            // anywhere (where the chain may open after the cut: never a wrong yes).
            let from = if k % 2 == 0 { h.read } else { 0 };
            let Some(halves) = Halves::new(&text, from + near.index(text.len() - from)) else {
                continue;
            };
            let halves_agree = halves.agree_in_turn(&h.last);
            if from > 0 {
                prop_assert_eq!(halves_agree, whole, "cut at {}", halves.at());
            } else {
                prop_assert!(whole || !halves_agree, "cut at {}", halves.at());
            }
        }
    }

    #[test]
    fn the_head_is_the_document_cut_along_its_open_chain(
        v in doc(),
        pretty in any::<bool>(),
        min in 0usize..700,
    ) {
        let text = if pretty {
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            serde_json::to_string(&v).unwrap()
        };
        // Up to 70% of the text: some heads end at the first comma, others are short.
        if let Some(h) = head(&text, text.len() * min / 1000) {
            prop_assert_eq!(&h.value, &cut_along(&v, &h.last));
            prop_assert_eq!(text.as_bytes()[h.read], b',');
            // A value written by serde_json has no repeated keys.
            prop_assert!(rest_agrees(&text, &h.last));
            // Cut anywhere after the head, the text is no longer one JSON value.
            let short = &text[..text.len() - 1];
            prop_assert!(!rest_agrees(short, &h.last));
        }
    }
}

#[test]
fn a_key_repeated_on_the_chain_or_a_broken_tail_disagrees() {
    let text = r#"{"a":[1,2,3],"b":{"x":1,"y":2,"x":3}}"#;
    let h = head(text, 8).unwrap();
    assert_eq!(h.value, json!({"a":[1,2]}));
    assert!(rest_agrees(text, &h.last));
    let text = r#"{"a":[1,2,3],"b":{"x":1},"a":3}"#;
    let h = head(text, 8).unwrap();
    assert!(!rest_agrees(text, &h.last));
    // The same key spelled with an escape is the same key.
    let text = r#"{"a":[1,2,3],"b":{"x":1},"\u0061":3}"#;
    let h = head(text, 8).unwrap();
    assert!(!rest_agrees(text, &h.last));
    // Strings that hold commas, brackets and escaped quotes do not cut.
    let text = r#"[{"k":"a,]\"},{"},"x","y"]"#;
    let h = head(text, 0).unwrap();
    assert_eq!(h.value, json!([{"k":"a,]\"},{"}]));
}
