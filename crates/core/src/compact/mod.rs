//! Compact JSON with floats rounded to N significant digits at write time.
//!
//! The producer's value is never modified: rounding happens in [`RoundingFormatter`], a
//! `serde_json` [`Formatter`] hook, while the value is written. Output is compact (no
//! whitespace), keeps key order (`preserve_order`) and escapes strings exactly as `serde_json`
//! does.
//!
//! # Number rules
//!
//! The workspace enables `serde_json`'s `arbitrary_precision`, so every [`serde_json::Number`]
//! keeps the spelling it was parsed from and reaches the formatter as text. With `precision`
//! N (significant decimal digits):
//!
//! - **Integers** (no `.`, `e` or `E` in the spelling) pass byte for byte, whatever their size:
//!   `12345678901234567890`, `-98765432109876543210`.
//! - **`precision == 0`** means exact: every number keeps its source spelling, and the output
//!   is byte-equal to `serde_json::to_string`. "Source spelling" is the text `serde_json`
//!   stores, and its parser normalizes exponents to `e+N` / `e-N` (`2E3` is stored `2e+3`).
//! - **Floats** are parsed to the nearest `f64` (`x`). If the shortest round-trip text of `x`
//!   already has at most N significant digits, `x` is kept; otherwise `x` is rounded with
//!   Rust's exact `format!("{:.*e}", N - 1, x)` and parsed back. The result is printed as the
//!   shortest round-trip text of the rounded value ([`format_float`]): `247.13061935179246` →
//!   `247.130619`, `0.30000000000000004` → `0.3`, `1.5e-7` stays `1.5e-7` (N = 9).
//!   This rule makes rounding idempotent: a rounded value prints with at most N digits, so
//!   rounding it again keeps it. (For N <= 15 the digits of the `{:.*e}` text, trailing zeros
//!   stripped, already are that shortest text, so the writer skips the parse-back; a property
//!   test checks the two paths agree. For N <= 14 the writer first rounds the decimal spelling
//!   itself, with no `f64` at all, whenever the digits after the N-th are provably far enough
//!   from half-way that `x` must round the same way: see `round_spelling`; property tests
//!   check it against the exact path.)
//! - A float stays a float in spelling: `3.0` is written `3.0`, never `3`.
//! - Numbers that do not fit an `f64` pass unrounded in their source spelling: overflow
//!   (`1e400`, `-1e400`), underflow to zero (`1e-400`) and subnormals (below
//!   `2.2250738585072014e-308`, where an `f64` no longer holds N digits). So does a float whose
//!   rounding would overflow (`1.7976931348623157e308` at N = 1).
//! - `precision >= 17` keeps every float's `f64` value (an `f64` has at most 17 significant
//!   digits) and only respells it in shortest form.
//!
//! ```
//! use mcp_budget_core::compact;
//!
//! let v: serde_json::Value =
//!     serde_json::from_str(r#"{ "id": 12345678901234567890, "x": 247.13061935179246, "y": 3.0 }"#)?;
//! assert_eq!(compact::to_string(&v, 9), r#"{"id":12345678901234567890,"x":247.130619,"y":3.0}"#);
//! assert_eq!(compact::to_string(&v, 0), serde_json::to_string(&v)?);
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io;

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::Formatter;

/// The largest number of significant digits a finite `f64` can need in shortest round-trip form.
const F64_MAX_DIGITS: u32 = 17;

/// Compact JSON text of `value` (no whitespace, key order kept), floats rounded to `precision`
/// significant digits (`0` = exact). Integers keep their spelling. See the [module
/// docs](self) for the exact number rules.
///
/// This cannot fail: writing into a `Vec<u8>` never returns an I/O error, a [`Value`]'s map
/// keys are always strings (the only other way `serde_json` serialization fails), and
/// [`RoundingFormatter`] writes only ASCII number text, so the bytes are valid UTF-8.
pub fn to_string(value: &Value, precision: u32) -> String {
    let mut buf = Vec::with_capacity(128);
    if to_writer(&mut buf, value, precision).is_err() {
        // Unreachable (see above); fall back to the exact text rather than lose the value.
        return serde_json::to_string(value).unwrap_or_default();
    }
    match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Writes the compact JSON text of `value` to `w`, floats rounded to `precision` significant
/// digits (`0` = exact); the same bytes as [`to_string`].
///
/// # Errors
/// Only the errors of `w` itself (an [`io::Error`] from its `write` calls).
pub fn to_writer<W: io::Write>(w: W, value: &Value, precision: u32) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, RoundingFormatter::new(precision));
    value.serialize(&mut ser).map_err(io::Error::from)
}

/// The length in bytes (UTF-8) of [`to_string`]`(value, precision)`, computed without building
/// the string.
pub fn byte_len(value: &Value, precision: u32) -> u64 {
    let mut counter = CountingWriter::new(io::sink());
    // `io::sink` never fails; see `to_string` for why serialization cannot.
    let _ = to_writer(&mut counter, value, precision);
    counter.bytes_written()
}

/// A [`serde_json::ser::Formatter`] that writes compact JSON and rounds floats to a number of
/// significant digits (see the [module docs](self) for the rules).
///
/// Use it with `serde_json::Serializer::with_formatter` to write any `Serialize` type, not
/// only a [`Value`]: numbers parsed with `arbitrary_precision` arrive through
/// `write_number_str`, Rust `f64`/`f32` fields through `write_f64`/`write_f32` (rounded the
/// same way; `f32` starts from its own shortest text, so `0.1f32` writes `0.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundingFormatter {
    precision: u32,
}

impl RoundingFormatter {
    /// A formatter rounding floats to `precision` significant digits; `0` = exact.
    pub fn new(precision: u32) -> RoundingFormatter {
        RoundingFormatter { precision }
    }

    /// The number of significant digits floats are rounded to (`0` = exact).
    pub fn precision(&self) -> u32 {
        self.precision
    }
}

impl Default for RoundingFormatter {
    /// Rounds to [`crate::DEFAULT_PRECISION`] (9) significant digits.
    fn default() -> Self {
        RoundingFormatter::new(crate::DEFAULT_PRECISION)
    }
}

impl Formatter for RoundingFormatter {
    fn write_number_str<W>(&mut self, writer: &mut W, value: &str) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        match classify(value, self.precision) {
            Rounding::Keep => writer.write_all(value.as_bytes()),
            Rounding::Float { negative, digits } => write_digits(writer, negative, &digits),
        }
    }

    fn write_f64<W>(&mut self, writer: &mut W, value: f64) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        if self.precision == 0 {
            return serde_json::ser::CompactFormatter.write_f64(writer, value);
        }
        write_rounded_f64(writer, value, self.precision)
    }

    fn write_f32<W>(&mut self, writer: &mut W, value: f32) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        if self.precision == 0 {
            return serde_json::ser::CompactFormatter.write_f32(writer, value);
        }
        // Start from the f32's own shortest decimal, so 0.1f32 is 0.1, not 0.100000001.
        let mut text = StackText::new();
        let widened = match write!(text, "{value:e}") {
            Ok(()) => text.as_str().parse::<f64>().unwrap_or(f64::from(value)),
            Err(_) => f64::from(value),
        };
        write_rounded_f64(writer, widened, self.precision)
    }
}

/// Rounds one JSON number spelling to `precision` significant digits by the [module
/// rules](self): integers and `precision == 0` return `number` unchanged (borrowed), as do
/// numbers that do not fit an `f64`.
///
/// `number` is expected to be valid JSON number text (as a [`serde_json::Number`] holds); text
/// that does not parse as a float is returned unchanged.
pub fn round_number(number: &str, precision: u32) -> Cow<'_, str> {
    match classify(number, precision) {
        Rounding::Keep => Cow::Borrowed(number),
        Rounding::Float { negative, digits } => {
            let mut out = Vec::with_capacity(24);
            // Writing into a Vec cannot fail; the digits and signs are ASCII.
            let _ = write_digits(&mut out, negative, &digits);
            Cow::Owned(String::from_utf8(out).unwrap_or_default())
        }
    }
}

/// What becomes of one number spelling.
enum Rounding {
    /// Written as it is spelled.
    Keep,
    /// Written as these digits, by [`write_digits`].
    Float { negative: bool, digits: Digits },
}

fn classify(number: &str, precision: u32) -> Rounding {
    if precision == 0 || !number.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return Rounding::Keep;
    }
    if let Some((negative, digits)) = round_spelling(number, precision) {
        return Rounding::Float { negative, digits };
    }
    let Ok(x) = number.parse::<f64>() else {
        return Rounding::Keep;
    };
    if !x.is_finite() || x.is_subnormal() {
        return Rounding::Keep;
    }
    if x == 0.0 && mantissa_has_nonzero_digit(number) {
        // Underflow: the source is not zero, the f64 is.
        return Rounding::Keep;
    }
    match round_digits(x, precision) {
        Some(digits) => Rounding::Float {
            negative: x.is_sign_negative(),
            digits,
        },
        None => Rounding::Keep,
    }
}

/// Precisions up to which [`round_spelling`] may round the decimal spelling itself.
const SPELLING_DIGITS: u32 = 14;

/// Decimal exponents (of the first significant digit) within which a spelling of at most
/// [`SPELLING_DIGITS`] rounded digits is a normal, finite `f64` with room to spare.
const SPELLING_EXP_RANGE: std::ops::RangeInclusive<i64> = -300..=300;

/// The fast path of [`classify`]: rounds the decimal spelling itself, without parsing it to
/// an `f64` and formatting that, when this provably gives the digits of [`round_digits`].
/// `None` means "not decided here": the caller takes the exact path.
///
/// Why it is the same: the source decimal `D` parses to the nearest `f64` `x`, so
/// `|x - D| <= 2^-53 |D|`. With N <= 14 digits and `u` the weight of the N-th digit of `D`,
/// `|D| < 10^N u`, so `|x - D| < 1.12e-16 * 10^N u = 11.2 * 10^-M u` where `M = 17 - N`.
/// Read the M digits after the N-th as an integer `T` (zeros when the spelling is shorter)
/// and let `H = 5 * 10^(M-1)` (the half-way point). When `|T - H| >= 13`, `D` lies more than
/// `12 * 10^-M u` from every rounding boundary, so `x` rounds to the same N digits as `D`
/// (also across a power of ten: just below `10^k` the grid is `u / 10`, but there
/// `|D| ~ 10^(N-1) u` and `|x - D| < 0.0012 u`). Otherwise (a spelling within a hair of
/// half-way, about 26 in 10^M) the exact path decides. Exponents are limited so that `x` is
/// normal and the rounding cannot overflow; zero is `0` with exponent 0, as `{:e}` prints it.
fn round_spelling(number: &str, precision: u32) -> Option<(bool, Digits)> {
    if precision > SPELLING_DIGITS {
        return None;
    }
    let n = precision as usize;
    let bytes = number.as_bytes();
    let (negative, rest) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    let mantissa_end = rest
        .iter()
        .position(|b| matches!(b, b'e' | b'E'))
        .unwrap_or(rest.len());
    let (mantissa, exponent) = rest.split_at(mantissa_end);
    let exp10 = parse_exponent(exponent)?;
    // `kept` holds the first 17 significant digits: N to keep, M = 17 - N to decide.
    let mut kept = [b'0'; F64_MAX_DIGITS as usize];
    let mut sig = 0usize;
    let mut before_point = 0i64;
    let mut leading_zeros = 0i64;
    let mut seen_point = false;
    let mut any_digit = false;
    for &b in mantissa {
        match b {
            b'.' if !seen_point => seen_point = true,
            b'0'..=b'9' => {
                any_digit = true;
                if !seen_point {
                    before_point += 1;
                }
                if sig == 0 && b == b'0' {
                    leading_zeros += 1;
                    continue;
                }
                if let Some(slot) = kept.get_mut(sig) {
                    *slot = b;
                }
                sig += 1;
            }
            _ => return None,
        }
    }
    if !any_digit {
        return None;
    }
    let mut out = Digits {
        digits: [b'0'; 24],
        len: 1,
        exp: 0,
    };
    if sig == 0 {
        // Zero (of any sign and exponent) parses to +-0.0, whose digits are `0`, exponent 0.
        return Some((negative, out));
    }
    let mut exp = before_point - leading_zeros - 1 + exp10;
    let tail = kept[n..]
        .iter()
        .fold(0u64, |t, &b| t * 10 + u64::from(b - b'0'));
    let half = 5 * 10u64.pow(F64_MAX_DIGITS - 1 - precision);
    if tail.abs_diff(half) < 13 {
        return None;
    }
    out.digits[..n].copy_from_slice(&kept[..n]);
    out.len = n;
    if tail > half {
        // Round up, carrying through nines; all nines become `1` one decade higher.
        let mut i = n;
        loop {
            if i == 0 {
                out.digits[0] = b'1';
                out.len = 1;
                exp += 1;
                break;
            }
            i -= 1;
            if out.digits[i] == b'9' {
                out.digits[i] = b'0';
            } else {
                out.digits[i] += 1;
                break;
            }
        }
    }
    if !SPELLING_EXP_RANGE.contains(&exp) {
        return None;
    }
    while out.len > 1 && out.digits[out.len - 1] == b'0' {
        out.len -= 1;
    }
    out.exp = i32::try_from(exp).ok()?;
    Some((negative, out))
}

/// The value of an exponent part (`e+12`, `E-3`, `e7`, or empty for 0); `None` when it is
/// malformed or has more than 6 digits (far outside the `f64` range).
fn parse_exponent(part: &[u8]) -> Option<i64> {
    let Some((_, rest)) = part.split_first() else {
        return Some(0);
    };
    let (sign, digits) = match rest.split_first() {
        Some((b'-', d)) => (-1, d),
        Some((b'+', d)) => (1, d),
        _ => (1, rest),
    };
    if digits.is_empty() || digits.len() > 6 {
        return None;
    }
    let mut value = 0i64;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(b - b'0');
    }
    Some(sign * value)
}

/// Precisions up to which two distinct decimals of at most that many digits never round to
/// the same `f64` (`f64` holds 15 decimal digits), so the digits of the exact rounding
/// `{:.N-1e}` of `x`, trailing zeros stripped, are the shortest text of the rounded value:
/// no need to parse back and format again.
const DIRECT_DIGITS: u32 = 15;

/// The shortest digits of `x` (finite, not subnormal) rounded to `precision` (>= 1)
/// significant digits, or `None` when the rounding leaves the finite `f64` range.
fn round_digits(x: f64, precision: u32) -> Option<Digits> {
    if precision > DIRECT_DIGITS {
        return round_f64(x, precision).map(shortest_digits);
    }
    let sig = precision.saturating_sub(1) as usize;
    let mut text = StackText::new();
    write!(text, "{:.sig$e}", x.abs()).ok()?;
    let digits = parse_digits(text.as_str());
    // Only near f64::MAX can rounding up overflow (1.8e308 at one digit is 2e308).
    if digits.exp >= 308 && !text.as_str().parse::<f64>().ok()?.is_finite() {
        return None;
    }
    Some(digits)
}

/// `x` rounded to `precision` (>= 1) significant digits, or `None` when the rounding leaves
/// the finite `f64` range. Keeps `x` when its shortest text has at most `precision` digits.
fn round_f64(x: f64, precision: u32) -> Option<f64> {
    if x == 0.0 || precision >= F64_MAX_DIGITS {
        return Some(x);
    }
    if shortest_digits(x).len <= precision as usize {
        return Some(x);
    }
    let sig = precision.saturating_sub(1) as usize;
    let mut text = StackText::new();
    write!(text, "{x:.sig$e}").ok()?;
    let r = text.as_str().parse::<f64>().ok()?;
    r.is_finite().then_some(r)
}

/// What `write_f64` writes for a finite `x` at `precision` >= 1.
fn write_rounded_f64<W: ?Sized + io::Write>(w: &mut W, x: f64, precision: u32) -> io::Result<()> {
    match round_digits(x, precision).filter(|_| !x.is_subnormal()) {
        Some(digits) => write_digits(w, x.is_sign_negative(), &digits),
        None => write_float(w, x),
    }
}

/// Whether the mantissa (the part before any exponent) of a number spelling has a non-zero
/// digit.
fn mantissa_has_nonzero_digit(number: &str) -> bool {
    number
        .bytes()
        .take_while(|b| !matches!(b, b'e' | b'E'))
        .any(|b| matches!(b, b'1'..=b'9'))
}

/// Float text on the stack: every text formatted here is at most 24 bytes
/// (`-2.2250738585072014e-308`), so a full buffer means a bug, reported as a `fmt::Error`.
struct StackText {
    bytes: [u8; 40],
    len: usize,
}

impl StackText {
    fn new() -> StackText {
        StackText {
            bytes: [0; 40],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The shortest round-trip significant digits of `|x|` (no leading or trailing zeros; `0`
/// for zero) and the decimal exponent of the first digit: `247.13` → (`24713`, 2).
struct Digits {
    digits: [u8; 24],
    len: usize,
    exp: i32,
}

impl Digits {
    fn as_bytes(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

fn shortest_digits(x: f64) -> Digits {
    // `{:e}` is Rust's shortest round-trip text in scientific form: `2.4713e2`, `1.5e-7`, `0e0`.
    let mut text = StackText::new();
    let _ = write!(text, "{:e}", x.abs());
    parse_digits(text.as_str())
}

/// The digits (trailing zeros stripped) and exponent of Rust's `{:e}` text of a non-negative
/// number: `2.4713e2` → (`24713`, 2), `3.00000000e0` → (`3`, 0).
fn parse_digits(s: &str) -> Digits {
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let mut out = Digits {
        digits: [b'0'; 24],
        len: 0,
        exp: exp.parse().unwrap_or(0),
    };
    for b in mantissa.bytes().filter(u8::is_ascii_digit) {
        if let Some(slot) = out.digits.get_mut(out.len) {
            *slot = b;
            out.len += 1;
        }
    }
    while out.len > 1 && out.digits[out.len - 1] == b'0' {
        out.len -= 1;
    }
    if out.len == 0 || out.digits[0] == b'0' {
        out.len = 1;
        out.digits[0] = b'0';
    }
    out
}

/// How many characters longer the positional spelling may be than the exponent spelling and
/// still be chosen: positional reads better, and cl100k/o200k pack up to three digits (`000`)
/// per token, so a few zeros cost about what `e-4` costs.
const POSITIONAL_ALLOWANCE: usize = 3;

/// The shortest round-trip text of a finite `x` that still reads as a float.
///
/// Of the positional spelling (`247.130619`, `0.000525838977`, `3.0`: always with a `.`) and
/// the exponent spelling (`1.5e-7`, `1e21`: no `+`, no leading exponent zeros), the positional
/// one is chosen unless it is more than three characters longer. Examples: `1.5e-7`,
/// `0.000525838977`, `1000.0`, `1e5`, `-0.0`.
pub fn format_float(x: f64) -> String {
    let mut out = Vec::with_capacity(24);
    // Writing into a Vec cannot fail.
    let _ = write_float(&mut out, x);
    String::from_utf8(out).unwrap_or_default()
}

/// Writes [`format_float`]`(x)` without allocating.
fn write_float<W: ?Sized + io::Write>(w: &mut W, x: f64) -> io::Result<()> {
    write_digits(w, x.is_sign_negative(), &shortest_digits(x))
}

/// Writes `digits` (with a `-` when `negative`) in the shorter spelling (see [`format_float`]).
fn write_digits<W: ?Sized + io::Write>(w: &mut W, negative: bool, d: &Digits) -> io::Result<()> {
    const ZEROS: &[u8] = b"0000000000000000000000000000000000000000";
    let zeros = |w: &mut W, n: usize| -> io::Result<()> {
        let mut left = n;
        while left > 0 {
            let k = left.min(ZEROS.len());
            w.write_all(&ZEROS[..k])?;
            left -= k;
        }
        Ok(())
    };
    let digits = d.as_bytes();
    let n = digits.len();
    let exp = d.exp;
    let exp_abs = exp.unsigned_abs() as usize;
    let exp_len = exp_abs.checked_ilog10().map_or(1, |l| l as usize + 1) + usize::from(exp < 0);
    let exponent_len = n + usize::from(n > 1) + 1 + exp_len;
    let positional_len = if exp < 0 {
        2 + (exp_abs - 1) + n
    } else if n <= exp_abs + 1 {
        exp_abs + 1 + 2
    } else {
        n + 1
    };
    if negative {
        w.write_all(b"-")?;
    }
    if positional_len <= exponent_len + POSITIONAL_ALLOWANCE {
        if exp < 0 {
            w.write_all(b"0.")?;
            zeros(w, exp_abs - 1)?;
            w.write_all(digits)
        } else if n <= exp_abs + 1 {
            w.write_all(digits)?;
            zeros(w, exp_abs + 1 - n)?;
            w.write_all(b".0")
        } else {
            w.write_all(&digits[..=exp_abs])?;
            w.write_all(b".")?;
            w.write_all(&digits[exp_abs + 1..])
        }
    } else {
        w.write_all(&digits[..1])?;
        if n > 1 {
            w.write_all(b".")?;
            w.write_all(&digits[1..])?;
        }
        write!(w, "e{exp}")
    }
}

/// A writer that counts the bytes that pass through it (after ripgrep's `CounterWriter`):
/// count while you serialize, don't serialize twice.
#[derive(Debug, Clone, Default)]
pub struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W> CountingWriter<W> {
    /// Wraps `inner`; the count starts at 0.
    pub fn new(inner: W) -> CountingWriter<W> {
        CountingWriter { inner, count: 0 }
    }

    /// Bytes accepted by the inner writer so far.
    pub fn bytes_written(&self) -> u64 {
        self.count
    }

    /// The inner writer.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: io::Write> io::Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests;
