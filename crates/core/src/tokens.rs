//! Exact token accounting with a real BPE tokenizer.
//!
//! Every budget check in mcp-budget goes through [`Encoding`]. Counts are in **tokens** of the
//! chosen encoding; `chars4` and `bytes` exist so reports can show how far the usual estimates
//! are off, not to shape by.
//!
//! A fact worth knowing before you add counts up: BPE counts are not additive. Appending text
//! to a string can *lower* its count (the last token of the prefix merges with the suffix), so
//! the count of `a + b` is not `count(a) + count(b)`. Shaping therefore always counts the exact
//! text it emits, never a sum of parts.

use std::fmt;
use std::str::FromStr;

mod memo;
mod split;
#[cfg(feature = "hf-tokenizer")]
use std::sync::Arc;

/// A tokenizer that counts tokens of text.
///
/// Names accepted by [`FromStr`]: `cl100k_base` (the default), `o200k_base`, `chars4`,
/// `bytes`, or a path to a HuggingFace `tokenizer.json` (with the `hf-tokenizer` feature).
#[derive(Clone, Default)]
pub enum Encoding {
    /// OpenAI `cl100k_base` (GPT-4, GPT-3.5), by `bpe-openai`.
    #[default]
    Cl100kBase,
    /// OpenAI `o200k_base` (GPT-4o, o1, o3), by `bpe-openai`.
    O200kBase,
    /// `ceil(chars / 4)`, the common estimate: kept only to report how wrong it is.
    Chars4,
    /// One token per UTF-8 byte: an upper bound of every BPE count.
    Bytes,
    /// A HuggingFace `tokenizer.json` (feature `hf-tokenizer`), loaded from a path by
    /// [`FromStr`] or from bytes by [`Encoding::from_tokenizer_json`].
    #[cfg(feature = "hf-tokenizer")]
    HuggingFace(Arc<HfTokenizer>),
}

impl fmt::Debug for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An encoding name that could not be turned into an [`Encoding`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodingError {
    /// The name is neither a known encoding nor a readable `tokenizer.json` path.
    #[error(
        "unknown encoding {0:?}: expected cl100k_base, o200k_base, chars4, bytes or a path to a tokenizer.json"
    )]
    Unknown(String),
    /// The name is a path to a file, but this build cannot load `tokenizer.json` files.
    #[error(
        "{0:?} is a file, but loading a tokenizer.json needs mcp-budget built with the cargo feature `hf-tokenizer` (it is off)"
    )]
    HfFeatureOff(String),
    /// The `tokenizer.json` could not be read or parsed.
    #[error("cannot load tokenizer {name:?}: {reason}")]
    HfLoad {
        /// The path or name given.
        name: String,
        /// What went wrong, from the file system or the `tokenizers` crate.
        reason: String,
    },
}

impl FromStr for Encoding {
    type Err = EncodingError;

    /// A known name, else a path to a `tokenizer.json` file (read here: the one place the core
    /// touches the file system, so that `--encoding <path>` works everywhere).
    ///
    /// # Errors
    /// [`EncodingError::Unknown`] when `s` names no encoding and no file;
    /// [`EncodingError::HfFeatureOff`] when it is a file but the `hf-tokenizer` feature is off;
    /// [`EncodingError::HfLoad`] when the file cannot be read or is not a valid tokenizer.json.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cl100k_base" | "cl100k" => Ok(Encoding::Cl100kBase),
            "o200k_base" | "o200k" => Ok(Encoding::O200kBase),
            "chars4" => Ok(Encoding::Chars4),
            "bytes" => Ok(Encoding::Bytes),
            path if std::path::Path::new(path).is_file() => load_tokenizer_file(path),
            other => Err(EncodingError::Unknown(other.to_owned())),
        }
    }
}

#[cfg(not(feature = "hf-tokenizer"))]
fn load_tokenizer_file(path: &str) -> Result<Encoding, EncodingError> {
    Err(EncodingError::HfFeatureOff(path.to_owned()))
}

#[cfg(feature = "hf-tokenizer")]
fn load_tokenizer_file(path: &str) -> Result<Encoding, EncodingError> {
    let bytes = std::fs::read(path).map_err(|e| EncodingError::HfLoad {
        name: path.to_owned(),
        reason: e.to_string(),
    })?;
    Encoding::from_tokenizer_json(path, &bytes)
}

/// A HuggingFace tokenizer and the name it was loaded under (feature `hf-tokenizer`).
///
/// Truncation and padding stored in the `tokenizer.json` are switched off at load time (a
/// `max_length` of 512 would otherwise cap every count at 512), and counts never include the
/// special tokens a model adds around a sequence (BOS/EOS): a tool result is text inside a
/// conversation, not a sequence of its own.
#[cfg(feature = "hf-tokenizer")]
pub struct HfTokenizer {
    name: String,
    tokenizer: tokenizers::Tokenizer,
}

#[cfg(feature = "hf-tokenizer")]
impl HfTokenizer {
    /// The name (usually the path) it was loaded under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The underlying `tokenizers` tokenizer.
    pub fn tokenizer(&self) -> &tokenizers::Tokenizer {
        &self.tokenizer
    }

    /// Tokens of `text`, without added special tokens.
    ///
    /// If the tokenizer fails on the text (for example a WordLevel model with no unknown token
    /// meets an unknown word), the count falls back to the UTF-8 byte length, a conservative
    /// figure for budgets.
    fn count(&self, text: &str) -> usize {
        match self.tokenizer.encode_fast(text, false) {
            Ok(encoding) => encoding.len(),
            Err(_) => text.len(),
        }
    }
}

#[cfg(feature = "hf-tokenizer")]
impl fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Encoding {
    /// A HuggingFace tokenizer from the bytes of a `tokenizer.json`; `name` is what
    /// [`Encoding::name`] reports (usually the path). Pure: no I/O, never a download.
    ///
    /// # Errors
    /// [`EncodingError::HfLoad`] when `json` is not a valid tokenizer.json.
    #[cfg(feature = "hf-tokenizer")]
    pub fn from_tokenizer_json(name: &str, json: &[u8]) -> Result<Encoding, EncodingError> {
        let load_error = |reason: String| EncodingError::HfLoad {
            name: name.to_owned(),
            reason,
        };
        let mut tokenizer =
            tokenizers::Tokenizer::from_bytes(json).map_err(|e| load_error(e.to_string()))?;
        tokenizer
            .with_truncation(None)
            .map_err(|e| load_error(e.to_string()))?;
        tokenizer.with_padding(None);
        Ok(Encoding::HuggingFace(Arc::new(HfTokenizer {
            name: name.to_owned(),
            tokenizer,
        })))
    }

    /// The name this encoding is selected by (`cl100k_base`, `o200k_base`, `chars4`, `bytes`,
    /// or the path of a HuggingFace tokenizer).
    pub fn name(&self) -> &str {
        match self {
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::O200kBase => "o200k_base",
            Encoding::Chars4 => "chars4",
            Encoding::Bytes => "bytes",
            #[cfg(feature = "hf-tokenizer")]
            Encoding::HuggingFace(hf) => hf.name(),
        }
    }

    /// Whether every token covers at least one UTF-8 byte of the text, so that a text of at
    /// most N bytes has at most N tokens. True of the OpenAI BPE encodings (byte-level BPE) and
    /// of `bytes`/`chars4`; not promised for a HuggingFace tokenizer, whose normalizer may
    /// expand the text (NFKC turns one 3-byte `㍿` into four characters).
    pub fn bytes_bound_tokens(&self) -> bool {
        match self {
            Encoding::Cl100kBase | Encoding::O200kBase | Encoding::Chars4 | Encoding::Bytes => true,
            #[cfg(feature = "hf-tokenizer")]
            Encoding::HuggingFace(_) => false,
        }
    }

    /// Whether the count of `text` is the count of `text[..at]` plus the count of
    /// `text[at..]` (tokens; `at` a byte offset), for this encoding: then a long text can be
    /// counted once by segments and any prefix ending past `at` recounted only from `at`.
    ///
    /// True for the OpenAI encodings at two kinds of points, where BPE (which runs inside each
    /// pre-tokenizer piece) sees the same pieces as in the whole text because no piece of the
    /// tiktoken split crosses them (`tests/tokens_additive.rs` checks both rules against the
    /// library on random texts):
    /// - a line start (`at` right after a `\n`) whose line begins with a character that is not
    ///   whitespace and not `/`, or with whitespace other than line breaks (spaces, tabs,
    ///   NBSP …) followed by such a character: the only pieces that take in a `\n` are
    ///   whitespace runs ending in newlines, punctuation followed by newlines or, in
    ///   `o200k_base`, by `/`, and a trailing whitespace run;
    /// - a `"` right after an ASCII letter or digit (in compact JSON, the end of most keys and
    ///   string values): a piece holding a letter or digit holds no punctuation after it but a
    ///   contraction's `'`, and a piece that starts with punctuation holds no letter or digit
    ///   before it.
    ///
    /// False for every other encoding (`chars4` rounds up, a HuggingFace tokenizer promises
    /// nothing) and every other position.
    pub fn additive_at(&self, text: &str, at: usize) -> bool {
        if !matches!(self, Encoding::Cl100kBase | Encoding::O200kBase) {
            return false;
        }
        let bytes = text.as_bytes();
        if at == 0 || at >= bytes.len() {
            return false;
        }
        if bytes[at] == b'"' && bytes[at - 1].is_ascii_alphanumeric() {
            return true;
        }
        if bytes[at - 1] != b'\n' {
            return false;
        }
        for c in text[at..].chars() {
            match c {
                '\r' | '\n' => return false,
                c if c.is_whitespace() => continue,
                '/' => return false,
                _ => return true,
            }
        }
        false
    }

    /// The number of tokens of `text` in this encoding.
    ///
    /// The OpenAI encodings count through a per-thread memo of pre-tokenizer pieces (see
    /// `tokens/memo.rs`): exactly `bpe_openai`'s count, computed once per distinct piece.
    pub fn count(&self, text: &str) -> usize {
        match self {
            Encoding::Cl100kBase => {
                memo::count(bpe_openai::cl100k_base(), memo::Which::Cl100k, text)
            }
            Encoding::O200kBase => memo::count(bpe_openai::o200k_base(), memo::Which::O200k, text),
            Encoding::Chars4 => text.chars().count().div_ceil(4),
            Encoding::Bytes => text.len(),
            #[cfg(feature = "hf-tokenizer")]
            Encoding::HuggingFace(hf) => hf.count(text),
        }
    }

    /// The number of tokens of `text` if it is at most `limit`, else `None`.
    ///
    /// Cheaper than [`Encoding::count`] on long texts: a text of at most `limit` bytes is
    /// counted normally (it cannot exceed `limit` tokens in any BPE encoding: every token is at
    /// least one byte), and a longer one stops early once the limit is passed. A HuggingFace
    /// tokenizer has no early exit: it counts the whole text.
    pub fn count_till_limit(&self, text: &str, limit: usize) -> Option<usize> {
        self.count_till_limit_sampled(text, limit).ok()
    }

    /// [`Encoding::count_till_limit`] that says, when `text` is over `limit`, how far it got:
    /// `Err((tokens, bytes))`: the tokens of the pre-tokenizer pieces counted before the one that
    /// went past the limit, and the bytes they cover (a sample for an estimate of the whole at no
    /// extra cost; `(0, 0)` when nothing was counted before the limit was passed; for the
    /// encodings without an early exit, the whole text).
    ///
    /// # Errors
    /// `Err` exactly when the count of `text` is over `limit`.
    pub fn count_till_limit_sampled(
        &self,
        text: &str,
        limit: usize,
    ) -> Result<usize, (usize, usize)> {
        match self {
            Encoding::Cl100kBase => {
                memo::count_till_limit(bpe_openai::cl100k_base(), memo::Which::Cl100k, text, limit)
            }
            Encoding::O200kBase => {
                memo::count_till_limit(bpe_openai::o200k_base(), memo::Which::O200k, text, limit)
            }
            _ => {
                let n = self.count(text);
                if n <= limit {
                    Ok(n)
                } else {
                    Err((n, text.len()))
                }
            }
        }
    }

    /// Whether `text` is at most `limit` tokens. Texts of at most `limit` bytes fit without
    /// being tokenized (when [`Encoding::bytes_bound_tokens`]).
    pub fn fits(&self, text: &str, limit: usize) -> bool {
        (text.len() <= limit && self.bytes_bound_tokens())
            || self.count_till_limit(text, limit).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors from issue 2 (cl100k_base / o200k_base).
    const VECTORS: &[(&str, usize, usize)] = &[
        ("Hello, world!", 4, 4),
        (
            r#"{"id":12,"name":"Island","parentId":null,"layer":"3d","traits":["Transform","Renderable3D","ModelSource"]}"#,
            31,
            31,
        ),
        (r#"{"x":247.13061935179246,"y":679.0625}"#, 18, 18),
        (r#"{"x":247.130619,"y":679.0625}"#, 15, 15),
        ("Résumé — naïve café 東京 🚀", 13, 8),
        ("3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d", 36, 36),
    ];

    #[test]
    fn fixed_vectors_hold() {
        for &(text, cl, o2) in VECTORS {
            assert_eq!(Encoding::Cl100kBase.count(text), cl, "cl100k_base {text:?}");
            assert_eq!(Encoding::O200kBase.count(text), o2, "o200k_base {text:?}");
        }
    }

    #[test]
    fn count_till_limit_agrees_with_count() {
        for &(text, cl, _) in VECTORS {
            let e = Encoding::Cl100kBase;
            assert_eq!(e.count_till_limit(text, cl), Some(cl));
            assert_eq!(e.count_till_limit(text, cl - 1), None);
            // Over the limit: how far the count got (the pieces before the one past it).
            let (t, b) = e.count_till_limit_sampled(text, cl - 1).unwrap_err();
            assert!(t < cl && b < text.len() && (t == 0) == (b == 0), "{text:?}");
            assert!(e.fits(text, cl));
            assert!(!e.fits(text, cl - 1));
        }
    }

    #[test]
    fn estimates() {
        assert_eq!(Encoding::Chars4.count("東京🚀x"), 1);
        assert_eq!(Encoding::Chars4.count("abcde"), 2);
        assert_eq!(Encoding::Bytes.count("東"), 3);
    }

    #[test]
    fn names_round_trip() {
        for name in ["cl100k_base", "o200k_base", "chars4", "bytes"] {
            assert_eq!(name.parse::<Encoding>().unwrap().name(), name);
        }
        assert!("nope".parse::<Encoding>().is_err());
    }
}
