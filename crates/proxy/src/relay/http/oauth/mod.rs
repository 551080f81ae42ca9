//! OAuth 2.1 sign-in to a remote MCP server (`proxy --upstream URL`, `[servers.<name>] url`),
//! as the MCP authorization spec describes it (2025-11-25; the 2025-03-26 fallbacks too).
//!
//! How it goes:
//! - Every request to the server carries `Authorization: Bearer <access token>` once there is
//!   one (unless the user set an `Authorization` header: then OAuth is off).
//! - A `401` with a `Bearer` challenge starts a sign-in, once for all the requests that got it:
//!   protected resource metadata (RFC 9728), the authorization server's metadata (RFC 8414 /
//!   OpenID discovery), the client ([`flow`]), the authorization code grant with PKCE through
//!   a loopback redirect, the tokens. The request is then sent again. A `401` to a token that
//!   has a refresh token refreshes it first.
//! - A `403` with `error="insufficient_scope"` asks for the challenged scopes on top of the
//!   held ones (step-up), unless the token already holds them: then the request fails, so a
//!   server that never accepts does not loop the user through sign-ins.
//! - A token due to expire within 60 s is refreshed before it is sent.
//! - The sign-in is kept on disk ([`store`]) and shared by every proxy of the same server;
//!   `mcp-budget login`, `logout` and `auth status` work on the same files.
//! - A refresh token the server no longer takes (`invalid_grant`) answers the request with an
//!   error that says to run `mcp-budget login <URL>`; the tokens are dropped, so the next
//!   request signs in again.
//!
//! The sign-in URL is written to stderr and opened in a browser where there is a desktop.
//! `MCP_BUDGET_OAUTH_AUTOAPPROVE=1` makes the proxy GET the URL itself and follow its
//! redirect to the callback, as the conformance suite's example clients do: a test aid, never
//! on by default.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use http::HeaderValue;
use http::header::HeaderMap;
use url::Url;

use super::super::log;

pub(crate) mod challenge;
mod discovery;
mod error;
mod flow;
mod options;
mod store;
mod web;

pub(crate) use challenge::Challenge;
pub use error::OAuthError;
pub use options::{AUTOAPPROVE_ENV, OAuthOptions};

/// How long a token may have left before it is refreshed ahead of use: 60 s.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How long a proxy waits for another one's sign-in to the same server: 6 minutes (the
/// approval time and some).
const LOCK_WAIT: Duration = Duration::from_secs(360);

/// The sign-in of one transport: the token sent, and the steps that renew it.
pub(crate) struct Authenticator {
    server: Url,
    shown: String,
    options: OAuthOptions,
    /// The record's file.
    path: Option<PathBuf>,
    record: Mutex<Option<store::Record>>,
    /// The `Authorization` value requests carry (shared with the HTTP client).
    bearer: Arc<RwLock<Option<HeaderValue>>>,
    /// One sign-in or refresh at a time in this process.
    signing: tokio::sync::Mutex<()>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("server", &self.shown)
            .finish_non_exhaustive()
    }
}

/// What a failed request should do after [`Authenticator::unauthorized`] or
/// [`Authenticator::forbidden`].
pub(crate) type Retry = Result<(), String>;

impl Authenticator {
    /// The sign-in for the server at `server`, with the tokens kept on disk if there are some;
    /// `bearer` is the cell the HTTP client reads.
    pub(crate) fn new(
        server: &Url,
        options: OAuthOptions,
        bearer: Arc<RwLock<Option<HeaderValue>>>,
    ) -> Authenticator {
        let shown = super::client::shown_url(server);
        let path = match store::directory() {
            Ok(dir) => Some(store::file_for(&dir, &shown)),
            Err(e) => {
                log::warn(format_args!("{e}: sign-ins will not be kept"));
                None
            }
        };
        let record = path.as_deref().and_then(|p| {
            store::load(p).unwrap_or_else(|e| {
                log::warn(format_args!("{e}"));
                None
            })
        });
        let authenticator = Authenticator {
            server: server.clone(),
            shown,
            options,
            path,
            record: Mutex::new(None),
            bearer,
            signing: tokio::sync::Mutex::new(()),
        };
        authenticator.adopt(record);
        authenticator
    }

    /// The `Authorization` value sent now.
    pub(crate) fn current(&self) -> Option<HeaderValue> {
        self.bearer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn adopt(&self, record: Option<store::Record>) {
        let value = record
            .as_ref()
            .and_then(|r| r.tokens.as_ref())
            .and_then(|t| HeaderValue::from_str(&format!("Bearer {}", t.access_token)).ok())
            .map(|mut v| {
                v.set_sensitive(true);
                v
            });
        *self.bearer.write().unwrap_or_else(PoisonError::into_inner) = value;
        *self.record.lock().unwrap_or_else(PoisonError::into_inner) = record;
    }

    fn record(&self) -> Option<store::Record> {
        self.record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn keep(&self, record: store::Record) -> Result<(), OAuthError> {
        if let Some(path) = &self.path {
            store::save(path, &record)?;
        }
        self.adopt(Some(record));
        Ok(())
    }

    /// Whether the token `sent` was already replaced, in this process or by another proxy on
    /// disk (then adopted): the request is sent again with the new one.
    fn superseded(&self, sent: Option<&HeaderValue>) -> bool {
        self.current().as_ref() != sent || self.newer_on_disk(sent)
    }

    /// The disk's record when another process changed it since `sent` was read.
    fn newer_on_disk(&self, sent: Option<&HeaderValue>) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let Ok(Some(record)) = store::load(path) else {
            return false;
        };
        let differs = record
            .tokens
            .as_ref()
            .map(|t| format!("Bearer {}", t.access_token))
            .is_some_and(|v| sent.is_none_or(|s| s.as_bytes() != v.as_bytes()));
        if differs {
            self.adopt(Some(record));
        }
        differs
    }

    async fn lock(&self) -> Result<(tokio::sync::MutexGuard<'_, ()>, Option<store::Lock>), String> {
        let guard = self.signing.lock().await;
        let file = match &self.path {
            Some(path) => Some(
                store::lock(path, LOCK_WAIT)
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        Ok((guard, file))
    }

    /// Refreshes the token ahead when it expires within 60 s (a failure is left to the `401`
    /// that follows).
    pub(crate) async fn before_send(&self) {
        // Looked at in place: this runs before every POST (no clone of the record).
        let due = self
            .record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|r| r.tokens.as_ref())
            .is_some_and(|t| t.refresh_token.is_some() && t.expires_within(REFRESH_MARGIN));
        if !due {
            return;
        }
        let sent = self.current();
        let Ok(_held) = self.lock().await else {
            return;
        };
        if self.superseded(sent.as_ref()) {
            return;
        }
        let _ = self.refresh().await;
    }

    /// Refreshes the tokens; the record is updated (or its tokens dropped when rejected).
    async fn refresh(&self) -> Result<(), flow::RefreshFailure> {
        let Some(record) = self.record() else {
            return Err(flow::RefreshFailure::Other("not signed in".to_owned()));
        };
        match flow::refresh(&record, &self.options).await {
            Ok(tokens) => {
                let mut record = record;
                record.tokens = Some(tokens);
                self.keep(record)
                    .map_err(|e| flow::RefreshFailure::Other(e.to_string()))
            }
            Err(flow::RefreshFailure::Rejected(why)) => {
                let mut record = record;
                record.tokens = None;
                let _ = self.keep(record);
                Err(flow::RefreshFailure::Rejected(why))
            }
            Err(other) => Err(other),
        }
    }

    /// After a `401` to a request that carried `sent`: a newer token (another request's or
    /// another proxy's sign-in), a refreshed one, or a new sign-in. `Err` holds the words the
    /// request is answered with.
    pub(crate) async fn unauthorized(
        &self,
        challenge: &Challenge,
        sent: Option<HeaderValue>,
    ) -> Retry {
        let _held = self.lock().await?;
        if self.superseded(sent.as_ref()) {
            return Ok(());
        }
        let record = self.record();
        let refreshable = sent.is_some()
            && record
                .as_ref()
                .and_then(|r| r.tokens.as_ref())
                .is_some_and(|t| t.refresh_token.is_some());
        if refreshable {
            match self.refresh().await {
                Ok(()) => return Ok(()),
                Err(flow::RefreshFailure::Rejected(why)) => {
                    return Err(format!(
                        "the sign-in to {} has expired or was revoked ({why}); run \
                         `mcp-budget login {}` to sign in again",
                        self.shown, self.shown
                    ));
                }
                Err(flow::RefreshFailure::Other(why)) => {
                    log::debug(format_args!("refreshing the token failed: {why}"));
                }
            }
        }
        self.sign_in(challenge, None, "HTTP 401 Unauthorized").await
    }

    /// After a `403 insufficient_scope` to a request that carried `sent`: a sign-in for the
    /// challenged scopes on top of the held ones, unless the token holds them already.
    pub(crate) async fn forbidden(
        &self,
        challenge: &Challenge,
        sent: Option<HeaderValue>,
    ) -> Retry {
        let _held = self.lock().await?;
        if self.superseded(sent.as_ref()) {
            return Ok(());
        }
        let held = self.record().and_then(|r| r.tokens).and_then(|t| {
            let wanted = challenge.scope.as_deref().unwrap_or("");
            if t.has_scopes(wanted) {
                None
            } else {
                Some(t.scope.unwrap_or_default())
            }
        });
        let Some(held) = held else {
            return Err(format!(
                "the upstream server at {} refused the request for lack of scope ({}), and the \
                 token already holds what it asks for; not signing in again",
                self.shown,
                challenge.scope.as_deref().unwrap_or("none named")
            ));
        };
        self.sign_in(
            challenge,
            Some(&held),
            "HTTP 403 Forbidden, insufficient_scope",
        )
        .await
    }

    /// A sign-in after `status` (for the message when it fails).
    async fn sign_in(&self, challenge: &Challenge, held: Option<&str>, status: &str) -> Retry {
        let previous = self.record();
        match flow::sign_in(
            &self.server,
            &self.options,
            challenge,
            previous.as_ref(),
            held,
        )
        .await
        {
            Ok(record) => {
                if let Err(e) = self.keep(record) {
                    log::warn(format_args!("{e}"));
                }
                log::debug(format_args!("signed in to {}", self.shown));
                Ok(())
            }
            Err(e) => Err(format!(
                "the upstream server at {url} asked for a sign-in ({status}, Bearer) and signing \
                 in with OAuth failed: {e}; try `mcp-budget login {url}`, or pass a token with \
                 `--header 'Authorization: Bearer <token>'`",
                url = self.shown
            )),
        }
    }
}

/// Signs in to the MCP server at `url` ahead of time (`mcp-budget login`): the server is asked
/// with an `initialize` for its challenge, then the sign-in runs and is kept.
///
/// # Errors
///
/// [`OAuthError`] of the failed step; [`OAuthError::NotNeeded`] when the server answers
/// without asking for a sign-in.
pub async fn login(url: &str, options: OAuthOptions) -> Result<String, OAuthError> {
    let server = Url::parse(url).map_err(|e| OAuthError::Discovery(format!("bad URL: {e}")))?;
    let shown = super::client::shown_url(&server);
    let probe = http::Request::builder()
        .method(http::Method::POST)
        .uri(server.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .body(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "mcp-budget", "version": env!("CARGO_PKG_VERSION")}}})
            .to_string()
            .into_bytes(),
        )
        .map_err(|e| OAuthError::Discovery(format!("bad request: {e}")))?;
    let answer = web::send(probe)
        .await
        .map_err(|e| OAuthError::Discovery(e.0))?;
    let status = answer.status();
    if status != http::StatusCode::UNAUTHORIZED {
        if let Some(session) = answer.headers().get("mcp-session-id") {
            let end = http::Request::builder()
                .method(http::Method::DELETE)
                .uri(server.as_str())
                .header("mcp-session-id", session)
                .body(Vec::new());
            if let Ok(end) = end {
                let _ = web::send(end).await;
            }
        }
        return Err(OAuthError::NotNeeded(format!(
            "{shown} answered HTTP {status} without asking for a sign-in: nothing to do"
        )));
    }
    let challenge = Challenge::parse(
        answer
            .headers()
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    );
    let path = store::file_for(&store::directory()?, &shown);
    let _held = store::lock(&path, LOCK_WAIT).await?;
    let previous = store::load(&path)?;
    let record = flow::sign_in(&server, &options, &challenge, previous.as_ref(), None).await?;
    store::save(&path, &record)?;
    Ok(shown)
}

/// Forgets the sign-in to `url` (`mcp-budget logout`): whether there was one.
///
/// # Errors
///
/// [`OAuthError::Store`] when the file cannot be removed.
pub fn logout(url: &str) -> Result<bool, OAuthError> {
    let server = Url::parse(url).map_err(|e| OAuthError::Store(format!("bad URL: {e}")))?;
    let path = store::file_for(&store::directory()?, &super::client::shown_url(&server));
    store::remove(&path)
}

/// One kept sign-in, as `mcp-budget auth status` shows it (no tokens).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SignInStatus {
    /// The MCP server's URL.
    pub server: String,
    /// The authorization server's issuer or token endpoint.
    pub authorization_server: String,
    /// How the client ID was obtained: `registered`, `pre-registered`, `metadata-document`.
    pub client: String,
    /// Whether there is an access token.
    pub signed_in: bool,
    /// Seconds until the access token expires (negative: expired), when known.
    pub expires_in_s: Option<i64>,
    /// Whether a refresh token is kept.
    pub refreshable: bool,
    /// The granted scopes, space-separated.
    pub scope: Option<String>,
    /// The file it is kept in.
    pub file: PathBuf,
}

/// Every kept sign-in (`mcp-budget auth status`), and the directory they are kept in.
///
/// # Errors
///
/// [`OAuthError::Store`] when the directory cannot be told or listed.
pub fn status() -> Result<(PathBuf, Vec<SignInStatus>), OAuthError> {
    let dir = store::directory()?;
    let now = i64::try_from(store::now()).unwrap_or(i64::MAX);
    let list = store::all(&dir)?
        .into_iter()
        .map(|(file, r)| SignInStatus {
            authorization_server: r
                .authorization_server
                .issuer
                .clone()
                .unwrap_or_else(|| r.authorization_server.token_endpoint.clone()),
            client: r.client.kind.clone(),
            signed_in: r.tokens.is_some(),
            expires_in_s: r
                .tokens
                .as_ref()
                .and_then(|t| t.expires_at)
                .map(|at| i64::try_from(at).unwrap_or(i64::MAX) - now),
            refreshable: r.tokens.as_ref().is_some_and(|t| t.refresh_token.is_some()),
            scope: r.tokens.as_ref().and_then(|t| t.scope.clone()),
            server: r.server,
            file,
        })
        .collect();
    Ok((dir, list))
}

/// Whether `headers` already authorize every request (an `Authorization` the user set): then
/// OAuth stays off.
pub(crate) fn user_authorizes(headers: &HeaderMap) -> bool {
    headers.contains_key(http::header::AUTHORIZATION)
}
