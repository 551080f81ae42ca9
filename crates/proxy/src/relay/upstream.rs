//! What the relay talks to: a child process on stdio, or a remote server over Streamable HTTP.

use std::ffi::OsString;

use super::child::UpstreamCommand;
use super::http::HttpUpstream;

/// The upstream MCP server: the command that starts it (`mcp-budget proxy -- <COMMAND>
/// [ARGS]...`), or the URL of a remote one (`mcp-budget proxy --upstream <URL>`).
///
/// Either way the relay is the same (routing, shaping, timeouts, errors); only the way messages
/// move differs: newline-delimited lines on the child's stdin and stdout, or one HTTP POST per
/// client message with answers as JSON or Server-Sent Events.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Upstream {
    /// A local server started as a child process, spoken to over its stdio.
    Command(UpstreamCommand),
    /// A remote server spoken to over Streamable HTTP.
    Http(HttpUpstream),
}

impl Upstream {
    /// The server started as `program args...` (looked up on `PATH` like a shell would).
    ///
    /// The server inherits the proxy's environment and working directory; its stderr is the
    /// proxy's stderr; its stdin and stdout are the relay's pipes.
    pub fn new(
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Upstream::Command(UpstreamCommand::new(program, args))
    }

    /// A remote server over Streamable HTTP.
    pub fn http(upstream: HttpUpstream) -> Self {
        Upstream::Http(upstream)
    }
}

impl From<HttpUpstream> for Upstream {
    fn from(upstream: HttpUpstream) -> Self {
        Upstream::Http(upstream)
    }
}
