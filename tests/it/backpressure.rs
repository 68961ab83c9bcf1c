//! docs/design.md section 13 end to end: the release binary against the fake provider on
//! loopback when it says "not now". A provider that serves 4 at once (429 beyond) and
//! one that serves 5 a second and says so in its headers are reviewed whole, with few
//! answers of 429; back-pressure uses no attempt; exhausted quota still fails.

use crate::support::Toml;
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;

const KEY_VAR: &str = "WARDEN_BP_KEY";

/// A 300 ms model answer with no findings.
fn slow_answer() -> Behavior {
    Behavior::DelayHeaders(
        Duration::from_millis(300),
        Box::new(Behavior::Answer(findings_answer(json!([])))),
    )
}

/// `files` changed files (one unit each), one route on the fake with this cap.
fn session(
    fake: &FakeProvider,
    files: usize,
    cap: &str,
    budget: &str,
) -> (Repo, tempfile::TempDir) {
    let repo = repo_with_grown_files(files, "bp", 10);
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        Toml::new()
            .exec(&[("reviewBudget", budget), ("maxAttempts", "1")])
            .raw("[[skills]]\nname = \"code-review\"\n")
            .route(
                "primary",
                "openai",
                &[
                    ("model", "m"),
                    ("baseUrl", &fake.base_url()),
                    ("apiKeyEnv", KEY_VAR),
                    ("maxConcurrency", cap),
                ],
            )
            .build(),
    )
    .unwrap();
    (repo, cfg)
}

fn review(repo: &Repo, cfg: &tempfile::TempDir) -> Value {
    let config = cfg.path().join("warden.toml");
    let out = repo
        .warden(&[
            "review",
            "--json",
            "--no-cache",
            "-c",
            config.to_str().unwrap(),
        ])
        .env(KEY_VAR, "sk-bp-test-key-0123456789abcdef")
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{stderr}"))
}

fn statuses(report: &Value) -> Vec<String> {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["status"].as_str().unwrap().to_string())
        .collect()
}

fn outcomes(report: &Value) -> Vec<String> {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| u["attempts"].as_array().unwrap().iter())
        .map(|a| a["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_provider_serving_four_at_once_is_reviewed_whole_with_few_429s() {
    let _shared = timing_sensitive();
    let fake = FakeProvider::start();
    fake.limited(4).default_behavior(slow_answer());
    let (repo, cfg) = session(&fake, 80, "\"auto\"", "60s");
    let report = review(&repo, &cfg);
    let reviewed = statuses(&report)
        .iter()
        .filter(|s| *s == "reviewed")
        .count();
    let requests = fake.requests().len();
    let refused = fake.refused();
    assert_eq!(reviewed, 80, "{:?}", report["summary"]);
    assert!(
        refused * 10 <= requests,
        "{refused} of {requests} requests answered 429"
    );
    // maxAttempts 1: every 429 was a wait, never the unit's one attempt.
    let o = outcomes(&report);
    assert_eq!(o.iter().filter(|o| *o == "rate_limited").count(), refused);
    assert_eq!(
        report["routes"]["primary"]["breaker"]["state"], "closed",
        "{}",
        report["routes"]
    );
    // Slow start (docs/design.md section 13) adds a permit per answer until the first
    // back-pressure: one round trip can at most double the starting limit of 4 before a
    // 429 comes back. (The bound was 5 while the fake counted a request in flight only
    // after admitting it, so two arriving together could both take its last slot.)
    assert!(fake.max_in_flight() <= 8, "{}", fake.max_in_flight());
}

#[test]
fn a_provider_announcing_five_a_second_is_paced_by_its_headers() {
    let _shared = timing_sensitive();
    let fake = FakeProvider::start();
    fake.paced(5).default_behavior(slow_answer());
    let (repo, cfg) = session(&fake, 40, "8", "60s");
    let report = review(&repo, &cfg);
    let reviewed = statuses(&report)
        .iter()
        .filter(|s| *s == "reviewed")
        .count();
    assert_eq!(reviewed, 40, "{:?}", report["summary"]);
    let refused = fake.refused();
    assert!(
        refused <= 3,
        "{refused} answers of 429 in {} requests",
        fake.requests().len()
    );
    // Never more than 5 requests reached the fake in any one second (its own window).
    let times: Vec<std::time::Instant> = fake
        .requests()
        .iter()
        .filter(|r| !r.refused)
        .map(|r| r.at)
        .collect();
    for (i, t) in times.iter().enumerate() {
        let within = times[i..]
            .iter()
            .filter(|u| u.duration_since(*t) < Duration::from_millis(900))
            .count();
        assert!(within <= 5, "{within} served within 900 ms of request {i}");
    }
}

#[test]
fn exhausted_quota_is_still_a_failure_and_an_overload_is_a_wait() {
    let fake = FakeProvider::start();
    let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    fake.default_behavior(Behavior::status_with(429, &[("retry-after", "1")], quota));
    let (repo, cfg) = session(&fake, 1, "4", "30s");
    let report = review(&repo, &cfg);
    assert_eq!(statuses(&report), ["failed"]);
    assert_eq!(outcomes(&report), ["quota"]);
    assert_eq!(fake.requests().len(), 1);

    // Two 529s, then an answer: maxAttempts 1 still reviews it, and the breaker (five
    // calls at 50 % would open it) stays closed.
    let fake = FakeProvider::start();
    fake.script(
        "m",
        vec![
            Behavior::status(529),
            Behavior::status_with(503, &[("retry-after", "1")], "{}"),
            Behavior::Answer(findings_answer(json!([]))),
        ],
    );
    let (repo, cfg) = session(&fake, 1, "4", "30s");
    let report = review(&repo, &cfg);
    assert_eq!(statuses(&report), ["reviewed"]);
    assert_eq!(outcomes(&report), ["unavailable", "unavailable", "ok"]);
    assert_eq!(fake.requests().len(), 3);
}
