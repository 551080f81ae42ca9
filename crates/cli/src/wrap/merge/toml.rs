//! `wrap --merge` on Codex's `config.toml`: the members are the file's header tables in file
//! order, a server being `[mcp_servers.<name>]` with its sub-tables (`[mcp_servers.<name>.env]`).
//! A member runs from its header to the next member's header; the blank and comment lines at
//! its end stay in place when the first server's table is replaced (they may describe the next
//! table).

use toml_edit::{Document, Item, TableLike};

use super::plan::{Member, Role, Spec, merged_of};
use crate::wrap::form::{wrapped_remote, wrapped_split};

/// The header tables of `text` with their members.
///
/// # Errors
/// Not TOML.
pub(crate) fn members(text: &str) -> anyhow::Result<Vec<Member>> {
    let doc = Document::parse(text).map_err(|e| anyhow::anyhow!("not valid TOML: {e}"))?;
    let mut headers: Vec<(usize, Vec<String>)> = Vec::new();
    collect(doc.as_table(), &mut Vec::new(), &mut headers);
    headers.sort_by_key(|(at, _)| *at);
    // Group: a server's sub-tables belong to it.
    let mut groups: Vec<(usize, String, Option<String>)> = Vec::new();
    for (at, path) in headers {
        let server = (path.len() >= 2 && path[0] == "mcp_servers").then(|| path[1].clone());
        match (&server, groups.last()) {
            (Some(name), Some((_, _, Some(last)))) if last == name => {}
            _ => {
                let key = server
                    .clone()
                    .unwrap_or_else(|| format!("[{}]", path.join(".")));
                groups.push((at, key, server));
            }
        }
    }
    let servers = doc.get("mcp_servers").and_then(Item::as_table_like);
    let mut members = Vec::new();
    for (i, (start, key, server)) in groups.iter().enumerate() {
        let end = groups.get(i + 1).map_or(text.len(), |g| g.0);
        let body = &text[*start..end];
        let kept = body.len() - tail_len(body);
        let role = match server {
            None => Role::Other,
            Some(name) => match servers
                .and_then(|s| s.get(name))
                .and_then(Item::as_table_like)
            {
                Some(table) => role(table),
                None => Role::Other,
            },
        };
        members.push(Member {
            key: key.clone(),
            role,
            replace: *start..*start + kept,
            removal: *start..end,
            anchor: end,
        });
    }
    Ok(members)
}

/// The header tables under `table` (not implicit, not dotted): (offset of the `[`, path).
fn collect(table: &dyn TableLike, path: &mut Vec<String>, out: &mut Vec<(usize, Vec<String>)>) {
    for (key, item) in table.iter() {
        path.push(key.to_owned());
        match item {
            Item::Table(t) => {
                if let Some(span) = t.span().filter(|_| !t.is_implicit() && !t.is_dotted()) {
                    out.push((span.start, path.clone()));
                }
                collect(t, path, out);
            }
            Item::ArrayOfTables(array) => {
                for t in array.iter() {
                    if let Some(span) = t.span() {
                        out.push((span.start, path.clone()));
                    }
                }
            }
            _ => {}
        }
        path.pop();
    }
}

/// The length of the blank and comment lines that end `body` (never its first line, the
/// header).
fn tail_len(body: &str) -> usize {
    let mut tail = 0;
    for line in body
        .split_inclusive('\n')
        .skip(1)
        .collect::<Vec<_>>()
        .iter()
        .rev()
    {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            tail += line.len();
        } else {
            break;
        }
    }
    tail
}

/// What one `[mcp_servers.<name>]` table is to a merge.
fn role(table: &dyn TableLike) -> Role {
    let string = |key: &str| table.get(key).and_then(Item::as_str).map(str::to_owned);
    let pairs = |key: &str| -> Option<Vec<(String, String)>> {
        match table.get(key) {
            None => Some(Vec::new()),
            Some(item) => item.as_table_like().and_then(|t| {
                t.iter()
                    .map(|(k, v)| v.as_str().map(|v| (k.to_owned(), v.to_owned())))
                    .collect()
            }),
        }
    };
    if table.get("enabled").and_then(Item::as_bool) == Some(false) {
        return Role::Skip("disabled (`enabled = false`)".to_owned());
    }
    // Timeouts are the client's own business; the proxy has no equivalent and needs none.
    const IGNORED: [&str; 3] = ["enabled", "startup_timeout_sec", "tool_timeout_sec"];
    let other = |known: &[&str]| {
        table
            .iter()
            .map(|(k, _)| k)
            .find(|k| !known.contains(k) && !IGNORED.contains(k))
            .map(|k| Role::Skip(format!("`{k}` has no equivalent in [servers.<name>]")))
    };
    if let Some(url) = string("url") {
        if let Some(skip) = other(&["url", "http_headers"]) {
            return skip;
        }
        let Some(headers) = pairs("http_headers") else {
            return Role::Skip("`http_headers` is not a table of strings".to_owned());
        };
        return Role::Server(Spec::Remote { url, headers });
    }
    let Some(command) = string("command") else {
        return Role::Skip("no `command` string, so not a stdio server".to_owned());
    };
    let args = match table.get("args") {
        None => Some(Vec::new()),
        Some(item) => item.as_array().and_then(|a| {
            a.iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        }),
    };
    let Some(args) = args else {
        return Role::Skip("`args` is not a list of strings".to_owned());
    };
    if let Some((record, servers)) = merged_of(&command, &args) {
        return Role::Merged { record, servers };
    }
    if wrapped_remote(&command, &args).is_some() {
        return Role::Skip("a remote server `wrap` wrapped: unwrap it first".to_owned());
    }
    if let Some(skip) = other(&["command", "args", "env"]) {
        return skip;
    }
    let Some(env) = pairs("env") else {
        return Role::Skip("`env` is not a table of strings".to_owned());
    };
    let (command, args) = match wrapped_split(&command, &args) {
        Some(cmd) => (args[cmd].clone(), args[cmd + 1..].to_vec()),
        None => (command, args),
    };
    Role::Server(Spec::Local { command, args, env })
}

/// The merged entry's table: `[mcp_servers.<name>]` with `command` and `args`.
pub(crate) fn entry_text(name: &str, exe: &str, args: &[String]) -> String {
    let quote = |s: &str| toml_edit::Value::from(s).to_string();
    let items: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\n",
        quote(exe),
        items.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_blank_and_comment_lines() {
        assert_eq!(tail_len("[a]\nx = 1\n\n# next\n"), "\n# next\n".len());
        assert_eq!(tail_len("[a]\nx = 1\n"), 0);
        assert_eq!(tail_len("[a]\n\n"), 1);
        assert_eq!(tail_len("[a]\nx = 1"), 0);
    }

    #[test]
    fn members_follow_the_headers() {
        let text = "model = \"m\"\n\n[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.a.env]\nK = \"v\"\n\n[profiles.p]\nx = 1\n# b next\n[mcp_servers.b]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"T\"\n";
        let members = members(text).expect("members");
        let keys: Vec<&str> = members.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["a", "[profiles.p]", "b"]);
        assert_eq!(
            &text[members[0].replace.clone()],
            "[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.a.env]\nK = \"v\"\n"
        );
        assert!(
            matches!(&members[0].role, Role::Server(Spec::Local { env, .. }) if env.len() == 1)
        );
        assert!(matches!(members[1].role, Role::Other));
        assert!(
            matches!(&members[2].role, Role::Skip(why) if why.contains("bearer_token_env_var"))
        );
        assert_eq!(members[2].anchor, text.len());
    }
}
