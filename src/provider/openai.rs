//! OpenAI Chat Completions (also OpenRouter, LiteLLM, vLLM, Ollama via `baseUrl`).

use super::attempt::{Outcome, Usage};
use super::body_spec::BodySpec;
use super::classify::Failure;
use super::conversation::{
    CallParts, Conversation, SUBMIT_FINDINGS, ToolCall, ToolChoice, ToolSpec, Turn, wire_id,
};
use super::sse::SseItem;
use super::wire::{Answer, Decoder, Step};
use serde_json::{Value, json};

pub(crate) fn body(spec: &BodySpec) -> Value {
    let prompt = spec.prompt;
    let mut messages = vec![
        json!({"role": "system", "content": prompt.system}),
        json!({"role": "user", "content": prompt.user}),
    ];
    if let Some(c) = spec.conversation {
        transcript(c, &mut messages);
    }
    let mut b = json!({
        "model": spec.model,
        "messages": messages,
        "stream": spec.stream,
        "max_tokens": spec.max_tokens,
        "temperature": 0,
    });
    if spec.stream {
        b["stream_options"] = json!({"include_usage": true});
    }
    if let Some(c) = spec.conversation.filter(|c| !c.tools.is_empty()) {
        b["tools"] = tools(&c.tools);
        b["tool_choice"] = match &c.choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Force(name) => json!({"type": "function", "function": {"name": name}}),
        };
    }
    b
}

/// Tool definitions, OpenAI's shape (the shared prefix: same order every request).
/// `submit_findings` is a strict function (docs/design.md §15): its arguments then follow the
/// findings schema exactly, as structured output's do in a single-shot review.
fn tools(specs: &[ToolSpec]) -> Value {
    specs
        .iter()
        .map(|t| {
            let mut f = json!({"name": t.name, "description": t.description,
                               "parameters": t.parameters});
            if t.name == SUBMIT_FINDINGS {
                f["strict"] = json!(true);
            }
            json!({"type": "function", "function": f})
        })
        .collect()
}

/// The turns after the prompt: an assistant message carrying its `tool_calls`, then one
/// `role: tool` message per result. OpenAI has no error flag on a result: an error's
/// content says so in words.
fn transcript(c: &Conversation, messages: &mut Vec<Value>) {
    for turn in &c.turns {
        match turn {
            Turn::Assistant { text, calls } => {
                let mut m = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    if text.is_empty() {
                        m["content"] = Value::Null;
                    }
                    m["tool_calls"] = calls
                        .iter()
                        .map(|call| {
                            json!({"id": wire_id(&call.id), "type": "function",
                                   "function": {"name": call.name, "arguments": call.arguments}})
                        })
                        .collect();
                }
                messages.push(m);
            }
            Turn::Results(results) => {
                for r in results {
                    let content = if r.is_error {
                        format!("error: {}", r.content)
                    } else {
                        r.content.clone()
                    };
                    messages.push(json!({"role": "tool", "tool_call_id": wire_id(&r.call_id),
                                         "name": r.name, "content": content}));
                }
            }
        }
    }
}

#[derive(Default)]
pub(crate) struct OpenAiDecoder {
    answer: Answer,
    calls: CallParts,
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let detail = |outer: &str, inner: &str| {
        u.get(outer)
            .and_then(|d| d.get(inner))
            .and_then(Value::as_u64)
    };
    Some(Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
        cached_input_tokens: detail("prompt_tokens_details", "cached_tokens"),
        // OpenAI-compatible servers that front Anthropic (LiteLLM) may report a write.
        cache_write_tokens: u
            .get("cache_creation_input_tokens")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0),
        reasoning_tokens: detail("completion_tokens_details", "reasoning_tokens"),
        cost: u.get("cost").and_then(Value::as_f64),
    })
}

/// The error a 200 body or a stream chunk carries, if any (`"error": null`, as gateways
/// that write every field send it, is none).
fn error_in(v: &Value) -> Option<String> {
    let e = v.get("error").filter(|e| !e.is_null())?;
    Some(super::classify::provider_message(e).unwrap_or_else(|| "error without message".into()))
}

impl OpenAiDecoder {
    fn meta(&mut self, v: &Value) {
        if let Some(m) = v.get("model").and_then(Value::as_str) {
            self.answer.model = Some(m.to_string());
        }
        if let Some(id) = v.get("id").and_then(Value::as_str) {
            self.answer.request_id.get_or_insert_with(|| id.to_string());
        }
        if let Some(u) = usage(v) {
            self.answer.usage = Some(u);
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn item(&mut self, item: &SseItem) -> Result<Step, Failure> {
        let SseItem::Event { data, .. } = item else {
            return Ok(Step::Other); // `: OPENROUTER PROCESSING` and other comments
        };
        if data.trim() == "[DONE]" {
            return Ok(Step::Done);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            Failure::new(
                Outcome::BadResponse,
                format!("unparseable stream chunk: {e}"),
            )
        })?;
        if let Some(msg) = error_in(&v) {
            return Err(super::classify::error_in_answer(
                &v["error"],
                format!("error inside the stream: {msg}"),
                self.answer.text.is_empty(),
            ));
        }
        self.meta(&v);
        let choice = v.get("choices").and_then(|c| c.get(0));
        let mut step = Step::Other;
        if let Some(c) = choice {
            let delta = c.get("delta");
            if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Value::as_str)
                && !text.is_empty()
            {
                self.answer.text.push_str(text);
                step = Step::Content;
            }
            // A refusal streams as `delta.refusal` pieces, in place of content.
            if let Some(words) = delta.and_then(|d| d.get("refusal")).and_then(Value::as_str)
                && !words.is_empty()
            {
                self.answer
                    .refusal
                    .get_or_insert_with(String::new)
                    .push_str(words);
                step = Step::Content;
            }
            if let Some(parts) = delta
                .and_then(|d| d.get("tool_calls"))
                .and_then(Value::as_array)
            {
                for (n, part) in parts.iter().enumerate() {
                    let index = part
                        .get("index")
                        .and_then(Value::as_u64)
                        .unwrap_or(n as u64);
                    let f = part.get("function");
                    let s = |v: Option<&Value>, k: &str| {
                        v.and_then(|v| v.get(k))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    };
                    let args = f.and_then(|f| f.get("arguments")).map(arguments_text);
                    self.calls.fragment(
                        index,
                        s(Some(part), "id").as_deref(),
                        s(f, "name").as_deref(),
                        args.as_deref(),
                    );
                }
                step = Step::Content;
            }
            if matches!(step, Step::Other) && delta.is_some_and(has_reasoning) {
                step = Step::Reasoning;
            }
            if let Some(reason) = c.get("finish_reason").and_then(Value::as_str) {
                if reason == "error" {
                    return Err(Failure::new(
                        Outcome::Unavailable,
                        "stream ended with finish_reason \"error\"",
                    ));
                }
                self.answer.finish_reason = Some(reason.to_string());
            }
        }
        Ok(step)
    }

    fn end_of_stream(&mut self, saw_done: bool) -> Result<Answer, Failure> {
        if !saw_done && self.answer.finish_reason.is_none() {
            return Err(Failure::new(
                Outcome::Unavailable,
                "stream ended without [DONE] or a finish_reason (truncated)",
            ));
        }
        let mut answer = std::mem::take(&mut self.answer);
        answer.calls = std::mem::take(&mut self.calls).finish();
        Ok(answer)
    }

    fn body(&mut self, body: &[u8]) -> Result<Answer, Failure> {
        let v = super::wire::json_body(body)?;
        if let Some(msg) = error_in(&v) {
            return Err(super::classify::error_in_answer(
                &v["error"],
                format!("error in a 200 response: {msg}"),
                true,
            ));
        }
        self.meta(&v);
        let choice = v.get("choices").and_then(|c| c.get(0));
        if let Some(r) = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
        {
            if r == "error" {
                return Err(Failure::new(
                    Outcome::Unavailable,
                    "answer ended with finish_reason \"error\"",
                ));
            }
            self.answer.finish_reason = Some(r.to_string());
        }
        let message = choice.and_then(|c| c.get("message"));
        self.answer.calls = message.map(calls_of).unwrap_or_default();
        self.answer.refusal = message
            .and_then(|m| m.get("refusal"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        let text = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str);
        match text {
            Some(t) => self.answer.text = t.to_string(),
            None if !self.answer.calls.is_empty() => {}
            // A refusal has no content; the finish reason alone may say so too.
            None if self.answer.refusal.is_some() => {}
            None if self.answer.finish_reason.as_deref() == Some("content_filter") => {}
            None => {
                return Err(Failure::new(
                    Outcome::BadResponse,
                    "response has no choices[0].message.content",
                ));
            }
        }
        Ok(std::mem::take(&mut self.answer))
    }
}

/// Whether a delta carries reasoning (`reasoning_content`: DeepSeek, vLLM, LiteLLM;
/// `reasoning` / `reasoning_details`: OpenRouter): model tokens, progress for the clocks.
fn has_reasoning(delta: &Value) -> bool {
    ["reasoning_content", "reasoning"].iter().any(|k| {
        delta
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    }) || delta
        .get("reasoning_details")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// Arguments as text: a string as sent, anything else (a gateway that sends an object)
/// as its JSON.
fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `message.tool_calls` of a whole answer, in order (parallel calls included).
fn calls_of(message: &Value) -> Vec<ToolCall> {
    let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut parts = CallParts::default();
    for (n, c) in calls.iter().enumerate() {
        let f = c.get("function");
        let args = f.and_then(|f| f.get("arguments")).map(arguments_text);
        parts.fragment(
            n as u64,
            c.get("id").and_then(Value::as_str),
            f.and_then(|f| f.get("name")).and_then(Value::as_str),
            args.as_deref(),
        );
    }
    parts.finish()
}
