//! The cache bound through the binary: cached responses pushed out of memory to spill files
//! stay readable page by page, the spill directory is private and gone at exit; blob files are
//! reused only when their content matches and old ones are removed at startup.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use mcp_budget_core::paginate::reassemble_from_wire;
use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|i| i["text"].as_str().map(str::to_owned))
        .collect()
}

/// (page body, meta) of a one-item paged result.
fn page_of(result: &Value) -> (String, Value) {
    assert!(result.get("isError").is_none(), "{result}");
    let t = texts(result);
    assert_eq!(t.len(), 2, "{result}");
    (t[0].clone(), serde_json::from_str(&t[1]).expect("meta"))
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// What each call returns from the fixture server directly (no proxy).
fn direct(calls: &[(&str, Value)]) -> Vec<String> {
    let mut server = Proxy::spawn(Command::new(BIN).arg("fixture-server"));
    server.initialize();
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| texts(&server.call(100 + i as u64, tool, args.clone()))[0].clone())
        .collect()
}

#[test]
fn spilled_responses_page_back_to_the_direct_result_and_the_spill_dir_is_private_and_removed() {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap().to_owned();
    let calls: Vec<(&str, Value)> = vec![
        ("table_rows", json!({"rows": 1000, "seed": 1})),
        ("table_rows", json!({"rows": 1000, "seed": 2})),
        ("long_text", json!({"lines": 1500, "long_line_bytes": 3000})),
        ("table_rows", json!({"rows": 1000, "seed": 3})),
        ("directory_tree", json!({"entries": 1500})),
    ];
    let want = direct(&calls);

    // Each parsed response (~1 MB of tree) is over the 512 KiB bound: every new one pushes the
    // others out to files, and every read brings one back.
    let mut proxy = Proxy::start(
        &[
            "--max-tokens",
            "2000",
            "--precision",
            "0",
            "--cache-bytes",
            "512KiB",
            "--cache-dir",
            &cache_dir,
        ],
        &[BIN, "fixture-server"],
    );
    proxy.initialize();
    let mut id = 1;
    let mut bodies: Vec<Vec<String>> = Vec::new();
    let mut shown: Vec<Vec<Option<String>>> = Vec::new();
    let mut cursors: Vec<Option<String>> = Vec::new();
    for (tool, args) in &calls {
        let (body, meta) = page_of(&proxy.call(id, tool, args.clone()));
        id += 1;
        bodies.push(vec![body]);
        shown.push(vec![meta["shown"].as_str().map(str::to_owned)]);
        cursors.push(meta["next_cursor"].as_str().map(str::to_owned));
    }

    // One spill directory, of this proxy, 0700, holding 0600 files.
    let dirs: Vec<_> = std::fs::read_dir(cache.path()).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let spill = dirs[0].path();
    let name = dirs[0].file_name().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("mcp-budget-cache-{}-", proxy.pid())),
        "{name}"
    );
    assert_eq!(mode(&spill), 0o700);
    let files: Vec<_> = std::fs::read_dir(&spill).unwrap().flatten().collect();
    assert!(files.len() >= 3, "{files:?}");
    assert!(files.iter().all(|f| mode(&f.path()) == 0o600));

    // Every cursor of every response, round robin: each read reloads a spilled response.
    let mut reads = 0;
    while cursors.iter().any(Option::is_some) {
        for (k, cursor) in cursors.iter_mut().enumerate() {
            let Some(c) = cursor.take() else {
                continue;
            };
            let (body, meta) = page_of(&proxy.call(id, "read_more", json!({"cursor": c})));
            id += 1;
            reads += 1;
            bodies[k].push(body);
            shown[k].push(meta["shown"].as_str().map(str::to_owned));
            *cursor = meta["next_cursor"].as_str().map(str::to_owned);
        }
    }
    assert!(reads > 20, "{reads}");

    for (k, (tool, _)) in calls.iter().enumerate() {
        if *tool == "long_text" {
            assert_eq!(bodies[k].concat(), want[k], "text pages concatenate back");
            continue;
        }
        let pages: Vec<(Value, Option<&str>)> = bodies[k]
            .iter()
            .zip(&shown[k])
            .map(|(b, s)| (serde_json::from_str(b).expect("JSON page"), s.as_deref()))
            .collect();
        let back = reassemble_from_wire(&pages).expect("pages merge");
        let direct: Value = serde_json::from_str(&want[k]).unwrap();
        assert!(
            back == direct,
            "response {k} ({tool}) reassembles to the direct result"
        );
    }

    proxy.close_stdin();
    let status = proxy.wait(Duration::from_secs(10));
    assert!(status.success(), "{status:?}: {}", proxy.stderr_text());
    assert!(!spill.exists(), "the spill directory is removed at exit");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn old_blob_files_go_at_startup_and_a_changed_blob_file_is_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let blobs = tmp.path().join("mcp-budget-blobs");
    std::fs::create_dir(&blobs).unwrap();
    std::fs::set_permissions(&blobs, std::fs::Permissions::from_mode(0o700)).unwrap();
    let old = blobs.join(format!("{}.png", "0".repeat(64)));
    let fresh = blobs.join(format!("{}.png", "1".repeat(64)));
    let unrelated = blobs.join("notes.txt");
    for p in [&old, &fresh, &unrelated] {
        std::fs::write(p, b"x").unwrap();
    }
    let three_days_ago = SystemTime::now() - Duration::from_secs(3 * 86_400);
    set_mtime(&old, three_days_ago);
    set_mtime(&unrelated, three_days_ago);

    // A 256×256 image fits the budget and would stay inline (`images = "auto"`): `file`
    // sends it to a blob file, as this test needs.
    let cfg = tmp.path().join("images.toml");
    std::fs::write(&cfg, "[tools.image]\nimages = \"file\"\n").unwrap();
    let mut proxy = Proxy::spawn(
        Command::new(BIN)
            .args(["proxy", "--blob-max-age", "2d", "--", BIN, "fixture-server"])
            .env("TMPDIR", tmp.path())
            .env("MCP_BUDGET_CONFIG", &cfg),
    );
    proxy.initialize();
    assert!(
        !old.exists(),
        "older than --blob-max-age: removed at startup"
    );
    assert!(fresh.exists());
    assert!(unrelated.exists(), "not a blob file name");

    let image = |proxy: &mut Proxy, id| {
        let r = proxy.call(id, "image", json!({"width": 256, "height": 256}));
        let desc: Value = texts(&r)
            .iter()
            .find_map(|t| {
                serde_json::from_str::<Value>(t)
                    .ok()
                    .filter(|v| v["offloaded"] == "image")
            })
            .expect("offloaded image");
        std::path::PathBuf::from(desc["path"].as_str().unwrap())
    };
    let path = image(&mut proxy, 1);
    assert!(path.starts_with(&blobs));
    let good = std::fs::read(&path).unwrap();
    // Same size, other bytes: not reused, written again.
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    std::fs::write(&path, &bad).unwrap();
    assert_eq!(image(&mut proxy, 2), path);
    assert_eq!(std::fs::read(&path).unwrap(), good);
    assert_eq!(mode(&path), 0o600);
}
