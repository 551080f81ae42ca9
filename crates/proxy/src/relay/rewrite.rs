//! A client's `tools/call` of an upstream tool whose arguments the shaper may rewrite
//! ([`Shaper::rewrite_call`]): the arguments are parsed, handed to the shaper on the blocking
//! pool, and either the line goes on as it came, or with the new arguments spliced in place
//! of the old ones (every other byte of the line kept), or the call is answered here.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::route;
use super::shaper::{Rewrite, Shaper};
use super::{log, reply};

/// What becomes of the line.
pub(super) enum Outcome {
    /// Forward the line as it came.
    Keep,
    /// Forward this line instead.
    Line(Vec<u8>),
    /// Forward nothing; send this line to the client.
    Answer(Vec<u8>),
}

/// Asks `shaper` about a `tools/call` of `tool`. `line` is the line as read, `text` the text
/// it was parsed from (the same bytes, or a masked copy of the same length: see
/// [`route::parse_lenient`]), `params` the request's `params` borrowed from `text`, `raw_id`
/// the id's bytes in `line`. Arguments that serde_json cannot read as they are written (a
/// `NaN` literal) are never rewritten.
pub(super) async fn rewrite(
    shaper: Arc<dyn Shaper>,
    tool: &str,
    line: &[u8],
    text: &[u8],
    params: Option<&RawValue>,
    raw_id: &[u8],
) -> Outcome {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(default, borrow)]
        arguments: Option<&'a RawValue>,
    }
    let arguments = params.and_then(|p| {
        serde_json::from_str::<Params<'_>>(p.get())
            .ok()
            .and_then(|p| p.arguments)
    });
    let (value, span) = match arguments {
        Some(raw) => {
            let Some(span) = route::span_in(text, raw) else {
                return Outcome::Keep;
            };
            let Some(value) = line
                .get(span.clone())
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
            else {
                return Outcome::Keep;
            };
            (value, Some(span))
        }
        None => (serde_json::Value::Null, None),
    };
    let stateless = params
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
        .is_some_and(|p| super::protocol::is_stateless(&p));
    let tool = tool.to_owned();
    let decided = tokio::task::spawn_blocking(move || shaper.rewrite_call(&tool, value)).await;
    match decided {
        Ok(Rewrite::Forward) => Outcome::Keep,
        Ok(Rewrite::Arguments(new)) => {
            let Some(span) = span else {
                // There were no arguments to replace: nothing to splice into.
                return Outcome::Keep;
            };
            let Ok(new) = serde_json::to_vec(&new) else {
                return Outcome::Keep;
            };
            let mut out = Vec::with_capacity(line.len() - span.len() + new.len());
            out.extend_from_slice(&line[..span.start]);
            out.extend_from_slice(&new);
            out.extend_from_slice(&line[span.end..]);
            Outcome::Line(out)
        }
        Ok(Rewrite::Answer(mut result)) => {
            if stateless
                && let Some(object) = result.as_object_mut()
                && !object.contains_key("resultType")
            {
                object.insert("resultType".to_owned(), "complete".into());
            }
            Outcome::Answer(reply::result_line(raw_id, &result).unwrap_or_else(|e| {
                reply::error_line(raw_id, reply::INTERNAL_ERROR, &format!("mcp-budget: {e}"))
            }))
        }
        Err(e) => {
            // The call goes on as it came: a failed rewrite must not lose it.
            log::warn(format_args!(
                "rewriting a tools/call failed, forwarded as it came: {e}"
            ));
            Outcome::Keep
        }
    }
}

/// [`rewrite`] of a line the proxy itself wrote (`call_tool` routed to its tool): parsed again
/// to find its arguments. A line that does not parse goes on as it is.
pub(super) async fn rewrite_routed(
    shaper: Arc<dyn Shaper>,
    tool: &str,
    line: &[u8],
    raw_id: &[u8],
) -> Outcome {
    let mut masked = None;
    let (parsed, text) = route::parse_lenient(line, &mut masked);
    let route::Parsed::Message(envelope) = parsed else {
        return Outcome::Keep;
    };
    rewrite(shaper, tool, line, text, envelope.params, raw_id).await
}
