//! `mcp-budget wrap --merge [NAME]`: many servers of a client's config behind ONE entry running
//! `<…/mcp-budget> proxy [--max-tokens N] --config <servers.toml> --merged-entries <record>`
//! (issue 15 §3), and `unwrap`'s way back.
//!
//! - The servers go to `<client config>.<NAME>.toml` beside the client's file (e.g.
//!   `~/.claude.json.mcp-budget.toml`), one `[servers.<name>]` each, with the client file's
//!   permissions (it may hold the same secrets). Its absolute path is in the entry.
//! - The merged entry takes the place of the first merged server; the others are removed. The
//!   entry's hidden `--merged-entries` argument (ignored by the proxy) is the
//!   [`Record`](plan::Record): the exact text of every removed server and what came before it,
//!   so `unwrap` puts the file back byte for byte, and knows the entry as a merged one.
//! - Only servers the proxy runs exactly as the client would are merged; the others stay their
//!   own entries, with the reason printed: names that are not server names of `[servers]`
//!   (1–64 of `A-Z a-z 0-9 _ -`, no `__`); `${…}` placeholders in a JSON config (Claude Code and
//!   Cursor expand them from the environment, `proxy --config` does not); keys without an
//!   equivalent in `[servers.<name>]` (`cwd`, `disabled`, Codex's `bearer_token_env_var` …);
//!   legacy SSE servers. A server `wrap` wrapped is merged with its own command line.
//! - A file that already has a merged entry is left as it is (`unwrap`, then merge again).
//! - JSON configs: the top-level `mcpServers` (or VS Code's `servers`), not Claude Code's
//!   per-project servers; Codex: `[mcp_servers.<name>]` tables (not inline tables).
//!
//! [`json`] and [`toml`] find the members of each format's file, [`plan`] plans the new text
//! from them (pure), [`run`] reads and writes the files and prints what happened.

mod json;
mod plan;
mod run;
mod toml;

pub(crate) use run::{remove_servers_file, run_merge, unmerge};
