//! The fake provider as a small agent (docs/design.md §14): it reads the request it was sent
//! and answers as a model in a tool loop would. Offered `read_file` and holding no tool
//! results yet, it reads the file under review (the prompt's `file:` line); with results
//! (or `submit_findings` forced) it submits its findings; offered no tools it answers in
//! text, as in a single-shot review. Either protocol.

#![allow(dead_code)]

use super::fake_tools::{call, submit};
use super::{Behavior, findings_answer};
use serde_json::{Value, json};

/// What the agent answers to this request body.
pub fn respond(body: &Value, anthropic: bool) -> Behavior {
    let offered = |name: &str| {
        body["tools"].as_array().is_some_and(|t| {
            t.iter()
                .any(|t| t["name"] == name || t["function"]["name"] == name)
        })
    };
    let forced = body["tool_choice"]["name"] == "submit_findings"
        || body["tool_choice"]["function"]["name"] == "submit_findings";
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let had_results = messages.iter().any(|m| {
        m["role"] == "tool"
            || m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    });
    let _ = anthropic;
    if forced || (had_results && offered("submit_findings")) {
        return Behavior::ToolCalls(vec![submit(json!([]))]);
    }
    if offered("read_file")
        && let Some(path) = file_under_review(&messages)
    {
        return Behavior::ToolCalls(vec![call("read_file", json!({ "path": path }))]);
    }
    Behavior::Answer(findings_answer(json!([])))
}

/// A deeper agent: `reads` tool turns before it submits (the file under review, a grep for
/// `compute`, a listing of `src/`, then the file again), so a unit takes `reads + 1`
/// turns when its cap allows; forced to submit earlier, it submits.
pub fn respond_deep(body: &Value, reads: usize) -> Behavior {
    let forced = body["tool_choice"]["name"] == "submit_findings"
        || body["tool_choice"]["function"]["name"] == "submit_findings";
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let results = messages
        .iter()
        .filter(|m| {
            m["role"] == "tool"
                || m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        })
        .count();
    let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let Some(path) = file_under_review(&messages).filter(|_| tools) else {
        // Offered no tools (a single-shot review): the findings in text.
        return Behavior::Answer(findings_answer(json!([])));
    };
    if forced || results >= reads {
        return Behavior::ToolCalls(vec![submit(json!([]))]);
    }
    let plan = [
        call("read_file", json!({ "path": path })),
        call("grep", json!({"pattern": "compute", "path_glob": null})),
        call("list_files", json!({"glob": "src/*"})),
    ];
    let mut next = plan[results % plan.len()].clone();
    if results >= plan.len() {
        // Past the plan: the file again, another range (not a repeated call).
        next = call(
            "read_file",
            json!({"path": path, "start_line": results, "end_line": null}),
        );
    }
    Behavior::ToolCalls(vec![next])
}

/// The path on the user message's `file: ` line.
fn file_under_review(messages: &[Value]) -> Option<String> {
    let user = messages.iter().find(|m| m["role"] == "user")?;
    let text = match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    text.lines()
        .find_map(|l| l.strip_prefix("file: "))
        .map(|p| p.trim().to_string())
}
