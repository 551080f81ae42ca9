//! The image keys of a tool's rule: `images` (where an `image` content item goes) and
//! `image_tokens` (what it costs the model).
//!
//! An image is not free for the model: a client passes it to a vision model, which reads it
//! as tokens computed from its pixel size. The proxy counts each inline image at that cost in
//! the result's model-visible tokens, so text pages plus inline images stay within the budget.

use serde::Deserialize;

/// Where an `image` content item goes (`images = "auto" | "inline" | "file"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageMode {
    /// The default: an image stays inline while it fits the budget beside the text; one that
    /// does not fit is written to a file at full resolution and a downscaled copy that fits
    /// stays inline, beside a text item giving the file's path.
    #[default]
    Auto,
    /// Never offloaded: an image that does not fit is replaced by a downscaled copy that does,
    /// with no file. (Only when no copy can fit, or the image cannot be decoded, is it written
    /// to a file.)
    Inline,
    /// Every image whose data decodes to more than the blob threshold (1 KiB) is written to a
    /// file and replaced by its description (the behaviour before `images` existed); smaller
    /// ones stay inline and count.
    File,
}

/// How many tokens an image costs the model (`image_tokens = "anthropic" | "openai"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageCost {
    /// The default: `ceil(width × height / 750)` tokens (Anthropic, "Vision" guide,
    /// "Calculate image costs": `tokens = (width px * height px) / 750`). The formula is
    /// applied to the image as sent, without the API's own downscaling of images whose long
    /// edge exceeds 1568 px, so a big screenshot counts at its full size: a client that passes
    /// it on pays for that size until the API shrinks it, and other clients may not.
    #[default]
    Anthropic,
    /// OpenAI's tiles, `detail: "high"` (OpenAI, "Images and vision" guide, "Calculating
    /// costs"): the image is scaled to fit within 2048 × 2048, then so that its shortest side
    /// is 768 px (only ever down); each 512 × 512 tile of the result costs 170 tokens, plus
    /// 85. A 1024 × 1024 image costs 765, a 2048 × 4096 one 1105.
    #[serde(rename = "openai")]
    OpenAi,
}

impl ImageCost {
    /// The tokens an image of `width` × `height` pixels costs the model. 0 × anything
    /// costs 0 under `Anthropic` and the base 85 under `OpenAi`.
    pub fn tokens(self, width: u64, height: u64) -> u64 {
        match self {
            ImageCost::Anthropic => width.saturating_mul(height).div_ceil(750),
            ImageCost::OpenAi => {
                let (w, h) = openai_resized(width, height);
                let tiles = w.div_ceil(512).saturating_mul(h.div_ceil(512));
                85 + 170 * tiles
            }
        }
    }
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
    (w.round() as u64, h.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_is_pixels_over_750_rounded_up() {
        // The guide's table: 1092×1092 ≈ 1590 tokens.
        assert_eq!(ImageCost::Anthropic.tokens(1092, 1092), 1590);
        assert_eq!(ImageCost::Anthropic.tokens(750, 1), 1);
        assert_eq!(ImageCost::Anthropic.tokens(751, 1), 2);
        assert_eq!(ImageCost::Anthropic.tokens(4000, 3000), 16_000);
        assert_eq!(ImageCost::Anthropic.tokens(0, 10), 0);
        assert_eq!(
            ImageCost::Anthropic.tokens(u64::MAX, u64::MAX),
            u64::MAX / 750 + 1
        );
    }

    #[test]
    fn openai_matches_the_guides_examples() {
        assert_eq!(ImageCost::OpenAi.tokens(1024, 1024), 765);
        assert_eq!(ImageCost::OpenAi.tokens(2048, 4096), 1105);
        assert_eq!(ImageCost::OpenAi.tokens(512, 512), 255);
        assert_eq!(ImageCost::OpenAi.tokens(513, 500), 425);
        // 4000×3000 → 2048×1536 → 1024×768: 2×2 tiles.
        assert_eq!(ImageCost::OpenAi.tokens(4000, 3000), 765);
        assert_eq!(ImageCost::OpenAi.tokens(1, 1), 255);
    }

    #[test]
    fn modes_parse_from_toml_names() {
        #[derive(Deserialize)]
        struct R {
            images: ImageMode,
            image_tokens: ImageCost,
        }
        let r: R = toml::from_str("images = \"inline\"\nimage_tokens = \"openai\"").unwrap();
        assert_eq!(
            (r.images, r.image_tokens),
            (ImageMode::Inline, ImageCost::OpenAi)
        );
        assert!(toml::from_str::<R>("images = \"x\"\nimage_tokens = \"openai\"").is_err());
    }
}
