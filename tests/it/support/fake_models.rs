//! The fake provider as today's models answer (docs/design.md §14): OpenAI's validation of its
//! reasoning families (o-series, gpt-5*: `max_tokens` and a `temperature` other than 1
//! refused with the exact 400s of docs/providers.md), parameters a test makes it refuse (each
//! protocol's 400 naming the parameter), and reasoning streamed before the answer in
//! both OpenAI dialects and as Anthropic thinking blocks.

#![allow(dead_code)]

use serde_json::{Value, json};

/// How a streamed answer carries its reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `delta.reasoning_content` (DeepSeek, vLLM, LiteLLM).
    ReasoningContent,
    /// `delta.reasoning` and `delta.reasoning_details` (OpenRouter).
    Reasoning,
}

/// OpenAI's own families, by the bare model name it is sent (no gateway prefix reaches
/// OpenAI): o1, o3, o4-mini, ... and gpt-5*.
pub fn reasoning_family(model: &str) -> bool {
    let digit_after_o = model.strip_prefix('o').and_then(|r| r.chars().next());
    model.starts_with("gpt-5") || digit_after_o.is_some_and(|c| c.is_ascii_digit())
}

/// The 400 (status, body) the request gets before any behaviour, if any.
pub fn refusal(
    anthropic: bool,
    model: &str,
    body: &Value,
    refused: &[String],
) -> Option<(u16, String)> {
    if let Some(p) = refused.iter().find(|p| body.get(p.as_str()).is_some()) {
        return Some((400, refused_param(anthropic, p)));
    }
    if anthropic || !reasoning_family(model) {
        return None;
    }
    if body.get("max_tokens").is_some() {
        return Some((400, json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}).to_string()));
    }
    match body.get("temperature") {
        Some(t) if t.as_f64() != Some(1.0) => Some((400, json!({"error": {"message": format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."), "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}).to_string())),
        _ => None,
    }
}

/// A refusal of `param` in the protocol's shape.
fn refused_param(anthropic: bool, param: &str) -> String {
    if anthropic {
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("{param}: Extra inputs are not permitted")}}).to_string()
    } else {
        json!({"error": {"message": format!("Unsupported parameter: '{param}' is not supported with this model."), "type": "invalid_request_error", "param": param, "code": "unsupported_parameter"}}).to_string()
    }
}

/// One reasoning delta, in the request's protocol.
pub fn reasoning_delta(anthropic: bool, dialect: Dialect, model: &str) -> String {
    if anthropic {
        return format!(
            "event: content_block_delta\ndata: {}\n\n",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "thinking. "}})
        );
    }
    let delta = match dialect {
        Dialect::ReasoningContent => json!({"content": null, "reasoning_content": "thinking. "}),
        Dialect::Reasoning => json!({"content": null, "reasoning": "thinking. ",
            "reasoning_details": [{"type": "reasoning.text", "text": "thinking. "}]}),
    };
    format!(
        "data: {}\n\n",
        json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

/// What one answer's usage says of the prompt cache (see `FakeProvider::report_cached`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheUse {
    /// The provider caches nothing for this request.
    #[default]
    None,
    /// This many prompt tokens were written to the cache (Anthropic reports it).
    Wrote(u64),
    /// This many prompt tokens were read from the cache.
    Read(u64),
}

/// OpenAI's usage object (120 prompt tokens, 42 completion), with cached reads and
/// reasoning tokens when the prefix was cached. OpenAI reports no cost: `cost` is there
/// only when the fake plays a gateway that does (OpenRouter, LiteLLM).
pub fn openai_usage(cache: CacheUse, cost: Option<f64>) -> Value {
    let mut u = json!({"prompt_tokens": 120, "completion_tokens": 42, "total_tokens": 162});
    if let CacheUse::Read(c) = cache {
        u["prompt_tokens_details"] = json!({"cached_tokens": c});
        u["completion_tokens_details"] = json!({"reasoning_tokens": 10});
    }
    if let Some(c) = cost {
        u["cost"] = json!(c);
    }
    u
}

/// Anthropic's usage object: 120 input tokens, of which cache reads and writes are
/// reported apart, as Anthropic does (`input_tokens` are the uncached ones).
pub fn anthropic_usage(cache: CacheUse, output: u64) -> Value {
    match cache {
        CacheUse::None => json!({"input_tokens": 120, "output_tokens": output}),
        CacheUse::Read(c) => {
            json!({"input_tokens": 120 - c.min(120), "cache_read_input_tokens": c.min(120),
                          "cache_creation_input_tokens": 0, "output_tokens": output})
        }
        CacheUse::Wrote(c) => {
            json!({"input_tokens": 120 - c.min(120), "cache_read_input_tokens": 0,
                          "cache_creation_input_tokens": c.min(120), "output_tokens": output})
        }
    }
}
