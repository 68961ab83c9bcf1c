//! The sim's model in a tool loop (docs/design.md §14): what it answers when the request
//! carries a conversation. It behaves as a small agent would, so that `warden simulate`
//! and tests can run loops without a network: it reads the file under review, greps a
//! symbol of the first added line, lists the file's folder (each when offered, one per
//! turn), then submits its findings through `submit_findings` — four turns when every tool
//! is offered and the turns allow it; forced to submit earlier, it submits. With tools off
//! (`ToolChoice::None`) or none offered it answers in text, as in a single-shot review.
//! Deterministic: the same request gets the same turn.

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
    let results = c
        .turns
        .iter()
        .filter(|t| matches!(t, Turn::Results(_)))
        .count();
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
        ToolChoice::Auto => match reading(&req.prompt.user, &offered).get(results) {
            Some((name, arguments)) => call(name, arguments.to_string()),
            None if offered(SUBMIT_FINDINGS) => call(SUBMIT_FINDINGS, findings.to_string()),
            None => text_answer(),
        },
    }
}

/// The calls the agent makes before it submits, one a turn: the file under review, a
/// symbol of its first added line, the file's folder; each only when offered.
fn reading(user: &str, offered: &dyn Fn(&str) -> bool) -> Vec<(&'static str, Value)> {
    let Some(path) = file_under_review(user) else {
        return Vec::new();
    };
    let folder = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let glob = if folder.is_empty() {
        "*".to_string()
    } else {
        format!("{folder}/*")
    };
    let calls = [
        (
            "read_file",
            Some(json!({"path": path, "start_line": null, "end_line": null})),
        ),
        (
            "grep",
            symbol(user).map(|s| json!({"pattern": s, "path_glob": null})),
        ),
        ("list_files", Some(json!({ "glob": glob }))),
    ];
    calls
        .into_iter()
        .filter(|(name, _)| offered(name))
        .filter_map(|(name, args)| Some((name, args?)))
        .collect()
}

/// The longest identifier (three characters or more) of the first added line: a name the
/// change uses, more likely than a keyword.
fn symbol(user: &str) -> Option<String> {
    let added = user.lines().find_map(|l| {
        let (n, rest) = l.trim_start().split_once(" + ")?;
        n.chars().all(|c| c.is_ascii_digit()).then_some(rest)
    })?;
    added
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 3 && !w.starts_with(|c: char| c.is_ascii_digit()))
        .fold(None::<&str>, |best, w| match best {
            Some(b) if b.len() >= w.len() => Some(b),
            _ => Some(w),
        })
        .map(str::to_string)
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

    /// `c` after the model's `calls` and their results.
    fn answered(c: &mut Conversation, calls: &[ToolCall]) {
        c.turns.push(Turn::Assistant {
            text: String::new(),
            calls: calls.to_vec(),
        });
        c.turns.push(Turn::Results(
            calls
                .iter()
                .map(|call| ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: "data".into(),
                    is_error: false,
                })
                .collect(),
        ));
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
        let args: Value = serde_json::from_str(&first.calls[0].arguments).unwrap();
        assert_eq!(args["path"], "src/a.rs");
        answered(&mut c, &first.calls);
        let second = respond(&req(Some(c.clone())), f.clone());
        assert_eq!(second.calls[0].name, SUBMIT_FINDINGS);
        assert_eq!(second.calls[0].arguments, f.to_string());
        c.choice = ToolChoice::None;
        let last = respond(&req(Some(c)), f);
        assert!(last.calls.is_empty() && last.text.contains("findings"));
    }

    #[test]
    fn with_every_tool_it_reads_greps_lists_then_submits_in_four_turns() {
        let f = json!({"findings": []});
        let mut r = req(None);
        r.prompt
            .user
            .push_str("\n```diff\n    10   x = 1\n    11 + let total_count = 2;\n```\n");
        let mut c = Conversation {
            tools: ["read_file", "grep", "list_files", SUBMIT_FINDINGS]
                .map(tool)
                .to_vec(),
            ..Conversation::default()
        };
        let mut names = Vec::new();
        for _ in 0..4 {
            r.conversation = Some(c.clone());
            let turn = respond(&r, f.clone());
            names.push(turn.calls[0].name.clone());
            if turn.calls[0].name == "grep" {
                let args: Value = serde_json::from_str(&turn.calls[0].arguments).unwrap();
                assert_eq!(args["pattern"], "total_count", "{args}");
            }
            answered(&mut c, &turn.calls);
        }
        assert_eq!(names, ["read_file", "grep", "list_files", SUBMIT_FINDINGS]);
        // Forced to submit early, it submits.
        c.turns.truncate(2);
        c.choice = ToolChoice::Force(SUBMIT_FINDINGS.into());
        r.conversation = Some(c);
        assert_eq!(respond(&r, f).calls[0].name, SUBMIT_FINDINGS);
    }
}
