//! SARIF 2.1.0 for code-scanning tools. Rule ids are stable (`warden/<skill>`), results
//! carry fingerprints that survive line shifts, and every unit that was not reviewed is a
//! tool execution notification with `executionSuccessful: false` on the invocation.

use super::{Report, ReviewOutcome};
use crate::severity::Severity;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

pub fn rule_id(skill: &str) -> String {
    format!("warden/{skill}")
}

pub fn render(r: &Report) -> String {
    let skills: BTreeSet<&str> = r
        .units
        .iter()
        .map(|u| u.skill.as_str())
        .chain(r.findings.iter().map(|f| f.skill.as_str()))
        .collect();
    let rules: Vec<Value> = skills
        .iter()
        .map(|s| {
            json!({
                "id": rule_id(s),
                "name": s,
                "shortDescription": {"text": format!("Findings of the warden skill `{s}`")},
                "defaultConfiguration": {"level": "warning"},
            })
        })
        .collect();
    let rule_index = |s: &str| skills.iter().position(|x| *x == s).unwrap_or(0);
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let mut message = f.title.clone();
            if !f.description.is_empty() {
                message = format!("{message}: {}", f.description);
            }
            if let Some(s) = &f.suggestion {
                message = format!("{message} Suggestion: {s}");
            }
            json!({
                "ruleId": rule_id(&f.skill),
                "ruleIndex": rule_index(&f.skill),
                "level": level(f.severity),
                "message": {"text": message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": f.start_line, "endLine": f.end_line.max(f.start_line)},
                    }
                }],
                "partialFingerprints": {
                    "wardenFinding/v1": format!("{:016x}", super::fnv1a(&[&f.skill, &f.path, &f.title.to_lowercase(), &f.line_text])),
                },
                "properties": {
                    "id": f.id,
                    "severity": f.severity,
                    "confidence": f.confidence,
                    "route": f.route,
                    "model": f.model,
                },
            })
        })
        .collect();
    let notifications: Vec<Value> = r
        .not_reviewed()
        .map(|u| {
            json!({
                "level": "error",
                "message": {"text": format!(
                    "NOT reviewed ({}): {}:{}-{} by {}: {}",
                    u.status.as_str(), u.path, u.start_line, u.end_line, u.skill, u.reason
                )},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": u.path, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": u.start_line.max(1), "endLine": u.end_line.max(u.start_line).max(1)},
                    }
                }],
                "descriptor": {"id": "warden/not-reviewed"},
                "associatedRule": {"id": rule_id(&u.skill), "index": rule_index(&u.skill)},
                "properties": {"status": u.status, "skill": u.skill, "route": u.route},
            })
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "warden",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/warden-review/warden",
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "file:///"}},
            "results": results,
            "invocations": [{
                "executionSuccessful": r.outcome == ReviewOutcome::Complete,
                "toolExecutionNotifications": notifications,
                "properties": {
                    "outcome": r.outcome,
                    "summary": r.summary,
                    "durationMs": r.duration_ms,
                    "budgetMs": r.budget_ms,
                },
            }],
            "properties": {"target": r.target},
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("SARIF serializes");
    s.push('\n');
    s
}
