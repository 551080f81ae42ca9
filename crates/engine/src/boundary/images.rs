//! `image` content items at their real cost (the tool's `images` and `image_tokens` keys,
//! [`crate::config::ImageMode`], [`crate::config::ImageCost`]).
//!
//! An inline image costs the model tokens (its vision cost, from its pixel size), so the
//! result's model-visible tokens are its text pages plus its inline images, and the budget
//! bounds that sum. [`fit`] decides, once the text documents are known, what each image
//! becomes:
//!
//! First each image's **send size**: the size its model gets of it after the vendor's own
//! resize, capped at `image_max_side` ([`mcp_budget_core::vision::send_size`]); its cost is
//! counted at that size. Then:
//!
//! - **Fits** (text + every image at its send size ≤ budget): an image within its send size
//!   stays as it came; a larger one is replaced by a copy at its send size (its full
//!   resolution in a file, as below), since the model would never see the extra pixels.
//! - **Does not fit**: the images share what the text leaves (the text keeps what it needs
//!   when that is at most half the budget, else half the budget, at least 256 tokens, for its
//!   pages); each gets a share proportional to its cost and is replaced by a copy downscaled
//!   to cost at most its share (decoded, resized with a Lanczos-3 filter — after an area
//!   average to twice the size when shrinking more than 4 times — and re-encoded in its
//!   format: PNG at best compression, JPEG at quality 85, WebP lossless). Under `auto` the full-resolution image
//!   is written to a file ([`super::blobs`]) and a text item after the copy gives its path,
//!   size and the copy's size; under `inline` no file is written.
//! - **Cannot be shown** (data that is not base64, bytes whose pixel size cannot be read,
//!   a decode that fails or exceeds the limits, no copy small enough): the image goes to a
//!   file and a text item describes it (data that is not base64 is written as received,
//!   `mimeType` `text/plain`). When even the write fails the item stays as it came.
//! - `file` mode: every image over the blob threshold goes to a file as before; smaller ones
//!   are placed as under `auto`.
//!
//! Decoding is bounded ([`image::Limits`]): at most [`MAX_SIDE`] pixels a side and
//! [`MAX_DECODE_BYTES`] of decoder memory, so a small file claiming a huge size (a
//! decompression bomb) is refused before its pixels are allocated.

use std::io::Cursor;

use base64::Engine as _;
use mcp_budget_core::blob;
use mcp_budget_core::paginate::Document;
use mcp_budget_core::vision;
use serde_json::{Map, Value};

use super::state::Boundary;
use crate::config::{EffectiveRule, ImageCost, ImageMode};
use mcp_budget_core::shape::model::Slot;

/// Longest side, in pixels, of an image the proxy decodes to downscale (a full-page
/// screenshot is tall).
pub(crate) const MAX_SIDE: u32 = 32_768;

/// Most memory, in bytes, a decoder may allocate for one image (the `image` crate's default:
/// a 154,000-token 8000 × 14438 RGB screenshot needs 347 MB).
pub(crate) const MAX_DECODE_BYTES: u64 = 512 * 1024 * 1024;

/// The documents of a result being shaped, as `call::shape` holds them: `docs` indexed by
/// the `doc` of [`Slot::Text`]/[`Slot::Resource`] slots, `orig_texts` and `is_text_item`
/// parallel to `docs`.
pub(crate) struct DocSet<'a> {
    pub(crate) docs: &'a mut Vec<Document>,
    pub(crate) layout: &'a mut Vec<Slot>,
    pub(crate) orig_texts: &'a mut Vec<String>,
    pub(crate) is_text_item: &'a mut Vec<bool>,
}

/// What [`fit`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fitted {
    /// Tokens of the images left inline (their vision cost).
    pub(crate) tokens: usize,
    /// Images written to files.
    pub(crate) offloaded: usize,
}

/// An image that may stay inline.
struct Candidate {
    /// Its index in the layout.
    slot: usize,
    bytes: Vec<u8>,
    mime: String,
    /// Its pixel size as it came.
    width: u64,
    height: u64,
    /// The largest size it goes out at: what the model gets of it, capped at
    /// `image_max_side` ([`mcp_budget_core::vision::send_size`]).
    send: (u64, u64),
    /// Its cost at `send`, in vision tokens.
    cost: u64,
}

/// Decides what each image at `pending` (layout indexes of [`Slot::Other`] `image` items, in
/// order) becomes, under `rule`, and rewrites `set` accordingly (see the module docs).
/// `extra_tokens` are model-visible tokens outside `set.docs` (a structuredContent). Must run
/// before a [`Slot::Structured`] joins the layout. Never fails.
pub(crate) fn fit(
    b: &Boundary,
    rule: &EffectiveRule,
    set: DocSet<'_>,
    pending: &[usize],
    extra_tokens: usize,
) -> Fitted {
    let mut fitted = Fitted::default();
    let mut inline_tokens = 0u64;
    let mut candidates = Vec::new();
    // Replacements, applied last to first so that layout indexes stay valid.
    let mut edits: Vec<(usize, Edit)> = Vec::new();
    for &slot in pending {
        let Some(Slot::Other(item)) = set.layout.get(slot) else {
            continue;
        };
        match classify(b, rule, item) {
            Class::Keep(cost) => inline_tokens += cost,
            Class::File(desc) => {
                fitted.offloaded += 1;
                edits.push((slot, Edit::Replace(desc)));
            }
            Class::Candidate {
                bytes,
                mime,
                width,
                height,
            } => {
                let send = vision::send_size(rule.image_tokens, width, height, rule.image_max_side);
                candidates.push(Candidate {
                    slot,
                    cost: rule.image_tokens.tokens(send.0, send.1),
                    send,
                    bytes,
                    mime,
                    width,
                    height,
                });
            }
        }
    }
    let budget = rule.max_tokens as u64;
    if !candidates.is_empty() {
        let text = text_tokens(b, rule, set.docs) + extra_tokens as u64;
        inline_tokens += place(
            b,
            rule,
            candidates,
            budget.saturating_sub(inline_tokens),
            text,
            &mut edits,
            &mut fitted,
        );
    }
    edits.sort_by_key(|(slot, _)| *slot);
    for (slot, edit) in edits.into_iter().rev() {
        apply(
            set.docs,
            set.layout,
            set.orig_texts,
            set.is_text_item,
            slot,
            edit,
        );
    }
    fitted.tokens = usize::try_from(inline_tokens).unwrap_or(usize::MAX);
    fitted
}

/// What one image item is, before the budget is looked at.
enum Class {
    /// Stays as it came, costing this many tokens (0 when its size cannot be known).
    Keep(u64),
    /// Goes to a file: this description replaces it.
    File(Value),
    /// Base64 with a known pixel size, not bound for a file by `file` mode: it goes out at
    /// most at its send size, smaller when the budget says so.
    Candidate {
        bytes: Vec<u8>,
        mime: String,
        width: u64,
        height: u64,
    },
}

fn classify(b: &Boundary, rule: &EffectiveRule, item: &Value) -> Class {
    let Some(data) = item.get("data").and_then(Value::as_str) else {
        return Class::Keep(0);
    };
    let declared = item
        .get("mimeType")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty());
    let decoded = match base64_engine_decode(data) {
        Some(d) => d,
        None => {
            // Not base64: no client can show it. The file keeps it as received.
            return match b.blobs.write("image", "text/plain", data.as_bytes()) {
                Some(desc) => Class::File(with_note(
                    &desc,
                    "the data is not valid base64; the file holds it as received",
                )),
                None => Class::Keep(0),
            };
        }
    };
    let mime = declared
        .map(str::to_owned)
        .unwrap_or_else(|| blob::sniff_mime(&decoded).to_owned());
    let over_threshold = decoded.len() > b.blobs.threshold();
    let size = imagesize::blob_size(&decoded)
        .ok()
        .map(|s| (s.width as u64, s.height as u64));
    match size {
        Some((width, height)) if rule.images != ImageMode::File || !over_threshold => {
            Class::Candidate {
                bytes: decoded,
                mime,
                width,
                height,
            }
        }
        // `file` mode over the threshold, or a size that cannot be read: a file when big,
        // else as today (a small unreadable image costs what cannot be known: nothing).
        _ if over_threshold => match b.blobs.write("image", &mime, &decoded) {
            Some(desc) => Class::File(offload_value(&desc)),
            None => Class::Keep(0),
        },
        _ => Class::Keep(0),
    }
}

/// `data` decoded as base64 (standard or URL-safe alphabet, padded or not, line breaks
/// ignored) or as a `data:` URI; `None` when it is neither.
fn base64_engine_decode(data: &str) -> Option<Vec<u8>> {
    if let Ok(d) = blob::decode(data) {
        return Some(d.bytes);
    }
    // `blob::decode` refuses strings that do not look like base64 by its rules for JSON
    // strings (very short ones); an image's `data` is base64 by the spec, so try it plainly.
    let cleaned: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .ok()
}

/// How a slot changes.
enum Edit {
    /// The image becomes a text item holding this description.
    Replace(Value),
    /// The image's data becomes this copy; `desc`, when given, goes in a text item after it.
    Downscaled {
        data: String,
        mime: String,
        desc: Option<Value>,
    },
}

/// Decides each candidate's size and rewrites it: every image goes out at most at its send
/// size (what the model gets, within `image_max_side`); when text + images would pass `room`
/// (the budget left after the images that stay as they are), at the size of its share of what
/// the text leaves. An image sent smaller than it came is replaced by a downscaled copy, with
/// its full resolution in a blob file (not under `inline`). Returns the tokens of the images
/// kept inline.
fn place(
    b: &Boundary,
    rule: &EffectiveRule,
    candidates: Vec<Candidate>,
    room: u64,
    text: u64,
    edits: &mut Vec<(usize, Edit)>,
    fitted: &mut Fitted,
) -> u64 {
    let keep_full = rule.images != ImageMode::Inline;
    // The full-resolution files: their descriptions are text too.
    let mut files: Vec<Option<Value>> = Vec::with_capacity(candidates.len());
    let mut desc_tokens = 0u64;
    let write_file = |c: &Candidate, desc_tokens: &mut u64| {
        let d = b.blobs.write("image", &c.mime, &c.bytes)?;
        let v = serde_json::to_value(d).unwrap_or_default();
        // Counted with the widest copy size it can name.
        let probe = with_copy(v.clone(), 99_999, 99_999);
        *desc_tokens += b.encoding.count(&probe.to_string()) as u64;
        Some(v)
    };
    for c in &candidates {
        let smaller = c.send != (c.width, c.height);
        files.push(if keep_full && smaller {
            write_file(c, &mut desc_tokens)
        } else {
            None
        });
    }
    let cost_all: u64 = candidates.iter().map(|c| c.cost).sum();
    // (target, share) per candidate.
    let plan: Vec<(Option<(u64, u64)>, u64)> = if text + desc_tokens + cost_all <= room {
        candidates.iter().map(|c| (Some(c.send), c.cost)).collect()
    } else {
        // Every image becomes a copy: under `auto`, each with its file.
        if keep_full {
            for (c, file) in candidates.iter().zip(files.iter_mut()) {
                if file.is_none() {
                    *file = write_file(c, &mut desc_tokens);
                }
            }
        }
        let total_text = text + desc_tokens;
        let text_room = if total_text <= room / 2 {
            total_text
        } else {
            (room / 2)
                .max(mcp_budget_core::MIN_BUDGET_TOKENS as u64)
                .min(room)
        };
        let share_all = room.saturating_sub(text_room);
        let cost_all = cost_all.max(1);
        candidates
            .iter()
            .map(|c| {
                let share = u64::try_from(
                    u128::from(share_all) * u128::from(c.cost) / u128::from(cost_all),
                )
                .unwrap_or(u64::MAX);
                let target = target_size(c.send.0, c.send.1, share, rule.image_tokens);
                (target, share)
            })
            .collect()
    };
    let mut kept = 0u64;
    for ((c, file), (target, share)) in candidates.into_iter().zip(files).zip(plan) {
        let copy = match target {
            // Goes out as it came.
            Some(t) if t == (c.width, c.height) => {
                kept += rule.image_tokens.tokens(t.0, t.1);
                continue;
            }
            Some(t) => downscale(&c, t, share, rule.image_tokens, rule.image_max_side),
            None => Err(CopyError::NoRoom(share)),
        };
        match copy {
            Ok(copy) => {
                kept += copy.cost;
                let desc = file.map(|d| with_copy(d, copy.width, copy.height));
                fitted.offloaded += usize::from(desc.is_some());
                edits.push((
                    c.slot,
                    Edit::Downscaled {
                        data: base64::engine::general_purpose::STANDARD.encode(&copy.bytes),
                        mime: copy.mime,
                        desc,
                    },
                ));
            }
            Err(why) => {
                // No copy: the file alone (written now under `inline`).
                let desc = file.or_else(|| {
                    b.blobs
                        .write("image", &c.mime, &c.bytes)
                        .map(|d| serde_json::to_value(d).unwrap_or_default())
                });
                match desc {
                    Some(mut d) => {
                        if let Some(m) = d.as_object_mut() {
                            m.insert("inline".into(), Value::String(why.to_string()));
                        }
                        fitted.offloaded += 1;
                        edits.push((c.slot, Edit::Replace(d)));
                    }
                    // The disk failed too: the image stays as it came, and counts.
                    None => kept += c.cost,
                }
            }
        }
    }
    kept
}

/// A downscaled copy.
struct Copy {
    bytes: Vec<u8>,
    mime: String,
    width: u64,
    height: u64,
    cost: u64,
}

/// Why no copy of an image could be made.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    #[error("not shown: even a 1x1 copy costs more than the {0} tokens left for it")]
    NoRoom(u64),
    #[error("not shown: the image cannot be decoded ({0})")]
    Decode(String),
    #[error("not shown: the copy cannot be encoded ({0})")]
    Encode(String),
}

/// A copy of `c` at `target` pixels (at most its send size, costing at most `share` tokens
/// under the rule's cost).
fn downscale(
    c: &Candidate,
    target: (u64, u64),
    share: u64,
    cost: ImageCost,
    max_side: u32,
) -> Result<Copy, CopyError> {
    let (width, height) = target;
    let format = match c.mime.as_str() {
        "image/png" => image::ImageFormat::Png,
        "image/jpeg" | "image/jpg" => image::ImageFormat::Jpeg,
        "image/webp" => image::ImageFormat::WebP,
        _ => image::ImageFormat::from_mime_type(blob::sniff_mime(&c.bytes))
            .ok_or_else(|| CopyError::Decode(format!("unsupported type {}", c.mime)))?,
    };
    let mut reader = image::ImageReader::with_format(Cursor::new(&c.bytes), format);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let img = reader
        .decode()
        .map_err(|e| CopyError::Decode(e.to_string()))?;
    // The header said one size, the pixels another: go by the pixels.
    let (width, height) =
        if (u64::from(img.width()), u64::from(img.height())) != (c.width, c.height) {
            let (w, h) = vision::send_size(cost, img.width().into(), img.height().into(), max_side);
            target_size(w, h, share, cost).ok_or(CopyError::NoRoom(share))?
        } else {
            (width, height)
        };
    // Far down, area-average to twice the target first (little memory, no aliasing), then
    // Lanczos-3 to the target.
    let img = if u64::from(img.width()) > 4 * width && u64::from(img.height()) > 4 * height {
        img.thumbnail_exact(2 * width as u32, 2 * height as u32)
    } else {
        img
    };
    let small = img.resize_exact(
        width as u32,
        height as u32,
        image::imageops::FilterType::Lanczos3,
    );
    drop(img);
    let mut out = Cursor::new(Vec::new());
    let (small, mime) = match format {
        image::ImageFormat::Jpeg => {
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
            // JPEG holds no alpha.
            let rgb = image::DynamicImage::ImageRgb8(small.to_rgb8());
            rgb.write_with_encoder(enc)
                .map_err(|e| CopyError::Encode(e.to_string()))?;
            (rgb, "image/jpeg")
        }
        image::ImageFormat::WebP => {
            let rgba = image::DynamicImage::ImageRgba8(small.to_rgba8());
            rgba.write_to(&mut out, format)
                .map_err(|e| CopyError::Encode(e.to_string()))?;
            (rgba, "image/webp")
        }
        _ => {
            // Screenshots are mostly flat colour: the best compression pays for itself.
            let enc = image::codecs::png::PngEncoder::new_with_quality(
                &mut out,
                image::codecs::png::CompressionType::Best,
                image::codecs::png::FilterType::Adaptive,
            );
            small
                .write_with_encoder(enc)
                .map_err(|e| CopyError::Encode(e.to_string()))?;
            (small, "image/png")
        }
    };
    let (w, h) = (u64::from(small.width()), u64::from(small.height()));
    Ok(Copy {
        bytes: out.into_inner(),
        mime: mime.to_owned(),
        width: w,
        height: h,
        cost: cost.tokens(w, h),
    })
}

/// The largest `(w, h)`, no larger than `(width, height)` and of about the same aspect, whose
/// cost is at most `share`; `None` when not even 1 × 1 fits (or the size is 0).
pub(crate) fn target_size(
    width: u64,
    height: u64,
    share: u64,
    cost: ImageCost,
) -> Option<(u64, u64)> {
    if width == 0 || height == 0 {
        return None;
    }
    if cost.tokens(width, height) <= share {
        return Some((width, height));
    }
    let size = |f: f64| {
        (
            ((width as f64 * f).floor() as u64).max(1),
            ((height as f64 * f).floor() as u64).max(1),
        )
    };
    // The largest scale that fits, by bisection (cost grows with the scale).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..48 {
        let mid = (lo + hi) / 2.0;
        let (w, h) = size(mid);
        if cost.tokens(w, h) <= share {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (w, h) = size(lo);
    (cost.tokens(w, h) <= share).then_some((w, h))
}

/// The tokens of every document, rendered whole.
fn text_tokens(b: &Boundary, rule: &EffectiveRule, docs: &[Document]) -> u64 {
    docs.iter()
        .map(|d| mcp_budget_core::shape::form::doc_tokens(d, rule.precision, &b.encoding).1 as u64)
        .sum()
}

/// The description of an offloaded image as JSON.
fn offload_value(desc: &mcp_budget_core::wire::BlobOffload) -> Value {
    serde_json::to_value(desc).unwrap_or_default()
}

/// [`offload_value`] with a `note`.
fn with_note(desc: &mcp_budget_core::wire::BlobOffload, note: &str) -> Value {
    let mut v = offload_value(desc);
    if let Some(m) = v.as_object_mut() {
        m.insert("note".into(), Value::String(note.to_owned()));
    }
    v
}

/// `desc` naming the inline copy's size.
fn with_copy(mut desc: Value, width: u64, height: u64) -> Value {
    if let Some(m) = desc.as_object_mut() {
        m.insert(
            "inline".into(),
            Value::String(format!(
                "downscaled copy shown above, {width}x{height}; full resolution in path"
            )),
        );
    }
    desc
}

/// Applies one edit to the image at layout index `slot`.
fn apply(
    docs: &mut Vec<Document>,
    layout: &mut Vec<Slot>,
    orig_texts: &mut Vec<String>,
    is_text_item: &mut Vec<bool>,
    slot: usize,
    edit: Edit,
) {
    let Some(Slot::Other(item)) = layout.get_mut(slot) else {
        return;
    };
    match edit {
        Edit::Replace(desc) => {
            let mut extra = Map::new();
            for k in ["annotations", "_meta"] {
                if let Some(v) = item.get(k) {
                    extra.insert(k.into(), v.clone());
                }
            }
            let doc = insert_doc(docs, layout, orig_texts, is_text_item, slot + 1, desc);
            layout[slot] = Slot::Text { doc, extra };
        }
        Edit::Downscaled { data, mime, desc } => {
            if let Some(m) = item.as_object_mut() {
                m.insert("data".into(), Value::String(data));
                m.insert("mimeType".into(), Value::String(mime));
            }
            if let Some(desc) = desc {
                let doc = insert_doc(docs, layout, orig_texts, is_text_item, slot + 1, desc);
                layout.insert(
                    slot + 1,
                    Slot::Text {
                        doc,
                        extra: Map::new(),
                    },
                );
            }
        }
    }
}

/// Inserts `value` as a document placed before the documents of the layout's slots from
/// `from` on (so pages keep the layout's order); shifts their indexes. Returns its index.
fn insert_doc(
    docs: &mut Vec<Document>,
    layout: &mut [Slot],
    orig_texts: &mut Vec<String>,
    is_text_item: &mut Vec<bool>,
    from: usize,
    value: Value,
) -> usize {
    let at = layout
        .iter()
        .skip(from)
        .find_map(|s| match s {
            Slot::Text { doc, .. } | Slot::Resource { doc, .. } => Some(*doc),
            _ => None,
        })
        .unwrap_or(docs.len())
        .min(docs.len());
    for s in layout.iter_mut() {
        if let Slot::Text { doc, .. } | Slot::Resource { doc, .. } = s
            && *doc >= at
        {
            *doc += 1;
        }
    }
    docs.insert(at, Document::Json(value));
    orig_texts.insert(at.min(orig_texts.len()), String::new());
    is_text_item.insert(at.min(is_text_item.len()), false);
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_size_fits_the_share_and_keeps_the_aspect() {
        // The send size of a 4000×3000 screenshot under Anthropic's rule, at a 1,000 share.
        let (w, h) = target_size(1264, 948, 1_000, ImageCost::Anthropic).unwrap();
        assert!(ImageCost::Anthropic.tokens(w, h) <= 1_000);
        assert!(
            ImageCost::Anthropic.tokens(w + 2, h + 2) > 1_000,
            "{w}x{h} is not the largest"
        );
        assert!((w as f64 / h as f64 - 4.0 / 3.0).abs() < 0.01);
        // Already within its cost: unchanged.
        assert_eq!(
            target_size(4000, 3000, 1_598, ImageCost::Anthropic),
            Some((4000, 3000))
        );
        assert_eq!(target_size(64, 48, 5, ImageCost::Anthropic), Some((64, 48)));
        assert_eq!(target_size(4000, 3000, 0, ImageCost::Anthropic), None);
        assert_eq!(target_size(4000, 3000, 200, ImageCost::OpenAi), None);
        let (w, h) = target_size(4000, 3000, 255, ImageCost::OpenAi).unwrap();
        assert_eq!(ImageCost::OpenAi.tokens(w, h), 255);
        assert_eq!(target_size(0, 3000, 255, ImageCost::OpenAi), None);
    }

    #[test]
    fn a_bomb_is_refused_by_the_limits() {
        // A valid PNG header claiming 60000×60000 pixels, with no pixel data.
        let png = png_header(60_000, 60_000);
        let c = Candidate {
            slot: 0,
            bytes: png,
            mime: "image/png".into(),
            width: 60_000,
            height: 60_000,
            send: (1_000, 1_000),
            cost: ImageCost::Anthropic.tokens(60_000, 60_000),
        };
        let err = match downscale(&c, (1_000, 1_000), 1_334, ImageCost::Anthropic, 2_000) {
            Err(e) => e,
            Ok(_) => panic!("a 60000x60000 image was decoded"),
        };
        assert!(matches!(err, CopyError::Decode(_)), "{err}");
    }

    #[test]
    fn a_png_is_downscaled_to_its_share() {
        let mut img = image::RgbImage::new(1500, 1000);
        for (x, y, p) in img.enumerate_pixels_mut() {
            *p = image::Rgb([(x % 256) as u8, (y % 256) as u8, 128]);
        }
        let mut png = Cursor::new(Vec::new());
        img.write_to(&mut png, image::ImageFormat::Png).unwrap();
        let c = Candidate {
            slot: 0,
            bytes: png.into_inner(),
            mime: "image/png".into(),
            width: 1500,
            height: 1000,
            send: (1341, 894),
            cost: 1599,
        };
        let target = target_size(1341, 894, 500, ImageCost::Anthropic).unwrap();
        let copy = downscale(&c, target, 500, ImageCost::Anthropic, 2_000).unwrap();
        assert!(copy.cost <= 500 && copy.cost > 450, "{}", copy.cost);
        assert_eq!(copy.mime, "image/png");
        let back = image::load_from_memory(&copy.bytes).unwrap();
        assert_eq!(
            (back.width() as u64, back.height() as u64),
            (copy.width, copy.height)
        );
    }

    /// A PNG signature and IHDR chunk (8-bit RGB) claiming `w` × `h`, then IEND.
    fn png_header(w: u32, h: u32) -> Vec<u8> {
        fn crc(bytes: &[u8]) -> u32 {
            let mut c = 0xFFFF_FFFFu32;
            for &b in bytes {
                c ^= u32::from(b);
                for _ in 0..8 {
                    c = if c & 1 == 1 {
                        (c >> 1) ^ 0xEDB8_8320
                    } else {
                        c >> 1
                    };
                }
            }
            !c
        }
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [
            (
                &b"IHDR"[..],
                [&w.to_be_bytes()[..], &h.to_be_bytes(), &[8, 2, 0, 0, 0]].concat(),
            ),
            (&b"IEND"[..], Vec::new()),
        ] {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let body = [kind, &data[..]].concat();
            out.extend_from_slice(&body);
            out.extend_from_slice(&crc(&body).to_be_bytes());
        }
        out
    }
}
