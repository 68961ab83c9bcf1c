//! Gateways keep one retry owner: warden against a real LiteLLM proxy on loopback in front
//! of the fake provider. With `provider = "litellm"` every warden attempt is exactly one
//! upstream call; on a plain `openai` route the proxy's own retries show, and warden warns.

use crate::support::fake_provider::{Behavior, finding, findings_answer};
use crate::support::litellm::{LIMITED, MASTER_KEY, proxy};
use crate::support::*;
use serde_json::{Value, json};

pub(crate) const KEY_VAR: &str = "WARDEN_GATEWAY_KEY";

/// A repository with `files` changed files (one unit each) and a config with one route
/// through the proxy.
pub(crate) fn session(
    files: usize,
    provider: &str,
    model: &str,
    max_attempts: u32,
) -> (Repo, tempfile::TempDir) {
    let repo = repo_with_grown_files(files, "g", 10);
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        format!(
            r#"version = 1
[execution]
reviewBudget = "2m"
hunkBudget = "60s"
requestTimeout = "20s"
maxAttempts = {max_attempts}
[execution.breaker]
minCalls = 1000
[[skills]]
name = "code-review"
[[routes]]
name = "gateway"
provider = "{provider}"
model = "{model}"
baseUrl = "{}"
apiKeyEnv = "{KEY_VAR}"
maxConcurrency = 2
"#,
            proxy().base_url()
        ),
    )
    .unwrap();
    (repo, cfg)
}

/// `review --json` of `repo` with the config in `cfg` (its routes name [`KEY_VAR`]).
pub(crate) fn review(repo: &Repo, cfg: &tempfile::TempDir) -> (Value, String) {
    let config = cfg.path().join("warden.toml");
    let out = repo
        .warden(&[
            "review",
            "--json",
            "--color",
            "never",
            "-c",
            config.to_str().unwrap(),
        ])
        .env(KEY_VAR, MASTER_KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{stderr}"));
    (report, stderr)
}

pub(crate) fn attempts(report: &Value) -> usize {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["attempts"].as_array().unwrap().len())
        .sum()
}

#[test]
fn through_litellm_upstream_calls_equal_warden_attempts() {
    let p = proxy();
    p.fake.script("gw-down", vec![Behavior::status(503)]);
    let (repo, cfg) = session(3, "litellm", "gw-down", 2);
    let (report, stderr) = review(&repo, &cfg);
    assert_eq!(report["summary"]["unavailable"], 3, "{report:#}\n{stderr}");
    let sent = attempts(&report);
    assert_eq!(sent, 6, "two attempts per unit");
    let upstream = p.fake.requests_for("gw-down");
    assert_eq!(
        upstream.len(),
        sent,
        "the proxy retried or fell back on its own: {} upstream calls for {sent} warden attempts",
        upstream.len()
    );
    assert!(
        !stderr.contains("x-litellm"),
        "no gateway warning on a litellm route: {stderr}"
    );
}

#[test]
fn through_litellm_answers_arrive_with_findings_and_one_call_each() {
    let p = proxy();
    p.fake.script(
        "gw-ok",
        vec![Behavior::Answer(findings_answer(json!([finding(
            11,
            "high",
            "gateway finding"
        )])))],
    );
    let (repo, cfg) = session(2, "litellm", "gw-ok", 2);
    let (report, stderr) = review(&repo, &cfg);
    assert_eq!(report["outcome"], "complete", "{report:#}\n{stderr}");
    assert_eq!(report["findings"].as_array().unwrap().len(), 2);
    assert_eq!(attempts(&report), 2);
    let upstream = p.fake.requests_for("gw-ok");
    assert_eq!(upstream.len(), 2);
    // What the proxy was asked for reached it: streaming, no retries, no fallbacks.
    assert!(upstream.iter().all(|r| r.stream));
}

#[test]
fn an_openai_route_through_litellm_is_retried_by_the_gateway_and_warden_warns_once() {
    let p = proxy();
    p.fake.script("gw-down-openai", vec![Behavior::status(503)]);
    let (repo, cfg) = session(2, "openai", "gw-down-openai", 1);
    let (report, stderr) = review(&repo, &cfg);
    let sent = attempts(&report);
    assert_eq!(sent, 2, "{report:#}");
    let upstream = p.fake.requests_for("gw-down-openai").len();
    assert!(
        upstream > sent,
        "the gateway's own retries are what the warning is about: {upstream} upstream calls for {sent} attempts"
    );
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("x-litellm-* headers"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning per run:\n{stderr}");
    assert!(
        warnings[0].contains("provider = \"litellm\""),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("`gateway`"), "{}", warnings[0]);
    // The report keeps it, naming the route.
    let reported = report["warnings"].as_array().unwrap();
    assert_eq!(reported.len(), 1, "{reported:#?}");
    assert_eq!(
        (&reported[0]["source"], &reported[0]["route"]),
        (&json!("route"), &json!("gateway"))
    );
}

/// docs/design.md section 13 against a real gateway: a deployment with LiteLLM's
/// `max_parallel_requests: 2` answers 429 beyond two requests at once. With warden's cap
/// at 8, those answers are back-pressure: every unit of a 20-unit review is reviewed,
/// well inside a 40 s budget (before, 2 of 20 were).
#[test]
fn a_gateway_limiting_parallel_requests_is_back_pressure_and_every_unit_is_reviewed() {
    let p = proxy();
    p.fake.script(
        LIMITED,
        vec![Behavior::DelayHeaders(
            std::time::Duration::from_millis(300),
            Box::new(Behavior::Answer(findings_answer(json!([])))),
        )],
    );
    let (repo, cfg) = session(20, "litellm", LIMITED, 2);
    let path = cfg.path().join("warden.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replace("maxConcurrency = 2", "maxConcurrency = 8")
        .replace("reviewBudget = \"2m\"", "reviewBudget = \"40s\"");
    std::fs::write(&path, text).unwrap();
    let started = std::time::Instant::now();
    let (report, stderr) = review(&repo, &cfg);
    let took = started.elapsed();
    assert_eq!(report["summary"]["reviewed"], 20, "{report:#}\n{stderr}");
    assert_eq!(report["outcome"], "complete", "{stderr}");
    assert_eq!(report["budgetExpired"], json!(false), "{took:?}");
    let outcomes: Vec<&str> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| u["attempts"].as_array().unwrap())
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    let limited = outcomes.iter().filter(|o| **o == "rate_limited").count();
    eprintln!(
        "gateway max_parallel_requests 2, cap 8, 20 units: {took:?}, {} attempts, {limited} rate_limited",
        outcomes.len()
    );
    // The test is about back-pressure: the gateway must have said "not now" (8 requests
    // against its 2), and each unit still ended with one answer.
    assert!(limited >= 1, "the gateway never answered 429: {outcomes:?}");
    let ok = outcomes.iter().filter(|o| **o == "ok").count();
    assert_eq!(ok, 20, "{outcomes:?}");
    assert_eq!(
        outcomes.len(),
        ok + limited,
        "only answers and 429s: {outcomes:?}"
    );
}
