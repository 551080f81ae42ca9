//! The protocol versions the relay tells apart: a request of the stateless protocol
//! (2026-07-28 or later) names its version in `_meta`, and is answered and cancelled as that
//! protocol says.

/// Whether a request speaks the stateless protocol (2026-07-28 or later): its
/// `_meta["io.modelcontextprotocol/protocolVersion"]` is such a version. Versions are dates,
/// so they compare as strings.
pub(super) fn is_stateless(params: &serde_json::Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(serde_json::Value::as_str)
        .is_some_and(|v| v >= STATELESS_SINCE)
}

/// The first protocol version without `initialize` and sessions, whose requests carry their
/// version in `_meta` and whose results carry `resultType` (MCP 2026-07-28).
pub(super) const STATELESS_SINCE: &str = "2026-07-28";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stateless_requests_are_told_by_their_meta() {
        let meta = |v: &str| json!({"name": "read_more", "_meta": {"io.modelcontextprotocol/protocolVersion": v}});
        assert!(is_stateless(&meta("2026-07-28")));
        assert!(is_stateless(&meta("2027-01-01")));
        assert!(!is_stateless(&meta("2025-11-25")));
        assert!(!is_stateless(&json!({"name": "read_more"})));
        assert!(!is_stateless(
            &json!({"name": "read_more", "_meta": {"progressToken": 1}})
        ));
    }
}
