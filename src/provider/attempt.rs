//! What one attempt produced: the outcome labels of DESIGN.md section 8 and the record
//! the engine, reports and telemetry read.

use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// In the provider's currency unit (OpenRouter: USD credits).
    pub cost: Option<f64>,
}

/// Everything measured about one attempt. Never contains a key or prompt content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    pub route: String,
    pub provider: &'static str,
    pub model: String,
    /// The model that answered, when the provider says (OpenRouter may route elsewhere).
    pub model_answered: Option<String>,
    /// Time to response headers.
    #[serde(serialize_with = "ms_opt")]
    pub headers: Option<Duration>,
    /// Time to the first non-empty content delta (streaming only).
    #[serde(serialize_with = "ms_opt")]
    pub ttft: Option<Duration>,
    #[serde(serialize_with = "ms")]
    pub duration: Duration,
    /// The deadline this attempt was given.
    #[serde(serialize_with = "ms")]
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
    #[serde(serialize_with = "ms_opt")]
    pub retry_after: Option<Duration>,
}

impl AttemptRecord {
    /// A record for an attempt that is starting: outcome `ok` and nothing measured yet.
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
            outcome: Outcome::Ok,
            stage: None,
            reason: String::new(),
            retry_after: None,
        }
    }
}

fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

fn ms_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&(d.as_millis() as u64)),
        None => s.serialize_none(),
    }
}
