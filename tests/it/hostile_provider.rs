//! A provider (or a gateway) as an attacker or a broken middlebox would be: floods,
//! absurd headers, answers of the wrong kind. The budget still holds, signals still act,
//! nothing panics, and the report is honest.

use crate::provider::route;
use crate::support::fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use crate::support::review::*;
use crate::support::{cpu_hungry, scripted};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use warden::config::{BreakerSettings, Execution, ProviderKind};
use warden::engine::{Engine, EngineRoute, Sink, UnitStatus};
use warden::prompt::Prompt;
use warden::provider::{
    AttemptRequest, HttpProvider, Limits, Outcome, Provider, ResponseCaps, Stage,
};

const MS: fn(u64) -> Duration = Duration::from_millis;

// ---- item 1: a flooding stream cannot hold the review past its budget --------------

#[test]
fn a_flooding_provider_ends_a_10s_review_within_11s_for_both_protocols() {
    let _alone = cpu_hungry();
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Flood);
    let exec = [
        ("reviewBudget", "10s"),
        ("hunkBudget", "10s"),
        ("requestTimeout", "3s"),
        ("firstTokenTimeout", "3s"),
    ];
    let review = Review::new(3);
    let cases = [
        ("openai", "openai", true, "1 MiB line cap"),
        ("anthropic", "anthropic", true, "1 MiB line cap"),
        ("openai", "openai", false, "8 MiB body cap"),
        ("anthropic", "anthropic", false, "8 MiB body cap"),
    ];
    for (model, provider, stream, cap) in cases {
        let label = format!("{model} via {provider}, stream={stream}");
        review.config(
            &exec,
            &[route_cfg(model, provider, fake.base_url(), stream)],
        );
        let (code, v, stderr, took) = review.json(&[]);
        eprintln!("flood review ({label}): {took:?} wall time");
        assert!(
            took <= Duration::from_secs(11),
            "{label}: a 10 s review took {took:?}"
        );
        assert_eq!(code, 3, "{label}: {stderr}");
        for u in units(&v) {
            assert_ne!(u["status"], "reviewed", "{label}: {u}");
            let tried = u["attempts"].as_array().unwrap();
            assert_eq!(
                tried.len(),
                1,
                "{label}: a bad response is not retried: {u}"
            );
            assert_eq!(u["status"], "failed", "{label}: {u}");
            assert_eq!(tried[0]["outcome"], "bad_response", "{label}: {u}");
            let reason = tried[0]["reason"].as_str().unwrap();
            assert!(reason.contains(cap), "{label}: {reason}");
        }
        assert_eq!(v["routes"][model]["unavailable"], 0, "{label}");
    }
}

#[test]
fn sigint_during_a_flood_exits_130_within_1s_with_the_report_written() {
    let _alone = cpu_hungry();
    for provider in ["openai", "anthropic"] {
        let fake = FakeProvider::start();
        fake.default_behavior(Behavior::Flood);
        let review = Review::new(60);
        review.config(
            &[
                ("reviewBudget", "60s"),
                ("hunkBudget", "60s"),
                ("requestTimeout", "30s"),
                ("firstTokenTimeout", "30s"),
            ],
            &[route_cfg("flood", provider, fake.base_url(), true)],
        );
        let out_file = review.cfg.path().join("report.json");
        let mut child = review
            .command(&["--json", "-o", out_file.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while fake.requests().len() < 2 && Instant::now() < until {
            std::thread::sleep(MS(2));
        }
        assert!(
            fake.requests().len() >= 2,
            "{provider}: the flood never started"
        );
        let signalled = Instant::now();
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                signalled.elapsed() < Duration::from_secs(10),
                "{provider}: still running 10 s after SIGINT"
            );
            std::thread::sleep(MS(2));
        };
        let latency = signalled.elapsed();
        eprintln!("SIGINT during a flood ({provider}): exited after {latency:?}");
        let mut stderr = String::new();
        use std::io::Read;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(130), "{provider}: {stderr}");
        assert!(
            latency <= Duration::from_secs(1),
            "{provider}: SIGINT took {latency:?}"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap())
            .expect("the report was written");
        assert_eq!(v["interrupted"], true);
        assert_eq!(units(&v).len(), 60);
        assert!(
            units(&v)
                .iter()
                .any(|u| u["status"] == "cancelled" || u["status"] == "skipped"),
            "{provider}: the review was cut short"
        );
    }
}

fn limits(first_token: Duration, total: Duration) -> Limits {
    Limits {
        connect: MS(500),
        first_token,
        idle: MS(200),
        total,
    }
}

fn request(limits: Limits) -> AttemptRequest {
    AttemptRequest {
        prompt: Prompt {
            system: "system".into(),
            user: "review lines 1-20".into(),
        },
        lines: (1, 20),
        path: None,
        limits,
        conversation: None,
        output_cap: None,
    }
}

/// Caps no flood reaches within these tests: only the clocks can end the attempt.
fn huge_caps() -> ResponseCaps {
    ResponseCaps {
        line: usize::MAX,
        event: usize::MAX,
        body: usize::MAX,
    }
}

fn flood_provider(
    fake: &FakeProvider,
    model: &str,
    kind: ProviderKind,
    stream: bool,
) -> HttpProvider {
    HttpProvider::new(
        &route(model, kind, model, &fake.base_url(), stream),
        None,
        MS(500),
    )
    .with_caps(huge_caps())
}

#[test]
fn the_request_clocks_act_within_100ms_under_a_flood_whatever_the_caps() {
    let _alone = cpu_hungry();
    let fake = FakeProvider::start();
    fake.script("bytes", vec![Behavior::Flood]);
    fake.script("events", vec![Behavior::FloodEvents]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let cases = [
            // No newline, so no token: the first-token clock.
            ("bytes", true, Stage::FirstToken, MS(400)),
            // A whole body that never ends: the total deadline.
            ("bytes", false, Stage::Total, MS(700)),
            // Every event is a token: only the total deadline is left.
            ("events", true, Stage::Total, MS(700)),
        ];
        for (model, stream, stage, at) in cases {
            let p = flood_provider(&fake, model, kind, stream);
            let a = rt.block_on(p.attempt(&request(limits(MS(400), MS(700)))));
            let r = &a.record;
            let label = format!("{kind:?} {model} stream={stream}");
            assert_eq!(r.outcome, Outcome::Timeout, "{label}: {r:?}");
            assert_eq!(r.stage, Some(stage), "{label}: {r:?}");
            assert!(
                r.duration >= at && r.duration <= at + MS(100),
                "{label}: ended after {:?}, its clock was {at:?}",
                r.duration
            );
            assert!(r.bytes > 256 * 1024, "{label}: the flood was read: {r:?}");
        }
    }
}

#[test]
fn each_cap_ends_the_attempt_as_a_bad_response_that_names_it() {
    let fake = FakeProvider::start();
    fake.script("bytes", vec![Behavior::Flood]);
    fake.script(
        "one-event",
        vec![Behavior::FloodWith("data: xxxxxxxxxxxxxxxx\n")],
    );
    fake.script("events", vec![Behavior::FloodEvents]);
    let caps = ResponseCaps {
        line: 64 * 1024,
        event: 128 * 1024,
        body: 512 * 1024,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        for (model, stream, cap) in [
            ("bytes", true, "64 KiB line cap"),
            ("one-event", true, "128 KiB event cap"),
            ("events", true, "512 KiB body cap"),
            ("bytes", false, "512 KiB body cap"),
        ] {
            let p = HttpProvider::new(
                &route(model, kind, model, &fake.base_url(), stream),
                None,
                MS(500),
            )
            .with_caps(caps);
            let a = rt.block_on(p.attempt(&request(limits(MS(5000), MS(10_000)))));
            let r = &a.record;
            let label = format!("{kind:?} {model} stream={stream}");
            assert_eq!(r.outcome, Outcome::BadResponse, "{label}: {r:?}");
            assert!(r.reason.contains(cap), "{label}: {}", r.reason);
            assert!(
                r.bytes <= 2 * 1024 * 1024,
                "{label}: read on past the cap: {r:?}"
            );
        }
    }
}

fn flood_exec() -> Execution {
    Execution {
        review_budget: MS(1000),
        hunk_budget: MS(5000),
        request_timeout: MS(5000),
        connect_timeout: MS(500),
        first_token_timeout: MS(5000),
        idle_timeout: MS(5000),
        max_attempts: 2,
        breaker: BreakerSettings::default(),
        ..Execution::default()
    }
}

/// Runs the engine over flooding routes; cancels `interrupt` after `interrupt_at`.
fn run_flooded(
    fake: &FakeProvider,
    exec: Execution,
    interrupt_at: Option<Duration>,
) -> (warden::engine::EngineReport, Duration) {
    let routes: Vec<EngineRoute> = [ProviderKind::OpenAi, ProviderKind::Anthropic]
        .into_iter()
        .map(|kind| {
            EngineRoute::new(
                Arc::new(flood_provider(fake, &format!("{kind:?}"), kind, true))
                    as Arc<dyn Provider>,
                2,
            )
        })
        .collect();
    let engine = Engine::new(routes, exec, Sink::new(|_| {}));
    let token = CancellationToken::new();
    if let Some(after) = interrupt_at {
        let t = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            t.cancel();
        });
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let report = rt.block_on(engine.run(scripted::units(6), token));
    (report, started.elapsed())
}

#[test]
fn the_review_budget_and_an_interrupt_act_within_100ms_under_a_flood() {
    let _alone = cpu_hungry();
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::FloodEvents);
    let (r, took) = run_flooded(&fake, flood_exec(), None);
    assert!(
        took <= MS(1000) + MS(100),
        "a 1 s review budget ended after {took:?}"
    );
    // The budget ended it (not the flood's caps first): the report says so.
    assert!(
        r.budget_expired,
        "the 1 s budget did not expire: {:?}",
        r.units
    );
    for u in &r.units {
        assert_ne!(u.status, UnitStatus::Reviewed, "{u:?}");
    }

    let mut exec = flood_exec();
    exec.review_budget = MS(30_000);
    let (r, took) = run_flooded(&fake, exec, Some(MS(300)));
    assert!(r.interrupted);
    assert!(
        took <= MS(300) + MS(100),
        "an interrupt at 300 ms ended the review after {took:?}"
    );
    assert!(
        r.units.iter().any(|u| u.status == UnitStatus::Cancelled),
        "{:?}",
        r.units
    );
}

// ---- item 2: absurd Retry-After values ----------------------------------------------

#[test]
fn an_absurd_retry_after_is_too_long_not_a_panic() {
    let fake = FakeProvider::start();
    fake.script(
        "fallback",
        vec![Behavior::Answer(findings_answer(json!([])))],
    );
    let review = Review::new(1);
    for (header, value) in [
        ("retry-after", "1e20"),
        ("retry-after", "18446744073709551615"),
        ("retry-after-ms", "1e20"),
        ("retry-after-ms", "18446744073709551615"),
    ] {
        let label = format!("{header}: {value}");
        let model = format!("limited-{header}-{value}");
        fake.script(
            &model,
            vec![Behavior::status_with(
                429,
                &[(header, value)],
                r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#,
            )],
        );
        // Alone, the route gives up at once: the wait is longer than any budget.
        review.config(
            &[("reviewBudget", "30s"), ("hunkBudget", "20s")],
            &[route_cfg(&model, "openai", fake.base_url(), true)],
        );
        let (code, v, stderr, _) = review.json(&[]);
        assert_eq!(code, 3, "{label}: {stderr}");
        assert_eq!(units(&v)[0]["status"], "unavailable", "{label}");
        let a = attempts(&v);
        assert_eq!(a.len(), 1, "{label}: no sleep on it, no retry: {v}");
        assert_eq!(a[0]["outcome"], "rate_limited", "{label}");
        assert_eq!(fake.requests_for(&model).len(), 1, "{label}");
        // With a fallback, the unit fails over and is reviewed.
        review.config(
            &[("reviewBudget", "30s"), ("hunkBudget", "20s")],
            &[
                route_cfg(&model, "openai", fake.base_url(), true),
                route_cfg("fallback", "anthropic", fake.base_url(), true),
            ],
        );
        let (code, v, stderr, _) = review.json(&[]);
        assert_eq!(code, 0, "{label}: {stderr}");
        assert_eq!(units(&v)[0]["status"], "reviewed", "{label}");
        assert_eq!(units(&v)[0]["route"], "fallback", "{label}");
    }
}

// ---- item 4: answers of the wrong kind ----------------------------------------------

#[test]
fn a_whole_json_answer_to_a_stream_and_cr_line_ends_are_read_for_both_protocols() {
    let answer = findings_answer(json!([finding(5, "high", "found it")]));
    let fake = FakeProvider::start();
    fake.script("whole", vec![Behavior::WholeAnswer(answer.clone())]);
    fake.script("cr", vec![Behavior::LineEnds(answer.clone(), "\r")]);
    fake.script("crlf", vec![Behavior::LineEnds(answer.clone(), "\r\n")]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for kind in [ProviderKind::OpenRouter, ProviderKind::Anthropic] {
        for model in ["whole", "cr", "crlf"] {
            let p = HttpProvider::new(
                &route(model, kind, model, &fake.base_url(), true),
                None,
                MS(500),
            );
            let a = rt.block_on(p.attempt(&request(limits(MS(1000), MS(2000)))));
            let label = format!("{kind:?} {model}");
            assert_eq!(a.record.outcome, Outcome::Ok, "{label}: {:?}", a.record);
            let ex = a.extracted.expect("findings");
            assert_eq!(ex.findings.len(), 1, "{label}");
            assert_eq!(ex.findings[0].title, "found it", "{label}");
            assert_eq!(a.record.model_answered.as_deref(), Some(model), "{label}");
        }
    }
}

#[test]
fn an_html_page_for_a_200_is_a_bad_response_and_the_unit_failed_without_a_retry() {
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Html);
    let review = Review::new(1);
    for (provider, stream) in EVERY_WIRE {
        let label = format!("{provider} stream={stream}");
        let model = format!("html-{provider}-{stream}");
        let (code, v, stderr) = review.one_route(&model, provider, fake.base_url(), stream);
        assert_eq!(code, 3, "{label}: {stderr}");
        let a = lone_bad_response(&v, &label);
        let reason = a["reason"].as_str().unwrap();
        assert!(
            reason.contains("unparseable response body") && reason.contains("502 Bad Gateway"),
            "{label}: {reason}"
        );
        assert_eq!(
            v["routes"][&model]["unavailable"], 0,
            "{label}: not a breaker failure"
        );
        assert_eq!(fake.requests_for(&model).len(), 1, "{label}");
    }
}
