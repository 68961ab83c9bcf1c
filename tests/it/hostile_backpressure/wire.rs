//! Answers of "not now" of every shape, one at a time, through the real binary.

use crate::support::fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use crate::support::review::*;
use serde_json::{Value, json};
const RATE: &str = r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
const QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;

fn ok() -> Behavior {
    Behavior::Answer(findings_answer(json!([finding(1, "high", "Kept")])))
}

fn outcomes(u: &Value) -> Vec<String> {
    u["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap().to_string())
        .collect()
}

/// `Review::config`, with integer values written as integers.
pub(super) fn configure(review: &Review, exec: &[(&str, &str)], routes: &[RouteCfg]) {
    review.config(exec, routes);
    let path = review.config_path();
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (k, v) in exec {
        if v.parse::<u64>().is_ok() {
            text = text.replace(&format!("{k} = \"{v}\""), &format!("{k} = {v}"));
        }
    }
    std::fs::write(path, text).unwrap();
}

/// One unit, one route: `first` once, then an answer with one finding.
fn once_then_ok(review: &Review, fake: &FakeProvider, model: &str, first: Behavior) -> Value {
    fake.script(model, vec![first, ok()]);
    configure(
        review,
        &[
            ("reviewBudget", "20s"),
            ("hunkBudget", "15s"),
            ("maxAttempts", "1"),
        ],
        &[route_cfg(model, "openai", fake.base_url(), false)],
    );
    let (_, v, stderr, _) = review.json(&[]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    v
}

#[test]
fn retry_after_of_every_shape_is_a_wait_and_quota_is_a_failure_whatever_it_says() {
    let fake = FakeProvider::start();
    let review = Review::new(1);
    let past = "Wed, 21 Oct 2015 07:28:00 GMT";
    // (status, headers): each a wait of at most a few seconds, then the answer;
    // maxAttempts 1, so a wait that used the attempt would fail the unit.
    let waits: Vec<(u16, Vec<(&str, &str)>)> = vec![
        (429, vec![("retry-after", "0.4")]),
        (429, vec![("retry-after", "-5")]),
        (429, vec![("retry-after", "soon")]),
        (429, vec![("retry-after", past)]),
        (429, vec![("retry-after", "0")]),
        (429, vec![("retry-after", "1"), ("retry-after", "99999999")]),
        (
            429,
            vec![("retry-after-ms", "300"), ("retry-after", "1e12")],
        ),
        (429, vec![]),
        (529, vec![("retry-after", "0.2")]),
        (529, vec![]),
        (503, vec![("retry-after", "1")]),
        (503, vec![("retry-after", past)]),
        (
            429,
            vec![
                ("x-ratelimit-limit-requests", "60"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "0.5s"),
            ],
        ),
    ];
    for (i, (code, headers)) in waits.iter().enumerate() {
        let label = format!("{code} {headers:?}");
        let model = format!("wait-{i}");
        let v = once_then_ok(
            &review,
            &fake,
            &model,
            Behavior::status_with(*code, headers, RATE),
        );
        let u = &units(&v)[0];
        assert_eq!(u["status"], "reviewed", "{label}: {u}");
        assert_eq!(
            outcomes(u).last().map(String::as_str),
            Some("ok"),
            "{label}"
        );
        assert_eq!(fake.requests_for(&model).len(), 2, "{label}");
    }
    // Exhausted quota fails at once, whatever the status and Retry-After say.
    for (i, (code, headers)) in [
        (429, vec![("retry-after", "1")]),
        (429, vec![]),
        (503, vec![("retry-after", "1")]),
        (529, vec![("retry-after", "1")]),
    ]
    .iter()
    .enumerate()
    {
        let label = format!("quota {code} {headers:?}");
        let model = format!("quota-{i}");
        let v = once_then_ok(
            &review,
            &fake,
            &model,
            Behavior::status_with(*code, headers, QUOTA),
        );
        let u = &units(&v)[0];
        assert_eq!(u["status"], "failed", "{label}: {u}");
        assert_eq!(outcomes(u), ["quota"], "{label}");
        assert_eq!(fake.requests_for(&model).len(), 1, "{label}");
    }
    // A Retry-After on a 200 or on a 500 is no back-pressure: the 200 is reviewed
    // at once, the 500 is a failure (maxAttempts 1).
    fake.answer_headers(&[("retry-after", "600")]);
    let v = once_then_ok(&review, &fake, "ok-with-retry-after", ok());
    assert_eq!(units(&v)[0]["status"], "reviewed");
    assert_eq!(fake.requests_for("ok-with-retry-after").len(), 1);
    fake.answer_headers(&[]);
    let v = once_then_ok(
        &review,
        &fake,
        "error-with-retry-after",
        Behavior::status_with(500, &[("retry-after", "1")], RATE),
    );
    assert_eq!(outcomes(&units(&v)[0]), ["unavailable"]);
    assert_eq!(units(&v)[0]["status"], "unavailable");
}

#[test]
fn an_error_field_of_null_in_a_200_is_no_error() {
    // Gateways that serialise every field write `"error": null` into normal chunks and
    // bodies: that is an answer, not an error (nor back-pressure).
    let fake = FakeProvider::start();
    let review = Review::new(1);
    let text =
        serde_json::to_string(&findings_answer(json!([finding(9, "high", "Kept")]))).unwrap();
    let stream = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}}}}],\"error\":null}}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}],\"error\":null}}\n\ndata: [DONE]\n\n"
    );
    let body = format!(
        "{{\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":{text}}},\"finish_reason\":\"stop\"}}],\"error\":null}}"
    );
    for (model, stream_on, bytes) in [("null-stream", true, stream), ("null-body", false, body)] {
        fake.script(model, vec![Behavior::OkThen(bytes)]);
        configure(
            &review,
            &[
                ("reviewBudget", "20s"),
                ("hunkBudget", "15s"),
                ("maxAttempts", "1"),
            ],
            &[route_cfg(model, "openai", fake.base_url(), stream_on)],
        );
        let (_, v, stderr, _) = review.json(&[]);
        let u = &units(&v)[0];
        assert_eq!(u["status"], "reviewed", "{model}: {u}\n{stderr}");
        assert_eq!(v["findings"].as_array().unwrap().len(), 1, "{model}");
    }
}
