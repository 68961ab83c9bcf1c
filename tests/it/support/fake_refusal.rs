//! Safety refusals as the providers send them (docs/design.md §15), in both protocols,
//! streamed and not: OpenAI's `refusal` field (`message.refusal`, streamed as
//! `delta.refusal` pieces, with `content: null` and `finish_reason: "stop"`), OpenAI's
//! and Azure's `finish_reason: "content_filter"` after some content, and Anthropic's
//! `stop_reason: "refusal"` (streamed in `message_delta`).

#![allow(dead_code)]

use serde_json::json;

/// Which refusal the fake sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The model's words: OpenAI `refusal`; Anthropic a text block then
    /// `stop_reason: "refusal"`.
    Words(String),
    /// Content, then the provider's filter stops it: OpenAI `finish_reason:
    /// "content_filter"`; Anthropic `stop_reason: "refusal"` after the text.
    Filtered(String),
}

/// The whole answer (an event stream or a JSON body) for this refusal.
pub fn answer(r: &Refusal, anthropic: bool, stream: bool, model: &str) -> String {
    match (anthropic, stream) {
        (true, false) => anthropic_body(r, model),
        (true, true) => anthropic_stream(r, model),
        (false, false) => openai_body(r, model),
        (false, true) => openai_stream(r, model),
    }
}

fn openai_body(r: &Refusal, model: &str) -> String {
    let (message, finish) = match r {
        Refusal::Words(w) => (
            json!({"role": "assistant", "content": null, "refusal": w}),
            "stop",
        ),
        Refusal::Filtered(t) => (
            json!({"role": "assistant", "content": t, "refusal": null}),
            "content_filter",
        ),
    };
    json!({"id": "gen-fake", "object": "chat.completion", "model": model,
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}})
    .to_string()
}

fn openai_stream(r: &Refusal, model: &str) -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut out = String::new();
    match r {
        Refusal::Words(w) => {
            out.push_str(&chunk(
                json!({"role": "assistant", "content": null, "refusal": ""}),
                None,
            ));
            let mid = w.len() / 2;
            let cut = (0..=mid)
                .rev()
                .find(|i| w.is_char_boundary(*i))
                .unwrap_or(0);
            for piece in [&w[..cut], &w[cut..]] {
                out.push_str(&chunk(json!({"refusal": piece}), None));
            }
            out.push_str(&chunk(json!({}), Some("stop")));
        }
        Refusal::Filtered(t) => {
            out.push_str(&chunk(json!({"role": "assistant", "content": ""}), None));
            out.push_str(&chunk(json!({"content": t}), None));
            out.push_str(&chunk(json!({}), Some("content_filter")));
        }
    }
    out.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": model, "choices": [],
               "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}})
    ));
    out
}

fn text_of(r: &Refusal) -> &str {
    match r {
        Refusal::Words(w) | Refusal::Filtered(w) => w,
    }
}

fn anthropic_body(r: &Refusal, model: &str) -> String {
    json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
           "content": [{"type": "text", "text": text_of(r)}], "stop_reason": "refusal",
           "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 12}})
    .to_string()
}

fn anthropic_stream(r: &Refusal, model: &str) -> String {
    let ev = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
    [
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
                   "role": "assistant", "model": model, "content": [], "stop_reason": null,
                   "usage": {"input_tokens": 100, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text_of(r)}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null},
                   "usage": {"output_tokens": 12}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}
