//! Detection of base64 blobs and `data:` URIs inside JSON strings (issue 2 §4).
//!
//! A screenshot or a PDF in a JSON string costs tens of thousands of tokens and tells a model
//! nothing. This module finds such strings and reports them; the caller (the proxy) decides
//! where the bytes go and what small description replaces them ([`replace_blobs`]).
//!
//! # What counts as a blob
//!
//! A JSON string whose **decoded** size is over the threshold (in bytes, default
//! [`DEFAULT_BLOB_THRESHOLD_BYTES`]) and that is either
//!
//! - a `data:` URI (RFC 2397, `data:[<mediatype>][;base64],<data>`): base64 payloads are
//!   decoded by the `base64` crate (padding optional, as browsers accept), other payloads are
//!   percent-decoded; or
//! - a whole string of base64, strictly: only the standard (`+/`) or only the URL-safe (`-_`)
//!   alphabet, `=` padding only at the end, line breaks (`\r`, `\n`, as MIME wraps it) as the
//!   only whitespace, a length that is a multiple of 4 once line breaks are removed, at least
//!   one upper-case letter, one lower-case letter and one digit, not hex-only, and a payload
//!   the `base64` crate decodes in strict mode (canonical padding and trailing bits).
//!
//! So long prose, hex ids and hashes, UUIDs and camelCase identifiers are not blobs: prose
//! has spaces and punctuation, hex has no mixed case, identifiers rarely have all three
//! character classes and a length that is a multiple of 4 and a canonical decoding.
//!
//! MIME types come from the `data:` header when it names one, else from the decoded bytes'
//! magic numbers ([`sniff_mime`]: PNG, JPEG, GIF, WebP, PDF, gzip, zip), else
//! `application/octet-stream`.
//!
//! ```
//! use mcp_budget_core::blob;
//!
//! // A 1.5 KB PDF as a data: URI inside a tool's JSON output.
//! let pdf = [b"%PDF-1.7\n".as_slice(), &[7u8; 1500]].concat();
//! let uri = format!("data:application/pdf;base64,{}", {
//!     use base64::Engine as _;
//!     base64::engine::general_purpose::STANDARD.encode(&pdf)
//! });
//! let mut v = serde_json::json!({"files": [{"name": "a.pdf", "body": uri}]});
//! let found = blob::find_blobs(&v, blob::DEFAULT_BLOB_THRESHOLD_BYTES);
//! assert_eq!(found[0].path_text, "$.files[0].body");
//! assert_eq!((found[0].mime.as_str(), found[0].decoded_bytes), ("application/pdf", 1509));
//!
//! blob::replace_blobs(&mut v, blob::DEFAULT_BLOB_THRESHOLD_BYTES, |b, _bytes| {
//!     serde_json::json!({"blob": "saved.pdf", "mime": b.mime, "bytes": b.decoded_bytes})
//! });
//! assert_eq!(v["files"][0]["body"]["bytes"], 1509);
//! ```

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD, URL_SAFE};
use base64::engine::{DecodePaddingMode, general_purpose};
use serde_json::Value;

/// The default threshold, in decoded bytes: strings that decode to more are blobs.
pub const DEFAULT_BLOB_THRESHOLD_BYTES: usize = 1024;

/// The MIME type reported when neither a `data:` header nor magic bytes name one.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// Values nested deeper than this are not searched (JSON parsed by `serde_json` stops at 128).
const MAX_DEPTH: usize = 512;

/// One step of a path from the root of a JSON value to a member of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// A member of an object, by key.
    Key(String),
    /// An element of an array, by 0-based index.
    Index(usize),
}

/// The JSONPath-like text of a path: `$`, `$.content[1].data`, `$["a key"][0]` (keys that are
/// not `[A-Za-z_][A-Za-z0-9_]*` are written as JSON strings in brackets).
pub fn path_text(path: &[PathStep]) -> String {
    let mut out = String::from("$");
    for step in path {
        match step {
            PathStep::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
            PathStep::Key(k) if is_identifier(k) => {
                out.push('.');
                out.push_str(k);
            }
            PathStep::Key(k) => {
                let quoted = serde_json::to_string(k).unwrap_or_else(|_| format!("{k:?}"));
                let _ = write!(out, "[{quoted}]");
            }
        }
    }
    out
}

fn is_identifier(k: &str) -> bool {
    let mut bytes = k.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// How a blob string is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlobEncoding {
    /// The whole string is base64 (standard or URL-safe alphabet).
    Base64,
    /// A `data:` URI with a `;base64` payload.
    DataUriBase64,
    /// A `data:` URI with a percent-encoded (or plain) payload.
    DataUriPercent,
}

/// A blob found inside a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRef {
    /// Where the string is, from the root of the searched value.
    pub path: Vec<PathStep>,
    /// [`path_text`] of `path`, e.g. `$.content[1].data`.
    pub path_text: String,
    /// How the string encodes its bytes.
    pub encoding: BlobEncoding,
    /// MIME type: from the `data:` header, else sniffed ([`sniff_mime`]), else
    /// [`OCTET_STREAM`]. Lower case, without parameters (`image/png`).
    pub mime: String,
    /// Length of the decoded bytes.
    pub decoded_bytes: usize,
    /// Length of the JSON string's text in UTF-8 bytes (what it costs unescaped).
    pub encoded_bytes: usize,
    /// Width and height in pixels, for PNG, GIF, JPEG and WebP images whose header says.
    pub pixels: Option<(u32, u32)>,
}

/// A string that is not a blob, or whose payload does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// Neither a `data:` URI nor a string of base64 by the rules of this module.
    #[error("not a base64 string or data: URI")]
    NotABlob,
    /// Looked like base64, but the `base64` crate refused it (the crate's error is the
    /// [`std::error::Error::source`], not part of the message, so a chain names it once).
    #[error("invalid base64")]
    Base64(#[from] base64::DecodeError),
}

/// A decoded blob string, before it is located in a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// How the string encoded its bytes.
    pub encoding: BlobEncoding,
    /// The MIME type named by a `data:` header, if any (lower case, no parameters).
    pub declared_mime: Option<String>,
    /// The decoded bytes.
    pub bytes: Vec<u8>,
}

impl Decoded {
    /// The MIME type to report: the declared one, else [`sniff_mime`] of the bytes.
    pub fn mime(&self) -> String {
        match &self.declared_mime {
            Some(m) => m.clone(),
            None => sniff_mime(&self.bytes).to_owned(),
        }
    }
}

/// Decodes `s` if it is a `data:` URI or a string of base64 by the [module rules](self),
/// whatever its size.
///
/// # Errors
/// [`BlobError::NotABlob`] when `s` is neither; [`BlobError::Base64`] when a `data:` URI's
/// or a base64-looking string's payload does not decode.
pub fn decode(s: &str) -> Result<Decoded, BlobError> {
    if let Some(rest) = strip_prefix_ignore_case(s, "data:") {
        return decode_data_uri(rest);
    }
    let engine = base64_engine(s).ok_or(BlobError::NotABlob)?;
    let bytes = if s.contains(['\r', '\n']) {
        let joined: String = s.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        engine.decode(joined)?
    } else {
        engine.decode(s)?
    };
    Ok(Decoded {
        encoding: BlobEncoding::Base64,
        declared_mime: None,
        bytes,
    })
}

/// Every blob in `value` that decodes to more than `threshold_bytes` bytes, in document
/// order (object members in key order, array elements by index). Keys are not searched.
pub fn find_blobs(value: &Value, threshold_bytes: usize) -> Vec<BlobRef> {
    let mut found = Vec::new();
    let mut path = Vec::new();
    walk(value, &mut path, &mut |path, s| {
        if let Some((blob, _)) = inspect(s, threshold_bytes, path) {
            found.push(blob);
        }
    });
    found
}

/// Replaces every blob in `value` that [`find_blobs`] would report by `f(&blob, &bytes)`,
/// where `bytes` are its decoded bytes; returns how many were replaced.
///
/// The proxy uses this to write each blob to a file and put a small description in its
/// place, e.g. `{"blob":"/tmp/x.png","mime":"image/png","bytes":9000,"pixels":[20,20]}`.
pub fn replace_blobs(
    value: &mut Value,
    threshold_bytes: usize,
    mut f: impl FnMut(&BlobRef, &[u8]) -> Value,
) -> usize {
    let mut path = Vec::new();
    let mut count = 0;
    walk_mut(value, &mut path, &mut |path, v| {
        let Value::String(s) = &*v else { return };
        if let Some((blob, bytes)) = inspect(s, threshold_bytes, path) {
            *v = f(&blob, &bytes);
            count += 1;
        }
    });
    count
}

/// The MIME type named by the magic bytes at the start of `bytes`: `image/png`, `image/jpeg`,
/// `image/gif`, `image/webp`, `application/pdf`, `application/gzip`, `application/zip`, else
/// [`OCTET_STREAM`].
pub fn sniff_mime(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "image/jpeg"
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        "image/gif"
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        "image/webp"
    } else if bytes.starts_with(b"%PDF-") {
        "application/pdf"
    } else if bytes.starts_with(&[0x1F, 0x8B]) {
        "application/gzip"
    } else if bytes.starts_with(b"PK\x03\x04")
        || bytes.starts_with(b"PK\x05\x06")
        || bytes.starts_with(b"PK\x07\x08")
    {
        "application/zip"
    } else {
        OCTET_STREAM
    }
}

/// Width and height in pixels from the header of a PNG, GIF, JPEG or WebP image; `None` for
/// other bytes or a header too short to say.
pub fn image_pixels(bytes: &[u8]) -> Option<(u32, u32)> {
    let be32 = |i: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(i..i + 4)?.try_into().ok()?))
    };
    let le16 = |i: usize| -> Option<u32> {
        Some(u32::from(u16::from_le_bytes(
            bytes.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    match sniff_mime(bytes) {
        // The IHDR chunk is first: width and height at bytes 16..24.
        "image/png" if bytes.get(12..16) == Some(b"IHDR") => Some((be32(16)?, be32(20)?)),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/jpeg" => jpeg_pixels(bytes),
        "image/webp" => webp_pixels(bytes),
        _ => None,
    }
}

/// Scans JPEG markers for a start-of-frame (SOF0..SOF15 but DHT, JPG, DAC).
fn jpeg_pixels(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| -> Option<u32> {
        Some(u32::from(u16::from_be_bytes(
            bytes.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    let mut i = 2;
    while i + 4 <= bytes.len() {
        if bytes[i] != 0xFF {
            return None;
        }
        let marker = bytes[i + 1];
        if marker == 0xFF {
            i += 1;
            continue;
        }
        let len = usize::try_from(be16(i + 2)?).ok()?;
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            return Some((be16(i + 7)?, be16(i + 5)?));
        }
        i += 2 + len;
    }
    None
}

/// Reads a WebP header: `VP8X` (extended), `VP8 ` (lossy) or `VP8L` (lossless).
fn webp_pixels(bytes: &[u8]) -> Option<(u32, u32)> {
    let b = |i: usize| -> Option<u32> { bytes.get(i).copied().map(u32::from) };
    match bytes.get(12..16)? {
        b"VP8X" => {
            let w = 1 + (b(24)? | b(25)? << 8 | b(26)? << 16);
            let h = 1 + (b(27)? | b(28)? << 8 | b(29)? << 16);
            Some((w, h))
        }
        b"VP8 " => {
            let w = (b(26)? | b(27)? << 8) & 0x3FFF;
            let h = (b(28)? | b(29)? << 8) & 0x3FFF;
            Some((w, h))
        }
        b"VP8L" => {
            let bits = b(21)? | b(22)? << 8 | b(23)? << 16 | b(24)? << 24;
            Some((1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)))
        }
        _ => None,
    }
}

/// The blob report and bytes of `s` at `path` when it is a blob over `threshold_bytes`.
fn inspect(s: &str, threshold_bytes: usize, path: &[PathStep]) -> Option<(BlobRef, Vec<u8>)> {
    // Neither base64 nor percent-decoding makes bytes out of nothing: decoded <= encoded.
    if s.len() <= threshold_bytes {
        return None;
    }
    let decoded = decode(s).ok()?;
    if decoded.bytes.len() <= threshold_bytes {
        return None;
    }
    let blob = BlobRef {
        path: path.to_vec(),
        path_text: path_text(path),
        encoding: decoded.encoding,
        mime: decoded.mime(),
        decoded_bytes: decoded.bytes.len(),
        encoded_bytes: s.len(),
        pixels: image_pixels(&decoded.bytes),
    };
    Some((blob, decoded.bytes))
}

/// The strict engine for a whole-string base64 candidate, or `None` when `s` breaks a rule.
fn base64_engine(s: &str) -> Option<&'static GeneralPurpose> {
    let (mut upper, mut lower, mut digit, mut standard, mut url_safe) =
        (false, false, false, false, false);
    let mut hex_only = true;
    let mut len = 0usize;
    let mut padding = 0usize;
    for b in s.bytes() {
        match b {
            b'\r' | b'\n' => continue,
            b'=' => padding += 1,
            _ if padding > 0 => return None,
            b'A'..=b'Z' => upper = true,
            b'a'..=b'z' => lower = true,
            b'0'..=b'9' => digit = true,
            b'+' | b'/' => standard = true,
            b'-' | b'_' => url_safe = true,
            _ => return None,
        }
        hex_only &= b.is_ascii_hexdigit() || b == b'=';
        len += 1;
    }
    let shaped = len > 0 && len.is_multiple_of(4) && padding <= 2;
    if !(shaped && upper && lower && digit) || hex_only || (standard && url_safe) {
        return None;
    }
    Some(if url_safe { &URL_SAFE } else { &STANDARD })
}

/// Base64 inside `data:` URIs: padding optional (browsers accept both).
const DATA_URI_STANDARD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
const DATA_URI_URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    general_purpose::NO_PAD.with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes what follows `data:`.
fn decode_data_uri(rest: &str) -> Result<Decoded, BlobError> {
    let (header, payload) = rest.split_once(',').ok_or(BlobError::NotABlob)?;
    // `data: 1, 2, 3` is prose, not a URI: the header is a media type, parameters and tokens.
    let header_ok = header
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-/;=".contains(&b));
    if !header_ok {
        return Err(BlobError::NotABlob);
    }
    let mut params = header.split(';');
    let media = params.next().unwrap_or("").trim().to_ascii_lowercase();
    let is_base64 = header
        .rsplit(';')
        .next()
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("base64"))
        && header.contains(';');
    let declared_mime = (!media.is_empty() && media.contains('/')).then_some(media);
    if !is_base64 {
        // A URI has no raw spaces or control characters.
        if payload
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(BlobError::NotABlob);
        }
        return Ok(Decoded {
            encoding: BlobEncoding::DataUriPercent,
            declared_mime: declared_mime.or_else(|| Some("text/plain".to_owned())),
            bytes: percent_decode(payload),
        });
    }
    let payload = percent_decode(payload);
    let compact: Vec<u8> = payload
        .into_iter()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let engine = if compact.iter().any(|b| matches!(b, b'-' | b'_')) {
        &DATA_URI_URL_SAFE
    } else {
        &DATA_URI_STANDARD
    };
    Ok(Decoded {
        encoding: BlobEncoding::DataUriBase64,
        declared_mime,
        bytes: engine.decode(compact)?,
    })
}

/// `%XX` escapes decoded; anything else (including a malformed `%`) kept as it is.
fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| bytes.get(j).and_then(|&b| (b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'%'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Calls `visit` with the path of every string in `value`, in document order.
fn walk(value: &Value, path: &mut Vec<PathStep>, visit: &mut impl FnMut(&[PathStep], &str)) {
    match value {
        Value::String(s) => visit(path, s),
        Value::Array(items) if path.len() < MAX_DEPTH => {
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::Index(i));
                walk(item, path, visit);
                path.pop();
            }
        }
        Value::Object(map) if path.len() < MAX_DEPTH => {
            for (k, item) in map {
                path.push(PathStep::Key(k.clone()));
                walk(item, path, visit);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Calls `visit` with the path of every string value in `value`, mutably, in document order.
fn walk_mut(
    value: &mut Value,
    path: &mut Vec<PathStep>,
    visit: &mut impl FnMut(&[PathStep], &mut Value),
) {
    match value {
        Value::String(_) => visit(path, value),
        Value::Array(items) if path.len() < MAX_DEPTH => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(PathStep::Index(i));
                walk_mut(item, path, visit);
                path.pop();
            }
        }
        Value::Object(map) if path.len() < MAX_DEPTH => {
            for (k, item) in map.iter_mut() {
                path.push(PathStep::Key(k.clone()));
                walk_mut(item, path, visit);
                path.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_text_quotes_odd_keys() {
        let path = vec![
            PathStep::Key("content".into()),
            PathStep::Index(1),
            PathStep::Key("a b".into()),
            PathStep::Key("_x9".into()),
        ];
        assert_eq!(path_text(&path), r#"$.content[1]["a b"]._x9"#);
        assert_eq!(path_text(&[]), "$");
    }

    #[test]
    fn hex_and_text_are_not_base64() {
        assert!(base64_engine(&"3f2b8c1e9a4d4e7b".repeat(100)).is_none());
        assert!(base64_engine(&"3F2B8C1E9A4D4E7B".repeat(100)).is_none());
        assert!(base64_engine(&"hello world ".repeat(100)).is_none());
        assert!(base64_engine(&"abcdEFGH".repeat(100)).is_none());
        assert!(base64_engine("").is_none());
        assert!(base64_engine("aB3=aB3=").is_none());
    }

    #[test]
    fn sniffs_magic_bytes() {
        assert_eq!(sniff_mime(b"%PDF-1.7"), "application/pdf");
        assert_eq!(sniff_mime(&[0x1F, 0x8B, 8]), "application/gzip");
        assert_eq!(sniff_mime(b"PK\x03\x04rest"), "application/zip");
        assert_eq!(sniff_mime(b"RIFF\0\0\0\0WEBPVP8 "), "image/webp");
        assert_eq!(sniff_mime(b"GIF89a"), "image/gif");
        assert_eq!(sniff_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), "image/jpeg");
        assert_eq!(sniff_mime(b"plain"), OCTET_STREAM);
        assert_eq!(sniff_mime(b""), OCTET_STREAM);
    }

    #[test]
    fn gif_and_jpeg_pixels() {
        let gif = b"GIF89a\x20\x00\x10\x00rest";
        assert_eq!(image_pixels(gif), Some((32, 16)));
        // SOI, APP0 of length 4, SOF0: length 17, precision 8, height 0x0102, width 0x0304.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01,
            0x02, 0x03, 0x04,
        ];
        assert_eq!(image_pixels(&jpeg), Some((0x0304, 0x0102)));
        assert_eq!(image_pixels(&jpeg[..10]), None);
    }

    #[test]
    fn percent_decoding_keeps_malformed_escapes() {
        assert_eq!(percent_decode("a%20b%2"), b"a b%2");
        assert_eq!(percent_decode("%zz%41"), b"%zzA");
    }
}
