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

use super::form::{Action, ArgsView, Decision, EntryView, Outcome, decide, remote_description};
use super::{Note, Rewritten, Selection};

/// Where a JSON config keeps its server maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A top-level object of servers: `mcpServers` (most clients) or `servers` (VS Code).
    Key(&'static str),
    /// Claude Code's `~/.claude.json`: `projects.<path>.mcpServers`.
    ClaudeProjects,
}

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
    let options = ParseOptions {
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
    };
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

/// Appends the edits `action` makes to one server entry; returns what happened.
fn edit_entry(text: &str, entry: &Object<'_>, action: &Action, edits: &mut Vec<Edit>) -> Outcome {
    let view = EntryView {
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
                text: quote(&wrapper.exe),
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
        Decision::Wrap | Decision::Unwrap { .. } => {
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
    let sep = match array.elements.get(1) {
        Some(second) => {
            let between = &text[first.end()..second.start()];
            if between.trim() == "," {
                between.to_owned()
            } else {
                ", ".to_owned()
            }
        }
        None => {
            let lead = &text[array.start() + 1..first.start()];
            if lead.contains('\n') && lead.trim().is_empty() {
                format!(",{lead}")
            } else {
                ", ".to_owned()
            }
        }
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

/// `s` as a JSON string literal.
fn quote(s: &str) -> String {
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
