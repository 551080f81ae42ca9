//! Errors of loading settings.

use std::path::PathBuf;

/// Errors of loading settings.
///
/// The operating system's error is the [`std::error::Error::source`] of [`ConfigError::Read`]
/// and [`ConfigError::Log`], not part of their message, so a report that prints the chain
/// (`{:#}` of anyhow, as the binary does) names it once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (the error's source).
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for this schema.
    #[error("bad config file {path}: {message}")]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A `transform` is not a valid jq filter.
    #[error("bad transform for tool {tool:?}: {message}")]
    Transform {
        /// The tool whose rule it is.
        tool: String,
        /// The jq error.
        message: String,
    },
    /// The telemetry log could not be opened for appending.
    #[error("cannot open telemetry log {}", path.display())]
    Log {
        /// The file.
        path: PathBuf,
        /// Why (the error's source).
        #[source]
        source: std::io::Error,
    },
    /// The shared response store (`--store`) cannot be used.
    #[error("response store: {message}")]
    Store {
        /// What failed (the URL's credentials never appear).
        message: String,
    },
}
