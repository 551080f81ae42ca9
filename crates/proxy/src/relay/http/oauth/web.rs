//! The HTTP requests of signing in (metadata, registration, tokens, the authorization URL),
//! sent by the transport's own HTTP client (TLS, the environment's proxy), one client per URL
//! and never with the upstream's `--header`s: those are for the MCP server only.

use std::fmt;
use std::time::Duration;

use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use http::{Method, StatusCode};
use serde::de::DeserializeOwned;
use url::Url;

use super::super::client::{self, Client};
use super::error::OAuthError;

/// How long one request of signing in may take to be answered: 30 s.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting may take: 30 s.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of an answer read: 1 MiB (metadata and token answers are a few KiB).
const MAX_BODY: usize = 1024 * 1024;

/// An HTTP failure of signing in (for the `oauth2` crate's requests).
#[derive(Debug)]
pub(crate) struct WebError(pub(crate) String);

impl fmt::Display for WebError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WebError {}

/// Sends `request` and reads its answer (at most 1 MiB of body). Redirects are not followed.
///
/// # Errors
///
/// [`WebError`] when the URL is not HTTP(S), the connection fails or no answer comes in 30 s.
pub(crate) async fn send(
    request: http::Request<Vec<u8>>,
) -> Result<http::Response<Vec<u8>>, WebError> {
    let (parts, body) = request.into_parts();
    let url = Url::parse(&parts.uri.to_string())
        .map_err(|e| WebError(format!("{} is not a valid URL: {e}", parts.uri)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError(format!("{} is not an http(s) URL", shown(&url))));
    }
    let http = Client::new(&url, &HeaderMap::new(), CONNECT_TIMEOUT)
        .map_err(|e| WebError(format!("cannot reach {}: {e}", shown(&url))))?;
    let mut builder = http
        .request(parts.method)
        .timeout(REQUEST_TIMEOUT)
        .body(bytes::Bytes::from(body));
    for (name, value) in &parts.headers {
        builder = builder.header(name, value);
    }
    let response = builder.send().await.map_err(|e| {
        let why = if e.is_connect() {
            "could not connect"
        } else if e.is_timeout() {
            "no answer in time"
        } else {
            "the request failed"
        };
        WebError(format!("{}: {why}", shown(&url)))
    })?;
    let (status, headers) = (response.status(), response.headers().clone());
    let body = client::bytes_at_most(response, MAX_BODY).await.to_vec();
    let mut answer = http::Response::new(body);
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    Ok(answer)
}

/// A GET of `url` without following redirects.
///
/// # Errors
///
/// As [`send`].
pub(crate) async fn get(url: &Url) -> Result<http::Response<Vec<u8>>, WebError> {
    let request = http::Request::builder()
        .method(Method::GET)
        .uri(url.as_str())
        .header(ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|e| WebError(format!("bad request: {e}")))?;
    send(request).await
}

/// GETs `url` and parses its JSON: `None` for a 4xx or 5xx answer (the document is not there).
///
/// # Errors
///
/// [`OAuthError::Discovery`] when the server cannot be reached or a success answer is not the
/// expected JSON.
pub(crate) async fn get_json<T: DeserializeOwned>(url: &Url) -> Result<Option<T>, OAuthError> {
    let response = get(url).await.map_err(|e| OAuthError::Discovery(e.0))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    serde_json::from_slice(response.body())
        .map(Some)
        .map_err(|e| OAuthError::Discovery(format!("{} is not valid metadata: {e}", shown(url))))
}

/// POSTs `body` as JSON to `url`; the answer's status and JSON.
///
/// # Errors
///
/// [`OAuthError::Registration`] when the server cannot be reached or answers no JSON.
pub(crate) async fn post_json(
    url: &Url,
    body: &serde_json::Value,
) -> Result<(StatusCode, serde_json::Value), OAuthError> {
    let request = http::Request::builder()
        .method(Method::POST)
        .uri(url.as_str())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(body.to_string().into_bytes())
        .map_err(|e| OAuthError::Registration(format!("bad request: {e}")))?;
    let response = send(request)
        .await
        .map_err(|e| OAuthError::Registration(e.0))?;
    let status = response.status();
    let json = serde_json::from_slice(response.body()).map_err(|_| {
        OAuthError::Registration(format!(
            "{} answered HTTP {status} without JSON",
            shown(url)
        ))
    })?;
    Ok((status, json))
}

/// `url` without its query, fragment and user info (an authorization URL's query is not
/// secret, but a token endpoint's could be).
pub(crate) fn shown(url: &Url) -> String {
    client::shown_url(url)
}
