//! Signing in: the client (pre-registered, a client ID metadata document, or dynamic
//! registration), the authorization code grant with PKCE through a loopback redirect, and the
//! token and refresh exchanges.
//!
//! Sources: OAuth 2.1 (draft-ietf-oauth-v2-1) §4.1; RFC 7636 (PKCE, `S256`); RFC 8252 §7.3
//! (loopback redirect URIs, `127.0.0.1` and any port); RFC 7591 (dynamic registration);
//! RFC 8707 (`resource` in the authorization and token requests); MCP authorization
//! 2025-11-25 ("Scope Selection Strategy", "Client ID Metadata Documents", "Step-Up
//! Authorization Flow"). The `oauth2` crate builds the authorization URL and sends the code
//! and refresh exchanges (with the client's authentication: Basic or in the body).

use std::collections::HashMap;
use std::time::Duration;

use oauth2::basic::{BasicClient, BasicErrorResponseType};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope,
    StandardErrorResponse, TokenResponse as _, TokenUrl,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use url::Url;

use super::super::super::log;
use super::challenge::Challenge;
use super::discovery::{self, Discovered, ServerMetadata};
use super::error::OAuthError;
use super::options::OAuthOptions;
use super::store::{ClientInfo, Record, Tokens, now};
use super::web;

/// How long the user has to approve the sign-in in the browser: 5 minutes.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);
/// Redirects followed when the approval is automatic (`MCP_BUDGET_OAUTH_AUTOAPPROVE=1`).
const MAX_REDIRECTS: usize = 10;
/// The path of the loopback redirect URI.
const CALLBACK_PATH: &str = "/callback";
/// The name the proxy registers under (RFC 7591 `client_name`).
const CLIENT_NAME: &str = "mcp-budget";

type Configured =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// A sign-in from scratch at the MCP server `server`: `challenge` is the server's
/// `WWW-Authenticate` (empty ahead of time), `previous` what was kept (its client is reused for
/// the same authorization server), `held` the scopes of the current token (kept in a step-up).
///
/// # Errors
///
/// [`OAuthError`] for each step that fails, in words that say which.
pub(crate) async fn sign_in(
    server: &Url,
    options: &OAuthOptions,
    challenge: &Challenge,
    previous: Option<&Record>,
    held: Option<&str>,
) -> Result<Record, OAuthError> {
    let found = discovery::discover(server, challenge.resource_metadata.as_deref()).await?;
    let metadata = &found.server;
    if uses_client_credentials(metadata, options) {
        return client_credentials(server, options, challenge, found, held).await;
    }
    if !metadata.fallback
        && !metadata
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    {
        return Err(OAuthError::Authorization(
            "the authorization server does not offer PKCE with S256 \
             (code_challenge_methods_supported), which MCP requires; not signing in"
                .to_owned(),
        ));
    }
    // A registered client is reused at the same server, unless a client is given now.
    let reusable = previous.filter(|p| {
        options.client_id.is_none()
            && p.authorization_server.token_endpoint == metadata.token_endpoint
            && p.client.kind == "registered"
    });
    let kept_port = reusable
        .and_then(|p| p.client.redirect_uri.as_deref())
        .and_then(|u| Url::parse(u).ok())
        .and_then(|u| u.port());
    let listener = match (options.redirect_port, kept_port) {
        // A port the user gave is the registered one: no other will do.
        (Some(port), _) => TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            OAuthError::Authorization(format!(
                "cannot listen on 127.0.0.1:{port} (--oauth-redirect-port) for the callback: {e}"
            ))
        })?,
        (None, Some(port)) => match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => listener,
            Err(_) => bind_any().await?,
        },
        (None, None) => bind_any().await?,
    };
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Authorization(format!("no loopback port: {e}")))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
    let client = match reusable {
        Some(p) if p.client.redirect_uri.as_deref() == Some(redirect.as_str()) => p.client.clone(),
        _ => client_for(metadata, options, &redirect).await?,
    };
    let scope = choose_scope(options, challenge, &found, held);
    let oauth = configured(&client, metadata, Some(&redirect))?;
    let (pkce, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(pkce)
        .add_extra_param("resource", found.resource.clone());
    if let Some(scope) = &scope {
        request = request.add_scopes(scope.split(' ').map(|s| Scope::new(s.to_owned())));
    }
    let (url, state) = request.url();
    let code = approve(listener, url, &redirect, state.secret(), options).await?;
    let mut exchange = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", found.resource.clone());
    for (name, value) in assertion(&client, metadata, options)? {
        exchange = exchange.add_extra_param(name, value);
    }
    let answer = exchange
        .request_async(&|r| web::send(r))
        .await
        .map_err(|e| OAuthError::Token(token_error(&e)))?;
    let tokens = tokens_of(&answer, scope.as_deref(), None);
    Ok(Record {
        server: web::shown(server),
        resource: found.resource,
        authorization_server: found.server,
        client,
        tokens: Some(tokens),
    })
}

/// Why a refresh failed.
#[derive(Debug)]
pub(crate) enum RefreshFailure {
    /// The authorization server refused the refresh token (`invalid_grant`: expired or revoked).
    Rejected(String),
    /// Anything else (unreachable, a bad answer).
    Other(String),
}

/// New tokens for `record` from its refresh token (OAuth 2.1 §4.3, with `resource`).
///
/// # Errors
///
/// [`RefreshFailure::Rejected`] for `invalid_grant`, [`RefreshFailure::Other`] otherwise.
pub(crate) async fn refresh(
    record: &Record,
    options: &OAuthOptions,
) -> Result<Tokens, RefreshFailure> {
    let Some(old) = &record.tokens else {
        return Err(RefreshFailure::Other("not signed in".to_owned()));
    };
    let Some(refresh_token) = &old.refresh_token else {
        return Err(RefreshFailure::Other(
            "no refresh token was issued".to_owned(),
        ));
    };
    let oauth = configured(&record.client, &record.authorization_server, None)
        .map_err(|e| RefreshFailure::Other(e.to_string()))?;
    let refresh_token_value = RefreshToken::new(refresh_token.clone());
    let mut exchange = oauth
        .exchange_refresh_token(&refresh_token_value)
        .add_extra_param("resource", record.resource.clone());
    for (name, value) in assertion(&record.client, &record.authorization_server, options)
        .map_err(|e| RefreshFailure::Other(e.to_string()))?
    {
        exchange = exchange.add_extra_param(name, value);
    }
    let answer = exchange
        .request_async(&|r| web::send(r))
        .await
        .map_err(|e| match &e {
            RequestTokenError::ServerResponse(r)
                if *r.error() == BasicErrorResponseType::InvalidGrant =>
            {
                RefreshFailure::Rejected(token_error(&e))
            }
            _ => RefreshFailure::Other(token_error(&e)),
        })?;
    Ok(tokens_of(
        &answer,
        old.scope.as_deref(),
        Some(refresh_token.as_str()),
    ))
}

/// Whether to use the client credentials grant (OAuth 2.1 §4.2; MCP extension SEP-1046): a
/// pre-registered client with a secret or a key, at a server that issues no authorization
/// codes but client credentials.
fn uses_client_credentials(metadata: &ServerMetadata, options: &OAuthOptions) -> bool {
    let grants = metadata
        .grant_types_supported
        .as_deref()
        .unwrap_or_default();
    options.client_id.is_some()
        && (options.client_secret.is_some() || options.private_key.is_some())
        && grants.iter().any(|g| g == "client_credentials")
        && !grants.iter().any(|g| g == "authorization_code")
}

/// A sign-in with the client credentials grant: no user, no browser.
async fn client_credentials(
    server: &Url,
    options: &OAuthOptions,
    challenge: &Challenge,
    found: Discovered,
    held: Option<&str>,
) -> Result<Record, OAuthError> {
    let client = client_for(&found.server, options, "").await?;
    let scope = choose_scope(options, challenge, &found, held);
    let oauth = configured(&client, &found.server, None)?;
    let mut exchange = oauth
        .exchange_client_credentials()
        .add_extra_param("resource", found.resource.clone());
    if let Some(scope) = &scope {
        exchange = exchange.add_scopes(scope.split(' ').map(|s| Scope::new(s.to_owned())));
    }
    for (name, value) in assertion(&client, &found.server, options)? {
        exchange = exchange.add_extra_param(name, value);
    }
    let answer = exchange
        .request_async(&|r| web::send(r))
        .await
        .map_err(|e| OAuthError::Token(token_error(&e)))?;
    Ok(Record {
        server: web::shown(server),
        resource: found.resource,
        client: ClientInfo {
            redirect_uri: None,
            ..client
        },
        tokens: Some(tokens_of(&answer, scope.as_deref(), None)),
        authorization_server: found.server,
    })
}

/// The `client_assertion` parameters of a token request when the client authenticates with
/// `private_key_jwt` (RFC 7523 §2.2, OpenID Connect Core §9): a JWT of the client ID (`iss`,
/// `sub`), for the authorization server (`aud`: its issuer), valid 5 minutes, signed with the
/// key of `--oauth-private-key` (ES256 or ES384 for an EC key, RS256 for RSA, EdDSA).
fn assertion(
    client: &ClientInfo,
    metadata: &ServerMetadata,
    options: &OAuthOptions,
) -> Result<Vec<(&'static str, String)>, OAuthError> {
    if client.auth_method != "private_key_jwt" {
        return Ok(Vec::new());
    }
    let Some(key) = &options.private_key else {
        return Err(OAuthError::Token(
            "the client authenticates with private_key_jwt but no --oauth-private-key is given"
                .to_owned(),
        ));
    };
    let pem = if key.trim_start().starts_with("-----BEGIN") {
        key.clone()
    } else {
        std::fs::read_to_string(key).map_err(|e| {
            OAuthError::Token(format!("cannot read the private key file {key}: {e}"))
        })?
    };
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let keys: Vec<(Algorithm, EncodingKey)> = [
        EncodingKey::from_ec_pem(pem.as_bytes())
            .ok()
            .map(|k| vec![(Algorithm::ES256, k.clone()), (Algorithm::ES384, k)]),
        EncodingKey::from_rsa_pem(pem.as_bytes())
            .ok()
            .map(|k| vec![(Algorithm::RS256, k)]),
        EncodingKey::from_ed_pem(pem.as_bytes())
            .ok()
            .map(|k| vec![(Algorithm::EdDSA, k)]),
    ]
    .into_iter()
    .flatten()
    .flatten()
    .collect();
    let audience = metadata
        .issuer
        .clone()
        .unwrap_or_else(|| metadata.token_endpoint.clone());
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce)
        .map_err(|e| OAuthError::Token(format!("no random numbers for the JWT id: {e}")))?;
    let issued = now();
    let claims = serde_json::json!({
        "iss": client.client_id, "sub": client.client_id, "aud": audience,
        "iat": issued, "exp": issued + 300,
        "jti": nonce.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    });
    for (algorithm, key) in &keys {
        if let Ok(jwt) = jsonwebtoken::encode(&Header::new(*algorithm), &claims, key) {
            return Ok(vec![
                (
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ),
                ("client_assertion", jwt),
            ]);
        }
    }
    Err(OAuthError::Token(
        "the private key is not a PEM key of a kind that can sign a JWT (EC P-256/P-384, RSA, \
         Ed25519)"
            .to_owned(),
    ))
}

async fn bind_any() -> Result<TcpListener, OAuthError> {
    TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| OAuthError::Authorization(format!("cannot listen on loopback: {e}")))
}

/// The scopes to ask for (MCP 2025-11-25, "Scope Selection Strategy"): `--oauth-scope` when
/// given, else the challenge's `scope`, else the resource metadata's `scopes_supported`, else
/// none; with the scopes of the current token in a step-up, and `offline_access` when the
/// authorization server lists it (to get a refresh token; MCP draft, SEP-2207).
fn choose_scope(
    options: &OAuthOptions,
    challenge: &Challenge,
    found: &Discovered,
    held: Option<&str>,
) -> Option<String> {
    let base = options
        .scope
        .clone()
        .or_else(|| challenge.scope.clone())
        .or_else(|| found.resource_scopes.as_ref().map(|s| s.join(" ")));
    let mut scopes: Vec<String> = Vec::new();
    for s in held
        .into_iter()
        .chain(base.as_deref())
        .flat_map(|s| s.split(' '))
    {
        if !s.is_empty() && !scopes.iter().any(|k| k == s) {
            scopes.push(s.to_owned());
        }
    }
    if !scopes.is_empty()
        && !scopes.iter().any(|s| s == "offline_access")
        && found
            .server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"))
    {
        scopes.push("offline_access".to_owned());
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The client to be at `metadata`'s server: the pre-registered one, else a client ID metadata
/// document's URL where the server takes them, else a dynamically registered one.
async fn client_for(
    metadata: &ServerMetadata,
    options: &OAuthOptions,
    redirect: &str,
) -> Result<ClientInfo, OAuthError> {
    let methods = metadata
        .token_endpoint_auth_methods_supported
        .clone()
        .unwrap_or_else(|| vec!["client_secret_basic".to_owned()]);
    let offers = |m: &str| methods.iter().any(|k| k == m);
    if let Some(id) = &options.client_id {
        let auth_method = match &options.client_secret {
            None if options.private_key.is_some() => "private_key_jwt",
            None => "none",
            Some(_) if offers("client_secret_basic") || !offers("client_secret_post") => {
                "client_secret_basic"
            }
            Some(_) => "client_secret_post",
        };
        return Ok(ClientInfo {
            client_id: id.clone(),
            client_secret: options.client_secret.clone(),
            auth_method: auth_method.to_owned(),
            redirect_uri: None,
            kind: "pre-registered".to_owned(),
        });
    }
    if metadata.client_id_metadata_document_supported == Some(true)
        && let Some(url) = &options.client_metadata_url
    {
        return Ok(ClientInfo {
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".to_owned(),
            redirect_uri: None,
            kind: "metadata-document".to_owned(),
        });
    }
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(OAuthError::Registration(
            "the authorization server offers no dynamic client registration; register a client \
             there and pass --oauth-client-id (and --oauth-client-secret)"
                .to_owned(),
        ));
    };
    let endpoint = Url::parse(endpoint)
        .map_err(|e| OAuthError::Registration(format!("bad registration endpoint: {e}")))?;
    // A public client where the server allows it (RFC 8252 §8.4: a native app's secret is no
    // secret), else the method it names first among the ones with a secret.
    let asked = if offers("none") {
        "none"
    } else if offers("client_secret_basic") {
        "client_secret_basic"
    } else if offers("client_secret_post") {
        "client_secret_post"
    } else {
        "none"
    };
    let body = serde_json::json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": asked,
    });
    let (status, answer) = web::post_json(&endpoint, &body).await?;
    let Some(client_id) = answer.get("client_id").and_then(|v| v.as_str()) else {
        let why = answer
            .get("error_description")
            .or_else(|| answer.get("error"))
            .and_then(|v| v.as_str())
            .unwrap_or("no client_id in the answer");
        return Err(OAuthError::Registration(format!(
            "the authorization server refused to register a client (HTTP {status}: {why})"
        )));
    };
    let client_secret = answer
        .get("client_secret")
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let auth_method = match answer
        .get("token_endpoint_auth_method")
        .and_then(|v| v.as_str())
    {
        Some(m) => m.to_owned(),
        None if client_secret.is_none() => "none".to_owned(),
        None if asked == "none" => "client_secret_basic".to_owned(),
        None => asked.to_owned(),
    };
    Ok(ClientInfo {
        client_id: client_id.to_owned(),
        client_secret,
        auth_method,
        redirect_uri: Some(redirect.to_owned()),
        kind: "registered".to_owned(),
    })
}

/// The `oauth2` client of `client` at `metadata`'s endpoints.
fn configured(
    client: &ClientInfo,
    metadata: &ServerMetadata,
    redirect: Option<&str>,
) -> Result<Configured, OAuthError> {
    let bad = |what: &str, e: url::ParseError| {
        OAuthError::Discovery(format!(
            "the authorization server's {what} is not a URL: {e}"
        ))
    };
    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(
            AuthUrl::new(metadata.authorization_endpoint.clone())
                .map_err(|e| bad("authorization_endpoint", e))?,
        )
        .set_token_uri(
            TokenUrl::new(metadata.token_endpoint.clone()).map_err(|e| bad("token_endpoint", e))?,
        );
    if let Some(redirect) = redirect {
        oauth = oauth.set_redirect_uri(
            RedirectUrl::new(redirect.to_owned()).map_err(|e| bad("redirect URI", e))?,
        );
    }
    match (&client.client_secret, client.auth_method.as_str()) {
        (Some(secret), "client_secret_basic") => Ok(oauth
            .set_client_secret(ClientSecret::new(secret.clone()))
            .set_auth_type(AuthType::BasicAuth)),
        (Some(secret), "client_secret_post") => Ok(oauth
            .set_client_secret(ClientSecret::new(secret.clone()))
            .set_auth_type(AuthType::RequestBody)),
        _ => Ok(oauth.set_auth_type(AuthType::RequestBody)),
    }
}

/// Gets the user's approval of `url` (or approves it: `autoapprove`) and returns the code the
/// authorization server sent to the loopback `redirect`.
async fn approve(
    listener: TcpListener,
    url: Url,
    redirect: &str,
    state: &str,
    options: &OAuthOptions,
) -> Result<String, OAuthError> {
    let (sent, mut received) = mpsc::channel::<HashMap<String, String>>(1);
    let router = axum::Router::new().route(
        CALLBACK_PATH,
        axum::routing::get(move |uri: axum::http::Uri| {
            let sent = sent.clone();
            async move {
                let query: HashMap<String, String> =
                    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                        .into_owned()
                        .collect();
                let failed = query.contains_key("error");
                let _ = sent.try_send(query);
                axum::response::Html(if failed {
                    "<!doctype html><title>mcp-budget</title><p>The sign-in was refused. \
                     You can close this tab."
                } else {
                    "<!doctype html><title>mcp-budget</title><p>Signed in: you can close \
                     this tab and go back to your MCP client."
                })
            }
        }),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    let outcome = async {
        if options.autoapprove {
            autoapprove(url, redirect).await?;
        } else {
            log::warn(format_args!(
                "sign in to the MCP server in a browser: {url} (waiting up to {} s)",
                APPROVAL_TIMEOUT.as_secs()
            ));
            if options.open_browser {
                open_browser(url.as_str());
            }
        }
        let query = tokio::time::timeout(APPROVAL_TIMEOUT, received.recv())
            .await
            .map_err(|_| {
                OAuthError::Authorization(format!(
                    "no sign-in within {} s; run `mcp-budget login <URL>` to sign in ahead",
                    APPROVAL_TIMEOUT.as_secs()
                ))
            })?
            .ok_or_else(|| OAuthError::Authorization("the callback stopped".to_owned()))?;
        if let Some(error) = query.get("error") {
            let why = query.get("error_description").map_or("", String::as_str);
            return Err(OAuthError::Authorization(format!(
                "the authorization server refused the sign-in: {error} {why}"
            )));
        }
        if query.get("state").map(String::as_str) != Some(state) {
            return Err(OAuthError::Authorization(
                "the callback's state does not match the request's (RFC 6749 §10.12); not \
                 signing in"
                    .to_owned(),
            ));
        }
        query
            .get("code")
            .cloned()
            .ok_or_else(|| OAuthError::Authorization("the callback carried no code".to_owned()))
    }
    .await;
    let _ = stop.send(());
    let _ = server.await;
    outcome
}

/// Approves the sign-in without a browser: GETs the authorization URL and follows its
/// redirects to the loopback callback (a test aid: `MCP_BUDGET_OAUTH_AUTOAPPROVE=1`).
async fn autoapprove(url: Url, redirect: &str) -> Result<(), OAuthError> {
    let mut at = url;
    for _ in 0..MAX_REDIRECTS {
        let answer = web::get(&at)
            .await
            .map_err(|e| OAuthError::Authorization(e.0))?;
        if at.as_str().starts_with(redirect) {
            return Ok(());
        }
        let location = answer
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .filter(|_| answer.status().is_redirection());
        let Some(location) = location else {
            return Err(OAuthError::Authorization(format!(
                "the authorization endpoint answered HTTP {} without redirecting to the \
                 callback",
                answer.status()
            )));
        };
        at = at
            .join(location)
            .map_err(|e| OAuthError::Authorization(format!("bad redirect: {e}")))?;
    }
    Err(OAuthError::Authorization(format!(
        "more than {MAX_REDIRECTS} redirects before the callback"
    )))
}

/// Opens `url` in the desktop's browser, where there is a desktop; the opener's output goes
/// nowhere (stdout is the protocol channel).
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        "xdg-open"
    } else {
        return;
    };
    let _ = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// The tokens of a token answer; `asked` the scopes requested (granted when the answer names
/// none, RFC 6749 §5.1), `kept` the refresh token to keep when a refresh issues no new one.
fn tokens_of(
    answer: &oauth2::basic::BasicTokenResponse,
    asked: Option<&str>,
    kept: Option<&str>,
) -> Tokens {
    Tokens {
        access_token: answer.access_token().secret().clone(),
        refresh_token: answer
            .refresh_token()
            .map(|t| t.secret().clone())
            .or_else(|| kept.map(str::to_owned)),
        expires_at: answer.expires_in().map(|d| now() + d.as_secs()),
        scope: answer
            .scopes()
            .map(|s| s.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "))
            .or_else(|| asked.map(str::to_owned)),
    }
}

/// A token request's failure in words (never the tokens).
fn token_error<E: std::error::Error>(
    e: &RequestTokenError<E, StandardErrorResponse<BasicErrorResponseType>>,
) -> String {
    match e {
        RequestTokenError::ServerResponse(r) => format!(
            "the token endpoint refused: {}{}",
            r.error(),
            r.error_description()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ),
        RequestTokenError::Request(e) => format!("the token request failed: {e}"),
        RequestTokenError::Parse(e, _) => format!("the token answer is not valid: {e}"),
        RequestTokenError::Other(e) => format!("the token request failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(resource_scopes: Option<&[&str]>, server_scopes: Option<&[&str]>) -> Discovered {
        let own = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect();
        Discovered {
            resource: "http://h/mcp".to_owned(),
            resource_scopes: resource_scopes.map(own),
            server: ServerMetadata {
                scopes_supported: server_scopes.map(own),
                ..ServerMetadata::default()
            },
        }
    }

    #[test]
    fn scopes_follow_the_selection_strategy() {
        let options = OAuthOptions::default();
        let challenge = Challenge {
            scope: Some("mcp:basic".to_owned()),
            ..Challenge::default()
        };
        let none = Challenge::default();
        let listed = found(Some(&["a", "b"]), None);
        assert_eq!(
            choose_scope(&options, &challenge, &listed, None).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            choose_scope(&options, &none, &listed, None).as_deref(),
            Some("a b")
        );
        assert_eq!(
            choose_scope(&options, &none, &found(None, None), None),
            None
        );
        // A step-up keeps what the token holds.
        let up = Challenge {
            scope: Some("mcp:basic mcp:write".to_owned()),
            ..Challenge::default()
        };
        assert_eq!(
            choose_scope(&options, &up, &listed, Some("mcp:basic")).as_deref(),
            Some("mcp:basic mcp:write")
        );
        // offline_access only where the authorization server lists it.
        let offline = found(Some(&["mcp:basic"]), Some(&["mcp:basic", "offline_access"]));
        assert_eq!(
            choose_scope(&options, &none, &offline, None).as_deref(),
            Some("mcp:basic offline_access")
        );
    }
}
