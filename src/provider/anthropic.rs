//! Anthropic Messages.

use super::attempt::{Outcome, Usage};
use super::classify::Failure;
use super::http::{Answer, Decoder, Step};
use super::sse::SseItem;
use crate::prompt::Prompt;
use serde_json::{Value, json};

pub(crate) const VERSION: &str = "2023-06-01";

pub(crate) fn body(model: &str, prompt: &Prompt, stream: bool, max_tokens: u32) -> Value {
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": prompt.system,
        "messages": [{"role": "user", "content": prompt.user}],
        "stream": stream,
        "temperature": 0,
    })
}

#[derive(Default)]
pub(crate) struct AnthropicDecoder {
    answer: Answer,
    usage: Usage,
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
            if let Some(i) = u.get("input_tokens").and_then(Value::as_u64) {
                self.usage.input_tokens = Some(i);
            }
            if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                self.usage.output_tokens = Some(o);
            }
            self.answer.usage = Some(self.usage);
        }
    }
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
            "content_block_delta" => {
                let text = v
                    .get("delta")
                    .filter(|d| d.get("type").and_then(Value::as_str) == Some("text_delta"))
                    .and_then(|d| d.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if text.is_empty() {
                    return Ok(Step::Other);
                }
                self.answer.text.push_str(text);
                Ok(Step::Content)
            }
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
        Ok(std::mem::take(&mut self.answer))
    }

    fn body(&mut self, body: &[u8]) -> Result<Answer, Failure> {
        let v = super::http::json_body(body)?;
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
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        Ok(std::mem::take(&mut self.answer))
    }
}
