//! Upstream "not now" and exhausted quota relayed by a real LiteLLM proxy: LiteLLM wraps
//! the upstream's error in its own (`litellm.RateLimitError: ...`), and warden must still
//! tell a quota (a failure) from a rate limit (a wait).

use super::wire::configure;
use crate::support::fake_provider::{Behavior, finding, findings_answer};
use crate::support::litellm::{MASTER_KEY, proxy};
use crate::support::review::*;
use serde_json::json;

const QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
const AZURE: &str = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}"#;

#[test]
fn through_litellm_quota_still_fails_and_a_rate_limit_naming_quota_is_still_a_wait() {
    let gw = proxy();
    let review = Review::new(1);
    let ok = Behavior::Answer(findings_answer(json!([finding(9, "high", "Kept")])));
    gw.fake.script(
        "gw-quota",
        vec![Behavior::status_with(429, &[("retry-after", "1")], QUOTA)],
    );
    gw.fake.script(
        "gw-azure-429",
        vec![
            Behavior::status_with(429, &[("retry-after", "1")], AZURE),
            ok,
        ],
    );
    for (model, status, outcomes) in [
        ("gw-quota", "failed", vec!["quota"]),
        ("gw-azure-429", "reviewed", vec!["rate_limited", "ok"]),
    ] {
        configure(
            &review,
            &[
                ("reviewBudget", "60s"),
                ("hunkBudget", "40s"),
                ("maxAttempts", "1"),
            ],
            &[route_cfg(model, "litellm", gw.base_url(), true)],
        );
        let out = review
            .command(&["--json"])
            .env(KEY_VAR, MASTER_KEY)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{model}: no report ({e}): {stderr}"));
        let u = &units(&v)[0];
        let got: Vec<&str> = u["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["outcome"].as_str().unwrap())
            .collect();
        eprintln!("{model}: {}", u["attempts"][0]["reason"]);
        assert_eq!(u["status"], status, "{model}: {u}\n{stderr}");
        assert_eq!(got, outcomes, "{model}: {u}");
    }
}
