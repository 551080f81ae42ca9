//! Every integration test of this crate in one test binary: each `tests/NAME.rs` is the module
//! `NAME` here. A new `tests/NAME.rs` must be listed below (`autotests = false` in
//! Cargo.toml): `every_test_file_is_a_module` fails until it is.

// Each module keeps its own `mod common;`: the shared helpers compile once per module.
#![allow(clippy::duplicate_mod)]

#[path = "clients.rs"]
mod clients;
#[path = "common.rs"]
mod common;
#[path = "paging.rs"]
mod paging;
#[path = "raw_results.rs"]
mod raw_results;

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
