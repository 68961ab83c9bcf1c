//! The sim's model in a tool loop (DESIGN.md §14): what it answers when the request
//! carries a conversation. It behaves as a small agent would, so that `warden simulate`
//! and tests can run loops without a network: on its first turn, when `read_file` is
//! offered, it reads the file under review; once it has results (or when only
//! `submit_findings` is offered, or forced) it submits its findings through
//! `submit_findings`; with tools off (`ToolChoice::None`) or none offered it answers in
//! text, as in a single-shot review. Deterministic: the same request gets the same turn.

use super::AttemptRequest;
use super::conversation::{FinishReason, SUBMIT_FINDINGS, ToolCall, ToolChoice, Turn};
use serde_json::{Value, json};

/// What the sim's model answered this turn.
pub(super) struct SimTurn {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub finish: FinishReason,
}

/// The turn for this request, given the findings the sim's heuristics found.
pub(super) fn respond(req: &AttemptRequest, findings: Value) -> SimTurn {
    let text_answer = || SimTurn {
        text: format!("```json\n{findings}\n```"),
        calls: Vec::new(),
        finish: FinishReason::Stop,
    };
    let Some(c) = req.conversation.as_ref().filter(|c| !c.tools.is_empty()) else {
        return text_answer();
    };
    let offered = |name: &str| c.tools.iter().any(|t| t.name == name);
    let had_results = c.turns.iter().any(|t| matches!(t, Turn::Results(_)));
    let call = |name: &str, arguments: String| SimTurn {
        text: String::new(),
        calls: vec![ToolCall {
            id: format!("sim_call_{}", c.turns.len()),
            name: name.to_string(),
            arguments,
        }],
        finish: FinishReason::ToolCalls,
    };
    match &c.choice {
        ToolChoice::None => text_answer(),
        ToolChoice::Force(name) if name == SUBMIT_FINDINGS => {
            call(SUBMIT_FINDINGS, findings.to_string())
        }
        ToolChoice::Force(name) => call(name, "{}".into()),
        ToolChoice::Auto => match file_under_review(&req.prompt.user) {
            Some(path) if offered("read_file") && !had_results => {
                call("read_file", json!({ "path": path }).to_string())
            }
            _ if offered(SUBMIT_FINDINGS) => call(SUBMIT_FINDINGS, findings.to_string()),
            _ => text_answer(),
        },
    }
}

/// The path on the prompt's `file: ` line (the file block inside the fence).
fn file_under_review(user: &str) -> Option<&str> {
    user.lines()
        .find_map(|l| l.strip_prefix("file: "))
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Prompt;
    use crate::provider::Limits;
    use crate::provider::conversation::{Conversation, ToolResult, ToolSpec};
    use std::time::Duration;

    fn req(c: Option<Conversation>) -> AttemptRequest {
        let d = Duration::from_secs(1);
        let mut r = AttemptRequest::new(
            Prompt {
                system: "s".into(),
                user: "```text\nfile: src/a.rs\nchange: modified\n```".into(),
            },
            (1, 9),
            Limits {
                connect: d,
                first_token: d,
                idle: d,
                total: d,
            },
        );
        r.conversation = c;
        r
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn reads_the_file_then_submits_and_answers_text_with_tools_off() {
        let f = json!({"findings": []});
        assert!(respond(&req(None), f.clone()).calls.is_empty());
        let mut c = Conversation {
            tools: vec![tool("read_file"), tool(SUBMIT_FINDINGS)],
            ..Conversation::default()
        };
        let first = respond(&req(Some(c.clone())), f.clone());
        assert_eq!(first.finish, FinishReason::ToolCalls);
        assert_eq!(first.calls[0].name, "read_file");
        assert_eq!(first.calls[0].arguments, "{\"path\":\"src/a.rs\"}");
        c.turns = vec![
            Turn::Assistant {
                text: String::new(),
                calls: first.calls.clone(),
            },
            Turn::Results(vec![ToolResult {
                call_id: first.calls[0].id.clone(),
                name: "read_file".into(),
                content: "fn a() {}".into(),
                is_error: false,
            }]),
        ];
        let second = respond(&req(Some(c.clone())), f.clone());
        assert_eq!(second.calls[0].name, SUBMIT_FINDINGS);
        assert_eq!(second.calls[0].arguments, f.to_string());
        c.choice = ToolChoice::None;
        let last = respond(&req(Some(c)), f);
        assert!(last.calls.is_empty() && last.text.contains("findings"));
    }
}
