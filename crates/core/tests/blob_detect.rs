//! Blob detection on a real MCP response (server-everything's get-tiny-image, a 20×20 PNG),
//! on the same bytes wrapped in JSON strings and `data:` URIs, and on look-alikes that are not
//! blobs.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use mcp_budget_core::blob::{
    self, BlobEncoding, BlobError, DEFAULT_BLOB_THRESHOLD_BYTES, OCTET_STREAM, PathStep,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// `shared/fixtures/everything.call1.get-tiny-image.json`, copied to `tests/data/`.
const TINY_IMAGE_RPC: &str = include_str!("data/tiny_image.rpc.json");

fn png_base64() -> String {
    let rpc: Value = serde_json::from_str(TINY_IMAGE_RPC).expect("fixture is JSON");
    rpc["result"]["content"][1]["data"]
        .as_str()
        .expect("fixture has image data")
        .to_owned()
}

fn png_bytes() -> Vec<u8> {
    STANDARD.decode(png_base64()).expect("fixture is base64")
}

#[test]
fn fixture_image_data_is_found_with_path_mime_size_and_pixels() {
    let rpc: Value = serde_json::from_str(TINY_IMAGE_RPC).expect("fixture is JSON");
    let found = blob::find_blobs(&rpc, DEFAULT_BLOB_THRESHOLD_BYTES);
    assert_eq!(found.len(), 1, "{found:?}");
    let b = &found[0];
    assert_eq!(b.path_text, "$.result.content[1].data");
    assert_eq!(
        b.path,
        vec![
            PathStep::Key("result".into()),
            PathStep::Key("content".into()),
            PathStep::Index(1),
            PathStep::Key("data".into()),
        ]
    );
    assert_eq!(b.encoding, BlobEncoding::Base64);
    assert_eq!(b.mime, "image/png");
    assert_eq!(b.decoded_bytes, 4033);
    assert_eq!(b.encoded_bytes, 5380);
    assert_eq!(b.pixels, Some((20, 20)));
}

#[test]
fn threshold_is_on_decoded_bytes() {
    let v = json!({ "data": png_base64() });
    assert_eq!(blob::find_blobs(&v, 4032).len(), 1);
    assert!(
        blob::find_blobs(&v, 4033).is_empty(),
        "4033 bytes is not over 4033"
    );
    // Over the encoded length too: no decoding needed to say no.
    assert!(blob::find_blobs(&v, 10_000).is_empty());
}

#[test]
fn base64_inside_a_json_document_in_a_string() {
    // A tool that returns JSON text with a thumbnail field; the proxy parses the text first.
    let text = serde_json::to_string(&json!({
        "rows": [{"id": 1, "name": "logo"}, {"id": 2, "thumb": png_base64()}]
    }))
    .expect("JSON");
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let found = blob::find_blobs(&doc, DEFAULT_BLOB_THRESHOLD_BYTES);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path_text, "$.rows[1].thumb");
    assert_eq!(found[0].mime, "image/png");
    assert_eq!(found[0].decoded_bytes, 4033);
}

#[test]
fn mime_wrapped_and_url_safe_base64_are_found() {
    let b64 = png_base64();
    let wrapped: String = b64
        .as_bytes()
        .chunks(76)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("\r\n");
    let url_safe = URL_SAFE.encode(png_bytes());
    let v = json!([wrapped, url_safe]);
    let found = blob::find_blobs(&v, DEFAULT_BLOB_THRESHOLD_BYTES);
    assert_eq!(found.len(), 2, "{found:?}");
    for b in &found {
        assert_eq!(b.mime, "image/png");
        assert_eq!(b.decoded_bytes, 4033);
    }
    assert_eq!(blob::decode(&wrapped).expect("decodes").bytes, png_bytes());
}

#[test]
fn data_uri_base64_uses_declared_mime() {
    let uri = format!("data:image/png;base64,{}", png_base64());
    let v = json!({"avatar": uri});
    let found = blob::find_blobs(&v, DEFAULT_BLOB_THRESHOLD_BYTES);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].encoding, BlobEncoding::DataUriBase64);
    assert_eq!(found[0].mime, "image/png");
    assert_eq!(found[0].path_text, "$.avatar");
    assert_eq!(found[0].pixels, Some((20, 20)));

    // The header's type wins over the bytes, without parameters, lower-cased.
    let declared = format!("DATA:Application/X-Thing;charset=x;BASE64,{}", png_base64());
    let d = blob::decode(&declared).expect("decodes");
    assert_eq!(d.mime(), "application/x-thing");
    assert_eq!(d.bytes, png_bytes());

    // No type in the header: sniffed from the bytes. Unpadded base64 is accepted in a URI.
    let sniffed = format!("data:;base64,{}", png_base64().trim_end_matches('='));
    let found = blob::find_blobs(&json!([sniffed]), DEFAULT_BLOB_THRESHOLD_BYTES);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].mime, "image/png");
}

#[test]
fn data_uri_percent_encoded_is_measured_decoded() {
    let svg = format!("data:image/svg+xml,{}", "%3Csvg%3E".repeat(200));
    let d = blob::decode(&svg).expect("decodes");
    assert_eq!(d.encoding, BlobEncoding::DataUriPercent);
    assert_eq!(d.bytes.len(), 5 * 200);
    assert!(blob::find_blobs(&json!(svg), 999).len() == 1);
    assert!(blob::find_blobs(&json!(svg), 1000).is_empty());
}

#[test]
fn look_alikes_are_not_blobs() {
    let sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let negatives = json!({
        "hex": sha.repeat(40),
        "hex_upper": sha.to_uppercase().repeat(40),
        "uuids": "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d,".repeat(60),
        "prose": "The quick brown fox jumps over the lazy dog. ".repeat(60),
        "letters": "abcdEFGHijklMNOP".repeat(200),
        "words_no_spaces": "ThisIsAVeryLongCamelCaseIdentifier".repeat(80),
        "mixed_alphabets": format!("{}-_", &png_base64()[..3998]),
        "padding_inside": format!("{}=={}", &png_base64()[..2000], &png_base64()[..2000]),
        "bad_length": format!("{}A", png_base64()),
        "data_prose": format!("data: 1, 2, 3 {}", "and more ".repeat(200)),
        "small_png": STANDARD.encode(&png_bytes()[..500]),
    });
    let found = blob::find_blobs(&negatives, DEFAULT_BLOB_THRESHOLD_BYTES);
    assert!(
        found.is_empty(),
        "{:?}",
        found.iter().map(|b| &b.path_text).collect::<Vec<_>>()
    );
    assert!(matches!(
        blob::decode(&sha.repeat(40)),
        Err(BlobError::NotABlob)
    ));
    assert!(matches!(
        blob::decode("data:no comma"),
        Err(BlobError::NotABlob)
    ));
    assert!(matches!(
        blob::decode("data:image/png;base64,@@@@"),
        Err(BlobError::Base64(_))
    ));
}

#[test]
fn keys_are_not_searched() {
    let mut map = serde_json::Map::new();
    map.insert(png_base64(), json!(1));
    assert!(blob::find_blobs(&Value::Object(map), 16).is_empty());
}

#[test]
fn replace_blobs_swaps_each_blob_for_the_callers_value() {
    let rpc: Value = serde_json::from_str(TINY_IMAGE_RPC).expect("fixture is JSON");
    let mut v =
        json!({"a": rpc, "b": [format!("data:image/png;base64,{}", png_base64())], "c": "short"});
    let expected = png_bytes();
    let mut seen = Vec::new();
    let n = blob::replace_blobs(&mut v, DEFAULT_BLOB_THRESHOLD_BYTES, |b, bytes| {
        assert_eq!(bytes, expected.as_slice());
        seen.push(b.path_text.clone());
        json!({"blob": format!("/tmp/{}.png", seen.len()), "mime": b.mime, "bytes": b.decoded_bytes})
    });
    assert_eq!(n, 2);
    assert_eq!(seen, ["$.a.result.content[1].data", "$.b[0]"]);
    assert_eq!(
        v["a"]["result"]["content"][1]["data"],
        json!({"blob": "/tmp/1.png", "mime": "image/png", "bytes": 4033})
    );
    assert_eq!(v["b"][0]["blob"], "/tmp/2.png");
    assert_eq!(v["c"], "short");
    assert_eq!(v["a"]["result"]["content"][1]["mimeType"], "image/png");
    assert!(blob::find_blobs(&v, DEFAULT_BLOB_THRESHOLD_BYTES).is_empty());
}

#[test]
fn unknown_bytes_are_octet_stream() {
    let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
    let found = blob::find_blobs(&json!([STANDARD.encode(&bytes)]), 1024);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].mime, OCTET_STREAM);
    assert_eq!(found[0].pixels, None);
}

proptest! {
    #[test]
    fn encoded_random_bytes_over_threshold_are_found_and_decode_back(
        seed in any::<u64>(),
        len in 1100usize..3000,
        url_safe in any::<bool>(),
    ) {
        // xorshift bytes from a seed: per-byte strategies would dominate the run time.
        let mut x = seed | 1;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let text = if url_safe { URL_SAFE.encode(&bytes) } else { STANDARD.encode(&bytes) };
        let found = blob::find_blobs(&json!({"k": text}), 1024);
        prop_assert_eq!(found.len(), 1);
        prop_assert_eq!(found[0].decoded_bytes, bytes.len());
        prop_assert_eq!(blob::decode(&text).expect("decodes").bytes, bytes);
    }

    #[test]
    fn hex_and_prose_are_never_blobs(seed in any::<u64>(), len in 1100usize..3000) {
        let mut x = seed | 1;
        let mut pick = |alphabet: &[u8]| -> String {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(alphabet[(x >> 32) as usize % alphabet.len()])
                })
                .collect()
        };
        let hex = pick(b"0123456789abcdef");
        let prose = pick(b"AaBbZz0189+/ ,.");
        let v = json!([hex.clone(), hex.to_uppercase(), prose]);
        prop_assert!(blob::find_blobs(&v, 256).is_empty());
    }
}
