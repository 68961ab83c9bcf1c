//! Slow, huge and endless "not now", lying windows and findings that must survive,
//! through the real binary: bounded by the budget, honest in the report.

use super::wire::configure;
use crate::support::fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use crate::support::review::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_slow_or_huge_429_body_is_capped_and_the_review_still_ends() {
    let fake = FakeProvider::start();
    let review = Review::new(1);
    let cases = [
        (
            "trickle",
            Behavior::StatusTrickle {
                code: 429,
                headers: vec![("retry-after".into(), "1".into())],
                every: Duration::from_millis(200),
            },
        ),
        (
            "huge",
            Behavior::StatusHuge {
                code: 429,
                headers: vec![("retry-after".into(), "1".into())],
                bytes: 50 * 1024 * 1024,
            },
        ),
    ];
    for (model, first) in cases {
        fake.script(
            model,
            vec![
                first,
                Behavior::Answer(findings_answer(json!([finding(1, "high", "Kept")]))),
            ],
        );
        configure(
            &review,
            &[
                ("reviewBudget", "30s"),
                ("hunkBudget", "20s"),
                ("requestTimeout", "10s"),
                ("idleTimeout", "2s"),
                ("maxAttempts", "1"),
            ],
            &[route_cfg(model, "openai", fake.base_url(), true)],
        );
        let (_, v, stderr, _) = review.json(&[]);
        let u = &units(&v)[0];
        assert_eq!(u["status"], "reviewed", "{model}: {u}\n{stderr}");
        let a = &u["attempts"][0];
        assert_eq!(a["outcome"], "rate_limited", "{model}: {a}");
        // Cut by the idle limit (2 s), not held to the request's 10 s deadline.
        let took = a["durationMs"].as_u64().unwrap();
        assert!(took < a["deadlineMs"].as_u64().unwrap(), "{model}: {a}");
        let first = &fake.requests_for(model)[0];
        if model == "trickle" {
            // A body that never ends: only warden's hang-up ends it.
            assert!(first.hung_up_at.is_some(), "{model}: warden kept reading");
        }
        assert!(first.closed(), "{model}");
        eprintln!("{model}: the 429 took {took} ms to read");
    }
}

/// Three units on one route (one at a time) whose every answer carries `headers`.
fn three_answers_with(
    fake: &FakeProvider,
    model: &str,
    headers: &[(&str, &str)],
) -> (Review, serde_json::Value, String) {
    let review = Review::new(3);
    fake.script(
        model,
        vec![Behavior::Answer(findings_answer(json!([finding(
            1, "high", "Kept"
        )])))],
    );
    fake.answer_headers(headers);
    configure(
        &review,
        &[("reviewBudget", "20s"), ("hunkBudget", "15s")],
        &[route_cfg(model, "openai", fake.base_url(), true)],
    );
    let (_, v, stderr, _) = review.json(&[]);
    (review, v, stderr)
}

#[test]
fn rate_limit_headers_that_lie_are_dropped_with_one_warning_and_pace_nothing() {
    let fake = FakeProvider::start();
    let req = |l: &'static str, r: &'static str, s: &'static str| {
        vec![
            ("x-ratelimit-limit-requests", l),
            ("x-ratelimit-remaining-requests", r),
            ("x-ratelimit-reset-requests", s),
        ]
    };
    let long = "7".repeat(100 * 1024);
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("an-hour", req("60", "0", "1h0m0s")),
        ("negative", req("60", "0", "-1s")),
        ("limit-zero", req("0", "0", "1s")),
        ("more-than-limit", req("10", "100", "1s")),
        ("rfc3339-in-openai", req("60", "0", "2026-12-01T15:00:00Z")),
        ("epoch-in-openai", req("60", "0", "1796137200000")),
        (
            "duration-in-anthropic",
            vec![
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "6m0s"),
            ],
        ),
        (
            "duration-in-openrouter",
            vec![
                ("X-RateLimit-Limit", "20"),
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", "1h2m3.5s"),
            ],
        ),
        (
            "a-100k-value",
            vec![
                ("x-ratelimit-limit-requests", "60"),
                ("x-ratelimit-remaining-requests", long.as_str()),
                ("x-ratelimit-reset-requests", "1s"),
            ],
        ),
    ];
    for (model, headers) in cases {
        let (_, v, stderr) = three_answers_with(&fake, model, &headers);
        for u in units(&v) {
            assert_eq!(u["status"], "reviewed", "{model}: {u}\n{stderr}");
        }
        assert_eq!(fake.requests_for(model).len(), 3, "{model}");
        let warned = stderr.matches("ignored rate-limit header").count();
        assert_eq!(warned, 1, "{model}: once per run\n{stderr}");
        assert!(stderr.len() < 20_000, "{model}: the long value was echoed");
    }
    fake.answer_headers(&[]);
}

#[test]
fn short_true_windows_in_every_format_pace_and_every_unit_is_reviewed() {
    // Resets of 0 s, 1 ms, 20 ms, 0.5 s; tokens at 0 for ever (each answer says so
    // again) with a window smaller than one attempt: slow, never stuck.
    let fake = FakeProvider::start();
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "zero",
            vec![
                ("x-ratelimit-limit-requests", "60"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "0s"),
            ],
        ),
        (
            "one-ms",
            vec![
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "1ms"),
            ],
        ),
        (
            "half-second",
            vec![
                ("x-ratelimit-limit-requests", "2"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "0.5s"),
            ],
        ),
        (
            "tokens-none-left",
            vec![
                ("x-ratelimit-limit-tokens", "10"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "20ms"),
            ],
        ),
        (
            "seconds-from-now",
            vec![
                ("x-ratelimit-limit", "2"),
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1"),
            ],
        ),
        (
            "openrouter-past",
            vec![
                ("X-RateLimit-Limit", "20"),
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", "1600000000000"),
            ],
        ),
    ];
    for (model, headers) in cases {
        let (_, v, stderr) = three_answers_with(&fake, model, &headers);
        for u in units(&v) {
            assert_eq!(u["status"], "reviewed", "{model}: {u}\n{stderr}");
        }
        assert_eq!(fake.requests_for(model).len(), 3, "{model}");
        assert!(
            !stderr.contains("ignored rate-limit header"),
            "{model}: {stderr}"
        );
    }
    fake.answer_headers(&[]);
}

#[test]
fn a_thousand_headers_is_an_honest_failure_not_a_hang() {
    let fake = FakeProvider::start();
    let names: Vec<String> = (0..1000).map(|i| format!("x-junk-{i}")).collect();
    let headers: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    let (_, v, stderr) = three_answers_with(&fake, "many", &headers);
    for u in units(&v) {
        eprintln!("{}", u);
        assert_ne!(u["status"], "reviewed", "{u}\n{stderr}");
    }
    fake.answer_headers(&[]);
}

#[test]
fn findings_received_survive_a_verification_pass_that_is_told_not_now() {
    // The review answers two findings; every later answer (the verification) is "not
    // now": 429 with a Retry-After, 429 without, 529. Both findings stay, unverified,
    // and the review is complete.
    let fake = FakeProvider::start();
    let review = Review::new(1);
    let (two, _) = crate::support::fake_provider::real_bug_and_false_alarm();
    let rate = r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
    for (model, not_now) in [
        (
            "ra",
            Behavior::status_with(429, &[("retry-after", "1")], rate),
        ),
        ("none", Behavior::status_with(429, &[], rate)),
        ("overloaded", Behavior::status_with(529, &[], rate)),
    ] {
        fake.script(model, vec![Behavior::Answer(two.clone()), not_now]);
        configure(
            &review,
            &[("reviewBudget", "12s"), ("hunkBudget", "10s")],
            &[route_cfg(model, "openai", fake.base_url(), true)],
        );
        let path = review.config_path();
        let text = std::fs::read_to_string(&path).unwrap().replacen(
            "version = 1\n",
            "version = 1\n[defaults.verification]\nenabled = true\n",
            1,
        );
        std::fs::write(&path, text).unwrap();
        let (code, v, stderr, _) = review.json(&[]);
        assert_eq!(code, 1, "{model}: {stderr}");
        assert_eq!(v["outcome"], "complete", "{model}");
        let f = v["findings"].as_array().unwrap();
        assert_eq!(f.len(), 2, "{model}: {v}");
        assert!(
            f.iter().all(|f| f["verification"] == "unverified"),
            "{model}"
        );
        assert!(
            fake.requests_for(model).len() >= 2,
            "{model}: verification was asked"
        );
        assert_eq!(
            v["verification"]["unverified"], 2,
            "{model}: {}",
            v["verification"]
        );
    }
}

#[test]
fn a_window_spent_past_the_budget_ends_the_waiting_units_at_once_naming_the_headers() {
    // Every answer: no request left for 10 minutes (the longest window warden paces
    // by). The first unit is reviewed; the others cannot start within a 20 s budget:
    // they end at once, not at the budget, and say it was the rate-limit headers.
    let fake = FakeProvider::start();
    let headers = [
        ("x-ratelimit-limit-requests", "100"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "10m0s"),
    ];
    let (_, v, stderr) = three_answers_with(&fake, "spent", &headers);
    let u = units(&v);
    assert_eq!(
        u.iter().filter(|u| u["status"] == "reviewed").count(),
        1,
        "{stderr}"
    );
    for u in u.iter().filter(|u| u["status"] != "reviewed") {
        let reason = u["reason"].as_str().unwrap();
        assert!(reason.contains("rate-limit headers"), "{reason}");
        assert!(!reason.contains("Retry-After"), "{reason}");
    }
    assert_eq!(fake.requests_for("spent").len(), 1);
    assert!(
        v["durationMs"].as_u64().unwrap() < 20_000,
        "waited for the budget"
    );
    fake.answer_headers(&[]);
}

#[test]
fn the_binary_ends_a_review_told_not_now_for_ever_within_its_budget() {
    let rate = r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
    let cases = [
        ("bare", Behavior::status_with(429, &[], rate)),
        (
            "second",
            Behavior::status_with(429, &[("retry-after", "1")], rate),
        ),
        (
            "far",
            Behavior::status_with(429, &[("retry-after", "1e12")], rate),
        ),
        (
            "trickle",
            Behavior::StatusTrickle {
                code: 529,
                headers: vec![],
                every: Duration::from_millis(300),
            },
        ),
    ];
    let fake = FakeProvider::start();
    let review = Review::new(4);
    for (model, not_now) in cases {
        fake.script(model, vec![not_now]);
        configure(
            &review,
            &[
                ("reviewBudget", "5s"),
                ("hunkBudget", "4s"),
                ("idleTimeout", "2s"),
            ],
            &[route_cfg(model, "anthropic", fake.base_url(), true)],
        );
        let (code, v, stderr, _) = review.json(&[]);
        assert_eq!(code, 3, "{model}: {stderr}");
        for u in units(&v) {
            let status = u["status"].as_str().unwrap();
            assert!(
                ["unavailable", "skipped", "cancelled"].contains(&status),
                "{model}: {u}"
            );
            assert!(u["findings"].as_array().is_none_or(Vec::is_empty));
            assert!(!u["reason"].as_str().unwrap().is_empty(), "{model}: {u}");
        }
        let took = v["durationMs"].as_u64().unwrap();
        assert!(took <= 6000, "{model}: {took} ms for a 5 s budget");
        eprintln!(
            "{model}: {took} ms, {} requests",
            fake.requests_for(model).len()
        );
    }
}

#[test]
fn not_now_as_the_first_event_of_a_200_is_a_wait_and_after_content_a_failure() {
    // Anthropic streams `overloaded_error` and `rate_limit_error` inside a 200;
    // OpenRouter and LiteLLM stream their upstream's 429 the same way. Before any
    // content that is "not now": maxAttempts 1 still reviews the unit.
    let fake = FakeProvider::start();
    let review = Review::new(1);
    let anthropic = |kind: &str| {
        format!(
            "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"{kind}\",\"message\":\"Overloaded\"}}}}\n\n"
        )
    };
    let openai = |code: &str| {
        format!("data: {{\"error\":{{\"message\":\"upstream said no\",\"code\":{code}}}}}\n\n")
    };
    let cases = [
        (
            "a-overloaded",
            "anthropic",
            true,
            anthropic("overloaded_error"),
        ),
        ("a-rate", "anthropic", true, anthropic("rate_limit_error")),
        (
            "a-body",
            "anthropic",
            false,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        ),
        ("o-429", "openai", true, openai("429")),
        ("o-code", "openai", true, openai("\"rate_limit_exceeded\"")),
        (
            "o-body",
            "openai",
            false,
            r#"{"error":{"message":"Rate limit reached","code":429}}"#.into(),
        ),
    ];
    for (model, provider, stream, first) in cases {
        fake.script(
            model,
            vec![
                Behavior::OkThen(first),
                Behavior::Answer(findings_answer(json!([finding(1, "high", "Kept")]))),
            ],
        );
        configure(
            &review,
            &[
                ("reviewBudget", "20s"),
                ("hunkBudget", "15s"),
                ("maxAttempts", "1"),
            ],
            &[route_cfg(model, provider, fake.base_url(), stream)],
        );
        let (_, v, stderr, _) = review.json(&[]);
        let u = &units(&v)[0];
        assert_eq!(u["status"], "reviewed", "{model}: {u}\n{stderr}");
        assert_eq!(u["attempts"].as_array().unwrap().len(), 2, "{model}");
    }
    // After content, the model worked: an error then is a failure, not a wait.
    fake.script(
        "late",
        vec![Behavior::MidStreamErrorWith("Overloaded".into())],
    );
    configure(
        &review,
        &[
            ("reviewBudget", "20s"),
            ("hunkBudget", "15s"),
            ("maxAttempts", "1"),
        ],
        &[route_cfg("late", "anthropic", fake.base_url(), true)],
    );
    let (_, v, _, _) = review.json(&[]);
    assert_eq!(units(&v)[0]["status"], "unavailable", "{v}");
    assert_eq!(fake.requests_for("late").len(), 1);
}

#[test]
fn findings_of_a_reviewed_unit_survive_the_next_units_endless_429() {
    // One at a time: the first unit is reviewed with a finding, then the provider says
    // "not now" for ever. The finding is in the report; the other units say why not.
    let fake = FakeProvider::start();
    let review = Review::new(3);
    let rate = r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
    fake.script(
        "then-429",
        vec![
            Behavior::Answer(findings_answer(json!([finding(9, "high", "Kept")]))),
            Behavior::status_with(429, &[("retry-after", "1")], rate),
        ],
    );
    configure(
        &review,
        &[("reviewBudget", "6s"), ("hunkBudget", "5s")],
        &[route_cfg("then-429", "openai", fake.base_url(), true)],
    );
    let (code, v, stderr, _) = review.json(&[]);
    assert_eq!(code, 1, "a finding and units not reviewed: {stderr}");
    let titles: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Kept"], "{v}");
    let statuses: Vec<&str> = units(&v)
        .iter()
        .map(|u| u["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "reviewed").count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(v["outcome"], "partial", "{}", v["outcome"]);
}
