//! Compact JSON with floats rounded to N significant digits at write time.
//!
//! PLACEHOLDER: the real rounding formatter is being written (issue 2 §2). The signatures below
//! are the contract; today they print compact JSON without rounding.

use serde_json::Value;

/// Compact JSON text of `value` (no whitespace, key order kept), floats rounded to `precision`
/// significant digits (`0` = exact). Integers keep their spelling.
pub fn to_string(value: &Value, precision: u32) -> String {
    let _ = precision;
    serde_json::to_string(value).unwrap_or_default()
}
