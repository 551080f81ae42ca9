//! A new session when the server forgot the old one.
//!
//! MCP 2025-06-18 and 2025-11-25, Streamable HTTP, "Session Management": "When a client
//! receives HTTP 404 in response to a request containing an `Mcp-Session-Id`, it MUST start a
//! new session by sending a new `InitializeRequest` without a session ID attached." Servers
//! say it in other ways too, taken the same: `410 Gone` (typescript-sdk#1402), and a `200`
//! whose answer, addressed to no request, says the session is not found (keryx#503:
//! `{"error":"Session not found"}`; see `message::says_session_gone`). The
//! transport does that for the client: it replays the client's own `initialize` (byte for
//! byte) and `notifications/initialized`, keeps the new session id, reopens the GET stream, and
//! sends the request that got the 404 once more. The client never sees the new `initialize`'s
//! answer: its session goes on.
//!
//! It is not done (the request is answered with an error saying the session expired) when the
//! client's `initialize` was never seen (nothing to replay), when the new `initialize` fails,
//! or when the server now negotiates another protocol version than the client agreed to (the
//! client would speak a version the server no longer expects).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

use super::super::log;
use super::exchange::{PROTOCOL_VERSION, SESSION_ID, is_event_stream};
use super::message::{is_response, negotiated_version};
use super::transport::Transport;

/// What a POST accepts (as in [`exchange`]).
const ACCEPT_POST: &str = "application/json, text/event-stream";

impl Transport {
    /// Makes sure the session that the server no longer knows (`stale`; `why`: what said so,
    /// e.g. `HTTP 404 Not Found`) is replaced by a new one; returns once it is (by this call or
    /// by a concurrent one).
    ///
    /// # Errors
    ///
    /// Why no new session could be had, in words (for the JSON-RPC error of the request).
    pub(super) async fn renew(
        self: &Arc<Self>,
        stale: &HeaderValue,
        why: &str,
    ) -> Result<(), String> {
        let _one_at_a_time = self.renewing.lock().await;
        let (current, version, handshake) = {
            let state = self.state();
            (
                state.session.clone(),
                state.version.clone(),
                state.handshake.clone(),
            )
        };
        if current.as_ref() != Some(stale) {
            // Another request renewed it meanwhile (or it was given up).
            return if current.is_some() {
                Ok(())
            } else {
                Err("no new session could be started".to_owned())
            };
        }
        let Some((initialize, initialized)) = handshake else {
            return Err(
                "the client's initialize was not seen, so it cannot be replayed".to_owned(),
            );
        };
        let (session, answer) = self.replay_initialize(initialize).await?;
        let new_version = negotiated_version(&answer);
        if new_version != version {
            return Err(format!(
                "the server now negotiates protocol version {} instead of {}",
                new_version.as_deref().unwrap_or("(none)"),
                version.as_deref().unwrap_or("(none)")
            ));
        }
        {
            let mut state = self.state();
            state.session = session.clone();
        }
        if let Some(initialized) = initialized {
            let mut request = self
                .client
                .post()
                .header(ACCEPT, ACCEPT_POST)
                .header(CONTENT_TYPE, "application/json");
            if let Some(session) = &session {
                request = request.header(SESSION_ID, session.clone());
            }
            if let Some(version) = &version {
                request = request.header(PROTOCOL_VERSION, version.as_str());
            }
            match request.body(initialized).send().await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => {
                    return Err(format!(
                        "the server refused notifications/initialized (HTTP {})",
                        r.status()
                    ));
                }
                Err(e) => return Err(self.describe_error(&e)),
            }
        }
        log::warn(format_args!(
            "the upstream server at {} forgot the session ({why}); started a new one",
            self.shown
        ));
        // The GET stream of the old session is dead: listen on the new one instead (one GET
        // stream per session).
        let opened = self.open_listener();
        let _ = tokio::time::timeout(super::events::LISTEN_WAIT, opened).await;
        Ok(())
    }

    /// POSTs the client's `initialize` again, without a session id; returns the new session id
    /// and the response (JSON, or the first response event of an SSE answer).
    async fn replay_initialize(
        &self,
        initialize: Bytes,
    ) -> Result<(Option<HeaderValue>, Vec<u8>), String> {
        let response = self
            .client
            .post()
            .header(ACCEPT, ACCEPT_POST)
            .header(CONTENT_TYPE, "application/json")
            .body(initialize)
            .send()
            .await
            .map_err(|e| self.describe_error(&e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("a new initialize got HTTP {status}"));
        }
        let session = response.headers().get(SESSION_ID).cloned();
        let answer = if is_event_stream(&response) {
            let mut events = super::events::sse_events(response, self.max_event_bytes());
            let mut found = None;
            while let Some(Ok(event)) = events.next().await {
                if let Some(data) = event.data
                    && is_response(data.as_bytes())
                {
                    found = Some(data.into_bytes());
                    break;
                }
            }
            found.ok_or("the answer to a new initialize held no response")?
        } else {
            match super::client::bytes_within(response, self.max_line_bytes).await {
                Ok(super::client::Bounded::Whole(body)) => body,
                Ok(super::client::Bounded::TooLong { .. }) => {
                    return Err(format!(
                        "the answer to a new initialize is longer than {} bytes \
                         (--max-line-bytes)",
                        self.max_line_bytes
                    ));
                }
                Err(e) => return Err(self.describe_error(&e)),
            }
        };
        if !is_response(&answer) || negotiated_version(&answer).is_none() {
            return Err("a new initialize was not answered with a result".to_owned());
        }
        Ok((session, answer))
    }
}
