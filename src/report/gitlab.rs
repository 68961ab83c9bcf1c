//! GitLab Code Quality (the merge request widget's `codequality` report artifact): a JSON
//! array of issues. The fingerprint is the finding id, which hashes skill, path, title and
//! line text but not the line number, so it survives line shifts between pipelines.

use super::Report;
use crate::severity::Severity;
use serde_json::json;
use std::collections::HashMap;

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "blocker",
        Severity::High => "critical",
        Severity::Medium => "major",
        Severity::Low => "minor",
        Severity::Info => "info",
    }
}

/// The report as a GitLab Code Quality array (one issue per finding).
pub fn render(r: &Report) -> String {
    // Two findings can share an id (the same line text twice in a file); GitLab needs
    // unique fingerprints, so a repeat gets its occurrence number.
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let issues: Vec<_> = r
        .findings
        .iter()
        .map(|f| {
            let n = seen.entry(f.id.as_str()).or_default();
            *n += 1;
            let fingerprint = match *n {
                1 => f.id.clone(),
                n => format!("{}-{n}", f.id),
            };
            let mut description = format!("{} ({})", f.title, f.skill);
            if !f.description.is_empty() {
                description = format!("{description}: {}", f.description);
            }
            json!({
                "description": description,
                "check_name": super::sarif::rule_id(&f.skill),
                "fingerprint": fingerprint,
                "severity": severity(f.severity),
                "location": {
                    "path": f.path,
                    "lines": {"begin": f.start_line, "end": f.end_line.max(f.start_line)},
                },
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&issues).expect("code quality serializes");
    s.push('\n');
    s
}
