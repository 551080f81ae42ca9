//! Section 2: what each compaction would save, measured on the exact texts it would produce.
//!
//! Every what-if is measured on a list of [`Segment`]s (a document, or the `text` items of a
//! `tools/call` result): tokens are summed over segments, each segment counted on its own.
//! The baseline of every what-if except `compact` is the *compact* form: JSON segments
//! serialized by [`crate::compact::to_string`] at precision 0 (exact numbers), text segments as
//! they are. So a saving is never the pretty-printing saving counted again.

use serde_json::Value;

use super::count::Counter;
use super::input::Segment;
use super::report::{PerEncoding, WhatIf, pct};
use super::{table, uuid};
use crate::compact;

/// The significant digits the float what-ifs try, in order.
pub(crate) const FLOAT_PRECISIONS: [u32; 4] = [4, 6, 9, 12];

/// The what-ifs that apply to `segments`, in the fixed order: compact, floats (4, 6, 9, 12),
/// uuid_prefix, table. `raw_counts[i]` are the tokens of `segments[i].raw` (the caller has
/// them from the size row; each full text is tokenized once).
pub(crate) fn what_ifs(
    counter: &Counter<'_>,
    segments: &[Segment],
    raw_counts: &[PerEncoding<usize>],
    part: &str,
) -> Vec<WhatIf> {
    let mut out = Vec::new();
    // The compact form of each segment, computed once and shared by every what-if.
    let compact_texts: Vec<Option<String>> = segments
        .iter()
        .map(|s| s.value.as_ref().map(|v| compact::to_string(v, 0)))
        .collect();
    let base_text = |i: usize| -> &str {
        match &compact_texts[i] {
            Some(t) => t,
            None => &segments[i].raw,
        }
    };
    // A text already compact (or not JSON) is its own baseline: no second tokenization.
    let base_counts: Vec<PerEncoding<usize>> = (0..segments.len())
        .map(|i| match raw_counts.get(i) {
            Some(c) if base_text(i) == segments[i].raw => c.clone(),
            _ => counter.count(base_text(i)),
        })
        .collect();
    let base = counter.sum(base_counts.iter());

    let compacted = (0..segments.len())
        .filter(|&i| {
            compact_texts[i]
                .as_deref()
                .is_some_and(|c| c != segments[i].raw)
        })
        .count();
    if compacted > 0 {
        let before = counter.sum(raw_counts.iter());
        out.push(make(
            "compact",
            None,
            part,
            before,
            base.clone(),
            compacted,
            None,
        ));
    }

    for p in FLOAT_PRECISIONS {
        let mut changed = 0;
        let mut max_err: f64 = 0.0;
        let mut after = Vec::with_capacity(segments.len());
        for (i, s) in segments.iter().enumerate() {
            let Some(v) = &s.value else {
                after.push(base_counts[i].clone());
                continue;
            };
            let (n, err) = float_effect(v, p);
            if n == 0 {
                after.push(base_counts[i].clone());
                continue;
            }
            changed += n;
            max_err = max_err.max(err);
            after.push(counter.count(&compact::to_string(v, p)));
        }
        if changed > 0 {
            let after = counter.sum(after.iter());
            out.push(make(
                "floats",
                Some(p),
                part,
                base.clone(),
                after,
                changed,
                Some(max_err),
            ));
        }
    }

    let mut changed = 0;
    let mut after = Vec::with_capacity(segments.len());
    for (i, s) in segments.iter().enumerate() {
        let shortened = match &s.value {
            Some(v) => {
                let (w, n) = uuid::shorten_value(v);
                (n > 0).then(|| (compact::to_string(&w, 0), n))
            }
            None => uuid::shorten_in(&s.raw),
        };
        match shortened {
            Some((t, n)) => {
                changed += n;
                after.push(counter.count(&t));
            }
            None => after.push(base_counts[i].clone()),
        }
    }
    if changed > 0 {
        let after = counter.sum(after.iter());
        out.push(make(
            "uuid_prefix",
            None,
            part,
            base.clone(),
            after,
            changed,
            None,
        ));
    }

    let mut changed = 0;
    let mut after = Vec::with_capacity(segments.len());
    for (i, s) in segments.iter().enumerate() {
        match &s.value {
            Some(v) => {
                let (t, n) = table::encode(v);
                if n > 0 {
                    changed += n;
                    after.push(counter.count(&t));
                } else {
                    after.push(base_counts[i].clone());
                }
            }
            None => after.push(base_counts[i].clone()),
        }
    }
    if changed > 0 {
        let after = counter.sum(after.iter());
        out.push(make("table", None, part, base, after, changed, None));
    }
    out
}

/// Builds a [`WhatIf`] and its `saved_pct`.
pub(crate) fn make(
    name: &str,
    precision: Option<u32>,
    part: &str,
    before: PerEncoding<usize>,
    after: PerEncoding<usize>,
    changed: usize,
    max_abs_error: Option<f64>,
) -> WhatIf {
    let saved_pct = before.zip(&after, |&b, &a| pct(b as f64 - a as f64, b as f64));
    WhatIf {
        name: name.to_owned(),
        precision,
        part: part.to_owned(),
        tokens_before: before,
        tokens_after: after,
        saved_pct,
        changed,
        max_abs_error,
        config_key: config_key(name, precision),
    }
}

/// The proxy setting that applies the what-if `name` ([`WhatIf::config_key`]).
fn config_key(name: &str, precision: Option<u32>) -> String {
    match (name, precision) {
        ("compact", _) => "always".into(),
        ("floats", Some(p)) => format!("precision = {p}"),
        ("uuid_prefix", _) => "uuid_prefix = true".into(),
        ("table", _) => "tables = \"auto\"".into(),
        ("drop_structured_twin", _) => "always (a tool without outputSchema)".into(),
        (other, _) => other.to_owned(),
    }
}

/// How many floats of `v` rounding to `precision` digits changes, and the largest absolute
/// error it introduces (in f64). A float is a number whose spelling has `.`, `e` or `E`; its
/// rounded spelling is [`compact::round_number`]'s (what [`compact::to_string`] writes).
pub(crate) fn float_effect(v: &Value, precision: u32) -> (usize, f64) {
    let mut n = 0;
    let mut err: f64 = 0.0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            Value::Number(x) => {
                let spelled = x.to_string();
                if !spelled.contains(['.', 'e', 'E']) {
                    continue;
                }
                let rounded = compact::round_number(&spelled, precision);
                if rounded == spelled.as_str() {
                    continue;
                }
                n += 1;
                if let (Ok(a), Ok(b)) = (spelled.parse::<f64>(), rounded.parse::<f64>()) {
                    let d = (a - b).abs();
                    if d.is_finite() {
                        err = err.max(d);
                    }
                }
            }
            _ => {}
        }
    }
    (n, err)
}

/// Whether `structured` duplicates one of the `texts`: a text that parses to an equal JSON
/// value, or `structured` being an object with one member whose value is a string equal to a
/// text (`{"content":"<the text>"}`, as server-filesystem sends).
pub(crate) fn is_twin(structured: &Value, texts: &[Segment]) -> bool {
    texts.iter().any(|t| {
        t.value.as_ref() == Some(structured)
            || matches!(structured, Value::Object(o)
                if o.len() == 1 && o.values().next().and_then(Value::as_str) == Some(t.raw.as_str()))
    })
}
