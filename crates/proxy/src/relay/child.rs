//! The upstream server: its command line, how it is started, and how its exit is reported.

use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};

use tokio::process::{Child, Command};

use super::error::RelayError;

/// The command that starts the upstream MCP server (`mcp-budget proxy -- <COMMAND> [ARGS]...`).
///
/// The server inherits the proxy's environment and working directory; its stderr is the
/// proxy's stderr; its stdin and stdout are the relay's pipes.
#[derive(Debug, Clone)]
pub struct UpstreamCommand {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
}

impl UpstreamCommand {
    /// The server started as `program args...` (looked up on `PATH` like a shell would).
    pub fn new(
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        UpstreamCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            envs: Vec::new(),
        }
    }

    /// Sets `key` to `value` in the server's environment (on top of the proxy's own).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Starts the server with piped stdin and stdout. The child is killed if the relay is
    /// dropped before it exits.
    ///
    /// # Errors
    ///
    /// [`RelayError::Spawn`] when the command cannot be started.
    pub(crate) fn spawn(&self) -> Result<Child, RelayError> {
        Command::new(&self.program)
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| RelayError::Spawn {
                program: self.program.to_string_lossy().into_owned(),
                source,
            })
    }
}

/// The exit code a shell would report: the code, or 128 + the signal number.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    1
}

/// "status 3" or "signal 9", for messages.
pub(crate) fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("signal {signal}");
        }
    }
    status.to_string()
}
