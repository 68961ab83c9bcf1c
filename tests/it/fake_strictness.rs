//! What the fake provider does because the real APIs do (docs/design.md §15: a fake as strict
//! as the real API, never more lenient), and warden's side of each: OpenAI streams its
//! usage only when asked with `stream_options.include_usage`; a cost in usage comes only
//! from gateways that report one; Anthropic's forced `submit_findings` is answered with
//! that tool call, never text.

use crate::provider::route;
use crate::support::Toml;
use crate::support::fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use crate::support::review::{EVERY_WIRE, Review, units};
use serde_json::json;
use std::time::Duration;
use warden::config::ProviderKind;
use warden::prompt::Prompt;
use warden::provider::{AttemptRequest, HttpProvider, Limits, Provider};

fn request() -> AttemptRequest {
    let d = Duration::from_secs(5);
    AttemptRequest::new(
        Prompt {
            system: "system".into(),
            user: "review lines 1-20".into(),
        },
        (1, 20),
        Limits {
            connect: d,
            first_token: d,
            idle: d,
            total: d,
        },
    )
}

#[test]
fn openai_streams_ask_for_their_usage_and_a_cost_comes_only_from_a_gateway() {
    let fake = FakeProvider::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let attempt = |stream: bool| {
        let p = HttpProvider::new(
            &route("r", ProviderKind::OpenAi, "m", &fake.base_url(), stream),
            None,
            Duration::from_millis(500),
        );
        rt.block_on(p.attempt(&request()))
    };
    for stream in [true, false] {
        let a = attempt(stream);
        let usage = a.record.usage.expect("usage read");
        assert_eq!(usage.input_tokens, Some(120), "stream={stream}");
        assert_eq!(usage.cost, None, "OpenAI reports no cost (stream={stream})");
    }
    let sent = fake.requests();
    assert_eq!(sent[0].body["stream_options"]["include_usage"], true);
    assert!(sent[1].body.get("stream_options").is_none());
    // A gateway that reports its cost (OpenRouter, LiteLLM): read as the attempt's.
    fake.report_cost(0.0012);
    for stream in [true, false] {
        assert_eq!(attempt(stream).record.usage.unwrap().cost, Some(0.0012));
    }
}

#[test]
fn a_stream_without_a_usage_chunk_is_still_a_review_with_usage_unknown() {
    let fake = FakeProvider::start();
    let r = Review::new(1);
    let base = fake.base_url();
    std::fs::write(
        r.config_path(),
        Toml::new()
            .route(
                "r",
                "openai",
                &[
                    ("model", "m"),
                    ("baseUrl", &base),
                    ("stream", "true"),
                    ("params", "{ stream_options = { include_usage = false } }"),
                ],
            )
            .build(),
    )
    .unwrap();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([finding(
        11, "high", "bug"
    )]))));
    let (_, v, err, _) = r.json(&["--no-tools"]);
    assert_eq!(units(&v)[0]["status"], "reviewed", "{v}\n{err}");
    assert_eq!(v["findings"][0]["title"], "bug");
    assert_eq!(v["routes"]["r"]["inputTokens"], 0, "{v}");
}

#[test]
fn anthropic_s_forced_submit_findings_is_answered_as_the_tool_call() {
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([finding(
        11,
        "high",
        "through the tool"
    )]))));
    for (provider, stream) in EVERY_WIRE.iter().filter(|(p, _)| *p == "anthropic") {
        let r = Review::new(1);
        let model = format!("claude-{stream}");
        let (_, v, err) = r.one_route(&model, provider, fake.base_url(), *stream);
        assert_eq!(units(&v)[0]["status"], "reviewed", "{v}\n{err}");
        assert_eq!(v["findings"][0]["title"], "through the tool", "{v}");
        let sent = &fake.requests_for(&model)[0].body;
        if sent["messages"].as_array().unwrap().len() == 1 {
            assert_eq!(
                sent["tool_choice"],
                json!({"type": "tool", "name": "submit_findings"}),
                "{sent}"
            );
        }
    }
}
