//! Ranking tools for a free-text query (the `find_tools` tool of deferred mode).
//!
//! Query terms are the query's words (runs of letters and digits, lower-cased, with
//! camelCase and `_`/`-` splitting names into words too) of two chars or more. A tool scores,
//! per term: 4 when a word of its name equals the term, 2 when a word of its name starts with
//! it or the term starts with a name word of 3+ chars (`files` finds `file`), 1 when a word of
//! its description starts with it. The whole query equal to a tool's name scores 100. Tools
//! scoring 0 are not returned; ties keep list order.

use serde_json::Value;

/// Words of `s`: runs of letters and digits, split at lower→upper case changes, lower-cased.
pub fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The score of one tool (its `name` and `description`) for `query` (module docs).
pub fn score(tool: &Value, query: &str) -> u32 {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
    if !name.is_empty() && query.trim() == name {
        return 100;
    }
    let desc = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name_words = words(name);
    let desc_words = words(desc);
    let mut total = 0;
    for term in words(query).iter().filter(|t| t.chars().count() >= 2) {
        if name_words.iter().any(|w| w == term) {
            total += 4;
        } else if name_words
            .iter()
            .any(|w| w.starts_with(term.as_str()) || (w.len() >= 3 && term.starts_with(w.as_str())))
        {
            total += 2;
        }
        if desc_words.iter().any(|w| w.starts_with(term.as_str())) {
            total += 1;
        }
    }
    total
}

/// Indices of the tools of `tools` matching `query`, best first (ties in list order), at
/// most `limit`.
pub fn rank(tools: &[Value], query: &str, limit: usize) -> Vec<usize> {
    let mut scored: Vec<(u32, usize)> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| (score(t, query), i))
        .filter(|&(s, _)| s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_weigh_more_than_descriptions() {
        let tools = vec![
            json!({"name": "git_log", "description": "Shows the commit logs"}),
            json!({"name": "read_text_file", "description": "Read the complete contents of a file"}),
            json!({"name": "search_files", "description": "Recursively search for files"}),
            json!({"name": "createEntities", "description": "Create multiple new entities"}),
        ];
        assert_eq!(rank(&tools, "read file", 5), vec![1, 2]);
        assert_eq!(rank(&tools, "commit log", 5), vec![0]);
        assert_eq!(rank(&tools, "create entity", 5), vec![3]);
        assert_eq!(rank(&tools, "git_log", 5), vec![0]);
        assert!(rank(&tools, "zzz", 5).is_empty());
        assert_eq!(
            words("createEntities git_log"),
            ["create", "entities", "git", "log"]
        );
    }
}
