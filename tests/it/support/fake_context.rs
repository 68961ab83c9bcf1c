//! The fake provider as a model with a context window (docs/design.md §14): a request whose
//! user message is longer than a model's limit gets the protocol's context-length 400
//! (OpenAI's `context_length_exceeded`, "This model's maximum context length is N tokens";
//! Anthropic's "prompt is too long: N tokens > M maximum", as docs/providers.md words them);
//! one that fits is answered with a finding on the first line under review, so a test
//! can tell each part's findings kept their own line numbers.

use super::fake_provider::{Behavior, Responder, finding, findings_answer};
use serde_json::{Value, json};
use std::sync::Arc;

/// A model's limit: requests to `model` whose user message has more than `bytes` bytes
/// are refused, naming a window of `window` tokens.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub model: &'static str,
    pub bytes: usize,
    pub window: u64,
}

/// Bytes of the text of every user message (the chunk, the file header, the fences).
pub fn user_bytes(body: &Value) -> usize {
    let mut n = 0;
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => n += s.len(),
            Value::Array(blocks) => {
                n += blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .map(str::len)
                    .sum::<usize>()
            }
            _ => {}
        }
    }
    n
}

/// The first line under review the prompt names ("Lines under review: 12-40").
pub fn first_line(body: &Value) -> Option<u32> {
    let text = body["messages"].to_string();
    let at = text.find("Lines under review: ")? + "Lines under review: ".len();
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// The 400 of a prompt too long, in the request's protocol.
pub fn too_long(anthropic: bool, tokens: usize, window: u64) -> Behavior {
    let body = if anthropic {
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > {window} maximum")}})
    } else {
        json!({"error": {"message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
    };
    Behavior::Status {
        code: 400,
        headers: vec![],
        body: body.to_string(),
    }
}

/// The responder of models with these windows: too long a prompt gets the 400, one that
/// fits a finding on its first line; other models fall through to the scripts.
pub fn windows(limits: &[Window]) -> Responder {
    let limits = limits.to_vec();
    Arc::new(move |body: &Value| {
        let model = body["model"].as_str()?;
        let w = limits.iter().find(|w| w.model == model)?;
        let anthropic = body.get("system").is_some();
        let bytes = user_bytes(body);
        if bytes > w.bytes {
            return Some(too_long(anthropic, bytes / 3, w.window));
        }
        let line = first_line(body)?;
        Some(Behavior::Answer(findings_answer(json!([finding(
            line,
            "medium",
            &format!("first line {line}")
        )]))))
    })
}
