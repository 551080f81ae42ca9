//! Property: every line the relay does not shape comes out byte for byte, in order, whatever
//! its spelling (member order, whitespace, number spelling, escapes, unknown members, ids of
//! any type) and whatever its JSON dialect (Python's `NaN`, `Infinity`, `-Infinity`, lone
//! surrogate escapes; issue 8 §5). A leading UTF-8 byte-order mark is the one thing dropped:
//! the line is read as if it had none. The upstream is `cat`, so each line crosses the relay
//! twice: client → server as it was sent, and server → client as the server's (here: echoed)
//! line.

#![cfg(unix)]

use std::time::Duration;

use mcp_budget_proxy::relay::{Relay, RelayOptions, Upstream};
use proptest::prelude::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::timeout;

/// Raw JSON text of a value, with odd but valid spellings.
fn raw_value() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        Just("1.50".to_owned()),
        Just("-0.0".to_owned()),
        Just("1E+2".to_owned()),
        Just("2.5e-7".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("247.13061935179246".to_owned()),
        // Python's json.dumps writes these by default.
        Just("NaN".to_owned()),
        Just("Infinity".to_owned()),
        Just("-Infinity".to_owned()),
    ];
    let string = prop_oneof![
        any::<String>().prop_map(|s| serde_json::Value::from(s).to_string()),
        Just(r#""\u00e9\ud83d\ude00 \"q\" \\ \/ \t""#.to_owned()),
        Just("\"é 日本 😀\"".to_owned()),
        Just(r#""report_\udcff_1.txt NaN \\udcff""#.to_owned()),
    ];
    let leaf = prop_oneof![
        number,
        string,
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just("null".to_owned()),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..5), ws())
                .prop_map(|(items, w)| { format!("[{w}{}{w}]", items.join(&format!("{w},{w}"))) }),
            (prop::collection::vec(("[a-z_]{0,6}", inner), 0..5), ws()).prop_map(|(members, w)| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\"{w}:{w}{v}"))
                    .collect();
                format!("{{{w}{}{w}}}", members.join(&format!("{w},{w}")))
            }),
        ]
    })
}

/// Whitespace JSON allows between tokens (never a newline: one message per line).
fn ws() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_owned()),
        Just("\t".to_owned()),
        Just("  ".to_owned())
    ]
}

fn raw_id() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u32>().prop_map(|n| n.to_string()),
        Just("1.0".to_owned()),
        Just("-7".to_owned()),
        Just("null".to_owned()),
        "[a-z0-9-]{0,8}".prop_map(|s| format!("\"{s}\"")),
        Just(r#""\u0041b""#.to_owned()),
        // The same value spelled several ways (ids are matched by value).
        Just("-0".to_owned()),
        Just("0".to_owned()),
        Just("1e3".to_owned()),
        Just("1000.0".to_owned()),
        Just("1E+3".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
    ]
}

/// One message: a request, a notification, or a response, members in any order.
fn message() -> impl Strategy<Value = String> {
    let method = prop_oneof![
        Just("tools/call"),
        Just("tools/list"),
        Just("initialize"),
        Just("server/discover"),
        Just("notifications/progress"),
        Just("roots/list"),
        Just("vendor/x"),
    ];
    (
        0..3u8,
        raw_id(),
        method,
        raw_value(),
        raw_value(),
        ws(),
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(kind, id, method, params, extra, w, reverse, bom)| {
            let mut members = vec![format!("\"jsonrpc\"{w}:{w}\"2.0\"")];
            match kind {
                0 => {
                    members.push(format!("\"id\":{w}{id}"));
                    members.push(format!("\"method\":\"{method}\""));
                    members.push(format!("\"params\":{params}"));
                }
                1 => {
                    members.push(format!("\"method\":\"{method}\""));
                    members.push(format!("\"params\"{w}:{params}"));
                }
                _ => {
                    members.push(format!("\"id\":{id}"));
                    members.push(format!("\"result\":{params}"));
                }
            }
            members.push(format!("\"_meta\":{extra}"));
            if reverse {
                members.reverse();
            }
            let bom = if bom { BOM } else { "" };
            format!("{bom}{w}{{{w}{}{w}}}{w}", members.join(&format!("{w},{w}")))
        })
}

/// The UTF-8 byte-order mark, U+FEFF.
const BOM: &str = "\u{feff}";

async fn through_relay(lines: &[String]) -> Vec<String> {
    let (mut to_relay, relay_in) = tokio::io::duplex(1 << 16);
    let (relay_out, from_relay) = tokio::io::duplex(1 << 16);
    let relay = tokio::spawn(async move {
        Relay::new(RelayOptions::default())
            .run(
                &Upstream::new("cat", Vec::<String>::new()),
                relay_in,
                relay_out,
            )
            .await
    });
    let writer = {
        let lines = lines.to_vec();
        tokio::spawn(async move {
            for line in lines {
                let _ = to_relay.write_all(line.as_bytes()).await;
                let _ = to_relay.write_all(b"\n").await;
            }
            // Dropping `to_relay` is the client's EOF.
        })
    };
    let mut out = Vec::new();
    let mut reader = BufReader::new(from_relay).lines();
    while let Ok(Ok(Some(line))) = timeout(Duration::from_secs(10), reader.next_line()).await {
        out.push(line);
    }
    let _ = writer.await;
    let _ = timeout(Duration::from_secs(10), relay).await;
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every line comes out byte for byte and in order; the relay adds only the errors owed to
    /// requests left unanswered when the server exits.
    #[test]
    fn unshaped_lines_pass_byte_for_byte_in_order(lines in prop::collection::vec(message(), 1..12)) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let out = runtime.block_on(through_relay(&lines));
        prop_assert!(out.len() >= lines.len(), "lines were lost: {} of {}", out.len(), lines.len());
        let expected: Vec<&str> = lines
            .iter()
            .map(|l| l.strip_prefix(BOM).unwrap_or(l))
            .collect();
        prop_assert_eq!(&out[..lines.len()], &expected[..]);
        // After them only the errors for requests the server (cat) never answered.
        for extra in &out[lines.len()..] {
            let v: serde_json::Value = serde_json::from_str(extra).unwrap_or_default();
            prop_assert_eq!(&v["error"]["code"], &serde_json::json!(-32000), "{}", extra);
        }
    }
}
