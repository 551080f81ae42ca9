//! Every integration test of this crate in one test binary: each former `tests/NAME.rs` is
//! the module `NAME` here (its file stays where it was). One binary links the dependency
//! tree once instead of once per file, which is most of the test build on 2 cores.
//! A new `tests/NAME.rs` must be listed below (`autotests = false` in Cargo.toml):
//! `every_test_file_is_a_module` fails until it is.

// Each module keeps its own `mod proxy_support;` (or `boundary_util`, `redis_support`), as it
// had as a binary of its own: the shared helpers are compiled once per module that uses them.
#![allow(clippy::duplicate_mod)]

#[path = "demo.rs"]
mod demo;
#[path = "first_use.rs"]
mod first_use;
#[path = "log_json.rs"]
mod log_json;
#[path = "measure_cli.rs"]
mod measure_cli;
#[path = "measure_tools_list.rs"]
mod measure_tools_list;
#[path = "proxy_args_rewrite.rs"]
mod proxy_args_rewrite;
#[path = "proxy_cache.rs"]
mod proxy_cache;
#[path = "proxy_dialects.rs"]
mod proxy_dialects;
#[path = "proxy_fixture.rs"]
mod proxy_fixture;
#[path = "proxy_images.rs"]
mod proxy_images;
#[path = "proxy_jq.rs"]
mod proxy_jq;
#[path = "proxy_oauth.rs"]
mod proxy_oauth;
#[path = "proxy_paging.rs"]
mod proxy_paging;
#[path = "proxy_redis.rs"]
mod proxy_redis;
#[path = "proxy_redis_tls.rs"]
mod proxy_redis_tls;
#[path = "proxy_regressions.rs"]
mod proxy_regressions;
#[path = "proxy_relay.rs"]
mod proxy_relay;
#[path = "proxy_remote.rs"]
mod proxy_remote;
#[path = "proxy_remote_faults.rs"]
mod proxy_remote_faults;
#[path = "proxy_servers.rs"]
mod proxy_servers;
#[path = "proxy_speed.rs"]
mod proxy_speed;
#[path = "proxy_tables.rs"]
mod proxy_tables;
#[path = "proxy_tools_list.rs"]
mod proxy_tools_list;
#[path = "proxy_visible.rs"]
mod proxy_visible;
#[path = "report.rs"]
mod report;
#[path = "serve_http.rs"]
mod serve_http;
#[path = "serve_redis.rs"]
mod serve_redis;
#[path = "serve_redis_load.rs"]
mod serve_redis_load;
#[path = "shape.rs"]
mod shape;
#[path = "wrap.rs"]
mod wrap;
#[path = "wrap_launch.rs"]
mod wrap_launch;
#[path = "wrap_merge.rs"]
mod wrap_merge;

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
