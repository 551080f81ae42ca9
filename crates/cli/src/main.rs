//! The `mcp-budget` binary: parses flags and wires the library crates together.
fn main() -> anyhow::Result<()> {
    Ok(())
}
