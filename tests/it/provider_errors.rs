//! Issue 36, item 5 (docs/design.md §15): a provider's error shows the provider's own message
//! in the unit's reason and in `-v`, redacted, escaped and capped, so that a bad key at a
//! gateway reads as what it is (auth, not retried), whatever status the gateway wrapped
//! it in. Against the fake provider over real HTTP and the binary.

use crate::support::fake_provider::{Behavior, FakeProvider};
use crate::support::review::*;

/// LiteLLM's answer to a bad proxy key (its own words and shape).
const LITELLM_BAD_KEY: &str = r#"{"error":{"message":"Authentication Error, Invalid proxy server token passed. Received API Key = sk-...0123, Key Hash (Token) =7f3e. Unable to find token in cache or `LiteLLM_VerificationTokenTable`","type":"auth_error","param":"None","code":"401"}}"#;

/// LiteLLM relaying an upstream's bad key as a 500 (an "intermittent" outage, read by
/// status alone).
const UPSTREAM_BAD_KEY_500: &str = r#"{"error":{"message":"litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided: sk-upstr**********. You can find your API key at the provider's dashboard.","type":null,"param":null,"code":"500"}}"#;

fn one(
    fake: &FakeProvider,
    model: &str,
    b: Behavior,
    stream: bool,
) -> (i32, serde_json::Value, String) {
    fake.script(model, vec![b]);
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
        &[route_cfg(model, "litellm", fake.base_url(), stream)],
    );
    let (code, v, stderr, _) = review.json(&["-v"]);
    (code, v, stderr)
}

#[test]
fn a_bad_key_at_a_gateway_reads_as_what_it_is_in_the_reason_and_in_verbose_output() {
    let fake = FakeProvider::start();
    let cases = [
        (
            "gw-401",
            Behavior::status_with(401, &[], LITELLM_BAD_KEY),
            "Authentication Error, Invalid proxy server token",
        ),
        (
            "gw-500-auth",
            Behavior::status_with(500, &[], UPSTREAM_BAD_KEY_500),
            "Incorrect API key provided",
        ),
        (
            "gw-stream-401",
            Behavior::OkThen(
                "data: {\"error\":{\"code\":401,\"message\":\"No auth credentials found\"}}\n\n"
                    .into(),
            ),
            "No auth credentials found",
        ),
    ];
    for (model, behavior, words) in cases {
        let (code, v, stderr) = one(&fake, model, behavior, true);
        let u = &units(&v)[0];
        assert_eq!(u["status"], "failed", "{model}: {u}");
        let tried = u["attempts"].as_array().unwrap();
        assert_eq!(tried.len(), 1, "{model}: a bad key is not retried: {u}");
        assert_eq!(tried[0]["outcome"], "auth", "{model}: {u}");
        let reason = u["reason"].as_str().unwrap();
        assert!(
            reason.contains(words),
            "{model}: the provider's words: {reason}"
        );
        assert!(stderr.contains(words), "{model}: -v shows them: {stderr}");
        // A setup error: exit 2 names it (not the weather of exit 3).
        assert_eq!(code, 2, "{model}: {stderr}");
    }
}

#[test]
fn the_providers_message_is_redacted_capped_and_escaped() {
    let fake = FakeProvider::start();
    let long = "x".repeat(5000);
    let body = format!(
        r#"{{"error":{{"message":"bad request for key {KEY}\n::error::forged @maintainers <b>bold</b> {long}","type":"invalid_request_error"}}}}"#
    );
    let (_, v, stderr) = one(
        &fake,
        "gw-hostile",
        Behavior::status_with(400, &[], &body),
        false,
    );
    let u = &units(&v)[0];
    let reason = u["reason"].as_str().unwrap();
    assert!(
        !reason.contains(KEY) && !stderr.contains(KEY),
        "redacted: {reason}"
    );
    assert!(reason.contains("[redacted]"), "{reason}");
    assert!(
        reason.chars().count() <= 600,
        "capped: {} chars",
        reason.chars().count()
    );
    let a = &u["attempts"][0]["reason"];
    // 300 characters and the ellipsis that says it was cut.
    assert!(
        a.as_str().unwrap().chars().count() <= 301,
        "attempt reason capped: {a}"
    );
    assert!(
        !stderr.lines().any(|l| l.trim_start().starts_with("::")),
        "no workflow command in -v output: {stderr}"
    );
}
