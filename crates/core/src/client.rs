//! Client profiles: what an MCP client hands its model from a `CallToolResult`, and its caps.
//!
//! A model never reads the wire; it reads what its client makes of a result (DESIGN.md,
//! "The model reads what its client hands it"). A [`Profile`] says, for one client family:
//!
//! - which **renderings** it may hand the model ([`Rendering`]): the `text` content items
//!   ([`View::Content`]), or `JSON.stringify(structuredContent)` alone when the result has one
//!   ([`View::StructuredWhenPresent`]), possibly **wrapped** ([`Wrap`]: inside a JSON string,
//!   behind a prefix);
//! - its **caps** ([`Caps`]): tokens, characters (UTF-16 code units, as JavaScript counts
//!   `string.length`), UTF-8 bytes and lines past which the client cuts, saves to a file or
//!   rejects;
//! - its default **encoding** (OpenAI clients: `o200k_base`) and what it **rejects**.
//!
//! [`Profile::cost`] measures a shaped result under every rendering of the profile and
//! [`Profile::admits`] says whether it is within the budget and the caps: the proxy shapes again,
//! smaller, until it is (so nothing a client would cut is ever sent). The `generic` profile, the
//! default, is the worst of every known rendering, so it is safe in every client at the default
//! budget except those whose caps sit below it (Codex, Copilot CLI): those need their profile.
//!
//! Each figure names its source (client source, documentation, or a public report); where
//! `tests/clients` runs the client here, the figure is checked there.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::tokens::Encoding;
use crate::vision::ImageCost;

/// What part of a `CallToolResult` a client hands its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The `text` of its `text` content items and of its embedded `resource` items, in order,
    /// joined by `"\n"` (a `structuredContent` that no text item carries counts too, as
    /// DESIGN.md's generic model-visible tokens say).
    Content,
    /// `JSON.stringify(structuredContent)` alone when the result has a `structuredContent`,
    /// else [`View::Content`] (Claude Code, VS Code, Codex).
    StructuredWhenPresent,
}

/// How a client wraps the rendered text before its model reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    /// As it is.
    None,
    /// Gemini CLI: the text inside `<untrusted_context>` tags, as the `output` member of a JSON
    /// object (`{"output":"<untrusted_context>\n…\n</untrusted_context>"}`), which the model
    /// reads as JSON: every `"`, `\` and newline of the text escaped.
    GeminiOutput,
    /// Codex: `Wall time: <s> seconds\nOutput:\n` before the text (the wall time counted as
    /// `0.0000`, its usual width).
    CodexExec,
}

/// One way a client may hand a result to its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendering {
    /// Which part of the result.
    pub view: View,
    /// How it is wrapped.
    pub wrap: Wrap,
}

/// The limits past which a client cuts what it hands its model (or saves it to a file, or
/// rejects it). `None`: no such limit known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caps {
    /// Tokens of the rendering (the client's own count, approximated by the profile's
    /// encoding).
    pub tokens: Option<usize>,
    /// Characters of the rendering, in UTF-16 code units (JavaScript's `string.length`).
    pub chars: Option<usize>,
    /// UTF-8 bytes of the rendering.
    pub bytes: Option<usize>,
    /// Lines of the rendering (`\n`-separated).
    pub lines: Option<usize>,
    /// Characters (UTF-16 code units) of an `isError` result's text, past which the client
    /// cuts it.
    pub error_chars: Option<usize>,
}

/// A client profile: how one client family hands tool results to its model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The name `--client` takes (`claude-code`, `codex`, …, `generic`).
    pub name: &'static str,
    /// Every rendering the client may hand its model; a result must fit in each.
    pub renderings: &'static [Rendering],
    /// The encoding of the client's models (`cl100k_base` where the vendor's tokenizer is not
    /// public).
    pub encoding: &'static str,
    /// Its caps.
    pub caps: Caps,
    /// Whether it rejects `resource_link` content items (Kiro, Cline).
    pub rejects_resource_link: bool,
    /// Whether page 1's `structuredContent` object carries the meta item (as
    /// [`crate::wire::STRUCTURED_META_KEY`]) and later pages carry no structuredContent: every
    /// profile but `wire`, whose later pages carry their page of the structuredContent.
    pub structured_meta: bool,
    /// What an image costs its models, and the size they get of it (the proxy's default for
    /// `image_tokens`): the vendor's rule for single-vendor clients, Anthropic's (the costliest
    /// per pixel of the three, with the smallest size kept) for the rest.
    pub image_cost: ImageCost,
    /// Where the figures come from.
    pub source: &'static str,
}

const CONTENT: Rendering = Rendering {
    view: View::Content,
    wrap: Wrap::None,
};
const STRUCTURED: Rendering = Rendering {
    view: View::StructuredWhenPresent,
    wrap: Wrap::None,
};
const GEMINI: Rendering = Rendering {
    view: View::Content,
    wrap: Wrap::GeminiOutput,
};
const CODEX: Rendering = Rendering {
    view: View::StructuredWhenPresent,
    wrap: Wrap::CodexExec,
};

/// Claude Code saves a result over 50,000 characters to a file and hands the model a
/// 2,000-character preview, unless the tool's `_meta["anthropic/maxResultSizeChars"]` allows
/// more (its bundled `cli.js`; anthropics/claude-code#55677).
const CLAUDE_CODE_CHARS: usize = 50_000;

/// Claude Code cuts the text of an `isError` result at about 11,000 characters (issue 31,
/// measured with 2.1.328).
const CLAUDE_CODE_ERROR_CHARS: usize = 10_000;

/// Claude Code's `MAX_MCP_OUTPUT_TOKENS` default: a result over 25,000 tokens is refused.
const CLAUDE_CODE_TOKENS: usize = 25_000;

/// OpenCode keeps the first 50 KB / 2,000 lines of a tool's output and saves the rest to a
/// file (its `Truncate` module: `MAX_BYTES = 50 * 1024`, `MAX_LINES = 2000`;
/// anomalyco/opencode#35661).
const OPENCODE_BYTES: usize = 50 * 1024;
const OPENCODE_LINES: usize = 2_000;

/// Codex keeps the head and tail of a tool's output past its limit and cuts the middle
/// (openai/codex#6544; `tool_output_token_limit`), the later items dropped.
/// Codex 0.169.0 (codex-rs `utils/output-truncation`, checked by tests/clients/test_codex.py):
/// 12,000 bytes for a model it does not know (`Bytes(10000)` × 1.2), 48,000 for its bundled
/// models; the prefix `Wall time: …\nOutput:` counts.
const CODEX_BYTES: usize = 11_500;

/// Copilot CLI cuts a tool's output at 10 KB before saving it to a file
/// (github/copilot-cli#1732).
const COPILOT_BYTES: usize = 10_000;

/// Gemini CLI cuts a result of one text part whose wrapped text is over 40,000 characters
/// (`tools.truncateToolOutputThreshold`; it keeps the first 8,000 and the last 32,000): its
/// bundle, `truncateOutputIfNeeded`. Measured here on the whole `{"output":…}` rendering.
const GEMINI_CHARS: usize = 40_000;

/// VS Code truncates results somewhere between 50 KB and 999 KB (microsoft/vscode#311068): the
/// lower figure.
const VSCODE_BYTES: usize = 50_000;

/// Claude Code's caps (and Claude Desktop's, assumed alike).
const CLAUDE_CAPS: Caps = Caps {
    tokens: Some(CLAUDE_CODE_TOKENS),
    chars: Some(CLAUDE_CODE_CHARS),
    bytes: None,
    lines: None,
    error_chars: Some(CLAUDE_CODE_ERROR_CHARS),
};

/// Every known profile, `generic` first (the binary's default), then `wire`.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "generic",
        renderings: &[CONTENT, STRUCTURED, GEMINI],
        encoding: "cl100k_base",
        caps: Caps {
            tokens: Some(CLAUDE_CODE_TOKENS),
            chars: Some(GEMINI_CHARS),
            bytes: Some(OPENCODE_BYTES),
            lines: Some(OPENCODE_LINES),
            error_chars: Some(CLAUDE_CODE_ERROR_CHARS),
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "the worst of claude-code, vscode, gemini-cli, opencode and cursor: content items, \
                 structuredContent alone, and Gemini's escaped wrapping each within the budget; \
                 Gemini's 40,000 chars, OpenCode's 50 KB / 2,000 lines",
    },
    Profile {
        name: "wire",
        renderings: &[CONTENT],
        encoding: "cl100k_base",
        caps: Caps::NONE,
        rejects_resource_link: false,
        structured_meta: false,
        image_cost: ImageCost::Anthropic,
        source: "no client rendering: the budget counts the wire's model-visible parts (DESIGN.md's \
                 generic definition) and nothing else; for programs that read the wire, and the \
                 library's default (`Settings::default()`)",
    },
    Profile {
        name: "claude-code",
        renderings: &[STRUCTURED],
        encoding: "cl100k_base",
        caps: CLAUDE_CAPS,
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "Claude Code 2.1.328 (its bundled JS, `transformMCPResult`): JSON.stringify(structuredContent) alone when present; \
                 over 50,000 chars saved to a file; isError text cut at ~11,000 chars; \
                 MAX_MCP_OUTPUT_TOKENS 25,000",
    },
    Profile {
        name: "claude-desktop",
        renderings: &[CONTENT, STRUCTURED],
        encoding: "cl100k_base",
        caps: CLAUDE_CAPS,
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "not run here: assumed to render like Claude Code or like a content client",
    },
    Profile {
        name: "vscode",
        renderings: &[STRUCTURED],
        encoding: "cl100k_base",
        caps: Caps {
            tokens: None,
            chars: None,
            bytes: Some(VSCODE_BYTES),
            lines: None,
            error_chars: None,
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "microsoft/vscode#290063 (structuredContent alone), #311068 (50 KB–999 KB cut)",
    },
    Profile {
        name: "cursor",
        renderings: &[CONTENT, STRUCTURED],
        encoding: "cl100k_base",
        caps: Caps {
            tokens: None,
            chars: None,
            bytes: None,
            lines: None,
            error_chars: None,
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "not run here: content items or structuredContent, no cap known",
    },
    Profile {
        name: "codex",
        renderings: &[CODEX],
        encoding: "o200k_base",
        caps: Caps {
            tokens: None,
            chars: None,
            bytes: Some(CODEX_BYTES),
            lines: None,
            error_chars: None,
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::OpenAi,
        source: "Codex 0.169.0: `Wall time …\\nOutput:\\n` + JSON.stringify(structuredContent) or the \
                 text, the middle cut past its limit (openai/codex#6544)",
    },
    Profile {
        name: "gemini-cli",
        renderings: &[GEMINI],
        encoding: "cl100k_base",
        caps: Caps {
            tokens: None,
            chars: Some(GEMINI_CHARS),
            bytes: None,
            lines: None,
            error_chars: None,
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Gemini,
        source: "Gemini CLI 0.61.0: the text items inside <untrusted_context>, as the `output` \
                 string of a JSON object",
    },
    Profile {
        name: "opencode",
        renderings: &[CONTENT],
        encoding: "cl100k_base",
        caps: Caps {
            tokens: None,
            chars: None,
            bytes: Some(OPENCODE_BYTES),
            lines: Some(OPENCODE_LINES),
            error_chars: None,
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "OpenCode 1.18.33: the text items; 50 KB / 2,000 lines kept (anomalyco/opencode#35661)",
    },
    Profile {
        name: "copilot-cli",
        renderings: &[CONTENT, STRUCTURED],
        encoding: "o200k_base",
        caps: Caps {
            tokens: None,
            chars: None,
            bytes: Some(COPILOT_BYTES),
            lines: None,
            error_chars: None,
        },
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::OpenAi,
        source: "github/copilot-cli#1732 (cut at 10 KB, then saved to a file); not run here",
    },
    Profile {
        name: "windsurf",
        renderings: &[CONTENT, STRUCTURED],
        encoding: "cl100k_base",
        caps: Caps::NONE,
        rejects_resource_link: false,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "not run here: content items or structuredContent, no cap known",
    },
    Profile {
        name: "kiro",
        renderings: &[CONTENT, STRUCTURED],
        encoding: "cl100k_base",
        caps: Caps::NONE,
        rejects_resource_link: true,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "kirodotdev/Kiro#8960 (resource_link items rejected); not run here",
    },
    Profile {
        name: "cline",
        renderings: &[CONTENT, STRUCTURED],
        encoding: "cl100k_base",
        caps: Caps::NONE,
        rejects_resource_link: true,
        structured_meta: true,
        image_cost: ImageCost::Anthropic,
        source: "cline/cline#5208 (resource_link items rejected); not run here",
    },
];

impl Caps {
    /// No cap known.
    pub const NONE: Caps = Caps {
        tokens: None,
        chars: None,
        bytes: None,
        lines: None,
        error_chars: None,
    };
}

/// A client name `--client` does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown client {name:?}: expected one of {}", names())]
pub struct UnknownClient {
    /// The name given.
    pub name: String,
}

fn names() -> String {
    PROFILES
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Profile {
    type Err = UnknownClient;

    /// A profile by its name, case-insensitive; `vs-code`/`code` name `vscode`, `claude`
    /// names `claude-code`, `gemini` names `gemini-cli`, `copilot` names `copilot-cli`.
    ///
    /// # Errors
    /// [`UnknownClient`] for any other name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let name = match lower.as_str() {
            "claude" => "claude-code",
            "vs-code" | "code" => "vscode",
            "gemini" => "gemini-cli",
            "copilot" => "copilot-cli",
            other => other,
        };
        PROFILES
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .ok_or(UnknownClient { name: s.to_owned() })
    }
}

impl Default for Profile {
    /// `generic`.
    fn default() -> Self {
        PROFILES[0].clone()
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// What a shaped result costs under a profile: the worst of its renderings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cost {
    /// Tokens of the costliest rendering (images' vision cost included).
    pub tokens: usize,
    /// Characters (UTF-16 code units) of the longest rendering.
    pub chars: usize,
    /// UTF-8 bytes of the longest rendering.
    pub bytes: usize,
    /// Lines of the longest rendering.
    pub lines: usize,
}

impl Profile {
    /// The profile named `generic` (the default).
    pub fn generic() -> Profile {
        Profile::default()
    }

    /// The profile named `wire`: no client rendering, no caps.
    pub fn wire() -> Profile {
        PROFILES[1].clone()
    }

    /// Whether this profile shows `structuredContent` alone when a result has one.
    pub fn shows_structured(&self) -> bool {
        self.renderings
            .iter()
            .any(|r| r.view == View::StructuredWhenPresent)
    }

    /// The budget in tokens that results must fit under this profile: the smaller of `budget`
    /// and the profile's token cap.
    pub fn token_limit(&self, budget: usize) -> usize {
        self.caps.tokens.map_or(budget, |cap| cap.min(budget))
    }

    /// What `result` (a `CallToolResult` as the proxy emits it) costs under this profile.
    ///
    /// `content_tokens` is the proxy's own count of the content view (DESIGN.md's generic
    /// model-visible tokens: text items, embedded resources' texts, a structuredContent no
    /// text item carries), used for [`View::Content`] unwrapped; `image_tokens` (the vision
    /// cost of inline images) is added to every rendering. The other renderings are rendered
    /// exactly and counted with `encoding`.
    pub fn cost(
        &self,
        result: &Value,
        content_tokens: usize,
        image_tokens: usize,
        encoding: &Encoding,
    ) -> Cost {
        let mut cost = Cost::default();
        for r in self.renderings {
            let text = render(r, result);
            let tokens = if *r == CONTENT {
                content_tokens
            } else {
                encoding.count(&text)
            };
            cost.tokens = cost.tokens.max(tokens + image_tokens);
            cost.chars = cost.chars.max(utf16_len(&text));
            cost.bytes = cost.bytes.max(text.len());
            cost.lines = cost.lines.max(text.split('\n').count());
        }
        cost
    }

    /// Whether `cost` is within `budget` tokens (and the profile's token cap) and every cap of
    /// the profile; `is_error`: the result is an `isError` one (its char cap applies).
    pub fn admits(&self, cost: &Cost, budget: usize, is_error: bool) -> bool {
        let caps = &self.caps;
        let within = |v: usize, cap: Option<usize>| cap.is_none_or(|c| v <= c);
        cost.tokens <= self.token_limit(budget)
            && within(cost.chars, caps.chars)
            && within(cost.bytes, caps.bytes)
            && within(cost.lines, caps.lines)
            && (!is_error || within(cost.chars, caps.error_chars))
    }

    /// How much smaller a page should be asked for when `cost` does not fit: the factor (at
    /// most 1) by which the worst measure must shrink to fit, in `(0, 1]`.
    pub fn shrink_factor(&self, cost: &Cost, budget: usize, is_error: bool) -> f64 {
        let caps = &self.caps;
        let mut f: f64 = 1.0;
        let mut take = |v: usize, cap: Option<usize>| {
            if let Some(c) = cap
                && v > c
                && v > 0
            {
                f = f.min(c as f64 / v as f64);
            }
        };
        take(cost.tokens, Some(self.token_limit(budget)));
        take(cost.chars, caps.chars);
        take(cost.bytes, caps.bytes);
        take(cost.lines, caps.lines);
        if is_error {
            take(cost.chars, caps.error_chars);
        }
        f
    }

    /// The largest number of UTF-16 code units of text an error result may carry under this
    /// profile (its `isError` cut and its char/byte caps), if any.
    pub fn error_chars(&self) -> Option<usize> {
        [self.caps.error_chars, self.caps.chars, self.caps.bytes]
            .into_iter()
            .flatten()
            .min()
    }
}

/// The text a client renders `result` to under `r`.
pub fn render(r: &Rendering, result: &Value) -> String {
    let body = match (r.view, result.get("structuredContent")) {
        (View::StructuredWhenPresent, Some(sc)) if !sc.is_null() => {
            serde_json::to_string(sc).unwrap_or_default()
        }
        _ => content_text(result),
    };
    match r.wrap {
        Wrap::None => body,
        Wrap::GeminiOutput => {
            let wrapped = format!("<untrusted_context>\n{body}\n</untrusted_context>");
            serde_json::to_string(&serde_json::json!({ "output": wrapped })).unwrap_or_default()
        }
        Wrap::CodexExec => format!("Wall time: 0.0000 seconds\nOutput:\n{body}"),
    }
}

/// The `text` of a result's `text` items and embedded `resource` items, in order, joined by
/// `"\n"`.
pub fn content_text(result: &Value) -> String {
    let mut out = String::new();
    let items = result.get("content").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        let text = match item.get("type").and_then(Value::as_str) {
            Some("text") => item.get("text").and_then(Value::as_str),
            Some("resource") => item
                .get("resource")
                .and_then(|r| r.get("text"))
                .and_then(Value::as_str),
            _ => None,
        };
        if let Some(t) = text {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
    }
    out
}

/// Characters of `s` as JavaScript counts them (`string.length`: UTF-16 code units).
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_parse_and_unknown_names_list_the_known_ones() {
        assert_eq!(
            "claude-code".parse::<Profile>().unwrap().name,
            "claude-code"
        );
        assert_eq!("Claude".parse::<Profile>().unwrap().name, "claude-code");
        assert_eq!("gemini".parse::<Profile>().unwrap().name, "gemini-cli");
        let e = "emacs".parse::<Profile>().unwrap_err();
        assert!(e.to_string().contains("generic, wire, claude-code"), "{e}");
        assert_eq!(Profile::default().name, "generic");
        for p in PROFILES {
            assert_eq!(p.name.parse::<Profile>().unwrap(), *p);
            assert!(p.encoding.parse::<Encoding>().is_ok(), "{}", p.name);
            assert!(!p.renderings.is_empty(), "{}", p.name);
        }
    }

    #[test]
    fn renderings_are_what_each_client_hands_its_model() {
        let result = json!({
            "content": [
                {"type": "text", "text": "[1,2]"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "{\"truncated\":true}"}
            ],
            "structuredContent": {"content": "[1,2]"}
        });
        assert_eq!(render(&CONTENT, &result), "[1,2]\n{\"truncated\":true}");
        assert_eq!(render(&STRUCTURED, &result), r#"{"content":"[1,2]"}"#);
        assert_eq!(
            render(&GEMINI, &result),
            r#"{"output":"<untrusted_context>\n[1,2]\n{\"truncated\":true}\n</untrusted_context>"}"#
        );
        assert_eq!(
            render(&CODEX, &result),
            "Wall time: 0.0000 seconds\nOutput:\n{\"content\":\"[1,2]\"}"
        );
        let plain = json!({"content": [{"type": "text", "text": "a"}]});
        assert_eq!(render(&STRUCTURED, &plain), "a");
    }

    #[test]
    fn the_cost_is_the_worst_rendering_and_caps_bind() {
        let enc = Encoding::Cl100kBase;
        // A JSON text with many quotes: escaped inside a string it costs more tokens.
        let text = serde_json::to_string(
            &(0..200)
                .map(|i| json!({"name": format!("f{i}.md"), "type": "file"}))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let result = json!({"content": [{"type": "text", "text": text}],
                            "structuredContent": {"content": text}});
        let content_tokens = enc.count(&text);
        let generic = Profile::generic();
        let cost = generic.cost(&result, content_tokens, 0, &enc);
        assert!(cost.tokens > content_tokens, "{cost:?} vs {content_tokens}");
        assert!(generic.admits(&cost, cost.tokens, false));
        assert!(!generic.admits(&cost, cost.tokens - 1, false));
        let f = generic.shrink_factor(&cost, content_tokens, false);
        assert!(f < 1.0 && f > 0.5, "{f}");
        // Codex: a byte cap far below a 10,000-token budget.
        let codex: Profile = "codex".parse().unwrap();
        let big = "x\n".repeat(8_000);
        let r = json!({"content": [{"type": "text", "text": big}]});
        let cost = codex.cost(&r, 0, 0, &Encoding::O200kBase);
        assert!(!codex.admits(&cost, 10_000, false));
        assert!(cost.bytes > CODEX_BYTES);
        // An error's char cap.
        let claude: Profile = "claude-code".parse().unwrap();
        let c = Cost {
            tokens: 10,
            chars: 10_001,
            bytes: 10_001,
            lines: 1,
        };
        assert!(claude.admits(&c, 10_000, false));
        assert!(!claude.admits(&c, 10_000, true));
    }

    #[test]
    fn utf16_counts_astral_chars_twice() {
        assert_eq!(utf16_len("a\u{e9}\u{1F600}"), 4);
    }
}
