//! Section 4, continued: model-visible definition tokens of a `tools/list` result, as listed
//! and with each `[tools_list]` option of the proxy (`crate::tooldefs`).
//!
//! Rows (the caps are the values issue 15 measures with: 40 and 12 tokens):
//! `as listed`; `description_max_tokens = 40`; `property_description_max_tokens = 12`;
//! `compact = true`; `fold_property_descriptions = true`; `40 / 12 / compact` (the three
//! together); `40 / 12 / compact / fold`; `mode = "defer"` (the fixed cost of `find_tools` and
//! `call_tool`, whatever the number of tools). Each row's tokens are the sum over the tools of
//! [`crate::tooldefs::definition_tokens`], the compaction done with that encoding.

use serde_json::Value;

use super::count::Counter;
use super::report::{DefinitionsCost, OptionRow, pct};
use crate::tooldefs::{self, Options};

fn options() -> Vec<(&'static str, Options)> {
    let caps = Options {
        description_max_tokens: Some(40),
        property_description_max_tokens: Some(12),
        ..Options::default()
    };
    vec![
        ("as listed", Options::default()),
        (
            "description_max_tokens = 40",
            Options {
                description_max_tokens: Some(40),
                ..Options::default()
            },
        ),
        (
            "property_description_max_tokens = 12",
            Options {
                property_description_max_tokens: Some(12),
                ..Options::default()
            },
        ),
        (
            "compact = true",
            Options {
                compact_schemas: true,
                ..Options::default()
            },
        ),
        (
            "fold_property_descriptions = true",
            Options {
                fold_property_descriptions: true,
                ..Options::default()
            },
        ),
        (
            "40 / 12 / compact",
            Options {
                compact_schemas: true,
                ..caps.clone()
            },
        ),
        (
            "40 / 12 / compact / fold",
            Options {
                compact_schemas: true,
                fold_property_descriptions: true,
                ..caps
            },
        ),
    ]
}

/// The [`DefinitionsCost`] of `tools` (a `tools/list` result's `tools`).
pub(crate) fn definitions_cost(counter: &Counter<'_>, tools: &[Value]) -> DefinitionsCost {
    let whole_json = counter.count(&crate::compact::to_string(&Value::Array(tools.to_vec()), 0));
    let mut rows: Vec<(String, Vec<usize>)> = options()
        .into_iter()
        .map(|(label, o)| {
            let per: Vec<usize> = counter
                .encodings()
                .iter()
                .map(|e| {
                    tools
                        .iter()
                        .map(|t| tooldefs::definition_tokens(&tooldefs::compact_tool(t, &o, e), e))
                        .sum()
                })
                .collect();
            (label.to_owned(), per)
        })
        .collect();
    let deferred = tooldefs::deferred_definitions("find_tools", "call_tool");
    let fixed: Vec<usize> = counter
        .encodings()
        .iter()
        .map(|e| {
            deferred
                .iter()
                .map(|d| tooldefs::definition_tokens(d, e))
                .sum()
        })
        .collect();
    rows.push(("mode = \"defer\" (fixed)".to_owned(), fixed));
    let base = rows[0].1.clone();
    let options = rows
        .into_iter()
        .map(|(option, per)| {
            let saved: Vec<f64> = per
                .iter()
                .zip(&base)
                .map(|(&a, &b)| pct(b as f64 - a as f64, b as f64))
                .collect();
            OptionRow {
                option,
                tokens: counter.wrap(per),
                saved_pct: counter.wrap(saved),
            }
        })
        .collect();
    DefinitionsCost {
        whole_json,
        options,
    }
}
