//! The checks every request passes before anything else: `Origin` (DNS rebinding) and the
//! bearer token. MCP 2025-11-25, "Transports", "Security Warning"; RFC 6750 (Bearer).

use axum::http::{HeaderMap, Uri, header};

use super::principal::sha256_hex;

/// Why a request is refused before it is read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    /// 403: a present `Origin` that is not allowed.
    Origin(String),
    /// 401: no `Authorization: Bearer …` header.
    NoToken,
    /// 401: a bearer token that is not the one.
    BadToken,
}

/// The request checks of one server.
#[derive(Debug)]
pub(crate) struct Guard {
    allowed_origins: Vec<String>,
    /// SHA-256 (hex) of the token, when one is required.
    token_hash: Option<String>,
}

impl Guard {
    pub(crate) fn new(allowed_origins: &[String], token: Option<&str>) -> Guard {
        Guard {
            allowed_origins: allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            token_hash: token.map(|t| sha256_hex(t.as_bytes())),
        }
    }

    /// Checks `Origin`, then the bearer token.
    ///
    /// # Errors
    /// [`Denied`] with the reason.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Denied> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes());
            if !self.origin_allowed(&origin) {
                return Err(Denied::Origin(origin.into_owned()));
            }
        }
        let Some(expected) = &self.token_hash else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .ok_or(Denied::NoToken)?;
        // Compare digests, in constant time: neither the token's length nor a matching prefix
        // shows in the timing.
        if constant_time_eq(sha256_hex(given.as_bytes()).as_bytes(), expected.as_bytes()) {
            Ok(())
        } else {
            Err(Denied::BadToken)
        }
    }

    /// A localhost origin (`localhost`, `127.0.0.1`, `[::1]`, any scheme and port), or one
    /// listed (exact, case-insensitive), or any when `*` is listed. `null` and unparsable
    /// origins are foreign.
    fn origin_allowed(&self, origin: &str) -> bool {
        let norm = origin.trim_end_matches('/').to_ascii_lowercase();
        if self.allowed_origins.iter().any(|o| o == "*" || *o == norm) {
            return true;
        }
        let Ok(uri) = norm.parse::<Uri>() else {
            return false;
        };
        uri.scheme().is_some()
            && matches!(
                uri.host(),
                Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
            )
    }
}

/// The token of `Bearer <token>` (scheme case-insensitive, RFC 6750 section 2.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn origins() {
        let g = Guard::new(&["https://app.example.com".into()], None);
        assert_eq!(g.check(&HeaderMap::new()), Ok(()));
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "https://APP.example.com/",
        ] {
            assert_eq!(g.check(&headers(&[(header::ORIGIN, ok)])), Ok(()), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(
                matches!(
                    g.check(&headers(&[(header::ORIGIN, bad)])),
                    Err(Denied::Origin(_))
                ),
                "{bad}"
            );
        }
        let any = Guard::new(&["*".into()], None);
        assert_eq!(
            any.check(&headers(&[(header::ORIGIN, "http://evil.example")])),
            Ok(())
        );
    }

    #[test]
    fn bearer_tokens() {
        let g = Guard::new(&[], Some("s3cret"));
        assert_eq!(g.check(&HeaderMap::new()), Err(Denied::NoToken));
        assert_eq!(
            g.check(&headers(&[(header::AUTHORIZATION, "Bearer s3cre")])),
            Err(Denied::BadToken)
        );
        assert_eq!(
            g.check(&headers(&[(header::AUTHORIZATION, "Basic s3cret")])),
            Err(Denied::NoToken)
        );
        assert_eq!(
            g.check(&headers(&[(header::AUTHORIZATION, "bearer s3cret")])),
            Ok(())
        );
        // Origin first: a foreign page with the right token is still refused.
        assert!(matches!(
            g.check(&headers(&[
                (header::AUTHORIZATION, "Bearer s3cret"),
                (header::ORIGIN, "http://evil.example")
            ])),
            Err(Denied::Origin(_))
        ));
    }
}
