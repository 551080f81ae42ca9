//! Generators of realistic inputs for the benchmarks under `benches/`.
//!
//! Every generator is deterministic (a fixed-seed SplitMix64, no `rand` dependency): the same
//! size gives the same bytes on every machine, so numbers from two runs compare. Sizes are
//! targets in **bytes** of UTF-8; outputs land within a few percent above the target.
//!
//! - [`directory_tree`]: what `@modelcontextprotocol/server-filesystem`'s `directory_tree`
//!   returns: pretty-printed JSON (2-space indent), a top-level array of a handful of entries,
//!   one of which holds nearly all the bytes, nested several levels deep.
//! - [`float_rows`]: a SQL-style result, a compact JSON array of row objects whose floats carry
//!   17 significant digits.
//! - [`git_log`]: `git log --stat` text: commits with hashes, authors, dates, messages, file stats.
//! - [`prose`], [`base64`], [`repeated`]: tokenizer inputs (mixed-script prose with emoji,
//!   base64 of pseudo-random bytes, and one character repeated).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backends;

use std::fmt::Write as _;
use std::path::PathBuf;

/// Criterion's output folder: `CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else
/// `<target>/criterion` found from the running bench executable's path
/// (`<target>/release/deps/<bench>-<hash>`).
pub fn criterion_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(PathBuf::from(dir).join("criterion"));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("criterion"))
}

fn criterion_json(
    group: &str,
    function: &str,
    parameter: &str,
    file: &str,
) -> Option<serde_json::Value> {
    let path = criterion_home()?
        .join(group)
        .join(function)
        .join(parameter)
        .join("new")
        .join(file);
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Mean time per iteration in **seconds** of the benchmark `group/function/parameter`, from
/// the `estimates.json` criterion wrote for its latest run; `None` if there is none.
pub fn mean_secs(group: &str, function: &str, parameter: &str) -> Option<f64> {
    let v = criterion_json(group, function, parameter, "estimates.json")?;
    v.pointer("/mean/point_estimate")?
        .as_f64()
        .map(|ns| ns / 1e9)
}

/// The fastest sample's time per iteration in **seconds** (from `sample.json`): on a shared,
/// loaded machine the least disturbed measurement, so ratios of two benchmarks taken at
/// different moments are steadier with it than with means.
pub fn best_secs(group: &str, function: &str, parameter: &str) -> Option<f64> {
    let v = criterion_json(group, function, parameter, "sample.json")?;
    let iters = v.get("iters")?.as_array()?;
    let times = v.get("times")?.as_array()?;
    iters
        .iter()
        .zip(times)
        .filter_map(|(i, t)| Some(t.as_f64()? / i.as_f64()?))
        .min_by(f64::total_cmp)
        .map(|ns| ns / 1e9)
}

/// A deterministic pseudo-random source (SplitMix64). Not for anything but test inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; `0` gives `0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One element of `items` (which must not be empty).
    pub fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "index", "main", "utils", "config", "test", "server", "client", "model", "view", "render",
    "parse", "token", "budget", "page", "cursor", "stream", "buffer", "layer", "scene", "mesh",
    "shader", "camera", "light", "asset", "loader", "cache", "store", "queue", "worker", "task",
    "event", "handler", "router", "schema", "types", "helpers", "core", "api", "db", "auth",
];
const EXTENSIONS: &[&str] = &[
    "ts", "js", "json", "md", "rs", "py", "css", "html", "map", "d.ts", "yml", "txt", "png",
];

fn file_name(rng: &mut Rng) -> String {
    let a = rng.pick(WORDS);
    let ext = rng.pick(EXTENSIONS);
    match rng.below(4) {
        0 => format!("{a}.{ext}"),
        1 => format!("{a}-{}.{ext}", rng.pick(WORDS)),
        2 => format!("{a}{}.{ext}", rng.below(100)),
        _ => format!("{a}_{}_{}.{ext}", rng.pick(WORDS), rng.pick(WORDS)),
    }
}

fn dir_name(rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => rng.pick(WORDS).to_owned(),
        1 => format!("{}-{}", rng.pick(WORDS), rng.pick(WORDS)),
        _ => format!("@{}/{}", rng.pick(WORDS), rng.pick(WORDS)),
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// Appends one file entry at `level` (pretty JSON, as `JSON.stringify(x, null, 2)` writes it).
fn push_file(out: &mut String, level: usize, name: &str) {
    indent(out, level);
    out.push_str("{\n");
    indent(out, level + 1);
    let _ = writeln!(out, "\"name\": \"{name}\",");
    indent(out, level + 1);
    out.push_str("\"type\": \"file\"\n");
    indent(out, level);
    out.push('}');
}

/// Appends a directory whose subtree grows until `out` reaches `until` bytes (or the subtree
/// is complete at `depth` 0).
fn push_dir(out: &mut String, rng: &mut Rng, level: usize, name: &str, depth: usize, until: usize) {
    indent(out, level);
    out.push_str("{\n");
    indent(out, level + 1);
    let _ = writeln!(out, "\"name\": \"{name}\",");
    indent(out, level + 1);
    out.push_str("\"type\": \"directory\",\n");
    indent(out, level + 1);
    out.push_str("\"children\": [");
    let children = if depth == 0 { 0 } else { 3 + rng.below(12) };
    let mut first = true;
    for _ in 0..children {
        if out.len() >= until {
            break;
        }
        out.push_str(if first { "\n" } else { ",\n" });
        first = false;
        if rng.below(3) == 0 {
            let sub = dir_name(rng);
            push_dir(out, rng, level + 2, &sub, depth - 1, until);
        } else {
            let f = file_name(rng);
            push_file(out, level + 2, &f);
        }
    }
    if !first {
        out.push('\n');
        indent(out, level + 1);
    }
    out.push_str("]\n");
    indent(out, level);
    out.push('}');
}

/// A `directory_tree` result of about `target` bytes: pretty-printed JSON, a top-level array
/// of five entries (`.git` small, `src` small, `node_modules` holding nearly everything,
/// `README.md` and `package.json` files), directories nested up to 8 levels deep.
pub fn directory_tree(target: usize) -> String {
    let mut rng = Rng::new(0x7265_6573);
    let mut out = String::with_capacity(target + target / 16);
    out.push_str("[\n");
    // Small entries first, then the huge one, then two files: the shape of a real repository.
    let small = (target / 50).max(256);
    push_dir(&mut out, &mut rng, 1, ".git", 3, small);
    out.push_str(",\n");
    let src_until = out.len() + small;
    push_dir(&mut out, &mut rng, 1, "src", 4, src_until);
    out.push_str(",\n");
    // node_modules: keep adding packages until the target is reached.
    indent(&mut out, 1);
    out.push_str(
        "{\n    \"name\": \"node_modules\",\n    \"type\": \"directory\",\n    \"children\": [",
    );
    let mut first = true;
    let tail = 200;
    while out.len() + tail < target {
        out.push_str(if first { "\n" } else { ",\n" });
        first = false;
        let name = dir_name(&mut rng);
        // Each package is a bounded subtree (a few KB to a few hundred KB).
        let until = (out.len() + 4096 + rng.below(200_000)).min(target - tail);
        push_dir(&mut out, &mut rng, 3, &name, 8, until);
    }
    out.push_str("\n    ]\n  },\n");
    push_file(&mut out, 1, "README.md");
    out.push_str(",\n");
    push_file(&mut out, 1, "package.json");
    out.push_str("\n]");
    out
}

/// A SQL-style result of about `target` bytes: compact JSON `[{"id":1,...},...]`, each row
/// with an integer id, a timestamp, a name, a status, and five floats of 17 significant digits
/// (`247.13061935179246`-like, as an f64 prints at full precision).
pub fn float_rows(target: usize) -> String {
    let mut rng = Rng::new(0x726f_7773);
    let mut out = String::with_capacity(target + 512);
    out.push('[');
    let mut id = 0u64;
    while out.len() < target {
        if id > 0 {
            out.push(',');
        }
        id += 1;
        let _ = write!(
            out,
            "{{\"id\":{id},\"ts\":\"2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\",\"name\":\"{}-{}\",\"status\":\"{}\"",
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(24),
            rng.below(60),
            rng.below(60),
            rng.below(1000),
            rng.pick(WORDS),
            rng.below(10_000),
            rng.pick(&["ok", "warn", "error", "pending"]),
        );
        for key in ["x", "y", "z", "score", "ratio"] {
            // Magnitudes from 1e-4 to 1e4; 17 significant digits by construction.
            let mag = rng.below(9) as i32 - 4;
            let v = (1.0 + 9.0 * rng.unit()) * 10f64.powi(mag);
            let v = if rng.below(5) == 0 { -v } else { v };
            let _ = write!(out, ",\"{key}\":{}", seventeen_digits(v));
        }
        out.push('}');
    }
    out.push(']');
    out
}

/// `v` with exactly 17 significant digits, as a JSON number (no exponent for the magnitudes
/// used here).
fn seventeen_digits(v: f64) -> String {
    let exp = v.abs().log10().floor() as i32;
    let decimals = (16 - exp).max(0) as usize;
    format!("{v:.decimals$}")
}

const AUTHORS: &[&str] = &[
    "Ada Lovelace <ada@example.org>",
    "Grace Hopper <grace@example.org>",
    "Linus Example <linus@example.com>",
    "Émilie du Châtelet <emilie@example.fr>",
    "山田 太郎 <taro@example.jp>",
];
const VERBS: &[&str] = &[
    "Fix", "Add", "Remove", "Refactor", "Speed up", "Document", "Test", "Rename", "Bump",
];
const DAYS: &[&str] = &["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: &[&str] = &[
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `git log --stat` text of about `target` bytes: 40-hex commit ids, authors (some non-ASCII),
/// dates, an indented subject and body, and a file-change summary per commit.
pub fn git_log(target: usize) -> String {
    let mut rng = Rng::new(0x6769_746c);
    let mut out = String::with_capacity(target + 4096);
    while out.len() < target {
        let _ = writeln!(
            out,
            "commit {:016x}{:016x}{:08x}",
            rng.next_u64(),
            rng.next_u64(),
            rng.next_u64() as u32
        );
        if rng.below(10) == 0 {
            let _ = writeln!(
                out,
                "Merge: {:07x} {:07x}",
                rng.next_u64() & 0xfff_ffff,
                rng.next_u64() & 0xfff_ffff
            );
        }
        let _ = writeln!(out, "Author: {}", rng.pick(AUTHORS));
        let _ = writeln!(
            out,
            "Date:   {} {} {} {:02}:{:02}:{:02} 2026 +0{}00\n",
            rng.pick(DAYS),
            rng.pick(MONTHS),
            1 + rng.below(28),
            rng.below(24),
            rng.below(60),
            rng.below(60),
            rng.below(10),
        );
        let _ = writeln!(
            out,
            "    {} {} in {}/{} ({})\n",
            rng.pick(VERBS),
            rng.pick(WORDS),
            rng.pick(WORDS),
            file_name(&mut rng),
            rng.below(2000)
        );
        for _ in 0..rng.below(4) {
            out.push_str("    ");
            for w in 0..(6 + rng.below(10)) {
                if w > 0 {
                    out.push(' ');
                }
                out.push_str(rng.pick(WORDS));
            }
            out.push_str(".\n");
        }
        out.push('\n');
        let files = 1 + rng.below(6);
        let (mut ins, mut del) = (0, 0);
        for _ in 0..files {
            let (i, d) = (rng.below(120), rng.below(60));
            ins += i;
            del += d;
            let bar = "+".repeat(i.min(40) / 2) + &"-".repeat(d.min(20) / 2);
            let _ = writeln!(
                out,
                " {}/{} | {:>3} {bar}",
                rng.pick(WORDS),
                file_name(&mut rng),
                i + d
            );
        }
        let _ = writeln!(
            out,
            " {files} files changed, {ins} insertions(+), {del} deletions(-)\n"
        );
    }
    out
}

const PROSE: &[&str] = &[
    "The quick brown fox jumps over the lazy dog.",
    "Budgets are counted in tokens, not characters; chars/4 under-counts JSON by a third.",
    "Résumé of the naïve café owner: crème brûlée, smørrebrød, and Straße signs.",
    "東京は日本の首都です。",
    "我们明天去北京参观故宫和长城。",
    "한국어 문장도 여기에 있습니다.",
    "Привет, как дела? Всё хорошо.",
    "🚀 Launch at 09:45 UTC 🎉 — 👍🏽 from the team 👨‍👩‍👧‍👦!",
    "It's done; they'll see we've shipped it, haven't we?",
    "\u{201c}Quoted\u{201d} text, em—dash, ellipsis… and 12,345.67 numbers.",
];

/// Mixed-script prose of about `target` bytes: English sentences with accents and
/// punctuation, Japanese, Chinese, Korean, Cyrillic, and emoji (with ZWJ sequences), in
/// paragraphs separated by blank lines.
pub fn prose(target: usize) -> String {
    let mut rng = Rng::new(0x7072_6f73);
    let mut out = String::with_capacity(target + 256);
    while out.len() < target {
        for _ in 0..(3 + rng.below(5)) {
            out.push_str(rng.pick(PROSE));
            out.push(' ');
        }
        out.push_str("\n\n");
    }
    out
}

/// Base64 (standard alphabet, padded) of pseudo-random bytes, about `target` characters, on
/// one line (as a `data` field of an image content item carries it).
pub fn base64(target: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = Rng::new(0x6236_3421);
    let raw = target / 4 * 3 + 1; // one leftover byte so the output ends with `==`
    let bytes: Vec<u8> = (0..raw).map(|_| rng.next_u64() as u8).collect();
    let mut out = String::with_capacity(raw / 3 * 4 + 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A generated input by name, about `bytes` long: `tree` ([`directory_tree`]), `rows`
/// ([`float_rows`]), `gitlog` ([`git_log`]), `prose`, `base64`, `letter-a` (`a` repeated),
/// `spaces` (` ` repeated). `None` for another name.
pub fn input(name: &str, bytes: usize) -> Option<String> {
    Some(match name {
        "tree" => directory_tree(bytes),
        "rows" => float_rows(bytes),
        "gitlog" => git_log(bytes),
        "prose" => prose(bytes),
        "base64" => base64(bytes),
        "letter-a" => repeated('a', bytes),
        "spaces" => repeated(' ', bytes),
        _ => return None,
    })
}

/// `c` repeated until the text is `bytes` bytes long (e.g. 1.6 MB of `a` or of spaces).
pub fn repeated(c: char, bytes: usize) -> String {
    std::iter::repeat_n(c, bytes / c.len_utf8()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_json_parses_and_has_the_target_size() {
        for target in [10_000, 300_000] {
            let tree = directory_tree(target);
            let v: serde_json::Value = serde_json::from_str(&tree).expect("valid JSON");
            let top = v.as_array().expect("a top-level array");
            assert_eq!(top.len(), 5);
            assert!(tree.len() >= target * 9 / 10 && tree.len() <= target * 11 / 10);
            let huge = serde_json::to_string(&top[2]).map(|s| s.len()).unwrap_or(0);
            assert!(huge > serde_json::to_string(&v).map_or(0, |s| s.len()) / 2);

            let rows = float_rows(target);
            let v: serde_json::Value = serde_json::from_str(&rows).expect("valid JSON");
            assert!(v.as_array().is_some_and(|a| a.len() > 10));
            assert!(rows.len() >= target && rows.len() < target + 512);
        }
    }

    #[test]
    fn floats_have_seventeen_significant_digits() {
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            let mag = rng.below(9) as i32 - 4;
            let v = (1.0 + 9.0 * rng.unit()) * 10f64.powi(mag);
            let s = seventeen_digits(v);
            let digits = s.trim_start_matches(['0', '.']).replace('.', "");
            assert_eq!(digits.len(), 17, "{s}");
        }
    }

    #[test]
    fn generators_are_deterministic_and_sized() {
        assert_eq!(git_log(50_000), git_log(50_000));
        assert!(git_log(50_000).len() >= 50_000);
        assert!(prose(10_000).len() >= 10_000);
        let b = base64(1000);
        assert!(b.len() >= 996 && b.ends_with("=="), "{}", &b[b.len() - 8..]);
        assert_eq!(repeated(' ', 1600).len(), 1600);
    }
}
