//! The Markdown summary appended to `$GITHUB_STEP_SUMMARY`: outcome, findings, coverage
//! by status, and per-route figures. GitHub refuses a step summary over 1 MiB, so the
//! findings table is cut (least severe first) to stay under it, with a note saying what
//! was cut.

use super::fit;
use crate::engine::UnitStatus;
use crate::report::{Report, ReviewOutcome};
use crate::text::escape::{md_code, md_code_cell as code, md_inline as cell};
use std::fmt::Write;

/// GitHub's limit for one step's summary is 1 MiB; stay a little under it.
pub const STEP_SUMMARY_LIMIT: usize = 1024 * 1024 - 4096;

/// A finding title longer than this is cut in the table.
const TITLE_CHARS: usize = 300;

/// The verdict's icon, following the exit code: ✅ only for a run that exits 0, ⚠️ for a
/// partial review (exit 3), ❌ for findings that fail the run (1), a setup error (2) or a
/// review in which no unit was reviewed.
pub(crate) fn icon(r: &Report) -> &'static str {
    match r.exit_code() {
        0 => "✅",
        3 if r.outcome == ReviewOutcome::Partial => "⚠️",
        _ => "❌",
    }
}

/// The summary, at most [`STEP_SUMMARY_LIMIT`] bytes.
pub fn render(r: &Report) -> String {
    render_within(r, STEP_SUMMARY_LIMIT)
}

/// The summary in at most `limit` bytes: as many findings as fit, most severe first.
pub fn render_within(r: &Report, limit: usize) -> String {
    let (_, text) = fit::largest_fitting(
        r.findings.len(),
        |s| s.len() <= limit,
        |shown| body(r, shown),
    );
    if text.len() <= limit {
        return text;
    }
    // Even with no findings listed it is too long (a limit far below any real one).
    const NOTE: &str = "\n\n_(cut here: GitHub's step summary limit)_\n";
    let mut end = limit.saturating_sub(NOTE.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{NOTE}", &text[..end])
}

/// The summary listing the first `shown` findings.
fn body(r: &Report, shown: usize) -> String {
    let mut out = String::new();
    if let Some(p) = &r.publish {
        let _ = writeln!(out, "{}\n", crate::text::escape::md_inline(&p.line()));
    }
    let s = &r.summary;
    let verdict = match r.outcome {
        ReviewOutcome::Complete => format!("{} {}", icon(r), r.outcome.label()),
        ReviewOutcome::Partial => format!(
            "{} **{}**: {} of {} units were NOT reviewed",
            icon(r),
            r.outcome.label(),
            s.units - s.reviewed,
            s.units
        ),
        ReviewOutcome::Unavailable => format!(
            "{} **{}**: none of the {} units was reviewed",
            icon(r),
            r.outcome.label(),
            s.units
        ),
    };
    let _ = writeln!(out, "## warden review\n");
    let _ = writeln!(
        out,
        "{verdict} · {} findings · {} of a {} budget · {}\n",
        s.findings,
        super::secs(Some(r.duration_ms), ""),
        super::secs(Some(r.budget_ms), ""),
        md_code(&r.target)
    );
    cut_by_limits(&mut out, r);
    super::dropped::markdown(&mut out, r, 20);
    if let Some(line) = r.trust.as_ref().and_then(|t| t.line()) {
        let _ = writeln!(out, "**Trust:** {}\n", cell(&line));
    }
    if !r.skills.is_empty() {
        let line = super::skills_line(&r.skills, r.trust.as_ref());
        let _ = writeln!(out, "**Skills:** {}\n", cell(&line));
    }
    for w in &r.warnings {
        let _ = writeln!(
            out,
            "**Warning ({}):** {}\n",
            w.source.as_str(),
            cell(&w.message)
        );
    }
    findings(&mut out, r, shown);
    coverage(&mut out, r);
    if !r.route_order.is_empty() {
        let _ = write!(out, "### Routes\n\n{}", route_table(r));
    }
    out
}

/// Files cut by limits: a line per limit, its files folded away (at most 100 named).
fn cut_by_limits(out: &mut String, r: &Report) {
    for c in &r.cuts {
        let paths: Vec<String> = r.cut_paths(c).collect();
        let _ = writeln!(
            out,
            "✂️ **{}**\n\n<details><summary>Files cut ({})</summary>\n",
            c.message(),
            paths.len()
        );
        for p in paths.iter().take(100) {
            let _ = writeln!(out, "- {}", md_code(p));
        }
        if paths.len() > 100 {
            let _ = writeln!(
                out,
                "- …and {} more (see the JSON report)",
                paths.len() - 100
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
}

/// The findings table (its first `shown` rows) and what was cut to fit.
fn findings(out: &mut String, r: &Report, shown: usize) {
    if !r.findings.is_empty() {
        let _ = writeln!(
            out,
            "### Findings\n\n| severity | file | lines | title | skill |\n|---|---|---|---|---|"
        );
        for f in &r.findings[..shown] {
            let _ = writeln!(
                out,
                "| {} | {} | {}-{} | {} | {} |",
                f.severity,
                code(&f.path),
                f.start_line,
                f.end_line,
                cell(fit::truncate_chars(&f.title, TITLE_CHARS)),
                cell(&f.skill)
            );
        }
        let _ = writeln!(out);
        if shown < r.findings.len() {
            let _ = writeln!(
                out,
                "✂️ {} not shown here, to stay under GitHub's 1 MiB step summary limit; every finding is in the report files.\n",
                fit::describe(&r.findings[shown..])
            );
        }
    }
}

/// Units by status, and the ones NOT reviewed by location.
fn coverage(out: &mut String, r: &Report) {
    let s = &r.summary;
    let _ = writeln!(out, "### Coverage\n\n| status | units |\n|---|---|");
    for (st, n) in [
        (UnitStatus::Reviewed, s.reviewed),
        (UnitStatus::TimedOut, s.timed_out),
        (UnitStatus::Unavailable, s.unavailable),
        (UnitStatus::Failed, s.failed),
        (UnitStatus::Cancelled, s.cancelled),
        (UnitStatus::Skipped, s.skipped),
        (UnitStatus::Refused, s.refused),
    ] {
        let _ = writeln!(out, "| {} | {n} |", st.as_str());
    }
    let _ = writeln!(out);
    let missing: Vec<_> = r.not_reviewed().collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Units NOT reviewed ({})</summary>\n",
            missing.len()
        );
        for u in missing.iter().take(100) {
            let _ = writeln!(
                out,
                "- {} ({}) **{}**: {}",
                md_code(&format!("{}:{}-{}", u.path, u.start_line, u.end_line)),
                cell(&u.skill),
                u.status.as_str(),
                cell(&u.reason)
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
}

/// Per-route figures as a Markdown table (also folded into the PR comment).
pub(crate) fn route_table(r: &Report) -> String {
    let mut out = String::from(
        "| route | calls | ok | timeouts | unavailable | rate limited | failovers from | retries | loop turns | p50 | p95 | max | TTFT p95 | state |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for name in &r.route_order {
        let m = &r.routes[name];
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} (set aside {}x) |",
            cell(name),
            super::route_cells(m, "–")[..6].join(" | "),
            m.retries,
            m.turns,
            super::route_cells(m, "–")[6..].join(" | "),
            m.breaker.state.label(),
            m.breaker.opens
        );
    }
    out
}
