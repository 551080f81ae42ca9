//! What a wrapped entry looks like, and what to do with one entry: the rules shared by the JSON
//! and the TOML rewrites, free of any file format.
//!
//! A wrapped stdio entry is `command = <…/mcp-budget>` and
//! `args = ["proxy", <proxy flags>…, "--", <server command>, <server args>…]`, or the same
//! launched by a package runner (`wrap --command uvx|npx`): `command = "uvx"`, `args =
//! ["mcp-budget@<version>", "proxy", …]`, or `command = "npx"`, `args = ["-y",
//! "mcp-budget@<version>", "proxy", …]`. Nothing else is stored: the server's own command and
//! arguments are the elements after the first `--` that follows `proxy`, so `unwrap` gets them
//! back from the entry alone, and an entry written by hand the way the README shows
//! (`"command": "mcp-budget"`, `"command": "uvx", "args": ["mcp-budget", "proxy", …]`) is
//! recognised too.
//!
//! A remote server (Streamable HTTP: a `url`/`serverUrl` with no `type`, or `type` `http`) in a
//! JSON config becomes a stdio entry running `<…/mcp-budget> proxy [--max-tokens N] --upstream
//! <url> [--header 'Name: value']… --wrapped-entry <the entry's original JSON text>`: its
//! headers become `--header`s (placeholders such as `${TOKEN}` stay for the client to expand),
//! and `unwrap` puts the original text back byte for byte. Legacy SSE (`type: sse`) and TOML
//! remote entries are left alone.

use std::fmt;

/// The argument that starts the proxy's subcommand.
const PROXY: &str = "proxy";
/// The separator between the proxy's flags and the server's command line.
const SEPARATOR: &str = "--";
/// The proxy's hidden flag whose value is the original entry of a wrapped remote server.
const WRAPPED_ENTRY: &str = "--wrapped-entry";

/// The package name of `mcp-budget` on PyPI and npm (what `uvx`/`npx` run).
const PACKAGE: &str = "mcp-budget";

/// How a config entry starts `mcp-budget`: the entry's `command` and the arguments before
/// `proxy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    /// The entry's `command`: the binary's absolute path, `uvx` or `npx`.
    pub(crate) command: String,
    /// The package runner's arguments before `proxy` (none for the binary itself).
    pub(crate) args: Vec<String>,
}

impl Launch {
    /// The binary at `exe` (an absolute path), run directly.
    pub(crate) fn path(exe: String) -> Launch {
        Launch {
            command: exe,
            args: Vec::new(),
        }
    }

    /// `uvx mcp-budget@<version>`: the PyPI wheel of exactly this version, which uv installs
    /// into its cache on first use.
    pub(crate) fn uvx(version: &str) -> Launch {
        Launch {
            command: "uvx".to_owned(),
            args: vec![format!("{PACKAGE}@{version}")],
        }
    }

    /// `npx -y mcp-budget@<version>`: the npm package of exactly this version (`-y`: no
    /// "install?" prompt, which a client's stdio could not answer).
    pub(crate) fn npx(version: &str) -> Launch {
        Launch {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), format!("{PACKAGE}@{version}")],
        }
    }

    /// `args` after the launcher's own: the arguments of `mcp-budget` itself.
    pub(crate) fn then(&self, args: Vec<String>) -> Vec<String> {
        let mut all = self.args.clone();
        all.extend(args);
        all
    }
}

/// What `wrap` puts in front of a server's command line.
#[derive(Debug, Clone)]
pub(crate) struct Wrapper {
    /// How the entry starts `mcp-budget`: its new `command` and the arguments before `proxy`.
    pub(crate) launch: Launch,
    /// `--max-tokens N` for the proxy (tokens), when given.
    pub(crate) max_tokens: Option<usize>,
    /// `--client NAME` for the proxy (a profile of `mcp_budget_core::client`), when the client
    /// is known: how it hands results to its model.
    pub(crate) client: Option<&'static str>,
}

impl Wrapper {
    /// The arguments put before the server's command: `[<launcher args>…] proxy [--client
    /// NAME] [--max-tokens N] --`.
    pub(crate) fn prefix(&self) -> Vec<String> {
        let mut args = self.launch.args.clone();
        args.push(PROXY.to_owned());
        if let Some(c) = self.client {
            args.push("--client".to_owned());
            args.push(c.to_owned());
        }
        if let Some(n) = self.max_tokens {
            args.push("--max-tokens".to_owned());
            args.push(n.to_string());
        }
        args.push(SEPARATOR.to_owned());
        args
    }

    /// The arguments of a wrapped remote server: `[<launcher args>…] proxy [--max-tokens N] --upstream <url>
    /// [--header 'Name: value']… --wrapped-entry <original>`.
    pub(crate) fn remote_args(&self, remote: &HttpEntry, original: &str) -> Vec<String> {
        let mut args = self.prefix();
        args.pop();
        args.push("--upstream".to_owned());
        args.push(remote.url.clone());
        for (name, value) in &remote.headers {
            args.push("--header".to_owned());
            args.push(format!("{name}: {value}"));
        }
        args.push(WRAPPED_ENTRY.to_owned());
        args.push(original.to_owned());
        args
    }
}

/// A remote server the proxy can front: Streamable HTTP at `url`, with these headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpEntry {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
}

/// `wrap` or `unwrap`.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    Wrap(Wrapper),
    Unwrap,
}

/// The parts of one server entry that decide what happens to it, read by a format module.
#[derive(Debug)]
pub(crate) struct EntryView {
    /// `Some(description)` when the entry names a remote server (`url`, `serverUrl`, or a
    /// `type` of `http`/`sse`/`streamable-http`).
    pub(crate) remote: Option<String>,
    /// For a remote server the proxy can front (a JSON config's Streamable HTTP entry whose
    /// headers are all strings): its URL and headers.
    pub(crate) http: Option<HttpEntry>,
    /// The `command` string; `None` when absent or not a string.
    pub(crate) command: Option<String>,
    /// The `args` key.
    pub(crate) args: ArgsView,
}

/// The `args` key of an entry.
#[derive(Debug)]
pub(crate) enum ArgsView {
    Missing,
    Strings(Vec<String>),
    /// Present but not an array of strings.
    Invalid,
}

/// What a format module does to one entry.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Route the entry through the proxy.
    Wrap,
    /// Route a remote entry through `proxy --upstream`.
    WrapRemote(HttpEntry),
    /// Put back the original text of a wrapped remote entry.
    UnwrapRemote { original: String },
    /// Restore the server's command line: `args[cmd]` is its command, `args[cmd + 1..]` its
    /// arguments, `args[..cmd]` the proxy's part.
    Unwrap { cmd: usize },
    /// Leave the entry as it is, for this reason.
    Leave(Outcome),
}

/// What happened to one entry, for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Wrapped,
    Unwrapped,
    AlreadyWrapped,
    NotWrapped,
    /// A remote server the proxy cannot front (legacy SSE, or a TOML entry).
    Remote(String),
    /// Not a stdio server this tool understands (no `command`, odd `args`, not an object).
    Skipped(String),
}

impl Outcome {
    /// Whether the file changes for this entry.
    pub(crate) fn changes(&self) -> bool {
        matches!(self, Outcome::Wrapped | Outcome::Unwrapped)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Wrapped => f.write_str("wrapped"),
            Outcome::Unwrapped => f.write_str("unwrapped"),
            Outcome::AlreadyWrapped => f.write_str(
                "already wrapped, left as it is (to change its proxy flags, unwrap it first)",
            ),
            Outcome::NotWrapped => f.write_str("not wrapped, left as it is"),
            Outcome::Remote(what) => write!(
                f,
                "skipped: remote server ({what}); wrap routes Streamable HTTP servers of JSON \
                 configs only (not legacy SSE, not Codex's TOML), so it stays as it is; to put \
                 one behind the budget by hand, run `mcp-budget proxy --upstream <URL>` as a \
                 stdio server"
            ),
            Outcome::Skipped(why) => write!(f, "skipped: {why}"),
        }
    }
}

/// One server and what happened to it.
pub(crate) struct Note {
    /// The server's name, with its project for Claude Code's per-project servers.
    pub(crate) label: String,
    pub(crate) outcome: Outcome,
}

/// A rewritten config.
pub(crate) struct Rewritten {
    /// The whole new file.
    pub(crate) text: String,
    /// The selected servers, in file order.
    pub(crate) notes: Vec<Note>,
    /// Every server's name, selected or not.
    pub(crate) names: Vec<String>,
}

/// Whether `command` names the `mcp-budget` binary (any directory; `.exe` on Windows).
pub(crate) fn is_mcp_budget(command: &str) -> bool {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    name == "mcp-budget" || name.eq_ignore_ascii_case("mcp-budget.exe")
}

/// The file name of `command` without its directory and, on Windows, its extension.
fn program_name(command: &str) -> &str {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    [".exe", ".cmd", ".EXE", ".CMD"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name)
}

/// Whether `spec` names the `mcp-budget` package, with or without a version
/// (`mcp-budget`, `mcp-budget@0.1.0`, `mcp-budget==0.1.0`, `mcp-budget@latest`).
fn is_package(spec: &str) -> bool {
    spec.strip_prefix(PACKAGE)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('@') || rest.starts_with("=="))
}

/// How many of `args` belong to the launcher when `(command, args)` starts `mcp-budget`: 0 for
/// the binary itself, 1 for `uvx mcp-budget[@V]`, 1 or 2 for `npx [-y|--yes] mcp-budget[@V]`;
/// `None` for any other program.
pub(crate) fn launcher_len(command: &str, args: &[String]) -> Option<usize> {
    if is_mcp_budget(command) {
        return Some(0);
    }
    let first = args.first().map(String::as_str);
    match program_name(command) {
        "uvx" => first.is_some_and(is_package).then_some(1),
        "npx" => match first {
            Some("-y" | "--yes") => args.get(1).is_some_and(|a| is_package(a)).then_some(2),
            Some(spec) => is_package(spec).then_some(1),
            None => None,
        },
        _ => None,
    }
}

/// The index in `args` of `proxy` when `(command, args)` runs `mcp-budget proxy` (directly or
/// through `uvx`/`npx`).
pub(crate) fn proxy_at(command: &str, args: &[String]) -> Option<usize> {
    let at = launcher_len(command, args)?;
    (args.get(at).map(String::as_str) == Some(PROXY)).then_some(at)
}

/// For a wrapped entry, the index in `args` of the server's command (the element after the first
/// `--` that follows `proxy`); `None` when `(command, args)` is not a wrapped entry.
pub(crate) fn wrapped_split(command: &str, args: &[String]) -> Option<usize> {
    let at = proxy_at(command, args)?;
    let sep = at + args[at..].iter().position(|a| a == SEPARATOR)?;
    (sep + 1 < args.len()).then_some(sep + 1)
}

/// Decides what `action` does to an entry.
pub(crate) fn decide(action: &Action, entry: &EntryView) -> Decision {
    if let Some(remote) = &entry.remote {
        return match (action, &entry.http) {
            (Action::Wrap(_), Some(http)) => Decision::WrapRemote(http.clone()),
            (Action::Wrap(_), None) => Decision::Leave(Outcome::Remote(remote.clone())),
            (Action::Unwrap, _) => Decision::Leave(Outcome::NotWrapped),
        };
    }
    let Some(command) = &entry.command else {
        return Decision::Leave(Outcome::Skipped(
            "no `command` string, so not a stdio server".to_owned(),
        ));
    };
    let args: &[String] = match &entry.args {
        ArgsView::Missing => &[],
        ArgsView::Strings(args) => args,
        ArgsView::Invalid => {
            return Decision::Leave(Outcome::Skipped(
                "`args` is not a list of strings".to_owned(),
            ));
        }
    };
    if let Some(original) = wrapped_remote(command, args) {
        return match action {
            Action::Wrap(_) => Decision::Leave(Outcome::AlreadyWrapped),
            Action::Unwrap => Decision::UnwrapRemote { original },
        };
    }
    let split = wrapped_split(command, args);
    match (action, split) {
        (Action::Wrap(_), Some(_)) => Decision::Leave(Outcome::AlreadyWrapped),
        (Action::Wrap(_), None) => Decision::Wrap,
        (Action::Unwrap, Some(cmd)) => Decision::Unwrap { cmd },
        (Action::Unwrap, None) => Decision::Leave(Outcome::NotWrapped),
    }
}

/// For a wrapped remote entry, the original entry's text (the value of `--wrapped-entry`).
pub(crate) fn wrapped_remote(command: &str, args: &[String]) -> Option<String> {
    let proxy = proxy_at(command, args)?;
    let at = proxy + args[proxy..].iter().position(|a| a == WRAPPED_ENTRY)?;
    args.get(at + 1).cloned()
}

/// Whether a remote entry's `type` (absent, or as the clients spell it) is Streamable HTTP,
/// which the proxy speaks; `sse` (the legacy HTTP+SSE transport) and `ws` are not.
pub(crate) fn is_streamable(kind: Option<&str>) -> bool {
    matches!(
        kind,
        None | Some("http" | "streamable-http" | "streamableHttp" | "streamable_http")
    )
}

/// The text of `remote` for an entry: its URL when it has one.
pub(crate) fn remote_description(url: Option<&str>, kind: Option<&str>) -> Option<String> {
    match (url, kind) {
        (Some(url), _) => Some(url.to_owned()),
        (None, Some(kind)) if is_remote_type(kind) => Some(format!("type {kind}")),
        _ => None,
    }
}

/// Transport types of remote servers in the clients' documented formats.
fn is_remote_type(kind: &str) -> bool {
    matches!(
        kind,
        "http" | "sse" | "streamable-http" | "streamableHttp" | "ws"
    )
}

/// The line break and indentation that end `gap` (the text between two array elements, or
/// between `[` and the first): `"\n    "` or `"\r\n\t"`; `None` when `gap` has no line break or
/// its last line holds more than whitespace.
pub(crate) fn line_break_and_indent(gap: &str) -> Option<&str> {
    let at = gap.rfind('\n')?;
    let indent = &gap[at + 1..];
    if !indent.trim().is_empty() {
        return None;
    }
    let start = if gap[..at].ends_with('\r') {
        at - 1
    } else {
        at
    };
    Some(&gap[start..])
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_breaks_and_indents() {
        assert_eq!(line_break_and_indent(",\n    "), Some("\n    "));
        assert_eq!(line_break_and_indent(" # one\n  "), Some("\n  "));
        assert_eq!(line_break_and_indent(", // c\r\n\t\t"), Some("\r\n\t\t"));
        assert_eq!(line_break_and_indent(", "), None);
        assert_eq!(line_break_and_indent("\n /* c */ "), None);
    }

    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn wrapper() -> Action {
        Action::Wrap(Wrapper {
            launch: Launch::path("/opt/bin/mcp-budget".to_owned()),
            max_tokens: None,
            client: None,
        })
    }

    #[test]
    fn prefix_has_the_budget_only_when_given() {
        let mut w = Wrapper {
            launch: Launch::path("/x/mcp-budget".to_owned()),
            max_tokens: None,
            client: None,
        };
        assert_eq!(w.prefix(), strings(&["proxy", "--"]));
        w.max_tokens = Some(4000);
        assert_eq!(
            w.prefix(),
            strings(&["proxy", "--max-tokens", "4000", "--"])
        );
    }

    #[test]
    fn recognises_wrapped_entries_by_binary_name_proxy_and_separator() {
        let args = strings(&["proxy", "--max-tokens", "10", "--", "npx", "-y", "srv"]);
        assert_eq!(wrapped_split("/usr/local/bin/mcp-budget", &args), Some(4));
        assert_eq!(wrapped_split("mcp-budget", &args), Some(4));
        assert_eq!(wrapped_split(r"C:\tools\MCP-BUDGET.EXE", &args), Some(4));
        // Another program, no `proxy`, no `--`, nothing after `--`: not wrapped.
        assert_eq!(wrapped_split("/usr/bin/npx", &args), None);
        assert_eq!(wrapped_split("mcp-budget", &strings(&["demo"])), None);
        assert_eq!(wrapped_split("mcp-budget", &strings(&["proxy", "x"])), None);
        assert_eq!(
            wrapped_split("mcp-budget", &strings(&["proxy", "--"])),
            None
        );
        assert_eq!(wrapped_split("my-mcp-budget", &args), None);
    }

    #[test]
    fn package_runners_of_mcp_budget_are_recognised() {
        let uvx = Launch::uvx("1.2.3");
        assert_eq!(uvx.command, "uvx");
        assert_eq!(uvx.args, strings(&["mcp-budget@1.2.3"]));
        let npx = Launch::npx("1.2.3");
        assert_eq!(npx.args, strings(&["-y", "mcp-budget@1.2.3"]));
        for launch in [uvx, npx, Launch::path("/opt/mcp-budget".to_owned())] {
            let w = Wrapper {
                launch: launch.clone(),
                max_tokens: Some(5),
                client: None,
            };
            let mut args = w.prefix();
            args.extend(strings(&["srv", "--", "x"]));
            let cmd = launch.args.len() + 4;
            assert_eq!(wrapped_split(&launch.command, &args), Some(cmd), "{args:?}");
            assert_eq!(args[cmd], "srv");
        }
        let with = |spec: &[&str]| {
            let mut args = strings(spec);
            args.extend(strings(&["proxy", "--", "srv"]));
            args
        };
        assert_eq!(wrapped_split("uvx", &with(&["mcp-budget"])), Some(3));
        assert_eq!(wrapped_split("uvx", &with(&["mcp-budget==0.1.0"])), Some(3));
        assert_eq!(
            wrapped_split(r"C:\uv\uvx.exe", &with(&["mcp-budget@latest"])),
            Some(3)
        );
        assert_eq!(wrapped_split("npx", &with(&["mcp-budget"])), Some(3));
        assert_eq!(
            wrapped_split("npx.cmd", &with(&["--yes", "mcp-budget@1"])),
            Some(4)
        );
        assert_eq!(
            wrapped_split("/usr/bin/npx", &with(&["-y", "mcp-budget"])),
            Some(4)
        );
        // Other packages, other runners, a runner of mcp-budget without `proxy`: not wrapped.
        assert_eq!(wrapped_split("uvx", &with(&["mcp-budget-x"])), None);
        assert_eq!(wrapped_split("npx", &with(&["-y", "other"])), None);
        assert_eq!(wrapped_split("pipx", &with(&["mcp-budget"])), None);
        assert_eq!(
            wrapped_split("npx", &strings(&["-y", "mcp-budget", "demo"])),
            None
        );
        assert_eq!(wrapped_split("uvx", &[]), None);
    }

    #[test]
    fn the_server_s_own_double_dash_stays_with_the_server() {
        let args = strings(&["proxy", "--", "srv", "--", "--flag"]);
        assert_eq!(wrapped_split("mcp-budget", &args), Some(2));
    }

    #[test]
    fn decisions() {
        let stdio = EntryView {
            remote: None,
            http: None,
            command: Some("npx".to_owned()),
            args: ArgsView::Strings(strings(&["-y", "srv"])),
        };
        assert_eq!(decide(&wrapper(), &stdio), Decision::Wrap);
        assert_eq!(
            decide(&Action::Unwrap, &stdio),
            Decision::Leave(Outcome::NotWrapped)
        );
        let wrapped = EntryView {
            remote: None,
            http: None,
            command: Some("/opt/bin/mcp-budget".to_owned()),
            args: ArgsView::Strings(strings(&["proxy", "--", "npx"])),
        };
        assert_eq!(
            decide(&wrapper(), &wrapped),
            Decision::Leave(Outcome::AlreadyWrapped)
        );
        assert_eq!(
            decide(&Action::Unwrap, &wrapped),
            Decision::Unwrap { cmd: 2 }
        );
        let remote = EntryView {
            remote: Some("https://x/mcp".to_owned()),
            http: None,
            command: None,
            args: ArgsView::Missing,
        };
        assert!(matches!(
            decide(&wrapper(), &remote),
            Decision::Leave(Outcome::Remote(_))
        ));
        let odd = EntryView {
            remote: None,
            http: None,
            command: Some("srv".to_owned()),
            args: ArgsView::Invalid,
        };
        assert!(matches!(
            decide(&wrapper(), &odd),
            Decision::Leave(Outcome::Skipped(_))
        ));
        let no_args = EntryView {
            remote: None,
            http: None,
            command: Some("srv".to_owned()),
            args: ArgsView::Missing,
        };
        assert_eq!(decide(&wrapper(), &no_args), Decision::Wrap);
    }

    #[test]
    fn remote_servers_wrap_through_upstream_and_unwrap_to_their_original_text() {
        let http = HttpEntry {
            url: "https://x/mcp".to_owned(),
            headers: vec![("Authorization".to_owned(), "Bearer ${T}".to_owned())],
        };
        let remote = EntryView {
            remote: Some("https://x/mcp".to_owned()),
            http: Some(http.clone()),
            command: None,
            args: ArgsView::Missing,
        };
        assert_eq!(
            decide(&wrapper(), &remote),
            Decision::WrapRemote(http.clone())
        );
        assert_eq!(
            decide(&Action::Unwrap, &remote),
            Decision::Leave(Outcome::NotWrapped)
        );
        let Action::Wrap(w) = wrapper() else {
            panic!("a wrap action");
        };
        let args = w.remote_args(&http, "{\"url\":\"https://x/mcp\"}");
        assert_eq!(
            args,
            strings(&[
                "proxy",
                "--upstream",
                "https://x/mcp",
                "--header",
                "Authorization: Bearer ${T}",
                "--wrapped-entry",
                "{\"url\":\"https://x/mcp\"}"
            ])
        );
        let wrapped = EntryView {
            remote: None,
            http: None,
            command: Some("/opt/bin/mcp-budget".to_owned()),
            args: ArgsView::Strings(args),
        };
        assert_eq!(
            decide(&wrapper(), &wrapped),
            Decision::Leave(Outcome::AlreadyWrapped)
        );
        assert_eq!(
            decide(&Action::Unwrap, &wrapped),
            Decision::UnwrapRemote {
                original: "{\"url\":\"https://x/mcp\"}".to_owned()
            }
        );
        assert!(is_streamable(None) && is_streamable(Some("http")));
        assert!(!is_streamable(Some("sse")) && !is_streamable(Some("ws")));
    }

    #[test]
    fn remote_descriptions() {
        assert_eq!(
            remote_description(Some("https://a/mcp"), Some("http")).as_deref(),
            Some("https://a/mcp")
        );
        assert_eq!(
            remote_description(None, Some("sse")).as_deref(),
            Some("type sse")
        );
        assert_eq!(remote_description(None, Some("stdio")), None);
        assert_eq!(remote_description(None, None), None);
    }
}
