//! Issue 36, item 4 (docs/design.md §15): a model that refuses ends its unit `refused`, its own
//! status, in every output: never clean, never an outage (no breaker verdict), never
//! retried on the same route, free to fail over to another. Every refusal shape in both
//! protocols, streamed and not, against the fake provider over real HTTP and the binary.

use crate::support::fake_provider::fake_refusal::Refusal;
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::review::*;
use crate::support::stdout_of;
use serde_json::json;

const WORDS: &str = "I'm sorry, I can't help with reviewing this code.";

fn shapes() -> [(&'static str, Refusal); 2] {
    [
        ("the model's refusal", Refusal::Words(WORDS.into())),
        (
            "a content filter",
            Refusal::Filtered("{\"findings\": [".into()),
        ),
    ]
}

#[test]
fn every_refusal_shape_ends_the_unit_refused_not_retried_not_an_outage() {
    let fake = FakeProvider::start();
    for (provider, stream) in EVERY_WIRE {
        for (shape, refusal) in shapes() {
            let label = format!("{shape} ({provider}, stream={stream})");
            let model = format!("refuse-{provider}-{stream}");
            fake.script(&model, vec![Behavior::Refusal(refusal)]);
            let before = fake.requests_for(&model).len();
            let review = Review::new(1);
            let (code, v, stderr) = review.one_route(&model, provider, fake.base_url(), stream);
            let u = &units(&v)[0];
            assert_eq!(
                code, 3,
                "{label}: a refusal is not a clean review: {stderr}\n{u}"
            );
            assert_eq!(v["outcome"], "unavailable", "{label}");
            assert_eq!(u["status"], "refused", "{label}: {u}");
            assert_eq!(v["summary"]["refused"], 1, "{label}");
            assert_eq!(v["summary"]["failed"], 0, "{label}");
            assert_eq!(v["summary"]["unavailable"], 0, "{label}");
            // Not retried on the same route (maxAttempts allows more).
            let tried = u["attempts"].as_array().unwrap();
            assert_eq!(tried.len(), 1, "{label}: {u}");
            assert_eq!(tried[0]["outcome"], "refused", "{label}");
            assert_eq!(fake.requests_for(&model).len() - before, 1, "{label}");
            let reason = u["reason"].as_str().unwrap();
            assert!(reason.contains("the model refused"), "{label}: {reason}");
            if matches!(shape, "the model's refusal") && provider == "openai" {
                assert!(
                    reason.contains(WORDS),
                    "{label}: the model's words: {reason}"
                );
            }
            // No breaker verdict: the route stays closed, with no open.
            let r = &v["routes"][&model];
            assert_eq!(r["breaker"]["state"], "closed", "{label}: {r}");
            assert_eq!(r["breaker"]["opens"], 0, "{label}: {r}");
        }
    }
}

#[test]
fn a_refused_unit_fails_over_and_is_reviewed_by_the_next_route() {
    let fake = FakeProvider::start();
    fake.script(
        "prim-refuses",
        vec![Behavior::Refusal(Refusal::Words(WORDS.into()))],
    );
    let finding = json!([{"severity": "high", "confidence": "high", "title": "Found after a refusal",
                          "description": "d", "line": 10}]);
    fake.script(
        "fallback-ok",
        vec![Behavior::Answer(findings_answer(finding))],
    );
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
        &[
            route_cfg("prim-refuses", "openai", fake.base_url(), true),
            route_cfg("fallback-ok", "anthropic", fake.base_url(), false),
        ],
    );
    let (code, v, stderr, _) = review.json(&["--fail-on", "off"]);
    let u = &units(&v)[0];
    assert_eq!(code, 0, "{stderr}\n{u}");
    assert_eq!(u["status"], "reviewed", "{u}");
    assert_eq!(u["route"], "fallback-ok", "{u}");
    let outcomes: Vec<_> = u["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["route"].as_str().unwrap(), a["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [("prim-refuses", "refused"), ("fallback-ok", "ok")],
        "{u}"
    );
    assert_eq!(v["findings"][0]["title"], "Found after a refusal");
}

#[test]
fn refused_shows_in_text_markdown_and_sarif_outputs() {
    let fake = FakeProvider::start();
    fake.script(
        "refuses",
        vec![Behavior::Refusal(Refusal::Words(WORDS.into()))],
    );
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
        &[route_cfg("refuses", "openai", fake.base_url(), false)],
    );
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("r.md");
    let sarif = dir.path().join("r.sarif");
    let out = review
        .command(&[
            "--format",
            "text",
            "-o",
            &format!("markdown={}", md.display()),
            "-o",
            &format!("sarif={}", sarif.display()),
        ])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("refused"), "text: {text}");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("| `code-review` | refused | refused by refuses: the model refused"),
        "markdown names the unit and why: {md}"
    );
    let sarif = std::fs::read_to_string(sarif).unwrap();
    assert!(sarif.contains("refused"), "sarif: {sarif}");
}
