//! Checking the arguments of an injected tool against the `inputSchema` the proxy lists for it
//! ([`mcp_budget_core::shape::model::definitions`]), so that the schema shown to the model and the check
//! cannot drift apart.
//!
//! The schemas use a small subset of JSON Schema, and this module reads exactly that subset:
//! `type: "object"` at the top with `properties`, `required` and optional
//! `additionalProperties: false`; each property has `type` `"string"` or `"integer"` and, for
//! integers, an optional `minimum`. An integer is a JSON number with no fractional part
//! (`700` and `700.0`, as JSON Schema's `integer`); a string holding digits is not one.
//! Arguments the schema does not name are ignored unless it says
//! `additionalProperties: false` (JSON Schema's default: extra members are allowed).
//! The first fault found is reported, in this order: arguments that are not an object, each
//! listed property in schema order (wrong type or below the minimum), missing required
//! arguments, then unknown arguments.

use serde_json::Value;

/// Why the arguments do not match the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgFault {
    /// The argument's name, or `arguments` when the arguments are not a JSON object.
    pub(crate) argument: String,
    /// What is wrong, in a sentence fragment (`must be an integer ≥ 1; got the string "abc"`).
    pub(crate) reason: String,
}

/// The longest JSON text of a wrong value quoted in a reason, in chars.
const SHOWN_CHARS: usize = 40;

/// `value` as a short phrase: its JSON type and text (cut after [`SHOWN_CHARS`] chars).
fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".into(),
        Value::Bool(_) => "the boolean",
        Value::Number(_) => "the number",
        Value::String(_) => "the string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let text = value.to_string();
    let shown: String = text.chars().take(SHOWN_CHARS).collect();
    let more = if shown.len() < text.len() { "…" } else { "" };
    format!("{kind} {shown}{more}")
}

/// `value` as an integer per JSON Schema (a number with no fractional part), when it is one.
fn as_integer(value: &Value) -> Option<f64> {
    let n = value.as_number()?;
    if n.is_i64() || n.is_u64() {
        return n.as_f64();
    }
    n.as_f64().filter(|f| f.is_finite() && f.fract() == 0.0)
}

/// Checks one property's value against its schema.
fn check_value(name: &str, schema: &Value, value: &Value) -> Result<(), ArgFault> {
    let fault = |reason: String| ArgFault {
        argument: name.to_owned(),
        reason,
    };
    match schema.get("type").and_then(Value::as_str) {
        Some("string") if !value.is_string() => {
            Err(fault(format!("must be a string; got {}", describe(value))))
        }
        Some("integer") => {
            let minimum = schema.get("minimum").and_then(Value::as_f64);
            let expected = match minimum {
                Some(m) => format!("an integer ≥ {m}"),
                None => "an integer".to_owned(),
            };
            match as_integer(value) {
                None => Err(fault(format!(
                    "must be {expected}; got {}",
                    describe(value)
                ))),
                Some(n) if minimum.is_some_and(|m| n < m) => Err(fault(format!(
                    "must be {expected}; got {}",
                    describe(value)
                ))),
                Some(_) => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Checks `args` (a `tools/call`'s `arguments`; `None` when absent, which counts as `{}`)
/// against `schema`, an injected tool's `inputSchema`.
///
/// # Errors
/// The first [`ArgFault`], in the order given in the module docs.
pub(crate) fn check(schema: &Value, args: Option<&Value>) -> Result<(), ArgFault> {
    let empty = serde_json::Map::new();
    let args = match args {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(ArgFault {
                argument: "arguments".into(),
                reason: format!("must be a JSON object; got {}", describe(other)),
            });
        }
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (name, prop) in properties {
            if let Some(value) = args.get(name) {
                check_value(name, prop, value)?;
            }
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !args.contains_key(name) {
            let kind = properties
                .and_then(|p| p.get(name))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("value");
            return Err(ArgFault {
                argument: name.to_owned(),
                reason: format!("missing: this argument ({kind}) is required"),
            });
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let known = |k: &str| properties.is_some_and(|p| p.contains_key(k));
        if let Some(unknown) = args.keys().find(|k| !known(k)) {
            return Err(ArgFault {
                argument: unknown.clone(),
                reason: "unknown argument: this tool does not take it".into(),
            });
        }
    }
    Ok(())
}

/// The arguments a schema takes, for a hint: `cursor (string), max_tokens (integer ≥ 1,
/// optional)`.
pub(crate) fn synopsis(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    properties
        .iter()
        .map(|(name, prop)| {
            let kind = prop.get("type").and_then(Value::as_str).unwrap_or("value");
            let min = prop
                .get("minimum")
                .and_then(Value::as_f64)
                .map(|m| format!(" ≥ {m}"))
                .unwrap_or_default();
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                ", optional"
            };
            format!("{name} ({kind}{min}{optional})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(extra: bool) -> Value {
        let mut s = json!({
            "type": "object",
            "properties": {
                "cursor": {"type": "string"},
                "max_tokens": {"type": "integer", "minimum": 1}
            },
            "required": ["cursor"]
        });
        if !extra {
            s["additionalProperties"] = json!(false);
        }
        s
    }

    fn fault(args: Value, extra: bool) -> Option<(String, String)> {
        check(&schema(extra), Some(&args))
            .err()
            .map(|f| (f.argument, f.reason))
    }

    #[test]
    fn matching_arguments_pass() {
        assert_eq!(fault(json!({"cursor": "ab.1"}), true), None);
        assert_eq!(
            fault(json!({"cursor": "ab.1", "max_tokens": 300}), true),
            None
        );
        assert_eq!(
            fault(json!({"cursor": "ab.1", "max_tokens": 300.0}), true),
            None
        );
        assert_eq!(
            fault(json!({"cursor": "ab.1", "max_tokens": 1}), true),
            None
        );
        // Unknown members are ignored unless the schema refuses them.
        assert_eq!(fault(json!({"cursor": "ab.1", "page": 2}), true), None);
    }

    #[test]
    fn each_fault_names_the_argument_and_why() {
        let got = |args| fault(args, false).expect("a fault");
        assert_eq!(
            got(json!({"cursor": "ab.1", "max_tokens": "abc"})),
            (
                "max_tokens".into(),
                "must be an integer ≥ 1; got the string \"abc\"".into()
            )
        );
        assert_eq!(
            got(json!({"cursor": "ab.1", "max_tokens": "700"})).1,
            "must be an integer ≥ 1; got the string \"700\""
        );
        assert_eq!(
            got(json!({"cursor": "ab.1", "max_tokens": 0})).1,
            "must be an integer ≥ 1; got the number 0"
        );
        assert_eq!(
            got(json!({"cursor": "ab.1", "max_tokens": -5})).1,
            "must be an integer ≥ 1; got the number -5"
        );
        assert_eq!(
            got(json!({"cursor": "ab.1", "max_tokens": 2.5})).1,
            "must be an integer ≥ 1; got the number 2.5"
        );
        assert_eq!(
            got(json!({"cursor": "ab.1", "max_tokens": null})).1,
            "must be an integer ≥ 1; got null"
        );
        assert_eq!(
            got(json!({"cursor": 7})),
            ("cursor".into(), "must be a string; got the number 7".into())
        );
        assert_eq!(
            got(json!({"max_tokens": 300})),
            (
                "cursor".into(),
                "missing: this argument (string) is required".into()
            )
        );
        assert_eq!(
            got(json!({"cursor": "ab.1", "page": 2})),
            (
                "page".into(),
                "unknown argument: this tool does not take it".into()
            )
        );
        assert_eq!(
            check(&schema(true), Some(&json!(["ab.1"]))).map_err(|f| f.argument),
            Err("arguments".into())
        );
        assert_eq!(
            check(&schema(true), None).map_err(|f| f.argument),
            Err("cursor".into())
        );
    }

    #[test]
    fn a_long_wrong_value_is_quoted_cut() {
        let long = "x".repeat(500);
        let (_, reason) = fault(json!({"cursor": "ab.1", "max_tokens": long}), true).unwrap();
        assert!(reason.ends_with('…'), "{reason}");
        assert!(reason.chars().count() < 100, "{reason}");
    }

    #[test]
    fn synopsis_lists_the_arguments() {
        assert_eq!(
            synopsis(&schema(true)),
            "cursor (string), max_tokens (integer ≥ 1, optional)"
        );
    }
}
