//! `provider = "litellm"`: a LiteLLM proxy, spoken to in the OpenAI wire format, asked not
//! to retry or fall back on its own. With its defaults the proxy retries a 503 twice with
//! backoff, so one warden attempt could hide three upstream calls and their waits; warden
//! stays the one retry owner (docs/design.md rule 4) by saying so on every request.
//!
//! LiteLLM reads `x-litellm-num-retries` and `x-litellm-timeout` headers on the proxy, and
//! `num_retries`, `disable_fallbacks` and `timeout` in the body; both are sent, so an older
//! proxy that knows only one of them still complies.

use serde_json::{Value, json};
use std::time::Duration;

/// The per-request headers: no retries, and the attempt's own deadline upstream.
pub(crate) fn headers(deadline: Duration) -> [(&'static str, String); 2] {
    [
        ("x-litellm-num-retries", "0".to_string()),
        ("x-litellm-timeout", seconds(deadline)),
    ]
}

/// Adds the body parameters that switch off the proxy's retries and fallbacks.
pub(crate) fn adapt_body(body: &mut Value, deadline: Duration) {
    body["num_retries"] = json!(0);
    body["disable_fallbacks"] = json!(true);
    body["timeout"] = json!(deadline.as_secs_f64().max(0.001));
}

fn seconds(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64().max(0.001))
}

/// Whether response headers come from a LiteLLM gateway (it stamps `x-litellm-*` on every
/// response), which on a plain `openai` route may retry behind warden's back.
pub(crate) fn is_gateway_response(headers: &reqwest::header::HeaderMap) -> bool {
    headers.keys().any(|k| k.as_str().starts_with("x-litellm-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_switch_off_retries_and_fallbacks() {
        let mut b = json!({"model": "m"});
        adapt_body(&mut b, Duration::from_millis(2500));
        assert_eq!(b["num_retries"], 0);
        assert_eq!(b["disable_fallbacks"], true);
        assert_eq!(b["timeout"], 2.5);
        let h = headers(Duration::from_secs(90));
        assert_eq!(h[0], ("x-litellm-num-retries", "0".to_string()));
        assert_eq!(h[1], ("x-litellm-timeout", "90.000".to_string()));
    }

    #[test]
    fn gateway_responses_are_recognised_by_their_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-request-id", "a".parse().unwrap());
        assert!(!is_gateway_response(&h));
        h.insert("x-litellm-call-id", "b".parse().unwrap());
        assert!(is_gateway_response(&h));
    }
}
