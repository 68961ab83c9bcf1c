//! Sharding one review over CI machines (`review --shard K/N`) and joining the shard
//! reports (`warden merge`): the real binary against the fake provider over loopback.

use crate::report_formats::{assert_valid, report_schema, sarif_schema};
use crate::review_e2e::Session;
use crate::support::fake_provider::{Behavior, finding, findings_answer};
use crate::support::warden;
use crate::support::{stderr_of, stdout_of};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Five changed files; the primary answers one high finding per unit, and reports its
/// cost as a gateway does (OpenAI itself sends none), so shard costs can be added up.
fn session() -> Session {
    let s = Session::new(5);
    s.fake.report_cost(0.0012);
    s.fake.script(
        "primary",
        vec![Behavior::Answer(findings_answer(json!([finding(
            11,
            "high",
            "Off-by-one in the loop"
        )])))],
    );
    s
}

/// Units as (skill, path, start, end).
fn unit_keys(v: &Value) -> Vec<(String, String, u64, u64)> {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["skill"].as_str().unwrap().to_string(),
                u["path"].as_str().unwrap().to_string(),
                u["startLine"].as_u64().unwrap(),
                u["endLine"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn finding_ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// Writes a shard's JSON report to `dir/name` and returns the path.
fn save(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p
}

/// `warden merge ARGS…`: exit code, stdout, stderr.
fn merge(args: &[&str]) -> (i32, String, String) {
    let out = warden().arg("merge").args(args).output().unwrap();
    let stderr = stderr_of(&out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code().unwrap_or(-1), stdout_of(&out), stderr)
}

fn merge_json(paths: &[&Path]) -> (i32, Value, String) {
    let mut args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    args.push("--json");
    let (code, out, err) = merge(&args);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_valid(&report_schema(), &v);
    (code, v, err)
}

#[test]
fn shards_are_disjoint_dealt_round_robin_and_merge_to_the_unsharded_review() {
    let s = session();
    let (whole_code, whole) = s.review_json(&[]);
    assert_eq!(whole["outcome"], "complete", "{whole}");
    assert_eq!(whole["summary"]["units"], 5);
    let (c1, one) = s.review_json(&["--shard", "1/2"]);
    let (c2, two) = s.review_json(&["--shard", "2/2"]);
    assert_eq!((c1, c2), (1, 1));
    assert_eq!(
        one["shard"],
        json!({"index": 1, "count": 2, "planUnits": 5})
    );
    assert_eq!(
        two["shard"],
        json!({"index": 2, "count": 2, "planUnits": 5})
    );
    let fp = whole["planFingerprint"].as_str().unwrap();
    assert_eq!(fp.len(), 16);
    assert_eq!(one["planFingerprint"], fp);
    assert_eq!(two["planFingerprint"], fp);

    // Dealt round-robin in dispatch order: shard 1 has plan positions 0, 2, 4.
    let all = unit_keys(&whole);
    let (k1, k2) = (unit_keys(&one), unit_keys(&two));
    assert_eq!(k1, vec![all[0].clone(), all[2].clone(), all[4].clone()]);
    assert_eq!(k2, vec![all[1].clone(), all[3].clone()]);
    assert!(k1.iter().all(|k| !k2.contains(k)), "shards overlap");
    // Each shard sent only its own units.
    assert_eq!(s.fake.requests_for("primary").len(), 5 + 3 + 2);

    let dir = tempfile::tempdir().unwrap();
    let p1 = save(dir.path(), "shard-1.json", &one);
    let p2 = save(dir.path(), "shard-2.json", &two);
    // Order of the arguments does not matter.
    let (code, merged, _) = merge_json(&[&p2, &p1]);
    assert_eq!(code, whole_code);
    assert_eq!(merged["outcome"], "complete");
    assert_eq!(unit_keys(&merged), all);
    assert_eq!(finding_ids(&merged), finding_ids(&whole));
    assert_eq!(merged["summary"], whole["summary"]);
    // The fake reports $0.0012 per answer: the cost adds up across shards.
    assert_eq!(merged["summary"]["costUsd"], json!(0.006));
    assert_eq!(merged["routes"]["primary"]["costUsd"], json!(0.006));
    assert_eq!(merged["counters"], whole["counters"]);
    assert_eq!(merged["routes"]["primary"]["calls"], 5);
    assert_eq!(merged["routes"]["primary"]["ok"], 5);
    assert_eq!(merged["planFingerprint"], fp);
    assert!(merged.get("shard").is_none(), "{merged}");
    // Each shard's warnings, each once: shards share a config, so its warnings repeat.
    let config_w = json!({"source": "config", "message": "warden.toml: unknown key `x` (ignored)"});
    let fleet_w = json!({"source": "fleet", "message": "redis 127.0.0.1:1: cannot connect"});
    let (mut w1, mut w2) = (one.clone(), two.clone());
    w1["warnings"] = json!([config_w]);
    w2["warnings"] = json!([config_w, fleet_w]);
    let (_, merged_w, _) = merge_json(&[
        &save(dir.path(), "w1.json", &w1),
        &save(dir.path(), "w2.json", &w2),
    ]);
    assert_eq!(merged_w["warnings"], json!([config_w, fleet_w]));

    // Any format, to any output: SARIF for code scanning.
    let sarif_path = dir.path().join("merged.sarif");
    let spec = format!("sarif={}", sarif_path.display());
    let (code, _, err) = merge(&[
        p1.to_str().unwrap(),
        p2.to_str().unwrap(),
        "-o",
        &spec,
        "-q",
    ]);
    assert_eq!(code, 1, "{err}");
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_path).unwrap()).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 5);
}

#[test]
fn a_missing_shard_makes_the_merged_review_partial_and_names_it() {
    let s = session();
    let (_, one) = s.review_json(&["--shard", "1/3", "--fail-on", "off"]);
    let (_, three) = s.review_json(&["--shard", "3/3", "--fail-on", "off"]);
    let dir = tempfile::tempdir().unwrap();
    let p1 = save(dir.path(), "a.json", &one);
    let p3 = save(dir.path(), "c.json", &three);
    let (code, merged, err) = merge_json(&[&p1, &p3]);
    assert_eq!(code, 3, "partial, no finding reaches failOn off");
    assert_eq!(merged["outcome"], "partial");
    assert_eq!(
        merged["missingShards"],
        json!([{"index": 2, "count": 3, "units": 2}])
    );
    assert_eq!(merged["summary"]["units"], 5);
    assert_eq!(merged["summary"]["reviewed"], 3);
    assert_eq!(merged["summary"]["skipped"], 2);
    assert_eq!(merged["findings"].as_array().unwrap().len(), 3);
    assert!(err.contains("shard 2/3 is missing"), "{err}");
    // The text report says the review is not whole, too.
    let (code, text, _) = merge(&[p1.to_str().unwrap(), p3.to_str().unwrap(), "-q"]);
    assert_eq!(code, 3);
    assert!(text.contains("NOT REVIEWED: 2 of 5 units"), "{text}");
    assert!(text.contains("shard 2/3 is missing"), "{text}");
}

#[test]
fn reports_of_different_plans_are_refused() {
    let s = session();
    let (_, one) = s.review_json(&["--shard", "1/2"]);
    // The change moves on: another plan.
    s.repo.write("src/f0.rs", "fn changed() {}\n");
    let (_, two) = s.review_json(&["--shard", "2/2"]);
    assert_ne!(one["planFingerprint"], two["planFingerprint"]);
    let dir = tempfile::tempdir().unwrap();
    let p1 = save(dir.path(), "one.json", &one);
    let p2 = save(dir.path(), "two.json", &two);
    let (code, out, err) = merge(&[p1.to_str().unwrap(), p2.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("two.json") && err.contains("different plan"),
        "{err}"
    );
}

#[test]
fn bad_merge_input_exits_2_naming_the_file() {
    let s = session();
    let (_, one) = s.review_json(&["--shard", "1/2"]);
    let dir = tempfile::tempdir().unwrap();
    let good = save(dir.path(), "good.json", &one);
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "not json {").unwrap();
    let mut v2 = one.clone();
    v2["schemaVersion"] = json!(2);
    let future = save(dir.path(), "future.json", &v2);
    let mut partial = one.clone();
    partial.as_object_mut().unwrap().remove("units");
    let broken = save(dir.path(), "broken.json", &partial);
    let again = save(dir.path(), "again.json", &one);
    let missing = dir.path().join("absent.json");
    for (bad, words) in [
        (&junk, "not JSON"),
        (&future, "schemaVersion 2"),
        (&broken, "units"),
        (&again, "given twice"),
        (&missing, "absent.json"),
    ] {
        let (code, out, err) = merge(&[good.to_str().unwrap(), bad.to_str().unwrap()]);
        assert_eq!(code, 2, "{}: {out}{err}", bad.display());
        let name = bad.file_name().unwrap().to_str().unwrap();
        assert!(err.contains(name) && err.contains(words), "{err}");
    }
    // No report at all is a usage error.
    let (code, _, err) = merge(&[]);
    assert_eq!(code, 2, "{err}");
    // A bad --shard value names the flag.
    let (code, _, err) = s.review(&["--shard", "3/2"]);
    assert_eq!(code, 2);
    assert!(err.contains("--shard") && err.contains("K/N"), "{err}");
}
