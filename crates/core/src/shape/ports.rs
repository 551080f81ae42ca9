//! What a caller of the shaping stages supplies: the ports through which they reach what is
//! not pure. Each is a trait; `mcp-budget-engine` implements them (its jq worker pool, its
//! in-process runner) and so may any program that drives the stages.
//!
//! - [`JqRunner`]: runs a `query_response` filter (jq, from the model) on a cached
//!   response. The filter is untrusted: a runner bounds its time and memory and reaches
//!   nothing outside the value.
//!
//! The cached response itself is read through [`super::walk::Cached`].

use std::fmt;

use serde_json::Value;

/// Runs jq filters for `query_response`.
///
/// `Send + Sync`: one runner serves every concurrent call of a boundary.
///
/// ```
/// use mcp_budget_core::shape::ports::{JqFailure, JqRunner};
/// use serde_json::Value;
///
/// /// Knows one filter: `.` (the identity).
/// #[derive(Debug)]
/// struct IdentityOnly;
///
/// impl JqRunner for IdentityOnly {
///     fn run(&self, filter: &str, input: &str) -> Result<Vec<Value>, JqFailure> {
///         if filter.trim() != "." {
///             return Err(JqFailure::new(format!("only `.` is supported, not {filter:?}")));
///         }
///         serde_json::from_str(input)
///             .map(|v| vec![v])
///             .map_err(|e| JqFailure::new(format!("input is not JSON: {e}")))
///     }
/// }
///
/// assert_eq!(IdentityOnly.run(".", "[1,2]").unwrap(), vec![serde_json::json!([1, 2])]);
/// assert!(IdentityOnly.run(".[0]", "[1]").is_err());
/// ```
pub trait JqRunner: Send + Sync + fmt::Debug {
    /// Every output of `filter` (jq syntax) run on `input` (one JSON text), in order.
    ///
    /// # Errors
    /// [`JqFailure`] for every way the run fails (syntax, runtime, deadline, resources):
    /// its message goes to the model as `query_failed`'s, so it says what to do.
    fn run(&self, filter: &str, input: &str) -> Result<Vec<Value>, JqFailure>;
}

/// Why a [`JqRunner`] gave no outputs: one sentence for the model (the text of
/// `{"error":"query_failed",…}`), never the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JqFailure {
    message: String,
}

impl JqFailure {
    /// A failure whose text the model reads.
    pub fn new(message: impl Into<String>) -> JqFailure {
        JqFailure {
            message: message.into(),
        }
    }

    /// The text the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }
}
