//! Every integration test of this crate in one test binary: each former `tests/NAME.rs` is
//! the module `NAME` here (its file stays where it was). One binary links the dependency
//! tree once instead of once per file, which is most of the test build on 2 cores.
//! A new `tests/NAME.rs` must be listed below (`autotests = false` in Cargo.toml):
//! `every_test_file_is_a_module` fails until it is.

// Each module keeps its own `mod proxy_support;` (or `boundary_util`, `redis_support`), as it
// had as a binary of its own: the shared helpers are compiled once per module that uses them.
#![allow(clippy::duplicate_mod)]

#[path = "boundary_call.rs"]
mod boundary_call;
#[path = "boundary_deep.rs"]
mod boundary_deep;
#[path = "boundary_dialects.rs"]
mod boundary_dialects;
#[path = "boundary_injected.rs"]
mod boundary_injected;
#[path = "boundary_io.rs"]
mod boundary_io;
#[path = "boundary_list.rs"]
mod boundary_list;
#[path = "boundary_props.rs"]
mod boundary_props;
#[path = "boundary_schema_fill.rs"]
mod boundary_schema_fill;
#[path = "boundary_visible.rs"]
mod boundary_visible;
#[path = "boundary_visible_props.rs"]
mod boundary_visible_props;
#[path = "boundary_wire_props.rs"]
mod boundary_wire_props;
#[path = "config_reference.rs"]
mod config_reference;
#[path = "import_graph.rs"]
mod import_graph;
#[path = "relay_bytes.rs"]
mod relay_bytes;
#[path = "relay_http.rs"]
mod relay_http;
#[path = "relay_http_faults.rs"]
mod relay_http_faults;
#[path = "relay_shaper.rs"]
mod relay_shaper;
#[path = "serve_resume.rs"]
mod serve_resume;
#[path = "split_props.rs"]
mod split_props;
#[path = "store_redis.rs"]
mod store_redis;
#[path = "tools_list_validity.rs"]
mod tools_list_validity;
#[path = "uuid_props.rs"]
mod uuid_props;

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
