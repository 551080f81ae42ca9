//! The `Bearer` challenge of a `WWW-Authenticate` header: what a `401` or `403` from the MCP
//! server says about signing in.
//!
//! Sources: RFC 6750 §3 (the `Bearer` scheme's `scope`, `error`, `error_description`),
//! RFC 9728 §5.1 (`resource_metadata`), RFC 9110 §11.6.1 (the header's grammar: challenges
//! separated by commas, each `scheme` then `name=value` parameters, values tokens or quoted
//! strings with `\` escapes).

/// The parameters of the `Bearer` challenge (absent ones `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: the URL of the protected resource metadata (RFC 9728 §5.1).
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated (RFC 6750 §3).
    pub(crate) scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope` … (RFC 6750 §3.1).
    pub(crate) error: Option<String>,
    /// Whether there was a `Bearer` challenge at all (OAuth is only tried when there is).
    pub(crate) bearer: bool,
}

impl Challenge {
    /// The `Bearer` challenge among the header values `values` (several headers, or several
    /// challenges in one), or an empty one when there is none.
    pub(crate) fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let mut found = Challenge::default();
        for value in values {
            let mut in_bearer = false;
            for item in split_items(value) {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                // A new challenge starts with a scheme: a token not followed by `=`.
                let (head, rest) = match item.find([' ', '\t']) {
                    Some(i) if !item[..i].contains('=') => (&item[..i], item[i..].trim()),
                    _ if !item.contains('=') => (item, ""),
                    _ => ("", item),
                };
                if !head.is_empty() {
                    in_bearer = head.eq_ignore_ascii_case("bearer");
                    found.bearer |= in_bearer;
                }
                if !in_bearer || rest.is_empty() {
                    continue;
                }
                let Some((name, value)) = rest.split_once('=') else {
                    continue;
                };
                let value = unquote(value.trim());
                match name.trim().to_ascii_lowercase().as_str() {
                    "resource_metadata" => found.resource_metadata = Some(value),
                    "scope" => found.scope = Some(value),
                    "error" => found.error = Some(value),
                    _ => {}
                }
            }
        }
        found
    }

    /// Whether the challenge says the token lacks a scope (RFC 6750 §3.1).
    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The comma-separated items of a header value, commas inside quoted strings kept.
fn split_items(value: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&value[start..]);
    items
}

/// A token as is, a quoted string without its quotes and escapes.
fn unquote(value: &str) -> String {
    let Some(inner) = value.strip_prefix('"') else {
        return value.to_owned();
    };
    let inner = inner.strip_suffix('"').unwrap_or(inner);
    let mut out = String::with_capacity(inner.len());
    let mut escaped = false;
    for c in inner.chars() {
        if escaped || c != '\\' {
            out.push(c);
            escaped = false;
        } else {
            escaped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_s_step_up_challenge_is_read() {
        let c = Challenge::parse([
            r#"Bearer scope="mcp:basic mcp:write", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp", error="insufficient_scope""#,
        ]);
        assert_eq!(c.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://localhost:1/.well-known/oauth-protected-resource/mcp")
        );
        assert!(c.is_insufficient_scope());
    }

    #[test]
    fn other_schemes_and_quoted_commas_are_skipped() {
        let c = Challenge::parse([
            r#"Basic realm="a, b", Bearer realm="x", error_description="no, really", scope=read"#,
            "DPoP algs=\"ES256\"",
        ]);
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert!(c.bearer);
        assert_eq!(c.error, None);
        assert_eq!(c.resource_metadata, None);
    }

    #[test]
    fn a_bare_bearer_is_an_empty_challenge() {
        let bare = Challenge::parse(["Bearer"]);
        assert!(bare.bearer && bare.scope.is_none() && bare.resource_metadata.is_none());
        assert_eq!(Challenge::parse([]), Challenge::default());
        assert!(!Challenge::parse([r#"Basic realm="x""#]).bearer);
        assert_eq!(
            Challenge::parse([r#"bearer error="invalid_token", scope="a\"b""#]).scope,
            Some("a\"b".to_owned())
        );
    }
}
