//! Issue 15: `mcp-budget measure` on the tools/list of four real servers together
//! (filesystem, memory, everything, git, recorded from the pinned e2e packages) reports the
//! model-visible definition tokens beside the whole JSON, and before/after per option.

use std::process::Command;

use serde_json::{Value, json};

fn four_servers() -> Value {
    let mut tools = Vec::new();
    for s in ["filesystem", "memory", "everything", "git"] {
        let path = format!(
            "{}/../proxy/tests/data/tools_list/{s}.tools.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        tools.extend(v["result"]["tools"].as_array().unwrap().iter().cloned());
    }
    json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}})
}

#[test]
fn definition_tokens_per_option_of_four_real_servers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("four.tools.json");
    std::fs::write(&path, four_servers().to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
        .args(["measure", "--json", "--encoding", "cl100k_base"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = &report["files"][0]["tools"];
    assert_eq!(tools["tools"].as_array().unwrap().len(), 48);
    let d = &tools["definitions"];
    assert_eq!(d["whole_json"]["cl100k_base"], 8123);
    let row = |option: &str| -> u64 {
        d["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["option"] == option)
            .unwrap_or_else(|| panic!("no row {option}"))["tokens"]["cl100k_base"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(row("as listed"), 4693);
    assert!(row("40 / 12 / compact") <= 3257, "{d}");
    assert!(row("description_max_tokens = 40") < 4693);
    assert!(row("compact = true") < 4693);
    assert!(row("mode = \"defer\" (fixed)") < 400);
    // The table shows the same section.
    let table = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
        .args(["measure", "--encoding", "cl100k_base"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("Model-visible definition tokens"), "{text}");
    assert!(text.contains("| 40 / 12 / compact "), "{text}");
}
