//! Error classification (docs/providers.md, "Classification used by warden"): every HTTP
//! status and error body becomes one attempt outcome.

use super::Limits;
use super::attempt::{Outcome, Stage};
use crate::config::format_duration;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// How much of a provider's text a reason may carry before redaction; the reason is cut
/// shorter only after the key was redacted (see `secret::clean_reason`).
pub(crate) const MESSAGE_CHARS: usize = 2000;

/// A failed attempt, before it is stamped into a record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    /// How the attempt ended.
    pub(crate) outcome: Outcome,
    /// Which clock ended a timeout.
    pub(crate) stage: Option<Stage>,
    /// Why, for people.
    pub(crate) reason: String,
    /// A rate limit's Retry-After (clamped).
    pub(crate) retry_after: Option<Duration>,
    /// "Not now" before any model work (see `AttemptRecord::backpressure`).
    pub(crate) backpressure: bool,
    /// The address a connection could not be made to (see `AttemptRecord::unreachable`).
    pub(crate) unreachable: Option<Box<str>>,
}

impl Failure {
    /// A failure with this outcome and reason.
    pub fn new(outcome: Outcome, reason: impl Into<String>) -> Self {
        Failure {
            outcome,
            stage: None,
            reason: reason.into(),
            retry_after: None,
            backpressure: false,
            unreachable: None,
        }
    }

    /// The timeout of `stage`, with the reason every provider gives for it (HTTP and the
    /// simulator say the same thing about the same clock).
    pub fn timeout(stage: Stage, limits: &Limits) -> Self {
        let reason = match stage {
            Stage::Connect => format!(
                "could not connect within {}",
                format_duration(limits.connect)
            ),
            Stage::FirstToken => format!("no token within {}", format_duration(limits.first_token)),
            Stage::Idle => format!("no token for {} (idle limit)", format_duration(limits.idle)),
            Stage::Total => format!(
                "no complete answer within the {} deadline",
                format_duration(limits.total)
            ),
        };
        Failure {
            stage: Some(stage),
            ..Failure::new(Outcome::Timeout, reason)
        }
    }
}

/// Classifies a non-2xx response from its status, headers and (capped) body.
pub(crate) fn classify_status(status: u16, headers: &HeaderMap, body: &[u8]) -> Failure {
    let text = String::from_utf8_lossy(body).to_lowercase();
    let detail = error_message(body);
    let has = |needle: &str| text.contains(needle);
    // Exhausted quota is a failure; a rate limit is a wait. Providers word their rate
    // limits with quota words too (Azure links its "quotaincrease" page, Gemini counts
    // "quota metric ... per minute", OpenRouter sells credits): words of a rate limit win
    // over quota words, and only OpenAI's and Anthropic's own words for an exhausted
    // quota win over both (LiteLLM relays them as `litellm.RateLimitError: ... You
    // exceeded your current quota`, so an exception's class name is no rate-limit word).
    let exhausted = has("insufficient_quota")
        || has("exceeded your current quota")
        || has("credit balance is too low");
    let rate_words = has("rate limit")
        || has("rate_limit")
        || has("per minute")
        || has("per second")
        || has("retry after")
        || has("try again in");
    let quota_words = exhausted
        || (!rate_words
            && (has("quota")
                || has("spend limit")
                || has("spending limit")
                || has("billing")
                || has("credit")));
    let (outcome, what) = match status {
        429 if quota_words => (Outcome::Quota, "quota exhausted"),
        429 => (Outcome::RateLimited, "rate limited"),
        402 => (Outcome::Quota, "payment required"),
        _ if has("insufficient_quota") => (Outcome::Quota, "quota exhausted"),
        401 | 403 => (Outcome::Auth, "not authorized"),
        400 | 500 | 502 if says_bad_key(&text) => (Outcome::Auth, "not authorized"),
        404 => (Outcome::InvalidModel, "model or endpoint not found"),
        _ if has("model_not_found") => (Outcome::InvalidModel, "model not found"),
        408 | 500 | 502 | 503 | 504 | 529 => (Outcome::Unavailable, "provider unavailable"),
        400 | 413 | 422 => (Outcome::BadRequest, "request rejected"),
        s if s >= 500 => (Outcome::Unavailable, "provider error"),
        _ => (Outcome::BadRequest, "request rejected"),
    };
    let mut f = Failure::new(
        outcome,
        match detail {
            Some(d) => format!("{status} {what}: {d}"),
            None => format!("{status} {what}"),
        },
    );
    // Back-pressure (docs/design.md section 13): a 429 rate limit (quota stays a failure), a
    // 529 overloaded, or a 503 that says when to come back.
    let after = retry_after(headers);
    f.backpressure = match status {
        429 => outcome == Outcome::RateLimited,
        529 => outcome == Outcome::Unavailable,
        503 => outcome == Outcome::Unavailable && after.is_some(),
        _ => false,
    };
    if f.backpressure {
        f.retry_after = after;
    }
    f
}

/// An error a 200 answer carries, in its stream or as its whole body (`error`: the error
/// object). Before any content it is back-pressure when it says "not now" (section 13):
/// Anthropic streams `overloaded_error` and `rate_limit_error` inside a 200, and
/// OpenRouter and LiteLLM stream their upstream's 429 as `{"error": {"code": 429}}`.
/// After content the model worked: it is a failure, as any other error there.
pub(crate) fn error_in_answer(error: &Value, reason: String, before_content: bool) -> Failure {
    let word = |k: &str| match error.get(k) {
        Some(Value::String(s)) => s.to_ascii_lowercase(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let words = [word("type"), word("code")];
    // A gateway streams an upstream's bad key inside its 200 (`{"code": 401}`), before
    // any content: the key is the problem, not an outage. (After content the model
    // worked: a failure there stays one, as below.)
    if before_content
        && words.iter().any(|w| {
            w == "401" || w == "403" || w.starts_with("authentication") || w == "auth_error"
        })
    {
        return Failure::new(Outcome::Auth, reason);
    }
    let quota = words.iter().any(|w| w.contains("quota"));
    let rate = words.iter().any(|w| w == "429" || w.contains("rate_limit"));
    let overloaded = words
        .iter()
        .any(|w| w == "529" || w.starts_with("overloaded"));
    if !before_content || quota || !(rate || overloaded) {
        return Failure::new(Outcome::Unavailable, reason);
    }
    let outcome = if rate {
        Outcome::RateLimited
    } else {
        Outcome::Unavailable
    };
    Failure {
        backpressure: true,
        ..Failure::new(outcome, reason)
    }
}

/// The longest Retry-After warden keeps. Providers send what they like (`1e20`,
/// `18446744073709551615`); anything longer than any budget is simply "too long", and
/// clamping keeps every later `Instant + Duration` in range.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);

/// `retry-after-ms` (milliseconds) or `retry-after` (seconds or an HTTP date), clamped
/// to [`MAX_RETRY_AFTER`]; negative, NaN or unparseable values are ignored.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(d) = clamped_secs(ms / 1000.0)
    {
        return Some(d);
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return clamped_secs(secs);
    }
    if let Ok(at) = httpdate::parse_http_date(v) {
        // Measured from the answer's own Date when it has one (RFC 9110, 10.2.3): a
        // server whose clock is off by an hour still means "in 3 s", not "in an hour
        // and 3 s" or "now".
        let sent = get("date")
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .unwrap_or_else(SystemTime::now);
        return Some(
            at.duration_since(sent)
                .unwrap_or(Duration::ZERO)
                .min(MAX_RETRY_AFTER),
        );
    }
    // Two headers folded into one by a proxy (`1, 30`): the first one counts, as it
    // does when they arrive apart.
    let first = v.split(',').next()?.trim();
    clamped_secs(first.parse::<f64>().ok()?)
}

fn clamped_secs(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None; // negative or NaN
    }
    Some(
        Duration::try_from_secs_f64(secs)
            .unwrap_or(MAX_RETRY_AFTER)
            .min(MAX_RETRY_AFTER),
    )
}

/// The provider's own error message (docs/design.md §15), so that a failure reads as what
/// it is: `{"error": {"message"}}` (OpenAI, Anthropic, LiteLLM, llama.cpp),
/// `{"error": "..."}` (Ollama), a gateway's own `{"message"}` or `{"detail"}`, else the
/// text of a plain or HTML body (its `<title>`). Provider text is data: it is only shown
/// (redacted, cut, escaped by every output), never acted on.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return plain_message(body);
    };
    if let Some(m) = v.get("error").and_then(provider_message) {
        return Some(m);
    }
    ["message", "detail"]
        .iter()
        .find_map(|k| v.get(*k).and_then(provider_message))
}

/// The message of a body that is not JSON: an HTML page's `<title>`, or the text with
/// its whitespace folded; `None` when nothing readable is left.
fn plain_message(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&body[..body.len().min(4 * MESSAGE_CHARS)]);
    let lower = text.to_ascii_lowercase();
    let picked = match (lower.find("<title>"), lower.find("</title>")) {
        (Some(a), Some(b)) if a + 7 <= b => &text[a + 7..b],
        _ if lower.trim_start().starts_with('<') => return None,
        _ => &text,
    };
    let folded: String = picked
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(MESSAGE_CHARS)
        .collect();
    (!folded.is_empty()).then_some(folded)
}

/// Whether an error body says the key is the problem, whatever the status a gateway
/// wrapped it in (LiteLLM relays an upstream's bad key as `AuthenticationError`, some
/// proxies as a 500): such a failure is `auth`, not an outage to retry.
fn says_bad_key(lower_body: &str) -> bool {
    [
        "authentication_error",
        "authenticationerror",
        "auth_error",
        "invalid_api_key",
        "incorrect api key",
        "invalid api key",
        "invalid x-api-key",
        "api key not valid",
        "api_key_invalid",
    ]
    .iter()
    .any(|w| lower_body.contains(w))
}

/// The message of an error object (`{"message": …}`, or the error as a plain string),
/// cut to [`MESSAGE_CHARS`]. Cut long, not short: the key is redacted before
/// the reason is cut to its own length.
pub(crate) fn provider_message(error: &Value) -> Option<String> {
    let msg = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())?;
    Some(msg.chars().take(MESSAGE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(status: u16, body: &str) -> Outcome {
        classify_status(status, &HeaderMap::new(), body.as_bytes()).outcome
    }

    #[test]
    fn statuses_and_bodies() {
        assert_eq!(
            c(429, r#"{"error":{"code":"rate_limit_exceeded"}}"#),
            Outcome::RateLimited
        );
        assert_eq!(
            c(429, r#"{"error":{"code":"insufficient_quota"}}"#),
            Outcome::Quota
        );
        assert_eq!(c(402, ""), Outcome::Quota);
        assert_eq!(c(401, ""), Outcome::Auth);
        assert_eq!(c(403, ""), Outcome::Auth);
        assert_eq!(c(404, ""), Outcome::InvalidModel);
        assert_eq!(
            c(400, r#"{"error":{"code":"model_not_found"}}"#),
            Outcome::InvalidModel
        );
        assert_eq!(
            c(400, r#"{"error":{"code":"context_length_exceeded"}}"#),
            Outcome::BadRequest
        );
        assert_eq!(c(413, ""), Outcome::BadRequest);
        for s in [408, 500, 502, 503, 504, 529] {
            assert_eq!(c(s, ""), Outcome::Unavailable, "{s}");
        }
    }

    fn bp(status: u16, retry_after: Option<&str>, body: &str) -> (Outcome, bool, Option<Duration>) {
        let mut h = HeaderMap::new();
        if let Some(v) = retry_after {
            h.insert("retry-after", v.parse().unwrap());
        }
        let f = classify_status(status, &h, body.as_bytes());
        (f.outcome, f.backpressure, f.retry_after)
    }

    #[test]
    fn back_pressure_is_a_rate_limit_an_overload_or_a_503_that_says_when() {
        let s = Duration::from_secs;
        assert_eq!(
            bp(429, Some("2"), ""),
            (Outcome::RateLimited, true, Some(s(2)))
        );
        assert_eq!(
            bp(429, None, r#"{"error":{"code":"rate_limit_exceeded"}}"#),
            (Outcome::RateLimited, true, None)
        );
        assert_eq!(bp(529, None, ""), (Outcome::Unavailable, true, None));
        assert_eq!(
            bp(529, Some("3"), ""),
            (Outcome::Unavailable, true, Some(s(3)))
        );
        assert_eq!(
            bp(503, Some("1"), ""),
            (Outcome::Unavailable, true, Some(s(1)))
        );
        // Not back-pressure: exhausted quota (a hard failure), a 503 that does not say
        // when, other errors (even with a Retry-After).
        assert_eq!(
            bp(429, Some("1"), r#"{"error":{"code":"insufficient_quota"}}"#),
            (Outcome::Quota, false, None)
        );
        assert_eq!(bp(503, None, ""), (Outcome::Unavailable, false, None));
        assert_eq!(bp(500, Some("1"), ""), (Outcome::Unavailable, false, None));
        assert_eq!(bp(401, Some("1"), ""), (Outcome::Auth, false, None));
    }

    #[test]
    fn a_rate_limit_that_links_to_a_quota_page_is_still_a_wait() {
        // Azure OpenAI's 429 names a quota page; Gemini's per-minute limit is a "quota
        // metric"; both say when to come back. Only an exhausted quota is a failure.
        let azure = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}"#;
        assert_eq!(
            bp(429, Some("6"), azure),
            (Outcome::RateLimited, true, Some(Duration::from_secs(6)))
        );
        assert_eq!(bp(429, None, azure).0, Outcome::RateLimited);
        let gemini = r#"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute for a region' of service 'generativelanguage.googleapis.com'","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(bp(429, None, gemini).0, Outcome::RateLimited);
        let openrouter = r#"{"error":{"message":"Rate limit exceeded: free-models-per-min. Add 10 credits to unlock more","code":429}}"#;
        assert_eq!(bp(429, Some("2"), openrouter).0, Outcome::RateLimited);
        // Exhausted quota stays a failure, Retry-After or not, whatever else it says.
        for quota in [
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
            r#"{"error":{"message":"rate limit: you exceeded your current quota","type":"insufficient_quota"}}"#,
            r#"{"error":{"message":"Your credit balance is too low to access the API. Please go to Plans & Billing to purchase credits."}}"#,
            r#"{"error":{"message":"monthly spend limit reached"}}"#,
            // LiteLLM's relay of OpenAI's insufficient_quota.
            r#"{"error":{"message":"litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your current quota, please check your plan and billing details.","type":null,"param":null,"code":"429"}}"#,
        ] {
            assert_eq!(
                bp(429, Some("1"), quota),
                (Outcome::Quota, false, None),
                "{quota}"
            );
            assert_eq!(bp(429, None, quota).0, Outcome::Quota, "{quota}");
        }
    }

    #[test]
    fn an_error_inside_a_200_is_back_pressure_only_before_content_and_only_not_now() {
        let e = |v: &str, before: bool| {
            let f = error_in_answer(&serde_json::from_str(v).unwrap(), "r".into(), before);
            (f.outcome, f.backpressure)
        };
        let not_now = [
            (
                r#"{"type":"overloaded_error","message":"Overloaded"}"#,
                Outcome::Unavailable,
            ),
            (r#"{"type":"rate_limit_error"}"#, Outcome::RateLimited),
            (r#"{"code":429,"message":"upstream"}"#, Outcome::RateLimited),
            (r#"{"code":"rate_limit_exceeded"}"#, Outcome::RateLimited),
            (r#"{"code":529}"#, Outcome::Unavailable),
        ];
        for (v, outcome) in not_now {
            assert_eq!(e(v, true), (outcome, true), "{v}");
            assert_eq!(
                e(v, false),
                (Outcome::Unavailable, false),
                "after content: {v}"
            );
        }
        for v in [
            r#"{"type":"insufficient_quota","code":429}"#,
            r#"{"type":"api_error","message":"rate limit? no"}"#,
            r#"{"code":500}"#,
            r#"{"code":null,"type":["overloaded_error"]}"#,
            r#""overloaded_error""#,
        ] {
            assert_eq!(e(v, true), (Outcome::Unavailable, false), "{v}");
        }
    }

    #[test]
    fn the_providers_own_message_from_every_shape_of_error_body() {
        let m = |b: &str| error_message(b.as_bytes());
        let openai = r#"{"error":{"message":"Incorrect API key provided: sk-…","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(m(openai).unwrap(), "Incorrect API key provided: sk-…");
        let anthropic = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(m(anthropic).unwrap(), "invalid x-api-key");
        let litellm = r#"{"error":{"message":"Authentication Error, Invalid proxy server token passed. Received API Key = sk-...abcd","type":"auth_error","param":"None","code":"401"}}"#;
        assert!(
            m(litellm)
                .unwrap()
                .starts_with("Authentication Error, Invalid proxy")
        );
        assert_eq!(
            m(r#"{"error":"model 'x' not found"}"#).unwrap(),
            "model 'x' not found"
        );
        assert_eq!(
            m(r#"{"detail":"Not authenticated"}"#).unwrap(),
            "Not authenticated"
        );
        assert_eq!(m(r#"{"message":"Forbidden"}"#).unwrap(), "Forbidden");
        assert_eq!(
            m("<html><head><title>401 Authorization Required</title></head><body>…</body></html>")
                .unwrap(),
            "401 Authorization Required"
        );
        assert_eq!(
            m("upstream   connect error\n").unwrap(),
            "upstream connect error"
        );
        assert_eq!(m("<html><body>no title</body></html>"), None);
        assert_eq!(m(""), None);
        let long = format!("{{\"error\":{{\"message\":\"{}\"}}}}", "x".repeat(5000));
        assert_eq!(
            m(&long).unwrap().len(),
            crate::provider::classify::MESSAGE_CHARS
        );
    }

    #[test]
    fn a_bad_key_behind_a_gateway_is_auth_whatever_the_status() {
        let litellm_500 = r#"{"error":{"message":"litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided","type":null,"param":null,"code":"500"}}"#;
        let f = classify_status(500, &HeaderMap::new(), litellm_500.as_bytes());
        assert_eq!(f.outcome, Outcome::Auth);
        assert!(
            f.reason.contains("Incorrect API key provided"),
            "{}",
            f.reason
        );
        // An outage that merely mentions keys elsewhere stays an outage.
        assert_eq!(
            c(500, r#"{"error":{"message":"internal error"}}"#),
            Outcome::Unavailable
        );
        assert_eq!(c(503, litellm_500), Outcome::Unavailable);
        // Streamed inside a 200 by a gateway.
        let e =
            |v: &str| error_in_answer(&serde_json::from_str(v).unwrap(), "r".into(), true).outcome;
        assert_eq!(
            e(r#"{"code":401,"message":"No auth credentials found"}"#),
            Outcome::Auth
        );
        assert_eq!(
            e(r#"{"type":"authentication_error","message":"invalid x-api-key"}"#),
            Outcome::Auth
        );
    }

    #[test]
    fn retry_after_in_ms_seconds_or_date() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        h.insert("retry-after", later.parse().unwrap());
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
    }

    #[test]
    fn a_retry_after_date_is_read_against_the_answers_own_date() {
        // A server clock in 2015 (or an hour ahead) still means "in 3 s".
        for date in [
            "Wed, 21 Oct 2015 07:28:00 GMT",
            &httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600)),
        ] {
            let at = httpdate::parse_http_date(date).unwrap() + Duration::from_secs(3);
            let mut h = HeaderMap::new();
            h.insert("date", date.parse().unwrap());
            h.insert("retry-after", httpdate::fmt_http_date(at).parse().unwrap());
            assert_eq!(retry_after(&h), Some(Duration::from_secs(3)), "{date}");
        }
        // A garbage Date: measured from now, as without one.
        let mut h = HeaderMap::new();
        h.insert("date", "yesterday".parse().unwrap());
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:03 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        // Folded by a proxy: the first counts.
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2, 99999".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", "soon, 2".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn absurd_retry_after_values_are_clamped_not_a_panic() {
        for v in [
            "1e20",
            "18446744073709551615",
            "18446744073709551616",
            "1e308",
            "inf",
            "1e400",
        ] {
            for header in ["retry-after", "retry-after-ms"] {
                let mut h = HeaderMap::new();
                h.insert(header, v.parse().unwrap());
                assert_eq!(retry_after(&h), Some(MAX_RETRY_AFTER), "{header}: {v}");
            }
        }
        for v in ["-1", "NaN", "-inf", "soon"] {
            let mut h = HeaderMap::new();
            h.insert("retry-after", v.parse().unwrap());
            assert_eq!(retry_after(&h), None, "{v}");
        }
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Fri, 31 Dec 9999 23:59:59 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), Some(MAX_RETRY_AFTER));
        // An unusable retry-after-ms falls back to retry-after.
        h.insert("retry-after-ms", "NaN".parse().unwrap());
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
    }
}
