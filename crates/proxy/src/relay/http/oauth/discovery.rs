//! Finding the authorization server of an MCP server: protected resource metadata (RFC 9728),
//! then the authorization server's metadata (RFC 8414, OpenID Connect Discovery 1.0), as the
//! MCP authorization spec orders them (2025-11-25, "Authorization Server Discovery"); and the
//! 2025-03-26 fallbacks (no resource metadata: the server's origin is the authorization
//! server; no metadata at all: `/authorize`, `/token`, `/register` at that origin).

use serde::{Deserialize, Serialize};
use url::Url;

use super::error::OAuthError;
use super::web;

/// Protected resource metadata (RFC 9728 §2), the members used here.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier the metadata is for.
    #[serde(default)]
    pub(crate) resource: Option<String>,
    /// Issuer URLs of the authorization servers that issue tokens for it.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414 §2; OpenID Connect Discovery 1.0 §3 has the same
/// names), the members used here. Kept with the tokens, so that refreshing needs no discovery.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ServerMetadata {
    /// The issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) issuer: Option<String>,
    /// Where the user approves the request.
    pub(crate) authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged for tokens.
    pub(crate) token_endpoint: String,
    /// Dynamic client registration (RFC 7591), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) registration_endpoint: Option<String>,
    /// The scopes the server issues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// PKCE methods (RFC 7636); the MCP spec requires `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint (RFC 8414: `client_secret_basic` when
    /// absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; MCP
    /// 2025-11-25, "Client ID Metadata Documents").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
    /// The grants the server issues tokens for (RFC 8414: `authorization_code` and `implicit`
    /// when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) grant_types_supported: Option<Vec<String>>,
    /// No metadata was found: the 2025-03-26 default endpoints are used.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) fallback: bool,
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The resource identifier sent as `resource` (RFC 8707).
    pub(crate) resource: String,
    /// The resource's scopes, when its metadata lists them.
    pub(crate) resource_scopes: Option<Vec<String>>,
    /// The authorization server.
    pub(crate) server: ServerMetadata,
}

/// The canonical URI of the MCP server at `url` (MCP authorization, "Canonical Server URI"):
/// lowercase scheme and host (the URL parser's form), no fragment, no user info.
pub(crate) fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let text = url.to_string();
    // `http://host/` is the URL parser's form of `http://host`; the identifier has no slash.
    if url.path() == "/" && url.query().is_none() {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    }
}

/// Where the protected resource metadata of `server` may be, in order (RFC 9728 §3.1; MCP:
/// the path-based location first, then the root).
pub(crate) fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty()
        && let Ok(url) = server.join(&format!("/.well-known/oauth-protected-resource{path}"))
    {
        urls.push(url);
    }
    if let Ok(url) = server.join("/.well-known/oauth-protected-resource") {
        urls.push(url);
    }
    urls
}

/// Where the metadata of the authorization server `issuer` may be, in order (MCP 2025-11-25,
/// "Authorization Server Metadata Discovery"; RFC 8414 §3.1 inserts the well-known part before
/// the issuer's path, OpenID Connect Discovery appends it).
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| issuer.join(&p).ok();
    let candidates = if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".to_owned()),
            at("/.well-known/openid-configuration".to_owned()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    };
    candidates.into_iter().flatten().collect()
}

/// Whether protected resource metadata for `claimed` may be used for the server at `server`
/// (RFC 9728 §3.3: the resource must be the one asked about; MCP: the same origin, and the
/// server's path within the resource's).
pub(crate) fn resource_matches(claimed: &str, server: &Url) -> bool {
    let Ok(claimed) = Url::parse(claimed) else {
        return false;
    };
    if claimed.origin() != server.origin() {
        return false;
    }
    let want = claimed.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    have == want || have.starts_with(&format!("{want}/")) || want.is_empty()
}

/// Finds the authorization server of the MCP server at `server`; `metadata_url` is the
/// challenge's `resource_metadata`.
///
/// # Errors
///
/// [`OAuthError::Discovery`] when the resource metadata names another resource or no
/// authorization server, or an authorization server's metadata does not parse.
pub(crate) async fn discover(
    server: &Url,
    metadata_url: Option<&str>,
) -> Result<Discovered, OAuthError> {
    let mut candidates = Vec::new();
    if let Some(url) = metadata_url.and_then(|u| server.join(u).ok()) {
        candidates.push(url);
    }
    candidates.extend(resource_metadata_urls(server));
    let mut resource_metadata = None;
    for url in candidates {
        if let Some(found) = web::get_json::<ResourceMetadata>(&url).await? {
            resource_metadata = Some(found);
            break;
        }
    }
    let server_resource = canonical_resource(server);
    let (resource, resource_scopes, issuer) = match resource_metadata {
        Some(prm) => {
            let resource = match &prm.resource {
                Some(claimed) if !resource_matches(claimed, server) => {
                    return Err(OAuthError::Discovery(format!(
                        "its protected resource metadata is for another resource ({claimed}); \
                         not signing in (RFC 9728 §3.3)"
                    )));
                }
                Some(claimed) => claimed.clone(),
                None => server_resource,
            };
            let Some(issuer) = prm.authorization_servers.first() else {
                return Err(OAuthError::Discovery(
                    "its protected resource metadata names no authorization server".to_owned(),
                ));
            };
            let issuer = Url::parse(issuer).map_err(|e| {
                OAuthError::Discovery(format!("its authorization server URL is not valid: {e}"))
            })?;
            (resource, prm.scopes_supported, issuer)
        }
        // MCP 2025-03-26: the authorization server is at the MCP server's origin.
        None => {
            let mut origin = server.clone();
            origin.set_path("/");
            origin.set_query(None);
            origin.set_fragment(None);
            (server_resource, None, origin)
        }
    };
    for url in server_metadata_urls(&issuer) {
        if let Some(metadata) = web::get_json::<ServerMetadata>(&url).await? {
            return Ok(Discovered {
                resource,
                resource_scopes,
                server: metadata,
            });
        }
    }
    let at = |p: &str| issuer.join(p).map(String::from).unwrap_or_default();
    Ok(Discovered {
        resource,
        resource_scopes,
        server: ServerMetadata {
            authorization_endpoint: at("/authorize"),
            token_endpoint: at("/token"),
            registration_endpoint: Some(at("/register")),
            fallback: true,
            ..ServerMetadata::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn resource_metadata_is_looked_for_at_the_path_then_the_root() {
        let got: Vec<String> = resource_metadata_urls(&url("http://h:1/mcp"))
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            got,
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(resource_metadata_urls(&url("http://h/")).len(), 1);
    }

    #[test]
    fn server_metadata_locations_follow_the_mcp_order() {
        let got: Vec<String> = server_metadata_urls(&url("https://a.example/tenant1"))
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            got,
            [
                "https://a.example/.well-known/oauth-authorization-server/tenant1",
                "https://a.example/.well-known/openid-configuration/tenant1",
                "https://a.example/tenant1/.well-known/openid-configuration"
            ]
        );
        let root: Vec<String> = server_metadata_urls(&url("https://a.example"))
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            root,
            [
                "https://a.example/.well-known/oauth-authorization-server",
                "https://a.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_of_another_origin_or_path_does_not_match() {
        let server = url("http://localhost:5/mcp");
        assert!(resource_matches("http://localhost:5/mcp", &server));
        assert!(resource_matches("http://localhost:5", &server));
        assert!(resource_matches("http://LOCALHOST:5/", &server));
        assert!(!resource_matches("https://evil.example.com/mcp", &server));
        assert!(!resource_matches("http://localhost:5/other", &server));
        assert!(!resource_matches("http://localhost:6/mcp", &server));
        assert!(!resource_matches("not a url", &server));
    }

    #[test]
    fn the_canonical_uri_has_no_fragment_and_no_root_slash() {
        assert_eq!(
            canonical_resource(&url("HTTPS://Example.COM/mcp#x")),
            "https://example.com/mcp"
        );
        assert_eq!(
            canonical_resource(&url("https://example.com/")),
            "https://example.com"
        );
    }
}
