//! The tokenizer implementations the benchmarks compare, behind one `count`.
//!
//! - `bpe-openai`: what mcp-budget ships, called through [`mcp_budget_core::tokens::Encoding`]
//!   (so the numbers include our wrapper).
//! - `tiktoken-rs`: the Rust port of OpenAI's tiktoken (fancy-regex pre-tokenizer, linear-scan
//!   merge); counts are `encode_ordinary(text).len()`.
//! - `tiktoken` (goliajp/rust-tiktoken): hand-written pre-tokenizer and a thread-local cache of
//!   whole pieces. The cache makes a benchmark that counts the same text again and again look
//!   faster than a proxy that counts fresh text; read its numbers with that in mind.

use std::fmt;

use mcp_budget_core::tokens::Encoding;

/// Which implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// `bpe-openai` via `mcp_budget_core::tokens::Encoding`.
    BpeOpenai,
    /// `tiktoken-rs`.
    TiktokenRs,
    /// The `tiktoken` crate.
    Tiktoken,
}

impl Implementation {
    /// All of them, in report order.
    pub const ALL: [Implementation; 3] = [
        Implementation::BpeOpenai,
        Implementation::TiktokenRs,
        Implementation::Tiktoken,
    ];

    /// The crate name.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::BpeOpenai => "bpe-openai",
            Implementation::TiktokenRs => "tiktoken-rs",
            Implementation::Tiktoken => "tiktoken",
        }
    }
}

/// Which vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocab {
    /// `cl100k_base`.
    Cl100k,
    /// `o200k_base`.
    O200k,
}

impl Vocab {
    /// Both, in report order.
    pub const ALL: [Vocab; 2] = [Vocab::Cl100k, Vocab::O200k];

    /// The encoding name (`cl100k_base`, `o200k_base`).
    pub fn name(self) -> &'static str {
        match self {
            Vocab::Cl100k => "cl100k_base",
            Vocab::O200k => "o200k_base",
        }
    }
}

/// One implementation with one vocabulary. Constructing it loads nothing: the first
/// [`Backend::count`] does (every implementation loads lazily), which is what the
/// `tokenizer_probe` binary times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    /// Which implementation.
    pub implementation: Implementation,
    /// Which vocabulary.
    pub vocab: Vocab,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.implementation.name(), self.vocab.name())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    /// `<implementation>/<vocab>`, e.g. `tiktoken-rs/o200k_base`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Backend::all()
            .find(|b| b.to_string() == s)
            .ok_or_else(|| format!("unknown backend {s:?}"))
    }
}

impl Backend {
    /// Every implementation with every vocabulary.
    pub fn all() -> impl Iterator<Item = Backend> {
        Implementation::ALL.into_iter().flat_map(|implementation| {
            Vocab::ALL.into_iter().map(move |vocab| Backend {
                implementation,
                vocab,
            })
        })
    }

    /// Tokens of `text` (special-token spellings count as ordinary text). May panic or take
    /// quadratic time in `tiktoken-rs` on long runs of one character class.
    pub fn count(&self, text: &str) -> usize {
        match (self.implementation, self.vocab) {
            (Implementation::BpeOpenai, Vocab::Cl100k) => Encoding::Cl100kBase.count(text),
            (Implementation::BpeOpenai, Vocab::O200k) => Encoding::O200kBase.count(text),
            (Implementation::TiktokenRs, Vocab::Cl100k) => tiktoken_rs::cl100k_base_singleton()
                .encode_ordinary(text)
                .len(),
            (Implementation::TiktokenRs, Vocab::O200k) => tiktoken_rs::o200k_base_singleton()
                .encode_ordinary(text)
                .len(),
            (Implementation::Tiktoken, vocab) => match tiktoken::get_encoding(vocab.name()) {
                Some(enc) => enc.count(text),
                None => unreachable!("both vocab features are enabled in Cargo.toml"),
            },
        }
    }
}

/// Peak and current resident memory of this process in KiB, from `/proc/self/status`
/// (`VmHWM`, `VmRSS`); `None` where that file does not exist.
pub fn memory_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}
