//! Why an input could not be measured.

/// Why an input could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The bytes are not UTF-8; `valid_up_to` is the byte offset of the first bad sequence.
    #[error("invalid UTF-8 at byte {valid_up_to}")]
    InvalidUtf8 {
        /// Byte offset of the first invalid sequence.
        valid_up_to: usize,
    },
    /// The input had to be JSON (a `.json` file) and is not.
    #[error("invalid JSON: {message}")]
    InvalidJson {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's message (it names line and column).
        message: String,
    },
    /// No encoding was given.
    #[error("no encoding to measure with")]
    NoEncoding,
}
