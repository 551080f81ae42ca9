//! The image keys of a tool's rule: `images` (where an `image` content item goes) and
//! `image_tokens` (what it costs the model).
//!
//! An image is not free for the model: a client passes it to a vision model, which reads it
//! as tokens computed from its pixel size after the vendor's own resize
//! ([`mcp_budget_core::vision`]). The proxy sends no more pixels than the model gets and counts
//! each inline image at that cost in the result's model-visible tokens, so text pages plus
//! inline images stay within the budget. `image_max_side` caps every image's sides.

use serde::Deserialize;

/// Where an `image` content item goes (`images = "auto" | "inline" | "file"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageMode {
    /// The default: an image stays inline while it fits the budget beside the text and is no
    /// larger than the size its model gets; one that is larger, or does not fit, is written to
    /// a file at full resolution and a downscaled copy (that size, or what fits) stays inline,
    /// beside a text item giving the file's path.
    #[default]
    Auto,
    /// Never offloaded: an image that does not fit is replaced by a downscaled copy that does,
    /// with no file. (Only when no copy can fit, or the image cannot be decoded, is it written
    /// to a file.)
    Inline,
    /// Every image whose data decodes to more than the blob threshold (1 KiB) is written to a
    /// file and replaced by its description (the behaviour before `images` existed); smaller
    /// ones stay inline and count (downscaled, with a file, when larger than the size their
    /// model gets).
    File,
}

/// What an image costs the model and the size it gets, per client family (core's
/// [`mcp_budget_core::vision::ImageCost`]).
pub use mcp_budget_core::vision::ImageCost;

#[cfg(test)]
mod tests {
    use super::*;

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
