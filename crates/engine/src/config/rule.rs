//! The rule in force for one tool: [`EffectiveRule`], every option resolved by one generic
//! merge (`layered!`) in the precedence of the module docs of [`crate::config`].

use super::file::{FileDefaults, ToolRule};
use super::file::{Overflow, Tables};
use super::images::{ImageCost, ImageMode};
use super::settings::Settings;

/// The layers a per-tool option is read from, highest first (module docs of
/// [`crate::config`], "Precedence"): the tool's `[tools.<name>]` rule, then the flag or
/// environment variable ([`Flags`], only the options that have one), then `[defaults]`.
struct Layers<'a> {
    rule: Option<&'a ToolRule>,
    defaults: &'a FileDefaults,
}

/// The per-tool options that also have a flag and an environment variable
/// (`--max-tokens` / `MCP_BUDGET_MAX_TOKENS`, `--precision` / `MCP_BUDGET_PRECISION`).
struct Flags {
    max_tokens: Option<usize>,
    precision: Option<u32>,
}

/// The first layer that sets option `$key`: `layered!(layers, key)` reads the tool's rule,
/// then `[defaults]`; `layered!(layers, flags, key)` puts the flag between them. `None`
/// when no layer sets it (the caller supplies the built-in default). One merge for every
/// option: the field has the same name in [`ToolRule`], [`FileDefaults`] and [`Flags`].
macro_rules! layered {
    ($layers:ident, $key:ident) => {
        $layers
            .rule
            .and_then(|r| r.$key.clone())
            .or_else(|| $layers.defaults.$key.clone())
    };
    ($layers:ident, $flags:ident, $key:ident) => {
        $layers
            .rule
            .and_then(|r| r.$key.clone())
            .or($flags.$key)
            .or_else(|| $layers.defaults.$key.clone())
    };
}

/// The smallest `image_max_side` taken, in pixels (a smaller value is raised to it).
pub const MIN_IMAGE_SIDE: u32 = 16;

/// The rule in force for one tool, after applying the precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveRule {
    /// Budget in tokens (at least [`mcp_budget_core::MIN_BUDGET_TOKENS`]).
    pub max_tokens: usize,
    /// Significant digits, 0 = exact.
    pub precision: u32,
    /// Overflow mode.
    pub overflow: Overflow,
    /// jq filter applied before shaping.
    pub transform: Option<String>,
    /// Suffix of the tool's description.
    pub description_suffix: Option<String>,
    /// Shorten UUIDs in results to their 12-hex prefix (`uuid_prefix`).
    pub uuid_prefix: bool,
    /// Replace `{"$response":…,"query":…}` arguments by cached responses (`response_refs`).
    pub response_refs: bool,
    /// Tables for arrays of objects (`[tools.<name>]`, then `[defaults]`; default off).
    pub tables: Tables,
    /// Where image items go (default [`ImageMode::Auto`]).
    pub images: ImageMode,
    /// What an image costs the model and the size it gets (default: the client profile's).
    pub image_tokens: ImageCost,
    /// The longest side, in pixels, of an image sent inline (default 2,000, at least 16).
    pub image_max_side: u32,
}

impl Settings {
    /// The rule in force for `tool` (see the module docs for the precedence).
    pub fn rule_for(&self, tool: &str) -> EffectiveRule {
        self.resolve(self.file.as_ref().and_then(|f| f.tools.get(tool)))
    }

    /// The proxy-wide rule (flags, env, `[defaults]`; no per-tool rule).
    pub fn global_rule(&self) -> EffectiveRule {
        self.resolve(None)
    }

    fn resolve(&self, rule: Option<&ToolRule>) -> EffectiveRule {
        let empty = FileDefaults::default();
        let layers = Layers {
            rule,
            defaults: self.file.as_ref().map_or(&empty, |f| &f.defaults),
        };
        let flags = Flags {
            max_tokens: self.max_tokens,
            precision: self.precision,
        };
        EffectiveRule {
            max_tokens: layered!(layers, flags, max_tokens)
                .unwrap_or(mcp_budget_core::DEFAULT_BUDGET_TOKENS)
                .max(mcp_budget_core::MIN_BUDGET_TOKENS),
            precision: layered!(layers, flags, precision)
                .unwrap_or(mcp_budget_core::DEFAULT_PRECISION),
            overflow: layered!(layers, overflow).unwrap_or_default(),
            transform: rule.and_then(|r| r.transform.clone()),
            description_suffix: rule.and_then(|r| r.description_suffix.clone()),
            uuid_prefix: layered!(layers, uuid_prefix).unwrap_or(false),
            response_refs: layered!(layers, response_refs).unwrap_or(false),
            tables: layered!(layers, tables).unwrap_or_default(),
            images: layered!(layers, images).unwrap_or_default(),
            image_tokens: layered!(layers, image_tokens)
                .unwrap_or_else(|| self.profile().image_cost),
            image_max_side: layered!(layers, image_max_side)
                .unwrap_or(mcp_budget_core::vision::DEFAULT_MAX_SIDE)
                .max(MIN_IMAGE_SIDE),
        }
    }

    /// Whether `response_refs` is on for some tool (in `[defaults]` or a `[tools.<name>]`):
    /// then the hint of a paged result says how to send it back by reference.
    pub fn response_refs_anywhere(&self) -> bool {
        self.file.as_ref().is_some_and(|f| {
            f.defaults.response_refs == Some(true)
                || f.tools.values().any(|r| r.response_refs == Some(true))
        })
    }
}
