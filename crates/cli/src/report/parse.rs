//! Reading telemetry logs (docs/guide/telemetry.md): one JSON object per line. A line that cannot be
//! used (not UTF-8, not JSON, not an object, a missing field, a field of the wrong type, an
//! unknown `outcome`) is skipped and counted with its reason; it never stops the report.

use std::io::BufRead;

use mcp_budget_core::wire::Outcome;
use serde_json::{Map, Value};

/// One usable telemetry record: the fields the proxy writes (`mcp_budget_core::wire::
/// TelemetryRecord`). Sizes are UTF-8 bytes and tokens of the model-visible text; times are
/// milliseconds. Fields a newer proxy may add are ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// RFC 3339 UTC time, as written (compared as text: the proxy's format sorts by time).
    pub(crate) ts: String,
    /// `params.name` of the call, as the client spelled it.
    pub(crate) tool: String,
    pub(crate) bytes_pre: u64,
    pub(crate) bytes: u64,
    pub(crate) tokens_pre: u64,
    pub(crate) tokens: u64,
    pub(crate) upstream_ms: u64,
    pub(crate) shape_ms: u64,
    pub(crate) outcome: Outcome,
    /// Absent or `null` when nothing was cached.
    pub(crate) response_id: Option<String>,
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    NotUtf8,
    NotJson,
    NotObject,
    Missing(&'static str),
    /// The field and what it should have been.
    WrongType(&'static str, &'static str),
    UnknownOutcome(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::NotUtf8 => f.write_str("not UTF-8"),
            Fault::NotJson => f.write_str("not JSON"),
            Fault::NotObject => f.write_str("not a JSON object"),
            Fault::Missing(field) => write!(f, "missing \"{field}\""),
            Fault::WrongType(field, want) => write!(f, "\"{field}\" is not {want}"),
            Fault::UnknownOutcome(o) => {
                let shown: String = o.chars().take(40).collect();
                write!(f, "unknown outcome {shown:?}")
            }
        }
    }
}

/// A skipped line: its 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) line: u64,
    pub(crate) fault: Fault,
}

/// What one log held.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) records: Vec<Record>,
    pub(crate) skipped: Vec<Skipped>,
}

/// Reads every line of `input`. Empty (or whitespace-only) lines are neither records nor
/// skipped.
///
/// # Errors
/// Only the reader's I/O errors; bad lines are in [`Log::skipped`].
pub(crate) fn read_log(mut input: impl BufRead) -> std::io::Result<Log> {
    let mut log = Log::default();
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            return Ok(log);
        }
        n += 1;
        match parse_line(&buf) {
            Ok(Some(r)) => log.records.push(r),
            Ok(None) => {}
            Err(fault) => log.skipped.push(Skipped { line: n, fault }),
        }
    }
}

/// One line (with or without its `\n`): `Ok(None)` when blank.
pub(crate) fn parse_line(bytes: &[u8]) -> Result<Option<Record>, Fault> {
    let text = std::str::from_utf8(bytes).map_err(|_| Fault::NotUtf8)?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|_| Fault::NotJson)?;
    let Value::Object(obj) = value else {
        return Err(Fault::NotObject);
    };
    // Checked in the order the proxy writes the fields, so the first fault is named.
    let ts = string(&obj, "ts")?;
    let tool = string(&obj, "tool")?;
    let bytes_pre = count(&obj, "bytes_pre")?;
    let bytes = count(&obj, "bytes")?;
    let tokens_pre = count(&obj, "tokens_pre")?;
    let tokens = count(&obj, "tokens")?;
    let upstream_ms = count(&obj, "upstream_ms")?;
    let shape_ms = count(&obj, "shape_ms")?;
    let outcome_text = string(&obj, "outcome")?;
    let outcome = serde_json::from_value::<Outcome>(Value::String(outcome_text.clone()))
        .map_err(|_| Fault::UnknownOutcome(outcome_text))?;
    let response_id = match obj.get("response_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(Fault::WrongType("response_id", "a string or null")),
    };
    Ok(Some(Record {
        ts,
        tool,
        bytes_pre,
        bytes,
        tokens_pre,
        tokens,
        upstream_ms,
        shape_ms,
        outcome,
        response_id,
    }))
}

fn string(obj: &Map<String, Value>, field: &'static str) -> Result<String, Fault> {
    match obj.get(field) {
        None => Err(Fault::Missing(field)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Fault::WrongType(field, "a string")),
    }
}

fn count(obj: &Map<String, Value>, field: &'static str) -> Result<u64, Fault> {
    match obj.get(field) {
        None => Err(Fault::Missing(field)),
        Some(v) => v
            .as_u64()
            .ok_or(Fault::WrongType(field, "a non-negative integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"ts":"2026-11-30T07:54:08.123Z","tool":"t","bytes_pre":10,"bytes":5,"tokens_pre":4,"tokens":2,"upstream_ms":7,"shape_ms":1,"outcome":"compacted","response_id":null}"#;

    #[test]
    fn a_proxy_line_parses_and_extra_fields_are_ignored() {
        let r = parse_line(GOOD.as_bytes()).unwrap().unwrap();
        assert_eq!(r.tool, "t");
        assert_eq!(
            (r.bytes_pre, r.bytes, r.tokens_pre, r.tokens),
            (10, 5, 4, 2)
        );
        assert_eq!((r.upstream_ms, r.shape_ms), (7, 1));
        assert_eq!(r.outcome, Outcome::Compacted);
        assert_eq!(r.response_id, None);
        let extra = GOOD.replace("\"ts\"", "\"new_field\":[1],\"ts\"");
        assert_eq!(parse_line(extra.as_bytes()).unwrap().unwrap(), r);
        let no_id = GOOD.replace(",\"response_id\":null", "");
        assert_eq!(parse_line(no_id.as_bytes()).unwrap().unwrap(), r);
    }

    #[test]
    fn each_kind_of_bad_line_names_its_fault() {
        let cases: Vec<(Vec<u8>, Fault)> = vec![
            (b"\xff\xfe{}".to_vec(), Fault::NotUtf8),
            (b"{\"ts\":".to_vec(), Fault::NotJson),
            (b"[1,2]".to_vec(), Fault::NotObject),
            (
                GOOD.replace("\"tokens\":2,", "").into_bytes(),
                Fault::Missing("tokens"),
            ),
            (
                GOOD.replace("\"bytes\":5", "\"bytes\":-5").into_bytes(),
                Fault::WrongType("bytes", "a non-negative integer"),
            ),
            (
                GOOD.replace("\"shape_ms\":1", "\"shape_ms\":1.5")
                    .into_bytes(),
                Fault::WrongType("shape_ms", "a non-negative integer"),
            ),
            (
                GOOD.replace("\"tool\":\"t\"", "\"tool\":3").into_bytes(),
                Fault::WrongType("tool", "a string"),
            ),
            (
                GOOD.replace("\"response_id\":null", "\"response_id\":7")
                    .into_bytes(),
                Fault::WrongType("response_id", "a string or null"),
            ),
            (
                GOOD.replace("compacted", "shrunk").into_bytes(),
                Fault::UnknownOutcome("shrunk".into()),
            ),
        ];
        for (line, fault) in cases {
            assert_eq!(parse_line(&line), Err(fault.clone()), "{fault}");
        }
    }

    #[test]
    fn blank_lines_are_neither_records_nor_skipped() {
        let text = format!("{GOOD}\n\n  \nnope\n{GOOD}");
        let log = read_log(text.as_bytes()).unwrap();
        assert_eq!(log.records.len(), 2);
        assert_eq!(
            log.skipped,
            vec![Skipped {
                line: 4,
                fault: Fault::NotJson
            }]
        );
    }
}
