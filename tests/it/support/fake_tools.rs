//! The fake provider's tool calls (docs/design.md §14): answers whose content is calls, in the
//! protocol the request spoke, streamed as the providers stream them (OpenAI
//! `delta.tool_calls` fragments keyed by `index`, arguments in pieces; Anthropic
//! `tool_use` blocks with `input_json_delta` pieces) or whole. Several calls in one answer
//! are parallel calls. Arguments are sent exactly as scripted, so a test can send invalid
//! JSON.

#![allow(dead_code)]

use super::fake_wire::CallIds;
use serde_json::{Value, json};

/// One scripted call: the tool's name and its arguments as raw JSON text.
pub type Call = (String, String);

/// A call of `name` with these arguments (a JSON value, sent as its text).
pub fn call(name: &str, arguments: Value) -> Call {
    (name.to_string(), arguments.to_string())
}

/// A `submit_findings` call carrying these findings (the findings object of docs/design.md §9).
pub fn submit(findings: Value) -> Call {
    call("submit_findings", json!({ "findings": findings }))
}

fn halves(s: &str) -> (&str, &str) {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    s.split_at(mid)
}

fn openai_chunk(model: &str, delta: Value, finish: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

fn event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

/// The whole event stream of an answer made of these calls; `usage` is the protocol's
/// usage object (None: OpenAI's stream was not asked for it).
pub fn stream(
    anthropic: bool,
    model: &str,
    calls: &[Call],
    ids: CallIds,
    usage: Option<Value>,
) -> String {
    let mut out = String::new();
    if anthropic {
        out += &event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_fake", "model": model,
                   "usage": usage.unwrap_or_else(|| json!({"input_tokens": 120, "output_tokens": 1}))}}),
        );
        for (i, (name, args)) in calls.iter().enumerate() {
            out += &event(
                "content_block_start",
                json!({"type": "content_block_start", "index": i,
                       "content_block": {"type": "tool_use", "id": ids.id(true, i), "name": name, "input": {}}}),
            );
            let (a, b) = halves(args);
            for piece in [a, b] {
                out += &event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": piece}}),
                );
            }
            out += &event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            );
        }
        out += &event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
        );
        out += &event("message_stop", json!({"type": "message_stop"}));
        return out;
    }
    out += &openai_chunk(
        model,
        json!({"role": "assistant", "content": null}),
        Value::Null,
    );
    for (i, (name, args)) in calls.iter().enumerate() {
        let mut first = json!({"index": i, "type": "function",
                               "function": {"name": name, "arguments": ""}});
        if let Some(id) = ids.id(false, i) {
            first["id"] = json!(id);
        }
        out += &openai_chunk(model, json!({ "tool_calls": [first] }), Value::Null);
        let (a, b) = halves(args);
        for piece in [a, b] {
            out += &openai_chunk(
                model,
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                Value::Null,
            );
        }
    }
    out += &openai_chunk(model, json!({}), json!("tool_calls"));
    // OpenAI sends the usage chunk only when `stream_options.include_usage` asks for it.
    if let Some(usage) = usage {
        out += &format!(
            "data: {}\n\n",
            json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": model, "choices": [],
                   "usage": usage})
        );
    }
    out += "data: [DONE]\n\n";
    out
}

/// The whole (non-streamed) answer made of these calls. Anthropic's `input` is an object:
/// arguments that are not one are sent as a JSON string (a hostile server's shape).
pub fn body(anthropic: bool, model: &str, calls: &[Call], ids: CallIds, usage: Value) -> String {
    if anthropic {
        let content: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                let input = serde_json::from_str::<Value>(args)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!(args));
                json!({"type": "tool_use", "id": ids.id(true, i), "name": name, "input": input})
            })
            .collect();
        return json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                      "content": content, "stop_reason": "tool_use",
                      "usage": usage})
        .to_string();
    }
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            let mut c = json!({"type": "function", "function": {"name": name, "arguments": args}});
            if let Some(id) = ids.id(false, i) {
                c["id"] = json!(id);
            }
            c
        })
        .collect();
    json!({"id": "gen-fake", "object": "chat.completion", "model": model,
           "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": tool_calls},
                        "finish_reason": "tool_calls"}],
           "usage": usage})
    .to_string()
}
