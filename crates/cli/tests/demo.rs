//! `mcp-budget demo` runs with nothing else installed, keeps every page within the budget and
//! reassembles every paged result to exactly the compacted direct result.

use std::process::Command;

#[test]
fn demo_succeeds_and_reports_equality() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
        .arg("demo")
        .output()
        .expect("run mcp-budget demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("All reassembled results equal the direct ones after compaction"),
        "{stdout}"
    );
    assert!(
        stdout.contains("(counted on the direct result: 715, same)"),
        "query_response on the cached rows must count what the direct result holds:\n{stdout}"
    );
    // Every big text tool was paged: the table has a read_more count above zero for each.
    for tool in [
        "directory_tree",
        "table_rows",
        "long_text",
        "structured",
        "error_big",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.contains(&format!(" {tool} ")) && l.contains('┆'))
            .unwrap_or_else(|| panic!("no summary row for {tool}:\n{stdout}"));
        let cells: Vec<&str> = row.split('┆').map(str::trim).collect();
        let calls: usize = cells[3].parse().unwrap_or(0);
        assert!(calls > 0, "{tool} was not paged: {row}");
        assert_eq!(cells[4].trim_end_matches('│').trim(), "yes", "{row}");
    }
}
