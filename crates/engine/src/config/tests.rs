use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

const FILE: &str = r#"
[defaults]
max_tokens = 5000
precision = 4
overflow = "summary"

[tools.big]
max_tokens = 700
transform = "del(.. | .duration_ns?)"
description_suffix = "Paged."

[tools.exact]
precision = 0
overflow = "page"
"#;

fn with(file: &str, flag_tokens: Option<usize>, flag_precision: Option<u32>) -> Settings {
    Settings {
        max_tokens: flag_tokens,
        precision: flag_precision,
        file: Some(ConfigFile::parse(file, Path::new("t.toml")).unwrap()),
        ..Settings::default()
    }
}

#[test]
fn per_tool_rule_beats_flag_beats_file_defaults() {
    let s = with(FILE, Some(9000), Some(7));
    assert_eq!(s.rule_for("big").max_tokens, 700);
    assert_eq!(s.rule_for("other").max_tokens, 9000);
    assert_eq!(s.rule_for("big").precision, 7);
    assert_eq!(s.rule_for("exact").precision, 0);
    assert_eq!(s.rule_for("exact").overflow, Overflow::Page);
    assert_eq!(s.rule_for("other").overflow, Overflow::Summary);
}

#[test]
fn file_defaults_beat_built_in_defaults() {
    let s = with(FILE, None, None);
    assert_eq!(s.rule_for("other").max_tokens, 5000);
    assert_eq!(s.rule_for("other").precision, 4);
    let bare = Settings::default();
    assert_eq!(bare.rule_for("x").max_tokens, 10_000);
    assert_eq!(bare.rule_for("x").precision, 9);
    assert_eq!(bare.rule_for("x").overflow, Overflow::Page);
}

#[test]
fn budget_is_clamped_to_the_floor() {
    let s = Settings {
        max_tokens: Some(10),
        ..Settings::default()
    };
    assert_eq!(
        s.rule_for("x").max_tokens,
        mcp_budget_core::MIN_BUDGET_TOKENS
    );
}

#[test]
fn jq_limits_flag_beats_file_defaults_beats_built_in() {
    let file = "[defaults]\njq_workers = 3\njq_memory_mib = 64\n";
    let s = with(file, None, None);
    assert_eq!(s.jq_limits().workers, 3);
    assert_eq!(s.jq_limits().memory_bytes, 64 << 20);
    let s = Settings {
        jq_workers: Some(1),
        jq_memory_mib: Some(1),
        ..with(file, None, None)
    };
    assert_eq!(s.jq_limits().workers, 1);
    assert_eq!(s.jq_limits().memory_bytes, 16 << 20, "clamped up to 16 MiB");
    let bare = Settings::default().jq_limits();
    assert_eq!(bare, JqLimits::default());
    assert_eq!(bare.workers, 2);
}

#[test]
fn sizes_and_durations_parse() {
    assert_eq!(parse_bytes("268435456"), Ok(268_435_456));
    assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
    assert_eq!(parse_bytes("256m"), Ok(256 << 20));
    assert_eq!(parse_bytes("1G"), Ok(1 << 30));
    assert_eq!(parse_bytes("64 KiB"), Ok(64 << 10));
    for bad in ["", "MiB", "-1", "1.5G", "1T", "99999999999999999999"] {
        assert!(parse_bytes(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_duration("3600"), Ok(Duration::from_secs(3600)));
    assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
    assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
    assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    for bad in ["", "h", "1.5h", "1w", "-3"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
}

#[test]
fn cache_and_blob_settings_flag_beats_file_beats_default() {
    let file = "[cache]\nbytes = 1000\nttl_secs = 7\ndir = \"/x\"\n[blobs]\nmax_age_secs = 0\n";
    let s = with(file, None, None);
    assert_eq!(s.cache_bytes(), 1000);
    assert_eq!(s.cache_ttl(), Duration::from_secs(7));
    assert_eq!(s.cache_base_dir(), PathBuf::from("/x"));
    assert_eq!(s.blob_max_age(), Duration::ZERO);
    let s = Settings {
        cache_bytes: Some(5),
        cache_ttl: Some(Duration::from_secs(1)),
        cache_dir: Some(PathBuf::from("/y")),
        blob_max_age: Some(Duration::from_secs(2)),
        ..s
    };
    assert_eq!(s.cache_bytes(), 5);
    assert_eq!(s.cache_ttl(), Duration::from_secs(1));
    assert_eq!(s.cache_base_dir(), PathBuf::from("/y"));
    assert_eq!(s.blob_max_age(), Duration::from_secs(2));
    let bare = Settings::default();
    assert_eq!(bare.cache_bytes(), DEFAULT_CACHE_BYTES);
    assert_eq!(bare.cache_ttl(), DEFAULT_CACHE_TTL);
    assert_eq!(bare.cache_base_dir(), std::env::temp_dir());
    assert_eq!(bare.blob_max_age(), DEFAULT_BLOB_MAX_AGE);
    let e = ConfigFile::parse("[cache]\nbyte = 3\n", Path::new("t.toml"));
    assert!(matches!(e, Err(ConfigError::Toml { .. })), "{e:?}");
}

#[test]
fn uuid_prefix_and_response_refs_per_tool_beat_defaults() {
    let file =
        "[defaults]\nuuid_prefix = true\n[tools.raw]\nuuid_prefix = false\nresponse_refs = true\n";
    let s = with(file, None, None);
    assert!(s.rule_for("any").uuid_prefix);
    assert!(!s.rule_for("raw").uuid_prefix);
    assert!(s.rule_for("raw").response_refs);
    assert!(!s.rule_for("any").response_refs);
    assert!(s.response_refs_anywhere());
    let bare = Settings::default();
    assert!(!bare.rule_for("x").uuid_prefix && !bare.rule_for("x").response_refs);
    assert!(!bare.response_refs_anywhere());
}

#[test]
fn unknown_keys_are_errors() {
    let e = ConfigFile::parse("[defaults]\nmax_token = 3\n", Path::new("t.toml"));
    assert!(matches!(e, Err(ConfigError::Toml { .. })), "{e:?}");
    let e = ConfigFile::parse("[tools.x]\noverflow = \"cut\"\n", Path::new("t.toml"));
    assert!(matches!(e, Err(ConfigError::Toml { .. })), "{e:?}");
}

#[test]
fn load_config_file_reads_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, FILE).unwrap();
    let s = Settings {
        config_path: Some(path),
        ..Settings::default()
    }
    .with_file()
    .unwrap();
    assert_eq!(
        s.rule_for("big").description_suffix.as_deref(),
        Some("Paged.")
    );
    let missing = Settings {
        config_path: Some(dir.path().join("nope.toml")),
        ..Settings::default()
    }
    .with_file();
    assert!(matches!(missing, Err(ConfigError::Read { .. })));
}

#[test]
fn tables_per_tool_then_defaults_then_off() {
    let s = with(
        "[defaults]\ntables = \"auto\"\n[tools.a]\ntables = \"off\"\n",
        None,
        None,
    );
    assert_eq!(s.rule_for("a").tables, Tables::Off);
    assert_eq!(s.rule_for("b").tables, Tables::Auto);
    assert_eq!(Settings::default().rule_for("b").tables, Tables::Off);
    let bad = ConfigFile::parse("[defaults]\ntables = \"on\"\n", Path::new("t.toml"));
    assert!(bad.is_err());
}
