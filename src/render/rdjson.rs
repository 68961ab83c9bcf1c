//! reviewdog's Diagnostic Format: `rdjsonl` (one Diagnostic per line) and `rdjson` (one
//! DiagnosticResult), so `reviewdog -f=rdjsonl` posts findings as review comments on
//! GitHub, GitLab, Gitea, Bitbucket and Gerrit. Units that were not reviewed are not
//! diagnostics (they have no problem to point at); the other formats report them.

use crate::report::{Finding, Report};
use crate::severity::Severity;
use serde_json::{Value, json};

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Critical | Severity::High => "ERROR",
        Severity::Medium => "WARNING",
        Severity::Low | Severity::Info => "INFO",
    }
}

fn source() -> Value {
    json!({"name": "warden", "url": "https://github.com/warden-review/warden"})
}

/// One finding as a Diagnostic: linewise range (no columns, end line included), the rule
/// id as its code, and the finding's replacement (if any) as a suggestion for its lines.
fn diagnostic(f: &Finding) -> Value {
    let mut message = format!("[{}] {}", f.severity, f.title);
    if !f.description.is_empty() {
        message = format!("{message}\n\n{}", f.description);
    }
    if let Some(s) = &f.suggestion {
        message = format!("{message}\n\nSuggestion: {s}");
    }
    let range = json!({
        "start": {"line": f.start_line},
        "end": {"line": f.end_line.max(f.start_line)},
    });
    let mut d = json!({
        "message": message,
        "location": {"path": f.path, "range": range},
        "severity": severity(f.severity),
        "source": source(),
        "code": {"value": super::sarif::rule_id(&f.skill)},
    });
    if let Some(text) = &f.replacement {
        d["suggestions"] = json!([{"range": range, "text": text}]);
    }
    d
}

/// `rdjsonl`: one Diagnostic per line, one line per finding.
pub fn render_lines(r: &Report) -> String {
    r.findings
        .iter()
        .map(|f| format!("{}\n", diagnostic(f)))
        .collect()
}

/// `rdjson`: one DiagnosticResult holding every finding.
pub fn render_result(r: &Report) -> String {
    let doc = json!({
        "source": source(),
        "diagnostics": r.findings.iter().map(diagnostic).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("rdjson serializes");
    s.push('\n');
    s
}
