//! [`Boundary`]'s state and how it is built: settings, encoding, the response store, blobs,
//! telemetry, the jq runner, what `tools/list` told. The stages borrow it; this module
//! imports none of them (the methods that drive the stages are in [`super`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use mcp_budget_core::tokens::Encoding;
use serde_json::{Value, json};

use super::blobs::BlobSink;
use super::store;
use super::store::responses::{ResponseStore, StoreHandle};
use crate::config::{ConfigError, Settings};
use crate::telemetry::Telemetry;
use mcp_budget_core::shape::model::{Catalog, ToolNames};
use mcp_budget_core::shape::ports::JqRunner;
use mcp_budget_core::shape::uuids::UuidMemory;

/// What `tools/list` told about the upstream tools.
#[derive(Debug, Default)]
pub(super) struct ToolState {
    /// Tool name → its outputSchema (`None`: it declares none).
    pub(super) schemas: HashMap<String, Option<Arc<Value>>>,
    /// Names of the injected tools (prefixed on a clash).
    pub(super) names: ToolNames,
    /// `[tools_list] mode = "defer"`: the deferred tools.
    pub(super) catalog: Catalog,
}

/// Shapes `tools/list` and `tools/call` results and answers the injected tools.
///
/// `Send + Sync`: the relay holds it in an `Arc` and calls it from several threads at once.
#[derive(Debug)]
pub struct Boundary {
    pub(super) settings: Settings,
    pub(super) encoding: Encoding,
    pub(super) store: std::sync::Arc<dyn ResponseStore>,
    /// Whose responses this boundary makes and reads.
    pub(super) principal: String,
    pub(super) blobs: BlobSink,
    pub(super) telemetry: Option<Telemetry>,
    pub(super) tools: RwLock<ToolState>,
    /// Runs `query_response` filters (by default in worker processes on unix:
    /// [`crate::jq::worker_pool`]; [`Boundary::with_jq`] to give another).
    pub(super) jq: Arc<dyn JqRunner>,
    /// UUIDs shown in this session (`uuid_prefix`; see [`args_rewrite`]).
    pub(super) uuids: UuidMemory,
    /// Whether `response_refs` is on for some tool (the hints of paged results say so).
    pub(super) refs_hint: bool,
    /// How the client hands results to its model ([`client_fit`]).
    pub(super) profile: mcp_budget_core::client::Profile,
}

impl Boundary {
    /// A boundary with `settings`. Caps glibc's malloc arenas (see the cache in `store`: freed
    /// results must go back to the system), so build it before starting threads. Loads [`Settings::config_path`] when it is set and
    /// [`Settings::file`] is `None`, checks every `transform` filter, and opens the telemetry
    /// log when [`Settings::log_path`] is set.
    ///
    /// The response store is the one the settings ask for ([`StoreHandle::open`]: memory, or
    /// Redis with [`Settings::store_url`]), the principal [`Settings::principal`].
    ///
    /// # Errors
    /// [`ConfigError`] when the config file cannot be read or parsed, a `transform` is not a
    /// valid jq filter, the log cannot be opened, or the shared store cannot be reached.
    pub fn new(mut settings: Settings) -> Result<Boundary, ConfigError> {
        // Before any thread of ours allocates (the tokenizer warm-up below is one).
        store::limit_malloc_arenas();
        if settings.config_path.is_some() && settings.file.is_none() {
            settings.load_config_file()?;
        }
        let store = StoreHandle::open(&settings)?;
        let principal = settings.principal();
        Boundary::with_store(settings, store, principal)
    }

    /// A boundary with `settings` that keeps its responses in `store` (shared with other
    /// boundaries: one per session in `serve`) as `principal`'s: the session id, or the
    /// SHA-256 of the bearer token, so that only that principal reads their cursors.
    ///
    /// # Errors
    /// As [`Boundary::new`] (the store is already open).
    pub fn with_store(
        mut settings: Settings,
        store: StoreHandle,
        principal: impl Into<String>,
    ) -> Result<Boundary, ConfigError> {
        store::limit_malloc_arenas();
        if settings.config_path.is_some() && settings.file.is_none() {
            settings.load_config_file()?;
        }
        if let Some(file) = &settings.file {
            for (tool, rule) in &file.tools {
                if let Some(code) = &rule.transform {
                    crate::jq::check(code).map_err(|e| ConfigError::Transform {
                        tool: tool.clone(),
                        message: e.to_string(),
                    })?;
                }
            }
        }
        let encoding = settings.encoding.clone();
        warm_up(&encoding);
        let telemetry = match &settings.log_path {
            Some(path) => Some(Telemetry::open(path, encoding.clone())?),
            None => None,
        };
        let blobs = BlobSink::new(settings.blob_dir(), settings.blob_threshold);
        blobs.remove_older_than(settings.blob_max_age());
        Ok(Boundary {
            store: store.0,
            principal: principal.into(),
            blobs,
            encoding,
            telemetry,
            tools: RwLock::new(ToolState::default()),
            jq: crate::jq::worker_pool(&settings.jq_worker, settings.jq_limits()),
            uuids: UuidMemory::default(),
            refs_hint: settings.response_refs_anywhere(),
            profile: settings.profile(),
            settings,
        })
    }
}

impl Boundary {
    /// This boundary with `runner` running its `query_response` filters instead of the
    /// default worker pool ([`crate::jq::worker_pool`] of [`Settings::jq_worker`]): for
    /// example [`crate::jq::InProcess`] where no worker process can be started. The runner
    /// gets the filter as the model wrote it (UUID prefixes expanded) and the cached
    /// response as one JSON text; its error's message is `query_failed`'s.
    pub fn with_jq(mut self, runner: Arc<dyn JqRunner>) -> Boundary {
        self.jq = runner;
        self
    }
}

/// Loads the tokenizer's tables on a thread of its own, so that the first result to shape does
/// not wait for them: building the OpenAI tokenizers (decoding the vocabulary, compiling the
/// split pattern) takes ~150 M instructions, tens of milliseconds, once per process.
fn warm_up(encoding: &Encoding) {
    if matches!(encoding, Encoding::Cl100kBase | Encoding::O200kBase) {
        let encoding = encoding.clone();
        // Without a thread, the first count loads them, as before.
        let _ = std::thread::Builder::new()
            .name("mcp-budget-warm".into())
            .spawn(move || encoding.count("warm"));
    }
}

/// The banner item, when set.
pub(crate) fn banner_item(b: &Boundary) -> Option<Value> {
    b.settings
        .banner
        .as_ref()
        .map(|t| json!({"type":"text","text":t}))
}

/// The rule in force for `tool`, its budget replaced by `budget` tokens when given.
pub(crate) fn rule(
    b: &Boundary,
    tool: &str,
    budget: Option<usize>,
) -> crate::config::EffectiveRule {
    let mut rule = b.settings.rule_for(tool);
    if let Some(budget) = budget {
        rule.max_tokens = budget.max(mcp_budget_core::MIN_BUDGET_TOKENS);
    }
    rule
}
