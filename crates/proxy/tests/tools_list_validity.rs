//! Issue 15: schema compaction never changes which arguments are valid.
//!
//! For every tool of four real servers (the `tools/list` responses of the pinned e2e
//! packages, recorded in `tests/data/tools_list`), argument objects are generated from the
//! original `inputSchema` (proptest seeds; each node valid or mutated: a wrong type, a value
//! out of the enum, a missing required member, an extra member, an empty array), and the
//! `jsonschema` crate's verdict on the original schema must equal its verdict on the compacted
//! one — with the dialect each declares (draft-07, or the 2020-12 default once `$schema` is
//! gone), formats as annotations and formats asserted.

use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::tooldefs::{Options, compact_tool};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const SERVERS: [&str; 4] = ["filesystem", "memory", "everything", "git"];

fn tools(server: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/data/tools_list/{server}.tools.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["result"]["tools"].as_array().unwrap().clone()
}

/// Every option on (the goal's caps, compaction, folding).
fn all_options() -> Options {
    Options {
        description_max_tokens: Some(40),
        property_description_max_tokens: Some(12),
        compact_schemas: true,
        fold_property_descriptions: true,
    }
}

/// A small deterministic generator (xorshift64*), seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn any_value(rng: &mut Rng) -> Value {
    let pool = [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(3),
        json!(2.5),
        json!(""),
        json!("x"),
        json!("not a uri"),
        json!("https://example.com/a"),
        json!([]),
        json!(["a"]),
        json!({}),
        json!({"k": 1}),
    ];
    pool[rng.below(pool.len())].clone()
}

/// An instance of `schema` (a sub-schema of an original `inputSchema`), mutated at any node
/// with probability `mutate` percent.
fn instance(schema: &Value, rng: &mut Rng, mutate: u64, depth: usize) -> Value {
    if depth > 6 || rng.chance(mutate) {
        return any_value(rng);
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values[rng.below(values.len())].clone();
    }
    if let Some(Value::Array(alts)) = schema.get("anyOf") {
        return instance(&alts[rng.below(alts.len())], rng, mutate, depth + 1);
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts[rng.below(ts.len())]
            .as_str()
            .unwrap_or("null")
            .to_owned(),
        _ => return any_value(rng),
    };
    match ty.as_str() {
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, p) in props {
                    let keep = if required.contains(&name.as_str()) {
                        !rng.chance(mutate)
                    } else {
                        rng.chance(50)
                    };
                    if keep {
                        out.insert(name.clone(), instance(p, rng, mutate, depth + 1));
                    }
                }
            }
            if rng.chance(mutate) {
                out.insert("unexpected".into(), any_value(rng));
            }
            Value::Object(out)
        }
        "array" => {
            let n = if rng.chance(mutate) {
                0
            } else {
                1 + rng.below(3)
            };
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..n)
                    .map(|_| instance(&items, rng, mutate, depth + 1))
                    .collect(),
            )
        }
        "string" => {
            let pool = [
                "a.txt",
                "",
                "/tmp/x",
                "https://example.com/f.md",
                "main",
                "2024-01-01",
            ];
            json!(pool[rng.below(pool.len())])
        }
        "integer" => json!([0, 1, 3, 10, 11, -5][rng.below(6)]),
        "number" => json!([0.0, 1.0, 2.5, 10.0, 11.0, -3.0][rng.below(6)]),
        "boolean" => json!(rng.chance(50)),
        "null" => Value::Null,
        _ => any_value(rng),
    }
}

fn validators(schema: &Value) -> [jsonschema::Validator; 2] {
    [
        jsonschema::validator_for(schema).unwrap(),
        jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .unwrap(),
    ]
}

struct Pair {
    name: String,
    original: Value,
    before: [jsonschema::Validator; 2],
    after: [jsonschema::Validator; 2],
}

/// The pairs, built once per test process: reading the recordings, compacting every tool and
/// compiling four validators per tool costs far more than checking one case's arguments.
fn pairs() -> &'static [Pair] {
    static PAIRS: std::sync::OnceLock<Vec<Pair>> = std::sync::OnceLock::new();
    PAIRS.get_or_init(build_pairs)
}

fn build_pairs() -> Vec<Pair> {
    let enc = Encoding::Cl100kBase;
    let mut out = Vec::new();
    for s in SERVERS {
        for tool in tools(s) {
            let compacted = compact_tool(&tool, &all_options(), &enc);
            out.push(Pair {
                name: tool["name"].as_str().unwrap().to_owned(),
                before: validators(&tool["inputSchema"]),
                after: validators(&compacted["inputSchema"]),
                original: tool["inputSchema"].clone(),
            });
        }
    }
    out
}

#[test]
fn compaction_changes_the_schemas() {
    let enc = Encoding::Cl100kBase;
    let changed = SERVERS
        .iter()
        .flat_map(|s| tools(s))
        .filter(|t| compact_tool(t, &all_options(), &enc)["inputSchema"] != t["inputSchema"])
        .count();
    // Every recorded tool has a `$schema`, a `title` or a trivial annotation to lose.
    assert_eq!(changed, 48);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn verdicts_survive_compaction(seed in any::<u64>(), mutate in 0u64..40) {
        let pairs = pairs();
        let mut rng = Rng(seed | 1);
        let (mut valid, mut invalid) = (0, 0);
        for p in pairs {
            for _ in 0..8 {
                let args = instance(&p.original, &mut rng, mutate, 0);
                for (b, a) in p.before.iter().zip(&p.after) {
                    let verdict = b.is_valid(&args);
                    prop_assert_eq!(verdict, a.is_valid(&args), "{}: {}", p.name, args);
                    if verdict { valid += 1 } else { invalid += 1 }
                }
            }
        }
        // Both verdicts occur (the generator is not vacuous), except for tiny mutation rates.
        prop_assert!(valid > 0);
        if mutate >= 10 {
            prop_assert!(invalid > 0);
        }
    }
}

/// Hand-made argument sets for the schemas the compaction rewrites most: git's nullable
/// `anyOf` (now a type array), everything's enum (its `type` dropped) and `format: uri`
/// (its `$schema` dropped).
#[test]
fn hand_made_arguments_keep_their_verdict() {
    let pairs = pairs();
    let get = |n: &str| pairs.iter().find(|p| p.name == n).unwrap();
    let cases: [(&str, Value, bool); 10] = [
        (
            "git_log",
            json!({"repo_path": "/r", "start_timestamp": null}),
            true,
        ),
        (
            "git_log",
            json!({"repo_path": "/r", "start_timestamp": "2024-01-01"}),
            true,
        ),
        (
            "git_log",
            json!({"repo_path": "/r", "start_timestamp": 5}),
            false,
        ),
        ("git_log", json!({"start_timestamp": "x"}), false),
        (
            "get-structured-content",
            json!({"location": "Chicago"}),
            true,
        ),
        (
            "get-structured-content",
            json!({"location": "Paris"}),
            false,
        ),
        ("get-structured-content", json!({"location": 1}), false),
        (
            "gzip-file-as-resource",
            json!({"data": "https://example.com/a"}),
            true,
        ),
        ("gzip-file-as-resource", json!({"outputType": "zip"}), false),
        ("git_add", json!({"repo_path": "/r", "files": []}), false),
    ];
    for (tool, args, expected) in cases {
        let p = get(tool);
        for (b, a) in p.before.iter().zip(&p.after) {
            assert_eq!(b.is_valid(&args), expected, "{tool} {args}");
            assert_eq!(a.is_valid(&args), expected, "{tool} {args} after");
        }
    }
    // `format: uri` asserted: the same verdict before and after.
    let gz = get("gzip-file-as-resource");
    let bad = json!({"data": "not a uri"});
    assert_eq!(gz.before[1].is_valid(&bad), gz.after[1].is_valid(&bad));
}
