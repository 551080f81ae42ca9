//! Totals over many inputs (a directory): one size row and one row per what-if.

use super::report::{PerEncoding, Report, SizeRow, WhatIf, size_row_from};
use super::whatif;

/// One what-if summed over inputs.
struct Acc {
    name: String,
    precision: Option<u32>,
    before: PerEncoding<usize>,
    after: PerEncoding<usize>,
    changed: usize,
    max_abs_error: Option<f64>,
}

/// The sum of the whole-input rows of `reports` (part `total`), and each what-if summed over the
/// inputs it applies to (part `all`; `changed` summed; `max_abs_error` the largest), in the
/// order they first appear. `None` when `reports` is empty.
pub fn totals(reports: &[&Report]) -> Option<(SizeRow, Vec<WhatIf>)> {
    let first = reports.first()?.whole()?;
    let zero = first.tokens.map(|_| 0usize);
    let (mut bytes, mut chars, mut chars4, mut tokens) = (0, 0, 0, zero.clone());
    for r in reports {
        if let Some(w) = r.whole() {
            bytes += w.bytes;
            chars += w.chars;
            chars4 += w.chars4;
            tokens = tokens.zip(&w.tokens, |a, b| a + b);
        }
    }
    let size = size_row_from("total", bytes, chars, chars4, tokens);

    let mut acc: Vec<Acc> = Vec::new();
    for r in reports {
        for w in &r.what_ifs {
            let i = match acc
                .iter()
                .position(|a| a.name == w.name && a.precision == w.precision)
            {
                Some(i) => i,
                None => {
                    acc.push(Acc {
                        name: w.name.clone(),
                        precision: w.precision,
                        before: zero.clone(),
                        after: zero.clone(),
                        changed: 0,
                        max_abs_error: None,
                    });
                    acc.len() - 1
                }
            };
            let a = &mut acc[i];
            a.before = a.before.zip(&w.tokens_before, |x, y| x + y);
            a.after = a.after.zip(&w.tokens_after, |x, y| x + y);
            a.changed += w.changed;
            a.max_abs_error = match (a.max_abs_error, w.max_abs_error) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
        }
    }
    let what_ifs = acc
        .into_iter()
        .map(|a| {
            whatif::make(
                &a.name,
                a.precision,
                "all",
                a.before,
                a.after,
                a.changed,
                a.max_abs_error,
            )
        })
        .collect();
    Some((size, what_ifs))
}
