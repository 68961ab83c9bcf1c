//! What one attempt produced: the outcome labels of DESIGN.md section 8 and the record
//! the engine, reports and telemetry read.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Timeout,
    Unavailable,
    RateLimited,
    Auth,
    InvalidModel,
    Quota,
    BadRequest,
    BadResponse,
    Cancelled,
}

/// Which clock ended a timed-out attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Connect,
    FirstToken,
    Idle,
    Total,
}

impl Outcome {
    /// May the engine make a further attempt after this outcome (rule 5)?
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Outcome::Timeout | Outcome::Unavailable | Outcome::RateLimited
        )
    }

    /// Does this outcome count against a route's breaker (rule 8)?
    pub fn is_breaker_failure(self) -> bool {
        matches!(self, Outcome::Timeout | Outcome::Unavailable)
    }

    /// A non-retryable failure (auth, invalid model, quota, rejected request, bad answer).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Outcome::Auth
                | Outcome::InvalidModel
                | Outcome::Quota
                | Outcome::BadRequest
                | Outcome::BadResponse
        )
    }

    /// Does this outcome force the route open for the rest of the run (rule 8)?
    pub fn forces_open(self) -> bool {
        matches!(self, Outcome::Auth | Outcome::InvalidModel)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Timeout => "timeout",
            Outcome::Unavailable => "unavailable",
            Outcome::RateLimited => "rate_limited",
            Outcome::Auth => "auth",
            Outcome::InvalidModel => "invalid_model",
            Outcome::Quota => "quota",
            Outcome::BadRequest => "bad_request",
            Outcome::BadResponse => "bad_response",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Connect => "connect",
            Stage::FirstToken => "first_token",
            Stage::Idle => "idle",
            Stage::Total => "total",
        }
    }
}

/// Token usage and cost, when the provider reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// In the provider's currency unit (OpenRouter: USD credits).
    pub cost: Option<f64>,
}

/// Everything measured about one attempt. Never contains a key or prompt content.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    pub route: String,
    pub provider: &'static str,
    pub model: String,
    /// The model that answered, when the provider says (OpenRouter may route elsewhere).
    pub model_answered: Option<String>,
    /// Time to response headers.
    pub headers: Option<Duration>,
    /// Time to the first non-empty content delta (streaming only).
    pub ttft: Option<Duration>,
    pub duration: Duration,
    /// The deadline this attempt was given.
    pub deadline: Duration,
    pub bytes: u64,
    pub usage: Option<Usage>,
    pub http_status: Option<u16>,
    pub request_id: Option<String>,
    pub outcome: Outcome,
    pub stage: Option<Stage>,
    /// A short reason for people ("503 from provider", "no token within 90s").
    pub reason: String,
    /// A rate limit's Retry-After, when given.
    pub retry_after: Option<Duration>,
}

impl AttemptRecord {
    /// A record for an attempt that is starting: nothing measured yet, and an outcome
    /// that is not `ok` (`cancelled`, "the attempt did not finish") until the provider
    /// stamps what happened; a record nobody finished never claims success.
    pub fn new(
        route: impl Into<String>,
        provider: &'static str,
        model: impl Into<String>,
        deadline: Duration,
    ) -> Self {
        AttemptRecord {
            route: route.into(),
            provider,
            model: model.into(),
            model_answered: None,
            headers: None,
            ttft: None,
            duration: Duration::ZERO,
            deadline,
            bytes: 0,
            usage: None,
            http_status: None,
            request_id: None,
            outcome: Outcome::Cancelled,
            stage: None,
            reason: "the attempt did not finish".into(),
            retry_after: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_never_starts_as_ok() {
        let r = AttemptRecord::new("r", "openai", "m", Duration::from_secs(1));
        assert_ne!(r.outcome, Outcome::Ok);
        let done = crate::provider::finish(r, Ok(crate::findings::Extracted::default()), None);
        assert_eq!(
            done.record.outcome,
            Outcome::Ok,
            "success is stamped, not assumed"
        );
    }
}
