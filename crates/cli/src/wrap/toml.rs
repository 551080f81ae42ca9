//! `wrap`/`unwrap` on Codex's `config.toml` (`[mcp_servers.<name>]` with `command`, `args`,
//! `env`), edited with `toml_edit` so comments, key order and layout survive.
//!
//! As in the JSON rewrite, the server's `command` value is moved (with its own spelling: basic
//! or literal string) into `args` and back, and the whitespace before each array element is
//! carried along, so `unwrap` gives back the file byte for byte.

use anyhow::Context as _;
use toml_edit::{Array, DocumentMut, Item, Key, TableLike, Value};

use super::form::{
    Action, ArgsView, Decision, EntryView, Note, Outcome, Rewritten, decide, line_break_and_indent,
    remote_description,
};
use super::select::Selection;

/// Rewrites the servers in `mcp_servers` of the TOML `text` for `action`.
///
/// # Errors
/// The text is not TOML, or `mcp_servers` is not a table.
pub(crate) fn rewrite(
    text: &str,
    action: &Action,
    selection: &Selection,
) -> anyhow::Result<Rewritten> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| anyhow::anyhow!("not valid TOML: {e}"))?;
    let mut notes = Vec::new();
    let mut names = Vec::new();
    if let Some(servers) = doc.get_mut("mcp_servers") {
        let servers = servers
            .as_table_like_mut()
            .context("`mcp_servers` is not a table")?;
        let keys: Vec<String> = servers.iter().map(|(k, _)| k.to_owned()).collect();
        for name in keys {
            names.push(name.clone());
            if !selection.selects(&name) {
                continue;
            }
            let outcome = match servers.get_mut(&name).and_then(Item::as_table_like_mut) {
                Some(entry) => edit_entry(entry, action),
                None => Outcome::Skipped("not a table".to_owned()),
            };
            notes.push(Note {
                label: name,
                outcome,
            });
        }
    }
    let text = if notes.iter().any(|n| n.outcome.changes()) {
        doc.to_string()
    } else {
        text.to_owned()
    };
    Ok(Rewritten { text, notes, names })
}

fn str_value<'a>(entry: &'a dyn TableLike, key: &str) -> Option<&'a str> {
    entry.get(key).and_then(Item::as_str)
}

/// Edits one server table for `action`; returns what happened.
fn edit_entry(entry: &mut dyn TableLike, action: &Action) -> Outcome {
    let view = EntryView {
        remote: remote_description(str_value(entry, "url"), str_value(entry, "type")),
        // Codex's remote entries (bearer_token_env_var, http_headers …) are left alone.
        http: None,
        command: str_value(entry, "command").map(str::to_owned),
        args: match entry.get("args") {
            None => ArgsView::Missing,
            Some(item) => item
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                })
                .map_or(ArgsView::Invalid, ArgsView::Strings),
        },
    };
    match (decide(action, &view), action) {
        (Decision::Wrap, Action::Wrap(wrapper)) => {
            let Some(command) = entry.get_mut("command").and_then(Item::as_value_mut) else {
                return Outcome::Skipped("no `command` string".to_owned());
            };
            let mut exe = Value::from(wrapper.launch.command.as_str());
            *exe.decor_mut() = command.decor().clone();
            let server_cmd = std::mem::replace(command, exe);
            let mut items: Vec<Value> = wrapper
                .prefix()
                .iter()
                .map(|a| Value::from(a.as_str()))
                .collect();
            items.push(server_cmd);
            match entry.get_mut("args").and_then(Item::as_array_mut) {
                Some(array) => insert_front(array, items),
                None => {
                    // No `args`: add one just before `command`. That position is how `unwrap`
                    // knows to remove the key again rather than leave `args = []`.
                    let mut array = Array::new();
                    insert_front(&mut array, items);
                    insert_before(entry, "command", "args", Value::Array(array));
                    // `args` takes the place of `command` in the layout (a comment above
                    // `command` now sits above `args`); `command` gets the default layout.
                    let decor = entry
                        .key_mut("command")
                        .map(|mut k| std::mem::take(k.leaf_decor_mut()));
                    if let (Some(decor), Some(mut args)) = (decor, entry.key_mut("args")) {
                        *args.leaf_decor_mut() = decor;
                    }
                }
            }
            Outcome::Wrapped
        }
        (Decision::Unwrap { cmd }, Action::Unwrap) => {
            let args_first = directly_before(entry, "args", "command");
            let Some(array) = entry.get_mut("args").and_then(Item::as_array_mut) else {
                return Outcome::Skipped("`args` is not an array".to_owned());
            };
            if array.len() <= cmd {
                return Outcome::Skipped("`args` is shorter than expected".to_owned());
            }
            let lead = prefix_of(array, 0);
            let mut server_cmd = array.remove(0);
            for _ in 0..cmd {
                server_cmd = array.remove(0);
            }
            let now_empty = array.is_empty();
            if now_empty {
                // The whitespace before `]` was parsed as the last element's suffix: it goes
                // back to the array.
                let tail = server_cmd
                    .decor()
                    .suffix()
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_owned();
                let trailing = array.trailing().as_str().unwrap_or("").to_owned();
                array.set_trailing(tail + &trailing);
            }
            if let Some(first) = array.get_mut(0) {
                first.decor_mut().set_prefix(lead);
            }
            if now_empty && args_first {
                // Undo the wrap of an entry that had no `args`: `command` takes its layout back.
                let decor = entry
                    .key_mut("args")
                    .map(|mut k| std::mem::take(k.leaf_decor_mut()));
                entry.remove("args");
                if let (Some(decor), Some(mut command)) = (decor, entry.key_mut("command")) {
                    *command.leaf_decor_mut() = decor;
                }
            }
            let Some(command) = entry.get_mut("command").and_then(Item::as_value_mut) else {
                return Outcome::Skipped("no `command` string".to_owned());
            };
            *server_cmd.decor_mut() = command.decor().clone();
            *command = server_cmd;
            Outcome::Unwrapped
        }
        (Decision::Leave(outcome), _) => outcome,
        (Decision::Wrap | Decision::Unwrap { .. }, _) => {
            Outcome::Skipped("no `command` string".to_owned())
        }
        (Decision::WrapRemote(_) | Decision::UnwrapRemote { .. }, _) => Outcome::Skipped(
            "a wrapped remote server in a TOML config is not restored by unwrap".to_owned(),
        ),
    }
}

/// The whitespace before element `index` as written (`""` before the first by default).
fn prefix_of(array: &Array, index: usize) -> String {
    array
        .get(index)
        .and_then(|v| v.decor().prefix())
        .and_then(|p| p.as_str())
        .unwrap_or(if index == 0 { "" } else { " " })
        .to_owned()
}

/// Inserts `items` before the first element of `array`, in the array's layout: the first new
/// item takes the old first element's leading whitespace, the old first element and the other
/// new items take the separator the array already uses.
fn insert_front(array: &mut Array, items: Vec<Value>) {
    let lead = prefix_of(array, 0);
    let gap = if array.len() >= 2 {
        prefix_of(array, 1)
    } else {
        lead.clone()
    };
    let sep = line_break_and_indent(&gap).map_or_else(|| " ".to_owned(), str::to_owned);
    if let Some(first) = array.get_mut(0) {
        first.decor_mut().set_prefix(sep.clone());
    }
    for (i, mut item) in items.into_iter().enumerate() {
        let decor = item.decor_mut();
        decor.set_prefix(if i == 0 { lead.clone() } else { sep.clone() });
        decor.set_suffix("");
        array.insert_formatted(i, item);
    }
}

/// Whether key `first` comes right before key `second` in `table`.
fn directly_before(table: &dyn TableLike, first: &str, second: &str) -> bool {
    let keys: Vec<&str> = table.iter().map(|(k, _)| k).collect();
    keys.windows(2).any(|w| w[0] == first && w[1] == second)
}

/// Inserts `key = value` right before the existing key `anchor`, keeping every other key's
/// formatting and relative order.
fn insert_before(table: &mut dyn TableLike, anchor: &str, key: &str, value: Value) {
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_owned()).collect();
    let from = keys.iter().position(|k| k == anchor).unwrap_or(keys.len());
    let mut moved: Vec<(Key, Item)> = Vec::new();
    for name in &keys[from..] {
        let formatted = table.key(name).cloned();
        if let (Some(formatted), Some(item)) = (formatted, table.remove(name)) {
            moved.push((formatted, item));
        }
    }
    table.insert(key, Item::Value(value));
    for (formatted, item) in moved {
        if let toml_edit::Entry::Vacant(slot) = table.entry_format(&formatted) {
            slot.insert(item);
        }
        // `TableLike::entry_format` of an inline table drops the key's formatting
        // (toml_edit 0.25): put it back.
        if let Some(mut key) = table.key_mut(formatted.get()) {
            *key.leaf_decor_mut() = formatted.leaf_decor().clone();
            *key.dotted_decor_mut() = formatted.dotted_decor().clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::wrap::form::{Launch, Wrapper};

    const EXE: &str = "/opt/bin/mcp-budget";

    fn all() -> Selection {
        Selection(Vec::new())
    }

    fn wrap(text: &str) -> String {
        let action = Action::Wrap(Wrapper {
            launch: Launch::path(EXE.to_owned()),
            max_tokens: None,
            client: None,
        });
        rewrite(text, &action, &all()).expect("rewrite").text
    }

    fn unwrap(text: &str) -> String {
        rewrite(text, &Action::Unwrap, &all())
            .expect("rewrite")
            .text
    }

    #[test]
    fn comments_spelling_and_multi_line_arrays_survive() {
        let text = "[mcp_servers.a]\ncommand = 'x' # note\nargs = [\n  \"1\", # one\n  \"2\",\n]\n";
        let wrapped = wrap(text);
        assert_eq!(
            wrapped,
            "[mcp_servers.a]\ncommand = \"/opt/bin/mcp-budget\" # note\nargs = [\n  \"proxy\",\n  \"--\",\n  'x',\n  \"1\", # one\n  \"2\",\n]\n"
        );
        assert_eq!(unwrap(&wrapped), text);
    }

    #[test]
    fn remote_and_odd_entries_are_left_alone() {
        let text = "[mcp_servers.r]\nurl = \"https://x/mcp\"\n\n[mcp_servers.n]\ncommand = 3\n\n[mcp_servers.q]\ncommand = \"q\"\nargs = [1]\n";
        let out = rewrite(
            text,
            &Action::Wrap(Wrapper {
                launch: Launch::path(EXE.to_owned()),
                max_tokens: None,
                client: None,
            }),
            &all(),
        )
        .expect("rewrite");
        assert_eq!(out.text, text);
        assert!(matches!(out.notes[0].outcome, Outcome::Remote(_)));
        assert!(matches!(out.notes[1].outcome, Outcome::Skipped(_)));
        assert!(matches!(out.notes[2].outcome, Outcome::Skipped(_)));
    }

    /// A TOML string literal for `s`.
    fn quoted(s: &str) -> String {
        Value::from(s).to_string()
    }

    /// A Codex config of stdio servers with arbitrary strings, in one of three layouts.
    fn config() -> impl Strategy<Value = String> {
        let text = "\\PC{0,10}|['\"\\\\ é]{0,4}";
        let server = (
            text,
            prop::option::of(prop::collection::vec(text, 0..4)),
            prop::option::of(prop::collection::btree_set("[A-Z]{1,4}", 0..3)),
        );
        (prop::collection::vec(server, 1..4), 0..3usize).prop_map(|(servers, layout)| {
            let mut out = String::from("# Codex\nmodel = \"m\"\n\n");
            if layout == 1 {
                out.push_str("[mcp_servers]\n");
            }
            for (i, (command, args, env)) in servers.into_iter().enumerate() {
                let args = args.map(|args| {
                    let items: Vec<String> = args.iter().map(|a| quoted(a)).collect();
                    if layout == 2 {
                        let mut s = String::from("[\n");
                        for item in items {
                            s.push_str(&format!("    {item},\n"));
                        }
                        s.push(']');
                        s
                    } else {
                        format!("[{}]", items.join(", "))
                    }
                });
                let env = env.map(|keys| {
                    let pairs: Vec<String> =
                        keys.iter().map(|k| format!("{k}{i} = \"v\"")).collect();
                    format!("{{ {} }}", pairs.join(", "))
                });
                if layout == 1 {
                    let mut parts = vec![format!("command = {}", quoted(&command))];
                    parts.extend(args.map(|a| format!("args = {a}")));
                    parts.extend(env.map(|e| format!("env = {e}")));
                    out.push_str(&format!("s{i} = {{ {} }}\n", parts.join(", ")));
                } else {
                    out.push_str(&format!("[mcp_servers.s{i}]\n# server {i}\n"));
                    out.push_str(&format!("command = {} # cmd\n", quoted(&command)));
                    if let Some(a) = args {
                        out.push_str(&format!("args = {a}\n"));
                    }
                    if let Some(e) = env {
                        out.push_str(&format!("env = {e}\n"));
                    }
                    out.push('\n');
                }
            }
            out
        })
    }

    proptest! {
        // Cases: PROPTEST_CASES (scripts/test.sh: 10,000, about 20 s for both formats).
        /// wrap is idempotent, unwrap(wrap(x)) == x byte for byte, and each wrapped server
        /// runs `exe proxy -- command args…`.
        #[test]
        fn wrap_round_trips(text in config()) {
            let wrapped = wrap(&text);
            prop_assert_eq!(wrap(&wrapped), wrapped.clone());
            prop_assert_eq!(unwrap(&wrapped), text.clone());
            let before: DocumentMut = text.parse().expect("TOML");
            let after: DocumentMut = wrapped.parse().expect("wrapped is TOML");
            let servers = before["mcp_servers"].as_table_like().expect("servers");
            for (name, entry) in servers.iter() {
                let got = &after["mcp_servers"][name];
                prop_assert_eq!(got["command"].as_str(), Some(EXE));
                let mut want = vec![
                    "proxy".to_owned(),
                    "--".to_owned(),
                    entry["command"].as_str().expect("command").to_owned(),
                ];
                if let Some(args) = entry.get("args").and_then(Item::as_array) {
                    want.extend(args.iter().filter_map(|v| v.as_str().map(str::to_owned)));
                }
                let args: Vec<String> = got["args"]
                    .as_array()
                    .expect("args")
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                prop_assert_eq!(args, want);
            }
        }
    }
}
