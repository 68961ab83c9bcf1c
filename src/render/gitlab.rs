//! GitLab Code Quality (the merge request widget's `codequality` report artifact): a JSON
//! array of issues. The fingerprint is the finding id, which hashes skill, path, title and
//! line text but not the line number, so it survives line shifts between pipelines.

use crate::report::Report;
use crate::severity::Severity;
use serde_json::json;

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
    // GitLab needs unique fingerprints.
    let issues: Vec<_> = r
        .findings
        .iter()
        .zip(super::unique_ids(&r.findings))
        .map(|(f, fingerprint)| {
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
