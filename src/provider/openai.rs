//! OpenAI Chat Completions (also OpenRouter, LiteLLM, vLLM, Ollama via `baseUrl`).

use super::attempt::{Outcome, Usage};
use super::classify::Failure;
use super::http::{Answer, Decoder, Step};
use super::sse::SseItem;
use crate::prompt::Prompt;
use serde_json::{Value, json};

pub(crate) fn body(model: &str, prompt: &Prompt, stream: bool, max_tokens: u32) -> Value {
    let mut b = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ],
        "stream": stream,
        "max_tokens": max_tokens,
        "temperature": 0,
    });
    if stream {
        b["stream_options"] = json!({"include_usage": true});
    }
    b
}

#[derive(Default)]
pub(crate) struct OpenAiDecoder {
    answer: Answer,
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
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
            if delta
                .and_then(|d| d.get("tool_calls"))
                .is_some_and(|t| !t.is_null())
            {
                step = Step::Content;
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
        Ok(std::mem::take(&mut self.answer))
    }

    fn body(&mut self, body: &[u8]) -> Result<Answer, Failure> {
        let v = super::http::json_body(body)?;
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
        let text = choice
            .and_then(|c| c.get("message"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Failure::new(
                    Outcome::BadResponse,
                    "response has no choices[0].message.content",
                )
            })?;
        self.answer.text = text.to_string();
        Ok(std::mem::take(&mut self.answer))
    }
}
