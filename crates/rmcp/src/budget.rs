//! [`Budget`]: the layer's settings, and what wraps a server.

use std::sync::Arc;

use mcp_budget_core::shape::ports::JqRunner;
use mcp_budget_engine::boundary::Boundary;
use mcp_budget_engine::config::Settings;
use rmcp::{RoleServer, Service};

use crate::error::Error;
use crate::service::Budgeted;

/// The token budget and the rest of the shaping settings; [`Budget::wrap`] puts them in
/// front of a server.
///
/// Defaults (those of `mcp-budget proxy`): 10,000 tokens (cl100k_base) per `tools/call`
/// result, as the `generic` client profile counts them (the worst of the known clients'
/// renderings: content items, structuredContent alone, 40,000 chars at most), floats rounded to 9 significant digits, responses cached in memory (256 MiB, one
/// hour after their last use; least recently used content spilled to files in the system
/// temp dir), base64 payloads over 1,024 decoded bytes written to files in
/// `<temp dir>/mcp-budget-blobs`, jq workers started as [`crate::jq_worker_command`] says.
///
/// ```
/// let budget = mcp_budget_rmcp::Budget::new().max_tokens(5_000).precision(6);
/// # let _ = budget;
/// ```
#[derive(Debug, Clone)]
pub struct Budget {
    settings: Settings,
    /// Runs `query_response` filters; `None`: the worker pool of `settings.jq_worker`.
    jq: Option<Arc<dyn JqRunner>>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new()
    }
}

impl Budget {
    /// The defaults above.
    pub fn new() -> Budget {
        Budget::from_settings(Settings {
            jq_worker: crate::worker::jq_worker_command(),
            // The `generic` client profile, as `mcp-budget proxy` without `--client`: within
            // the budget and the caps of every known client's rendering (Settings::default's
            // `wire` counts only the wire's parts).
            client: None,
            ..Settings::default()
        })
    }

    /// Every setting of `mcp-budget proxy` (`--config` rules per tool, `--encoding`,
    /// `--client`, telemetry …), as [`Settings`] holds them, but the shared Redis store: this
    /// layer keeps its pages in memory, and [`Budget::wrap`] refuses a `store_url`. Its
    /// [`Settings::jq_worker`] is used as it is: set it to [`crate::jq_worker_command`] (what
    /// [`Budget::new`] does) for this server's own executable.
    pub fn from_settings(settings: Settings) -> Budget {
        Budget { settings, jq: None }
    }

    /// The budget of one `tools/call` result, in tokens of the encoding in force (cl100k_base
    /// by default): what the model sees of each result, the meta item included. Values under
    /// the engine's floor, 256 tokens, are raised to it. 10,000
    /// by default.
    pub fn max_tokens(mut self, tokens: usize) -> Budget {
        self.settings.max_tokens = Some(tokens);
        self
    }

    /// Significant digits floats are rounded to; 0 keeps them exact. 9 by default.
    pub fn precision(mut self, digits: u32) -> Budget {
        self.settings.precision = Some(digits);
        self
    }

    /// Runs `query_response` filters with `runner` instead of jq worker processes
    /// ([`crate::jq_worker_command`]): [`crate::InProcessJq`] for a server that cannot start
    /// processes or would rather not call [`crate::run_jq_worker_if_asked`] (no memory bound
    /// then; a deadline of 10 s), or a runner of the server's own ([`JqRunner`]). Worker
    /// processes by default.
    pub fn jq(mut self, runner: Arc<dyn JqRunner>) -> Budget {
        self.jq = Some(runner);
        self
    }

    /// The settings as they stand.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `inner` behind the budget: every `tools/call` result shaped, `read_more` and
    /// `query_response` added to `tools/list` and answered from the in-memory store, every
    /// other request and notification passed to `inner` as it is.
    ///
    /// Build it before the server starts many threads of its own: the engine caps glibc's
    /// malloc arenas when it is built, so that memory the cache frees goes back to the system.
    ///
    /// # Errors
    /// [`Error::Settings`] when a config file ([`Settings::config_path`]) cannot be read or
    /// parsed, a `transform` rule is not a valid jq filter, the telemetry log cannot be
    /// opened, or a shared store is asked for (the engine is built here without its `redis`
    /// feature: "this build has no shared store").
    pub fn wrap<S: Service<RoleServer>>(self, inner: S) -> Result<Budgeted<S>, Error> {
        let mut boundary = Boundary::new(self.settings)?;
        if let Some(runner) = self.jq {
            boundary = boundary.with_jq(runner);
        }
        Ok(Budgeted::from_parts(inner, boundary))
    }
}
