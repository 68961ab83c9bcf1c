//! What one attempt produced: the outcome labels of docs/design.md section 8 and the record
//! the engine, reports and telemetry read.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An answer that parsed.
    Ok,
    /// A clock ran out (see the stage).
    Timeout,
    /// Connect errors, 5xx, 529, truncated streams, errors inside a stream.
    Unavailable,
    /// 429 (maybe with a Retry-After).
    RateLimited,
    /// 401/403: the key does not work here.
    Auth,
    /// 404 or `model_not_found`.
    InvalidModel,
    /// Money: 402, `insufficient_quota`, spend limits.
    Quota,
    /// The provider rejected the request (400, 413, 422).
    BadRequest,
    /// A 200 whose answer has no findings object, or passed a cap.
    BadResponse,
    /// Cut by the review budget or a signal (or never finished).
    Cancelled,
    /// The model declined to answer (a safety refusal: Anthropic `stop_reason:
    /// "refusal"`, OpenAI `refusal`, `finish_reason: "content_filter"`), docs/design.md §15:
    /// never clean, no breaker verdict, not retried on the same route (failover is).
    Refused,
}

/// Which clock ended a timed-out attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// TCP/TLS connect.
    Connect,
    /// Time to first token.
    FirstToken,
    /// Between tokens.
    Idle,
    /// The whole attempt.
    Total,
}

impl Outcome {
    /// May the engine make a further attempt after this outcome (rule 5)?
    pub(crate) fn retryable(self) -> bool {
        matches!(
            self,
            Outcome::Timeout | Outcome::Unavailable | Outcome::RateLimited
        )
    }

    /// Does this outcome count against a route's breaker (rule 8)?
    pub(crate) fn is_breaker_failure(self) -> bool {
        matches!(self, Outcome::Timeout | Outcome::Unavailable)
    }

    /// A non-retryable failure (auth, invalid model, quota, rejected request, bad answer).
    pub(crate) fn is_failure(self) -> bool {
        matches!(
            self,
            Outcome::Auth
                | Outcome::InvalidModel
                | Outcome::Quota
                | Outcome::BadRequest
                | Outcome::BadResponse
        )
    }

    /// An outcome that says nothing about the route's health: the breakers take no
    /// verdict from it (a cancel is nobody's fault; a refusal is the model's answer to
    /// this prompt, not an outage).
    pub(crate) fn no_verdict(self) -> bool {
        matches!(self, Outcome::Cancelled | Outcome::Refused)
    }

    /// Does this outcome force the route open for the rest of the run (rule 8)?
    pub(crate) fn forces_open(self) -> bool {
        matches!(self, Outcome::Auth | Outcome::InvalidModel)
    }

    /// The outcome as reports spell it.
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
            Outcome::Refused => "refused",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Stage {
    /// The stage as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Connect => "connect",
            Stage::FirstToken => "first_token",
            Stage::Idle => "idle",
            Stage::Total => "total",
        }
    }
}

/// What a 400 asked for instead of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// The route dropped or renamed a refused parameter: send the attempt again at once.
    Adjusted,
    /// The prompt does not fit the model's context window (tokens, when the provider
    /// said): split the chunk, or fail over to a route with a larger window.
    ContextLength {
        /// The window the provider named.
        window: Option<u64>,
    },
}

/// Token usage and cost, when the provider reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Answer tokens (reasoning tokens included: they are billed as output).
    pub output_tokens: Option<u64>,
    /// Prompt tokens read from the provider's prompt cache (part of `input_tokens`:
    /// OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    pub cached_input_tokens: Option<u64>,
    /// Prompt tokens written to the cache (part of `input_tokens`: Anthropic
    /// `cache_creation_input_tokens`).
    pub cache_write_tokens: Option<u64>,
    /// Hidden reasoning tokens (part of `output_tokens`:
    /// `completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: Option<u64>,
    /// In the provider's currency unit (OpenRouter: USD credits).
    pub cost: Option<f64>,
}

/// Everything measured about one attempt. Never contains a key or prompt content.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    /// The route it went to.
    pub route: String,
    /// The route's provider kind.
    pub provider: &'static str,
    /// The model asked for.
    pub model: String,
    /// The model that answered, when the provider says (OpenRouter may route elsewhere).
    pub model_answered: Option<String>,
    /// Time to response headers.
    pub headers: Option<Duration>,
    /// Time to the first model token of any kind, reasoning included (streaming only).
    pub ttft: Option<Duration>,
    /// Time to the first token of the answer itself: text or a tool call (streaming
    /// only). Later than `ttft` when the model streamed its reasoning first.
    pub first_content: Option<Duration>,
    /// How long it took.
    pub duration: Duration,
    /// The deadline this attempt was given.
    pub deadline: Duration,
    /// Bytes received (keep-alives included).
    pub bytes: u64,
    /// Tokens and cost, when reported.
    pub usage: Option<Usage>,
    /// The response status, when there was one.
    pub http_status: Option<u16>,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// Which clock ended a timeout.
    pub stage: Option<Stage>,
    /// A short reason for people ("503 from provider", "no token within 90s").
    pub reason: String,
    /// A rate limit's Retry-After, when given.
    pub retry_after: Option<Duration>,
    /// Back-pressure (docs/design.md section 13): the provider said "not now" before any model
    /// work (429 rate limit, 529 overloaded, 503 with Retry-After). The outcome keeps its
    /// report label (`rate_limited`, `unavailable`); the engine treats the attempt as a
    /// wait, not a failure. Exhausted quota is never back-pressure.
    pub backpressure: bool,
    /// `host:port` when the attempt could not connect at all (refused, unreachable, a name
    /// that does not resolve): no request reached anything. A route whose attempts and
    /// half-open probe all end so is dead for the run (docs/design.md §14).
    pub unreachable: Option<Box<str>>,
    /// The gateway that answered, when its response headers name one (`litellm`): a
    /// gateway may retry on its own inside what warden counts as one attempt.
    pub gateway: Option<&'static str>,
    /// What the answer's rate-limit headers said (any status, success or not), for the
    /// engine's pacing and the reports (docs/design.md section 13). Boxed: most answers carry
    /// none, and records travel inside every `AttemptFinished` event.
    pub rate_limit: Option<Box<super::ratelimit::RateLimitInfo>>,
    /// A 400 that asks for another request rather than failing the unit (docs/design.md §14):
    /// the engine re-sends or splits, with no attempt used and no breaker verdict.
    pub correction: Option<Correction>,
    /// Something about this route's answers the user should act on, set by the provider
    /// at most once per route and run (a rate-limit header it dropped as garbage or a
    /// lie): the engine says it as an `Event::Warning`.
    pub warning: Option<String>,
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
            first_content: None,
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
            backpressure: false,
            unreachable: None,
            gateway: None,
            rate_limit: None,
            correction: None,
            warning: None,
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
        let done =
            crate::provider::finish(r, Ok(Some(crate::findings::Extracted::default())), None);
        assert_eq!(
            done.record.outcome,
            Outcome::Ok,
            "success is stamped, not assumed"
        );
    }
}
