//! Every integration test of this crate in one test binary: each former `tests/NAME.rs` is
//! the module `NAME` here (its file stays where it was). One binary links the dependency
//! tree once instead of once per file, which is most of the test build on 2 cores.
//! A new `tests/NAME.rs` must be listed below (`autotests = false` in Cargo.toml):
//! `every_test_file_is_a_module` fails until it is.

// Each module keeps its own `mod proxy_support;` (or `boundary_util`, `redis_support`), as it
// had as a binary of its own: the shared helpers are compiled once per module that uses them.
#![allow(clippy::duplicate_mod)]

#[path = "blob_detect.rs"]
mod blob_detect;
#[path = "compact_props.rs"]
mod compact_props;
#[path = "head_props.rs"]
mod head_props;
#[path = "hf_tokenizer.rs"]
mod hf_tokenizer;
#[path = "hostile_inputs.rs"]
mod hostile_inputs;
#[path = "measure_equiv.rs"]
mod measure_equiv;
#[path = "measure_props.rs"]
mod measure_props;
#[path = "measure_whatif.rs"]
mod measure_whatif;
#[path = "paging_props.rs"]
mod paging_props;
#[path = "paging_wire_props.rs"]
mod paging_wire_props;
#[path = "summary_props.rs"]
mod summary_props;
#[path = "summary_shapes.rs"]
mod summary_shapes;
#[path = "table_props.rs"]
mod table_props;
#[path = "tokens_additive.rs"]
mod tokens_additive;
#[path = "tokens_equivalence.rs"]
mod tokens_equivalence;
#[path = "tooldefs_real.rs"]
mod tooldefs_real;

/// Every `tests/*.rs` file is one of the modules above (Cargo no longer finds them by itself).
#[test]
fn every_test_file_is_a_module() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    let missing =
        mcp_budget_fixture::suite::unlisted_test_files(dir.as_ref(), include_str!("it.rs"))
            .expect("the tests directory");
    assert!(
        missing.is_empty(),
        "not modules of tests/it.rs: {missing:?}"
    );
}
