//! The pure side of `wrap --merge` and of `unwrap` on a merged entry: the [`Record`] a merged
//! entry keeps, the members a format module finds in a file ([`Member`], [`Role`]), and the
//! plans ([`plan_merge`], [`plan_unmerge`]) of the new client file and servers file, as text;
//! no file is read or written here.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use anyhow::bail;
use serde::{Deserialize, Serialize};

/// The proxy's hidden flag whose value is the [`Record`] of a merged entry.
pub(crate) const MERGED_ENTRIES: &str = "--merged-entries";

/// The first line of a servers file `wrap --merge` writes; `unwrap` removes only such a file.
pub(crate) const HEADER: &str = "# Written by `mcp-budget wrap --merge`";

/// What a merge removed from the client's file, kept in the merged entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The name of the first merged server, whose place the merged entry took.
    pub(crate) first_key: String,
    /// Its exact text.
    pub(crate) first: String,
    /// The other merged servers, in file order.
    pub(crate) rest: Vec<Removed>,
}

/// One removed server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Removed {
    /// Its name (key).
    pub(crate) key: String,
    /// The key of the member right before it in the file.
    pub(crate) after: String,
    /// The exact text removed (for JSON with the comma and space before it).
    pub(crate) text: String,
}

/// One server as `[servers.<name>]` gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spec {
    Local {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Remote {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// What a member of the file is to a merge.
#[derive(Debug)]
pub(crate) enum Role {
    /// Not a server (a TOML table of another kind).
    Other,
    /// A server the proxy can run.
    Server(Spec),
    /// A server left as its own entry, for this reason.
    Skip(String),
    /// A merged entry, with its record and servers file.
    Merged { record: Record, servers: String },
}

/// A server (or, in TOML, any table) of the file, with its byte ranges.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) key: String,
    pub(crate) role: Role,
    /// What a merged entry replaces when this is the first merged server.
    pub(crate) replace: Range<usize>,
    /// What goes when this is a later merged server.
    pub(crate) removal: Range<usize>,
    /// Where text that followed this member is put back.
    pub(crate) anchor: usize,
}

/// The result of planning a merge or an unmerge.
pub(crate) struct Plan {
    /// The new client file.
    pub(crate) text: String,
    /// What happened to each server, for the summary: (name, what).
    pub(crate) notes: Vec<(String, String)>,
    /// Every server name.
    pub(crate) names: Vec<String>,
    /// For a merge: the servers file's text.
    pub(crate) servers_file: Option<String>,
    /// For an unmerge: the servers file the entry named.
    pub(crate) removed_file: Option<String>,
}

/// Whether `name` is a `[servers]` name with the default separator `__` (the rule of
/// `mcp_budget_proxy::config::servers::check`).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__")
}

/// The arguments of the merged entry.
pub(crate) fn entry_args(max_tokens: Option<usize>, servers: &str, record: &Record) -> Vec<String> {
    let mut args = vec!["proxy".to_owned()];
    if let Some(n) = max_tokens {
        args.push("--max-tokens".to_owned());
        args.push(n.to_string());
    }
    args.push("--config".to_owned());
    args.push(servers.to_owned());
    args.push(MERGED_ENTRIES.to_owned());
    args.push(serde_json::to_string(record).unwrap_or_default());
    args
}

/// For a merged entry (`command` the mcp-budget binary or `uvx`/`npx` running its package,
/// `args` with `--merged-entries`): its record and servers file.
pub(crate) fn merged_of(command: &str, args: &[String]) -> Option<(Record, String)> {
    let proxy = crate::wrap::form::proxy_at(command, args)?;
    let args = &args[proxy..];
    let at = args.iter().position(|a| a == MERGED_ENTRIES)?;
    let record = serde_json::from_str(args.get(at + 1)?).ok()?;
    let config = args.iter().position(|a| a == "--config")?;
    Some((record, args.get(config + 1)?.clone()))
}

/// The servers file for `servers` (name, spec), in that order.
pub(crate) fn servers_file(servers: &[(String, Spec)], from: &str) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    for (name, spec) in servers {
        let mut entry = toml_edit::Table::new();
        match spec {
            Spec::Local { command, args, env } => {
                entry.insert("command", toml_edit::value(command.as_str()));
                if !args.is_empty() {
                    let array: toml_edit::Array = args.iter().map(String::as_str).collect();
                    entry.insert("args", toml_edit::value(array));
                }
                if !env.is_empty() {
                    let mut map = toml_edit::InlineTable::new();
                    for (k, v) in env {
                        map.insert(k, v.as_str().into());
                    }
                    entry.insert("env", toml_edit::value(map));
                }
            }
            Spec::Remote { url, headers } => {
                entry.insert("url", toml_edit::value(url.as_str()));
                if !headers.is_empty() {
                    let mut map = toml_edit::InlineTable::new();
                    for (k, v) in headers {
                        map.insert(k, v.as_str().into());
                    }
                    entry.insert("headers", toml_edit::value(map));
                }
            }
        }
        table.insert(name, toml_edit::Item::Table(entry));
    }
    doc.insert("servers", toml_edit::Item::Table(table));
    format!(
        "{HEADER} from {from};\n# `mcp-budget unwrap` puts these servers back there (and removes this file).\n\n{doc}"
    )
}

/// Plans the merge of the selected servers of `members` into one entry named `name`;
/// `entry_text(first, record)` is the merged entry's text in place of `first.replace`.
///
/// # Errors
/// `name` is taken by a server that is not merged.
pub(crate) fn plan_merge(
    text: &str,
    members: &[Member],
    name: &str,
    selects: &dyn Fn(&str) -> bool,
    entry_text: &dyn Fn(&Member, &Record) -> String,
    from: &str,
) -> anyhow::Result<Plan> {
    let mut notes = Vec::new();
    let names: Vec<String> = members
        .iter()
        .filter(|m| !matches!(m.role, Role::Other))
        .map(|m| m.key.clone())
        .collect();
    let unchanged = |notes| Plan {
        text: text.to_owned(),
        notes,
        names: names.clone(),
        servers_file: None,
        removed_file: None,
    };
    if let Some(m) = members
        .iter()
        .find(|m| matches!(m.role, Role::Merged { .. }))
    {
        notes.push((
            m.key.clone(),
            "already merged, left as it is (to merge again, unwrap first)".to_owned(),
        ));
        return Ok(unchanged(notes));
    }
    let mut chosen: Vec<usize> = Vec::new();
    let mut specs = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if matches!(m.role, Role::Other) || !selects(&m.key) {
            continue;
        }
        match &m.role {
            Role::Server(_) if !valid_name(&m.key) => notes.push((
                m.key.clone(),
                "skipped: not a server name of [servers] (1-64 of A-Z a-z 0-9 _ -, no `__`); \
                 rename it to merge it"
                    .to_owned(),
            )),
            Role::Server(spec) => {
                notes.push((m.key.clone(), "merged".to_owned()));
                chosen.push(i);
                specs.push((m.key.clone(), spec.clone()));
            }
            Role::Skip(why) => notes.push((m.key.clone(), format!("skipped: {why}"))),
            Role::Other | Role::Merged { .. } => {}
        }
    }
    if let Some(taken) = members
        .iter()
        .enumerate()
        .find(|(i, m)| m.key == name && !matches!(m.role, Role::Other) && !chosen.contains(i))
    {
        bail!(
            "a server named {:?} is there already and is not merged; give the merged entry \
             another name (`--merge NAME`)",
            taken.1.key
        );
    }
    let Some((&first, rest)) = chosen.split_first() else {
        return Ok(unchanged(notes));
    };
    let record = Record {
        first_key: members[first].key.clone(),
        first: text[members[first].replace.clone()].to_owned(),
        rest: rest
            .iter()
            .map(|&i| Removed {
                key: members[i].key.clone(),
                after: members[i - 1].key.clone(),
                text: text[members[i].removal.clone()].to_owned(),
            })
            .collect(),
    };
    let mut edits = vec![(
        members[first].replace.clone(),
        entry_text(&members[first], &record),
    )];
    edits.extend(
        rest.iter()
            .map(|&i| (members[i].removal.clone(), String::new())),
    );
    Ok(Plan {
        text: apply(text, edits)?,
        notes,
        names,
        servers_file: Some(servers_file(&specs, from)),
        removed_file: None,
    })
}

/// Plans the unmerge of the merged entry among `members`, if it is selected.
///
/// # Errors
/// Internal: overlapping edits.
pub(crate) fn plan_unmerge(
    text: &str,
    members: &[Member],
    selects: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Option<Plan>> {
    let Some((merged, record, servers)) = members.iter().find_map(|m| match &m.role {
        Role::Merged { record, servers } if selects(&m.key) => Some((m, record, servers)),
        _ => None,
    }) else {
        return Ok(None);
    };
    let mut anchors: HashMap<&str, usize> =
        members.iter().map(|m| (m.key.as_str(), m.anchor)).collect();
    anchors.insert(record.first_key.as_str(), merged.anchor);
    let end = members.last().map_or(text.len(), |m| m.anchor);
    let mut inserts: BTreeMap<usize, String> = BTreeMap::new();
    for removed in &record.rest {
        let at = anchors.get(removed.after.as_str()).copied().unwrap_or(end);
        inserts.entry(at).or_default().push_str(&removed.text);
        anchors.insert(removed.key.as_str(), at);
    }
    let mut edits = vec![(merged.replace.clone(), record.first.clone())];
    edits.extend(inserts.into_iter().map(|(at, t)| (at..at, t)));
    let mut names: Vec<String> = vec![record.first_key.clone()];
    names.extend(record.rest.iter().map(|r| r.key.clone()));
    Ok(Some(Plan {
        text: apply(text, edits)?,
        notes: vec![(
            merged.key.clone(),
            format!("unmerged: {} put back", names.join(", ")),
        )],
        names: members
            .iter()
            .filter(|m| !matches!(m.role, Role::Other))
            .map(|m| m.key.clone())
            .collect(),
        servers_file: None,
        removed_file: Some(servers.clone()),
    }))
}

/// Applies non-overlapping `(range, replacement)` edits to `text`.
fn apply(text: &str, mut edits: Vec<(Range<usize>, String)>) -> anyhow::Result<String> {
    edits.sort_by_key(|(r, _)| (r.start, r.end));
    let mut out = String::with_capacity(text.len() + 512);
    let mut at = 0;
    for (range, replacement) in edits {
        if range.start < at || range.end > text.len() {
            bail!("internal error: overlapping edits at byte {}", range.start);
        }
        out.push_str(&text[at..range.start]);
        out.push_str(&replacement);
        at = range.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Whether any of `strings` holds a `${…}` placeholder.
pub(crate) fn has_placeholder<'a>(mut strings: impl Iterator<Item = &'a str>) -> bool {
    strings.any(|s| s.contains("${"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["fs", "git-hub", "a_b", &"n".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "a b", "my.server", "é", "a__b", &"n".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_record_survives_the_entry_args() {
        let record = Record {
            first_key: "a".into(),
            first: "\"a\": {\"command\": \"x\"}".into(),
            rest: vec![Removed {
                key: "b".into(),
                after: "a".into(),
                text: ",\n  \"b\": {}".into(),
            }],
        };
        let args = entry_args(Some(10), "/x/s.toml", &record);
        assert_eq!(
            merged_of("/bin/mcp-budget", &args),
            Some((record, "/x/s.toml".to_owned()))
        );
        assert_eq!(merged_of("/bin/other", &args), None);
    }

    #[test]
    fn the_servers_file_is_read_by_the_proxy_s_config() {
        let text = servers_file(
            &[
                (
                    "fs".into(),
                    Spec::Local {
                        command: "npx".into(),
                        args: vec!["-y".into(), "a \"b\"".into()],
                        env: vec![("K".into(), "v".into())],
                    },
                ),
                (
                    "web".into(),
                    Spec::Remote {
                        url: "https://x/mcp".into(),
                        headers: vec![("Authorization".into(), "Bearer t".into())],
                    },
                ),
            ],
            "/h/.mcp.json",
        );
        assert!(text.starts_with(HEADER), "{text}");
        let parsed: toml_edit::DocumentMut = text.parse().expect("TOML");
        assert_eq!(parsed["servers"]["fs"]["args"][1].as_str(), Some("a \"b\""));
        assert_eq!(parsed["servers"]["fs"]["env"]["K"].as_str(), Some("v"));
        assert_eq!(
            parsed["servers"]["web"]["headers"]["Authorization"].as_str(),
            Some("Bearer t")
        );
    }
}
