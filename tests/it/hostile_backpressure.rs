//! DESIGN.md section 13 attacked as a hostile or broken provider or gateway would: answers
//! of "not now" of every shape, rate-limit headers that lie, 429 for ever, slow 429s.
//! Back-pressure stays a wait while the budget lasts, a review ends within its budget, and
//! findings once received survive. Engine cases run on tokio's paused clock against
//! scripted providers; wire cases run the real binary against the fake on loopback.

use crate::engine_policy::{Timeline, exec, run_with};
use crate::support::scripted::{Scripted, Step, units};
use std::time::Duration;
use warden::config::{Execution, Routing};
use warden::engine::{Event, UnitStatus};

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn bounces(tl: &Timeline) -> usize {
    tl.lock()
        .unwrap()
        .iter()
        .filter(|(_, e)| matches!(e, Event::BackPressure { .. }))
        .count()
}

#[tokio::test(start_paused = true)]
async fn back_pressure_without_a_retry_after_is_waited_out_not_spent_at_once() {
    // An overloaded provider answers 529 (no Retry-After) at once for its first 2 s. The
    // unit must wait for it: eight answers in 80 ms are not "waiting while the budget
    // lasts", and the review has 900 s.
    let t0 = tokio::time::Instant::now();
    let over = Scripted::new("a", move |_| {
        if t0.elapsed() < S(2) {
            Step::Overloaded(MS(10))
        } else {
            Step::Ok(S(1), 1)
        }
    });
    let (r, tl) = run_with(vec![(over.clone(), 1)], exec(), units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{u:?}");
    assert!(bounces(&tl) < 8, "{} bounces", bounces(&tl));
    assert_eq!(u.findings.len(), 1);
    assert!(r.elapsed < S(10), "{:?}", r.elapsed);
}

fn limits(tl: &Timeline, route: &str) -> Vec<usize> {
    tl.lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::LimitChanged {
                route: r, limit, ..
            } if r == route => Some(*limit),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_provider_saying_not_now_for_ever_ends_the_review_within_its_budget() {
    // 20 units, cap 4, a 30 s budget; "not now" with a Retry-After of 1 s, of 0, of none,
    // and of a month. Never a unit shown reviewed, never a hang past the budget, every
    // unit ends unavailable or skipped with a reason that says why.
    let month = warden::provider::classify::MAX_RETRY_AFTER;
    let steps = [
        ("one-second", Step::RateLimited(MS(10), S(1))),
        ("zero", Step::RateLimited(MS(10), Duration::ZERO)),
        ("none", Step::Overloaded(MS(10))),
        ("a-month", Step::RateLimited(MS(10), month)),
        ("slow-none", Step::Overloaded(S(7))),
    ];
    for (label, step) in steps {
        let a = Scripted::always("a", step);
        let e = Execution {
            review_budget: S(30),
            hunk_budget: S(20),
            ..exec()
        };
        let (r, tl) = run_with(vec![(a.clone(), 4)], e, units(20)).await;
        assert!(r.elapsed <= S(31), "{label}: {:?}", r.elapsed);
        for u in &r.units {
            assert!(
                matches!(
                    u.status,
                    UnitStatus::Unavailable | UnitStatus::Skipped | UnitStatus::Cancelled
                ),
                "{label}: {u:?}"
            );
            assert!(u.findings.is_empty());
            assert!(
                u.reason.contains("back-pressure")
                    || u.reason.contains("budget")
                    || u.reason.contains("rate limited"),
                "{label}: {}",
                u.reason
            );
        }
        // Each unit at most maxBounces answers; the limit stayed within 1..=4.
        assert!(a.calls() <= 20 * 8, "{label}: {}", a.calls());
        assert!(
            limits(&tl, "a").iter().all(|l| (1..=4).contains(l)),
            "{label}"
        );
        eprintln!("{label}: {} calls, {:?}", a.calls(), r.elapsed);
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_storm_under_auto_keeps_the_limit_within_its_cap_and_reviews_everything() {
    // Half of all answers are 429 (Retry-After 0), the rest answers. A unit refused 8
    // times in a row ends unavailable saying so (the bound of section 13: 1 in 256 at
    // this rate); every other is reviewed with its finding. The limit stays in 1..=16,
    // never more than 16 in flight.
    let a = Scripted::new("a", |n| {
        if n % 2 == 0 {
            Step::RateLimited(MS(5), Duration::ZERO)
        } else {
            Step::Ok(S(1), 1)
        }
    });
    let (r, tl) = run_with(vec![(a.clone(), 16)], exec(), units(200)).await;
    let mut reviewed = 0;
    for u in &r.units {
        if u.status == UnitStatus::Reviewed {
            reviewed += 1;
            assert_eq!(u.findings.len(), 1);
        } else {
            assert_eq!(u.status, UnitStatus::Unavailable, "{u:?}");
            assert!(u.reason.starts_with("rate limited 8 times"), "{}", u.reason);
            assert_eq!(u.attempts.len(), 8);
        }
    }
    assert!(reviewed >= 195, "{reviewed} of 200 reviewed");
    let l = limits(&tl, "a");
    assert!(
        !l.is_empty() && l.iter().all(|l| (1..=16).contains(l)),
        "{l:?}"
    );
    assert!(a.peak.load(std::sync::atomic::Ordering::SeqCst) <= 16);
    assert!(r.routes["a"].peak_in_flight <= 16);
}

#[tokio::test(start_paused = true)]
async fn a_route_saying_not_now_for_ever_hands_its_work_to_the_next_in_both_routings() {
    for routing in [Routing::Ordered, Routing::Spillover] {
        let a = Scripted::always("a", Step::RateLimited(MS(10), S(5)));
        let b = Scripted::always("b", Step::Ok(S(1), 1));
        let e = Execution {
            routing,
            review_budget: S(120),
            ..exec()
        };
        let (r, _) = run_with(vec![(a.clone(), 2), (b.clone(), 2)], e, units(20)).await;
        for u in &r.units {
            assert_eq!(u.status, UnitStatus::Reviewed, "{routing:?}: {u:?}");
            assert_eq!(u.route.as_deref(), Some("b"), "{routing:?}");
            assert_eq!(u.findings.len(), 1);
        }
        // a is asked again only when its pause ends: 20 units × 1 s on b at 2 at once is
        // 10 s, so at most a few 5 s pauses.
        assert!(a.calls() <= 2 * (10 / 5 + 2), "{routing:?}: {}", a.calls());
    }
}

// ---- on the wire: the real binary against the fake on loopback -----------------------

mod wire {
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
}

mod wire_bounds {
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
            assert!(
                first.hung_up_at.is_some(),
                "{model}: warden read the body to its end"
            );
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
                "openrouter-past",
                vec![
                    ("X-RateLimit-Limit", "20"),
                    ("X-RateLimit-Remaining", "0"),
                    ("X-RateLimit-Reset", "1000"),
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
}
