//! A loop's bounds reached over real HTTP (docs/design.md §14): `maxToolCalls` and
//! `toolBytesPerUnit` each end the tool turns, the model is told why in the call's
//! result, and the next turn forces `submit_findings` — which the fake, as strict as the
//! real APIs, honours (`fake_wire::honour_tool_choice`).

use crate::cache::{KEY_VAR, Setup};
use crate::support::Toml;
use crate::support::fake_provider::Behavior;
use crate::support::fake_tools::call;
use crate::support::*;
use serde_json::{Value, json};

/// A config with room for four turns and these `[execution]` keys.
fn config(s: &Setup, execution: &str) {
    std::fs::write(
        s.config_path(),
        Toml::new()
            .section("defaults", &[("maxTurns", "4")])
            .exec(&[
                ("reviewBudget", "30s"),
                ("hunkBudget", "20s"),
                ("requestTimeout", "3s"),
            ])
            .raw(&format!("{execution}\n"))
            .fake_routes(&s.fake.base_url(), KEY_VAR, 2)
            .build(),
    )
    .unwrap();
}

/// The `role: tool` messages of a request, in order.
fn results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

fn forces_submit(body: &Value) -> bool {
    body["tool_choice"]["function"]["name"] == "submit_findings"
}

#[test]
fn the_tool_call_cap_refuses_the_call_past_it_and_forces_the_submit() {
    let s = Setup::with_repo(repo_with_grown_files(1, "f", 40));
    config(&s, "maxToolCalls = 2");
    // Three calls in one turn, then (unless forced) more of them for ever.
    s.fake.script(
        "primary",
        vec![Behavior::ToolCalls(vec![
            call("read_file", json!({"path": "src/f0.rs"})),
            call("grep", json!({"pattern": "compute", "path_glob": null})),
            call("list_files", json!({"glob": "src/*"})),
        ])],
    );
    let (_, v, err, asked) = s.json(&["--no-cache"]);
    let u = &v["units"][0];
    assert_eq!(u["status"], "reviewed", "{v}\n{err}");
    assert_eq!(asked, 2, "the calls' turn, then the forced submit: {v}");
    let l = &u["toolLoop"];
    assert_eq!(
        (&l["toolCalls"], &l["turnsUsed"]),
        (&json!(3), &json!(2)),
        "{l}"
    );
    let sent = s.fake.requests_for("primary");
    let r = results(&sent[1].body);
    assert_eq!(r.len(), 3, "{r:?}");
    assert!(
        !r[0].starts_with("error:") && !r[1].starts_with("error:"),
        "{r:?}"
    );
    assert!(r[2].contains("tool call cap (2) is reached"), "{r:?}");
    assert!(forces_submit(&sent[1].body), "{}", sent[1].body);
}

#[test]
fn the_unit_s_tool_bytes_cut_the_result_and_force_the_submit() {
    let s = Setup::with_repo(repo_with_grown_files(1, "f", 200));
    config(&s, "toolBytesPerUnit = \"2KiB\"");
    s.fake.script(
        "primary",
        vec![Behavior::ToolCalls(vec![call(
            "read_file",
            json!({"path": "src/f0.rs"}),
        )])],
    );
    let (_, v, err, asked) = s.json(&["--no-cache"]);
    let u = &v["units"][0];
    assert_eq!(u["status"], "reviewed", "{v}\n{err}");
    assert_eq!(asked, 2, "{v}");
    let l = &u["toolLoop"];
    assert!(l["toolBytes"].as_u64().unwrap() <= 2048, "{l}");
    let sent = s.fake.requests_for("primary");
    let r = results(&sent[1].body);
    assert!(
        r[0].contains("[cut: the unit's tool result budget is spent"),
        "{r:?}"
    );
    assert!(r[0].len() <= 2048, "{}", r[0].len());
    assert!(forces_submit(&sent[1].body), "{}", sent[1].body);
}
