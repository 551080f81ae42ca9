//! `wrap`/`unwrap` on the JSON configs (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf):
//! surgical text edits at byte ranges found by a JSONC parser, so every byte outside the edited
//! `command` and `args` values (indentation, key order, comments, other keys) stays as it was.
//!
//! The server's original `command` literal is moved, as raw text, into `args` and back, so
//! `unwrap` restores it byte for byte (escapes included). Arrays keep their layout: new elements
//! are inserted before the first one with the separator the array already uses.

use anyhow::{Context as _, bail};
use jsonc_parser::ast::{Array, Object, ObjectProp, Value};
use jsonc_parser::common::Ranged as _;
use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};

use super::client::Place;
use super::form::{
    Action, ArgsView, Decision, EntryView, HttpEntry, Note, Outcome, Rewritten, decide,
    is_streamable, line_break_and_indent, remote_description,
};
use super::select::Selection;

/// One byte-range replacement in the text.
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

/// Rewrites the servers found at `places` in `text` for `action`.
///
/// # Errors
/// The text is not JSON (comments and trailing commas allowed, as VS Code writes them), its
/// top level is not an object, or a place holds something other than an object.
pub(crate) fn rewrite(
    text: &str,
    places: &[Place],
    action: &Action,
    selection: &Selection,
) -> anyhow::Result<Rewritten> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let options = parse_options();
    let parsed = parse_to_ast(body, &CollectOptions::default(), &options)
        .map_err(|e| anyhow::anyhow!("not valid JSON: {e}"))?;
    let Some(Value::Object(root)) = &parsed.value else {
        bail!("not valid JSON for an MCP config: the top level is not an object");
    };

    let mut servers: Vec<(String, String, &Value<'_>)> = Vec::new();
    for place in places {
        match place {
            Place::Key(key) => {
                if let Some(prop) = root.get(key) {
                    let map = as_object(&prop.value)
                        .with_context(|| format!("`{key}` is not an object"))?;
                    for server in &map.properties {
                        let name = server.name.as_str().to_owned();
                        servers.push((name.clone(), name, &server.value));
                    }
                }
            }
            Place::ClaudeProjects => {
                let Some(projects) = root.get_object("projects") else {
                    continue;
                };
                for project in &projects.properties {
                    let Some(map) = as_object(&project.value).and_then(|p| p.get("mcpServers"))
                    else {
                        continue;
                    };
                    let path = project.name.as_str();
                    let map = as_object(&map.value).with_context(|| {
                        format!("`projects.{path}.mcpServers` is not an object")
                    })?;
                    for server in &map.properties {
                        let name = server.name.as_str().to_owned();
                        let label = format!("{name} (project {path})");
                        servers.push((name, label, &server.value));
                    }
                }
            }
        }
    }

    let mut notes = Vec::new();
    let mut edits = Vec::new();
    let mut names = Vec::new();
    for (name, label, value) in servers {
        names.push(name.clone());
        if !selection.selects(&name) {
            continue;
        }
        let outcome = match as_object(value) {
            None => Outcome::Skipped("not an object".to_owned()),
            Some(entry) => edit_entry(body, entry, action, &mut edits),
        };
        notes.push(Note { label, outcome });
    }
    Ok(Rewritten {
        text: format!("{bom}{}", apply(body, edits)?),
        notes,
        names,
    })
}

fn as_object<'a, 'b>(value: &'b Value<'a>) -> Option<&'b Object<'a>> {
    match value {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// A remote entry the proxy can front: Streamable HTTP (by its `type`, or none), a URL string,
/// and `headers`, when present, an object of strings.
fn http_entry(entry: &Object<'_>) -> Option<HttpEntry> {
    let url = entry
        .get_string("url")
        .or_else(|| entry.get_string("serverUrl"))?;
    let kind = match entry.get("type").map(|p| &p.value) {
        None => None,
        Some(Value::StringLit(s)) => Some(s.value.as_ref()),
        Some(_) => return None,
    };
    if !is_streamable(kind) {
        return None;
    }
    let headers = match entry.get("headers").map(|p| &p.value) {
        None => Vec::new(),
        Some(Value::Object(map)) => map
            .properties
            .iter()
            .map(|p| match &p.value {
                Value::StringLit(s) => Some((p.name.as_str().to_owned(), s.value.to_string())),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?,
        Some(_) => return None,
    };
    Some(HttpEntry {
        url: url.value.to_string(),
        headers,
    })
}

/// The text of the stdio entry that replaces the remote `entry`: `type` (when the entry had
/// one), `command` and `args`, laid out like the entry (its members' line break and indent).
pub(crate) fn remote_entry_text(
    text: &str,
    entry: &Object<'_>,
    args: &[String],
    exe: &str,
) -> String {
    let mut members = Vec::new();
    if entry.get("type").is_some() {
        members.push(format!("{}: {}", quote("type"), quote("stdio")));
    }
    members.push(format!("{}: {}", quote("command"), quote(exe)));
    let items: Vec<String> = args.iter().map(|a| quote(a)).collect();
    members.push(format!("{}: [{}]", quote("args"), items.join(", ")));
    let inner = entry
        .properties
        .first()
        .and_then(|first| line_break_and_indent(&text[entry.start() + 1..first.start()]));
    let closing = entry
        .properties
        .last()
        .map(|last| &text[last.end()..entry.end() - 1])
        .map(|gap| gap.trim_start_matches(','))
        .and_then(line_break_and_indent);
    match (inner, closing) {
        (Some(inner), Some(closing)) => {
            let mut out = String::from("{");
            out.push_str(inner);
            out.push_str(&members.join(&format!(",{inner}")));
            out.push_str(closing);
            out.push('}');
            out
        }
        _ => format!("{{{}}}", members.join(", ")),
    }
}

/// Appends the edits `action` makes to one server entry; returns what happened.
fn edit_entry(text: &str, entry: &Object<'_>, action: &Action, edits: &mut Vec<Edit>) -> Outcome {
    let view = EntryView {
        http: http_entry(entry),
        remote: remote_description(
            entry
                .get_string("url")
                .or_else(|| entry.get_string("serverUrl"))
                .map(|s| s.value.as_ref()),
            entry.get_string("type").map(|s| s.value.as_ref()),
        ),
        command: entry.get_string("command").map(|s| s.value.to_string()),
        args: match entry.get("args").map(|p| &p.value) {
            None => ArgsView::Missing,
            Some(Value::Array(array)) => array
                .elements
                .iter()
                .map(|e| match e {
                    Value::StringLit(s) => Some(s.value.to_string()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .map_or(ArgsView::Invalid, ArgsView::Strings),
            Some(_) => ArgsView::Invalid,
        },
    };
    let decision = decide(action, &view);
    match (decision, action) {
        (Decision::WrapRemote(http), Action::Wrap(wrapper)) => {
            let original = entry.text(text);
            let args = wrapper.remote_args(&http, original);
            edits.push(Edit {
                start: entry.start(),
                end: entry.end(),
                text: remote_entry_text(text, entry, &args, &wrapper.launch.command),
            });
            Outcome::Wrapped
        }
        (Decision::UnwrapRemote { original }, Action::Unwrap) => {
            edits.push(Edit {
                start: entry.start(),
                end: entry.end(),
                text: original,
            });
            Outcome::Unwrapped
        }
        (decision, _) => edit_stdio_entry(text, entry, action, decision, edits),
    }
}

/// [`edit_entry`] for a stdio entry (and anything left as it is).
fn edit_stdio_entry(
    text: &str,
    entry: &Object<'_>,
    action: &Action,
    decision: Decision,
    edits: &mut Vec<Edit>,
) -> Outcome {
    // `decide` answers Wrap/Unwrap only when `command` is a string and `args` is absent or
    // an array of strings; these lookups cannot fail then.
    let Some(command) = entry.get("command") else {
        return leave(decision);
    };
    let args = entry.get("args");
    match (decision, action) {
        (Decision::Wrap, Action::Wrap(wrapper)) => {
            let mut items: Vec<String> = wrapper.prefix().iter().map(|a| quote(a)).collect();
            items.push(command.value.text(text).to_owned());
            edits.push(Edit {
                start: command.value.start(),
                end: command.value.end(),
                text: quote(&wrapper.launch.command),
            });
            match args.map(|p| &p.value) {
                Some(Value::Array(array)) => insert_front(text, array, &items, edits),
                _ => {
                    // No `args`: add one just before `command`. That position is how `unwrap`
                    // knows to remove the key again rather than leave `"args": []`.
                    let colon = &text[command.name.end()..command.value.start()];
                    let ws = whitespace_before(text, command.start());
                    edits.push(Edit {
                        start: command.start(),
                        end: command.start(),
                        text: format!(
                            "\"args\"{colon}[{}],{}",
                            items.join(", "),
                            if ws.is_empty() { " " } else { ws }
                        ),
                    });
                }
            }
            Outcome::Wrapped
        }
        (Decision::Unwrap { cmd }, Action::Unwrap) => {
            let Some(args_prop) = args else {
                return Outcome::Skipped("no `args`".to_owned());
            };
            let Value::Array(array) = &args_prop.value else {
                return Outcome::Skipped("`args` is not an array".to_owned());
            };
            let elements = &array.elements;
            let (Some(first), Some(server_cmd)) = (elements.first(), elements.get(cmd)) else {
                return Outcome::Skipped("`args` is shorter than expected".to_owned());
            };
            edits.push(Edit {
                start: command.value.start(),
                end: command.value.end(),
                text: server_cmd.text(text).to_owned(),
            });
            if let Some(rest) = elements.get(cmd + 1) {
                edits.push(Edit {
                    start: first.start(),
                    end: rest.start(),
                    text: String::new(),
                });
            } else if directly_before(entry, args_prop, command) {
                edits.push(Edit {
                    start: args_prop.start(),
                    end: command.start(),
                    text: String::new(),
                });
            } else {
                edits.push(Edit {
                    start: first.start(),
                    end: server_cmd.end(),
                    text: String::new(),
                });
            }
            Outcome::Unwrapped
        }
        (decision, _) => leave(decision),
    }
}

fn leave(decision: Decision) -> Outcome {
    match decision {
        Decision::Leave(outcome) => outcome,
        // Wrap/Unwrap always come with a `command` key and the matching action.
        Decision::Wrap
        | Decision::Unwrap { .. }
        | Decision::WrapRemote(_)
        | Decision::UnwrapRemote { .. } => {
            Outcome::Skipped("no `command` string, so not a stdio server".to_owned())
        }
    }
}

/// Whether `first` is the property right before `second` in `object`.
fn directly_before(object: &Object<'_>, first: &ObjectProp<'_>, second: &ObjectProp<'_>) -> bool {
    object
        .properties
        .windows(2)
        .any(|w| w[0].start() == first.start() && w[1].start() == second.start())
}

/// Inserts `items` (JSON texts) before the first element of `array`, in its layout.
fn insert_front(text: &str, array: &Array<'_>, items: &[String], edits: &mut Vec<Edit>) {
    let Some(first) = array.elements.first() else {
        // `[]` (or `[ ]`): the items go right after the bracket, so removing them restores it.
        edits.push(Edit {
            start: array.start() + 1,
            end: array.start() + 1,
            text: items.join(", "),
        });
        return;
    };
    let gap = match array.elements.get(1) {
        Some(second) => &text[first.end()..second.start()],
        None => &text[array.start() + 1..first.start()],
    };
    let sep = if gap.trim() == "," {
        gap.to_owned()
    } else {
        line_break_and_indent(gap).map_or_else(|| ", ".to_owned(), |nl| format!(",{nl}"))
    };
    let mut inserted = items.join(&sep);
    inserted.push_str(&sep);
    edits.push(Edit {
        start: first.start(),
        end: first.start(),
        text: inserted,
    });
}

/// The run of whitespace that ends at byte `at`.
fn whitespace_before(text: &str, at: usize) -> &str {
    let before = &text[..at];
    let start = before.trim_end().len();
    &before[start..]
}

/// What the client files are parsed as: JSON with comments and trailing commas (JSONC, as VS
/// Code and Claude Code accept), nothing looser, so a rewritten file stays one every client reads.
pub(crate) fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// `s` as a JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// Applies non-overlapping edits to `text`.
fn apply(text: &str, mut edits: Vec<Edit>) -> anyhow::Result<String> {
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for edit in edits {
        if edit.start < at {
            bail!("internal error: overlapping edits at byte {}", edit.start);
        }
        out.push_str(&text[at..edit.start]);
        out.push_str(&edit.text);
        at = edit.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value as Json, json};

    use super::*;
    use crate::wrap::form::{Launch, Wrapper};

    const EXE: &str = "/opt/bin/mcp-budget";

    fn wrap_action(max_tokens: Option<usize>) -> Action {
        Action::Wrap(Wrapper {
            launch: Launch::path(EXE.to_owned()),
            max_tokens,
            client: None,
        })
    }

    fn all() -> Selection {
        Selection(Vec::new())
    }

    fn wrap(text: &str) -> String {
        rewrite(
            text,
            &[Place::Key("mcpServers")],
            &wrap_action(None),
            &all(),
        )
        .expect("rewrite")
        .text
    }

    fn unwrap(text: &str) -> String {
        rewrite(text, &[Place::Key("mcpServers")], &Action::Unwrap, &all())
            .expect("rewrite")
            .text
    }

    #[test]
    fn new_elements_follow_the_array_s_own_separator() {
        let multi = "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\n    \"1\",\n    \"2\"\n]}}}";
        assert_eq!(
            wrap(multi),
            "{\"mcpServers\": {\"a\": {\"command\": \"/opt/bin/mcp-budget\", \"args\": [\n    \"proxy\",\n    \"--\",\n    \"x\",\n    \"1\",\n    \"2\"\n]}}}"
        );
        let one = "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\n  \"1\"\n]}}}";
        assert_eq!(
            wrap(one),
            "{\"mcpServers\": {\"a\": {\"command\": \"/opt/bin/mcp-budget\", \"args\": [\n  \"proxy\",\n  \"--\",\n  \"x\",\n  \"1\"\n]}}}"
        );
    }

    #[test]
    fn a_missing_args_goes_before_command_and_leaves_with_unwrap() {
        let text = "{\"mcpServers\": {\"a\": {\n  \"command\": \"x\"\n}}}";
        let wrapped = wrap(text);
        assert_eq!(
            wrapped,
            "{\"mcpServers\": {\"a\": {\n  \"args\": [\"proxy\", \"--\", \"x\"],\n  \"command\": \"/opt/bin/mcp-budget\"\n}}}"
        );
        assert_eq!(unwrap(&wrapped), text);
    }

    #[test]
    fn the_budget_flag_is_part_of_the_prefix() {
        let text = r#"{"mcpServers": {"a": {"command": "x", "args": ["y"]}}}"#;
        let out = rewrite(
            text,
            &[Place::Key("mcpServers")],
            &wrap_action(Some(3000)),
            &all(),
        )
        .expect("rewrite");
        assert_eq!(
            out.text,
            r#"{"mcpServers": {"a": {"command": "/opt/bin/mcp-budget", "args": ["proxy", "--max-tokens", "3000", "--", "x", "y"]}}}"#
        );
        assert_eq!(unwrap(&out.text), text);
    }

    #[test]
    fn selection_and_names() {
        let text = r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": 3}}"#;
        let out = rewrite(
            text,
            &[Place::Key("mcpServers")],
            &wrap_action(None),
            &Selection(vec!["b".to_owned(), "c".to_owned()]),
        )
        .expect("rewrite");
        assert_eq!(out.names, ["a", "b", "c"]);
        let labels: Vec<_> = out.notes.iter().map(|n| n.label.as_str()).collect();
        assert_eq!(labels, ["b", "c"]);
        assert_eq!(out.notes[0].outcome, Outcome::Wrapped);
        assert!(matches!(out.notes[1].outcome, Outcome::Skipped(_)));
        assert!(out.text.contains(r#""a": {"command": "x"}"#));
    }

    /// A config of stdio servers with arbitrary strings, in one of three layouts.
    fn config() -> impl Strategy<Value = String> {
        let text = "\\PC{0,10}|[\"\\\\/ é\u{1F600}]{0,4}";
        let server = (
            text,
            prop::option::of(prop::collection::vec(text, 0..4)),
            prop::option::of(prop::collection::btree_map("[A-Z]{1,4}", text, 0..3)),
        );
        (prop::collection::vec(server, 1..4), 0..3usize).prop_map(|(servers, layout)| {
            let mut map = Map::new();
            for (i, (command, args, env)) in servers.into_iter().enumerate() {
                let mut entry = Map::new();
                entry.insert("command".to_owned(), json!(command));
                if let Some(args) = args {
                    entry.insert("args".to_owned(), json!(args));
                }
                if let Some(env) = env {
                    entry.insert("env".to_owned(), json!(env));
                }
                map.insert(format!("s{i}"), Json::Object(entry));
            }
            let root = json!({"before": 1, "mcpServers": map, "after": [true]});
            match layout {
                0 => serde_json::to_string(&root).expect("JSON"),
                1 => serde_json::to_string_pretty(&root).expect("JSON"),
                _ => {
                    let mut out = Vec::new();
                    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
                    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
                    serde::Serialize::serialize(&root, &mut ser).expect("JSON");
                    String::from_utf8(out).expect("UTF-8")
                }
            }
        })
    }

    proptest! {
        // Cases: PROPTEST_CASES (scripts/test.sh: 10,000, about 20 s for both formats).
        /// wrap is idempotent, unwrap(wrap(x)) == x byte for byte, and the wrapped file means
        /// `exe proxy -- command args…` with everything else equal.
        #[test]
        fn wrap_round_trips(text in config()) {
            let wrapped = wrap(&text);
            prop_assert_eq!(wrap(&wrapped), wrapped.clone());
            prop_assert_eq!(unwrap(&wrapped), text.clone());
            let before: Json = serde_json::from_str(&text).expect("JSON");
            let after: Json = serde_json::from_str(&wrapped).expect("wrapped is JSON");
            prop_assert_eq!(&before["before"], &after["before"]);
            prop_assert_eq!(&before["after"], &after["after"]);
            for (name, entry) in before["mcpServers"].as_object().expect("servers") {
                let got = &after["mcpServers"][name];
                let mut args = vec![json!("proxy"), json!("--"), entry["command"].clone()];
                args.extend(entry["args"].as_array().cloned().unwrap_or_default());
                prop_assert_eq!(&got["command"], &json!(EXE));
                prop_assert_eq!(&got["args"], &Json::Array(args));
                prop_assert_eq!(&got["env"], &entry["env"]);
            }
        }
    }
}
