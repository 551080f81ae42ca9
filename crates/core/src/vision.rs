//! What an image costs a vision model, and the size the model actually gets.
//!
//! A client hands an `image` content item to its vendor's API, which resizes it by its own rule
//! before the model reads it, and bills (and fills the context with) tokens computed from the
//! resized pixel size. One [`ImageCost`] per client family says both:
//!
//! - [`ImageCost::effective_size`]: the pixel size the model gets of a `width` × `height`
//!   image. Sending more pixels than that carries bytes the API throws away, so the proxy
//!   downscales an image to it before it goes out (the full resolution kept in a blob file).
//! - [`ImageCost::tokens`]: the tokens an image sent at `width` × `height` costs, computed on its
//!   effective size: a 4000 × 3000 screenshot costs what the 1268 × 951 the model reads costs.
//!
//! Apart from the families' rules, an API may refuse an image outright: Anthropic rejects a side
//! over 8,000 px, and over 2,000 px when one request carries more than 20 images (a long agent
//! session with screenshots reaches that). [`fit_side`] caps both sides at
//! [`DEFAULT_MAX_SIDE`] (or the `image_max_side` a user sets) so no request is ever refused.
//!
//! Sizes are in pixels, costs in tokens of the vendor's vision encoder (not BPE tokens of a text
//! encoding, though both fill the same context window).

use serde::Deserialize;

/// The longest side, in pixels, of an image the proxy sends by default: Anthropic's limit for a
/// request that carries more than 20 images (Anthropic, "Vision" guide, "Image size": "If you
/// submit more than 20 images in one API request, this limit is 2000 x 2000 px"; Claude Code
/// users see "image dimensions exceed max allowed size for many-image requests: 2000 pixels").
pub const DEFAULT_MAX_SIDE: u32 = 2_000;

/// Anthropic's long-edge limit before its API scales an image down, in pixels (Anthropic,
/// "Vision" guide, "Evaluate image size").
pub const ANTHROPIC_MAX_EDGE: u64 = 1_568;

/// Anthropic's token limit before its API scales an image down ("more than ~1,600 tokens" in
/// the same section): at `w × h / 750`, 1,200,000 pixels (~1.15 megapixels at the table's 1:1
/// size, 1092 × 1092).
pub const ANTHROPIC_MAX_TOKENS: u64 = 1_600;

/// How many tokens an image costs, per client family (`image_tokens = "anthropic" | "openai" |
/// "openai-low" | "gemini"`). A client profile chooses one ([`crate::client::Profile`]); a
/// config key may override it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageCost {
    /// Claude (Anthropic, "Vision" guide, "Evaluate image size" and "Calculate image costs"):
    /// an image whose long edge is over 1,568 px, or that would cost over ~1,600 tokens, is
    /// scaled down (aspect kept) until it is within both; then it costs
    /// `ceil(width × height / 750)` tokens. A 4000 × 3000 screenshot is read at 1264 × 948 and
    /// costs 1,598; 1092 × 1092 costs 1,590.
    #[default]
    Anthropic,
    /// OpenAI's tiles at `detail: "high"` (OpenAI, "Images and vision" guide, "Calculating
    /// costs", GPT-4o / GPT-4.1 figures): scaled (down only) to fit within 2048 × 2048, then so
    /// that its shortest side is at most 768 px; each 512 × 512 tile of the result costs 170
    /// tokens, plus 85. A 1024 × 1024 image costs 765, a 2048 × 4096 one 1,105. (GPT-5's
    /// figures, 70 + 140 a tile, are lower: these are an upper bound for it.)
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI at `detail: "low"` (same guide): the model reads a 512 × 512 version (fit within
    /// it), for a flat 85 tokens.
    #[serde(rename = "openai-low")]
    OpenAiLow,
    /// Gemini (Google, "Understand and count tokens", "Multimodal tokens", Gemini 2.0 and
    /// later): an image with both sides at most 384 px costs 258 tokens; a larger one is
    /// cropped and scaled into 768 × 768 tiles, 258 tokens each (`ceil(w / 768) ×
    /// ceil(h / 768)` tiles). No documented resize: its effective size is the image itself.
    /// (Gemini 3's `media_resolution` bills a flat ≤ 1,120 per image; the tile count is the
    /// larger of the two for the sizes the proxy sends.)
    Gemini,
}

impl ImageCost {
    /// Every family, in the order the docs list them.
    pub const ALL: [ImageCost; 4] = [
        ImageCost::Anthropic,
        ImageCost::OpenAi,
        ImageCost::OpenAiLow,
        ImageCost::Gemini,
    ];

    /// The name the config takes (`anthropic`, `openai`, `openai-low`, `gemini`).
    pub fn name(self) -> &'static str {
        match self {
            ImageCost::Anthropic => "anthropic",
            ImageCost::OpenAi => "openai",
            ImageCost::OpenAiLow => "openai-low",
            ImageCost::Gemini => "gemini",
        }
    }

    /// The pixel size the model gets of a `width` × `height` image, after the vendor's own
    /// downscaling (aspect kept, never up). 0 × anything stays as it is.
    pub fn effective_size(self, width: u64, height: u64) -> (u64, u64) {
        if width == 0 || height == 0 {
            return (width, height);
        }
        match self {
            ImageCost::Anthropic => {
                let long = width.max(height) as f64;
                let area = width as f64 * height as f64;
                let max_area = (ANTHROPIC_MAX_TOKENS * 750) as f64;
                let f = (ANTHROPIC_MAX_EDGE as f64 / long)
                    .min((max_area / area).sqrt())
                    .min(1.0);
                scaled_down(width, height, f, |w, h| {
                    w.max(h) <= ANTHROPIC_MAX_EDGE && w * h <= ANTHROPIC_MAX_TOKENS * 750
                })
            }
            ImageCost::OpenAi => openai_resized(width, height),
            ImageCost::OpenAiLow => {
                let f = (512.0 / width.max(height) as f64).min(1.0);
                scaled_down(width, height, f, |w, h| w.max(h) <= 512)
            }
            ImageCost::Gemini => (width, height),
        }
    }

    /// The tokens an image sent at `width` × `height` pixels costs the model: the family's
    /// formula on [`ImageCost::effective_size`]. 0 × anything costs 0 under `Anthropic` and the
    /// family's base cost under the others.
    pub fn tokens(self, width: u64, height: u64) -> u64 {
        let (w, h) = self.effective_size(width, height);
        match self {
            ImageCost::Anthropic => w.saturating_mul(h).div_ceil(750),
            ImageCost::OpenAi => {
                let tiles = w.div_ceil(512).saturating_mul(h.div_ceil(512));
                85 + 170 * tiles
            }
            ImageCost::OpenAiLow => 85,
            ImageCost::Gemini => {
                if w <= 384 && h <= 384 {
                    258
                } else {
                    258 * w.div_ceil(768).saturating_mul(h.div_ceil(768))
                }
            }
        }
    }

    /// Where the family's figures come from (for docs and `--help`).
    pub fn source(self) -> &'static str {
        match self {
            ImageCost::Anthropic => {
                "Anthropic, Vision guide: long edge <= 1568 px and <= ~1,600 tokens, then w*h/750"
            }
            ImageCost::OpenAi => {
                "OpenAI, Images and vision guide: fit 2048x2048, shortest side 768, 85 + 170 a 512 px tile"
            }
            ImageCost::OpenAiLow => "OpenAI, Images and vision guide: detail low, 512x512, 85",
            ImageCost::Gemini => {
                "Google, Understand and count tokens: 258 up to 384x384, else 258 a 768 px tile"
            }
        }
    }
}

/// `width` × `height` scaled by `f` (≤ 1), floored, then shrunk a pixel at a time on the long
/// side until `within` holds (the floor can land a pixel over a limit of the area).
fn scaled_down(width: u64, height: u64, f: f64, within: impl Fn(u64, u64) -> bool) -> (u64, u64) {
    if f >= 1.0 {
        return (width, height);
    }
    let mut w = ((width as f64 * f).floor() as u64).max(1);
    let mut h = ((height as f64 * f).floor() as u64).max(1);
    while !within(w, h) && (w > 1 || h > 1) {
        if w >= h {
            w -= 1;
        } else {
            h -= 1;
        }
    }
    (w, h)
}

/// The size OpenAI tiles an image of `width` × `height` at: scaled (down only, aspect kept)
/// to fit within 2048 × 2048, then so that the shortest side is at most 768 px.
fn openai_resized(width: u64, height: u64) -> (u64, u64) {
    let (mut w, mut h) = (width as f64, height as f64);
    let long = w.max(h);
    if long > 2048.0 {
        let f = 2048.0 / long;
        w *= f;
        h *= f;
    }
    let short = w.min(h);
    if short > 768.0 {
        let f = 768.0 / short;
        w *= f;
        h *= f;
    }
    // The guide's examples land on whole pixels; round what the scaling leaves.
    ((w.round() as u64).max(1), (h.round() as u64).max(1))
}

/// `width` × `height` scaled down (aspect kept, floored, at least 1 px a side) so that neither
/// side exceeds `max_side` pixels; unchanged when both already fit (or `max_side` is 0).
pub fn fit_side(width: u64, height: u64, max_side: u32) -> (u64, u64) {
    let max = u64::from(max_side);
    if max == 0 || (width <= max && height <= max) {
        return (width, height);
    }
    let f = max as f64 / width.max(height) as f64;
    scaled_down(width, height, f, |w, h| w <= max && h <= max)
}

/// The size to send a `width` × `height` image at for `cost`: its effective size, capped at
/// `max_side` pixels a side ([`fit_side`]).
pub fn send_size(cost: ImageCost, width: u64, height: u64, max_side: u32) -> (u64, u64) {
    let (w, h) = cost.effective_size(width, height);
    fit_side(w, h, max_side)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_counts_what_its_api_keeps() {
        // The guide's table: 1092×1092 ≈ 1590 tokens, within both limits.
        assert_eq!(
            ImageCost::Anthropic.effective_size(1092, 1092),
            (1092, 1092)
        );
        assert_eq!(ImageCost::Anthropic.tokens(1092, 1092), 1590);
        assert_eq!(ImageCost::Anthropic.tokens(750, 1), 1);
        assert_eq!(ImageCost::Anthropic.tokens(751, 1), 2);
        assert_eq!(ImageCost::Anthropic.tokens(1280, 800), 1366);
        // 4000×3000 (12 MP) is read at ~1.2 MP: ~1,600 tokens, not 16,000.
        let (w, h) = ImageCost::Anthropic.effective_size(4000, 3000);
        assert_eq!((w, h), (1264, 948));
        assert_eq!(ImageCost::Anthropic.tokens(4000, 3000), 1598);
        // A tall full-page screenshot: the area binds before the long edge does.
        assert_eq!(
            ImageCost::Anthropic.effective_size(8000, 14438),
            (815, 1471)
        );
        assert_eq!(ImageCost::Anthropic.tokens(8000, 14438), 1599);
        // A long strip: the long edge binds.
        assert_eq!(ImageCost::Anthropic.effective_size(4000, 200), (1568, 78));
        // A 1:2 image at the guide's 784×1568 is over 1,600 tokens (1,640): scaled a little.
        let (w, h) = ImageCost::Anthropic.effective_size(784, 1568);
        assert!(w * h <= 1_200_000 && h < 1568, "{w}x{h}");
        assert_eq!(ImageCost::Anthropic.tokens(0, 10), 0);
        assert!(ImageCost::Anthropic.tokens(u64::MAX, u64::MAX) <= 1600);
    }

    #[test]
    fn openai_matches_the_guides_examples() {
        assert_eq!(ImageCost::OpenAi.tokens(1024, 1024), 765);
        assert_eq!(ImageCost::OpenAi.tokens(2048, 4096), 1105);
        assert_eq!(ImageCost::OpenAi.tokens(512, 512), 255);
        assert_eq!(ImageCost::OpenAi.tokens(513, 500), 425);
        // 4000×3000 → 2048×1536 → 1024×768: 2×2 tiles.
        assert_eq!(ImageCost::OpenAi.effective_size(4000, 3000), (1024, 768));
        assert_eq!(ImageCost::OpenAi.tokens(4000, 3000), 765);
        assert_eq!(ImageCost::OpenAi.tokens(1, 1), 255);
        assert_eq!(ImageCost::OpenAiLow.tokens(4000, 3000), 85);
        assert_eq!(ImageCost::OpenAiLow.effective_size(4000, 3000), (512, 384));
        assert_eq!(ImageCost::OpenAiLow.effective_size(300, 200), (300, 200));
    }

    #[test]
    fn gemini_tiles() {
        assert_eq!(ImageCost::Gemini.tokens(384, 384), 258);
        assert_eq!(ImageCost::Gemini.tokens(600, 400), 258);
        assert_eq!(ImageCost::Gemini.tokens(1280, 800), 2 * 2 * 258);
        assert_eq!(ImageCost::Gemini.tokens(4000, 3000), 6 * 4 * 258);
        assert_eq!(ImageCost::Gemini.effective_size(4000, 3000), (4000, 3000));
    }

    #[test]
    fn the_side_cap_keeps_the_aspect() {
        assert_eq!(fit_side(1280, 800, 2000), (1280, 800));
        assert_eq!(fit_side(4000, 3000, 2000), (2000, 1500));
        let (w, h) = fit_side(8000, 14438, 2000);
        assert_eq!(h, 2000);
        assert_eq!(w, 1108);
        assert_eq!(fit_side(4000, 3000, 0), (4000, 3000));
        assert_eq!(fit_side(1, 100_000, 2000), (1, 2000));
        assert_eq!(
            send_size(ImageCost::Gemini, 8000, 14438, 2000),
            (1108, 2000)
        );
        assert_eq!(send_size(ImageCost::OpenAi, 8000, 14438, 2000), (768, 1386));
    }

    #[test]
    fn the_cost_never_falls_as_the_size_grows() {
        // Bisection over the scale (the proxy's share fitting) needs a monotone cost.
        for family in ImageCost::ALL {
            let mut last = 0;
            for s in 1..=1000 {
                let t = family.tokens(4 * s, 3 * s);
                assert!(t >= last, "{} at {s}: {t} < {last}", family.name());
                last = t;
            }
        }
    }

    #[test]
    fn names_parse_from_toml_values() {
        for family in ImageCost::ALL {
            let v: ImageCost = serde_json::from_value(family.name().into()).unwrap();
            assert_eq!(v, family);
        }
        assert!(serde_json::from_value::<ImageCost>("x".into()).is_err());
    }
}
