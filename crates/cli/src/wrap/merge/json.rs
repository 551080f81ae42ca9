//! `wrap --merge` on the JSON configs: the members are the properties of the first server map
//! found at the client's places (`mcpServers`, or VS Code's `servers`), with their byte ranges.

use anyhow::bail;
use jsonc_parser::ast::{Object, Value};
use jsonc_parser::common::Ranged as _;
use jsonc_parser::{CollectOptions, parse_to_ast};

use super::plan::{Member, Role, Spec, has_placeholder, merged_of};
use crate::wrap::client::Place;
use crate::wrap::form::{is_streamable, wrapped_remote, wrapped_split};
use crate::wrap::json::{quote, remote_entry_text};

/// Calls `f` with the members of the server map (the first of `places` in `text`) and a
/// function giving the merged entry's text (`"name": {…}` in the first member's layout) from
/// the first member, the entry's name, its args and the exe.
///
/// # Errors
/// Not JSON, or the map is not an object.
#[allow(clippy::type_complexity)]
pub(crate) fn with_members<T>(
    text: &str,
    places: &[Place],
    f: &dyn Fn(&[Member], &dyn Fn(&Member, &str, Vec<String>, &str) -> String) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let options = super::super::json::parse_options();
    // A BOM is not part of the JSON: the byte ranges are in `text` all the same, since the
    // parser is given the text after it and the ranges are shifted back.
    let skip = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let body = &text[skip..];
    let parsed = parse_to_ast(body, &CollectOptions::default(), &options)
        .map_err(|e| anyhow::anyhow!("not valid JSON: {e}"))?;
    let Some(Value::Object(root)) = &parsed.value else {
        bail!("not valid JSON for an MCP config: the top level is not an object");
    };
    let map = places.iter().find_map(|p| match p {
        Place::Key(key) => root.get(key).map(|prop| (key, prop)),
        Place::ClaudeProjects => None,
    });
    let mut members = Vec::new();
    let mut objects: Vec<Option<&Object<'_>>> = Vec::new();
    if let Some((key, prop)) = map {
        let Value::Object(map) = &prop.value else {
            bail!("`{key}` is not an object");
        };
        for (i, p) in map.properties.iter().enumerate() {
            let prev_end = if i == 0 {
                p.start()
            } else {
                map.properties[i - 1].end()
            };
            let object = match &p.value {
                Value::Object(o) => Some(o),
                _ => None,
            };
            objects.push(object);
            members.push(Member {
                key: p.name.as_str().to_owned(),
                role: object.map_or_else(|| Role::Skip("not an object".to_owned()), role),
                replace: skip + p.start()..skip + p.end(),
                removal: skip + prev_end..skip + p.end(),
                anchor: skip + p.end(),
            });
        }
    }
    let entry = |first: &Member, name: &str, args: Vec<String>, exe: &str| -> String {
        let i = members_index(&members, first);
        let colon = i
            .and_then(|i| map.and_then(|(_, prop)| prop_colon(body, &prop.value, i)))
            .unwrap_or(": ");
        let value = match i.and_then(|i| objects.get(i).copied().flatten()) {
            Some(object) => remote_entry_text(body, object, &args, exe),
            None => format!(
                "{{\"command\": {}, \"args\": [{}]}}",
                quote(exe),
                args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(", ")
            ),
        };
        format!("{}{colon}{value}", quote(name))
    };
    f(&members, &entry)
}

fn members_index(members: &[Member], member: &Member) -> Option<usize> {
    members.iter().position(|m| m.replace == member.replace)
}

/// The text between the name and the value of property `i` of the object `map`.
fn prop_colon<'t>(body: &'t str, map: &Value<'_>, i: usize) -> Option<&'t str> {
    let Value::Object(map) = map else { return None };
    let p = map.properties.get(i)?;
    body.get(p.name.end()..p.value.start())
}

/// What one server entry is to a merge.
fn role(entry: &Object<'_>) -> Role {
    let string = |key: &str| entry.get_string(key).map(|s| s.value.to_string());
    let strings = |key: &str| -> Option<Option<Vec<String>>> {
        match entry.get(key).map(|p| &p.value) {
            None => Some(None),
            Some(Value::Array(a)) => a
                .elements
                .iter()
                .map(|e| match e {
                    Value::StringLit(s) => Some(s.value.to_string()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(Some),
            Some(_) => None,
        }
    };
    let pairs = |key: &str| -> Option<Vec<(String, String)>> {
        match entry.get(key).map(|p| &p.value) {
            None => Some(Vec::new()),
            Some(Value::Object(o)) => o
                .properties
                .iter()
                .map(|p| match &p.value {
                    Value::StringLit(s) => Some((p.name.as_str().to_owned(), s.value.to_string())),
                    _ => None,
                })
                .collect(),
            Some(_) => None,
        }
    };
    let kind = match entry.get("type").map(|p| &p.value) {
        None => None,
        Some(Value::StringLit(s)) => Some(s.value.to_string()),
        Some(_) => return Role::Skip("`type` is not a string".to_owned()),
    };
    let url = string("url").or_else(|| string("serverUrl"));
    if let Some(url) = url {
        if !is_streamable(kind.as_deref()) {
            return Role::Skip(format!(
                "remote server of type {:?}, which the proxy does not speak",
                kind.unwrap_or_default()
            ));
        }
        if let Some(key) = other_key(entry, &["type", "url", "serverUrl", "headers"]) {
            return Role::Skip(format!("`{key}` has no equivalent in [servers.<name>]"));
        }
        let Some(headers) = pairs("headers") else {
            return Role::Skip("`headers` is not an object of strings".to_owned());
        };
        let all = std::iter::once(url.as_str()).chain(headers.iter().map(|(_, v)| v.as_str()));
        if has_placeholder(all) {
            return Role::Skip(placeholders());
        }
        return Role::Server(Spec::Remote { url, headers });
    }
    let Some(command) = string("command") else {
        return Role::Skip("no `command` string, so not a stdio server".to_owned());
    };
    if kind.as_deref().is_some_and(|k| k != "stdio") {
        return Role::Skip(format!(
            "`type` {:?} without a `url`",
            kind.unwrap_or_default()
        ));
    }
    let Some(args) = strings("args") else {
        return Role::Skip("`args` is not a list of strings".to_owned());
    };
    let args = args.unwrap_or_default();
    if let Some((record, servers)) = merged_of(&command, &args) {
        return Role::Merged { record, servers };
    }
    if wrapped_remote(&command, &args).is_some() {
        return Role::Skip("a remote server `wrap` wrapped: unwrap it first".to_owned());
    }
    if let Some(key) = other_key(entry, &["type", "command", "args", "env"]) {
        return Role::Skip(format!("`{key}` has no equivalent in [servers.<name>]"));
    }
    let Some(env) = pairs("env") else {
        return Role::Skip("`env` is not an object of strings".to_owned());
    };
    let (command, args) = match wrapped_split(&command, &args) {
        Some(cmd) => (args[cmd].clone(), args[cmd + 1..].to_vec()),
        None => (command, args),
    };
    let all = std::iter::once(command.as_str())
        .chain(args.iter().map(String::as_str))
        .chain(env.iter().map(|(_, v)| v.as_str()));
    if has_placeholder(all) {
        return Role::Skip(placeholders());
    }
    Role::Server(Spec::Local { command, args, env })
}

fn placeholders() -> String {
    "`${…}` placeholders, which the client expands and `proxy --config` does not".to_owned()
}

/// The first key of `entry` not in `known`.
fn other_key(entry: &Object<'_>, known: &[&str]) -> Option<String> {
    entry
        .properties
        .iter()
        .map(|p| p.name.as_str())
        .find(|k| !known.contains(k))
        .map(str::to_owned)
}
