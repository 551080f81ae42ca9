//! Glob patterns over tool names: `*` matches any run of chars (none included), `?` exactly
//! one char, every other char itself (case-sensitive). `git_*` matches `git_status`;
//! `*file*` matches `read_file` and `list_files`.

/// Whether `name` matches `pattern` (see the module docs). Linear in `pattern.len() ×
/// name.len()` at worst (greedy with backtracking to the last `*`).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// The first pattern of `patterns` that `name` matches.
pub fn first_match<'a>(patterns: &'a [String], name: &str) -> Option<&'a str> {
    patterns
        .iter()
        .find(|p| matches(p, name))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names() {
        assert!(matches("git_*", "git_status"));
        assert!(!matches("git_*", "read_file"));
        assert!(matches("*file*", "list_files"));
        assert!(matches("read_?ile", "read_file"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "aXbYbc"));
        assert!(!matches("a*b*c", "aXbY"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
    }
}
