//! The entries of the models' answers that did not become findings, as the text report,
//! the Markdown formats and SARIF list them (the model: `report::DroppedFinding`).

use crate::report::Report;

/// The text report's list: a count line, then one escaped line per named drop (at most
/// `limit`), then a blank line.
pub(crate) fn text(out: &mut String, r: &Report, limit: usize, width: Option<usize>) {
    use crate::text::wrap;
    use console::Style;
    let Some(line) = r.dropped_line() else {
        return;
    };
    let head = format!("DROPPED: {line}:");
    wrap::line(out, "", 2, &head, Style::new().yellow().bold(), width);
    for d in r.dropped_findings.iter().take(limit) {
        let message = crate::text::escape::inline(&d.message());
        wrap::line(out, "  ", 4, &message, Style::new(), width);
    }
    if r.dropped_findings.len() > limit {
        let more = format!(
            "... and {} more (every one is in --format json's droppedFindings)",
            r.dropped_findings.len() - limit
        );
        wrap::line(out, "  ", 4, &more, Style::new(), width);
    }
    out.push('\n');
}

/// The PR comment's and the step summary's section: a heading, then a list item per
/// named drop (model text escaped for Markdown).
pub(crate) fn markdown(out: &mut String, r: &Report, limit: usize) {
    use std::fmt::Write;
    let Some(line) = r.dropped_line() else {
        return;
    };
    let _ = writeln!(out, "### Dropped findings\n\n⚠️ **{line}**:\n");
    for d in r.dropped_findings.iter().take(limit) {
        let _ = writeln!(out, "- {}", crate::text::escape::md_inline(&d.message()));
    }
    if r.dropped_findings.len() > limit {
        let _ = writeln!(
            out,
            "- …and {} more (every one is in the JSON report)",
            r.dropped_findings.len() - limit
        );
    }
    let _ = writeln!(out);
}

/// A SARIF tool execution notification per named drop.
pub(crate) fn sarif(r: &Report) -> impl Iterator<Item = serde_json::Value> + '_ {
    r.dropped_findings.iter().map(|d| {
        serde_json::json!({
            "level": "warning",
            "message": {"text": format!("finding dropped: {}", d.message())},
            "descriptor": {"id": "warden/dropped-finding"},
            "properties": {"path": d.path, "skill": d.skill, "startLine": d.start_line,
                           "endLine": d.end_line, "entry": d.entry, "title": d.title,
                           "reason": d.reason},
        })
    })
}
