//! The fake provider's request checks, as strict as the real APIs (a fake must never be
//! more lenient than what it stands for): a request the real service answers with a 400
//! gets that 400 here, in the protocol's shape, before any scripted behaviour.
//!
//! - Tool-call ids: Anthropic takes `tool_use.id` matching `^[a-zA-Z0-9_-]+$`, unique in
//!   the request, and every `tool_result` must answer a `tool_use` of the assistant
//!   message just before it; OpenAI refuses a `tool_calls[].id` over 40 characters, and a
//!   `role: tool` message whose `tool_call_id` no earlier assistant call has.
//! - Strict functions (OpenAI `strict: true`): every object of the schema closes its
//!   properties (`additionalProperties: false`) and requires every one of them.
//! - `tool_choice` naming a tool the request does not offer.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::HashSet;

/// The 400 (status, body) this request gets, if any.
pub fn refusal(anthropic: bool, body: &Value) -> Option<(u16, String)> {
    let why = if anthropic {
        anthropic_transcript(body).or_else(|| forced_tool_offered(body, true))
    } else {
        openai_transcript(body)
            .or_else(|| strict_functions(body))
            .or_else(|| forced_tool_offered(body, false))
    }?;
    let doc = if anthropic {
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": why}})
    } else {
        json!({"error": {"message": why, "type": "invalid_request_error", "param": "messages", "code": null}})
    };
    Some((400, doc.to_string()))
}

fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

fn anthropic_transcript(body: &Value) -> Option<String> {
    let mut seen = HashSet::new();
    let mut previous: HashSet<String> = HashSet::new();
    let unanswered = |i: usize, ids: &HashSet<String>| {
        format!(
            "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}",
            ids.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    for (i, m) in messages(body).iter().enumerate() {
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        let answered: HashSet<String> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
            .collect();
        let missing: HashSet<String> = previous.difference(&answered).cloned().collect();
        if !missing.is_empty() {
            return Some(unanswered(i, &missing));
        }
        let mut this_turn = HashSet::new();
        for (j, b) in blocks.iter().enumerate() {
            match b["type"].as_str() {
                Some("tool_use") => {
                    let id = b["id"].as_str().unwrap_or("");
                    let ok = !id.is_empty()
                        && id
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if !ok {
                        return Some(format!(
                            "messages.{i}.content.{j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        ));
                    }
                    if !seen.insert(id.to_string()) {
                        return Some(format!(
                            "messages.{i}.content.{j}: `tool_use` ids must be unique"
                        ));
                    }
                    this_turn.insert(id.to_string());
                }
                Some("tool_result") => {
                    let id = b["tool_use_id"].as_str().unwrap_or("");
                    if !previous.contains(id) {
                        return Some(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                }
                _ => {}
            }
        }
        previous = this_turn;
    }
    (!previous.is_empty()).then(|| unanswered(messages(body).len(), &previous))
}

fn openai_transcript(body: &Value) -> Option<String> {
    let mut calls = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages(body).iter().enumerate() {
        if m["role"] != "tool" && !open.is_empty() {
            return Some(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {} (messages[{i}])",
                open.join(", ")
            ));
        }
        for (j, c) in m["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let id = c["id"].as_str().unwrap_or("");
            if id.chars().count() > 40 {
                return Some(format!(
                    "Invalid 'messages[{i}].tool_calls[{j}].id': string too long. Expected a string with maximum length 40, but got a string with length {} instead.",
                    id.chars().count()
                ));
            }
            calls.insert(id.to_string());
            open.push(id.to_string());
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or("");
            open.retain(|o| o != id);
            if !calls.contains(id) {
                return Some(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[{i}], tool_call_id {id:?})"
                ));
            }
        }
    }
    None
}

/// OpenAI's rule for `strict: true` functions (Structured Outputs).
fn strict_functions(body: &Value) -> Option<String> {
    for t in body["tools"].as_array().cloned().unwrap_or_default() {
        let f = &t["function"];
        if f["strict"] == true
            && let Err(why) = strict_schema(&f["parameters"], "()")
        {
            return Some(format!(
                "Invalid schema for function '{}': In context={why}",
                f["name"].as_str().unwrap_or("")
            ));
        }
    }
    None
}

fn strict_schema(v: &Value, at: &str) -> Result<(), String> {
    if let Some(props) = v["properties"].as_object() {
        if v["additionalProperties"] != false {
            return Err(format!(
                "{at}, 'additionalProperties' is required to be supplied and to be false."
            ));
        }
        let required: HashSet<&str> = v["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (k, p) in props {
            if !required.contains(k.as_str()) {
                return Err(format!(
                    "{at}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{k}'."
                ));
            }
            strict_schema(p, &format!("('properties', '{k}')"))?;
        }
    }
    if v.get("items").is_some() {
        strict_schema(&v["items"], &format!("{at}, 'items'"))?;
    }
    Ok(())
}

/// A `tool_choice` that forces a tool the request does not offer.
fn forced_tool_offered(body: &Value, anthropic: bool) -> Option<String> {
    let forced = if anthropic {
        (body["tool_choice"]["type"] == "tool").then(|| body["tool_choice"]["name"].clone())
    } else {
        body["tool_choice"]["function"]["name"]
            .as_str()
            .map(|n| json!(n))
    }?;
    let offered = body["tools"].as_array().is_some_and(|t| {
        t.iter()
            .any(|t| t["name"] == forced || t["function"]["name"] == forced)
    });
    (!offered).then(|| format!("tool_choice names a tool that is not in tools: {forced}"))
}

/// How the fake names the tool calls it sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CallIds {
    /// `call_<i>` / `toolu_<i>` by the call's place in the answer: the same ids every
    /// turn (an OpenAI-compatible server that numbers calls per answer).
    #[default]
    PerAnswer,
    /// No id at all (OpenAI-compatible servers that omit it).
    Missing,
    /// Ids of 64 characters.
    Long,
}

impl CallIds {
    /// The id of the call at `i`, in this protocol (None: the field is left out).
    pub fn id(self, anthropic: bool, i: usize) -> Option<String> {
        let prefix = if anthropic { "toolu" } else { "call" };
        match self {
            CallIds::PerAnswer => Some(format!("{prefix}_{i}")),
            CallIds::Missing => None,
            CallIds::Long => Some(format!("{prefix}_{i}_{}", "x".repeat(56))),
        }
    }
}

/// Whether an OpenAI stream ends with its usage chunk: only when the request asked with
/// `stream_options.include_usage` (a request not streamed always has its usage).
pub fn wants_usage_chunk(body: &Value) -> bool {
    body["stream_options"]["include_usage"] == true
}

/// What the prompt cache does for this request (`cached`: the tokens a hit reads, None:
/// the provider caches nothing). The prefix is the system block and the tools; OpenAI
/// caches every prefix it saw, Anthropic only one marked with `cache_control`, and
/// reports writing it the first time. Identical prefixes sent at once race as they do at
/// the providers: the first one seen writes.
pub fn cache_use(
    seen: &mut HashSet<String>,
    cached: Option<u64>,
    body: &Value,
    anthropic: bool,
) -> super::fake_models::CacheUse {
    use super::fake_models::CacheUse;
    let Some(n) = cached else {
        return CacheUse::None;
    };
    let prefix = if anthropic {
        let marked = body["system"].to_string().contains("cache_control")
            || body["tools"].to_string().contains("cache_control");
        if !marked {
            return CacheUse::None;
        }
        format!("{}|{}|{}", body["model"], body["system"], body["tools"])
    } else {
        format!(
            "{}|{}|{}",
            body["model"], body["messages"][0], body["tools"]
        )
    };
    // Both APIs cache only a prefix of at least 1024 tokens (Anthropic's Haiku models:
    // 2048); shorter prompts are neither written nor read. Tokens estimated at 4 bytes.
    let minimum = if anthropic && body["model"].to_string().contains("haiku") {
        2048
    } else {
        1024
    };
    if prefix.len() / 4 < minimum {
        return CacheUse::None;
    }
    match (seen.insert(prefix), anthropic) {
        (false, _) => CacheUse::Read(n),
        (true, true) => CacheUse::Wrote(n),
        (true, false) => CacheUse::None,
    }
}

/// The tool a request forces (Anthropic `tool_choice: {type: "tool"}`, OpenAI
/// `tool_choice: {type: "function"}`), if any.
fn forced(body: &Value, anthropic: bool) -> Option<String> {
    let c = &body["tool_choice"];
    let name = if anthropic {
        (c["type"] == "tool").then(|| c["name"].as_str())?
    } else {
        c["function"]["name"].as_str()
    };
    name.map(str::to_string)
}

/// The behaviour as the real API plays it under the request's `tool_choice`: a forced
/// tool is the one the answer calls. Scripted calls of other tools become a call of it
/// (an empty findings list for `submit_findings`); an answer in text that holds a
/// findings object becomes `submit_findings` with that object (Anthropic's forced
/// structured output never answers in text). `tool_choice: none` turns calls into text.
pub fn honour_tool_choice(body: &Value, anthropic: bool, b: super::Behavior) -> super::Behavior {
    use super::Behavior;
    let none = body["tool_choice"] == "none" || body["tool_choice"]["type"] == "none";
    if none && let Behavior::ToolCalls(_) = b {
        return Behavior::Answer(super::findings_answer(json!([])));
    }
    let Some(name) = forced(body, anthropic) else {
        return b;
    };
    let empty = if name == "submit_findings" {
        json!({"findings": []}).to_string()
    } else {
        "{}".to_string()
    };
    match b {
        Behavior::ToolCalls(calls) => {
            let kept: Vec<_> = calls.into_iter().filter(|(n, _)| *n == name).collect();
            if kept.is_empty() {
                Behavior::ToolCalls(vec![(name, empty)])
            } else {
                Behavior::ToolCalls(kept)
            }
        }
        Behavior::Answer(text) if name == "submit_findings" => match findings_object(&text) {
            Some(object) => Behavior::ToolCalls(vec![(name, object)]),
            None => Behavior::Answer(text),
        },
        // A forced tool's input is JSON from its first byte: what the cap cut is the
        // arguments, from the findings object on (any prose before it is not sent).
        Behavior::Cut(text) if name == "submit_findings" => {
            let from = match text.find("```json\n") {
                Some(i) => i + "```json\n".len(),
                None => text.find("{\"findings\"").unwrap_or(0),
            };
            Behavior::CutCalls(vec![(name, text[from..].to_string())])
        }
        other => other,
    }
}

/// The findings object an answer's text holds (its fenced JSON, or the whole text).
fn findings_object(text: &str) -> Option<String> {
    let inner = text
        .rsplit_once("```json")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map_or(text, |(inner, _)| inner);
    let v: Value = serde_json::from_str(inner.trim()).ok()?;
    v.get("findings")
        .filter(|f| f.is_array())
        .map(|_| v.to_string())
}
