//! A loop's transcript moves to any protocol (docs/design.md §15): tool-call ids unique within
//! it whatever the provider sent (none, the same `call_0` every turn, over 40
//! characters); `submit_findings` a strict function on OpenAI; a finding that names a
//! file other than the unit's dropped and counted, never moved onto the unit's file. The
//! real binary against the fake provider, which refuses what the real APIs refuse
//! (`fake_wire.rs`).

use crate::cache::Setup;
use crate::support::Toml;
use crate::support::fake_provider::Behavior;
use crate::support::fake_tools::{call, submit};
use crate::support::fake_wire::CallIds;
use crate::support::*;
use serde_json::{Value, json};
use std::collections::HashSet;

/// Every call id of one request body (either protocol), in order.
fn call_ids(body: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            ids.push(c["id"].as_str().unwrap_or("").to_string());
        }
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_use" {
                ids.push(b["id"].as_str().unwrap_or("").to_string());
            }
        }
    }
    ids
}

fn assert_unique_and_valid(ids: &[String], what: &str) {
    let set: HashSet<&String> = ids.iter().collect();
    assert_eq!(set.len(), ids.len(), "{what}: ids repeat: {ids:?}");
    assert!(
        ids.iter().all(|id| !id.is_empty()
            && id.len() <= 40
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')),
        "{what}: {ids:?}"
    );
}

/// Two turns of calls on the OpenAI route (one call, then two in parallel), then two
/// failures: the Anthropic route gets the transcript and finishes the loop.
fn two_turns_then_failover(ids: CallIds) {
    let s = Setup::with_repo(repo_with_grown_files(1, "f", 40));
    // Room for four turns: a tool turn starts only when it and the final one fit.
    std::fs::write(
        s.config_path(),
        Toml::new()
            .section("defaults", &[("maxTurns", "4")])
            .exec(&[
                ("reviewBudget", "30s"),
                ("hunkBudget", "20s"),
                ("requestTimeout", "3s"),
            ])
            .fake_routes(&s.fake.base_url(), crate::cache::KEY_VAR, 2)
            .build(),
    )
    .unwrap();
    s.fake.call_ids(ids);
    s.fake.script(
        "primary",
        vec![
            Behavior::ToolCalls(vec![call("read_file", json!({"path": "src/f0.rs"}))]),
            Behavior::ToolCalls(vec![
                call("grep", json!({"pattern": "compute", "path_glob": null})),
                call("list_files", json!({"glob": "src/*"})),
            ]),
            Behavior::status(500),
            Behavior::status(500),
        ],
    );
    s.fake.script("fallback", vec![Behavior::Agent]);
    let (_, v, err, _) = s.json(&["--no-cache"]);
    let u = &v["units"][0];
    assert_eq!(u["status"], "reviewed", "{ids:?}: {v}\n{err}");
    assert_eq!(u["route"], "fallback", "{ids:?}: {v}");
    assert_eq!(u["toolLoop"]["movedAfterTurn"], 2, "{u}");
    let primary = s.fake.requests_for("primary");
    assert_unique_and_valid(&call_ids(&primary[2].body), "the OpenAI route's third turn");
    let fallback = s.fake.requests_for("fallback");
    assert!(
        fallback.iter().all(|r| r.refused || r.body.is_object()),
        "{fallback:?}"
    );
    let ids_sent = call_ids(&fallback[0].body);
    assert_eq!(ids_sent.len(), 3, "{}", fallback[0].body);
    assert_unique_and_valid(&ids_sent, "the Anthropic route's transcript");
}

#[test]
fn ids_repeated_every_turn_are_made_unique_so_failover_to_anthropic_is_accepted() {
    two_turns_then_failover(CallIds::PerAnswer);
}

#[test]
fn calls_without_ids_get_unique_ones_so_failover_to_anthropic_is_accepted() {
    two_turns_then_failover(CallIds::Missing);
}

#[test]
fn ids_over_forty_characters_are_replaced_so_openai_and_anthropic_accept_the_transcript() {
    two_turns_then_failover(CallIds::Long);
}

#[test]
fn the_loop_s_submit_findings_is_a_strict_function_on_openai() {
    let s = Setup::new(1);
    s.fake.default_behavior(Behavior::Agent);
    let (_, v, _, asked) = s.json(&["--no-cache"]);
    assert_eq!(
        (asked, &v["units"][0]["status"]),
        (2, &json!("reviewed")),
        "{v}"
    );
    let body = &s.fake.requests_for("primary")[0].body;
    let tools = body["tools"].as_array().unwrap();
    for t in tools {
        let strict = t["function"]["strict"] == true;
        assert_eq!(
            strict,
            t["function"]["name"] == "submit_findings",
            "only submit_findings is strict: {t}"
        );
    }
}

#[test]
fn a_finding_naming_another_file_is_dropped_and_counted_never_moved() {
    let s = Setup::new(2);
    let other = |path: &str| {
        json!({"severity": "high", "confidence": "high", "title": format!("Bug in {path}"),
               "description": "d", "line": 11, "file": path})
    };
    // Every unit submits one finding of its own file and one of the other file, at a
    // line inside its own chunk (an OpenAI-compatible server that does not hold the
    // model to the strict schema lets it add `file`).
    s.fake
        .respond_with(std::sync::Arc::new(move |body: &Value| {
            let user = body["messages"].to_string();
            let (mine, theirs) = if user.contains("file: src/f0.rs") {
                ("src/f0.rs", "src/f1.rs")
            } else {
                ("src/f1.rs", "src/f0.rs")
            };
            Some(Behavior::ToolCalls(vec![submit(json!([
                other(mine),
                other(&format!("./{theirs}"))
            ]))]))
        }));
    let (code, v, _, _) = s.json(&["--no-cache"]);
    assert_eq!(code, 1, "{v}");
    let found: Vec<(String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["title"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("src/f0.rs".to_string(), "Bug in src/f0.rs".to_string()),
            ("src/f1.rs".to_string(), "Bug in src/f1.rs".to_string())
        ],
        "{v}"
    );
    assert_eq!(v["summary"]["findingsDropped"], 2, "{v}");
    let drops = v["droppedFindings"].as_array().unwrap();
    assert_eq!(drops.len(), 2, "{v}");
    assert!(
        drops
            .iter()
            .all(|d| d["reason"].as_str().unwrap().contains("names another file")),
        "{v}"
    );
    let (_, text, _) = s.run(&["--no-cache"]);
    assert!(text.contains("names another file"), "{text}");
}
