//! Rate-limit headers of every dialect, and of providers that lie.

use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    h
}

fn now() -> SystemTime {
    // 2026-12-01T15:00:00Z
    UNIX_EPOCH + Duration::from_secs(1_796_137_200)
}

fn w(limit: Option<u64>, remaining: u64, ms: u64) -> Window {
    Window {
        limit,
        remaining,
        reset_after: Duration::from_millis(ms),
    }
}

#[test]
fn go_durations() {
    let ms = |s: &str| go_duration(s).map(|d| d.as_millis());
    assert_eq!(ms("1s"), Some(1000));
    assert_eq!(ms("6m0s"), Some(360_000));
    assert_eq!(ms("20ms"), Some(20));
    assert_eq!(ms("1h2m3.5s"), Some(3_723_500));
    assert_eq!(ms("0.5s"), Some(500));
    assert_eq!(ms("0"), Some(0));
    assert_eq!(ms("2"), Some(2000), "a bare number is seconds");
    assert_eq!(go_duration("1500us"), Some(Duration::from_micros(1500)));
    assert_eq!(go_duration("1500µs"), Some(Duration::from_micros(1500)));
    assert_eq!(go_duration("7ns"), Some(Duration::from_nanos(7)));
    for bad in [
        "", "-1s", "+1s", "s", "1x", "1.2.3s", "1s5", "ms", ".s", "1 s", "NaN", "inf", "1e3s",
        "１s",
    ] {
        assert_eq!(go_duration(bad), None, "{bad:?}");
    }
    assert_eq!(
        go_duration("99999999999999999999999h"),
        Some(Duration::MAX),
        "too long to represent is the longest, not a panic"
    );
}

#[test]
fn openai_and_litellm_headers() {
    let h = headers(&[
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-remaining-requests", "59"),
        ("x-ratelimit-reset-requests", "1s"),
        ("x-ratelimit-limit-tokens", "150000"),
        ("x-ratelimit-remaining-tokens", "149984"),
        ("x-ratelimit-reset-tokens", "6m0s"),
    ]);
    let (info, warning) = parse(&h, now());
    assert_eq!(warning, None);
    assert_eq!(
        info,
        Some(RateLimitInfo {
            requests: Some(w(Some(60), 59, 1000)),
            tokens: Some(w(Some(150_000), 149_984, 360_000)),
        })
    );
}

#[test]
fn anthropic_headers_with_rfc3339_resets() {
    let h = headers(&[
        ("anthropic-ratelimit-requests-limit", "50"),
        ("anthropic-ratelimit-requests-remaining", "0"),
        ("anthropic-ratelimit-requests-reset", "2026-12-01T15:00:12Z"),
        ("anthropic-ratelimit-input-tokens-limit", "40000"),
        ("anthropic-ratelimit-input-tokens-remaining", "39000"),
        (
            "anthropic-ratelimit-input-tokens-reset",
            "2026-12-01T15:00:01.5Z",
        ),
        ("anthropic-ratelimit-output-tokens-limit", "8000"),
        ("anthropic-ratelimit-output-tokens-remaining", "7000"),
        (
            "anthropic-ratelimit-output-tokens-reset",
            "2026-12-01T15:00:03+00:00",
        ),
        ("retry-after", "12"),
    ]);
    let (info, warning) = parse(&h, now());
    assert_eq!(warning, None);
    let info = info.unwrap();
    assert_eq!(info.requests, Some(w(Some(50), 0, 12_000)));
    assert_eq!(
        info.tokens,
        Some(w(Some(8000), 7000, 3000)),
        "without a combined tokens window, the tighter of input and output"
    );

    let h = headers(&[
        ("anthropic-ratelimit-tokens-limit", "48000"),
        ("anthropic-ratelimit-tokens-remaining", "47000"),
        ("anthropic-ratelimit-tokens-reset", "2026-12-01T14:59:00Z"),
        ("anthropic-ratelimit-output-tokens-limit", "8000"),
        ("anthropic-ratelimit-output-tokens-remaining", "10"),
        (
            "anthropic-ratelimit-output-tokens-reset",
            "2026-12-01T15:00:03Z",
        ),
    ]);
    let (info, _) = parse(&h, now());
    assert_eq!(
        info.unwrap().tokens,
        Some(w(Some(48_000), 47_000, 0)),
        "the combined window wins; a reset in the past is now"
    );
}

#[test]
fn instants_are_read_against_the_answers_own_date() {
    // The server's clock is in 2015; its resets are 12 s and 2.5 s after its Date.
    let date = "Wed, 21 Oct 2015 07:28:00 GMT";
    let sent = httpdate::parse_http_date(date).unwrap();
    let ms = (sent.duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(2500))
        .as_millis()
        .to_string();
    let h = headers(&[
        ("date", date),
        ("anthropic-ratelimit-requests-remaining", "0"),
        ("anthropic-ratelimit-requests-reset", "2015-10-21T07:28:12Z"),
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", &ms),
    ]);
    let at = answer_time(&h, now());
    assert_eq!(at, sent);
    let (info, warning) = parse(&h, at);
    assert_eq!(warning, None);
    assert_eq!(info.unwrap().requests, Some(w(None, 0, 12_000)));
    let h = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", &ms)]);
    assert_eq!(
        parse(&h, answer_time(&h, sent)).0.unwrap().requests,
        Some(w(None, 0, 2500))
    );
    // No Date, or garbage: when it arrived.
    assert_eq!(answer_time(&headers(&[("date", "soon")]), now()), now());
    assert_eq!(answer_time(&HeaderMap::new(), now()), now());
}

#[test]
fn openrouter_headers_with_epoch_resets() {
    let at_ms = (now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(2500))
        .as_millis()
        .to_string();
    let h = headers(&[
        ("X-RateLimit-Limit", "20"),
        ("X-RateLimit-Remaining", "3"),
        ("X-RateLimit-Reset", &at_ms),
    ]);
    let (info, warning) = parse(&h, now());
    assert_eq!(warning, None);
    assert_eq!(
        info,
        Some(RateLimitInfo {
            requests: Some(w(Some(20), 3, 2500)),
            tokens: None,
        })
    );
    let at_s = (now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 30).to_string();
    let h = headers(&[("x-ratelimit-remaining", "3"), ("x-ratelimit-reset", &at_s)]);
    assert_eq!(
        parse(&h, now()).0.unwrap().requests,
        Some(w(None, 3, 30_000)),
        "epoch seconds are read as seconds"
    );
    for (v, secs) in [("60", 60), ("0", 0), ("1", 1), ("599", 599)] {
        let h = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", v)]);
        assert_eq!(
            parse(&h, now()).0.unwrap().requests,
            Some(w(None, 0, secs * 1000)),
            "a small reset is seconds from now, not 1970: {v}"
        );
    }
    rejected(
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "3600"),
        ],
        "further away",
    );
}

#[test]
fn no_headers_or_half_a_window_is_nothing_and_no_warning() {
    assert_eq!(parse(&HeaderMap::new(), now()), (None, None));
    let h = headers(&[
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-remaining-requests", "59"),
    ]);
    assert_eq!(parse(&h, now()), (None, None));
}

fn rejected(pairs: &[(&str, &str)], names: &str) {
    let (info, warning) = parse(&headers(pairs), now());
    assert_eq!(info, None, "{pairs:?}");
    let warning = warning.unwrap_or_else(|| panic!("no warning for {pairs:?}"));
    assert!(warning.contains(names), "{warning}");
}

fn openai(limit: &str, remaining: &str, reset: &str) -> Vec<(&'static str, String)> {
    vec![
        ("x-ratelimit-limit-requests", limit.to_string()),
        ("x-ratelimit-remaining-requests", remaining.to_string()),
        ("x-ratelimit-reset-requests", reset.to_string()),
    ]
}

fn rejected_openai(limit: &str, remaining: &str, reset: &str, names: &str) {
    let pairs = openai(limit, remaining, reset);
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    rejected(&pairs, names);
}

#[test]
fn garbage_and_huge_counts_are_dropped_with_a_warning() {
    for bad in [
        "-1",
        "fast",
        "1.5",
        "",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999",
        "1000000000001",
    ] {
        rejected_openai("60", bad, "1s", "x-ratelimit-remaining-requests");
        rejected_openai(bad, "1", "1s", "x-ratelimit-limit-requests");
    }
    for bad in ["-1s", "soon", "1y", "NaN", ""] {
        rejected_openai("60", "1", bad, "x-ratelimit-reset-requests");
    }
}

#[test]
fn lying_windows_are_dropped_with_a_warning() {
    // An hour away for a 60-a-minute limit.
    rejected_openai("60", "0", "1h0m0s", "further away than the 10m0s");
    rejected_openai("60", "0", "99999999999999999999h", "further away");
    rejected_openai("60", "61", "1s", "more remaining than the limit of 60");
    rejected_openai("0", "0", "1s", "a limit of 0 allows nothing");
    rejected(
        &[
            ("anthropic-ratelimit-tokens-limit", "0"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-12-01T15:00:01Z"),
        ],
        "anthropic-ratelimit-tokens-limit",
    );
    rejected(
        &[
            ("anthropic-ratelimit-requests-remaining", "1"),
            ("anthropic-ratelimit-requests-reset", "2026-12-01T16:00:00Z"),
        ],
        "anthropic-ratelimit-requests-reset",
    );
    rejected(
        &[
            ("anthropic-ratelimit-requests-remaining", "1"),
            ("anthropic-ratelimit-requests-reset", "tomorrow"),
        ],
        "does not parse",
    );
    rejected(
        &[
            ("x-ratelimit-remaining", "1"),
            ("x-ratelimit-reset", "18446744073709551615"),
        ],
        "x-ratelimit-reset",
    );
    rejected(
        &[
            ("x-ratelimit-remaining", "1"),
            ("x-ratelimit-reset", "-1700000000000"),
        ],
        "does not parse",
    );
}

#[test]
fn a_bad_window_leaves_the_good_one_and_a_long_value_is_not_echoed() {
    let long = "9".repeat(5000);
    let h = headers(&[
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-remaining-requests", &long),
        ("x-ratelimit-reset-requests", "1s"),
        ("x-ratelimit-limit-tokens", "1000"),
        ("x-ratelimit-remaining-tokens", "10"),
        ("x-ratelimit-reset-tokens", "20ms"),
    ]);
    let (info, warning) = parse(&h, now());
    assert_eq!(
        info,
        Some(RateLimitInfo {
            requests: None,
            tokens: Some(w(Some(1000), 10, 20)),
        })
    );
    let warning = warning.unwrap();
    assert!(warning.len() < 300, "{warning}");
    assert!(
        warning.contains("x-ratelimit-remaining-requests"),
        "{warning}"
    );
}

#[test]
fn many_repeated_headers_read_the_first_only() {
    let mut h = headers(&[
        ("x-ratelimit-remaining-requests", "5"),
        ("x-ratelimit-reset-requests", "1s"),
    ]);
    for i in 0..10_000 {
        h.append(
            "x-ratelimit-remaining-requests",
            i.to_string().parse().unwrap(),
        );
        h.append(
            reqwest::header::HeaderName::from_bytes(format!("x-junk-{i}").as_bytes()).unwrap(),
            "x".parse().unwrap(),
        );
    }
    assert_eq!(parse(&h, now()).0.unwrap().requests, Some(w(None, 5, 1000)));
}
