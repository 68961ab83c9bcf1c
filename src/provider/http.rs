//! One HTTP exchange under the attempt's clocks: connect (the client's connect timeout),
//! time to first token, idle between content chunks, and the total deadline. When a
//! clock runs out the response is dropped, which closes the connection at once. Nothing
//! here retries: one call is exactly one request on the wire.

use super::Limits;
use super::attempt::{Outcome, Stage, Usage};
use super::classify::{self, Failure};
use super::sse::{SseItem, SseReader};
use tokio::time::{Instant, timeout_at};

/// Error bodies are read up to this size; answers up to `MAX_ANSWER`.
const MAX_ERROR_BODY: usize = 64 * 1024;
const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// A successful answer's text and metadata.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    pub text: String,
    pub model: Option<String>,
    pub usage: Option<Usage>,
    pub request_id: Option<String>,
    pub finish_reason: Option<String>,
}

/// What one stream item meant.
pub(crate) enum Step {
    /// A non-empty content delta: progress for the first-token and idle clocks.
    Content,
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
        Failure::new(
            Outcome::BadResponse,
            format!("unparseable response body: {e}"),
        )
    })
}

/// What the wire did, measured.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub status: Option<u16>,
    pub headers: Option<std::time::Duration>,
    pub ttft: Option<std::time::Duration>,
    pub duration: std::time::Duration,
    pub bytes: u64,
    pub request_id: Option<String>,
    pub result: Result<Answer, Failure>,
}

fn timeout(stage: Stage, reason: String) -> Failure {
    Failure {
        outcome: Outcome::Timeout,
        stage: Some(stage),
        reason,
        retry_after: None,
    }
}

pub(crate) async fn exchange(
    client: &reqwest::Client,
    request: reqwest::Request,
    limits: &Limits,
    stream: bool,
    decoder: &mut dyn Decoder,
) -> Exchange {
    let t0 = Instant::now();
    let total_at = t0 + limits.total;
    // Streaming: a token must come within first_token. Non-streaming: the whole answer
    // arrives at once, so only the total deadline bounds the wait for it.
    let first_at = if stream {
        (t0 + limits.first_token).min(total_at)
    } else {
        total_at
    };
    let mut ex = Exchange {
        status: None,
        headers: None,
        ttft: None,
        duration: Default::default(),
        bytes: 0,
        request_id: None,
        result: Err(Failure::new(Outcome::Unavailable, "not sent")),
    };
    let stage_at = |at: Instant, ttft: bool| -> (Stage, String) {
        if at >= total_at {
            (
                Stage::Total,
                format!(
                    "no complete answer within the {} deadline",
                    crate::config::format_duration(limits.total)
                ),
            )
        } else if !ttft {
            (
                Stage::FirstToken,
                format!(
                    "no token within {}",
                    crate::config::format_duration(limits.first_token)
                ),
            )
        } else {
            (
                Stage::Idle,
                format!(
                    "no token for {} (idle limit)",
                    crate::config::format_duration(limits.idle)
                ),
            )
        }
    };

    let resp = match timeout_at(first_at, client.execute(request)).await {
        Err(_) => {
            let (stage, reason) = stage_at(first_at, false);
            ex.result = Err(timeout(stage, format!("{reason}; no response headers")));
            ex.duration = t0.elapsed();
            return ex;
        }
        Ok(Err(e)) => {
            // The only timeout reqwest itself enforces is the connect timeout.
            ex.result = Err(if e.is_timeout() {
                timeout(
                    Stage::Connect,
                    format!(
                        "could not connect within {}",
                        crate::config::format_duration(limits.connect)
                    ),
                )
            } else if e.is_connect() {
                Failure::new(
                    Outcome::Unavailable,
                    format!("connection failed: {}", root_cause(&e)),
                )
            } else {
                Failure::new(
                    Outcome::Unavailable,
                    format!("request failed: {}", root_cause(&e)),
                )
            });
            ex.duration = t0.elapsed();
            return ex;
        }
        Ok(Ok(r)) => r,
    };
    ex.headers = Some(t0.elapsed());
    let status = resp.status().as_u16();
    ex.status = Some(status);
    ex.request_id = ["x-request-id", "request-id", "x-amzn-requestid"]
        .iter()
        .find_map(|h| resp.headers().get(*h))
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(128).collect());
    let headers = resp.headers().clone();
    let mut resp = resp;

    if !resp.status().is_success() {
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BODY {
            match timeout_at(total_at, resp.chunk()).await {
                Ok(Ok(Some(b))) => {
                    ex.bytes += b.len() as u64;
                    body.extend_from_slice(&b);
                }
                _ => break,
            }
        }
        ex.result = Err(classify::classify_status(status, &headers, &body));
        ex.duration = t0.elapsed();
        return ex;
    }

    let mut sse = SseReader::new();
    let mut body = Vec::new();
    let mut last_progress = t0;
    let mut saw_done = false;
    loop {
        let deadline = if !stream {
            // A non-streaming answer may legitimately arrive all at once at the end (or
            // after keep-alive whitespace), so only the total deadline bounds it.
            total_at
        } else if ex.ttft.is_none() {
            first_at
        } else {
            (last_progress + limits.idle).min(total_at)
        };
        let chunk = match timeout_at(deadline, resp.chunk()).await {
            Err(_) => {
                let (stage, reason) = stage_at(deadline, ex.ttft.is_some());
                ex.result = Err(timeout(stage, reason));
                ex.duration = t0.elapsed();
                return ex; // drops `resp`: the connection closes now
            }
            Ok(Err(e)) => {
                ex.result = Err(Failure::new(
                    Outcome::Unavailable,
                    format!("connection lost mid-answer: {}", root_cause(&e)),
                ));
                ex.duration = t0.elapsed();
                return ex;
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(c))) => c,
        };
        ex.bytes += chunk.len() as u64;
        if !stream {
            body.extend_from_slice(&chunk);
            last_progress = Instant::now();
            if body.len() > MAX_ANSWER {
                ex.result = Err(Failure::new(
                    Outcome::BadResponse,
                    "answer larger than 4 MiB",
                ));
                ex.duration = t0.elapsed();
                return ex;
            }
            continue;
        }
        for item in sse.feed(&chunk) {
            match decoder.item(&item) {
                Err(f) => {
                    ex.result = Err(f);
                    ex.duration = t0.elapsed();
                    return ex;
                }
                Ok(Step::Content) => {
                    let now = Instant::now();
                    ex.ttft.get_or_insert(now - t0);
                    last_progress = now;
                }
                Ok(Step::Other) => {}
                Ok(Step::Done) => saw_done = true,
            }
        }
        if saw_done {
            break;
        }
    }
    ex.result = if stream {
        decoder.end_of_stream(saw_done)
    } else {
        decoder.body(&body)
    };
    if let Ok(a) = &mut ex.result
        && a.request_id.is_none()
    {
        a.request_id = ex.request_id.clone();
    }
    ex.duration = t0.elapsed();
    ex
}

/// The innermost error message (reqwest's Display names only the outer layer).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
