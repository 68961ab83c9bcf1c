//! The vocabulary of one exchange with a provider, shared by the exchange (`http.rs`), the
//! body reader (`body.rs`), the protocols' decoders (`anthropic.rs`, `openai.rs`) and the
//! TLS setup (`tls.rs`): the caps on a response, the answer, a decoder's steps, the
//! attempt's clocks. In a file of its own so each of those imports it and none imports
//! the exchange back.

use super::Limits;
use super::attempt::{Outcome, Stage, Usage};
use super::classify::{Failure, MESSAGE_CHARS};
use super::sse::{SseItem, size};
use tokio::time::Instant;

/// What one response may hold. A provider is not trusted to send sane sizes: past a cap
/// the attempt ends as `bad_response` with a reason that names the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseCaps {
    /// One line of an event stream.
    pub line: usize,
    /// One event's data.
    pub event: usize,
    /// The whole body, streamed or not.
    pub body: usize,
}

impl Default for ResponseCaps {
    fn default() -> Self {
        ResponseCaps {
            line: 1024 * 1024,
            event: 1024 * 1024,
            body: 8 * 1024 * 1024,
        }
    }
}

/// A successful answer's text and metadata.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) model: Option<String>,
    pub(crate) usage: Option<Usage>,
    pub(crate) request_id: Option<String>,
    pub(crate) finish_reason: Option<String>,
    /// The tool calls the model made, in order, arguments as sent.
    pub(crate) calls: Vec<super::conversation::ToolCall>,
    /// What the model said when it refused (OpenAI `message.refusal`, streamed as
    /// `delta.refusal`), docs/design.md §15.
    pub(crate) refusal: Option<String>,
}

/// What one stream item meant.
pub(crate) enum Step {
    /// A non-empty content delta (text or a tool call's fragment): progress for the
    /// first-token and idle clocks, and the answer's first content.
    Content,
    /// A reasoning delta (`reasoning_content`, `thinking_delta`, ...): model tokens, so
    /// progress for the clocks too, but not yet the answer (docs/design.md §14).
    Reasoning,
    /// Metadata, pings, comments, role-only chunks: bytes, not progress.
    Other,
    /// The protocol's terminator (`[DONE]`, `message_stop`).
    Done,
}

/// The protocol-specific part of an exchange.
pub(crate) trait Decoder: Send {
    fn item(&mut self, item: &SseItem) -> Result<Step, Failure>;
    /// Called at the end of a stream: the answer, or `unavailable` if it was cut short.
    fn end_of_stream(&mut self, saw_done: bool) -> Result<Answer, Failure>;
    /// A whole non-streaming body.
    fn body(&mut self, body: &[u8]) -> Result<Answer, Failure>;
}

/// Parses a whole non-streaming body; anything but JSON is a `bad_response`.
pub(crate) fn json_body(body: &[u8]) -> Result<serde_json::Value, Failure> {
    serde_json::from_slice(body).map_err(|e| {
        let start: String = String::from_utf8_lossy(&body[..body.len().min(4 * MESSAGE_CHARS)])
            .chars()
            .take(MESSAGE_CHARS)
            .collect();
        Failure::new(
            Outcome::BadResponse,
            format!("unparseable response body ({e}); it starts with `{start}`"),
        )
    })
}

/// The attempt's clocks as instants.
pub(crate) struct Clocks {
    pub(crate) t0: Instant,
    pub(crate) total_at: Instant,
    pub(crate) first_at: Instant,
    pub(crate) limits: Limits,
}

impl Clocks {
    pub(super) fn new(limits: &Limits, stream: bool) -> Clocks {
        let t0 = Instant::now();
        let total_at = t0 + limits.total;
        // Streaming: a token must come within first_token. Non-streaming: the whole
        // answer arrives at once, so only the total deadline bounds the wait for it.
        let first_at = if stream {
            (t0 + limits.first_token).min(total_at)
        } else {
            total_at
        };
        Clocks {
            t0,
            total_at,
            first_at,
            limits: *limits,
        }
    }

    /// The timeout for a clock that ran out at `at`.
    pub fn expired(&self, at: Instant, saw_token: bool) -> Failure {
        let stage = if at >= self.total_at {
            Stage::Total
        } else if !saw_token {
            Stage::FirstToken
        } else {
            Stage::Idle
        };
        Failure::timeout(stage, &self.limits)
    }
}

/// The reason for a body that passed `cap` bytes.
pub(crate) fn body_cap_failure(cap: usize) -> Failure {
    Failure::new(
        Outcome::BadResponse,
        format!(
            "the response passed the {} body cap; the rest was not read",
            size(cap)
        ),
    )
}

/// The innermost error message (reqwest's Display names only the outer layer).
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
