//! Anthropic Messages.

use super::attempt::{Outcome, Usage};
use super::body_spec::BodySpec;
use super::classify::Failure;
use super::conversation::{
    CallParts, Conversation, ToolCall, ToolChoice, Turn, arguments_object, wire_id,
};
use super::sse::SseItem;
use super::wire::{Answer, Decoder, Step};
use serde_json::{Value, json};

pub(crate) const VERSION: &str = "2023-06-01";

pub(crate) fn body(spec: &BodySpec) -> Value {
    let prompt = spec.prompt;
    let mut messages = vec![json!({"role": "user", "content": prompt.user})];
    if let Some(c) = spec.conversation {
        transcript(c, &mut messages);
    }
    if spec.conversation.is_some_and(|c| !c.turns.is_empty()) {
        mark_last_block(&mut messages);
    }
    // The shared prefix (system block, then tools) is a cache breakpoint: the same bytes
    // for every unit of a skill, read from the cache after the first.
    let mut b = json!({
        "model": spec.model,
        "max_tokens": spec.max_tokens,
        "system": [{"type": "text", "text": prompt.system, "cache_control": ephemeral()}],
        "messages": messages,
        "stream": spec.stream,
        "temperature": 0,
    });
    if let Some(c) = spec.conversation.filter(|c| !c.tools.is_empty()) {
        let mut tools: Vec<Value> = c
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        b["tools"] = Value::Array(tools);
        b["tool_choice"] = match &c.choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Force(name) => json!({"type": "tool", "name": name}),
        };
    }
    b
}

/// Anthropic's cache breakpoint (docs/providers.md: at most 4 per request; warden uses the
/// system block, the last tool and, in a loop, the transcript's last block).
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Marks the transcript's last content block as a breakpoint: the next turn's request
/// reads the whole transcript so far from the cache.
fn mark_last_block(messages: &mut [Value]) {
    let Some(last) = messages.last_mut() else {
        return;
    };
    if let Some(text) = last["content"].as_str() {
        last["content"] = json!([{"type": "text", "text": text}]);
    }
    if let Some(block) = last["content"].as_array_mut().and_then(|b| b.last_mut()) {
        block["cache_control"] = ephemeral();
    }
}

/// The turns after the prompt: an assistant message of text and `tool_use` blocks, then a
/// user message of `tool_result` blocks. Messages alternate as Anthropic requires: a
/// results turn joins a user message that would otherwise follow another.
fn transcript(c: &Conversation, messages: &mut Vec<Value>) {
    for turn in &c.turns {
        let (role, blocks) = match turn {
            Turn::Assistant { text, calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in calls {
                    blocks.push(json!({"type": "tool_use", "id": wire_id(&call.id),
                        "name": call.name, "input": arguments_object(&call.arguments)}));
                }
                if blocks.is_empty() {
                    // An empty text block is refused: say that nothing was said.
                    blocks.push(json!({"type": "text", "text": "(no answer)"}));
                }
                ("assistant", blocks)
            }
            Turn::Results(results) => {
                let blocks = results
                    .iter()
                    .map(|r| {
                        json!({"type": "tool_result", "tool_use_id": wire_id(&r.call_id),
                               "content": r.content, "is_error": r.is_error})
                    })
                    .collect();
                ("user", blocks)
            }
        };
        push_message(messages, role, blocks);
    }
}

/// Appends a message, merged into the last one when it has the same role (the prompt's
/// user message is a string: it becomes a text block first).
fn push_message(messages: &mut Vec<Value>, role: &str, mut blocks: Vec<Value>) {
    if let Some(last) = messages.last_mut()
        && last["role"] == role
    {
        if let Some(text) = last["content"].as_str() {
            last["content"] = json!([{"type": "text", "text": text}]);
        }
        if let Some(content) = last["content"].as_array_mut() {
            content.append(&mut blocks);
            return;
        }
    }
    messages.push(json!({"role": role, "content": blocks}));
}

#[derive(Default)]
pub(crate) struct AnthropicDecoder {
    answer: Answer,
    usage: Usage,
    /// `input_tokens` as Anthropic counts them (without cache reads and writes).
    fresh_input: Option<u64>,
    calls: CallParts,
}

impl AnthropicDecoder {
    fn message_meta(&mut self, m: &Value) {
        if let Some(model) = m.get("model").and_then(Value::as_str) {
            self.answer.model = Some(model.to_string());
        }
        if let Some(id) = m.get("id").and_then(Value::as_str) {
            self.answer.request_id.get_or_insert_with(|| id.to_string());
        }
        if let Some(u) = m.get("usage") {
            let n = |k: &str| u.get(k).and_then(Value::as_u64);
            if let Some(i) = n("input_tokens") {
                self.fresh_input = Some(i);
            }
            if let Some(r) = n("cache_read_input_tokens") {
                self.usage.cached_input_tokens = Some(r);
            }
            if let Some(w) = n("cache_creation_input_tokens") {
                self.usage.cache_write_tokens = Some(w);
            }
            if let Some(o) = n("output_tokens") {
                self.usage.output_tokens = Some(o);
            }
            // Anthropic's input_tokens are the uncached ones: warden's input is the whole
            // prompt, cache reads and writes included.
            let u = &self.usage;
            let parts = [
                self.fresh_input,
                u.cached_input_tokens,
                u.cache_write_tokens,
            ];
            if parts.iter().any(Option::is_some) {
                self.usage.input_tokens = Some(parts.iter().flatten().sum());
            }
            self.answer.usage = Some(self.usage);
        }
    }
}

impl AnthropicDecoder {
    /// A `tool_use` block starts a call (its `input` is `{}` until the deltas come).
    fn block_start(&mut self, v: &Value) -> Step {
        let block = v.get("content_block");
        if block.and_then(|b| b.get("type")).and_then(Value::as_str) != Some("tool_use") {
            return Step::Other;
        }
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        let b = block.expect("checked");
        let input = b
            .get("input")
            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
            .map(Value::to_string);
        self.calls.fragment(
            index,
            b.get("id").and_then(Value::as_str),
            b.get("name").and_then(Value::as_str),
            input.as_deref(),
        );
        Step::Content
    }

    /// Text, a tool call's `input_json_delta`, or thinking (`thinking_delta`,
    /// `signature_delta`): the first two are the answer, thinking is progress only.
    fn block_delta(&mut self, v: &Value) -> Step {
        let Some(d) = v.get("delta") else {
            return Step::Other;
        };
        let str_of = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
        match d.get("type").and_then(Value::as_str).unwrap_or("") {
            "text_delta" if !str_of("text").is_empty() => {
                self.answer.text.push_str(str_of("text"));
                Step::Content
            }
            "input_json_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                if !self.calls.has(index) {
                    return Step::Other;
                }
                self.calls
                    .fragment(index, None, None, Some(str_of("partial_json")));
                Step::Content
            }
            "thinking_delta" if !str_of("thinking").is_empty() => Step::Reasoning,
            "signature_delta" => Step::Reasoning,
            _ => Step::Other,
        }
    }
}

/// A whole answer's `tool_use` block as a call (its input as JSON text).
fn tool_use(b: &Value) -> Option<ToolCall> {
    if b.get("type").and_then(Value::as_str) != Some("tool_use") {
        return None;
    }
    Some(ToolCall {
        id: b
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: b
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        arguments: b.get("input").map_or_else(|| "{}".into(), Value::to_string),
    })
}

fn error_of(v: &Value) -> String {
    let e = v.get("error").unwrap_or(v);
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("error");
    let msg = super::classify::provider_message(e).unwrap_or_default();
    format!("{kind}: {msg}")
}

impl Decoder for AnthropicDecoder {
    fn item(&mut self, item: &SseItem) -> Result<Step, Failure> {
        let SseItem::Event { event, data } = item else {
            return Ok(Step::Other);
        };
        let kind = event.as_deref().unwrap_or("");
        if kind == "ping" {
            return Ok(Step::Other);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            Failure::new(
                Outcome::BadResponse,
                format!("unparseable stream event `{kind}`: {e}"),
            )
        })?;
        let kind = if kind.is_empty() {
            v.get("type").and_then(Value::as_str).unwrap_or("")
        } else {
            kind
        };
        match kind {
            "error" => Err(super::classify::error_in_answer(
                v.get("error").unwrap_or(&v),
                format!("error inside the stream: {}", error_of(&v)),
                self.answer.text.is_empty(),
            )),
            "message_start" => {
                if let Some(m) = v.get("message") {
                    self.message_meta(m);
                }
                Ok(Step::Other)
            }
            "content_block_start" => Ok(self.block_start(&v)),
            "content_block_delta" => Ok(self.block_delta(&v)),
            "message_delta" => {
                if let Some(r) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.answer.finish_reason = Some(r.to_string());
                }
                self.message_meta(&v);
                Ok(Step::Other)
            }
            "message_stop" => Ok(Step::Done),
            _ => Ok(Step::Other),
        }
    }

    fn end_of_stream(&mut self, saw_done: bool) -> Result<Answer, Failure> {
        if !saw_done {
            return Err(Failure::new(
                Outcome::Unavailable,
                "stream ended without message_stop (truncated)",
            ));
        }
        let mut answer = std::mem::take(&mut self.answer);
        answer.calls = std::mem::take(&mut self.calls).finish();
        Ok(answer)
    }

    fn body(&mut self, body: &[u8]) -> Result<Answer, Failure> {
        let v = super::wire::json_body(body)?;
        if v.get("type").and_then(Value::as_str) == Some("error") {
            return Err(super::classify::error_in_answer(
                v.get("error").unwrap_or(&v),
                format!("error in a 200 response: {}", error_of(&v)),
                true,
            ));
        }
        self.message_meta(&v);
        self.answer.finish_reason = v
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        let blocks = v
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| Failure::new(Outcome::BadResponse, "response has no content blocks"))?;
        self.answer.text = blocks
            .iter()
            .filter(|b| {
                b.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t == "text")
            })
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        self.answer.calls = blocks.iter().filter_map(tool_use).collect();
        Ok(std::mem::take(&mut self.answer))
    }
}
