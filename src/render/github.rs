//! GitHub Actions workflow commands: one `::error`/`::warning`/`::notice` line per finding,
//! and one per unit that was not reviewed, escaped as the runner expects.

use crate::report::Report;
use crate::severity::Severity;
use crate::text::escape::{gh_data as escape_data, gh_property as escape_property};
use std::fmt::Write;

fn command(s: Severity) -> &'static str {
    match s {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "notice",
    }
}

/// GitHub Actions workflow commands: one annotation per finding and per unit not reviewed, and a closing notice.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    for f in &r.findings {
        let mut msg = f.description.clone();
        if let Some(s) = &f.suggestion {
            msg = format!("{msg}\nSuggestion: {s}");
        }
        let _ = writeln!(
            out,
            "::{} file={},line={},endLine={},title={}::{}",
            command(f.severity),
            escape_property(&f.path),
            f.start_line,
            f.end_line.max(f.start_line),
            escape_property(&format!("[{}] {} ({})", f.severity, f.title, f.skill)),
            escape_data(&msg)
        );
    }
    for u in r.not_reviewed() {
        let _ = writeln!(
            out,
            "::warning file={},line={},endLine={},title={}::{}",
            escape_property(&u.path),
            u.start_line.max(1),
            u.end_line.max(u.start_line).max(1),
            escape_property(&format!(
                "NOT reviewed ({}) by {}",
                u.status.as_str(),
                u.skill
            )),
            escape_data(&u.reason)
        );
    }
    if let Some(w) = r.trust.as_ref().and_then(|t| t.warning()) {
        let _ = writeln!(out, "::warning title=warden trust::{}", escape_data(&w));
    }
    for w in &r.warnings {
        let title = format!("warden {}", w.source.as_str());
        let _ = writeln!(
            out,
            "::warning title={}::{}",
            escape_property(&title),
            escape_data(&w.message)
        );
    }
    // Each dropped finding, named (docs/design.md §14).
    for d in &r.dropped_findings {
        let msg = format!("finding dropped: {}", d.message());
        let _ = writeln!(out, "::warning title=warden::{}", escape_data(&msg));
    }
    // One notice per limit that cut files, not one per file.
    for c in &r.cuts {
        let _ = writeln!(out, "::notice title=warden::{}", escape_data(&c.message()));
    }
    let s = &r.summary;
    let _ = writeln!(
        out,
        "::notice title=warden::{}",
        escape_data(&format!(
            "review {}: {} of {} units reviewed, {} finding{}",
            r.outcome.label(),
            s.reviewed,
            s.units,
            s.findings,
            if s.findings == 1 { "" } else { "s" }
        ))
    );
    out
}
