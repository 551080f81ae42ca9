//! Issue 12 §3 through the binary: an `image` item counts at the client's vision cost
//! (`image_tokens`), stays inline while it fits (`images = "auto"`, the default), and when it
//! does not fit goes out as a downscaled copy that fits plus the full-resolution file; `file`
//! offloads as before, `inline` never writes a file; bad data never panics.

use std::path::Path;

use mcp_budget_core::blob;
use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, visible_tokens};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The proxy with `flags` (and `TMPDIR` = `tmp`, so blob files land there) in front of the
/// fixture server, initialized.
fn start(flags: &[&str], tmp: &Path) -> Proxy {
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("proxy")
        .args(flags)
        .args(["--", BIN, "fixture-server"])
        .env("TMPDIR", tmp);
    let mut proxy = Proxy::spawn(&mut cmd);
    proxy.send(&request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}}),
    ));
    let init = proxy.recv_json();
    assert_eq!(init["id"], 0, "{init}");
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxy
}

fn call(proxy: &mut Proxy, id: u64, tool: &str, arguments: Value) -> Value {
    proxy.send(&request(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    ));
    // A debug-built fixture draws and compresses a 4000×3000 screenshot, and the proxy
    // decodes, resizes and encodes it: seconds on a busy machine.
    let r = proxy.recv_json_within(std::time::Duration::from_secs(120));
    assert_eq!(r["id"], id, "{r}");
    r["result"].clone()
}

/// A config file in `dir` with `body`; its path.
fn config(dir: &Path, body: &str) -> String {
    let path = dir.join("images.toml");
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

/// The image items of a result.
fn images(result: &Value) -> Vec<&Value> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "image")
        .collect()
}

/// The offload descriptions among a result's text items.
fn descriptions(result: &Value) -> Vec<Value> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| serde_json::from_str::<Value>(i["text"].as_str()?).ok())
        .filter(|d| d.get("offloaded").is_some())
        .collect()
}

/// Pixel size and bytes of an image item's data.
fn pixels(item: &Value) -> (u64, u64, Vec<u8>) {
    let bytes = blob::decode(item["data"].as_str().unwrap()).unwrap().bytes;
    let (w, h) = blob::image_pixels(&bytes).expect("a PNG/JPEG/WebP header");
    (u64::from(w), u64::from(h), bytes)
}

/// Anthropic's vision cost: ceil(w × h / 750).
fn anthropic(w: u64, h: u64) -> u64 {
    (w * h).div_ceil(750)
}

/// OpenAI's tiles at `detail: "high"`, the guide's steps, independently of the proxy.
fn openai(w: u64, h: u64) -> u64 {
    let (mut fw, mut fh) = (w as f64, h as f64);
    if fw.max(fh) > 2048.0 {
        let s = 2048.0 / fw.max(fh);
        (fw, fh) = (fw * s, fh * s);
    }
    if fw.min(fh) > 768.0 {
        let s = 768.0 / fw.min(fh);
        (fw, fh) = (fw * s, fh * s);
    }
    85 + 170 * ((fw.round() as u64).div_ceil(512) * (fh.round() as u64).div_ceil(512))
}

/// Gemini's tiles: 258 up to 384 × 384, else 258 a 768 × 768 tile.
fn gemini(w: u64, h: u64) -> u64 {
    if w <= 384 && h <= 384 {
        258
    } else {
        258 * w.div_ceil(768) * h.div_ceil(768)
    }
}

/// The model-visible tokens of a result: its texts (the shared harness) plus each image at
/// `cost`.
fn tokens_with_images(result: &Value, cost: fn(u64, u64) -> u64) -> u64 {
    let imgs: u64 = images(result)
        .iter()
        .map(|i| {
            let (w, h, _) = pixels(i);
            cost(w, h)
        })
        .sum();
    visible_tokens(result) as u64 + imgs
}

#[test]
fn a_small_image_stays_inline_and_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log.jsonl");
    let log_s = log.to_string_lossy().into_owned();
    let mut proxy = start(&["--max-tokens", "256", "--log", &log_s], tmp.path());
    // 400×300 costs 160 tokens: with ~15 tokens of text it fits 256.
    let r = call(&mut proxy, 1, "image", json!({"width": 400, "height": 300}));
    let imgs = images(&r);
    assert_eq!(imgs.len(), 1, "{r}");
    let (w, h, _) = pixels(imgs[0]);
    assert_eq!((w, h), (400, 300), "kept at full size");
    assert!(descriptions(&r).is_empty(), "no file: {r}");
    assert_eq!(
        r["content"].as_array().unwrap().len(),
        3,
        "text, image, text"
    );
    let total = tokens_with_images(&r, anthropic);
    assert!(total <= 256, "{total}");
    // The telemetry's model-visible tokens include the image's 160.
    proxy.close_stdin();
    proxy.wait(std::time::Duration::from_secs(20));
    let rec: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    // The telemetry counts the costliest rendering of the `generic` client profile (Gemini's
    // escaped wrapping costs a few tokens more than the text items): within the budget too.
    let logged = rec["tokens"].as_u64().unwrap();
    assert!(logged >= total && logged <= 256, "{rec} vs {total}");
    assert!(rec["tokens"].as_u64().unwrap() >= 160);

    // 600×400 costs 320 tokens: over 256, so a copy that fits, and the file.
    let mut proxy = start(&["--max-tokens", "256"], tmp.path());
    let r = call(&mut proxy, 2, "image", json!({"width": 600, "height": 400}));
    let (w, h, _) = pixels(images(&r)[0]);
    assert!(w < 600 && h < 400, "{w}x{h}");
    assert!(tokens_with_images(&r, anthropic) <= 256);
    assert_eq!(descriptions(&r).len(), 1, "{r}");
}

#[test]
fn a_big_screenshot_is_downscaled_inline_with_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut proxy = start(&[], tmp.path());
    let r = call(&mut proxy, 1, "screenshot", json!({}));
    // text, the copy, its description, text.
    let items = r["content"].as_array().unwrap();
    assert_eq!(items.len(), 4, "{r}");
    assert_eq!(items[1]["type"], "image");
    assert_eq!(items[1]["mimeType"], "image/png");
    let (w, h, copy) = pixels(&items[1]);
    let total = tokens_with_images(&r, anthropic);
    assert!(total <= 10_000, "text + image = {total}");
    // The copy is what Claude's API would keep of it (~1.2 MP), no more: the budget is not
    // what binds, so the text keeps the rest of it.
    assert_eq!((w, h), (1264, 948));
    assert_eq!(anthropic(w, h), 1598);
    let desc: Value = serde_json::from_str(items[2]["text"].as_str().unwrap()).unwrap();
    assert_eq!(desc["offloaded"], "image");
    assert_eq!(
        (desc["width"].as_u64(), desc["height"].as_u64()),
        (Some(4000), Some(3000))
    );
    assert!(
        desc["inline"]
            .as_str()
            .unwrap()
            .contains(&format!("{w}x{h}")),
        "{desc}"
    );
    let full = std::fs::read(desc["path"].as_str().unwrap()).unwrap();
    assert_eq!(full.len() as u64, desc["bytes"].as_u64().unwrap());
    assert_eq!(blob::image_pixels(&full), Some((4000, 3000)));
    assert!(r.get("isError").is_none());
    eprintln!(
        "measured: screenshot 4000x3000 {} bytes, {} tokens -> copy {w}x{h} {} bytes, {} tokens; result tokens {total}",
        full.len(),
        anthropic(4000, 3000),
        copy.len(),
        anthropic(w, h)
    );
}

#[test]
fn file_mode_offloads_and_inline_mode_writes_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        "[defaults]\nimages = \"inline\"\n[tools.image]\nimages = \"file\"\n",
    );
    let mut proxy = start(&["--config", &cfg], tmp.path());
    // file: today's behaviour, even for a 64×48 image that would fit.
    let r = call(&mut proxy, 1, "image", json!({}));
    assert!(images(&r).is_empty(), "{r}");
    let d = descriptions(&r);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0]["width"].as_u64(), d[0]["height"].as_u64()),
        (Some(64), Some(48))
    );
    assert!(Path::new(d[0]["path"].as_str().unwrap()).exists());

    // inline: the copy, no description, no file.
    let r = call(&mut proxy, 2, "screenshot", json!({}));
    assert!(descriptions(&r).is_empty(), "{r}");
    let imgs = images(&r);
    assert_eq!(imgs.len(), 1);
    let (w, h, _) = pixels(imgs[0]);
    assert!(w < 4000 && h < 3000);
    assert!(tokens_with_images(&r, anthropic) <= 10_000);
    let blobs = tmp.path().join("mcp-budget-blobs");
    let files = std::fs::read_dir(&blobs).map_or(0, |d| d.count());
    assert_eq!(files, 1, "only the file-mode image was written");
}

#[test]
fn openai_tiles_set_the_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        "[tools.screenshot]\nimage_tokens = \"openai\"\n",
    );
    let mut proxy = start(&["--config", &cfg, "--max-tokens", "600"], tmp.path());
    // 4000×3000 costs 765 tokens as OpenAI tiles it: over 600, so a copy.
    let r = call(&mut proxy, 1, "screenshot", json!({}));
    let (w, h, _) = pixels(images(&r)[0]);
    assert!(openai(w, h) < 765, "{w}x{h}");
    assert!(w < 1024 && h < 768, "{w}x{h}");
    let total = tokens_with_images(&r, openai);
    assert!(total <= 600, "{total}");
    // A 64×48 image of another tool costs Anthropic's 5 tokens and stays.
    let r = call(&mut proxy, 2, "image", json!({}));
    assert_eq!(images(&r).len(), 1);
}

/// Standard base64 with padding.
fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A PNG that claims `w` × `h` (8-bit RGB) with `idat` as its only data chunk.
fn png_claiming(w: u32, h: u32, idat: &[u8]) -> Vec<u8> {
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
    let ihdr = [&w.to_be_bytes()[..], &h.to_be_bytes(), &[8, 2, 0, 0, 0]].concat();
    for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", idat), (b"IEND", &[])] {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let body = [kind, data].concat();
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc(&body).to_be_bytes());
    }
    out
}

#[test]
fn bombs_bad_base64_and_broken_images_go_to_files_without_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let mut proxy = start(&[], tmp.path());
    // A decompression bomb: 60000×60000 claimed (4.8 M tokens), a few bytes of data.
    let bomb = png_claiming(
        60_000,
        60_000,
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    let r = call(&mut proxy, 1, "screenshot", json!({"data": b64(&bomb)}));
    assert!(images(&r).is_empty(), "{r}");
    let d = descriptions(&r);
    assert_eq!(d.len(), 1, "{r}");
    assert_eq!(
        (d[0]["width"].as_u64(), d[0]["height"].as_u64()),
        (Some(60_000), Some(60_000))
    );
    assert!(
        d[0]["inline"]
            .as_str()
            .unwrap()
            .contains("cannot be decoded"),
        "{}",
        d[0]
    );
    assert_eq!(std::fs::read(d[0]["path"].as_str().unwrap()).unwrap(), bomb);

    // Not base64 at all.
    let junk = "this is !! not base64 ?? ".repeat(100);
    let r = call(&mut proxy, 2, "screenshot", json!({"data": junk}));
    assert!(images(&r).is_empty(), "{r}");
    let d = descriptions(&r);
    assert_eq!(d.len(), 1, "{r}");
    assert!(d[0]["note"].as_str().unwrap().contains("not valid base64"));
    assert_eq!(
        std::fs::read(d[0]["path"].as_str().unwrap()).unwrap(),
        junk.as_bytes()
    );

    // A valid header (3000×3000) over broken pixel data, too big to stay: the file.
    let broken = png_claiming(3000, 3000, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    let r = call(&mut proxy, 3, "screenshot", json!({"data": b64(&broken)}));
    assert!(images(&r).is_empty(), "{r}");
    let d = descriptions(&r);
    assert_eq!(d.len(), 1, "{r}");
    assert!(
        d[0]["inline"]
            .as_str()
            .unwrap()
            .contains("cannot be decoded")
    );

    // The proxy still answers, and a small image still goes through.
    let r = call(&mut proxy, 4, "image", json!({"width": 8, "height": 8}));
    assert_eq!(images(&r).len(), 1, "{r}");
    assert!(proxy.stderr_text().find("panicked").is_none());
}

/// One client family: its `--client`, its vision cost, and the size its model gets of a
/// 1280 × 800, a 4000 × 3000 and an 8000 × 14438 screenshot — worked by hand from the vendor's
/// rule (see `mcp_budget_core::vision`), then capped at 2,000 px a side.
struct Family {
    client: &'static str,
    cost: fn(u64, u64) -> u64,
    sizes: [(u64, u64); 3],
}

const SCREENS: [(u64, u64); 3] = [(1280, 800), (4000, 3000), (8000, 14438)];

const FAMILIES: [Family; 3] = [
    // Long edge <= 1568 and <= 1.2 MP (1,600 tokens), aspect kept, floored.
    Family {
        client: "claude-code",
        cost: anthropic,
        sizes: [(1280, 800), (1264, 948), (815, 1471)],
    },
    // Fit 2048 × 2048, then shortest side 768, rounded.
    Family {
        client: "codex",
        cost: openai,
        sizes: [(1229, 768), (1024, 768), (768, 1386)],
    },
    // No resize of its own: only the 2,000 px cap.
    Family {
        client: "gemini-cli",
        cost: gemini,
        sizes: [(1280, 800), (2000, 1500), (1108, 2000)],
    },
];

/// Issue 33 §1 through the binary, per client family: each screenshot goes out at the size the
/// family's model gets (never more pixels, never a side over 2,000 px), counted at that cost,
/// its full resolution in a file when it was shrunk; 25 screenshots in one result all stay
/// inline within the budget and the 2,000 px many-image limit.
fn family_screenshots(f: &Family) {
    let tmp = tempfile::tempdir().unwrap();
    let mut proxy = start(&["--client", f.client], tmp.path());
    for (i, (&(sw, sh), &want)) in SCREENS.iter().zip(&f.sizes).enumerate() {
        let r = call(
            &mut proxy,
            i as u64 + 1,
            "screenshot",
            json!({"width": sw, "height": sh}),
        );
        let imgs = images(&r);
        assert_eq!(imgs.len(), 1, "{}: {r}", f.client);
        let (w, h, bytes) = pixels(imgs[0]);
        assert_eq!((w, h), want, "{} {sw}x{sh}", f.client);
        let total = tokens_with_images(&r, f.cost);
        assert!(total <= 10_000, "{} {sw}x{sh}: {total}", f.client);
        let d = descriptions(&r);
        if want == (sw, sh) {
            assert!(d.is_empty(), "{} {sw}x{sh}: kept as it came: {r}", f.client);
        } else {
            assert_eq!(d.len(), 1, "{} {sw}x{sh}: {r}", f.client);
            assert_eq!(
                (d[0]["width"].as_u64(), d[0]["height"].as_u64()),
                (Some(sw), Some(sh))
            );
            let full = std::fs::read(d[0]["path"].as_str().unwrap()).unwrap();
            assert_eq!(blob::image_pixels(&full), Some((sw as u32, sh as u32)));
        }
        // The text is whole: nothing paged away to make room for the image.
        assert!(
            r.get("_meta")
                .and_then(|m| m.get("mcp-budget/page"))
                .is_none(),
            "{} {sw}x{sh}: {r}",
            f.client
        );
        eprintln!(
            "measured: {} {sw}x{sh} -> {w}x{h}, {} image tokens, {} bytes sent, result {total} tokens",
            f.client,
            (f.cost)(w, h),
            bytes.len()
        );
    }
    // 25 screenshots in one result, under a budget that holds them at their send size.
    let mut proxy = start(&["--client", f.client, "--max-tokens", "60000"], tmp.path());
    let r = call(
        &mut proxy,
        9,
        "screenshot",
        json!({"width": 4000, "height": 3000, "count": 25}),
    );
    let imgs = images(&r);
    assert_eq!(imgs.len(), 25, "{}: every image inline", f.client);
    for item in &imgs {
        let (w, h, _) = pixels(item);
        assert!(w <= 2000 && h <= 2000, "{}: {w}x{h}", f.client);
        assert!(
            (w, h) <= f.sizes[1],
            "{}: {w}x{h} is more than the model gets",
            f.client
        );
    }
    let total = tokens_with_images(&r, f.cost);
    // Claude Code refuses a result over its 25,000-token MAX_MCP_OUTPUT_TOKENS.
    let cap = if f.client == "claude-code" {
        25_000
    } else {
        60_000
    };
    assert!(total <= cap, "{}: {total}", f.client);
    eprintln!("measured: {} 25 x 4000x3000 -> {total} tokens", f.client);
}

#[test]
fn anthropic_screenshots_go_out_at_what_claude_reads() {
    family_screenshots(&FAMILIES[0]);
}

#[test]
fn openai_screenshots_go_out_at_what_gpt_reads() {
    family_screenshots(&FAMILIES[1]);
}

#[test]
fn gemini_screenshots_go_out_within_the_side_cap() {
    family_screenshots(&FAMILIES[2]);
}

#[test]
fn image_keys_override_the_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        "[defaults]\nimage_max_side = 800\n[tools.image]\nimage_tokens = \"anthropic\"\nimage_max_side = 4000\n",
    );
    let mut proxy = start(&["--client", "gemini-cli", "--config", &cfg], tmp.path());
    // Gemini's profile, capped at 800 px by [defaults].
    let r = call(&mut proxy, 1, "screenshot", json!({}));
    assert_eq!(pixels(images(&r)[0]).0, 800, "{r}");
    assert_eq!(pixels(images(&r)[0]).1, 600);
    // The tool's own keys: Anthropic's rule, no cap below it.
    let r = call(
        &mut proxy,
        2,
        "image",
        json!({"width": 3000, "height": 1500}),
    );
    let (w, h, _) = pixels(images(&r)[0]);
    assert_eq!((w, h), (1549, 774), "{r}");
}
