//! The conversation seam: tool definitions, the model's tool calls, warden's tool results
//! and the transcript of a tool loop (docs/design.md §14), in one protocol-neutral shape.
//!
//! A unit's transcript is kept in these types, never in either wire's JSON: the encoders
//! (`openai::body`, `anthropic::body`) turn prompt + [`Conversation`] into the route's own
//! request, so a loop that started on an OpenAI route can fail over to an Anthropic route
//! mid-way (and back) with the same transcript. The decoders turn either wire's answer
//! (streamed or not, parallel calls included) into [`ToolCall`]s with their arguments kept
//! as the raw text the model sent: invalid JSON is the loop's to answer with a tool error,
//! never a failed attempt.
//!
//! Shape of a request: the prompt's system message, then its user message (the chunk),
//! then the turns in order. A [`Turn::Assistant`] is what the model answered in an earlier
//! turn (its text and calls, sent back as the protocols require); a [`Turn::Results`] is
//! warden's answers to those calls. `Conversation::default()` is "no tools, no turns".

use serde_json::Value;

/// One tool the model may call: a name, what it does, and its arguments as a JSON Schema
/// object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `[A-Za-z0-9_-]{1,64}` (both protocols' rule).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The arguments, as a JSON Schema object.
    pub parameters: Value,
}

/// Which tools the model may or must call this turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides (it may answer in text).
    #[default]
    Auto,
    /// No tool calls this turn (the final turn of a loop, tools off).
    None,
    /// This tool must be called (`submit_findings` for structured findings).
    Force(String),
}

/// A call the model made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id for it (the result names it).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model sent them: JSON text, possibly invalid.
    pub arguments: String,
}

/// Warden's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The [`ToolCall::id`] it answers.
    pub call_id: String,
    /// The tool's name (Anthropic does not need it; OpenAI-compatible servers may).
    pub name: String,
    /// What the tool returned (already capped and fenced by the tool layer).
    pub content: String,
    /// The call failed (bad arguments, a path outside the tree, a cap): the model is told.
    pub is_error: bool,
}

/// One turn of the transcript after the prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// What the model answered: its text (may be empty) and its calls.
    Assistant {
        /// The answer's text.
        text: String,
        /// The calls it made (in order).
        calls: Vec<ToolCall>,
    },
    /// Warden's results for the calls of the assistant turn before.
    Results(Vec<ToolResult>),
}

/// The tools and the transcript of one unit's loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversation {
    /// The tools offered (empty: none, and no `tool_choice` is sent).
    pub tools: Vec<ToolSpec>,
    /// Which tools may or must be called this turn.
    pub choice: ToolChoice,
    /// The turns after the prompt, oldest first.
    pub turns: Vec<Turn>,
}

/// How the provider said the answer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// It finished (`stop`, `end_turn`, `stop_sequence`).
    Stop,
    /// The output cap cut it (`length`, `max_tokens`): never a clean review.
    Length,
    /// It stopped to have its tool calls answered (`tool_calls`, `tool_use`).
    ToolCalls,
    /// Anything else, as the provider spelled it (`content_filter`, `refusal`, ...).
    Other(String),
}

impl FinishReason {
    /// The reason as either protocol spells it.
    pub(crate) fn from_wire(s: &str) -> FinishReason {
        match s {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "tool_use" | "function_call" => FinishReason::ToolCalls,
            other => FinishReason::Other(other.to_string()),
        }
    }

    /// Whether the output cap cut the answer.
    pub(crate) fn is_cut(&self) -> bool {
        *self == FinishReason::Length
    }

    /// Whether the provider says the model refused (Anthropic `refusal`, OpenAI's and
    /// Azure's `content_filter`), docs/design.md §15.
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(self, FinishReason::Other(s) if s == "refusal" || s == "content_filter")
    }
}

/// The name of the tool through which findings arrive (structured output on Anthropic,
/// and a tool loop's last call): its arguments are the findings object of docs/design.md §9.
pub const SUBMIT_FINDINGS: &str = "submit_findings";

/// The longest call id every protocol takes (OpenAI refuses a `tool_calls[].id` over
/// 40 characters; Anthropic takes longer ones).
pub(crate) const MAX_ID_CHARS: usize = 40;

/// Gives each of this turn's `calls` an id unique within the transcript (`turns` before
/// it) and valid on every protocol (docs/design.md §15), whatever the provider sent: none,
/// the same `call_0` every turn, or one over [`MAX_ID_CHARS`]. A provider's id is kept
/// when it is valid and new; otherwise the call gets `wc_<n>`, `n` its place among the
/// transcript's calls. Only the transcript sees these ids: each request sends the whole
/// transcript, so a call and its result always name the same one.
pub fn unique_ids(turns: &[Turn], calls: &mut [ToolCall]) {
    let mut used: std::collections::HashSet<String> = turns
        .iter()
        .flat_map(|t| match t {
            Turn::Assistant { calls, .. } => calls.iter().map(|c| c.id.clone()).collect(),
            Turn::Results(_) => Vec::new(),
        })
        .collect();
    let before = used.len();
    for (i, call) in calls.iter_mut().enumerate() {
        let mut n = before + i;
        let valid = !call.id.is_empty()
            && call.id.len() <= MAX_ID_CHARS
            && call
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid || used.contains(&call.id) {
            call.id = loop {
                let id = format!("wc_{n}");
                n += 1;
                if !used.contains(&id) {
                    break id;
                }
            };
        }
        used.insert(call.id.clone());
    }
}

/// An id both protocols accept (`[A-Za-z0-9_-]{1,40}`: Anthropic's characters, OpenAI's
/// length): a call made on one route may be answered on another. The same id maps to the
/// same text every time, so a call and its result still match.
pub(crate) fn wire_id(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_ID_CHARS)
        .collect();
    if s.is_empty() { "call".into() } else { s }
}

/// A call's arguments as a JSON object, for Anthropic's `tool_use.input` (which must be
/// one): invalid or non-object text is carried as `{"invalid_arguments": "<text>"}` so the
/// transcript stays whole and the model sees what it sent.
pub(crate) fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => Value::Object(Default::default()),
        _ => serde_json::json!({ "invalid_arguments": arguments }),
    }
}

/// Streamed tool calls, assembled from their fragments: OpenAI's `delta.tool_calls`
/// keyed by `index`, Anthropic's `tool_use` blocks keyed by their content block index.
/// Arguments are concatenated as they arrive and never parsed here.
#[derive(Debug, Default)]
pub(crate) struct CallParts {
    parts: Vec<(u64, ToolCall)>,
}

impl CallParts {
    /// The call at `index`, started when first seen.
    fn at(&mut self, index: u64) -> &mut ToolCall {
        let pos = match self.parts.iter().position(|(i, _)| *i == index) {
            Some(p) => p,
            None => {
                self.parts.push((
                    index,
                    ToolCall {
                        id: String::new(),
                        name: String::new(),
                        arguments: String::new(),
                    },
                ));
                self.parts.len() - 1
            }
        };
        &mut self.parts[pos].1
    }

    /// A fragment: any of id, name and a piece of arguments (absent parts are `None`).
    pub(crate) fn fragment(
        &mut self,
        index: u64,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) {
        let call = self.at(index);
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            call.id = id.to_string();
        }
        if let Some(name) = name.filter(|s| !s.is_empty())
            && call.name.is_empty()
        {
            call.name = name.to_string();
        }
        if let Some(a) = arguments {
            call.arguments.push_str(a);
        }
    }

    /// Whether a call has started at this index (Anthropic: a `tool_use` block).
    pub(crate) fn has(&self, index: u64) -> bool {
        self.parts.iter().any(|(i, _)| *i == index)
    }

    /// The calls in the order they started; a call without an id gets one from its
    /// position, and one without arguments gets `{}`.
    pub(crate) fn finish(self) -> Vec<ToolCall> {
        self.parts
            .into_iter()
            .enumerate()
            .map(|(n, (_, mut c))| {
                if c.id.is_empty() {
                    c.id = format!("call_{n}");
                }
                if c.arguments.trim().is_empty() {
                    c.arguments = "{}".into();
                }
                c
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_of_both_protocols() {
        assert_eq!(FinishReason::from_wire("stop"), FinishReason::Stop);
        assert_eq!(FinishReason::from_wire("end_turn"), FinishReason::Stop);
        assert!(FinishReason::from_wire("length").is_cut());
        assert!(FinishReason::from_wire("max_tokens").is_cut());
        assert_eq!(FinishReason::from_wire("tool_use"), FinishReason::ToolCalls);
        assert_eq!(
            FinishReason::from_wire("tool_calls"),
            FinishReason::ToolCalls
        );
        assert_eq!(
            FinishReason::from_wire("refusal"),
            FinishReason::Other("refusal".into())
        );
    }

    #[test]
    fn fragments_join_by_index_in_the_order_calls_started() {
        let mut p = CallParts::default();
        p.fragment(1, Some("b"), Some("grep"), Some(""));
        p.fragment(0, Some("a"), Some("read_file"), Some("{\"pa"));
        p.fragment(1, None, None, Some("{\"pattern\": \"x\"}"));
        p.fragment(0, None, None, Some("th\": \"src/a.rs\"}"));
        p.fragment(2, None, Some("list_files"), None);
        let calls = p.finish();
        assert_eq!(calls.len(), 3);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("b", "grep")
        );
        assert_eq!(calls[0].arguments, "{\"pattern\": \"x\"}");
        assert_eq!(calls[1].arguments, "{\"path\": \"src/a.rs\"}");
        assert_eq!(
            (calls[2].id.as_str(), calls[2].arguments.as_str()),
            ("call_2", "{}")
        );
    }

    fn named(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter()
            .map(|id| ToolCall {
                id: id.to_string(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })
            .collect()
    }

    #[test]
    fn ids_are_unique_in_the_transcript_and_valid_everywhere() {
        let long = "call_".to_string() + &"9".repeat(60);
        let first = named(&["call_0", "call_0", "", &long, "bad id!", "ok-1"]);
        let mut calls = first.clone();
        unique_ids(&[], &mut calls);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0", "wc_1", "wc_2", "wc_3", "wc_4", "ok-1"]);
        let turns = vec![
            Turn::Assistant {
                text: String::new(),
                calls,
            },
            Turn::Results(Vec::new()),
        ];
        // The next turn repeats `call_0` and `ok-1`, and sends no id: all new.
        let mut next = named(&["call_0", "ok-1", "", "mine_7"]);
        unique_ids(&turns, &mut next);
        let all: Vec<String> = turns
            .iter()
            .flat_map(|t| match t {
                Turn::Assistant { calls, .. } => calls.clone(),
                Turn::Results(_) => vec![],
            })
            .chain(next.clone())
            .map(|c| c.id)
            .collect();
        let set: std::collections::HashSet<&String> = all.iter().collect();
        assert_eq!(set.len(), all.len(), "{all:?}");
        assert!(all.iter().all(|id| wire_id(id) == *id), "{all:?}");
        assert_eq!(next[3].id, "mine_7", "a new valid id is kept");
    }

    #[test]
    fn ids_and_arguments_cross_protocols_without_loss() {
        assert_eq!(wire_id("call_Ab-1"), "call_Ab-1");
        assert_eq!(wire_id("call.1/x"), "call_1_x");
        assert_eq!(wire_id(""), "call");
        assert_eq!(wire_id(&"x".repeat(64)).len(), MAX_ID_CHARS);
        assert_eq!(
            arguments_object("{\"path\": \"a\"}"),
            serde_json::json!({"path": "a"})
        );
        assert_eq!(arguments_object(""), serde_json::json!({}));
        assert_eq!(
            arguments_object("{\"path\": "),
            serde_json::json!({"invalid_arguments": "{\"path\": "})
        );
        assert_eq!(
            arguments_object("[1]"),
            serde_json::json!({"invalid_arguments": "[1]"})
        );
    }
}
